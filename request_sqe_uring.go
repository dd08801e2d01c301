//go:build linux

package ringev

// SubmitSQE: a request made of an SQE prepared with package uring (the uring backend only).

import (
	"fmt"

	"github.com/ringev/ringev/uring"
	"golang.org/x/sys/unix"
)

// SubmitSQE submits sqe, prepared with package uring's Prep methods, as a request: the loop
// copies it into its ring's SQ (at once, or at its next wait, as every request: see Request),
// setting its user_data (the one given is replaced), and runs cb with the CQE's Res as N (or its error), once per CQE of a multishot
// op (More set while the CQE has IORING_CQE_F_MORE). keep is held until the last CQE: memory
// the SQE addresses must stay reachable that long (pass the buffer, or nil if the SQE
// addresses nothing or the caller keeps it). sqe.Fd, when >= 0 and not a fixed file, is the
// request's fd for CloseFd. Links (SQEIOLink, SQEIOHardlink) and SQECQESkipSuccess are
// refused (an error wrapping unix.EINVAL): each request must post its own CQE. On a backend
// other than "uring" it returns an error wrapping ErrNeedsUring that names the backend.
func (l *Loop) SubmitSQE(sqe *uring.SQE, keep []byte, cb Callback, token uint64) (Request, error) {
	if !l.owned() {
		return Request{}, ErrNotOwner
	}
	if l.closed {
		return Request{}, ErrClosed
	}
	if sqe == nil {
		return Request{}, fmt.Errorf("ringev: SubmitSQE: nil SQE: %w", unix.EINVAL)
	}
	if cb == nil {
		return Request{}, fmt.Errorf("ringev: SubmitSQE: %w", ErrNilCallback)
	}
	if !l.reqs().ring() {
		return Request{}, fmt.Errorf("ringev: SubmitSQE on the %q backend: %w", l.beName, ErrNeedsUring)
	}
	if sqe.Flags&(uring.SQEIOLink|uring.SQEIOHardlink|uring.SQECQESkipSuccess) != 0 {
		return Request{}, fmt.Errorf("ringev: SubmitSQE: IOSQE_IO_LINK, IO_HARDLINK and CQE_SKIP_SUCCESS are not allowed: %w", unix.EINVAL)
	}
	fd := int(sqe.Fd)
	if fd < 0 || sqe.Flags&uring.SQEFixedFile != 0 {
		fd = -1
	}
	rq := l.req
	if fd >= 0 {
		if l.ownsFd(fd) {
			return Request{}, fmt.Errorf("ringev: SubmitSQE on fd %d: one of the loop's own fds: %w", fd, unix.EBADF)
		}
		if err := rq.checkFdOpen(fd); err != nil {
			return Request{}, fmt.Errorf("ringev: SubmitSQE on fd %d: %w", fd, err)
		}
		if f := rq.fdState(int32(fd)); f.is(fdClosing) {
			return Request{}, fmt.Errorf("ringev: SubmitSQE on fd %d: %w", fd, ErrFdClosing)
		}
	}
	r := rq.take(OpSQE, max(fd, 0), nil, cb, token)
	x := r.rareOf()
	x.keep, x.drv.sqe = keep, *sqe
	if fd < 0 {
		r.noFd = true
	} else {
		rq.fds[fd].countIn()
	}
	return rq.submit(r), nil
}
