//go:build linux

package ringev_test

// Tests of Loop.PostTo: a function posted from one loop to another runs there, a sleeping loop
// is woken through the ring (IORING_OP_MSG_RING) on uring and through its eventfd elsewhere or
// without MSG_RING, and the calls that cannot work say so.

import (
	"errors"
	"sync/atomic"
	"testing"
	"time"

	"github.com/ringev/ringev"
	"github.com/ringev/ringev/internal/testutil"
	"github.com/ringev/ringev/uring"
)

// runAway makes a loop on backend on a goroutine of its own and runs it until the test ends
// (a timer keeps it waiting); it returns the loop once it is running. Cleanup stops it and
// waits for its Run to return and its Close.
func runAway(t *testing.T, backend string) *ringev.Loop {
	t.Helper()
	got := make(chan *ringev.Loop)
	errc := make(chan error, 1)
	done := make(chan struct{})
	go func() {
		defer close(done)
		l, err := ringev.New(ringev.WithBackend(backend))
		if err != nil {
			errc <- err
			return
		}
		defer l.Close()
		l.AddTimer(time.Hour, func(*ringev.Timer) {})
		got <- l
		if err := l.Run(); err != nil {
			t.Errorf("Run of the other loop: %v", err)
		}
	}()
	var l *ringev.Loop
	select {
	case l = <-got:
	case err := <-errc:
		requireNew(t, backend, err)
	}
	t.Cleanup(func() {
		l.Stop()
		select {
		case <-done:
		case <-time.After(deadline):
			t.Errorf("the other loop did not stop within %v", deadline)
		}
	})
	return l
}

// postToSleeper posts a function from src (owned by the test) to dst once dst sleeps, and runs
// src until the function has run on dst.
func postToSleeper(t *testing.T, src, dst *ringev.Loop) {
	t.Helper()
	await(t, "the other loop sleeps", func() bool { return ringev.Sleeping(dst) })
	var ran atomic.Bool
	if err := src.PostTo(dst, func() {
		ran.Store(dst.Owned())
		src.Post(func() {}) // wakes src's wait, so that the test sees ran at once
	}); err != nil {
		t.Fatalf("PostTo: %v", err)
	}
	src.AddTimer(time.Hour, func(*ringev.Timer) {}) // something to wait for
	untilFor(t, src, deadline, "the posted function to run on the other loop", ran.Load)
}

// ringWakesOf reads ringev.RingWakes on l's goroutine (l runs elsewhere).
func ringWakesOf(t *testing.T, l *ringev.Loop) uint64 {
	t.Helper()
	got := make(chan uint64, 1)
	if err := l.Post(func() { got <- ringev.RingWakes(l) }); err != nil {
		t.Fatal(err)
	}
	return <-got
}

// TestPostToRunsOnTheOtherLoop: a function PostTo sends to a sleeping loop runs on that loop's
// goroutine, on every backend.
func TestPostToRunsOnTheOtherLoop(t *testing.T) {
	eachBackend(t, ringev.Backends(), func(t *testing.T, backend string) {
		src := newLoop(t, backend)
		dst := runAway(t, backend)
		postToSleeper(t, src, dst)
	})
}

// TestPostToWakesThroughTheRing: on uring, a sleeping loop is woken by the sender's MSG_RING
// (it receives the wake-up CQE), not by its eventfd.
func TestPostToWakesThroughTheRing(t *testing.T) {
	src := newLoop(t, "uring")
	dst := runAway(t, "uring")
	requireMsgRing(t)
	postToSleeper(t, src, dst)
	if wakes := ringWakesOf(t, dst); wakes == 0 {
		t.Fatal("the other loop received no MSG_RING wake-up")
	}
}

// TestPostToWithoutMsgRingUsesTheEventfd: on a uring kernel without MSG_RING (hidden from the
// probe) the sleeping loop is woken through its eventfd and receives no wake-up CQE.
func TestPostToWithoutMsgRingUsesTheEventfd(t *testing.T) {
	restore := ringev.SetProbeHides(uring.OpMsgRing)
	src := newLoop(t, "uring")
	restore()
	dst := runAway(t, "uring")
	postToSleeper(t, src, dst)
	if wakes := ringWakesOf(t, dst); wakes != 0 {
		t.Fatalf("the other loop received %d MSG_RING wake-ups; want none", wakes)
	}
}

// TestPostToKeepsOrderUnderLoad: many functions posted from one loop to another, which sleeps
// and wakes meanwhile, all run there, in the order posted.
func TestPostToKeepsOrderUnderLoad(t *testing.T) {
	eachBackend(t, ringev.Backends(), func(t *testing.T, backend string) {
		src := newLoop(t, backend)
		dst := runAway(t, backend)
		const n = 20000
		var next, bad atomic.Int64
		for i := range int64(n) {
			if err := src.PostTo(dst, func() {
				if next.Load() != i {
					bad.Add(1)
				}
				if next.Add(1) == n {
					src.Post(func() {}) // wakes src's wait
				}
			}); err != nil {
				t.Fatalf("PostTo %d: %v", i, err)
			}
			if i%64 == 0 {
				src.AddTimer(0, func(*ringev.Timer) {})
				once(t, src) // let src's ring submit what it queued
			}
		}
		src.AddTimer(time.Hour, func(*ringev.Timer) {})
		untilFor(t, src, deadline, "every posted function to run", func() bool { return next.Load() == n })
		if bad.Load() != 0 {
			t.Fatalf("%d functions ran out of order", bad.Load())
		}
	})
}

// TestPostToErrors: PostTo says why it cannot post: a nil function, a caller that does not own
// the sending loop, a closed receiver.
func TestPostToErrors(t *testing.T) {
	eachBackend(t, ringev.Backends(), func(t *testing.T, backend string) {
		src := newLoop(t, backend)
		dst := newLoop(t, backend)
		if err := src.PostTo(dst, nil); !errors.Is(err, ringev.ErrNilFunc) {
			t.Errorf("PostTo(nil func) = %v, want ErrNilFunc", err)
		}
		errc := make(chan error)
		go func() { errc <- src.PostTo(dst, func() {}) }()
		if err := <-errc; !errors.Is(err, ringev.ErrNotOwner) {
			t.Errorf("PostTo from another goroutine = %v, want ErrNotOwner", err)
		}
		type made struct {
			l   *ringev.Loop
			err error
		}
		other := make(chan made)
		go func() {
			l, err := ringev.New(ringev.WithBackend(backend))
			if err == nil {
				err = l.Close()
			}
			other <- made{l, err}
		}()
		m := <-other
		if m.err != nil {
			t.Fatalf("a second loop on %s, closed: %v", backend, m.err)
		}
		closed := m.l
		if err := src.PostTo(closed, func() {}); !errors.Is(err, ringev.ErrClosed) {
			t.Errorf("PostTo a closed loop = %v, want ErrClosed", err)
		}
	})
}

// TestPostToWakeSurvivesTheLookBeforeBlocking: a MSG_RING wake-up that reaches a uring loop
// just before it blocks, while it has a request in the kernel (so that it first looks without
// blocking), ends the wait in that look: the loop does not block with the wake-up swallowed.
func TestPostToWakeSurvivesTheLookBeforeBlocking(t *testing.T) {
	requireMsgRing(t)
	a, _ := testutil.Socketpair(t)
	l := newLoop(t, "uring")
	var r recorder
	if _, err := l.Recv(a, make([]byte, 16), 0, r.cb, 0); err != nil {
		t.Fatal(err)
	}
	blocked, err := ringev.LookTakesWake(l, 300*time.Millisecond)
	if err != nil {
		t.Fatal(err)
	}
	if blocked {
		t.Fatal("the wait blocked although a wake-up CQE was in the ring")
	}
}
