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

// closeFdStart is CloseFd's first part, on the request side: r, the CloseFd's record, becomes
// fd's closeRec (requests for fd made from now on fail with ErrFdClosing) and is in flight.
func (rq *requests) closeFdStart(r *reqRec, fd int) {
	f := rq.fdState(int32(fd))
	f.closeRec, f.okSeq = r, 0 // okSeq: no request on fd takes the fast way (fastOK) until it is checked again
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
	f.closeIOs()
	rq.drv.cancelFd(int32(fd))
	if f.live == 0 && f.closeRec == r {
		rq.closeNow(f)
	}
	return h
}

// closeIOs tells the IOs made on f's fd that a CloseFd closes it: none submits again (ioGone),
// and a pending submission counts in f.live from now on (ioCloseWait), so that the fd is
// closed after its completion, as after a request's. The list is emptied: an IO made later is
// another file's.
func (f *reqFd) closeIOs() {
	for r := f.ios; r != nil; r = r.rare.ioNext {
		r.ioGone, r.ioOwn = true, 0 // (Submit's one compare refuses it)
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
