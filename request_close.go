//go:build unix

package ringev

// CloseFd: cancel an fd's requests, then close it once the last has completed.

import (
	"errors"

	"golang.org/x/sys/unix"
)

// closeNow closes the fd of a CloseFd whose fd has no request left.
func (rq *requests) closeNow(f *reqFd) {
	c := f.closeRec
	f.closeRec = nil
	res := int32(0)
	if err := rq.setFixed(int32(c.c.Fd), false); err != nil { // no request on fd is left to use the slot
		res = -int32(errnoOf(err))
	}
	if err := unix.Close(c.c.Fd); err != nil && res == 0 {
		res = -int32(err.(unix.Errno))
	}
	rq.finish(c, res, 0)
}

// CloseFd closes fd through the loop: it cancels every request on fd
// (IORING_OP_ASYNC_CANCEL with IORING_ASYNC_CANCEL_FD|IORING_ASYNC_CANCEL_ALL, Linux 5.19, on
// uring), disarms the fd events that watch it, and closes it with close(2) once the last of
// those requests has completed (their callbacks get ECANCELED, or their result if it won; a
// Loop.Close meanwhile cancels them and closes the fd, without the callbacks), so
// that the kernel holds no reference and a socket's peer sees EOF at once; a later file that
// takes the fd number never gets an old request's completion. The fd events that watch fd
// stay open, disarmed (flags 0), and lose their auto-close: closing them later, or the loop,
// does not close the number again (by then another file's). A multishot request on fd ends
// with it. N is 0, or Err is close(2)'s error. Requests for fd made before the callback runs
// fail with ErrFdClosing.
func (l *Loop) CloseFd(fd int, cb Callback, token uint64) (Request, error) {
	r, err := l.newReq(OpClose, fd, nil, false, cb, token)
	if err != nil {
		return Request{}, err
	}
	rq := l.req
	f := rq.fdState(int32(fd))
	f.closeRec, f.okSeq = r, 0 // okSeq: no request on fd takes the fast way (fastOK) until it is checked again
	r.state = stInflight
	if uint(fd) < uint(len(l.slots)) && l.slots[fd] != nil && !l.slots[fd].internal {
		s := l.slots[fd]
		s.mark = 0
		l.dropNews(s)
		l.disarmSlot(s)
		for _, ev := range s.events {
			ev.autoClose = false // CloseFd closes the fd: an event's Close must not close the number again
		}
	}
	h := Request{rec: r, gen: r.gen}
	for _, g := range rq.groups {
		g.finishParked(fd)
	}
	f.closeIOs()
	rq.drv.cancelFd(int32(fd))
	if f.live == 0 && f.closeRec == r {
		rq.closeNow(f)
	}
	return h, nil
}

// closeIOs tells the IOs made on f's fd that a CloseFd closes it: none submits again (ioGone),
// and a pending submission counts in f.live from now on (ioCloseWait), so that the fd is
// closed after its completion, as after a request's. The list is emptied: an IO made later is
// another file's.
func (f *reqFd) closeIOs() {
	for r := f.ios; r != nil; r = r.rare.ioNext {
		r.ioGone = true
		if r.state == stQueued || r.state == stInflight {
			r.ioCloseWait, r.ioKey = true, 0 // (run's shortest way would not count f.live down)
			f.live++
		}
	}
	f.ios = nil
}

// errnoOf returns the errno err wraps, or EIO.
func errnoOf(err error) unix.Errno {
	var e unix.Errno
	if errors.As(err, &e) {
		return e
	}
	return unix.EIO
}
