package ringev

import (
	"unsafe"

	"golang.org/x/sys/unix"
)

// ReadNonblocking is read(2) for a handler's non-blocking fd (a socket, pipe, eventfd, tty or
// other fd opened or set O_NONBLOCK): it returns the bytes read into p (0 at end of file) or an
// error that is the unix.Errno itself (unix.EAGAIN when nothing is there, no allocation), so
// errors.Is(err, unix.EAGAIN) works.
//
// It calls the kernel through unix.RawSyscall, skipping the Go runtime's syscall bookkeeping
// (about a quarter of a syscall's cost on the machines we measured), which is safe only
// because a non-blocking read cannot block. Never use it on a regular file or a blocking fd:
// there a read can sleep, and the raw call would hold the goroutine's P meanwhile.
func ReadNonblocking(fd int, p []byte) (int, error) { return rawIO(unix.SYS_READ, fd, p) }

// WriteNonblocking is write(2) for a handler's non-blocking fd, with ReadNonblocking's rules:
// it returns the bytes written or the unix.Errno itself (unix.EAGAIN when the fd is full,
// unix.EPIPE when a pipe's reader is gone), through unix.RawSyscall, which is safe only
// because a write to a non-blocking fd cannot block.
func WriteNonblocking(fd int, p []byte) (int, error) { return rawIO(unix.SYS_WRITE, fd, p) }

// rawIO is read(2) or write(2) (trap) of p on fd through unix.RawSyscall.
func rawIO(trap uintptr, fd int, p []byte) (int, error) {
	var ptr unsafe.Pointer
	if len(p) > 0 {
		ptr = unsafe.Pointer(&p[0])
	}
	n, _, e := unix.RawSyscall(trap, uintptr(fd), uintptr(ptr), uintptr(len(p)))
	if e != 0 {
		return 0, e
	}
	return int(n), nil
}
