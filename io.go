package ringev

import "golang.org/x/sys/unix"

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
