//go:build unix

package ringev

import (
	"golang.org/x/sys/unix"
)

// ReadNonblocking is read(2) for a handler's non-blocking fd (a socket, pipe, eventfd, tty or
// other fd opened or set O_NONBLOCK): it returns the bytes read into p (0 at end of file) or an
// error that is the unix.Errno itself (unix.EAGAIN when nothing is there, no allocation), so
// errors.Is(err, unix.EAGAIN) works.
//
// It calls the kernel without the Go runtime's syscall bookkeeping, as unix.RawSyscall does,
// in a single assembly frame (internal/rawsys): together about a quarter of a syscall's cost on
// the machines we measured. That is safe only
// because a non-blocking read cannot block. Never use it on a regular file or a blocking fd:
// there a read can sleep, and the raw call would hold the goroutine's P meanwhile.
func ReadNonblocking(fd int, p []byte) (int, error) { return rawIO(unix.SYS_READ, fd, p) }

// WriteNonblocking is write(2) for a handler's non-blocking fd, with ReadNonblocking's rules:
// it returns the bytes written or the unix.Errno itself (unix.EAGAIN when the fd is full,
// unix.EPIPE when a pipe's reader is gone), without the runtime's syscall bookkeeping, which
// is safe only because a write to a non-blocking fd cannot block.
func WriteNonblocking(fd int, p []byte) (int, error) { return rawIO(unix.SYS_WRITE, fd, p) }

// ReadNonblocking is the package function ReadNonblocking (read(2) on a non-blocking fd, with
// the same rules and results: the bytes read, 0 at end of file, or the unix.Errno itself,
// unix.EAGAIN when nothing is there) for a handler of l, or l's goroutine. On the uring
// backend, for an fd the loop watches (an fd event is armed on it), when the handler has used up
// the readiness the loop had, so that the next Once would have to look at the fds, and the
// loop's handler I/O takes the ring path (Loop.IOPath: by default where the loop measured it
// cheaper than read(2)/write(2), see WithIOPath), the read goes through the loop's ring as an
// IORING_OP_READ SQE
// (Linux 5.6) with the loop's look at its epoll set (IORING_OP_EPOLL_WAIT, 6.15) behind it, in
// one io_uring_enter(2) that does not wait; what the look finds ready serves the next Onces as a
// wait's would: one syscall where read(2) and the next wait make two. That look is made after
// the read, so a handler that goes on to read or write its fd in other ways can be called once
// more for readiness it used up (it then reads EAGAIN, as a handler of a non-blocking fd must
// allow). Otherwise (readiness left to serve, the syscall path, an fd the loop does not watch,
// such as a regular file, an empty p, WithFreshReadiness, the other backends, before the ring's
// first EPOLL_WAIT has completed, another goroutine, after Close) it is the package function.
//
// p is handed to the kernel, so the compiler keeps it on the heap: give a buffer that lives
// across calls (a local array passed here is allocated on every call). The fd must be
// non-blocking, as for the package function. A failed io_uring_enter returns an error wrapping
// its errno; no allocation otherwise.
//
// EBADF on an fd the loop watches, whose number is no longer open (or names another file), means
// the fd was closed with close(2) behind the loop's back while a dup keeps its file open, so its
// epoll registration lives on (loop contract item 5): the loop then disarms the fd's events
// (their flags become 0) and the Once that ran the handler returns an error wrapping unix.EBADF
// that names the fd. The same holds for WriteNonblocking.
func (l *Loop) ReadNonblocking(fd int, p []byte) (int, error) {
	var n int
	var err error
	if l.owned() && l.mayRide() { // owned first: other goroutines must not read ride, which Close clears
		n, err = l.rideIO(unix.SYS_READ, fd, p)
	} else {
		n, err = rawIO(unix.SYS_READ, fd, p)
	}
	if err == nil {
		return n, nil
	}
	return l.ioFailed(fd, n, err)
}

// WriteNonblocking is the package function WriteNonblocking (write(2) on a non-blocking fd)
// for a handler of l, with Loop.ReadNonblocking's rules: on the uring backend, when the handler
// has used up the loop's readiness and the loop's handler I/O takes the ring path
// (Loop.IOPath), the write goes as an IORING_OP_WRITE SQE (Linux 5.6) with
// the loop's next look at its epoll set behind it, in one syscall. It returns the bytes written or the unix.Errno itself (unix.EAGAIN when the fd
// is full, unix.EPIPE when a pipe's reader is gone).
func (l *Loop) WriteNonblocking(fd int, p []byte) (int, error) {
	var n int
	var err error
	if l.owned() && l.mayRide() { // owned first: other goroutines must not read ride, which Close clears
		n, err = l.rideIO(unix.SYS_WRITE, fd, p)
	} else {
		n, err = rawIO(unix.SYS_WRITE, fd, p)
	}
	if err == nil {
		return n, nil
	}
	return l.ioFailed(fd, n, err)
}

// ioFailed returns what Loop.ReadNonblocking or WriteNonblocking returns for a failed I/O on fd
// (n, err), after handing EBADF on the owner's goroutine to badFd. Out of line: the I/O that
// succeeds pays one test.
//
//go:noinline
func (l *Loop) ioFailed(fd, n int, err error) (int, error) {
	if err == unix.EBADF && l.owned() {
		l.badFd(fd)
	}
	return n, err
}
