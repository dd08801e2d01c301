//go:build linux

package ringev_test

// Tests of requests when the loop is closed, or their fd is closed with close(2): no callback
// runs after Close, nothing is read, and no fd is left.

import (
	"errors"
	"testing"
	"time"

	"github.com/ringev/ringev"
	"github.com/ringev/ringev/internal/testutil"
	"go.uber.org/goleak"
	"golang.org/x/sys/unix"
)

// TestRequestLoopCloseWithRequestsInFlight: Loop.Close with requests in the kernel runs none of
// their callbacks, leaves no fd or goroutine behind, and the loop is unusable after it.
func TestRequestLoopCloseWithRequestsInFlight(t *testing.T) {
	defer goleak.VerifyNone(t, goleak.IgnoreCurrent())
	eachBackend(t, ringev.Backends(), func(t *testing.T, backend string) {
		fds0 := len(testutil.OpenFds(t))
		a, b := testutil.Socketpair(t)
		calls := 0
		func() {
			l := newLoop(t, backend)
			cb := func(*ringev.Completion) { calls++ }
			for i := 0; i < 10; i++ {
				must(t)(l.Recv(a, make([]byte, 8), 0, cb, 0))
				must(t)(l.Recv(b, make([]byte, 8), 0, cb, 0))
			}
			untilWaited(t, l)
			if err := l.Close(); err != nil {
				t.Fatal(err)
			}
			if _, err := l.Recv(a, make([]byte, 8), 0, cb, 0); !errors.Is(err, ringev.ErrClosed) {
				t.Fatalf("Recv after Close: %v", err)
			}
		}()
		if calls != 0 {
			t.Fatalf("%d callbacks ran around Close", calls)
		}
		testutil.Close(t, a)
		testutil.Close(t, b)
		if n := len(testutil.OpenFds(t)); n != fds0 {
			t.Fatalf("%d fds open after the loop closed, %d before", n, fds0)
		}
	})
}

// TestRequestLoopCloseBeforeTheEnterReadsNothing: Loop.Close right after a Read is made (no Once
// since) runs no callback and lets the Read take nothing: the pipe keeps its bytes, on every
// backend (on uring the Read's SQE is prepared in the SQ at the call). Bytes a Read took at
// Close would be lost: no callback gets them.
func TestRequestLoopCloseBeforeTheEnterReadsNothing(t *testing.T) {
	eachBackend(t, ringev.Backends(), func(t *testing.T, backend string) {
		r, _ := testutil.PipeHolding(t, "ab")
		l := newLoop(t, backend)
		cb := func(*ringev.Completion) { t.Error("a callback ran after Close") }
		if _, err := l.Read(r, make([]byte, 1), -1, cb, 0); err != nil {
			t.Fatal(err)
		}
		if err := l.Close(); err != nil {
			t.Fatal(err)
		}
		testutil.ExpectHeld(t, r, "ab")
	})
}

// TestRequestLoopCloseFinishesPendingCloseFd: Loop.Close right after CloseFd on an fd with a
// request in flight still closes the fd (the CloseFd waited for the request, which Close
// cancels): it is not left open, and the peer of the socket sees EOF.
func TestRequestLoopCloseFinishesPendingCloseFd(t *testing.T) {
	eachBackend(t, ringev.Backends(), func(t *testing.T, backend string) {
		a, b := testutil.Socketpair(t)
		l := newLoop(t, backend)
		buf := make([]byte, 16)
		if _, err := l.Recv(a, buf, 0, func(*ringev.Completion) {}, 0); err != nil {
			t.Fatal(err)
		}
		untilWaited(t, l) // the Recv is in flight
		if _, err := l.CloseFd(a, func(*ringev.Completion) {}, 0); err != nil {
			t.Fatal(err)
		}
		testutil.HandOver(t, a)
		if err := l.Close(); err != nil {
			t.Fatal(err)
		}
		if !testutil.IsClosed(a) {
			t.Fatal("Loop.Close left open the fd that CloseFd was closing")
		}
		testutil.ExpectEOF(t, b, 2*time.Second, "the peer after Loop.Close with a CloseFd pending")
	})
}

// TestRequestLoopCloseLeaksNoAcceptedFd: Close with accepted connections whose callbacks have
// not run (AcceptMultishot with a backlog of 20: a Once runs at most 8 of one multishot
// request's completions) leaks none of them: the loop closes every fd it accepted and handed to
// no callback.
func TestRequestLoopCloseLeaksNoAcceptedFd(t *testing.T) {
	eachBackend(t, ringev.Backends(), func(t *testing.T, backend string) {
		ln, sa := testutil.Listener(t)
		for range 20 {
			testutil.Dial(t, sa)
		}
		before := len(testutil.OpenFds(t))
		l := newLoop(t, backend)
		var got []int
		must(t)(l.AcceptMultishot(ln, unix.SOCK_CLOEXEC, func(c *ringev.Completion) {
			if c.Err == nil {
				got = append(got, c.N)
			}
		}, 0))
		untilFor(t, l, deadline, "an accepted connection", func() bool { return len(got) > 0 })
		if err := l.Close(); err != nil {
			t.Fatal(err)
		}
		for _, fd := range got {
			unix.Close(fd)
		}
		after := len(testutil.OpenFds(t))
		if after != before {
			t.Fatalf("after Close and closing the %d fds handed to callbacks: %d fds open, %d before New: accepted fds leaked", len(got), after, before)
		}
	})
}

// TestRequestRawCloseWithRequestInFlight shows what a plain close(2) of an fd with a request
// in flight does: on uring the kernel keeps the file (the peer sees no EOF) until the request
// is cancelled; CloseFd is what to do instead (the peer sees EOF at once).
func TestRequestRawCloseWithRequestInFlight(t *testing.T) {
	eachBackend(t, ringev.Backends(), func(t *testing.T, backend string) {
		conn, b := testutil.Socketpair(t)
		l := newLoop(t, backend)
		var rec recorder
		h := must(t)(l.Recv(conn, make([]byte, 8), 0, rec.cb, 0))
		untilWaited(t, l)       // in the kernel (uring) or waiting (emulation)
		testutil.Close(t, conn) // behind the loop's back
		switch backend {
		case "uring":
			testutil.ExpectPinned(t, b, "uring: a raw close with a recv in flight")
		case notCloseSafe:
			// Not close-safe by design (WithBackend): its POLL_ADD holds the file too.
		default:
			testutil.ExpectEOF(t, b, testutil.ReleaseWithin, backend+": a raw close with a recv in flight (the emulation holds no file reference)")
		}
		// The request is still pending (it watches a closed fd). What to do after the fact:
		// cancel it; on uring the file goes with it. (Before the fact: CloseFd.)
		h.Cancel()
		until(t, l, func() bool { return rec.n() > 0 })
		if c := rec.last(t); rec.n() != 1 || !errors.Is(c.Err, unix.ECANCELED) {
			t.Fatalf("after Cancel: %d completions, last %+v", rec.n(), c)
		}
		if backend == "uring" {
			testutil.ExpectEOF(t, b, testutil.ReleaseWithin, "uring: Cancel of the recv on a raw-closed fd")
		}
	})
}
