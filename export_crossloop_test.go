//go:build linux

package ringev

import (
	"fmt"
	"time"

	"github.com/ringev/ringev/uring"
	"golang.org/x/sys/unix"
)

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
