package ringev

import (
	"unsafe"

	"github.com/ringev/ringev/uring"
)

// Submit hands the IO's operation to the loop: on uring its SQE goes to the kernel with the
// loop's next io_uring_enter(2), as a request's does; on epoll and poll the emulation makes it.
// The callback runs once for it. Errors (nothing is submitted): ErrNotOwner, ErrClosed,
// ErrIOPending while the last submission has not completed, ErrIOFreed, ErrFdClosing while a
// CloseFd closes the fd, and one wrapping unix.EBADF once a CloseFd has closed it (the number
// may be another file's by now).
//
// On uring the SQE is written here, in one frame (a call costs its prologue and the spills
// around it): the record keeps everything the SQE needs.
func (x *IO) Submit() error {
	l := x.l
	if !l.owned() {
		return ErrNotOwner
	}
	r := x.rec
	if r.state != stFree {
		return x.refused()
	}
	rq := l.req
	f := &rq.fds[r.c.Fd]
	if f.okSeq != rq.ownSeq || f.closes != r.fdCloses {
		return x.refused()
	}
	f.live++
	rq.live++
	d, ok := rq.drv.(*ringReqs)
	if !ok {
		r.state = stQueued
		rq.drv.start(r)
		return nil
	}
	ring := d.b.ring
	var s *uring.SQE
	if len(d.queue) == 0 {
		s = ring.GetSQE()
	}
	if s == nil { // requests wait in the queue ahead of it, or the SQ is full
		r.state = stQueued
		d.start(r)
		return nil
	}
	op, buf := r.c.Op, r.c.Buf
	s.Opcode, s.Fd = bytesOpcode[op&7], int32(r.c.Fd)
	s.Addr, s.Len = uint64(uintptr(unsafe.Pointer(unsafe.SliceData(buf)))), uint32(len(buf))
	if op <= OpWrite {
		s.Off = uint64(r.off)
	} else {
		s.OpFlags = uint32(r.flags)
		if op == OpRecv && f.drained && d.pollFirst {
			s.Ioprio = uring.RecvsendPollFirst
		}
	}
	if f.fixed {
		s.Flags = uring.SQEFixedFile
	}
	s.UserData = reqTag | uint64(r.gen)<<32 | uint64(r.idx)
	rr := ringOf(r)
	rr.state, rr.fast = stInflight, true
	rr.cqes, rr.opDone, rr.link = 1, false, false
	rr.sqPos, rr.epoch = ring.SQTail()-1, d.epoch
	d.inflight++
	return nil
}
