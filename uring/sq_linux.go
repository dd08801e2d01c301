package uring

import "sync/atomic"

// This file and cq_linux.go are the only places that touch the shared ring
// indices. Go's sync/atomic operations are sequentially consistent: each
// atomic store is at least a store-release and each atomic load at least a
// load-acquire, and a store followed by a load is a full barrier.

// GetSQE returns the next free SQE, zeroed, or nil when the SQ is full (call
// Submit, then retry) or the ring is closed. The SQE is handed to the kernel
// by the next Submit, SubmitAndWait or SubmitAndWaitTimeout. No allocation,
// no syscall.
func (r *Ring) GetSQE() *SQE {
	if r.sqes == nil {
		return nil
	}
	// Load-acquire of the kernel-owned head: the kernel (or the SQPOLL
	// thread) has finished reading every SQE before the head it published,
	// so those slots may be overwritten.
	head := atomic.LoadUint32(r.sqHead)
	if r.sqeTail-head >= uint32(len(r.sqes)) {
		return nil
	}
	sqe := &r.sqes[r.sqeTail&r.sqMask]
	r.sqeTail++
	*sqe = SQE{}
	return sqe
}

// flushSQ publishes the SQEs handed out by GetSQE since the last flush and
// returns how many SQEs the kernel has not consumed yet (the to_submit
// argument of io_uring_enter).
func (r *Ring) flushSQ() uint32 {
	tail := r.sqeTail
	if tail != r.sqFlushed {
		r.sqFlushed = tail
		// Store-release of the SQ tail: every SQE field written since
		// GetSQE becomes visible to the kernel before the new tail does.
		atomic.StoreUint32(r.sqTail, tail)
	}
	// Load-acquire of the head (see GetSQE).
	return tail - atomic.LoadUint32(r.sqHead)
}

// sqRingFlags reads the IORING_SQ_* flags word. Called after flushSQ, the
// atomic store of the tail followed by this atomic load is a full barrier,
// which is what reading IORING_SQ_NEED_WAKEUP after publishing needs (the
// SQPOLL thread sets NEED_WAKEUP, then re-checks the tail).
func (r *Ring) sqRingFlags() uint32 {
	return atomic.LoadUint32(r.sqFlags)
}

// fullBarrier is a full memory barrier (smp_mb in the kernel's terms): an
// atomic read-modify-write, which is a locked instruction on amd64 and an
// acquire-release RMW on arm64, on a word private to the ring. No later load
// is performed before earlier stores are visible.
func (r *Ring) fullBarrier() {
	atomic.AddUint32(&r.fence, 1)
}

// SQThreadSleeping reports whether the ring's SQPOLL thread has gone to sleep
// (IORING_SQ_NEED_WAKEUP, 5.1), so that SQEs published now wait until someone
// enters the kernel with IORING_ENTER_SQ_WAKEUP (Submit does that when
// needed). The flag is read after a full barrier, as io_uring_enter(2) and
// liburing's sq_ring_needs_enter require: the SQ thread sets NEED_WAKEUP and
// then re-checks the tail, we store the tail and then check NEED_WAKEUP, and
// the barrier keeps one of the two sides from missing the other. It returns
// false for a ring without SQPOLL or after Close. No syscall, no allocation.
func (r *Ring) SQThreadSleeping() bool {
	if r.sqFlags == nil || r.setupFlags&SetupSQPoll == 0 {
		return false
	}
	r.fullBarrier()
	return atomic.LoadUint32(r.sqFlags)&SQNeedWakeup != 0
}

// SQReady returns the number of SQEs published to the kernel (or handed out
// by GetSQE) that it has not consumed yet. With SQPOLL this drops as the SQ
// thread picks them up. No syscall.
func (r *Ring) SQReady() uint32 {
	if r.sqes == nil {
		return 0
	}
	// Load-acquire of the head, as in GetSQE.
	return r.sqeTail - atomic.LoadUint32(r.sqHead)
}

// SQSpaceLeft returns how many more SQEs GetSQE can hand out before the SQ is
// full. No syscall.
func (r *Ring) SQSpaceLeft() uint32 {
	if r.sqes == nil {
		return 0
	}
	return uint32(len(r.sqes)) - r.SQReady()
}
