package ringev

// The uring driver's cancels and deadlines: IORING_OP_ASYNC_CANCEL of one request or of every
// request on an fd, and a deadline as a linked IORING_OP_LINK_TIMEOUT (moved with
// IORING_OP_TIMEOUT_REMOVE).

import (
	"time"

	"github.com/ringev/ringev/uring"
	"golang.org/x/sys/unix"
)

func (d *ringReqs) cancel(rec *reqRec) {
	r := ringOf(rec)
	switch r.state {
	case stQueued: // not in the kernel: it never will be (flush skips it)
		d.rq.opDone(rec, -int32(unix.ECANCELED), 0)
	case stInflight:
		if d.unsubmitted(r) { // prepared, not submitted: it never will be
			d.unprep(r)
			return
		}
		d.cmds = append(d.cmds, ringCmd{target: opUserData(r)})
	}
}

// linkNow links a LINK_TIMEOUT of after (> 0) to r, a one-shot request prepared but not
// submitted, whose SQE must be the SQ's last (the LINK_TIMEOUT must follow it directly). It
// reports whether it did; when it did not, the loop's timer enforces the deadline.
func (d *ringReqs) linkNow(r *ringRec, after time.Duration) bool {
	if !d.unsubmitted(r) || r.link || multishot(r.op) {
		return false
	}
	ring := d.b.ring
	at := ring.SQTail()
	t := ring.GetSQE()
	if t == nil {
		return false
	}
	// t must be the SQE right after r's in the SQ's order.
	if at != r.sqPos+1 {
		nop(t) // another SQE came after r's: the timer takes the deadline
		d.inflight++
		return false
	}
	ring.SQEAtPos(r.sqPos).Flags |= uring.SQEIOLink
	ts := &r.rareOf().drv.ts
	*ts = uring.NewTimespec(after)
	t.PrepLinkTimeout(ts, 0)
	t.UserData = reqUserData(r, reqKindLink)
	r.cqes, r.link = 2, true
	d.inflight++
	return true
}

// retime moves r's LINK_TIMEOUT, if it is in the kernel, to after from now (<= 0: out of
// reach, as a LINK_TIMEOUT cannot be removed): IORING_OP_TIMEOUT_REMOVE with
// IORING_TIMEOUT_UPDATE|IORING_LINK_TIMEOUT_UPDATE (Linux 5.15) at the next enter. The
// update's CQE is counted like a cancel's; its error (ENOENT: the link fired or was cancelled
// meanwhile; EINVAL before 5.15) leaves the request as the kernel has it. A one-shot request
// still queued gets its deadline as a LINK_TIMEOUT when flush prepares it.
func (d *ringReqs) retime(rec *reqRec, after time.Duration) bool {
	r := ringOf(rec)
	if r.state == stQueued && !multishot(r.op) {
		return true // flush links a LINK_TIMEOUT, if a deadline is left
	}
	if r.state != stInflight {
		return false
	}
	if !r.link {
		// Prepared by start and not submitted yet: the deadline is linked to it now, as
		// flush links it to a queued request.
		return after > 0 && d.linkNow(r, after)
	}
	if after <= 0 {
		after = 1 << 62 // ~146 years
	}
	if d.unsubmitted(r) { // (r.link: its LINK_TIMEOUT is prepared after it)
		r.rareOf().drv.ts = uring.NewTimespec(after) // the kernel reads it at submission
		return true
	}
	ts := &r.rareOf().drv.ts
	*ts = uring.NewTimespec(after)
	d.cmds = append(d.cmds, ringCmd{target: reqUserData(r, reqKindLink), ts: ts})
	return true
}

func (d *ringReqs) cancelFd(fd int32) {
	for _, q := range d.queue {
		if r := q.r; r.gen == q.gen && r.state == stQueued && r.fd == fd && !r.noFd {
			r.cancelReq = true
			r.slow()
			d.rq.opDone(&r.reqRec, -int32(unix.ECANCELED), 0)
		}
	}
	if d.rq.fds[fd].live() > 0 {
		for _, rec := range d.rq.recs {
			if r := ringOf(rec); r.state == stInflight && r.fd == fd && !r.noFd {
				r.cancelReq = true
				r.slow()
				if d.unsubmitted(r) {
					d.unprep(r) // it never reaches the kernel
				}
			}
		}
	}
	if d.rq.fds[fd].live() > 0 { // (a number closed meanwhile could be another file's by the flush)
		d.cmds = append(d.cmds, ringCmd{fd: fd, byFd: true})
	}
}
