package ringev

// The uring driver's part of Loop.Close: every request cancelled and its CQE awaited, so that
// no buffer is written after the loop closes.

import (
	"time"

	"github.com/ringev/ringev/uring"
)

// shutdown cancels every request in the kernel (and makes those prepared but not submitted
// NOPs) and waits (at most a second) for their CQEs,
// so that no buffer of theirs is written after the loop closes; what is still in flight then
// keeps its records (and buffers) reachable for the life of the process. Then it drops the
// registered-file table, if one was made (RegisterFile).
func (d *ringReqs) shutdown() {
	ring := d.b.ring
	if ring != nil {
		// The CQEs held for callbacks get none: a connection an Accept accepted is closed.
		for p := d.next; p != d.seen; p++ {
			c := ring.CQEAtPos(p)
			if ud := c.UserData; ud&(reqTag|reqKindMask) == reqTag|reqKindOp && int(uint32(ud)) < len(d.rq.recs) {
				if r := d.rq.recs[uint32(ud)]; r.gen == uint32(ud>>32)&genMask && r.state == stInflight {
					closeAccepted(r.op, c.Res)
				}
			}
		}
		d.rq.held = 0
		d.read(ring, d.seen)
	}
	// A request prepared in the SQ and not submitted never reaches the kernel, as one queued
	// never does: its SQEs become NOPs (counted in inflight as before), else the enter below
	// would submit them ahead of the cancel, and a Read would take bytes no callback gets.
	for _, rec := range d.rq.recs {
		if r := ringOf(rec); d.unsubmitted(r) {
			d.nopPrepared(r)
		}
	}
	d.dead = true
	d.queue, d.cmds = nil, nil
	if d.inflight > 0 && ring != nil {
		d.space = 0 // not known outside a flush
		if s, err := d.sqe(1); err == nil {
			s.PrepCancel(0, uring.AsyncCancelAny|uring.AsyncCancelAll)
			s.UserData = reqTag | reqKindCmd
			d.inflight++
			end := time.Now().Add(time.Second)
			for d.inflight > 0 && time.Now().Before(end) {
				d.b.entering().SubmitAndWaitTimeout(1, time.Until(end))
				n := ring.CQReady()
				for i := uint32(0); i < n; i++ {
					if c := ring.CQEAt(i); c.UserData&reqTag != 0 {
						d.cqe(c)
					}
				}
				ring.CQAdvance(n)
			}
		}
	}
	if d.inflight > 0 {
		abandoned = append(abandoned, d.rq.recs)
	}
	for _, g := range d.rq.groups {
		d.closeGroup(g)
	}
	if ring != nil {
		d.emptyFileTable()
	}
}

// abandoned keeps the records of requests still in the kernel when their loop closed (see
// ringReqs.shutdown) reachable, with their buffers.
var abandoned [][]*reqRec
