//go:build linux

package ringev_test

import (
	"errors"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/ringev/ringev"
	"github.com/ringev/ringev/internal/testutil"
	"github.com/ringev/ringev/uring"
)

// TestRequestSubmitSQE: an SQE prepared with package uring runs as a request on uring; the
// other backends refuse it with ErrNeedsUring, naming themselves.
func TestRequestSubmitSQE(t *testing.T) {
	eachBackend(t, ringev.Backends(), func(t *testing.T, backend string) {
		l := newLoop(t, backend)
		var rec recorder
		var sqe uring.SQE
		sqe.PrepNop()
		_, err := l.SubmitSQE(&sqe, nil, rec.cb, 9)
		if backend != "uring" {
			if !errors.Is(err, ringev.ErrNeedsUring) || !strings.Contains(err.Error(), backend) {
				t.Fatalf("SubmitSQE on %s: %v, want ErrNeedsUring naming the backend", backend, err)
			}
			return
		}
		if err != nil {
			t.Fatal(err)
		}
		until(t, l, func() bool { return rec.n() > 0 })
		if c := rec.last(t); rec.n() != 1 || c.Err != nil || c.N != 0 || c.Token != 9 || c.Op != ringev.OpSQE {
			t.Fatalf("%d completions, last %+v", rec.n(), c)
		}
	})
}

// TestRequestFullSQIsSubmittedNotRefused: more requests in one Once than the SQ has entries
// (256) all reach the kernel and complete.
func TestRequestFullSQIsSubmittedNotRefused(t *testing.T) {
	eachBackend(t, ringev.Backends(), func(t *testing.T, backend string) {
		r, w := testutil.Pipe(t)
		l := newLoop(t, backend)
		var rec recorder
		const n = 600 // the SQ has 256 entries
		for i := 0; i < n; i++ {
			must(t)(l.Write(w, []byte("x"), -1, rec.cb, uint64(i)))
		}
		until(t, l, func() bool { return rec.n() == n })
		for i, c := range rec.got {
			if c.Err != nil || c.N != 1 || c.Token != uint64(i) {
				t.Fatalf("completion %d: %+v", i, c)
			}
		}
		if got := testutil.Drain(t, r); got != n {
			t.Fatalf("pipe holds %d bytes, want %d", got, n)
		}
	})
}

// TestRequestCQOverflowLosesNothing: more completions at once than the CQ has entries (1024)
// all arrive, each once.
func TestRequestCQOverflowLosesNothing(t *testing.T) {
	eachBackend(t, ringev.Backends(), func(t *testing.T, backend string) {
		const n = 3000
		r, w := testutil.Pipe(t)
		if _, err := unix.FcntlInt(uintptr(w), unix.F_SETPIPE_SZ, 1<<20); err != nil {
			t.Fatal(err)
		}
		l := newLoop(t, backend)
		seen := make([]int, n)
		count := 0
		cb := func(c *ringev.Completion) {
			if c.Err != nil {
				t.Errorf("completion %d: %v", c.Token, c.Err)
			}
			seen[c.Token]++
			count++
		}
		buf := make([]byte, n)
		for i := 0; i < n; i++ {
			must(t)(l.Read(r, buf[i:i+1], -1, cb, uint64(i)))
		}
		// Let all reads reach the kernel, then complete them together.
		onceWithin(t, l, 5*time.Millisecond)
		testutil.Write(t, w, make([]byte, n))
		until(t, l, func() bool { return count >= n })
		for i, k := range seen {
			if k != 1 {
				t.Fatalf("request %d: %d callbacks", i, k)
			}
		}
	})
}

// TestRequestCompletesWhileHandlersRideTheRing: a handler's Loop.ReadNonblocking, which on
// uring reaps the ring's CQEs itself (rideIO), hands the requests' CQEs over: every request
// still completes, once.
func TestRequestCompletesWhileHandlersRideTheRing(t *testing.T) {
	eachBackend(t, ringev.Backends(), func(t *testing.T, backend string) {
		pr, pw := testutil.Pipe(t)
		r, w := testutil.Pipe(t)
		l := newLoop(t, backend)
		var rbuf [1]byte
		reads := 0
		addFd(t, l, pr, ringev.Read, func(ev *ringev.FdEvent, _ ringev.Flags) {
			if n, _ := l.ReadNonblocking(pr, rbuf[:]); n == 1 {
				reads++
				l.WriteNonblocking(pw, rbuf[:]) // keep the fd event busy
			}
		})
		addFd(t, l, pw, ringev.Write, func(ev *ringev.FdEvent, _ ringev.Flags) {
			l.WriteNonblocking(pw, []byte{1})
			ev.SetFlags(0)
		})
		const n = 200
		done := make([]int, n)
		count := 0
		buf := make([]byte, n)
		cb := func(c *ringev.Completion) {
			if c.Err != nil || c.N != 1 {
				t.Errorf("request %d: %+v", c.Token, c)
			}
			done[c.Token]++
			count++
		}
		for i := 0; i < n; i++ {
			must(t)(l.Read(r, buf[i:i+1], -1, cb, uint64(i)))
		}
		for i := 0; i < n; i++ {
			testutil.Write(t, w, []byte{byte(i)})
			if i%20 == 0 {
				testutil.Once(t, l, deadline)
			}
		}
		until(t, l, func() bool { return count == n })
		for i, k := range done {
			if k != 1 {
				t.Fatalf("request %d: %d callbacks", i, k)
			}
		}
		if reads == 0 {
			t.Fatal("the riding handler never ran")
		}
	})
}
