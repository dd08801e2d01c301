//go:build unix

package ringev

// Completion dispatch: the queue of completions a backend reports, the last steps of an
// operation (a short write's rest, a multishot re-armed), and the callbacks' turn in Once.

import (
	"golang.org/x/sys/unix"
)

// cqEntry is one completion waiting for its callback in requests.cq.
type cqEntry struct {
	rec   *reqRec
	gen   uint32
	res   int32
	flags uint32 // completion flags: compMore, compBuffer | bid << compBufShift, ...
	off   int32  // a group buffer's data offset in its buffer (incremental consumption)
	// pos is where the loop learned of it among the CQEs the uring driver holds (a position in
	// its ring's CQ): it runs after the held CQEs before pos. The emulation has no CQ: 0.
	pos uint32
}

// Completion flags (cqEntry.flags): ringev's own bits. A backend sets them from what it
// learned; the uring backend translates a CQE's IORING_CQE_F_* flags (compFlags).
const (
	compMore         uint32 = 1 << 0 // more completions of the request follow (multishot)
	compBufMore      uint32 = 1 << 1 // later completions share the buffer (incremental consumption)
	compSockNonempty uint32 = 1 << 2 // the socket still held data after this receive
	compBuffer       uint32 = 1 << 3 // a group buffer holds the data; its ID is flags >> compBufShift
	compBufShift            = 16
)

// Dispatch bounds: one Once runs at most reqBatch completions (reqseam.go), and at most
// reqPerTurn of one multishot request (a flood on one socket cannot hold the others back:
// docs/design.md, "Dispatch bounds").
const reqPerTurn = 8

// push appends an entry to the completion queue, at position rq.pos, and returns it for the
// caller to write every other field of: in place, where append builds the entry on the stack
// first and copies it. The queue stays in position order (see cqEntry.pos): an entry of an
// earlier position than the last one's (a held CQE's result, pushed when it runs) goes before
// the later ones.
func (rq *requests) push() *cqEntry {
	n := len(rq.cq)
	if n < cap(rq.cq) {
		rq.cq = rq.cq[:n+1]
	} else {
		rq.cq = append(rq.cq, cqEntry{})
	}
	rq.queued++
	if n > rq.head && int32(rq.cq[n-1].pos-rq.pos) > 0 {
		return rq.pushBefore(n)
	}
	e := &rq.cq[n]
	e.pos = rq.pos
	return e
}

// pushBefore is push for an entry of an earlier position than the last queued one's: it moves
// the later ones (cq[i:n]) up by one and returns cq[i].
//
//go:noinline
func (rq *requests) pushBefore(n int) *cqEntry {
	i := n
	for i > rq.head && int32(rq.cq[i-1].pos-rq.pos) > 0 {
		i--
	}
	copy(rq.cq[i+1:], rq.cq[i:n])
	e := &rq.cq[i]
	*e = cqEntry{pos: rq.pos}
	return e
}

// complete queues an intermediate completion of a multishot request (its result and
// completion flags; compMore is implied).
func (rq *requests) complete(r *reqRec, res int32, flags uint32) {
	rq.queue(r, res, flags|compMore)
}

// queue queues a completion of r: its result and completion flags. A group buffer it carries is
// taken (BufferGroup.take) in the order the completions arrive, which is the order the kernel
// used them.
func (rq *requests) queue(r *reqRec, res int32, flags uint32) {
	e := rq.push()
	e.rec, e.gen, e.res, e.flags, e.off = r, r.gen, res, flags, 0
	if r.op == OpRecvMultishot && flags&compBuffer != 0 {
		e.off = r.takeBuffer(res, flags)
	}
}

// takeBuffer takes the group buffer of a RecvMultishot's completion (BufferGroup.take) and returns
// the data's offset in it.
func (r *reqRec) takeBuffer(res int32, flags uint32) int32 {
	return r.grp().take(int(flags>>compBufShift), max(res, 0), flags&compBufMore != 0)
}

// opDone is told the result of r's operation (its last CQE, or the emulation's last
// syscall). It finishes a short write or send (the rest goes as the same request), re-arms a
// multishot request that the kernel ended while it still works (an AcceptMultishot that got a
// connection; a RecvMultishot that got data, found no data at its turn, or whose group ran
// dry: BufferGroup.ended), and otherwise queues the last completion.
func (rq *requests) opDone(r *reqRec, res int32, flags uint32) {
	if r.state == stFree || r.state == stDone {
		return
	}
	switch r.op {
	case OpWrite, OpSend:
		if res > 0 {
			r.done += res
			if uint32(r.done) < r.blen {
				if !r.cancelReq && !r.dead() {
					r.slow() // the rest's result is not the last as it is (an IO's ioKey too)
					r.state = stQueued
					rq.drv.start(r)
					return
				}
				r.timedOut = r.timedOut || r.dead()
				res = -int32(unix.ECANCELED)
			}
		}
		if res >= 0 {
			res = int32(r.done)
		}
	case OpAcceptMultishot:
		if res >= 0 && !r.cancelReq {
			rq.complete(r, res, flags)
			r.state = stQueued
			rq.drv.start(r)
			return
		}
	case OpRecvMultishot:
		if res < 0 && flags&compBuffer != 0 {
			flags = r.grp().unused(flags)
		}
		if r.turn && r.cancelReq && res == -int32(unix.EAGAIN) {
			res = -int32(unix.ECANCELED) // a turn's EAGAIN is never the request's own result
		}
		if r.grp().ended(r, res, flags) {
			return
		}
	}
	if r.timedOut && (res == -int32(unix.ECANCELED) || res == -int32(unix.EINTR)) {
		res = -int32(eTime)
	}
	if r.op == OpRecvMultishot && r.grp().closed && res == -int32(unix.ENOBUFS) {
		res = -int32(unix.ECANCELED) // BufferGroup.Close cancelled it; the kernel saw the group go first
	}
	rq.finish(r, res, flags)
}

// finishFast is finish for the last result of a fast request (reqRec.fast) that opDone would
// pass on unchanged (a read's, or a write's whole count or error before any part): no deadline
// timer, no count before an error, no group buffer. Only the emulation calls it (perform): it
// has no CQ, so every entry's pos is 0 (see cqEntry.pos) and a new one goes last.
func (rq *requests) finishFast(r *reqRec, res int32) {
	r.state = stDone
	if n := len(rq.cq); n < cap(rq.cq) {
		rq.cq = rq.cq[:n+1] // push's steady case, written out
		rq.cq[n] = cqEntry{rec: r, gen: r.gen, res: res}
		rq.queued++
	} else {
		e := rq.push()
		e.rec, e.gen, e.res, e.flags, e.off = r, r.gen, res, 0, 0
	}
	if r.io && !r.ioCloseWait {
		return // an IO's: not counted on its fd
	}
	r.ioCloseWait = false
	f := &rq.fds[r.fd]
	if r.op == OpRecv {
		f.set(fdDrained, res >= 0 && int(res) < int(r.blen))
	}
	if f.countOut() {
		rq.closeNow(int32(r.fd))
	}
}

// finish queues r's last completion and closes its fd if a CloseFd waits for it. The entry takes
// runOne's general way (fast is cleared: only finishFast queues a fast request's result).
func (rq *requests) finish(r *reqRec, res int32, flags uint32) {
	r.slow()
	if r.timerQueued() {
		rq.l.timers.remove(r.rare.timer.index)
	}
	if (r.op == OpWrite || r.op == OpSend) && r.done > 0 && res < 0 {
		r.res = res
		res = int32(r.done) // with the error in r.res: see runOne
	} else {
		r.res = 0
	}
	r.state = stDone
	rq.queue(r, res, flags&^compMore)
	if r.io && r.op == OpRecv {
		r.ioDrained = res >= 0 && int(res) < int(r.blen)
	}
	if r.counted() {
		r.ioCloseWait = false
		f := &rq.fds[r.fd]
		f.recvDone(r, res)
		if f.countOut() {
			rq.closeNow(int32(r.fd))
		}
	}
}

// recvDone notes, for a Recv's last completion (res), whether it drained the socket: it took
// less than its buffer (see ringReqs.pollFirst).
func (f *reqFd) recvDone(r *reqRec, res int32) {
	if r.op == OpRecv {
		f.set(fdDrained, res >= 0 && int(res) < int(r.blen))
	}
}

// settle ends a batch of completions (runTurn's): the queue starts again at its front when
// every completion in it ran, and moves what is left there once most of it ran (compact).
// Small enough to be inlined into runTurn.
func (rq *requests) settle() {
	if rq.head != len(rq.cq) {
		rq.compact()
		return
	}
	rq.cq, rq.head = rq.cq[:0], 0
}

// compact moves the completions left in the queue to its front once more than half of it
// (and more than 64 entries) has run.
//
//go:noinline
func (rq *requests) compact() {
	if rq.head > len(rq.cq)/2 && rq.head > 64 {
		k := copy(rq.cq, rq.cq[rq.head:])
		clear(rq.cq[k:])
		rq.cq, rq.head = rq.cq[:k], 0
	}
}

// runQueued runs up to n queued completions (requests.cq); the emulation's batch (emulReqs.runBatch).
func (rq *requests) runQueued(n int) bool {
	ran := false
	for ; n > 0 && rq.head < len(rq.cq); n-- {
		e := &rq.cq[rq.head]
		if r := e.rec; r.gen == e.gen && r.fast {
			// A fast request's only completion (finishFast's entry): runOne's
			// work for it, written out.
			res, flags := e.res, e.flags
			rq.head++
			rq.queued--
			ran = true
			c := rq.compOf(r, r.gen)
			c.SockNonempty = flags&compSockNonempty != 0 && r.op == OpRecv
			c.More, c.bid = false, -1
			if res >= 0 {
				n := r.blen // a write's or send's whole buffer
				if r.op&1 != 0 {
					n = uint32(res) // what a read or recv brought
				}
				c.N, c.Err, c.Buf = int(res), nil, r.bytesN(n)
			} else {
				c.Buf = r.bytes()
				c.N, c.Err = 0, r.compErr(res)
				if r.op&1 != 0 {
					c.Buf = nil
				}
			}
			rq.cbFd = r.fd
			r.retire() // last's work, written out
			if r.io {
				rq.ioDone(r)
				continue
			}
			rq.cbRec = r.idx + 1
			r.cb(c)
			rq.cbRec = 0
			rq.recycle(r)
			continue
		}
		if rq.runOne() {
			ran = true
		}
	}
	return ran
}

// runOne takes the completion at cq[head] and runs its callback. It reports false when the
// entry is stale (its record was reused) or deferred (deferRequest: the request had its
// reqPerTurn completions in this batch). A taken entry is not cleared: its record stays in
// rq.recs anyway (records are recycled, never freed), so it keeps nothing else reachable.
func (rq *requests) runOne() bool {
	e := &rq.cq[rq.head] // (read before the callback, which may move the queue: see push, compact)
	rq.head++
	rq.queued--
	r := e.rec
	if r.gen != e.gen {
		return false
	}
	if manyCQEs[r.op] {
		if r.turnSeq != uint16(rq.turn) {
			r.turnSeq, r.turnRuns = uint16(rq.turn), 0
		}
		if r.turnRuns >= reqPerTurn {
			rq.deferRequest(*e) // behind the others: at most reqPerTurn per batch
			return false
		}
		r.turnRuns++
		if e.flags&(compMore|compBuffer) == compMore|compBuffer && r.op == OpRecvMultishot && e.res >= 0 {
			// A receive's data in a group buffer, more to come: a server's usual
			// completion, the general way's fields below for it.
			c := rq.compOf(r, e.gen)
			g := r.grp()
			bid := int32(e.flags >> compBufShift)
			c.More, c.SockNonempty = true, e.flags&compSockNonempty != 0
			c.N, c.Err, c.group = int(e.res), nil, g
			c.bid, c.Buf = bid, g.view(bid, e.off, int(e.res))
			rq.cbFd = r.fd
			r.cb(c)
			return true
		}
	}
	// The loop's Completion for e: every field, each once.
	c := rq.compOf(r, e.gen)
	c.More = e.flags&compMore != 0
	c.SockNonempty = e.flags&compSockNonempty != 0 && (r.op == OpRecv || r.op == OpRecvMultishot)
	c.N, c.Err = int(e.res), nil
	switch {
	case e.res >= 0 && (r.res >= 0 || c.More):
		// a result, no error (r.res < 0: a Write's or Send's error after a part, below)
	case r.res < 0 && !c.More:
		c.Err = r.compErr(r.res) // Write, Send: N is the count before the error
	default: // e.res < 0
		c.N, c.Err = 0, r.compErr(e.res)
	}
	switch r.op { // (a server's usual completion first)
	case OpRecvMultishot:
		c.group = r.grp()
		if e.flags&compBuffer != 0 {
			bid := int32(e.flags >> compBufShift)
			c.bid, c.Buf = bid, c.group.view(bid, e.off, max(c.N, 0))
		} else {
			c.bid, c.Buf = -1, nil
		}
	case OpRead, OpRecv:
		c.bid = -1
		if c.Err == nil {
			c.Buf = r.bytesN(uint32(c.N))
		} else {
			c.Buf = nil
		}
	case OpWrite, OpSend:
		c.bid, c.Buf = -1, r.bytes() // the whole buffer
	default:
		c.bid, c.Buf = -1, nil
	}
	rq.cbFd = r.fd
	if c.More {
		r.cb(c)
		return true
	}
	rq.last(r, c)
	return true
}

// last runs r's last callback with c, the loop's Completion: r's handle is stale from the
// callback on (a new request it makes takes another record), and r goes back to the pool after
// it.
func (rq *requests) last(r *reqRec, c *Completion) {
	r.retire()
	if r.io { // an IO's: the caller's record, not the pool's
		rq.ioDone(r)
		return
	}
	rq.cbRec = r.idx + 1
	r.cb(c)
	rq.cbRec = 0
	rq.recycle(r)
}

// manyCQEs marks the ops whose request can have more than one completion (multishot ones, and
// SubmitSQE's, which may be): at most reqPerTurn of theirs run in one batch.
var manyCQEs = [256]bool{OpRecvMultishot: true, OpAcceptMultishot: true, OpSQE: true}

// deferRequest puts e, the completion just taken from the queue, and every later queued
// completion of e's request behind the other requests' completions, keeping their order: a
// multishot request's callback must get its completions in the order the kernel posted them
// (a stream's bytes). A CloseFd's completion of e's fd queued after them goes along, in its
// place: it comes after the last completion of the fd's requests (CloseFd's contract). They go
// behind the CQEs the uring driver holds, too (position rq.pos). It allocates nothing once
// rq.scratch has grown to the largest group.
//
//go:noinline
func (rq *requests) deferRequest(e cqEntry) {
	rest := rq.cq[rq.head:]
	e.pos = rq.pos
	mine := append(rq.scratch[:0], e)
	k := 0
	fd := e.rec.fd
	for _, x := range rest {
		if x.rec == e.rec || x.rec.op == OpClose && x.rec.fd == fd && x.rec.gen == x.gen {
			x.pos = rq.pos
			mine = append(mine, x)
		} else {
			rest[k] = x
			k++
		}
	}
	rq.cq = append(rq.cq[:rq.head+k], mine...)
	rq.queued++ // e is queued again
	clear(mine)
	rq.scratch = mine[:0]
}

// putBack is reqLayer's: it puts the record of a last callback that panicked (cbRec) back in
// the pool, when the loop ends the batch (endTurn, deferred).
func (rq *requests) putBack() {
	r := rq.recs[rq.cbRec-1]
	rq.cbRec = 0
	rq.recycle(r)
}

// shutdown is Loop.Close's: every request is cancelled, no callback runs. A connection that an
// Accept or AcceptMultishot accepted and no callback got is closed (it would leak), and so is
// every fd whose CloseFd was waiting for its requests to end.
func (rq *requests) shutdown() {
	rq.dead = true
	rq.ownSeq = closedSeq // no request takes the fast way (fastOK)
	rq.drv.shutdown()
	for fd, x := range rq.fdRare {
		if c := x.closeRec; c != nil {
			rq.setFdRare(fd, nil, x.ios)
			unix.Close(int(c.fd))
		}
	}
	for _, e := range rq.cq[rq.head:] {
		if e.rec != nil && e.rec.gen == e.gen {
			closeAccepted(e.rec.op, e.res)
		}
	}
	clear(rq.cq)
	rq.cq, rq.head, rq.queued = nil, 0, 0
}

// closeAccepted closes res, the new fd of an accept op's completion that no callback will get.
func closeAccepted(op Op, res int32) {
	if (op == OpAccept || op == OpAcceptMultishot) && res >= 0 {
		unix.Close(int(res))
	}
}

// multishot reports whether op posts several completions.
func multishot(op Op) bool {
	return op == OpRecvMultishot || op == OpAcceptMultishot || op == OpSQE
}
