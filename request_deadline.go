//go:build unix

package ringev

// Request deadlines: Request.SetTimeout and the loop timer that enforces a deadline the
// backend does not hold itself.

import "time"

// dead reports whether r's deadline has passed.
func (r *reqRec) dead() bool { return r.deadline != 0 && r.rq.l.now() >= r.deadline }

// deadlinePassed is a request's deadline timer.
func (rq *requests) deadlinePassed(t *Timer) {
	r := t.Data.(*reqRec)
	switch r.state {
	case stQueued, stInflight:
		r.timedOut = true
		r.cancelReq = true
		r.slow()
		rq.drv.cancel(r)
	case stParked:
		r.timedOut = true
		r.grp().unpark(r)
		rq.finish(r, -int32(eTime), 0)
	}
}

// SetTimeout gives the request a deadline d from now (d > 0; 0 removes it): when it passes
// before the operation completes, the operation is cancelled and the callback gets an error
// wrapping unix.ETIME (for a multishot request: its last completion). On the uring backend a
// one-shot request whose deadline is set right after making it (before another request is
// made, and before the loop next enters the ring) carries it as an IORING_OP_LINK_TIMEOUT SQE
// (Linux 5.5) linked to its SQE; otherwise, and on the other backends, a loop timer cancels
// it. A later SetTimeout replaces
// the deadline, also one the kernel holds as a LINK_TIMEOUT: the loop moves that with
// IORING_TIMEOUT_UPDATE|IORING_LINK_TIMEOUT_UPDATE (Linux 5.15; a LINK_TIMEOUT cannot be
// removed, so 0 moves it out of reach), at its next io_uring_enter (a deadline that had
// passed by then has ended the request; on kernels before 5.15 the first deadline stays). A write or send that the
// loop finishes in several steps keeps one deadline for all. On a stale handle it does
// nothing. Errors: ErrNotOwner, ErrClosed.
func (h Request) SetTimeout(d time.Duration) error {
	if h.rec == nil {
		return nil
	}
	rq := h.rec.rq
	l := rq.l
	if !l.owned() {
		return ErrNotOwner
	}
	if l.closed {
		return ErrClosed
	}
	r := h.live()
	if r == nil {
		return nil
	}
	x := r.rareOf()
	if x.timer.index >= 0 {
		l.timers.remove(x.timer.index)
	}
	r.slow() // also for d <= 0: a LINK_TIMEOUT linked before stays, and its CQE comes
	x.timeout = d
	if d <= 0 {
		r.deadline = 0
	} else if r.deadline = l.deadlineIn(d); r.deadline == 0 {
		r.deadline = 1
	}
	if rq.drv.retime(r, d) || d <= 0 {
		return nil // the backend holds the deadline (uring: a LINK_TIMEOUT), or none is left
	}
	rq.armTimer(r)
	return nil
}

// armTimer puts r's deadline timer in the loop's timer heap (no allocation once the pool has
// spare rare parts: it lives in r's, which SetTimeout took).
func (rq *requests) armTimer(r *reqRec) {
	l := rq.l
	t := &r.rare.timer
	l.timerSeq++
	t.deadline, t.seq = r.deadline, l.timerSeq
	l.timers.push(t)
}
