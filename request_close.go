//go:build unix

package ringev

// CloseFd: cancel an fd's requests, then close it once the last has completed.

import (
	"errors"

	"golang.org/x/sys/unix"
)

// CloseFd closes fd through the loop: it cancels every request on fd
// (IORING_OP_ASYNC_CANCEL with IORING_ASYNC_CANCEL_FD|IORING_ASYNC_CANCEL_ALL, Linux 5.19, on
// uring), disarms the fd events that watch it, and closes it with close(2) once the last of
// those requests has completed (their callbacks get ECANCELED, or their result if it won; a
// Loop.Close meanwhile cancels them and closes the fd, without the callbacks), so
// that the kernel holds no reference and a socket's peer sees EOF at once; a later file that
// takes the fd number never gets an old request's completion. The fd events that watch fd
// stay open, disarmed (flags 0), and lose their auto-close: closing them later, or the loop,
// does not close the number again (by then another file's). A multishot request on fd ends
// with it. N is 0, or Err is close(2)'s error. Requests for fd made while the close waits for
// fd's requests in the kernel fail with ErrFdClosing. When none is there (always on the
// emulation: epoll, poll, uring-poll), fd is closed within CloseFd, before its callback runs:
// from then on the number may be another file's, and a request for it is that file's (or fails
// with EBADF), so make none for the old one.
//
// The fd events' part is the loop's (disarmForClose, fd.go); the requests' part is the request
// side's (closeFdStart, closeFdEnd), which never calls back into the fd events.
func (l *Loop) CloseFd(fd int, cb Callback, token uint64) (Request, error) {
	r, err := l.newReq(OpClose, fd, nil, false, cb, token)
	if err != nil {
		return Request{}, err
	}
	l.req.closeFdStart(r, fd)
	l.disarmForClose(fd)
	return l.req.closeFdEnd(r, fd), nil
}

// fdClosing is reqLayer's: ErrFdClosing when a CloseFd of fd waits for fd's requests to end.
func (rq *requests) fdClosing(fd int) error {
	if fd < len(rq.fds) && rq.fds[fd].is(fdClosing) {
		return ErrFdClosing
	}
	return nil
}

// closeNow closes fd, whose CloseFd waits for it (reqFd's fdClosing), now that no request on it is left.
func (rq *requests) closeNow(fd int32) {
	c := rq.closeRec(fd)
	rq.setFdRare(fd, nil, rq.ios(fd))
	res := int32(0)
	if err := rq.setFixed(fd, false); err != nil { // no request on fd is left to use the slot
		res = -int32(errnoOf(err))
	}
	if err := unix.Close(int(c.fd)); err != nil && res == 0 {
		res = -int32(err.(unix.Errno))
	}
	rq.finish(c, res, 0)
}

// closeFdStart is CloseFd's first part, on the request side: r, the CloseFd's record, becomes
// fd's closeRec (requests for fd made from now on fail with ErrFdClosing) and is in flight.
func (rq *requests) closeFdStart(r *reqRec, fd int) {
	f := rq.fdState(int32(fd))
	f.okSeq = 0 // okSeq: no request on fd takes the fast way (fastOK) until it is checked again
	rq.setFdRare(int32(fd), r, rq.ios(int32(fd)))
	r.state = stInflight
}

// closeFdEnd is CloseFd's last part, on the request side, once the loop has disarmed fd's
// events: a RecvMultishot parked on fd ends, fd's IOs are told, its requests cancelled, and fd
// closed now if none is left. It returns the CloseFd's Request.
func (rq *requests) closeFdEnd(r *reqRec, fd int) Request {
	f := &rq.fds[fd]
	h := Request{rec: r, gen: r.gen}
	for _, g := range rq.groups {
		g.finishParked(fd)
	}
	rq.closeIOs(int32(fd))
	rq.drv.cancelFd(int32(fd))
	if f.live() == 0 && rq.closeRec(int32(fd)) == r {
		rq.closeNow(int32(fd))
	}
	return h
}

// closeIOs tells the IOs made on fd that a CloseFd closes it: none submits again (ioOwn 0),
// and a pending submission counts in its reqFd.live from now on (ioCloseWait), so that the fd
// is closed after its completion, as after a request's. The list is emptied: an IO made later
// is another file's.
func (rq *requests) closeIOs(fd int32) {
	f := &rq.fds[fd]
	for r := rq.ios(fd); r != nil; r = r.rare.ioNext {
		r.ioOwn = 0 // (Submit's one compare refuses it)
		if r.state == stQueued || r.state == stInflight {
			r.ioCloseWait, r.ioKey = true, 0 // (run's shortest way would not count f.live down)
			f.countIn()
		}
	}
	rq.setFdRare(fd, rq.closeRec(fd), nil)
}

// errnoOf returns the errno err wraps, or EIO.
func errnoOf(err error) unix.Errno {
	var e unix.Errno
	if errors.As(err, &e) {
		return e
	}
	return unix.EIO
}
