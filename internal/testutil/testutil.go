//go:build linux

// Package testutil holds the helpers that ringev's tests share across packages: nonblocking
// pipes and socketpairs owned by the test, the writes and drains they need, a wait for a full
// TCP connection, and the skips for io_uring and kernel features. It does not import the root package, so that the root package's own tests
// can use it; their loop helpers are in the root package's helpers_test.go.
//
// An fd the test owns is closed when the test ends, unless the test closed it first (Close) or
// gave it to someone who closes it (HandOver: a loop's auto-close, CloseFd). Closing a number
// twice could close an unrelated file that reused it, so an owned fd is closed through Close.
package testutil

import (
	"errors"
	"fmt"
	"sync"
	"syscall"
	"testing"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"

	"github.com/ringev/ringev/internal/kernel"
)

// owners maps each owned fd number to the test that owns it.
var (
	ownersMu sync.Mutex
	owners   = map[int]testing.TB{}
)

// Own makes fd the test's: it is closed when the test ends, unless Close or HandOver comes
// first. It returns fd.
func Own(t testing.TB, fd int) int {
	t.Helper()
	ownersMu.Lock()
	owners[fd] = t
	ownersMu.Unlock()
	t.Cleanup(func() {
		ownersMu.Lock()
		mine := owners[fd] == t
		if mine {
			delete(owners, fd)
		}
		ownersMu.Unlock()
		if mine {
			_ = unix.Close(fd)
		}
	})
	return fd
}

// Close closes fd, an fd the test owns, now; the test's end leaves the number alone. A second
// Close of the number, or a Close of an fd the test does not own, does nothing and returns nil.
func Close(t testing.TB, fd int) error {
	t.Helper()
	if !release(fd) {
		return nil
	}
	return unix.Close(fd)
}

// HandOver records that fd is no longer the test's (the loop closes it: auto-close, CloseFd):
// the test's end leaves the number alone.
func HandOver(t testing.TB, fd int) {
	t.Helper()
	release(fd)
}

// release removes fd from the owned numbers and reports whether it was owned.
func release(fd int) bool {
	ownersMu.Lock()
	defer ownersMu.Unlock()
	if _, ok := owners[fd]; !ok {
		return false
	}
	delete(owners, fd)
	return true
}

// Pipe returns the read and write ends of a new pipe, both O_NONBLOCK|O_CLOEXEC (pipe2(2)),
// owned by the test. It fails the test if pipe2 fails.
func Pipe(t testing.TB) (r, w int) {
	t.Helper()
	var p [2]int
	if err := unix.Pipe2(p[:], unix.O_NONBLOCK|unix.O_CLOEXEC); err != nil {
		t.Fatalf("pipe2: %v", err)
	}
	return Own(t, p[0]), Own(t, p[1])
}

// Socketpair returns the two ends of a new AF_UNIX SOCK_STREAM socketpair, both nonblocking and
// close-on-exec, owned by the test. It fails the test if socketpair(2) fails.
func Socketpair(t testing.TB) (a, b int) {
	t.Helper()
	fds, err := unix.Socketpair(unix.AF_UNIX, unix.SOCK_STREAM|unix.SOCK_NONBLOCK|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		t.Fatalf("socketpair: %v", err)
	}
	return Own(t, fds[0]), Own(t, fds[1])
}

// Write writes all of p to the nonblocking fd in one write(2) and fails the test on an error or a
// short write. Call it from the test's goroutine (handlers run there too).
func Write(t testing.TB, fd int, p []byte) {
	t.Helper()
	n, err := unix.Write(fd, p)
	if err != nil {
		t.Fatalf("write fd %d: %v", fd, err)
	}
	if n != len(p) {
		t.Fatalf("write fd %d: wrote %d of %d bytes", fd, n, len(p))
	}
}

// Drain reads the nonblocking fd until it would block (EAGAIN) or reports end of file, and returns
// the number of bytes read. It fails the test on any other error.
func Drain(t testing.TB, fd int) int {
	t.Helper()
	var buf [4096]byte
	total := 0
	for {
		n, err := unix.Read(fd, buf[:])
		switch {
		case err == unix.EAGAIN:
			return total
		case err == unix.EINTR:
			continue
		case err != nil:
			t.Fatalf("read fd %d: %v", fd, err)
		case n == 0:
			return total
		}
		total += n
	}
}

// AwaitZeroWindow waits until the TCP connection c, whose reader does not read, advertises a
// zero receive window (TCP_INFO's tcpi_rcv_wnd, Linux 6.2): its receive buffer is full, so the
// peer's output can only pile up until c is read. It returns an error if that does not happen
// within d. (On a kernel without the field it reads 0, and the wait ends at once.) Safe from any
// goroutine.
func AwaitZeroWindow(c syscall.Conn, d time.Duration) error {
	rc, err := c.SyscallConn()
	if err != nil {
		return fmt.Errorf("SyscallConn: %w", err)
	}
	end := time.Now().Add(d)
	for {
		var info *unix.TCPInfo
		var ierr error
		if err := rc.Control(func(fd uintptr) {
			info, ierr = unix.GetsockoptTCPInfo(int(fd), unix.IPPROTO_TCP, unix.TCP_INFO)
		}); err != nil {
			return fmt.Errorf("getsockopt(TCP_INFO): %w", err)
		}
		if ierr != nil {
			return fmt.Errorf("getsockopt(TCP_INFO): %w", ierr)
		}
		if info.Rcv_wnd == 0 {
			return nil
		}
		if time.Now().After(end) {
			return fmt.Errorf("the connection's receive window is still %d bytes after %v: its peer did not fill it", info.Rcv_wnd, d)
		}
		time.Sleep(time.Millisecond)
	}
}

// SkipIfIOUringUnavailable skips the test when err, from setting up what (a ring, a uring loop,
// a backend), says that io_uring cannot be used here: it wraps EPERM (kernel.io_uring_disabled,
// a seccomp profile) or ENOSYS (a kernel without io_uring). It does nothing for any other error,
// nil included: the caller fails on those, so that a skip is never a failure in disguise.
func SkipIfIOUringUnavailable(t testing.TB, err error, what string) {
	t.Helper()
	if errors.Is(err, unix.EPERM) || errors.Is(err, unix.ENOSYS) {
		t.Skipf("%s: io_uring is switched off or missing here: %v", what, err)
	}
}

// SkipUnlessIOUring skips the test where io_uring cannot be used here: SkipIfIOUringUnavailable
// of an io_uring_setup(2) of one entry (its ring closed at once), checked up front by a test that
// runs another process on the uring backend. Any other error of the setup fails the test.
func SkipUnlessIOUring(t testing.TB, what string) {
	t.Helper()
	var params [120]byte // struct io_uring_params
	fd, _, e := unix.Syscall(unix.SYS_IO_URING_SETUP, 1, uintptr(unsafe.Pointer(&params[0])), 0)
	if e != 0 {
		err := fmt.Errorf("io_uring_setup(1): %w", e)
		SkipIfIOUringUnavailable(t, err, what)
		t.Fatal(err)
	}
	unix.Close(int(fd))
}

// SkipIfFeatureMissing skips the test when err says the kernel lacks a feature: ringev's errors
// for a missing feature wrap EOPNOTSUPP and name it. It does nothing for any other error.
func SkipIfFeatureMissing(t testing.TB, err error) {
	t.Helper()
	if errors.Is(err, unix.EOPNOTSUPP) {
		t.Skipf("a kernel feature is missing: %v", err)
	}
}

// SkipIfFixedBuffersRefused skips the test when err, from registering fixed buffers
// (IORING_REGISTER_BUFFERS, Linux 5.1), says the kernel refuses them here: ENOMEM (the pinned
// pages exceed RLIMIT_MEMLOCK without CAP_IPC_LOCK) or EOPNOTSUPP. It does nothing for any other
// error, nil included.
func SkipIfFixedBuffersRefused(t testing.TB, err error) {
	t.Helper()
	if errors.Is(err, unix.ENOMEM) || errors.Is(err, unix.EOPNOTSUPP) {
		t.Skipf("fixed buffers (IORING_REGISTER_BUFFERS) refused here: %v", err)
	}
}

// KernelAtLeast reports whether the running kernel's version (uname(2) release) is at least
// major.minor. An unreadable release counts as too old.
func KernelAtLeast(major, minor int) bool { return kernel.AtLeast(major, minor) }

// SkipUnlessKernel skips the test, naming the feature and the kernel it needs, when the running
// kernel is older than major.minor.
func SkipUnlessKernel(t testing.TB, major, minor int, feature string) {
	t.Helper()
	if !kernel.AtLeast(major, minor) {
		t.Skipf("%s needs Linux %d.%d; this kernel is %s", feature, major, minor, kernel.Release())
	}
}
