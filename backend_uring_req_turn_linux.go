package ringev

// The request turn: Once's turn on a uring loop with no fd event whose requests are in the
// kernel, as the C proactor's loop runs (io_uring_submit_and_wait, then the CQEs): one
// io_uring_enter(2) that submits and collects without waiting, and the steady IO completions
// it finds run from the ring in one pass, read and run together. What the loop's wait does for
// fds (the announcement to posters, the epoll set's look, the readiness cache's marks) has
// nothing to serve there, and the reap's count before the run is not needed for a CQE that
// runs at once.

import (
	"runtime"
	"unsafe"

	"github.com/ringev/ringev/uring"
)

// turn is Once's request turn, before its wait, on a loop with no fd event (Loop.nfd is 0)
// and no completion waiting for its callback (reqShared.pending: Once asked). It runs only when
// the wait would look first without blocking (uringBackend.look: lookSkip 0), with the
// EPOLL_WAIT for the loop's own eventfds in flight and something in the kernel or queued;
// else turnNone, and Once waits as usual.
// It makes the look's enter; when that found nothing, it counts as the look's miss, and the
// wait that follows blocks without looking again (turnNone). It then runs, in the order of
// the CQ, the CQEs that are an IO's steady completion (steady), up to reqBatch, as one batch
// of callbacks: turnRan. At the first other CQE it stops; those after stay unread (the next
// Once reads them without an enter). When the first CQE is another, nothing runs: the CQEs
// are read as the wait reads them (reap), and Once goes on as after its wait with what that
// found ready (the loop's own eventfds) in the readiness cache: turnReaped. A callback's
// completions queued meanwhile are learned after the CQEs the enter found (requests.pos), as
// in a batch of run.
func (d *ringReqs) turn(l *Loop) turnEnd {
	b, rq := d.b, d.rq
	if b.lookSkip != 0 || !b.inflight { // (and no completion waits for its callback: Once)
		return turnNone
	}
	ring := b.ring
	p := d.seen
	tail := ring.CQTail()
	if p == tail {
		// Nothing unread: the look's enter.
		if len(d.queue) > 0 || len(d.cmds) > 0 {
			if err := d.flush(); err != nil {
				return d.reaped(l, l.cache[:0], err)
			}
		} else if d.inflight == 0 {
			return turnNone
		}
		b.submitted() // (entering)
		if _, err := ring.Submit(); err != nil {
			return d.reaped(l, l.cache[:0], ringWaitError(err))
		}
		if tail = ring.CQTail(); p == tail {
			b.lookMissed(1) // the wait's own skip takes one
			return turnNone
		}
		b.lookMiss = 0
	}
	c := ring.CQEAtPos(p)
	r := steady(rq.recs, c)
	if r == nil {
		buf, retry, err := b.reap(l.cache[:0])
		if retry {
			err = nil // the fallback is on: the next wait arms it
		}
		return d.reaped(l, buf, err)
	}
	// runTurn's batch: the nesting guard, the fds' turn after it.
	rq.seen, rq.seenWait = l.dispatch, l.waitSeq
	// (rq.turn, a batch's number for multishot requests' share, is runTurn's: none runs here)
	rq.pos = tail
	d.end = tail // the batch ends before it
	if tail-p > reqBatch {
		d.end = p + reqBatch
	}
	mark := ^uintptr(unsafe.Pointer(l)) // the turn's frame holds its loop's mark, for the nesting guard (Loop.turnAt)
	l.turnAt = l.stack[1] - uintptr(unsafe.Pointer(&mark))
	if l.turnFP == 0 {
		l.turnFP = frameFrom(&mark)
	}
	for {
		res := c.Res
		p++
		d.seen = p
		d.inflight--
		rq.ioSteady(r, res)
		if x := r.rare; res >= 0 {
			x.fn(x.x, int(res), nil)
		} else {
			x.fn(x.x, 0, r.compErr(res))
		}
		q := d.seen
		if q == d.end {
			break // the batch is full, or the enter's CQEs ran, or a ride read the rest (read)
		}
		p = q
		c = ring.CQEAtPos(p)
		if r = steady(rq.recs, c); r == nil {
			break
		}
	}
	if d.seen == p || rq.held > 0 {
		d.next = p // (else a ride's read, holding none, moved it past)
	}
	ring.CQSetHead(d.next)
	if rq.head == len(rq.cq) {
		rq.cq, rq.head = rq.cq[:0], 0 // (settle: a callback may have queued completions)
	}
	runtime.KeepAlive(&mark) // (the variable holds the mark until here)
	return turnRan           // (Once clears l.turnAt)
}

// reaped ends a turn that read the CQEs as the wait reads them (turnReaped): what they made
// ready goes to the readiness cache, as Once puts a wait's, and err to Once (turnErr).
//
//go:noinline
func (d *ringReqs) reaped(l *Loop, buf []readyFd, err error) turnEnd {
	if unsafe.SliceData(buf) == unsafe.SliceData(l.cache) {
		l.cache = l.cache[:len(buf)]
	} else {
		l.cache = buf
	}
	d.rq.turnErr = err
	return turnReaped
}

// steady returns the record of c when c is an IO's steady completion (run's shortest way: the
// submission IO.Submit made, in flight with no CloseFd waiting for it, still fast: its ioKey;
// and a result that is its last: a read's or recv's any, a write's or send's whole count or
// an error), else nil. recs is requests.recs.
func steady(recs []*reqRec, c *uring.CQE) *ringRec {
	ud := c.UserData
	i := uint(uint32(ud))
	if ud>>61 != (reqTag|reqKindOp)>>61 || i >= uint(len(recs)) {
		return nil
	}
	r := ringOf(recs[i])
	if r.ioKey != uint32(ud>>32) || r.op&1 == 0 && uint32(c.Res) < r.blen {
		return nil
	}
	return r
}
