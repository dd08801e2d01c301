//go:build linux

package ringev_test

import (
	"errors"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/ringev/ringev"
	"github.com/ringev/ringev/internal/testutil"
)

// TestRequestCloseFdBeforeTheWaitNeverReachesTheKernel: CloseFd in the handler that made a Read
// on the fd cancels it without it reaching the kernel: ECANCELED, and the pipe (read through a
// dup) keeps its bytes.
func TestRequestCloseFdBeforeTheWaitNeverReachesTheKernel(t *testing.T) {
	eachBackend(t, ringev.Backends(), func(t *testing.T, backend string) {
		rp, wp := ownedPipe(t)
		testutil.Write(t, wp.fd, []byte("ab"))
		dup, err := unix.Dup(rp.fd)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { unix.Close(dup) })
		l := newLoop(t, backend)
		var rec, cls recorder
		if _, err := l.Read(rp.fd, make([]byte, 1), -1, rec.cb, 0); err != nil {
			t.Fatal(err)
		}
		if _, err := l.CloseFd(rp.fd, cls.cb, 0); err != nil {
			t.Fatal(err)
		}
		rp.HandOver()
		until(t, l, func() bool { return rec.n() > 0 && cls.n() > 0 })
		if c := rec.last(t); rec.n() != 1 || !errors.Is(c.Err, unix.ECANCELED) {
			t.Fatalf("the Read: %d callbacks, last N %d err %v, want one with ECANCELED", rec.n(), c.N, c.Err)
		}
		if c := cls.last(t); c.Err != nil {
			t.Fatalf("CloseFd: %v", c.Err)
		}
		expectHeld(t, dup, "ab")
	})
}

// TestRequestDeadlineSetInTheHandlerIsALinkTimeout: on uring, a deadline given to a request in
// the handler that made it goes to the kernel as an IORING_OP_LINK_TIMEOUT linked to the
// request's SQE (linked after the SQE was prepared), not as a loop timer, and gives ETIME.
func TestRequestDeadlineSetInTheHandlerIsALinkTimeout(t *testing.T) {
	r, _ := testutil.Pipe(t)
	l := newLoop(t, "uring")
	var rec recorder
	h, err := l.Read(r, make([]byte, 1), -1, rec.cb, 0)
	if err != nil {
		t.Fatal(err)
	}
	if err := h.SetTimeout(20 * time.Millisecond); err != nil {
		t.Fatal(err)
	}
	if !ringev.RequestLinked(h) || ringev.TimersPending(l) != 0 {
		t.Fatalf("linked %v, %d loop timers: want the deadline as a LINK_TIMEOUT, no timer", ringev.RequestLinked(h), ringev.TimersPending(l))
	}
	start := time.Now()
	until(t, l, func() bool { return rec.n() > 0 })
	if c := rec.last(t); rec.n() != 1 || !errors.Is(c.Err, unix.ETIME) {
		t.Fatalf("%d callbacks, last N %d err %v, want one with ETIME", rec.n(), c.N, c.Err)
	}
	if d := time.Since(start); d < 20*time.Millisecond {
		t.Fatalf("ETIME after %v, before the 20 ms deadline", d)
	}
}

// TestRequestDeadlineOnAnEarlierRequestInTheHandler: on uring, a deadline given in the handler
// to a request that is no longer the last one made (a LINK_TIMEOUT must follow its SQE
// directly) is a loop timer: the request ends with ETIME, the later one is untouched and gets
// its data.
func TestRequestDeadlineOnAnEarlierRequestInTheHandler(t *testing.T) {
	r1, _ := testutil.Pipe(t)
	r2, w2 := testutil.Pipe(t)
	l := newLoop(t, "uring")
	var first, second recorder
	h, err := l.Read(r1, make([]byte, 1), -1, first.cb, 0)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := l.Read(r2, make([]byte, 1), -1, second.cb, 0); err != nil {
		t.Fatal(err)
	}
	if err := h.SetTimeout(20 * time.Millisecond); err != nil {
		t.Fatal(err)
	}
	if ringev.RequestLinked(h) || ringev.TimersPending(l) != 1 {
		t.Fatalf("linked %v, %d loop timers: want the deadline as a loop timer", ringev.RequestLinked(h), ringev.TimersPending(l))
	}
	until(t, l, func() bool { return first.n() > 0 })
	if c := first.last(t); first.n() != 1 || !errors.Is(c.Err, unix.ETIME) {
		t.Fatalf("first: %d callbacks, last N %d err %v, want one with ETIME", first.n(), c.N, c.Err)
	}
	if second.n() != 0 {
		t.Fatalf("second: %d callbacks before its data", second.n())
	}
	testutil.Write(t, w2, []byte("x"))
	until(t, l, func() bool { return second.n() > 0 })
	if c := second.last(t); c.Err != nil || c.N != 1 {
		t.Fatalf("second: N %d err %v, want 1 byte", c.N, c.Err)
	}
}

// TestRequestDeadlineChangedInTheHandlerIsTheLastOne: the last SetTimeout made in the handler
// that made the request is its deadline, on every backend (on uring the request's LINK_TIMEOUT,
// linked when its SQE was prepared, is given the new time before it is submitted): 30 s then
// 20 ms ends it with ETIME; 20 ms then 0 leaves it waiting past 150 ms, and it gets the data
// written then.
func TestRequestDeadlineChangedInTheHandlerIsTheLastOne(t *testing.T) {
	eachBackend(t, ringev.Backends(), func(t *testing.T, backend string) {
		r1, _ := testutil.Pipe(t)
		r2, w2 := testutil.Pipe(t)
		l := newLoop(t, backend)
		var shortened, removed recorder
		h1, err := l.Read(r1, make([]byte, 1), -1, shortened.cb, 0)
		if err != nil {
			t.Fatal(err)
		}
		h1.SetTimeout(30 * time.Second)
		h1.SetTimeout(20 * time.Millisecond)
		h2, err := l.Read(r2, make([]byte, 1), -1, removed.cb, 0)
		if err != nil {
			t.Fatal(err)
		}
		h2.SetTimeout(20 * time.Millisecond)
		h2.SetTimeout(0)
		untilFor(t, l, 5*time.Second, "the 20 ms deadline", func() bool { return shortened.n() > 0 })
		if c := shortened.last(t); !errors.Is(c.Err, unix.ETIME) {
			t.Fatalf("30 s then 20 ms: N %d err %v, want ETIME", c.N, c.Err)
		}
		fired := false
		l.AddTimer(150*time.Millisecond, func(*ringev.Timer) { fired = true })
		until(t, l, func() bool { return fired || removed.n() > 0 })
		if removed.n() != 0 {
			t.Fatalf("20 ms then 0: ended with %v before 150 ms", removed.last(t).Err)
		}
		testutil.Write(t, w2, []byte("x"))
		until(t, l, func() bool { return removed.n() > 0 })
		if c := removed.last(t); c.Err != nil || c.N != 1 {
			t.Fatalf("20 ms then 0: N %d err %v, want 1 byte", c.N, c.Err)
		}
	})
}

// TestRequestOnAnFdThatBecameTheLoopsOwnIsRefused: a number that the loop took requests on
// and then made one of its own fds (the exact-signal eventfd, watched from the first
// AddSignal of a WithExactSignals loop) is refused with EBADF from then on: the requests'
// fast check, which remembers that a number is not the loop's, asks again.
func TestRequestOnAnFdThatBecameTheLoopsOwnIsRefused(t *testing.T) {
	if ringev.ExactSignalFd() < 0 { // make the process's eventfd first (it stays open)
		l0 := newExactLoop(t, "epoll")
		if _, err := l0.AddSignal(unix.SIGUSR1, func(*ringev.Signal, int) {}); err != nil {
			t.Fatal(err)
		}
		l0.Close()
	}
	fd := ringev.ExactSignalFd()
	if fd < 0 {
		t.Fatal("no exact-signal eventfd after AddSignal on a WithExactSignals loop")
	}
	eachBackend(t, ringev.Backends(), func(t *testing.T, backend string) {
		l := newExactLoop(t, backend)
		nop := func(*ringev.Completion) {}
		if _, err := l.Fsync(fd, false, nop, 0); err != nil {
			t.Fatalf("Fsync on fd %d before the loop watches it: %v", fd, err)
		}
		if _, err := l.AddSignal(unix.SIGUSR1, func(*ringev.Signal, int) {}); err != nil {
			t.Fatal(err)
		}
		if _, err := l.Fsync(fd, false, nop, 0); !errors.Is(err, unix.EBADF) {
			t.Fatalf("Fsync on fd %d, the loop's exact-signal eventfd now: %v, want EBADF", fd, err)
		}
	})
}
