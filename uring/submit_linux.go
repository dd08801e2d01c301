package uring

import (
	"fmt"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"
)

// enterError is an io_uring_enter(2) failure. It wraps the errno (errors.Is
// with unix.ETIME, unix.EINTR, ... works) and, being an integer below 256,
// converts to an error interface without allocating.
type enterError unix.Errno

func (e enterError) Error() string { return "uring: io_uring_enter: " + unix.Errno(e).Error() }
func (e enterError) Unwrap() error { return unix.Errno(e) }

var (
	// errTimeout is returned when fewer CQEs than asked for are ready at the
	// deadline; it wraps unix.ETIME.
	errTimeout error = enterError(unix.ETIME)
	// errClosed is returned by the submit calls after Close.
	errClosed = fmt.Errorf("uring: ring is closed: %w", unix.EBADF)
	// errNoExtArg is returned by SubmitAndWaitTimeout when the kernel lacks
	// IORING_FEAT_EXT_ARG.
	errNoExtArg = fmt.Errorf("uring: wait with timeout needs IORING_FEAT_EXT_ARG (5.11), missing: %w", unix.EOPNOTSUPP)
)

// enter calls io_uring_enter(2) (5.1) and returns its result and errno.
func (r *Ring) enter(toSubmit, minComplete, flags uint32, arg unsafe.Pointer, argSize uintptr) (int, unix.Errno) {
	n, _, errno := unix.Syscall6(unix.SYS_IO_URING_ENTER, uintptr(r.fd), uintptr(toSubmit),
		uintptr(minComplete), uintptr(flags), uintptr(arg), argSize)
	return int(n), errno
}

// wakeupFlag returns EnterSQWakeup when the ring has an SQPOLL thread that is
// asleep and there is something for it to submit (call after flushSQ).
func (r *Ring) wakeupFlag(toSubmit uint32) uint32 {
	if r.setupFlags&SetupSQPoll != 0 && toSubmit > 0 && r.sqRingFlags()&SQNeedWakeup != 0 {
		return EnterSQWakeup
	}
	return 0
}

// Submit hands the SQEs prepared since the last submit to the kernel and
// returns how many it consumed. It does not wait for completions. With
// DEFER_TASKRUN (and whenever the kernel holds completions back: CQ overflow,
// IORING_SQ_TASKRUN) it also passes IORING_ENTER_GETEVENTS with min_complete 0,
// so pending completion work runs and its CQEs become visible to PeekCQE. With
// SQPOLL it enters only to wake a sleeping SQ thread. EINTR is retried. Errors
// wrap the io_uring_enter errno (e.g. unix.EBUSY, unix.EAGAIN, unix.EEXIST
// when called from a thread that does not own a SINGLE_ISSUER ring), or
// unix.EBADF after Close. No allocation.
func (r *Ring) Submit() (int, error) {
	if !r.open {
		return 0, errClosed
	}
	sqpoll := r.setupFlags&SetupSQPoll != 0
	for {
		toSubmit := r.flushSQ()
		flags := r.wakeupFlag(toSubmit)
		if r.setupFlags&SetupDeferTaskrun != 0 || r.cqNeedsFlush() {
			flags |= EnterGetEvents
		}
		if flags == 0 && (sqpoll || toSubmit == 0) {
			// Nothing needs the kernel: an awake SQ thread picks the
			// SQEs up by itself.
			if sqpoll {
				return int(toSubmit), nil
			}
			return 0, nil
		}
		n, errno := r.enter(toSubmit, 0, flags, nil, 0)
		switch errno {
		case 0:
			return n, nil
		case unix.EINTR:
			continue
		default:
			return 0, enterError(errno)
		}
	}
}

// SubmitAndWait submits like Submit and then waits, without a timeout, until
// at least n CQEs are ready (n is capped at the CQ size, as the kernel does).
// It returns the number of SQEs submitted. EINTR, and a wait cut short after a
// successful submission, are retried. Errors wrap the io_uring_enter errno.
func (r *Ring) SubmitAndWait(n uint32) (int, error) {
	if !r.open {
		return 0, errClosed
	}
	want := min(n, r.cqEntries)
	submitted := 0
	for {
		toSubmit := r.flushSQ()
		ret, errno := r.enter(toSubmit, n, EnterGetEvents|r.wakeupFlag(toSubmit), nil, 0)
		switch errno {
		case 0:
			submitted += ret
			if r.CQReady() >= want {
				return submitted, nil
			}
			// The kernel returns the submitted count and drops a wait
			// error (EINTR) when it submitted something: wait again.
		case unix.EINTR:
		default:
			return submitted, enterError(errno)
		}
	}
}

// SubmitAndWaitTimeout submits pending SQEs and waits for at least n CQEs or
// until timeout has elapsed, with ONE timespec for the whole wait passed via
// IORING_ENTER_EXT_ARG (IORING_FEAT_EXT_ARG, 5.11): a wait interrupted by a
// signal (EINTR) is retried with the remaining time, never with the full
// timeout again.
//
// It returns the number of SQEs submitted. When fewer than n CQEs are ready at
// the deadline, the error wraps unix.ETIME, even if SQEs were submitted (the
// kernel then reports only the count and drops the timeout: liburing issue
// 684). timeout < 0 waits without a timeout (SubmitAndWait); timeout 0 only
// polls. n is capped at the CQ size. Without IORING_FEAT_EXT_ARG it fails with
// an error naming the feature and wrapping unix.EOPNOTSUPP. Other errors wrap
// the io_uring_enter errno. No allocation.
func (r *Ring) SubmitAndWaitTimeout(n uint32, timeout time.Duration) (int, error) {
	if timeout < 0 {
		return r.SubmitAndWait(n)
	}
	if !r.open {
		return 0, errClosed
	}
	if r.features&FeatExtArg == 0 {
		return 0, errNoExtArg
	}
	deadline := time.Now().Add(timeout)
	want := min(n, r.cqEntries)
	submitted := 0
	for {
		remaining := max(time.Until(deadline), 0)
		r.ts = unix.NsecToTimespec(remaining.Nanoseconds())
		toSubmit := r.flushSQ()
		flags := EnterGetEvents | EnterExtArg | r.wakeupFlag(toSubmit)
		ret, errno := r.enter(toSubmit, n, flags, unsafe.Pointer(&r.arg), unsafe.Sizeof(r.arg))
		switch errno {
		case 0:
			submitted += ret
			if r.CQReady() >= want {
				return submitted, nil
			}
			// Submitted > 0 hides the wait's result: decide by the clock.
			if !time.Now().Before(deadline) {
				return submitted, errTimeout
			}
		case unix.EINTR:
		case unix.ETIME:
			return submitted, errTimeout
		default:
			return submitted, enterError(errno)
		}
	}
}
