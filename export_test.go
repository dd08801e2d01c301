//go:build linux

// Export guts for testing: the package's external tests (package ringev_test) reach the loop's
// counters and its fault seams through these, and only through these.

package ringev

import (
	"fmt"
	"slices"
	"time"

	"github.com/ringev/ringev/uring"
	"golang.org/x/sys/unix"
)

// FramesLinked reports whether the nesting guard finds a request turn's frame by the frame
// pointers (framesLinked).
func FramesLinked() bool { return framesLinked }

// Counters of a loop.

// Waits returns how many times l's Once asked the backend (or the epoll set) what is ready.
func Waits(l *Loop) uint64 { return l.waits }

// Yields returns how many times l's blocking waits yielded to the Go scheduler first
// (yieldBeforeBlock).
func Yields(l *Loop) uint64 { return l.yields }

// BlockingEnters returns how many waiting io_uring_enter(2) calls l's uring backend made in its
// waits (0 on another backend).
func BlockingEnters(l *Loop) uint64 {
	if b, ok := l.be.(*uringBackend); ok {
		return b.blocking
	}
	return 0
}

// BatchingWaits returns how many blocking waits of l's uring backend used WithBatchWait's
// min_wait (0 on another backend).
func BatchingWaits(l *Loop) uint64 {
	if b, ok := l.be.(*uringBackend); ok {
		return b.batched
	}
	return 0
}

// TimersPending returns how many timers l holds (the loop's own, a request's deadline
// timer included).
func TimersPending(l *Loop) int { return len(l.timers) }

// State of a loop, a request or the process.

// WakeFd returns the eventfd that Post and Stop write to wake l's blocking wait.
func WakeFd(l *Loop) int { return l.wakeFd }

// OwnerStackKnown reports whether l checks its owner by the owner's stack bounds (see owned).
func OwnerStackKnown(l *Loop) bool { return l.stack != &anyStack }

// ExactSignalFd returns the process's exact-signal eventfd, or -1 before a WithExactSignals
// loop has made it.
func ExactSignalFd() int { return sigexactFd }

// IOLinked reports whether x's pending submission has a LINK_TIMEOUT linked to it (uring).
func IOLinked(x *IO) bool { return RequestLinked(x.handle()) }

// RequestLinked reports whether the request h names carries its deadline as an
// IORING_OP_LINK_TIMEOUT (uring), not as a loop timer.
func RequestLinked(h Request) bool {
	r := h.live()
	return r != nil && r.rq.ring() && ringOf(r).link
}

// RequestPollFirst reports whether h's request was prepared in the SQ with
// IORING_RECVSEND_POLL_FIRST; valid right after the call that made it, while its SQE is not
// submitted (false for a request not prepared at the call).
func RequestPollFirst(h Request) bool {
	r := h.rec
	if r == nil || r.gen != h.gen || !r.rq.ring() {
		return false
	}
	at := r.rq.drv.(*ringReqs).sqeOf(ringOf(r))
	return at != nil && at.Ioprio&uring.RecvsendPollFirst != 0
}

// RingWakes returns how many MSG_RING wake-ups of other loops' PostTo l's uring backend has
// received (0 on the other backends). Call it on l's goroutine, or after l's Run returned.
func RingWakes(l *Loop) uint64 {
	if b, ok := l.be.(*uringBackend); ok {
		return b.msg.got
	}
	return 0
}

// Sleeping reports whether l has announced a blocking wait (safe from any goroutine).
func Sleeping(l *Loop) bool { return l.sleeping.Load() }

// Hooks: each changes what loops do from then on, and returns a function that restores it.

// SetUringFallback makes uring backends created from now on use the fallback for kernels
// without IORING_OP_EPOLL_WAIT (POLL_ADD on the epoll fd, then epoll_wait).
func SetUringFallback(on bool) (restore func()) {
	old := uringForceFallback
	uringForceFallback = on
	return func() { uringForceFallback = old }
}

// SetRegisterEveryFd makes every loop register the fd of each request in the ring's file table
// the first time it sees the number (as RegisterFile does).
func SetRegisterEveryFd(on bool) (restore func()) {
	old := registerEveryFd
	registerEveryFd = on
	return func() { registerEveryFd = old }
}

// SetFileTableFault makes the uring backend's first RegisterFile of a loop fail as a kernel
// without sparse file tables (before 5.19) does: io_uring_register(IORING_REGISTER_FILES2)
// returning err.
func SetFileTableFault(err error) (restore func()) {
	old := registerFilesSparse
	registerFilesSparse = func(*uring.Ring, uint32) error { return err }
	return func() { registerFilesSparse = old }
}

// SetFileReleaseLate makes the uring backend take the kernel for one that releases the file
// of an emptied registered-file slot only a second later (before Linux 6.4).
func SetFileReleaseLate() (restore func()) {
	old := fileReleaseAtOnce
	fileReleaseAtOnce = func() bool { return false }
	return func() { fileReleaseAtOnce = old }
}

// SetProbeHides makes every uring loop made afterwards take the given opcodes as missing from
// the kernel's probe (a kernel without the features they witness).
func SetProbeHides(codes ...uint8) (restore func()) {
	old := probeHides
	probeHides = func(c uint8) bool { return slices.Contains(codes, c) }
	return func() { probeHides = old }
}

// SetFeatureHides makes WithBatchWait and CheckBatchWait take the given IORING_FEAT_* bits
// (uring.Feat*) as missing from the kernel.
func SetFeatureHides(mask uint32) (restore func()) {
	old := featureHides
	featureHides = mask
	return func() { featureHides = old }
}

// PickVisits returns how many entries of l's fd dispatch order its picks have looked at (or
// sorted), and how many fd handlers l has run.
func PickVisits(l *Loop) (visits, runs uint64) { return l.skipped + l.dispatch, l.dispatch }

// Races played on a loop.

// LookTakesWake plays the race PostTo's wake-up through the ring must survive: l (a uring loop
// with a request in the kernel, made by the caller) is about to block when the wake-up CQE of
// another loop's MSG_RING is already in its ring, so that the look before blocking reaps it.
// It submits l's requests, has a ring of its own send the wake-up, then lets l's backend wait up
// to d with the look due, and reports whether that wait blocked (it must not).
func LookTakesWake(l *Loop, d time.Duration) (blocked bool, err error) {
	b := l.be.(*uringBackend)
	if _, err := b.wait(0, nil); err != nil {
		return false, err
	}
	r, err := uring.New(uring.WithEntries(2))
	if err != nil {
		return false, err
	}
	defer r.Close()
	s := r.GetSQE()
	s.PrepMsgRing(b.ring.Fd(), 0, uringWakeTag, 0, 0)
	if _, err := r.SubmitAndWait(1); err != nil {
		return false, err
	}
	if c, _ := r.PopCQE(); c.Res < 0 {
		return false, fmt.Errorf("MSG_RING: %w", unix.Errno(-c.Res))
	}
	b.lookSkip = 0
	before := b.blocking
	_, err = b.wait(int64(d), nil)
	return b.blocking != before, err
}

// ForgeFixedBuffer makes a FixedBuffer of l over b with index, registered or not: a test's
// way to give the kernel memory that is not the registered buffer's.
func ForgeFixedBuffer(l *Loop, b []byte, index int) FixedBuffer {
	return FixedBuffer{l: l, b: b, index: uint16(index)}
}
