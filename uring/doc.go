// Package uring is ringev's pure-Go (no cgo) binding to the Linux io_uring
// interface: the kernel ABI (io_uring.h structures and constants), ring setup
// and mmap, submission- and completion-queue access with the memory ordering
// the kernel expects, operation preparation, and submit/wait.
//
// It knows nothing about event loops; package ringev builds on it. It exists
// on Linux only: elsewhere the package is empty.
//
// # Using a ring
//
//	runtime.LockOSThread()          // see "Thread rule" below
//	r, err := uring.New()           // setup flags chosen by trial, best first
//	...
//	sqe := r.GetSQE()               // nil when the SQ is full: Submit, then retry
//	sqe.PrepPollAdd(fd, unix.POLLIN)
//	sqe.SetUserData(42)
//	n, err := r.SubmitAndWaitTimeout(1, time.Second)
//	for cqe := r.PeekCQE(); cqe != nil; cqe = r.PeekCQE() {
//		ud, res := cqe.UserData, cqe.Res // copy what you need first
//		r.CQESeen()                      // the kernel may now reuse the slot
//	}
//
// A Ring is not safe for concurrent use.
//
// # What is where
//
//   - abi_linux.go: io_uring.h structures and constants, each with its release.
//   - ring_linux.go, options.go: New (setup-flag trial, SQPOLL options), Close.
//   - sq_linux.go, cq_linux.go, pbuf_linux.go: the only shared-memory atomics.
//   - submit_linux.go: Submit, SubmitAndWait, SubmitAndWaitTimeout (one
//     EXT_ARG timespec, EINTR resumed with the remaining time, ETIME reported
//     even when SQEs were submitted, a completed TIMEOUT request ends the
//     wait as it ends the kernel's, a signal never does), SubmitAndWaitMin
//     (min_wait, 6.12),
//     WakeupSQThread.
//   - prep.go: one Prep method per opcode, in kernel order. Each resets the
//     whole SQE: SetUserData and SetFlags come after it.
//   - deputy_linux.go: Deputy, an SQPOLL ring whose owner submits a few SQEs
//     itself while the SQ thread sleeps (ringev's user-space version of the
//     IORING_ENTER_SQ_DEPUTY RFC; fileio's ModeDeputy).
//   - register_linux.go: every io_uring_register(2) call, through doRegister.
//   - probe_linux.go: Probe (IORING_REGISTER_PROBE) and ProbeKernel, behind
//     `ringev probe`.
//
// Errors wrap the errno (errors.Is(err, unix.ETIME), ...). A feature the
// kernel lacks gives an error naming it and the release that added it.
//
// # Buffer-lifetime rule
//
// An SQE carries plain addresses (SQE.Addr and friends) that the garbage
// collector does not see. So every buffer or structure whose address is put in
// an SQE must stay reachable by the caller until that request's CQE has been
// reaped. Cancellation does not change this: a cancelled request owns its
// memory until its own CQE (usually -ECANCELED) arrives. Such memory must also
// live off the goroutine stack, because a goroutine stack can move; the Prep
// methods that take a Go slice force it to the heap.
//
// # Thread rule
//
// By default New tries IORING_SETUP_SINGLE_ISSUER|IORING_SETUP_DEFER_TASKRUN
// first. With SINGLE_ISSUER (6.0) the kernel accepts submissions only from the
// thread that created the ring; others get -EEXIST. With DEFER_TASKRUN (6.1)
// completion work runs only when that thread enters the kernel with
// IORING_ENTER_GETEVENTS, as Submit, SubmitAndWait and SubmitAndWaitTimeout
// do. So the goroutine that owns a ring must call runtime.LockOSThread before
// New, and use the ring only from that goroutine, for the ring's whole life. Close may be called from any thread (of a SINGLE_ISSUER ring too: it
// only unmaps and closes).
//
// # Memory ordering
//
// Only sq_linux.go and cq_linux.go touch the shared ring indices. They use
// sync/atomic on *uint32 pointers into the mmapped rings; Go's atomics are
// sequentially consistent, which is at least the store-release/load-acquire
// pairing the kernel's io_uring.h documents, and a full barrier where SQPOLL
// needs one (reading IORING_SQ_NEED_WAKEUP after publishing the SQ tail).
package uring
