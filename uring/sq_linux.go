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
