//go:build unix

package ringev

// Poll: one wait for an fd's readiness as a request, for a caller that then makes a
// syscall of its own the loop does not offer as a request (a non-blocking splice(2), say).

import (
	"fmt"

	"golang.org/x/sys/unix"
)

// Poll waits once for fd to be ready for events, unix.POLLIN or unix.POLLOUT (one of the
// two), as poll(2) would: IORING_OP_POLL_ADD (Linux 5.1; io_uring_prep_poll_add(3)) on uring,
// the loop's readiness of fd on epoll and poll. The callback runs once: N is the ready mask
// (events, with unix.POLLERR or unix.POLLHUP when the fd has an error or is hung up), or Err
// wraps the errno (ECANCELED after Cancel or CloseFd, ETIME after a deadline set with
// Request.SetTimeout). It completes at once when fd is ready already. The mask is the
// readiness that woke the Poll, a past one as io_uring's POLL_ADD reports it: a callback that
// ran before this one may have used it up, so the syscall that follows must still take EAGAIN.
// A pending Poll holds the file as every request does: close fd with CloseFd, which cancels
// it. Errors: those of every request call (Request's documentation), and one wrapping
// unix.EINVAL when events is not exactly POLLIN or POLLOUT (the emulation waits for one side
// of the fd).
func (l *Loop) Poll(fd int, events int16, cb Callback, token uint64) (Request, error) {
	if events != unix.POLLIN && events != unix.POLLOUT {
		if err := l.checkReq(OpPoll, fd, cb); err != nil {
			return Request{}, err
		}
		return Request{}, fmt.Errorf("ringev: poll on fd %d: events %#x, want POLLIN or POLLOUT: %w", fd, events, unix.EINVAL)
	}
	r, err := l.newReq(OpPoll, fd, nil, false, cb, token)
	if err != nil {
		return Request{}, err
	}
	r.flags = int32(events)
	return l.req.submit(r), nil
}

// pollNow is the emulation's Poll: poll(2) of fd for events without waiting. It returns the
// ready mask, EAGAIN when fd is not ready (the request waits for the fd event again), or
// EBADF when fd is not open (POLLNVAL: closed with close(2), against the rules of requests).
func (e *emulReqs) pollNow(fd int, events int32) (uintptr, unix.Errno) {
	fds := &e.pfd
	fds[0] = unix.PollFd{Fd: int32(fd), Events: int16(events)}
	n, err := unix.Poll(fds[:], 0)
	switch {
	case err != nil:
		errno, ok := err.(unix.Errno)
		if !ok {
			errno = unix.EIO
		}
		return 0, errno
	case n == 0:
		return 0, unix.EAGAIN
	case fds[0].Revents&unix.POLLNVAL != 0:
		return 0, unix.EBADF
	}
	return uintptr(uint16(fds[0].Revents)), 0
}
