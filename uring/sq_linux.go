package uring

import (
	"sync/atomic"
	"unsafe"
)

// This file and cq_linux.go are the only places that touch the shared ring
// indices. Go's sync/atomic operations are sequentially consistent: each
// atomic store is at least a store-release and each atomic load at least a
// load-acquire, and a store followed by a load is a full barrier.

// GetSQE returns the next free SQE, zeroed, or nil when the SQ is full (call
// Submit, then retry) or the ring is closed. The SQE is handed to the kernel
// by the next Submit, SubmitAndWait or SubmitAndWaitTimeout. No allocation,
// no syscall.
func (r *Ring) GetSQE() *SQE {
	if r.sqeTail == r.sqLimit && !r.more() {
		return nil
	}
	sqe := &r.sqes[r.sqeTail&r.sqMask]
	r.sqeTail++
	*sqe = SQE{}
	return sqe
}

// more reads the kernel's SQ head again, once the SQ's tail has reached sqLimit (the position
// the head last read allows), moves sqLimit past it, and reports whether the SQ has a free
// SQE now (false after Close).
func (r *Ring) more() bool {
	if r.sqes == nil {
		return false
	}
	// Load-acquire of the kernel-owned head: the kernel (or the SQPOLL thread) has finished
	// reading every SQE before the head it published, so those slots may be overwritten.
	r.sqLimit = atomic.LoadUint32(r.sqHead) + uint32(len(r.sqes))
	return r.sqeTail != r.sqLimit
}

// PutSQE copies s into the next free SQE and returns that SQE, or returns nil when the SQ is
// full (call Submit, then retry) or the ring is closed: GetSQE for an SQE prepared beforehand
// (one operation submitted many times), written once where GetSQE zeroes the slot and the
// caller then fills it. The SQE is handed to the kernel as GetSQE's is. No allocation, no
// syscall.
func (r *Ring) PutSQE(s *SQE) *SQE {
	if r.sqeTail == r.sqLimit && !r.more() {
		return nil
	}
	// The mask keeps the slot inside the SQE array: not bounds-checked again.
	sqe := (*SQE)(unsafe.Add(unsafe.Pointer(unsafe.SliceData(r.sqes)), uintptr(r.sqeTail&r.sqMask)*unsafe.Sizeof(SQE{})))
	r.sqeTail++
	*sqe = *s
	return sqe
}

// flushSQ publishes the SQEs handed out by GetSQE since the last flush. It
// returns how many SQEs the kernel has not consumed yet (the to_submit
// argument of io_uring_enter) and how many of them this flush published (with
// SQPOLL, the count a submit call reports: an SQE published earlier and not
// yet picked up by the SQ thread is in toSubmit again, but was counted by the
// call that published it).
func (r *Ring) flushSQ() (toSubmit, published uint32) {
	tail := r.sqeTail
	if tail != r.sqFlushed {
		published = tail - r.sqFlushed
		r.sqFlushed = tail
		// Store-release of the SQ tail: every SQE field written since
		// GetSQE becomes visible to the kernel before the new tail does.
		atomic.StoreUint32(r.sqTail, tail)
	}
	// Load-acquire of the head (see GetSQE).
	return tail - atomic.LoadUint32(r.sqHead), published
}

// sqRingFlags reads the IORING_SQ_* flags word. Called after flushSQ, the
// atomic store of the tail followed by this atomic load is a full barrier,
// which is what reading IORING_SQ_NEED_WAKEUP after publishing needs (the
// SQPOLL thread sets NEED_WAKEUP, then re-checks the tail).
func (r *Ring) sqRingFlags() uint32 {
	return atomic.LoadUint32(r.sqFlags)
}

// SQThreadSleeping reports whether the ring's SQPOLL thread has gone to sleep
// (IORING_SQ_NEED_WAKEUP, 5.1), so that SQEs published now wait until someone
// enters the kernel with IORING_ENTER_SQ_WAKEUP (Submit does that when
// needed). io_uring_enter(2) and liburing's sq_ring_needs_enter require a full
// barrier between storing the SQ tail and reading the flag (the SQ thread sets
// NEED_WAKEUP and then re-checks the tail, so one side always sees the other):
// the tail is stored by an atomic store (flushSQ) and the flag read by an
// atomic load, and Go's atomics are sequentially consistent, so that store is
// not ordered after this load (amd64: XCHG; arm64: STLR then LDAR). It returns
// false for a ring without SQPOLL or after Close. No syscall, no allocation.
func (r *Ring) SQThreadSleeping() bool {
	if r.sqFlags == nil || r.setupFlags&SetupSQPoll == 0 {
		return false
	}
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

// timeoutPrepared is set by the first PrepTimeout in the process. Until then
// no opcode is read at submission: a process without TIMEOUT requests pays
// nothing per SQE for telling a TIMEOUT's end from a signal's.
var timeoutPrepared atomic.Bool

// noteTimeoutsToFlush notes each TIMEOUT request among the SQEs the next
// flushSQ publishes as in flight (r.timeouts), once PrepTimeout has been
// called (see timeoutPrepared).
func (r *Ring) noteTimeoutsToFlush() {
	if timeoutPrepared.Load() {
		r.noteTimeouts()
	}
}

// noteTimeouts is noteTimeoutsToFlush once PrepTimeout has been called.
func (r *Ring) noteTimeouts() {
	for i := r.sqFlushed; i != r.sqeTail; i++ {
		if sqe := &r.sqes[i&r.sqMask]; sqe.Opcode == OpTimeout {
			r.timeouts = append(r.timeouts, sqe.UserData)
		}
	}
}

// SQTail returns the SQ position of the next SQE GetSQE hands out: positions count the SQEs
// handed out since the ring's setup, wrapping at 2^32. No syscall.
func (r *Ring) SQTail() uint32 { return r.sqeTail }

// SQEAtPos returns the SQE at SQ position p, one that GetSQE handed out and no enter has
// submitted yet (a caller may still change it, or make it a NOP). No syscall.
func (r *Ring) SQEAtPos(p uint32) *SQE { return &r.sqes[p&r.sqMask] }
