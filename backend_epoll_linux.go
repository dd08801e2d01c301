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
	events   []unix.EpollEvent
	noPwait2 bool
}

func openEpoll() (backend, error) {
	fd, err := unix.EpollCreate1(unix.EPOLL_CLOEXEC)
	if err != nil {
		return nil, fmt.Errorf("epoll: epoll_create1: %w", err)
	}
	return &epollBackend{epfd: fd, events: make([]unix.EpollEvent, 64)}, nil
}

func (b *epollBackend) setInterest(fd int32, old, new uint32) error {
	ev := unix.EpollEvent{Events: new, Fd: fd}
	op := unix.EPOLL_CTL_MOD
	switch {
	case new == 0:
		op = unix.EPOLL_CTL_DEL
	case old == 0:
		op = unix.EPOLL_CTL_ADD
	}
	if err := unix.EpollCtl(b.epfd, op, int(fd), &ev); err != nil {
		if op == unix.EPOLL_CTL_DEL && (err == unix.EBADF || err == unix.ENOENT) {
			return nil // already gone with the file
		}
		return fmt.Errorf("epoll_ctl: %w", err)
	}
	return nil
}

func (b *epollBackend) wait(timeout int64, buf []readyFd) ([]readyFd, error) {
	var n int
	var errno unix.Errno
	if !b.noPwait2 {
		var ts unix.Timespec
		var tsp unsafe.Pointer
		if timeout >= 0 {
			ts = timespecOf(timeout)
			tsp = unsafe.Pointer(&ts)
		}
		r, _, e := unix.Syscall6(unix.SYS_EPOLL_PWAIT2, uintptr(b.epfd), uintptr(unsafe.Pointer(&b.events[0])),
			uintptr(len(b.events)), uintptr(tsp), 0, 0)
		n, errno = int(r), e
		if errno == unix.ENOSYS {
			b.noPwait2 = true
		}
	}
	if b.noPwait2 {
		ms := -1
		if timeout >= 0 {
			ms = int((timeout + 999_999) / 1_000_000)
		}
		r, _, e := unix.Syscall6(unix.SYS_EPOLL_WAIT, uintptr(b.epfd), uintptr(unsafe.Pointer(&b.events[0])),
			uintptr(len(b.events)), uintptr(ms), 0, 0)
		n, errno = int(r), e
	}
	if errno != 0 {
		if errno == unix.EINTR {
			return buf, nil
		}
		return buf, fmt.Errorf("ringev: epoll backend: epoll_wait: %w", errno)
	}
	for i := 0; i < n; i++ {
		buf = append(buf, readyFd{fd: b.events[i].Fd, revents: b.events[i].Events})
	}
	return buf, nil
}

func (b *epollBackend) close() error {
	if b.epfd < 0 {
		return nil
	}
	err := unix.Close(b.epfd)
	b.epfd = -1
	return err
}
