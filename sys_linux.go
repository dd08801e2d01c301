package ringev

import "golang.org/x/sys/unix"

// The Linux system calls and constants that the files shared by every GOOS name; sys_other.go
// gives the same names elsewhere, where New fails before any of them is used.

// readyFd is one fd a backend reports ready (Fd), with the poll(2) bits it found (Events:
// POLLIN, POLLOUT, POLLERR, POLLHUP, POLLNVAL, which have epoll's values) and, from the
// epoll-set backends, the generation of the registration that reported it (Pad; 0 from the
// others). It is epoll(7)'s struct epoll_event, so the epoll-based backends' non-blocking
// epoll_wait(2) writes the loop's buffer directly.
type readyFd = unix.EpollEvent

const (
	pollRdHup     = unix.POLLRDHUP // the peer shut down its writing side (Linux 2.6.17)
	sysEpollPwait = unix.SYS_EPOLL_PWAIT
	sysPread      = unix.SYS_PREAD64
	sysPwrite     = unix.SYS_PWRITE64
	sysAccept4    = unix.SYS_ACCEPT4
	eTime         = unix.ETIME // a request's deadline passed (FreeBSD has no ETIME)
)

// platformErr is nil: the loop runs on Linux.
func platformErr() error { return nil }

// newEventfd makes a non-blocking, close-on-exec eventfd(2) (Linux 2.6.27), the loop's wake-up.
func newEventfd() (int, error) { return unix.Eventfd(0, unix.EFD_CLOEXEC|unix.EFD_NONBLOCK) }

// fdatasync is fdatasync(2).
func fdatasync(fd int) error { return unix.Fdatasync(fd) }
