//go:build linux

package ringev_test

// Tests of a request's deadline on uring: an IORING_OP_LINK_TIMEOUT attached to the request's
// SQE while that SQE is still the SQ's last and not submitted, and the loop's timer otherwise.

import (
	"errors"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/ringev/ringev"
	"github.com/ringev/ringev/internal/testutil"
)

// expectETIME runs l until rec has a completion and checks that it is the only one and ends
// with ETIME, no sooner than after from start.
func expectETIME(t *testing.T, l *ringev.Loop, rec *recorder, start time.Time, after time.Duration) {
	t.Helper()
	until(t, l, func() bool { return rec.n() > 0 })
	if c := rec.last(t); rec.n() != 1 || !errors.Is(c.Err, unix.ETIME) {
		t.Fatalf("%d callbacks, last N %d err %v, want one with ETIME", rec.n(), c.N, c.Err)
	}
	if d := time.Since(start); d < after {
		t.Fatalf("ETIME after %v, before the %v deadline", d, after)
	}
}

// TestRequestLinkTimeoutFollowsItsSQE: a deadline set right after the request is made goes in
// the SQE after the request's own, which gets IOSQE_IO_LINK: no loop timer, ETIME at the
// deadline.
func TestRequestLinkTimeoutFollowsItsSQE(t *testing.T) {
	r, _ := testutil.Pipe(t)
	l := newLoop(t, "uring")
	var rec recorder
	h := must(t)(l.Read(r, make([]byte, 1), -1, rec.cb, 0))
	start := time.Now()
	if err := h.SetTimeout(20 * time.Millisecond); err != nil {
		t.Fatal(err)
	}
	if !ringev.RequestLinkFollows(h) || ringev.TimersPending(l) != 0 {
		t.Fatalf("LINK_TIMEOUT after the request's SQE %v, %d loop timers: want it there and no timer",
			ringev.RequestLinkFollows(h), ringev.TimersPending(l))
	}
	expectETIME(t, l, &rec, start, 20*time.Millisecond)
}

// TestRequestLinkTimeoutThatDoesNotFireLeavesTheResult: a request whose data comes before its
// linked deadline gets the data, once, and no ETIME follows.
func TestRequestLinkTimeoutThatDoesNotFireLeavesTheResult(t *testing.T) {
	r, w := testutil.Pipe(t)
	l := newLoop(t, "uring")
	var rec recorder
	h := must(t)(l.Read(r, make([]byte, 1), -1, rec.cb, 0))
	if err := h.SetTimeout(time.Minute); err != nil {
		t.Fatal(err)
	}
	if !ringev.RequestLinked(h) {
		t.Fatal("the deadline is not a LINK_TIMEOUT")
	}
	testutil.Write(t, w, []byte("x"))
	until(t, l, func() bool { return rec.n() > 0 })
	if c := rec.last(t); c.Err != nil || c.N != 1 || string(rec.bufs[0]) != "x" {
		t.Fatalf("N %d err %v buf %q, want the byte written", c.N, c.Err, rec.bufs[0])
	}
	onceWithin(t, l, 20*time.Millisecond) // the LINK_TIMEOUT's CQE (ECANCELED) comes and goes
	if rec.n() != 1 || ringev.TimersPending(l) != 0 {
		t.Fatalf("%d callbacks, %d loop timers after the result: want 1, 0", rec.n(), ringev.TimersPending(l))
	}
}

// TestRequestLinkTimeoutFallsBackAfterTheEnter: once the request's SQE has been submitted, no
// LINK_TIMEOUT can follow it: a deadline set then is the loop's timer, and still ends it with
// ETIME.
func TestRequestLinkTimeoutFallsBackAfterTheEnter(t *testing.T) {
	r, _ := testutil.Pipe(t)
	l := newLoop(t, "uring")
	var rec recorder
	h := must(t)(l.Read(r, make([]byte, 1), -1, rec.cb, 0))
	for i := 0; ringev.RequestPrepared(h); i++ { // until an enter has submitted it
		if i == 100 {
			t.Fatal("the request's SQE was not submitted by 100 Onces")
		}
		onceWithin(t, l, time.Millisecond)
	}
	timers := ringev.TimersPending(l)
	start := time.Now()
	if err := h.SetTimeout(20 * time.Millisecond); err != nil {
		t.Fatal(err)
	}
	if ringev.RequestLinked(h) || ringev.TimersPending(l) != timers+1 {
		t.Fatalf("linked %v, %d loop timers (%d before): want the loop's timer", ringev.RequestLinked(h), ringev.TimersPending(l), timers)
	}
	expectETIME(t, l, &rec, start, 20*time.Millisecond)
}

// TestRequestLinkTimeoutFallsBackWhenTheSQIsFull: a deadline set on the request in the SQ's
// last free entry finds no room for a LINK_TIMEOUT: the loop's timer ends it with ETIME, and the
// requests before it are untouched.
func TestRequestLinkTimeoutFallsBackWhenTheSQIsFull(t *testing.T) {
	r, _ := testutil.Pipe(t)
	l := newLoop(t, "uring")
	var rec recorder
	var last ringev.Request
	k := 0 // last's token
	for i := 0; ; i++ {
		if i > 4096 {
			t.Fatal("4096 requests made and the SQ is not full")
		}
		h := must(t)(l.Read(r, make([]byte, 1), -1, rec.cb, uint64(i)))
		if !ringev.RequestPrepared(h) { // the SQ was full: it waits for the wait's flush
			if err := h.Cancel(); err != nil {
				t.Fatal(err)
			}
			break
		}
		last, k = h, i
	}
	start := time.Now()
	if err := last.SetTimeout(20 * time.Millisecond); err != nil {
		t.Fatal(err)
	}
	if ringev.RequestLinked(last) || ringev.TimersPending(l) != 1 {
		t.Fatalf("linked %v, %d loop timers: want the loop's timer (no room for a LINK_TIMEOUT)", ringev.RequestLinked(last), ringev.TimersPending(l))
	}
	// The cancelled one ends first (ECANCELED: it never reached the kernel), then the last
	// prepared one with ETIME; the others wait for data (Close cancels them).
	until(t, l, func() bool { return rec.n() >= 2 })
	if c := rec.got[0]; c.Token != uint64(k+1) || !errors.Is(c.Err, unix.ECANCELED) {
		t.Fatalf("first callback: token %d err %v, want %d (made with the SQ full, cancelled) with ECANCELED", c.Token, c.Err, k+1)
	}
	if c := rec.got[1]; c.Token != uint64(k) || !errors.Is(c.Err, unix.ETIME) {
		t.Fatalf("second callback: token %d err %v, want %d with ETIME", c.Token, c.Err, k)
	}
	if d := time.Since(start); d < 20*time.Millisecond {
		t.Fatalf("ETIME after %v, before the 20 ms deadline", d)
	}
	onceWithin(t, l, 5*time.Millisecond)
	if rec.n() != 2 {
		t.Fatalf("%d callbacks: the requests without a deadline ended too", rec.n())
	}
}
