//go:build linux

package ringev_test

// Tests of Request.Cancel: one last callback, with ECANCELED or the result, whenever the cancel
// comes.

import (
	"errors"
	"testing"
	"time"

	"github.com/ringev/ringev"
	"github.com/ringev/ringev/internal/testutil"
	"golang.org/x/sys/unix"
)

// TestRequestCancelRacingCompletionRunsCallbackOnce: a Cancel (made twice) while the read can
// complete (data in the pipe before the Read is made, or written after it reached the kernel)
// gets exactly one callback, with the result or ECANCELED, and the handle is not Pending after
// it; 300 rounds.
func TestRequestCancelRacingCompletionRunsCallbackOnce(t *testing.T) {
	eachBackend(t, ringev.Backends(), func(t *testing.T, backend string) {
		r, w := testutil.Pipe(t)
		l := newLoop(t, backend)
		for i := range 300 {
			if i%2 == 0 {
				if _, err := unix.Write(w, []byte("x")); err != nil {
					t.Fatal(err)
				}
			}
			runs := 0
			buf := make([]byte, 1)
			h, err := l.Read(r, buf, -1, func(c *ringev.Completion) {
				runs++
				if c.Err != nil && !errors.Is(c.Err, unix.ECANCELED) {
					t.Errorf("round %d: err %v, want nil or ECANCELED", i, c.Err)
				}
			}, 0)
			if err != nil {
				t.Fatal(err)
			}
			if i%3 == 1 {
				untilWaited(t, l) // in the kernel (uring) or waiting (emulation)
			}
			if i%2 == 1 {
				if _, err := unix.Write(w, []byte("x")); err != nil {
					t.Fatal(err)
				}
			}
			if err := h.Cancel(); err != nil {
				t.Fatal(err)
			}
			h.Cancel() // twice: no second callback
			untilFor(t, l, deadline, "the cancelled Read's callback", func() bool { return runs > 0 })
			if h.Pending() {
				t.Fatalf("round %d: Pending after the last callback", i)
			}
			// drain what the cancelled read left
			var tmp [8]byte
			unix.Read(r, tmp[:])
			runTimer(t, l, 2*time.Millisecond, 0) // a second callback would come meanwhile
			if runs != 1 {
				t.Fatalf("round %d: callback ran %d times", i, runs)
			}
		}
	})
}

// TestRequestCancelBeforeTheWaitNeverReachesTheKernel: a Read cancelled in the handler that
// made it (before the loop next waits) never reaches the kernel, even where it would complete
// at once: the callback gets ECANCELED and the pipe keeps its bytes. (On uring the request's SQE
// is prepared when it is made; the cancel turns it into a NOP.)
func TestRequestCancelBeforeTheWaitNeverReachesTheKernel(t *testing.T) {
	eachBackend(t, ringev.Backends(), func(t *testing.T, backend string) {
		r, _ := testutil.PipeHolding(t, "ab")
		l := newLoop(t, backend)
		var rec recorder
		h, err := l.Read(r, make([]byte, 1), -1, rec.cb, 0)
		if err != nil {
			t.Fatal(err)
		}
		if err := h.Cancel(); err != nil {
			t.Fatal(err)
		}
		until(t, l, func() bool { return rec.n() > 0 })
		if c := rec.last(t); rec.n() != 1 || !errors.Is(c.Err, unix.ECANCELED) || c.N != 0 {
			t.Fatalf("%d callbacks, last N %d err %v, want one with ECANCELED", rec.n(), c.N, c.Err)
		}
		testutil.ExpectHeld(t, r, "ab")
	})
}

// TestRequestCancelAfterLinkedDeadlineBeforeTheEnter: a Read with a LINK_TIMEOUT linked to it
// (deadline set right after it) and then cancelled before the enter: both SQEs become NOPs, the
// Read ends once with ECANCELED (not ETIME), and a Read made next on the pipe gets the data.
func TestRequestCancelAfterLinkedDeadlineBeforeTheEnter(t *testing.T) {
	r, w := testutil.Pipe(t)
	l := newLoop(t, "uring")
	var rec, next recorder
	h := must(t)(l.Read(r, make([]byte, 1), -1, rec.cb, 0))
	if err := h.SetTimeout(time.Millisecond); err != nil {
		t.Fatal(err)
	}
	if !ringev.RequestLinked(h) {
		t.Fatal("the deadline set right after the Read was not linked")
	}
	if err := h.Cancel(); err != nil {
		t.Fatal(err)
	}
	must(t)(l.Read(r, make([]byte, 1), -1, next.cb, 0))
	testutil.Write(t, w, []byte("x"))
	until(t, l, func() bool { return rec.n() > 0 && next.n() > 0 })
	quiet(t, l)
	if c := rec.last(t); rec.n() != 1 || !errors.Is(c.Err, unix.ECANCELED) {
		t.Fatalf("%d callbacks, last err %v; want one with ECANCELED", rec.n(), c.Err)
	}
	wantOne(t, &next, 1)
}

// TestRequestCancelThenSetTimeoutBeforeTheEnterArmsNothing: a Read cancelled before the enter
// (its SQE a NOP) and then given a deadline ends once with ECANCELED; no timer is left behind
// (the handle is stale by then).
func TestRequestCancelThenSetTimeoutBeforeTheEnterArmsNothing(t *testing.T) {
	r, _ := testutil.Pipe(t)
	l := newLoop(t, "uring")
	base := ringev.TimersPending(l)
	var rec recorder
	h := must(t)(l.Read(r, make([]byte, 1), -1, rec.cb, 0))
	if err := h.Cancel(); err != nil {
		t.Fatal(err)
	}
	if err := h.SetTimeout(time.Millisecond); err != nil {
		t.Fatal(err)
	}
	if got := ringev.TimersPending(l); got != base {
		t.Errorf("%d timers, want %d: a deadline on a cancelled request armed a timer", got, base)
	}
	until(t, l, func() bool { return rec.n() > 0 })
	quiet(t, l)
	if c := rec.last(t); rec.n() != 1 || !errors.Is(c.Err, unix.ECANCELED) {
		t.Fatalf("%d callbacks, last err %v; want one with ECANCELED", rec.n(), c.Err)
	}
}
