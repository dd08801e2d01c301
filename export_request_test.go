//go:build linux

package ringev

import (
	"fmt"
	"unsafe"

	"github.com/ringev/ringev/uring"
	"golang.org/x/sys/unix"
)

// RequestRecords returns how many request records l has made, and how many of them are in its
// pool (free); 0, 0 before the first request.
func RequestRecords(l *Loop) (made, free int) {
	rq := l.req
	if rq == nil {
		return 0, 0
	}
	for i := rq.free; i != 0; i = rq.recs[i-1].nextFree() {
		free++
	}
	return len(rq.recs), free
}

// HeldCQEs returns how many one-shot requests' CQEs l's uring backend holds in its ring for
// their callbacks (0 on the other backends).
func HeldCQEs(l *Loop) int {
	if l.req == nil {
		return 0
	}
	return l.req.held
}

// RequestLinkFollows reports whether h's request is prepared in the SQ and not submitted, with
// IOSQE_IO_LINK set and an IORING_OP_LINK_TIMEOUT of its own in the SQE right after it.
func RequestLinkFollows(h Request) bool {
	r := h.live()
	if r == nil || !r.rq.ring() {
		return false
	}
	d := r.rq.drv.(*ringReqs)
	rr := ringOf(r)
	s := d.sqeOf(rr)
	if s == nil || s.Flags&uring.SQEIOLink == 0 {
		return false
	}
	t := d.b.ring.SQEAtPos(rr.sqPos + 1)
	return t.Opcode == uring.OpLinkTimeout && t.UserData == reqUserData(rr, reqKindLink)
}

// RequestPrepared reports whether h's request is prepared in the uring backend's SQ and not
// submitted yet (false on the other backends).
func RequestPrepared(h Request) bool {
	r := h.live()
	if r == nil || !r.rq.ring() {
		return false
	}
	return r.rq.drv.(*ringReqs).sqeOf(ringOf(r)) != nil
}

// RequestRecordSize returns the size in bytes of l's backend's request record (the core's
// record and the backend's fields), once l has made a request; 0 before.
func RequestRecordSize(l *Loop) int {
	if l.req == nil {
		return 0
	}
	if l.req.ring() {
		return int(unsafe.Sizeof(ringRec{}))
	}
	return int(unsafe.Sizeof(emulRec{}))
}

// RequestRecordsRing reports whether l's requests are the uring driver's (ringRec records).
func RequestRecordsRing(l *Loop) bool { return l.req != nil && l.req.ring() }

// RequestHoldsRare reports whether h's request, still live, holds a rare part (reqRec.rare).
func RequestHoldsRare(h Request) bool {
	r := h.live()
	return r != nil && r.rare != nil
}

// RareSpares returns how many rare parts l's request pool keeps spare.
func RareSpares(l *Loop) int {
	if l.req == nil {
		return 0
	}
	return len(l.req.rares)
}

// FdStateSize returns the size in bytes of the core's state per fd number (reqFd).
func FdStateSize() int { return int(unsafe.Sizeof(reqFd{})) }

// FdRareEntries returns how many fds have a rare part in l's request state (requests.fdRare).
func FdRareEntries(l *Loop) int {
	if l.req == nil {
		return 0
	}
	return len(l.req.fdRare)
}

// SameRecord reports whether two request handles are uses of one record.
func SameRecord(a, b Request) bool { return a.rec == b.rec }

// ForgeRecvMoreCQE posts in the ring of h's loop (uring), through a ring of its own
// (IORING_OP_MSG_RING with IORING_MSG_RING_FLAGS_PASS, Linux 6.3), the CQE a RecvMultishot's
// receive into group buffer bid of n bytes, more to come, would post for h's record at h's
// generation (user_data; IORING_CQE_F_MORE and F_BUFFER), then a wake-up CQE behind it (as
// PostTo's, counted by RingWakes): once RingWakes(l) has grown, the loop has read the forged
// CQE. It returns the MSG_RING's error (EINVAL from a kernel without FLAGS_PASS).
func ForgeRecvMoreCQE(h Request, n int32, bid uint16) error {
	b := h.rec.rq.l.be.(*uringBackend)
	r, err := uring.New(uring.WithEntries(2))
	if err != nil {
		return err
	}
	defer r.Close()
	ud := reqTag | reqKindMulti | uint64(h.gen)<<32 | uint64(h.rec.idx)
	flags := uring.CQEFMore | uring.CQEFBuffer | uint32(bid)<<uring.CQEBufferShift
	for _, m := range [2]struct {
		ud    uint64
		res   uint32
		flags uint32
	}{{ud, uint32(n), flags}, {uringWakeTag, 0, 0}} {
		r.GetSQE().PrepMsgRing(b.ring.Fd(), m.res, m.ud, uring.MsgRingFlagsPass, m.flags)
		if _, err := r.SubmitAndWait(1); err != nil {
			return err
		}
		if c, _ := r.PopCQE(); c.Res < 0 {
			return fmt.Errorf("MSG_RING: %w", unix.Errno(-c.Res))
		}
	}
	return nil
}

// BufferRefs returns the holds on buffer id of g (its completions' and Forward's lends).
func BufferRefs(g *BufferGroup, id int) int { return int(g.bufs[id].refs) }
