package ringev

// The uring backend's side of IO: IO.Submit, whose steady case copies the IO's SQE into the SQ
// in the same frame (a driver call would cost its prologue and the spills around it, ~15
// instructions a submission), and prepIO, which prepares that SQE. On the other backends Submit
// hands the record to the driver (reqDriver.start); request_io_other.go is Submit where there
// is no io_uring.

import (
	"github.com/ringev/ringev/uring"
)

// Submit hands the IO's operation to the loop: on uring its SQE goes to the kernel with the
// loop's next io_uring_enter(2), as a request's does; on epoll and poll the emulation makes it.
// The callback runs once for it. Errors (nothing is submitted): ErrNotOwner, ErrClosed,
// ErrIOPending while the last submission has not completed, ErrIOFreed, ErrFdClosing while a
// CloseFd closes the fd, and one wrapping unix.EBADF once a CloseFd has closed it (the number
// may be another file's by now).
//
// On uring the IO's SQE, prepared when it was made (prepIO), is copied into the SQ here, in
// one frame (a call costs its prologue and the spills around it); only its user_data (the
// record's generation) and a Recv's POLL_FIRST are written after. The user_data is kept in the
// record too (ioKey), so that the completion knows this submission at one compare.
func (x *IO) Submit() error {
	l := x.l
	if !l.owned() {
		return ErrNotOwner
	}
	r, rq := x.rec, l.req
	if r.state != stFree || r.ioOwn != rq.ownSeq { // (ioOwn is 0 once a CloseFd closed the fd)
		return x.refused()
	}
	rq.live++
	d := l.rt
	if d == nil { // the emulation's
		r.state = stQueued
		rq.drv.start(r)
		return nil
	}
	ring := d.b.ring
	rr := ringOf(r)
	var s *uring.SQE
	pos := ring.SQTail()
	if len(d.queue) == 0 {
		s = ring.PutSQE(&rr.rare.drv.sqe) // the IO's SQE, prepared when it was made (prepIO)
	}
	if s == nil { // requests wait in the queue ahead of it, or the SQ is full
		r.state = stQueued
		d.start(r)
		return nil
	}
	if r.op == OpRecv && r.ioDrained && d.pollFirst {
		s.Ioprio = uring.RecvsendPollFirst
	}
	ud := reqTag | uint64(r.gen)<<32 | uint64(r.idx)
	s.UserData, rr.ioKey = ud, uint32(ud>>32)
	rr.state, rr.fast = stInflight, true
	rr.cqes, rr.opDone, rr.link = 1, false, false
	rr.sqPos = pos // (a cancel before the enter needs it: unsubmitted)
	d.inflight++
	return nil
}

// prepIO prepares, on the uring backend, the SQE of r, an IO's record just made or given a new
// buffer (SetBuf), in its rare part (which an IO holds until Free), which Submit copies into
// the SQ: opcode, fd, buffer, offset or msg flags, and IOSQE_FIXED_FILE while the fd is in
// the ring's registered-file table (ioFixed: setFixed prepares it again). Its user_data and
// a Recv's POLL_FIRST are Submit's.
func (rq *requests) prepIO(r *reqRec) {
	if _, ok := rq.drv.(*ringReqs); !ok {
		return
	}
	s := &r.rare.drv.sqe
	*s = uring.SQE{}
	prepBytes(s, r)
	rq.fixIO(r)
}

// fixIO writes, on the uring backend, r's ioFixed into its IO's prepared SQE
// (IOSQE_FIXED_FILE, the fd's slot in the registered-file table, or not): at prepIO, and when
// setFixed changes it. A submission in flight keeps what it was submitted with.
func (rq *requests) fixIO(r *reqRec) {
	if _, ok := rq.drv.(*ringReqs); !ok {
		return
	}
	s := &r.rare.drv.sqe
	if r.ioFixed {
		s.Flags |= uring.SQEFixedFile
	} else {
		s.Flags &^= uring.SQEFixedFile
	}
}
