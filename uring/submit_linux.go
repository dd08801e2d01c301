package uring

import (
	"fmt"
	"sync/atomic"
	"time"
	"unsafe"

	"github.com/ringev/ringev/internal/rawsys"
	"golang.org/x/sys/unix"
)

// enterError is an io_uring_enter(2) failure. It wraps the errno (errors.Is
// with unix.ETIME, unix.EINTR, ... works) and, being an integer below 256,
// converts to an error interface without allocating.
type enterError unix.Errno

func (e enterError) Error() string {
	errno := unix.Errno(e)
	switch errno {
	case unix.EEXIST:
		return "uring: io_uring_enter from a thread that does not own this SINGLE_ISSUER/DEFER_TASKRUN ring " +
			"(the owner is the thread that called New; lock it with runtime.LockOSThread): " + errno.Error()
	case unix.EOWNERDEAD:
		return "uring: io_uring_enter: the ring's SQPOLL thread has died: " + errno.Error()
	case unix.EBUSY:
		return "uring: io_uring_enter: CQ ring full and completions overflowing; reap completions, then retry: " + errno.Error()
	case unix.EBADR:
		return "uring: io_uring_enter: the kernel dropped completions (overflow allocation failed): " + errno.Error()
	case unix.ETIME:
		return "uring: wait timed out: " + errno.Error()
	}
	return "uring: io_uring_enter: " + errno.Error()
}

func (e enterError) Unwrap() error { return unix.Errno(e) }

var (
	// errTimeout is returned when fewer CQEs than asked for are ready at the
	// deadline; it wraps unix.ETIME.
	errTimeout error = enterError(unix.ETIME)
	// errClosed is returned by the submit calls after Close.
	errClosed = fmt.Errorf("uring: ring is closed: %w", unix.EBADF)
	// errNoExtArg is returned by the timed waits when the kernel lacks
	// IORING_FEAT_EXT_ARG.
	errNoExtArg = fmt.Errorf("uring: wait with timeout needs IORING_FEAT_EXT_ARG (5.11), missing: %w", unix.EOPNOTSUPP)
	// errNoMinTimeout is returned by SubmitAndWaitMin when the kernel lacks
	// IORING_FEAT_MIN_TIMEOUT.
	errNoMinTimeout = fmt.Errorf("uring: min_wait needs IORING_FEAT_MIN_TIMEOUT (6.12), missing: %w", unix.EOPNOTSUPP)
)

// enter calls io_uring_enter(2) (5.1) on the ring (by its registered index
// after RegisterRingFd) and returns its result and errno. A call that does not
// wait (minComplete 0) cannot block for long (io_uring issues requests
// non-blocking and punts what would block to its workers), so it goes through
// rawsys.Syscall6: no runtime syscall bookkeeping, in one assembly frame, which
// together cost about a quarter of a syscall on the machines we measured. A
// waiting call goes through unix.Syscall6, so the runtime can run other
// goroutines meanwhile.
func (r *Ring) enter(toSubmit, minComplete, flags uint32, arg unsafe.Pointer, argSize uintptr) (int, unix.Errno) {
	n, errno := r.enterFd1(r.enterFd, toSubmit, minComplete, flags|r.enterFlags, arg, argSize)
	if (errno == unix.EBADF || errno == unix.EINVAL) && r.enterFlags != 0 {
		// The registered index is only valid on the thread that
		// registered it: from any other thread use the plain fd (the
		// kernel says EBADF, or EINVAL on a thread that never used
		// io_uring).
		n, errno = r.enterFd1(r.fd, toSubmit, minComplete, flags, arg, argSize)
	}
	return n, errno
}

// enterFd1 is one io_uring_enter(2) on fd (a ring fd, or a registered index
// with IORING_ENTER_REGISTERED_RING in flags).
func (r *Ring) enterFd1(fd int, toSubmit, minComplete, flags uint32, arg unsafe.Pointer, argSize uintptr) (int, unix.Errno) {
	if minComplete == 0 {
		n, errno := rawsys.Syscall6(unix.SYS_IO_URING_ENTER, uintptr(fd), uintptr(toSubmit), 0, uintptr(flags), uintptr(arg), argSize)
		return int(n), errno
	}
	n, _, errno := unix.Syscall6(unix.SYS_IO_URING_ENTER, uintptr(fd), uintptr(toSubmit), uintptr(minComplete), uintptr(flags), uintptr(arg), argSize)
	return int(n), errno
}

// wakeupFlag returns EnterSQWakeup when the ring has an SQPOLL thread that is
// asleep and there is something for it to submit (call after flushSQ, whose
// atomic tail store followed by SQThreadSleeping's atomic load is the full
// barrier the wake-up check needs).
func (r *Ring) wakeupFlag(toSubmit uint32) uint32 {
	if toSubmit > 0 && r.setupFlags&SetupSQPoll != 0 && r.SQThreadSleeping() {
		r.sqWakeups++
		return EnterSQWakeup
	}
	return 0
}

// Submit hands the SQEs prepared since the last submit to the kernel and
// returns how many it consumed. With SQPOLL it returns how many SQEs this
// call handed to the SQ thread (published in the SQ), each SQE counted by
// exactly one call, also when the call then fails: the kernel's own answer
// would count again SQEs that an earlier call published and the thread has
// not picked up yet. It does not wait for completions. With DEFER_TASKRUN (and whenever
// the kernel holds completions back: CQ overflow, IORING_SQ_TASKRUN) it also
// passes IORING_ENTER_GETEVENTS with min_complete 0, so pending completion
// work runs and overflowed CQEs move into the CQ ring. With SQPOLL it enters
// the kernel only to wake a sleeping SQ thread (IORING_ENTER_SQ_WAKEUP) or to
// flush completions. EINTR is retried; EBUSY (an old kernel refusing to
// submit while completions overflow) is answered by flushing the overflow
// with GETEVENTS and retrying once.
//
// Errors wrap the io_uring_enter errno: unix.EEXIST when called from a thread
// that does not own a SINGLE_ISSUER ring, unix.EOWNERDEAD when the SQPOLL
// thread died, unix.EBUSY when the CQ is full and must be reaped first,
// unix.EAGAIN, or unix.EBADF after Close. No allocation.
func (r *Ring) Submit() (int, error) {
	if r.quick && !timeoutPrepared.Load() {
		// A DEFER_TASKRUN ring's usual submit, in this frame: publish the SQ and enter once
		// with GETEVENTS, through rawsys (it does not wait, see enter). Any error goes the
		// general way below, which enters again (EINTR, EBUSY, a registered index refused).
		tail := r.sqeTail
		if tail != r.sqFlushed {
			r.sqFlushed = tail
			atomic.StoreUint32(r.sqTail, tail) // store-release, as flushSQ
		}
		toSubmit := tail - atomic.LoadUint32(r.sqHead)
		n, errno := rawsys.Syscall6(unix.SYS_IO_URING_ENTER, uintptr(r.enterFd), uintptr(toSubmit), 0,
			uintptr(EnterGetEvents|r.enterFlags), 0, 0)
		if errno == 0 {
			return int(n), nil
		}
	}
	return r.submit()
}

// submit is Submit's general way: SQPOLL, a ring without DEFER_TASKRUN, TIMEOUT requests to
// note, an error to answer.
func (r *Ring) submit() (int, error) {
	if !r.open {
		return 0, errClosed
	}
	sqpoll := r.setupFlags&SetupSQPoll != 0
	flushed := false
	submitted := 0 // with SQPOLL: the SQEs this call published
	for {
		r.noteTimeoutsToFlush()
		toSubmit, published := r.flushSQ()
		if sqpoll {
			submitted += int(published)
		}
		flags := r.wakeupFlag(toSubmit)
		if r.setupFlags&SetupDeferTaskrun != 0 || r.cqNeedsFlush() {
			flags |= EnterGetEvents
		}
		if flags == 0 && (sqpoll || toSubmit == 0) {
			// Nothing needs the kernel: an awake SQ thread picks the
			// SQEs up by itself.
			return submitted, nil
		}
		n, errno := r.enter(toSubmit, 0, flags, nil, 0)
		switch errno {
		case 0:
			if sqpoll {
				// The kernel answers to_submit, which counts SQEs
				// published by earlier calls that the SQ thread has
				// not picked up yet.
				return submitted, nil
			}
			return n, nil
		case unix.EINTR:
			continue
		case unix.EBUSY:
			if !flushed && toSubmit > 0 {
				flushed = true
				r.enter(0, 0, EnterGetEvents, nil, 0)
				continue
			}
		}
		return submitted, enterError(errno)
	}
}

// SubmitAndWait submits like Submit, then waits without a timeout until at
// least n CQEs are ready (n is capped at the CQ size, as the kernel does).
// It ends early, with fewer CQEs and no error, only when a TIMEOUT request
// (IORING_OP_TIMEOUT, io_uring_enter(2)) that the ring has in flight fires or
// meets its count, as the kernel's own wait does. A signal never ends it:
// the kernel reports a signal as success once the CQ holds a CQE, so the
// binding tells the two apart by the TIMEOUT requests it published. It knows
// them by opcode once PrepTimeout has been called in the process. Give a
// TIMEOUT request a user_data that no other request in flight has.
//
// It returns the number of SQEs submitted, each counted once (with SQPOLL:
// the SQEs this call published, as Submit counts them). CQReady and PeekCQE
// show the completions. Errors wrap the io_uring_enter errno (see Submit;
// unix.EBADR when the kernel had to drop completions). No allocation, except
// when more TIMEOUT requests are in flight than ever before.
func (r *Ring) SubmitAndWait(n uint32) (int, error) {
	return r.wait(n, -1, 0)
}

// SubmitAndWaitTimeout is SubmitAndWait with a deadline: it waits until at
// least n CQEs are ready, a TIMEOUT request in flight ends the wait, or
// timeout has elapsed. The whole wait uses one timespec, passed with
// IORING_ENTER_EXT_ARG (IORING_FEAT_EXT_ARG, 5.11). A signal never ends the
// wait and never restarts the timeout: the wait resumes with the time left,
// so it never lasts twice the timeout (the bug liburing fixed in 2.3).
//
// It returns the number of SQEs submitted. When fewer than n CQEs are ready
// at the deadline the error wraps unix.ETIME, even if the call submitted SQEs
// (the kernel then returns only the submitted count: liburing issue 684); the
// count is valid with the error. timeout < 0 waits without a deadline;
// timeout 0 only polls. Without IORING_FEAT_EXT_ARG it fails with an error
// naming the feature and wrapping unix.EOPNOTSUPP. Other errors wrap the
// io_uring_enter errno (see Submit). No allocation (see SubmitAndWait).
func (r *Ring) SubmitAndWaitTimeout(n uint32, timeout time.Duration) (int, error) {
	return r.wait(n, timeout, 0)
}

// SubmitAndWaitMin is SubmitAndWaitTimeout with a minimum wait
// (io_uring_getevents_arg.min_wait_usec, IORING_FEAT_MIN_TIMEOUT, 6.12). The
// wait ends when n CQEs are ready, or once minWait has passed with at least
// one CQE ready, or at the timeout. At the timeout the error wraps unix.ETIME
// when no CQE is ready, or fewer than n before minWait. When minWait is longer
// than timeout, the wait lasts minWait, as the kernel's wait and liburing's
// io_uring_submit_and_wait_min_timeout do. A TIMEOUT request in flight ends
// it early, within minWait too; a signal never does. minWait is rounded down
// to microseconds, the kernel's unit; timeout < 0 means no overall timeout.
// Without the feature it fails with an error naming IORING_FEAT_MIN_TIMEOUT
// and wrapping unix.EOPNOTSUPP. No allocation (see SubmitAndWait).
func (r *Ring) SubmitAndWaitMin(n uint32, timeout, minWait time.Duration) (int, error) {
	if r.features&FeatMinTimeout == 0 && r.open {
		return 0, errNoMinTimeout
	}
	return r.wait(n, timeout, max(minWait, 0))
}

// wait is the one waiting loop. timeout < 0: none. minWait > 0: min_wait.
func (r *Ring) wait(n uint32, timeout, minWait time.Duration) (int, error) {
	if !r.open {
		return 0, errClosed
	}
	extArg := timeout >= 0 || minWait > 0
	if extArg && r.features&FeatExtArg == 0 {
		return 0, errNoExtArg
	}
	want := min(n, r.cqEntries)
	var start, deadline, minDeadline time.Time
	if extArg {
		start = time.Now()
		deadline = start.Add(timeout)
		minDeadline = start.Add(minWait)
	}
	sqpoll := r.setupFlags&SetupSQPoll != 0
	submitted := 0 // SQEs consumed by the kernel; with SQPOLL, published by this call
	minComplete := n
	readyAtStart := r.CQReady()
	for {
		var arg unsafe.Pointer
		var argSize uintptr
		flags := EnterGetEvents
		if extArg {
			now := time.Now()
			r.arg.MinWaitUsec = 0
			if minWait > 0 {
				if left := minDeadline.Sub(now); left >= time.Microsecond {
					r.arg.MinWaitUsec = uint32(min(left/time.Microsecond, 1<<32-1))
				} else {
					// min_wait is over, or less than the kernel's unit is left (0 µs
					// would mean none, and the wait would last for all n CQEs):
					// any one CQE ends the wait.
					minComplete = 1
				}
			}
			if timeout >= 0 {
				remaining := max(deadline.Sub(now), 0)
				r.ts = NewTimespec(remaining)
				r.arg.Ts = uint64(uintptr(unsafe.Pointer(&r.ts)))
			} else {
				r.arg.Ts = 0
			}
			arg, argSize = unsafe.Pointer(&r.arg), unsafe.Sizeof(r.arg)
			flags |= EnterExtArg
		}
		r.noteTimeoutsToFlush()
		toSubmit, published := r.flushSQ()
		if sqpoll {
			// The SQ thread takes what is published; the kernel's
			// answer (to_submit) would count again an SQE that an
			// earlier, interrupted enter of this call published and
			// the thread has not picked up yet.
			submitted += int(published)
		}
		flags |= r.wakeupFlag(toSubmit)
		ret, errno := r.enter(toSubmit, minComplete, flags, arg, argSize)
		ready := r.CQReady()
		done := ready >= want || (minWait > 0 && ready > 0 && !time.Now().Before(minDeadline))
		switch errno {
		case 0:
			if !sqpoll {
				submitted += ret
			}
			if done {
				return submitted, nil
			}
			// A submission hides the wait's result (the kernel returns
			// the count): decide by the clock.
			if timeout >= 0 && !time.Now().Before(deadline) {
				return submitted, errTimeout
			}
			// The kernel ended its wait early: for a TIMEOUT request,
			// or for a signal (reported as success when the CQ is not
			// empty, and hidden behind a submitted count).
			if r.timeoutEnded(readyAtStart) {
				return submitted, nil
			}
			r.eintrs++
		case unix.EINTR:
			// Retried with the remaining time.
			r.eintrs++
		case unix.ETIME:
			if done {
				return submitted, nil
			}
			if timeout >= 0 && !time.Now().Before(deadline) {
				return submitted, errTimeout
			}
			// min_wait expired with nothing ready: keep waiting.
		default:
			return submitted, enterError(errno)
		}
	}
}

// WakeupSQThread wakes the ring's SQPOLL thread with IORING_ENTER_SQ_WAKEUP
// (5.1) if it sleeps, and does nothing otherwise (and for rings without
// SQPOLL). Submit already does this when it has SQEs to hand over; this is for
// a caller that published SQEs another way or wants the thread awake ahead of
// a burst. Errors wrap the io_uring_enter errno (unix.EOWNERDEAD when the
// thread died). No allocation.
func (r *Ring) WakeupSQThread() error {
	if !r.open {
		return errClosed
	}
	if !r.SQThreadSleeping() {
		return nil
	}
	r.sqWakeups++
	for {
		_, errno := r.enter(0, 0, EnterSQWakeup, nil, 0)
		switch errno {
		case 0:
			return nil
		case unix.EINTR:
			continue
		}
		return enterError(errno)
	}
}
