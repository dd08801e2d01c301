package ringev

// The uring driver's completion side: CQEs read in place (cqes, readCQE), a one-shot request's
// held in the ring until its callback runs (run), the others taken when read (cqe).

import (
	"github.com/ringev/ringev/uring"
	"golang.org/x/sys/unix"
)

// cqes reads in place the CQEs that came since the last read (the backend's wait; its ride
// reads them as cqe does each): got and res are those of the backend's EPOLL_WAIT CQE, if it
// came. A one-shot request's CQE (reqKindOp) stays in the ring, held for its callback (run);
// any other of a request is taken at once (cqe). When none is held, the CQ's head moves past
// them all.
func (d *ringReqs) cqes(ring *uring.Ring) (got bool, res int32) {
	rq := d.rq
	tail := ring.CQTail()
	held := 0 // the one-shot requests' CQEs since the last count (in a register, not rq.held)
	for p := d.seen; p != tail; p++ {
		c := ring.CQEAtPos(p)
		ud := c.UserData
		if ud&(reqTag|reqKindMask) == reqTag|reqKindOp {
			held++
			continue
		}
		d.inflight -= held
		rq.held += held
		held = 0
		if ud&reqTag == 0 {
			if ud == uringEpollTag {
				got, res = true, c.Res
			} else if ud == uringWakeTag {
				d.b.woke = true
				d.b.msg.got++
			}
			continue
		}
		rq.pos = p
		if ud&reqKindMask == reqKindMulti && c.Flags&(uring.CQEFMore|uring.CQEFBuffer) == uring.CQEFMore|uring.CQEFBuffer &&
			d.recvMore(c) {
			continue
		}
		d.cqe(c)
	}
	d.inflight -= held
	rq.held += held
	d.read(ring, tail)
	return got, res
}

// recvMore queues c, a RecvMultishot's CQE that is not its last and carries a group buffer
// (the steady case of a server's receive), as cqe's way through complete and queue does, in
// fewer steps; it reports false, having done nothing, when c is not one (another multishot
// op's, a stale CQE: of the record's earlier use, or of a request not in the kernel): cqe
// takes it then. Unlike cqe it need not ask whether the loop is closing (dead): Loop.Close's
// shutdown reads the CQEs that come after it with cqe, and nothing reads the ring after that.
func (d *ringReqs) recvMore(c *uring.CQE) bool {
	rq := d.rq
	ud := c.UserData
	idx := uint(uint32(ud))
	if idx >= uint(len(rq.recs)) {
		return false
	}
	r := rq.recs[idx]
	if r.op != OpRecvMultishot || r.gen != uint32(ud>>32)&genMask || r.state != stInflight {
		return false
	}
	res, flags := c.Res, c.Flags
	var e *cqEntry
	if n := len(rq.cq); n < cap(rq.cq) && (n == rq.head || int32(rq.cq[n-1].pos-rq.pos) <= 0) {
		rq.cq = rq.cq[:n+1] // push's steady case, written out
		rq.queued++
		e = &rq.cq[n]
		e.pos = rq.pos
	} else {
		e = rq.push()
	}
	e.rec, e.gen, e.res = r, r.gen, res
	e.flags = compMore | compBuffer | flags>>uring.CQEBufferShift<<compBufShift
	if flags&uring.CQEFSockNonempty != 0 {
		e.flags |= compSockNonempty
	}
	more := flags&uring.CQEFBufMore != 0
	if more {
		e.flags |= compBufMore
	}
	e.off = r.grp().take(int(flags>>uring.CQEBufferShift), max(res, 0), more)
	return true
}

// readCQE reads a request's CQE at position p (user_data with reqTag), as cqes reads each: the
// backend's ride reads its CQEs with it.
func (d *ringReqs) readCQE(c *uring.CQE, p uint32) {
	if c.UserData&reqKindMask == reqKindOp {
		d.inflight--
		d.rq.held++
		return
	}
	d.rq.pos = p
	if c.UserData&reqKindMask == reqKindMulti && c.Flags&(uring.CQEFMore|uring.CQEFBuffer) == uring.CQEFMore|uring.CQEFBuffer &&
		d.recvMore(c) {
		return
	}
	d.cqe(c)
}

// read marks the CQEs before position tail read (see cqes): the completions the core queues
// from now on are learned after them (requests.pos), and the CQ's head moves to tail when no
// CQE is held.
func (d *ringReqs) read(ring *uring.Ring, tail uint32) {
	d.seen, d.end, d.rq.pos = tail, tail, tail
	if d.rq.held == 0 && d.next != tail {
		d.next = tail
		ring.CQSetHead(tail)
	}
}

// runBatch is reqDriving's: a batch of completions (runTurn's), through run.
func (d *ringReqs) runBatch(n int) bool {
	rq := d.rq
	rq.turn++
	ran := d.run(n)
	rq.settle()
	return ran
}

// run is runBatch's: up to n completions' callbacks, from the CQEs held in the ring and
// the queued completions (requests.cq), merged by position. A held CQE is a one-shot request's
// only one: its result goes from the CQE to the callback, through the loop's Completion
// (requests.comp; the steady case: fast, and a read's any result or a write's whole count),
// or through opDone (heldCQE). The CQ's head follows.
func (d *ringReqs) run(n int) bool {
	rq := d.rq
	ring := d.b.ring
	ran := false
	for n > 0 {
		if rq.held == 0 {
			d.next = d.seen // the CQEs left were all taken when read (cqes)
		}
		// The held CQEs before limit come before the queued completion at cq[head].
		limit := d.seen
		if rq.head < len(rq.cq) {
			pos := rq.cq[rq.head].pos
			if int32(pos-d.next) <= 0 {
				n--
				if rq.runOne() {
					ran = true
				}
				continue
			}
			if int32(pos-limit) < 0 {
				limit = pos
			}
		}
		if rq.held == 0 {
			break
		}
		// d.next is read once per CQE, after the last one's callback (which may have read
		// CQEs: a ride), and rq.recs once (which a callback may have grown).
		for p := d.next; n > 0 && p != limit; p = d.next {
			d.next = p + 1
			c := ring.CQEAtPos(p)
			ud := c.UserData
			if ud&(reqTag|reqKindMask) != reqTag|reqKindOp {
				continue // taken when read (cqes), or not a request's
			}
			rq.held--
			n--
			recs, idx := rq.recs, int(uint32(ud))
			if idx >= len(recs) {
				continue
			}
			r := ringOf(recs[idx])
			res := c.Res
			if r.ioKey == uint32(ud>>32) && (r.op&1 != 0 || uint32(res) >= r.blen) {
				// An IO's submission that IO.Submit made (ioKey: this use of the record, in
				// flight, no CloseFd waiting, and nothing changed since: still fast, no
				// deadline, no cancel), that ends with this result: a read's or recv's any,
				// a write's or send's whole count or error (uint32 of an error is above any
				// length). The result goes to its IOFunc as it is; the record is ready to be
				// submitted again (a fast record's per-submission fields are as ioDone
				// leaves them).
				ran = true
				rq.ioSteady(r, res)
				if x := r.rare; res >= 0 {
					x.fn(x.x, int(res), nil)
				} else {
					x.fn(x.x, 0, r.compErr(res))
				}
				continue
			}
			if r.gen != uint32(ud>>32)&genMask || r.state != stInflight {
				continue // a stale CQE: its record was reused
			}
			if !r.fast || r.op&1 == 0 && int(res) != int(r.blen) && res >= 0 {
				d.heldCQE(r, res, c.Flags, p)
				break // (it may have queued a completion before limit)
			}
			// The steady case: finish's work and runOne's, for a read, write, recv or send
			// that ends with this result (OpRead and OpRecv are the odd ones).
			ran = true
			r.cqes = 0
			if r.io {
				// An IO's: the result goes to its IOFunc as it is (a fast record's
				// per-submission fields are as ioDone leaves them: nothing to clear). Its fd's
				// state is looked at only for a Recv or when a CloseFd waits (ioFd).
				if r.ioCloseWait || r.op == OpRecv {
					d.ioFd(&r.reqRec, res)
				}
				r.gen = (r.gen + 1) & genMask
				r.state = stFree
				rq.live--
				if res >= 0 {
					x := r.rare
					x.fn(x.x, int(res), nil)
				} else {
					x := r.rare
					x.fn(x.x, 0, r.compErr(res))
				}
				continue
			}
			f := &rq.fds[r.fd]
			if r.op == OpRecv {
				f.set(fdDrained, res >= 0 && int(res) < int(r.blen))
			}
			if f.countOut() {
				rq.closeNow(int32(r.fd))
			}
			// The loop's Completion, every field.
			cp := rq.compOf(&r.reqRec, r.gen)
			cp.SockNonempty = c.Flags&uring.CQEFSockNonempty != 0 && r.op == OpRecv
			cp.More, cp.bid = false, -1
			if res >= 0 {
				n := r.blen // a write's or send's whole buffer
				if r.op&1 != 0 {
					n = uint32(res) // what a read or recv brought
				}
				cp.N, cp.Err, cp.Buf = int(res), nil, r.bytesN(n)
			} else {
				cp.N, cp.Err, cp.Buf = 0, r.compErr(res), r.bytes()
				if r.op&1 != 0 {
					cp.Buf = nil
				}
			}
			// requests.last, written out: the handle is stale from the callback on, and the
			// record goes back to the pool after it (recycle's work: a steady record has no
			// group or keep).
			r.gen = (r.gen + 1) & genMask
			r.state = stFree
			rq.cbRec = r.idx + 1
			r.cb(cp)
			rq.cbRec = 0
			r.cb, r.bp = nil, nil
			r.reqVars = reqVars{}
			rq.putFree(&r.reqRec)
		}
	}
	ring.CQSetHead(d.next)
	return ran
}

// ioSteady is run's and the request turn's work on r for an IO's steady completion res (its
// shortest way: see steady), before its callback: a Recv's ioDrained, and the record ready to
// be submitted again (its generation moved, free, not live). Its cqes, which every submission
// sets, is not read until then.
func (rq *requests) ioSteady(r *ringRec, res int32) {
	if r.op == OpRecv {
		r.ioDrained = res >= 0 && int(res) < int(r.blen)
	}
	r.gen = (r.gen + 1) & genMask
	r.state = stFree
	rq.live--
}

// ioFd is run's work on an IO's fd state for its steady completion (res): a Recv's
// ioDrained, and the fd's count when a CloseFd waits for the submission (ioCloseWait).
//
//go:noinline
func (d *ringReqs) ioFd(r *reqRec, res int32) {
	if r.op == OpRecv {
		r.ioDrained = res >= 0 && int(res) < int(r.blen)
	}
	if r.ioCloseWait {
		r.ioCloseWait = false
		f := &d.rq.fds[r.fd]
		if f.countOut() {
			d.rq.closeNow(int32(r.fd))
		}
	}
}

// heldCQE takes the CQE at position p, held for r, a one-shot request, when it is not the
// steady case: opDone (or, with the request's LINK_TIMEOUT still to come, its result kept
// until then). A completion it queues is learned at p.
func (d *ringReqs) heldCQE(r *ringRec, res int32, flags uint32, p uint32) {
	rq := d.rq
	rq.pos = p
	if r.cqes--; r.cqes == 0 {
		rq.opDone(&r.reqRec, res, compFlags(flags))
	} else {
		r.keepOpResult(res, flags) // its LINK_TIMEOUT's CQE is to come
	}
	rq.pos = d.seen
}

// compFlags translates a CQE's flags (IORING_CQE_F_*) into the core's completion flags.
func compFlags(f uint32) uint32 {
	var c uint32
	if f&uring.CQEFMore != 0 {
		c |= compMore
	}
	if f&uring.CQEFSockNonempty != 0 {
		c |= compSockNonempty
	}
	if f&uring.CQEFBuffer != 0 {
		c |= compBuffer | f>>uring.CQEBufferShift<<compBufShift
	}
	if f&uring.CQEFBufMore != 0 {
		c |= compBufMore
	}
	return c
}

// cqe takes a request's CQE (user_data with reqTag) that is not held for a callback: a
// LINK_TIMEOUT's, a command's, a multishot or SubmitSQE request's; and after shutdown any.
func (d *ringReqs) cqe(c *uring.CQE) {
	ud, res, flags := c.UserData, c.Res, c.Flags
	kind := ud & reqKindMask
	more := flags&uring.CQEFMore != 0
	if kind == reqKindCmd {
		d.inflight--
		return
	}
	if !more {
		d.inflight--
	}
	idx, gen := uint32(ud), uint32(ud>>32)&genMask
	if int(idx) >= len(d.rq.recs) {
		return
	}
	r := ringOf(d.rq.recs[idx])
	if r.gen != gen || r.state != stInflight {
		return
	}
	if d.dead { // Loop.Close: no callback runs; a connection accepted meanwhile is closed
		if kind != reqKindLink {
			closeAccepted(r.op, res)
		}
		return
	}
	if kind == reqKindLink {
		r.link = false
		if res == -int32(unix.ETIME) {
			r.timedOut = true
		}
	} else if more {
		d.rq.complete(&r.reqRec, res, compFlags(flags))
		return
	} else if r.cqes == 1 { // no LINK_TIMEOUT's CQE to wait for: the op's result goes on now
		r.cqes = 0
		d.rq.opDone(&r.reqRec, res, compFlags(flags))
		return
	} else {
		r.keepOpResult(res, flags) // (a one-shot request's, with its LINK_TIMEOUT's CQE to come)
	}
	if r.cqes--; r.cqes == 0 && r.opDone {
		res, flags := r.opResult()
		d.rq.opDone(&r.reqRec, res, flags)
	}
}

// unread is ringUser's: the position of the first CQE not read yet (seen).
func (d *ringReqs) unread() uint32 { return d.seen }
