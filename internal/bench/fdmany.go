//go:build linux

package bench

// The fd_many shape: fd_speed1's active pipe plus N-1 idle pipes, each watched by a Read handler
// that must never run. It shows how the cost of one event grows with the number of watched fds:
// on epoll and uring it should hardly grow from 1 to 10,000 fds.
//
// The idle pipes are FIFOs opened for reading only, with O_NONBLOCK, and unlinked at once. A
// pipe's read end that never had a writer is never ready: no data, and no hang-up (Linux reports
// POLLHUP on a FIFO only after a writer has come and gone). So each idle pipe costs one fd, not
// two, and 10,000 pipes fit in the common RLIMIT_NOFILE of 20,000 (an anonymous pipe would need
// its write end kept open: its read end reports hang-up once no writer is left).

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"
)

// ShapeFdMany is the family name of the fd_many shape; a run is named FdManyShape(n), for
// example "fd_many100": n pipes, one of them active.
const ShapeFdMany = "fd_many"

// DefaultFds are the pipe counts of the fd_many shape when Config.Fds is empty.
var DefaultFds = []int{1, 100, 10000}

// MaxFds is the largest pipe count of fd_many (Linux's default fs.nr_open is 1,048,576).
const MaxFds = 1_000_000

// ErrTooManyFds is wrapped by fd_many runs that need more open files than RLIMIT_NOFILE's hard
// limit allows.
var ErrTooManyFds = errors.New("not enough file descriptors")

// fdHeadroom is the number of fds an fd_many run keeps free beyond what it opens: the loop's
// own (epoll, ring, eventfd, signal pipe) and the runtime's.
const fdHeadroom = 64

// FdManyShape returns the name of the fd_many run with n pipes: "fd_many<n>".
func FdManyShape(n int) string { return ShapeFdMany + strconv.Itoa(n) }

// parseFdMany returns n for a shape named "fd_many<n>" with 1 <= n <= MaxFds (no sign, no
// leading zero); ok is false for any other name.
func parseFdMany(shape string) (n int, ok bool) { return parseCounted(shape, ShapeFdMany, MaxFds) }

// parseCounted returns n for a shape named "<family><n>" with 1 <= n <= max (no sign, no
// leading zero); ok is false for any other name.
func parseCounted(shape, family string, max int) (n int, ok bool) {
	digits, found := strings.CutPrefix(shape, family)
	if !found || digits == "" || digits[0] < '1' || digits[0] > '9' {
		return 0, false
	}
	n, err := strconv.Atoi(digits)
	if err != nil || n > max {
		return 0, false
	}
	return n, true
}

// idlePipes opens n idle pipe read ends (see the file comment) and returns their fds, or closes
// what it opened and returns an error.
func idlePipes(n int) (fds []int, err error) {
	if n == 0 {
		return nil, nil
	}
	dir, err := os.MkdirTemp("", "ringev-fd_many-")
	if err != nil {
		return nil, err
	}
	defer os.Remove(dir)
	defer func() {
		if err != nil {
			closeFds(fds)
			fds = nil
		}
	}()
	path := filepath.Join(dir, "fifo")
	fds = make([]int, 0, n)
	for range n {
		if err := unix.Mkfifo(path, 0o600); err != nil {
			return fds, fmt.Errorf("mkfifo %s: %w", path, err)
		}
		fd, err := unix.Open(path, unix.O_RDONLY|unix.O_NONBLOCK|unix.O_CLOEXEC, 0)
		uerr := unix.Unlink(path)
		if err != nil {
			return fds, fmt.Errorf("opening idle pipe %d of %d: %w", len(fds)+1, n, err)
		}
		fds = append(fds, fd)
		if uerr != nil {
			return fds, fmt.Errorf("unlink %s: %w", path, uerr)
		}
	}
	return fds, nil
}

// closeFds closes every fd and returns the first error.
func closeFds(fds []int) error {
	var first error
	for _, fd := range fds {
		if err := unix.Close(fd); err != nil && first == nil {
			first = fmt.Errorf("closing fd %d: %w", fd, err)
		}
	}
	return first
}

// openFdCount is the number of fds this process has open (from /proc/self/fd), or 0 when it
// cannot tell.
func openFdCount() int {
	ents, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		return 0
	}
	return len(ents)
}

// reserveFds makes sure that extra more fds can be opened: it raises RLIMIT_NOFILE's soft limit,
// up to the hard limit, to what is open now plus extra plus fdHeadroom. restore puts back the
// limit it found (it does nothing when nothing was changed). The limit is the process's: no
// other goroutine should change it meanwhile. The error wraps ErrTooManyFds when the hard limit
// is too low.
func reserveFds(extra int) (restore func() error, err error) {
	open := openFdCount()
	if open == 0 {
		open = fdHeadroom // unknown: assume some
	}
	return raiseNofile(uint64(open + extra + fdHeadroom))
}

// raiseNofile raises RLIMIT_NOFILE's soft limit to need when it is lower; see reserveFds.
func raiseNofile(need uint64) (restore func() error, err error) {
	var old unix.Rlimit
	if err := unix.Getrlimit(unix.RLIMIT_NOFILE, &old); err != nil {
		return nil, fmt.Errorf("getrlimit(RLIMIT_NOFILE): %w", err)
	}
	if need <= old.Cur {
		return func() error { return nil }, nil
	}
	if need > old.Max {
		return nil, fmt.Errorf("%w: this run needs %d open files but RLIMIT_NOFILE's hard limit is %d "+
			"(raise it, for example with 'ulimit -Hn %d' as root, or choose fewer --fds)",
			ErrTooManyFds, need, old.Max, need)
	}
	raised := unix.Rlimit{Cur: need, Max: old.Max}
	if err := unix.Setrlimit(unix.RLIMIT_NOFILE, &raised); err != nil {
		return nil, fmt.Errorf("raising RLIMIT_NOFILE from %d to %d: %w", old.Cur, need, err)
	}
	return func() error {
		if err := unix.Setrlimit(unix.RLIMIT_NOFILE, &old); err != nil {
			return fmt.Errorf("restoring RLIMIT_NOFILE to %d: %w", old.Cur, err)
		}
		return nil
	}, nil
}
