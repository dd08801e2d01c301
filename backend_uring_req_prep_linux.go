package ringev

// The uring driver's submission side: a request's SQE prepared in the SQ when it is made
// (start, rw) or at the wait (flush), and what stays the loop's until an enter submits it
// (unsubmitted: a cancel makes it NOPs).

import (
	"fmt"
	"time"
	"unsafe"

	"github.com/ringev/ringev/uring"
	"golang.org/x/sys/unix"
)

// start prepares r's SQE in the SQ at once when it can (no deadline to link, nothing queued
// before it, a free SQE: it never submits, so it never enters the ring), else queues r for
// flush; either way the wait's io_uring_enter(2) submits it.
func (d *ringReqs) start(rec *reqRec) {
	r := ringOf(rec)
	if r.deadline == 0 && len(d.queue) == 0 && !d.dead {
		if s := d.b.ring.GetSQE(); s != nil {
			if r.op <= OpSend {
				prepBytes(s, rec) // prepReq's first case, without its call
			} else {
				prepReq(s, r)
			}
			d.fdBits(s, r)
			s.UserData = opUserData(r)
			r.state, r.cqes, r.opDone, r.link = stInflight, 1, false, false
			r.fast = r.op <= OpSend && r.done == 0 && !r.cancelReq && !r.timedOut
			r.sqPos, r.epoch = d.b.ring.SQTail()-1, d.b.epoch
			d.inflight++
			return
		}
	}
	r.state = stQueued
	d.queue = append(d.queue, queuedReq{r, r.gen})
}

// rw is reqDriver.rw: the record and the SQE of a read, write, recv or send, written at once
// in one call (start's work for such a request, without its tests of what take and fastOK
// made sure of). When requests wait in the queue ahead of it, or the SQ is full, start queues
// it.
func (d *ringReqs) rw(op Op, fd int, buf []byte, arg int64, cb Callback, token uint64) Request {
	rq := d.rq
	ring := d.b.ring
	if rq.free == 0 || len(d.queue) != 0 {
		return d.rwQueued(op, fd, buf, arg, cb, token)
	}
	s := ring.GetSQE()
	if s == nil {
		return d.rwQueued(op, fd, buf, arg, cb, token)
	}
	pos := ring.SQTail() - 1
	r := ringOf(rq.pop())
	f := &rq.fds[fd]
	f.countIn()
	r.cb = cb
	r.state, r.fast = stInflight, true
	r.cqes, r.opDone, r.link = 1, false, false
	r.sqPos, r.epoch = pos, d.b.epoch
	r.op, r.fd, r.token = op, int32(fd), token
	r.setBytes(buf)
	s.Opcode, s.Fd = bytesOpcode[op&7], int32(fd)
	s.Addr, s.Len = uint64(uintptr(unsafe.Pointer(unsafe.SliceData(buf)))), uint32(len(buf))
	if op <= OpWrite {
		r.off = arg
		s.Off = uint64(arg)
	} else {
		r.flags = int32(arg)
		s.OpFlags = uint32(arg)
		if op == OpRecv && f.is(fdDrained) && d.pollFirst {
			s.Ioprio = uring.RecvsendPollFirst
		}
	}
	if f.is(fdFixed) {
		s.Flags = uring.SQEFixedFile
	}
	s.UserData = reqTag | uint64(r.gen)<<32 | uint64(r.idx)
	d.inflight++
	return Request{rec: &r.reqRec, gen: r.gen}
}

// rwQueued is rw when the request cannot be prepared at once: start queues it (or grows the
// pool first).
//
//go:noinline
func (d *ringReqs) rwQueued(op Op, fd int, buf []byte, arg int64, cb Callback, token uint64) Request {
	r := d.rq.take(op, fd, buf, cb, token)
	r.setArg(arg)
	return d.rq.submit(r)
}

// unsubmitted reports whether r is a request that start prepared in the SQ and no enter has
// submitted since: its SQE (sqeOf) and its LINK_TIMEOUT's (the next one, if r.link) are not the
// kernel's yet; a cancel can turn them into NOPs (the request never reaches the kernel) and a
// deadline can still be linked to the SQE while it is the SQ's last.
// An IO's submission (IO.Submit) keeps its SQ position and no epoch: it is unsubmitted while
// that position is one an enter has not submitted and still holds the submission's
// user_data (its generation is this submission's; nopPrepared overwrites it).
func (d *ringReqs) unsubmitted(r *ringRec) bool {
	if r.state != stInflight {
		return false
	}
	if !r.io {
		return r.epoch == d.b.epoch
	}
	ring := d.b.ring
	p := r.sqPos
	return p-d.b.subTail < ring.SQTail()-d.b.subTail && ring.SQEAtPos(p).UserData == reqUserData(r, reqKindOp)
}

// sqeOf returns the SQE of r, an unsubmitted request (else nil).
func (d *ringReqs) sqeOf(r *ringRec) *uring.SQE {
	if !d.unsubmitted(r) {
		return nil
	}
	return d.b.ring.SQEAtPos(r.sqPos)
}

// nop makes s a NOP whose CQE counts as a command's.
func nop(s *uring.SQE) {
	s.PrepNop()
	s.UserData = reqTag | reqKindCmd
}

// nopPrepared turns the SQEs of r, an unsubmitted request, into NOPs: it never reaches the
// kernel (their CQEs count down inflight as commands').
func (d *ringReqs) nopPrepared(r *ringRec) {
	ring := d.b.ring
	nop(ring.SQEAtPos(r.sqPos))
	if r.link {
		nop(ring.SQEAtPos(r.sqPos + 1))
		r.link = false
	}
	r.epoch = d.b.epoch - 1 // no longer unsubmitted
}

// unprep makes r, an unsubmitted request, NOPs (nopPrepared) and finishes it with ECANCELED.
func (d *ringReqs) unprep(r *ringRec) {
	d.nopPrepared(r)
	r.cqes = 0
	d.rq.opDone(&r.reqRec, -int32(unix.ECANCELED), 0)
}

// sqe returns the first of n consecutive free SQEs, submitting what is queued when the SQ has
// less room. d.space counts the SQEs known free: valid during one flush only (the backend's
// own waits and looks take SQEs too), where every SQE taken is counted.
func (d *ringReqs) sqe(n uint32) (*uring.SQE, error) {
	ring := d.b.ring
	if d.space < n {
		if d.space = ring.SQSpaceLeft(); d.space < n {
			if _, err := d.b.entering().Submit(); err != nil {
				d.space = 0
				return nil, fmt.Errorf("ringev: uring backend: submitting a full SQ: %w", err)
			}
			d.space = ring.SQSpaceLeft()
		}
	}
	s := ring.GetSQE()
	if s == nil {
		d.space = 0
		return nil, fmt.Errorf("ringev: uring backend: the SQ stays full: %w", unix.EBUSY)
	}
	d.space--
	return s, nil
}

// flush prepares the queued records and cancels as SQEs; the backend's enter submits them.
func (d *ringReqs) flush() error {
	if len(d.queue) == 0 && len(d.cmds) == 0 {
		return nil // the steady state: start prepared every request already
	}
	rq := d.rq
	d.space = 0
	i := 0
	var err error
	for ; i < len(d.queue); i++ {
		q := d.queue[i]
		r := q.r
		if r.gen != q.gen || r.state != stQueued {
			continue
		}
		var left int64
		link := r.deadline != 0 && !multishot(r.op) && !r.timerQueued()
		if link {
			if left = r.deadline - rq.l.now(); left <= 0 {
				r.timedOut, r.cancelReq = true, true
				r.slow()
				rq.opDone(&r.reqRec, -int32(unix.ECANCELED), 0)
				continue
			}
		}
		need := uint32(1)
		if link {
			need = 2
		}
		var s *uring.SQE
		if s, err = d.sqe(need); err != nil {
			break
		}
		prepReq(s, r)
		d.fdBits(s, r)
		s.UserData = opUserData(r)
		r.state, r.cqes, r.opDone, r.link = stInflight, 1, false, false
		r.fast = !link && r.deadline == 0 && r.op <= OpSend && r.done == 0 && !r.cancelReq && !r.timedOut
		r.sqPos, r.epoch = d.b.ring.SQTail()-1, d.b.epoch-1 // not unsubmitted: the next enter is this flush's
		d.inflight++
		if link {
			s.Flags |= uring.SQEIOLink
			t := d.b.ring.GetSQE() // sqe made room for two
			d.space--
			ts := &r.rare.drv.ts // SetTimeout took the rare part
			*ts = uring.NewTimespec(time.Duration(left))
			t.PrepLinkTimeout(ts, 0)
			t.UserData = reqUserData(r, reqKindLink)
			r.cqes, r.link = 2, true
			d.inflight++
		}
	}
	k := copy(d.queue, d.queue[i:])
	clear(d.queue[k:])
	d.queue = d.queue[:k]
	if err != nil {
		return err
	}
	for j, c := range d.cmds {
		s, err := d.sqe(1)
		if err != nil {
			d.cmds = d.cmds[:copy(d.cmds, d.cmds[j:])]
			return err
		}
		if c.ts != nil {
			s.PrepTimeoutUpdate(c.ts, c.target, uring.LinkTimeoutUpdate)
		} else if c.byFd {
			s.PrepCancelFd(int(c.fd), uring.AsyncCancelAll)
		} else {
			s.PrepCancel(c.target, 0)
		}
		s.UserData = reqTag | reqKindCmd
		d.inflight++
	}
	d.cmds = d.cmds[:0]
	return nil
}

// bytesOpcode is the opcode of each op that moves bytes (OpRead to OpSend).
var bytesOpcode = [8]uint8{OpRead: uring.OpRead, OpWrite: uring.OpWrite, OpRecv: uring.OpRecv, OpSend: uring.OpSend}

// prepBytes prepares in s, a zeroed SQE, r's read, write, recv or send (what is left of it):
// prepReq's work for them, as field stores (the Preps rewrite all of the SQE, through a call).
func prepBytes(s *uring.SQE, r *reqRec) {
	s.Opcode, s.Fd = bytesOpcode[r.op], int32(r.fd)
	// (past what a short write or send wrote: done)
	s.Addr, s.Len = uint64(uintptr(r.bp)+uintptr(r.done)), r.blen-uint32(r.done)
	switch {
	case r.op >= OpRecv:
		s.OpFlags = uint32(r.flags)
		return
	case r.off >= 0:
		s.Off = uint64(r.off + int64(r.done))
	default:
		s.Off = ^uint64(0) // the file position
	}
	if r.flags > 0 { // ReadFixed, WriteFixed: the registered buffer's index + 1
		s.Opcode, s.BufIndex = fixedOpcode[r.op], uint16(r.flags-1)
	}
}

// prepReq prepares r's operation in s, a zeroed SQE (GetSQE's).
func prepReq(s *uring.SQE, r *ringRec) {
	if r.op <= OpSend {
		prepBytes(s, &r.reqRec)
		return
	}
	fd := int(r.fd)
	switch r.op {
	case OpAccept:
		s.PrepAccept(fd, nil, nil, int(r.flags))
	case OpAcceptMultishot:
		s.PrepAcceptMultishot(fd, int(r.flags))
	case OpConnect:
		s.PrepConnect(fd, unsafe.Pointer(&r.rare.sa), r.rare.salen)
	case OpFsync:
		var fl uint32
		if r.flags == fsyncData {
			fl = uring.FsyncDatasync
		}
		s.PrepFsync(fd, fl)
	case OpRecvMultishot:
		if r.turn {
			prepTurn(s, r)
		} else {
			s.PrepRecvMultishot(fd, r.grp().bgid, int(r.flags))
		}
	case OpSQE:
		*s = r.rare.drv.sqe
	case OpRecvMsg:
		s.PrepRecvmsg(fd, r.rare.msg, int(r.flags))
	case OpSendMsg:
		s.PrepSendmsg(fd, r.rare.msg, int(r.flags))
	case OpPoll:
		s.PrepPollAdd(fd, uint32(r.flags))
	}
}

// prepTurn prepares in s a RecvMultishot's turn (BufferGroup.pump): one IORING_OP_RECV (Linux
// 5.6) into one buffer of its group (IOSQE_BUFFER_SELECT, 5.7), with MSG_DONTWAIT, so that it
// takes at most one buffer and never waits for data (-EAGAIN when the socket is empty).
func prepTurn(s *uring.SQE, r *ringRec) {
	s.PrepRecv(int(r.fd), nil, int(r.flags)|unix.MSG_DONTWAIT)
	s.Len = uint32(r.grp().size)
	s.SetBufferGroup(r.grp().bgid)
}

// fdBits adds to s, r's SQE just prepared, what r's fd state asks for: IOSQE_FIXED_FILE when
// the fd is in the registered-file table at slot fd (RegisterFile), and on a Recv after one
// that drained the socket IORING_RECVSEND_POLL_FIRST (see ringReqs.pollFirst). It is read at
// every preparation, so a continuation (the rest of a short write, a multishot re-armed)
// follows an UnregisterFile made since. The caller's SQE (OpSQE) is left as given.
func (d *ringReqs) fdBits(s *uring.SQE, r *ringRec) {
	if r.op == OpSQE {
		return
	}
	f := &d.rq.fds[r.fd]
	if f.is(fdFixed) {
		s.Flags |= uring.SQEFixedFile
	}
	if r.op == OpRecv && f.is(fdDrained) && d.pollFirst {
		s.Ioprio = uring.RecvsendPollFirst
	}
}
