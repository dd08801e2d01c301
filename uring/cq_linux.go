package uring

import (
	"sync/atomic"
	"unsafe"

	"golang.org/x/sys/unix"
)

// See sq_linux.go for the ordering model. The kernel produces CQEs and
// publishes them by storing the CQ tail (store-release); we consume them and
// give the slots back by storing the CQ head.

// PeekCQE returns the oldest unconsumed CQE, or nil if the CQ is empty or the
// ring is closed. The CQE lives in the shared ring: copy what you need, then
// call CQESeen so the kernel may reuse the slot. No allocation, no syscall;
// completions still in the kernel's overflow list or waiting as deferred task
// work appear only after a Submit or a wait enters the kernel.
func (r *Ring) PeekCQE() *CQE {
	if r.cqes == nil {
		return nil
	}
	// We are the only writer of the head; the atomic load is for form.
	head := atomic.LoadUint32(r.cqHead)
	// Load-acquire of the CQ tail: the CQE contents the kernel wrote
	// before publishing this tail are visible to the reads that follow.
	if head == atomic.LoadUint32(r.cqTail) {
		return nil
	}
	return &r.cqes[head&r.cqMask]
}

// CQESeen marks the CQE returned by PeekCQE as consumed (advances the CQ head
// by one). Call it only after PeekCQE returned non-nil.
func (r *Ring) CQESeen() {
	r.CQAdvance(1)
}

// PopCQE returns a copy of the oldest unconsumed CQE and marks it consumed
// (liburing's io_uring_peek_cqe followed by io_uring_cqe_seen), or false when
// the CQ is empty or the ring is closed. No allocation, no syscall; see
// PeekCQE for completions still in the kernel.
func (r *Ring) PopCQE() (CQE, bool) {
	c := r.PeekCQE()
	if c == nil {
		return CQE{}, false
	}
	cqe := *c
	r.CQESeen()
	return cqe, true
}

// CQEAt returns the i-th unconsumed CQE (0 is the oldest, the one PeekCQE returns) without
// consuming it, for i < CQReady(): read a batch of CQEs in place, then give their slots back
// with one CQAdvance(n), as liburing's io_uring_for_each_cqe and io_uring_cq_advance do. The
// CQE lives in the shared ring until then. No syscall, no allocation.
func (r *Ring) CQEAt(i uint32) *CQE {
	// We are the only writer of the head; CQReady's load-acquire of the tail ordered the
	// CQE contents before this read.
	return &r.cqes[(atomic.LoadUint32(r.cqHead)+i)&r.cqMask]
}

// CQAdvance marks the n oldest CQEs as consumed (advances the CQ head by n).
// n must not exceed CQReady.
func (r *Ring) CQAdvance(n uint32) {
	if r.cqes == nil || n == 0 {
		return
	}
	if len(r.timeouts) != 0 {
		r.timeoutsDone(n)
	}
	// Store-release of the CQ head: our reads of the consumed CQEs complete
	// before the kernel can see the slots as free and overwrite them.
	atomic.StoreUint32(r.cqHead, atomic.LoadUint32(r.cqHead)+n)
}

// CQReady returns the number of CQEs ready to be consumed. No syscall.
func (r *Ring) CQReady() uint32 {
	if r.cqes == nil {
		return 0
	}
	// Load-acquire of the tail, as in PeekCQE.
	return atomic.LoadUint32(r.cqTail) - atomic.LoadUint32(r.cqHead)
}

// cqNeedsFlush reports whether completions wait in the kernel (CQ overflow
// list, or task work with TASKRUN_FLAG), so that the next enter must pass
// IORING_ENTER_GETEVENTS to bring them into the CQ ring.
func (r *Ring) cqNeedsFlush() bool {
	return r.sqRingFlags()&(SQCQOverflow|SQTaskrun) != 0
}

// CQOverflowPending reports whether completions wait in the kernel's overflow
// list (IORING_SQ_CQ_OVERFLOW, 5.8) because the CQ ring was full. They are not
// lost (IORING_FEAT_NODROP, 5.5): the next Submit or wait moves them into the
// CQ ring as space allows. No syscall.
func (r *Ring) CQOverflowPending() bool {
	if r.sqFlags == nil {
		return false
	}
	return atomic.LoadUint32(r.sqFlags)&SQCQOverflow != 0
}

// BufferID returns the provided-buffer ID carried by a CQE of a request with
// IOSQE_BUFFER_SELECT (IORING_CQE_F_BUFFER, 5.7), and whether there is one.
func (c CQE) BufferID() (uint16, bool) {
	return uint16(c.Flags >> CQEBufferShift), c.Flags&CQEFBuffer != 0
}

// More reports IORING_CQE_F_MORE (5.13): the multishot request that posted
// this CQE stays armed and will post more.
func (c CQE) More() bool { return c.Flags&CQEFMore != 0 }

// timeoutsDone forgets each TIMEOUT request in flight whose last CQE (no
// IORING_CQE_F_MORE) is among the n oldest CQEs, which CQAdvance consumes.
func (r *Ring) timeoutsDone(n uint32) {
	for i := range n {
		c := r.CQEAt(i)
		if c.Flags&CQEFMore != 0 {
			continue
		}
		for j, ud := range r.timeouts {
			if ud == c.UserData {
				last := len(r.timeouts) - 1
				r.timeouts[j] = r.timeouts[last]
				r.timeouts = r.timeouts[:last]
				break
			}
		}
	}
}

// timeoutEnded reports whether a CQE among the unconsumed ones from the
// from-th on ends a TIMEOUT request in flight the way io_should_wake counts
// it: fired (-ETIME) or satisfied by its count (0); a removed or cancelled
// one (-ECANCELED) does not end a wait.
func (r *Ring) timeoutEnded(from uint32) bool {
	if len(r.timeouts) == 0 {
		return false
	}
	for i, ready := from, r.CQReady(); i < ready; i++ {
		c := r.CQEAt(i)
		if c.Res != 0 && c.Res != -int32(unix.ETIME) {
			continue
		}
		for _, ud := range r.timeouts {
			if ud == c.UserData {
				return true
			}
		}
	}
	return false
}

// CQ positions: the CQ's head and tail count CQEs from the ring's setup, wrapping at 2^32. A
// consumer that keeps some CQEs in the ring for later (the loop holds a request's CQE there
// until its callback runs) reads by position, from the head to the tail, and gives slots back
// by moving the head; no CQE is copied out.

// CQHead returns the CQ's head: the position of the oldest CQE not given back. No syscall.
func (r *Ring) CQHead() uint32 {
	if r.cqes == nil {
		return 0
	}
	return atomic.LoadUint32(r.cqHead)
}

// CQTail returns the CQ's tail: the position after the newest CQE the kernel posted. Its
// load-acquire orders the CQEs' contents before the reads that follow. No syscall.
func (r *Ring) CQTail() uint32 {
	if r.cqes == nil {
		return 0
	}
	return atomic.LoadUint32(r.cqTail)
}

// CQEAtPos returns the CQE at position p, for CQHead() <= p < CQTail() (CQTail read before),
// in place in the shared ring, where it stays until the head moves past it. No syscall. The
// ring's mask keeps the slot inside the CQ, so it is not bounds-checked again (a loop that
// reads every CQE pays that check on each); on a closed ring it dereferences nil.
func (r *Ring) CQEAtPos(p uint32) *CQE {
	return (*CQE)(unsafe.Add(unsafe.Pointer(unsafe.SliceData(r.cqes)), uintptr(p&r.cqMask)*unsafe.Sizeof(CQE{})))
}

// CQSetHead gives back the slots of every CQE before position p (a store-release of the head:
// the reads of those CQEs complete before the kernel can reuse their slots), for
// CQHead() <= p <= CQTail(). No syscall.
func (r *Ring) CQSetHead(p uint32) {
	if r.cqes == nil {
		return
	}
	if len(r.timeouts) != 0 {
		r.timeoutsBefore(p)
	}
	atomic.StoreUint32(r.cqHead, p)
}

// timeoutsBefore is CQSetHead's part for a ring with TIMEOUT requests in flight: those whose
// CQE is before p are done (timeoutsDone). Out of line, so that CQSetHead is inlined.
//
//go:noinline
func (r *Ring) timeoutsBefore(p uint32) { r.timeoutsDone(p - atomic.LoadUint32(r.cqHead)) }
