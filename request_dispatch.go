//go:build unix

package ringev

// Completion dispatch: the queue of completions a backend reports, the last steps of an
// operation (a short write's rest, a multishot re-armed), and the callbacks' turn in Once.

import (
	"golang.org/x/sys/unix"
)

// reqError is the error of a failed request: it wraps the errno, and being one byte it
// converts to an error without allocating.
type reqError uint8

func (e reqError) Error() string { return "ringev: request: " + unix.Errno(e).Error() }

func (e reqError) Unwrap() error { return unix.Errno(e) }

// errnoErr is the error for a negative CQE result (res = -errno).
func errnoErr(res int32) error {
	if -res < 256 {
		return reqError(-res)
	}
	return unix.Errno(-res)
}

// cqEntry is one completion waiting for its callback.
type cqEntry struct {
	rec   *reqRec
	gen   uint32
	res   int32
	flags uint32 // completion flags: compMore, compBuffer | bid << compBufShift, ...
	off   int32  // a group buffer's data offset in its buffer (incremental consumption)
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

// Dispatch bounds: one Once runs at most reqBatch completions, and at most reqPerTurn of one
// multishot request (a flood on one socket cannot hold the others back: liburing #1043).
const (
	reqBatch   = 32
	reqPerTurn = 8
)

// push appends an entry to the completion queue and returns it, for the caller to write
// every field of: in place, where append builds the entry on the stack first and copies it.
func (rq *requests) push() *cqEntry {
	n := len(rq.cq)
	if n < cap(rq.cq) {
		rq.cq = rq.cq[:n+1]
	} else {
		rq.cq = append(rq.cq, cqEntry{})
	}
	return &rq.cq[n]
}

// complete queues an intermediate completion of a multishot request (its result and
// completion flags; compMore is implied).
func (rq *requests) complete(r *reqRec, res int32, flags uint32) {
	rq.cq = append(rq.cq, r.entry(res, flags|compMore))
}

// entry is r's completion entry for a result and its completion flags; a group buffer it
// carries is taken (BufferGroup.take) in the order the completions arrive, which is the order
// the kernel used them.
func (r *reqRec) entry(res int32, flags uint32) cqEntry {
	e := cqEntry{rec: r, gen: r.gen, res: res, flags: flags}
	if r.op == OpRecvMultishot && flags&compBuffer != 0 {
		e.off = r.takeBuffer(res, flags)
	}
	return e
}

// takeBuffer takes the group buffer of a RecvMultishot's completion (BufferGroup.take) and returns
// the data's offset in it.
func (r *reqRec) takeBuffer(res int32, flags uint32) int32 {
	return r.group.take(int(flags>>compBufShift), max(res, 0), flags&compBufMore != 0)
}

// opDone is told the result of r's operation (its last CQE, or the emulation's last
// syscall). It finishes a short write or send (the rest goes as the same request), re-arms a
// multishot request that the kernel ended while it still works (a RecvMultishot that got
// data, an AcceptMultishot that got a connection), parks a RecvMultishot whose group ran dry,
// and otherwise queues the last completion.
func (rq *requests) opDone(r *reqRec, res int32, flags uint32) {
	if r.state == stFree || r.state == stDone {
		return
	}
	switch r.op {
	case OpWrite, OpSend:
		if res > 0 {
			r.done += int(res)
			if r.done < len(r.buf) {
				if !r.cancelReq && !r.dead() {
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
		if res > 0 && !r.cancelReq {
			rq.complete(r, res, flags)
			r.state = stQueued
			rq.drv.start(r)
			return
		}
		if res == -int32(unix.ENOBUFS) && !r.cancelReq && !r.group.closed {
			// The group ran dry: the kernel's multishot ended, nothing is lost (the data
			// stays in the socket). Tell the callback, and re-arm when a buffer comes back.
			rq.cq = append(rq.cq, cqEntry{rec: r, gen: r.gen, res: res, flags: compMore})
			if r.group.avail > 0 {
				r.state = stQueued
				rq.drv.start(r)
				return
			}
			r.state = stParked
			r.group.parked = append(r.group.parked, r)
			return
		}
	}
	if r.timedOut && (res == -int32(unix.ECANCELED) || res == -int32(unix.EINTR)) {
		res = -int32(eTime)
	}
	if r.op == OpRecvMultishot && r.group.closed && res == -int32(unix.ENOBUFS) {
		res = -int32(unix.ECANCELED) // BufferGroup.Close cancelled it; the kernel saw the group go first
	}
	rq.finish(r, res, flags)
}

// finishesAsIs reports whether opDone(r, res, flags), r's last result, would only pass res
// to finish: r is a read or recv, or a write or send that res completes in one piece, with
// no deadline that passed (opDone turns its ECANCELED into ETIME).
func finishesAsIs(r *reqRec, res int32) bool {
	switch r.op {
	case OpRead, OpRecv:
		return !r.timedOut
	case OpWrite, OpSend:
		return !r.timedOut && r.done == 0 && int(res) == len(r.buf)
	}
	return false
}

// finish queues r's last completion and closes its fd if a CloseFd waits for it.
func (rq *requests) finish(r *reqRec, res int32, flags uint32) {
	if r.timer.index >= 0 {
		rq.l.timers.remove(r.timer.index)
	}
	if (r.op == OpWrite || r.op == OpSend) && r.done > 0 && res < 0 {
		r.res = res
		res = int32(r.done) // with the error in r.res: see runTurn
	} else {
		r.res = 0
	}
	r.state = stDone
	// entry's work, written out: entry is not inlined (append's cost), and this is every
	// request's path.
	e := rq.push()
	e.rec, e.gen, e.res, e.flags, e.off = r, r.gen, res, flags&^compMore, 0
	if r.op == OpRecvMultishot && flags&compBuffer != 0 {
		e.off = r.takeBuffer(res, flags)
	}
	if r.counted {
		f := &rq.fds[r.fd]
		f.recvDone(r, res)
		f.live--
		if f.live == 0 && f.closeRec != nil {
			rq.closeNow(f)
		}
	}
}

// finishSteady is finish for the steady CQE (ringReqs.cqe): r's only one, which opDone would
// pass on unchanged (finishesAsIs), with no deadline timer to remove, no count before an error
// and no group buffer. The caller has done its own bookkeeping for r first.
func (rq *requests) finishSteady(r *reqRec, res int32, flags uint32) {
	r.state, r.res = stDone, 0
	e := rq.push()
	e.rec, e.gen, e.res, e.flags, e.off = r, r.gen, res, flags&^compMore, 0
	if r.counted {
		f := &rq.fds[r.fd]
		f.recvDone(r, res)
		if f.live--; f.live == 0 && f.closeRec != nil {
			rq.closeNow(f)
		}
	}
}

// recvDone notes, for a Recv's last completion (res), whether it drained the socket: it took
// less than its buffer (see ringReqs.pollFirst).
func (f *reqFd) recvDone(r *reqRec, res int32) {
	if r.op == OpRecv {
		f.drained = res >= 0 && int(res) < len(r.buf)
	}
}

// reqWait is the timeout of Once's wait: 0 while completions wait for their callbacks
// (the wait only looks at the fds, whose turn it is), else timeout.
func (l *Loop) reqWait(timeout int64) int64 {
	if l.req != nil && l.req.pending() {
		return 0
	}
	return timeout
}

// pending reports whether completions wait for their callbacks.
func (rq *requests) pending() bool { return rq.head < len(rq.cq) }

// runTurn runs a batch of completions if it is their turn: completions and fd handlers take
// turns when both are ready (an fd handler ran since the last batch, or no fd readiness is
// left to serve). It reports whether it ran one.
func (l *Loop) runTurn() bool {
	rq := l.req
	if l.dispatch == rq.seen && (l.cacheLeft > 0 || l.nfd > 0 && l.waitSeq == rq.seenWait) {
		// The fd handlers' turn: no fd handler ran since the last batch, and one is ready, or
		// the fds were not looked at since (Once then looks without blocking: see reqWait).
		return false
	}
	rq.seen, rq.seenWait = l.dispatch, l.waitSeq
	rq.turn++
	n := len(rq.cq) - rq.head
	if n > reqBatch {
		n = reqBatch
	}
	ran := false
	// The callbacks run with the nesting guard set, once for the batch: endBatch resets it
	// (and cbFd) also when a callback panics out of Once.
	l.inside = true
	defer rq.endBatch()
	// A taken entry is not cleared: its record stays in rq.recs anyway (records are recycled,
	// never freed), so it keeps nothing else reachable.
	for i := 0; i < n && !l.closed; i++ {
		e := rq.cq[rq.head]
		rq.head++
		r := e.rec
		if r.gen != e.gen {
			continue
		}
		if manyCQEs[r.op] {
			if r.turnSeq != rq.turn {
				r.turnSeq, r.turnRuns = rq.turn, 0
			}
			if r.turnRuns >= reqPerTurn {
				rq.deferRequest(e) // behind the others: at most reqPerTurn per batch
				continue
			}
			r.turnRuns++
		}
		ran = true
		// r's callback for e, and r freed after its last completion: written out here (a
		// call per completion costs). Every field of the Completion is written, each once
		// (it is the heap's: no zeroing pass first).
		c := &rq.comp
		c.Request = Request{rec: r, gen: r.gen}
		c.Op, c.Fd, c.Token, c.More = r.op, int(r.fd), r.token, e.flags&compMore != 0
		c.SockNonempty = e.flags&compSockNonempty != 0 && (r.op == OpRecv || r.op == OpRecvMultishot)
		c.bid = -1
		if c.group != nil {
			c.group = nil
		}
		c.N, c.Err = int(e.res), nil
		switch {
		case e.res >= 0 && (r.res >= 0 || c.More):
			// a result, no error (r.res < 0: a Write's or Send's error after a part, below)
		case r.res < 0 && !c.More:
			c.Err = errnoErr(r.res) // Write, Send: N is the count before the error
		default: // e.res < 0
			c.N, c.Err = 0, errnoErr(e.res)
		}
		switch r.op {
		case OpRead, OpRecv:
			if c.Err == nil {
				c.Buf = r.buf[:c.N]
			} else {
				c.Buf = nil
			}
		case OpWrite, OpSend:
			c.Buf = r.buf
		case OpRecvMultishot:
			c.Buf = nil
			if e.flags&compBuffer != 0 {
				bid := int32(e.flags >> compBufShift)
				c.group, c.bid = r.group, bid
				c.Buf = r.group.slab[int(bid)*r.group.size+int(e.off):][:max(c.N, 0):max(c.N, 0)]
			}
		default:
			c.Buf = nil
		}
		cb := r.cb
		rq.cbFd = r.fd
		if !c.More {
			rq.release(r) // before the callback: it may make new requests with this record
		}
		cb(c)
	}
	if l.closed {
		return true
	}
	if rq.head == len(rq.cq) {
		rq.cq, rq.head = rq.cq[:0], 0
	} else if rq.head > len(rq.cq)/2 && rq.head > 64 {
		k := copy(rq.cq, rq.cq[rq.head:])
		clear(rq.cq[k:])
		rq.cq, rq.head = rq.cq[:k], 0
	}
	return ran
}

// manyCQEs marks the ops whose request can have more than one completion (multishot ones, and
// SubmitSQE's, which may be): at most reqPerTurn of theirs run in one batch.
var manyCQEs = [256]bool{OpRecvMultishot: true, OpAcceptMultishot: true, OpSQE: true}

// deferRequest puts e, the completion just taken from the queue, and every later queued
// completion of e's request behind the other requests' completions, keeping their order: a
// multishot request's callback must get its completions in the order the kernel posted them
// (a stream's bytes). It allocates nothing once rq.scratch has grown to the largest group.
func (rq *requests) deferRequest(e cqEntry) {
	rest := rq.cq[rq.head:]
	mine := append(rq.scratch[:0], e)
	k := 0
	for _, x := range rest {
		if x.rec == e.rec {
			mine = append(mine, x)
		} else {
			rest[k] = x
			k++
		}
	}
	rq.cq = append(rq.cq[:rq.head+k], mine...)
	clear(mine)
	rq.scratch = mine[:0]
}

// endBatch ends runTurn's batch of callbacks (deferred: a callback may panic).
func (rq *requests) endBatch() { rq.l.inside, rq.cbFd = false, -1 }

// shutdown is Loop.Close's: every request is cancelled, no callback runs. A connection that an
// Accept or AcceptMultishot accepted and no callback got is closed (it would leak), and so is
// every fd whose CloseFd was waiting for its requests to end.
func (rq *requests) shutdown() {
	rq.dead = true
	rq.drv.shutdown()
	for i := range rq.fds {
		if c := rq.fds[i].closeRec; c != nil {
			rq.fds[i].closeRec = nil
			unix.Close(int(c.fd))
		}
	}
	for _, e := range rq.cq[rq.head:] {
		if e.rec != nil && e.rec.gen == e.gen {
			closeAccepted(e.rec.op, e.res)
		}
	}
	clear(rq.cq)
	rq.cq, rq.head = nil, 0
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
