package ringev

import (
	"fmt"
	"unsafe"

	"golang.org/x/sys/unix"
)

// epollBackend is the epoll(7) backend (tevent's "epoll"), level-triggered. It waits with
// epoll_pwait2(2) (Linux 5.11) for a nanosecond timeout, or epoll_wait(2) with the timeout
// rounded up to whole milliseconds where epoll_pwait2 is missing.
type epollBackend struct {
	epfd     int
	noPwait2 bool // epoll_pwait2 is missing (before Linux 5.11)
}

func openEpoll() (backend, error) {
	fd, err := unix.EpollCreate1(unix.EPOLL_CLOEXEC)
	if err != nil {
		return nil, fmt.Errorf("epoll: epoll_create1: %w", err)
	}
	return &epollBackend{epfd: fd}, nil
}

func (b *epollBackend) setInterest(fd int32, gen, old, new uint32) error {
	ev := unix.EpollEvent{Events: new, Fd: fd, Pad: int32(gen)}
	op := unix.EPOLL_CTL_MOD
	switch {
	case new == 0:
		op = unix.EPOLL_CTL_DEL
	case old == 0:
		op = unix.EPOLL_CTL_ADD
	}
	if err := unix.EpollCtl(b.epfd, op, int(fd), &ev); err != nil {
		return epollCtlError(op, err)
	}
	return nil
}

// epollCtlError is the error of a failed epoll_ctl(2), naming the operation.
//
//go:noinline
func epollCtlError(op int, err error) error {
	name := "MOD"
	switch op {
	case unix.EPOLL_CTL_ADD:
		name = "ADD"
	case unix.EPOLL_CTL_DEL:
		name = "DEL"
	}
	return fmt.Errorf("epoll_ctl(EPOLL_CTL_%s): %w", name, err)
}

// replaceSet makes b.epfd name a new, empty epoll set (dup3(2) onto the same number, so that
// every copy of the number stays valid); the old set is closed with its registrations.
func (b *epollBackend) replaceSet() error {
	fd, err := unix.EpollCreate1(unix.EPOLL_CLOEXEC)
	if err != nil {
		return fmt.Errorf("epoll_create1: %w", err)
	}
	err = unix.Dup3(fd, b.epfd, unix.O_CLOEXEC)
	unix.Close(fd)
	if err != nil {
		return fmt.Errorf("dup3 of a new epoll set onto fd %d: %w", b.epfd, err)
	}
	return nil
}

func (b *epollBackend) stillWatched(fd int32, gen, interest uint32) bool {
	if interest == 0 {
		return true
	}
	// epoll keys its registrations by (file, fd number): MOD fails with ENOENT when the number
	// names a file other than the registered one.
	ev := unix.EpollEvent{Events: interest, Fd: fd, Pad: int32(gen)}
	return unix.EpollCtl(b.epfd, unix.EPOLL_CTL_MOD, int(fd), &ev) == nil
}

func (b *epollBackend) epollSet() int { return b.epfd }

func (b *epollBackend) wait(timeout int64, buf []readyFd) ([]readyFd, error) {
	if timeout == 0 {
		return epollLook(b.epfd, buf)
	}
	// epoll_pwait2(2) writes the events into buf's free capacity (readyFd is struct
	// epoll_event). A wait that may block goes through unix.Syscall6, which lets the runtime
	// run other goroutines meanwhile.
	buf, free := epollRoom(buf)
	var r uintptr
	var e unix.Errno
	if !b.noPwait2 {
		var ts unix.Timespec
		var tsp unsafe.Pointer
		if timeout >= 0 {
			ts = unix.NsecToTimespec(timeout)
			tsp = unsafe.Pointer(&ts)
		}
		r, _, e = unix.Syscall6(unix.SYS_EPOLL_PWAIT2, uintptr(b.epfd), uintptr(unsafe.Pointer(unsafe.SliceData(free))), uintptr(len(free)), uintptr(tsp), 0, 0)
		if e == unix.ENOSYS {
			b.noPwait2 = true
		}
	}
	if b.noPwait2 {
		ms := -1
		if timeout >= 0 {
			ms = int((timeout + 999_999) / 1_000_000)
		}
		r, _, e = unix.Syscall6(unix.SYS_EPOLL_PWAIT, uintptr(b.epfd), uintptr(unsafe.Pointer(unsafe.SliceData(free))), uintptr(len(free)), uintptr(ms), 0, 0)
	}
	if e != 0 {
		return buf, epollError(e)
	}
	return buf[:len(buf)+int(r)], nil
}

func (b *epollBackend) close() error {
	if b.epfd < 0 {
		return nil
	}
	err := unix.Close(b.epfd)
	b.epfd = -1
	return err
}
