package ringev

import (
	"github.com/ringev/ringev/uring"
)

// PostTo's wake-up through the ring: the sending loop prepares an IORING_OP_MSG_RING SQE
// (Linux 5.18) that posts a CQE with user_data uringWakeTag in the sleeping loop's ring. That
// CQE only ends the receiver's wait (the posted function is already in its queue); the
// receiver's backend notes it (uringBackend.woke) so that a look made just before blocking
// cannot swallow it. The SQE's own CQE comes back to the sender as a request: on an error the
// sender writes the receiver's eventfd instead. The SQE is a request (SubmitSQE's kind), so
// the requests layer makes it (backend_uring_req_msg_linux.go, which sets ringWake).
//
// The receiver's ring fd is read under its postMu while it is open, but the SQE reaches the
// kernel at the sender's next enter: if the receiver has closed by then, the kernel answers
// EBADF (or EBADFD when the number names another file by then, and a spurious wake-up that a
// ringev loop ignores when it names another ring).

// uringWakeTag is the user_data of a MSG_RING wake-up CQE from another loop (PostTo); above the
// ride tags (which count up from uringEpollTag) and below reqTag.
const uringWakeTag uint64 = 1 << 62

// msgState is a uring loop's side of PostTo: whether its kernel has MSG_RING, and the loops it
// has woken through the ring, so that the SQE's completion (whose token indexes them) can
// fall back to the eventfd.
type msgState struct {
	ok   int8    // 0: not probed yet; 1: MSG_RING is there; -1: it is not
	dsts []*Loop // the loops this one woke through its ring (token: index)
	got  uint64  // wake-up CQEs this loop received (tests read it)
}

// msgRing reports whether the ring's kernel has IORING_OP_MSG_RING, probed once.
func (b *uringBackend) msgRing() bool {
	if b.msg.ok == 0 {
		b.msg.ok = -1
		if p, err := b.ring.Probe(); err == nil && p.OpSupported(uring.OpMsgRing) && (b.hides == nil || !b.hides(uring.OpMsgRing)) {
			b.msg.ok = 1
		}
	}
	return b.msg.ok > 0
}
