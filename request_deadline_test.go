//go:build linux

package ringev_test

// Tests of Request.SetTimeout: a deadline ends a request with ETIME, as a LINK_TIMEOUT or a loop
// timer, however and whenever it is set or changed.

import (
	"errors"
	"testing"
	"time"

	"github.com/ringev/ringev"
	"github.com/ringev/ringev/internal/testutil"
	"golang.org/x/sys/unix"
)

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

// TestRequestDeadlineLinkTimeoutHoldsAtEverySQPosition: a Read whose deadline is set right after
// it is made is linked to a LINK_TIMEOUT wherever its SQE falls in the SQ, the array's last
// entry (where the LINK_TIMEOUT wraps to the first) included, and every one ends with ETIME
// while the pipe keeps its bytes.
func TestRequestDeadlineLinkTimeoutHoldsAtEverySQPosition(t *testing.T) {
	r, w := testutil.Pipe(t)
	l := newLoop(t, "uring")
	var rec recorder
	unlinked := 0
	made := 0
	// 1, 2 or 3 pairs per turn, plus the backend's own SQEs: the positions run through the SQ
	// several times over 700 requests.
	for turn := 0; made < 700; turn++ {
		k := 1 + turn%3
		for range k {
			h := must(t)(l.Read(r, make([]byte, 1), -1, rec.cb, uint64(made)))
			if err := h.SetTimeout(time.Millisecond); err != nil {
				t.Fatal(err)
			}
			if !ringev.RequestLinked(h) {
				unlinked++
			}
			made++
		}
		want := made
		untilFor(t, l, deadline, "the reads' deadlines", func() bool { return rec.n() == want })
	}
	if unlinked != 0 {
		t.Errorf("%d of %d deadlines set right after the Read were not linked", unlinked, made)
	}
	for i, c := range rec.got {
		if !errors.Is(c.Err, unix.ETIME) {
			t.Fatalf("read %d (token %d): N %d err %v, want ETIME", i, c.Token, c.N, c.Err)
		}
	}
	testutil.Write(t, w, []byte("z"))
	testutil.ExpectHeld(t, r, "z")
}

// TestRequestDeadlineFullSQInOneHandler: 600 Reads made in one handler, each given a deadline
// right after it (the SQ, 256 entries, fills: the later ones are queued and linked at
// the wait, those whose LINK_TIMEOUT finds no room get the loop's timer), every third one
// cancelled and every fifth one's deadline removed and set again: each ends once, the
// cancelled ones with ECANCELED and the others with ETIME, and none reads the pipe.
func TestRequestDeadlineFullSQInOneHandler(t *testing.T) {
	const n = 600
	r, w := testutil.Pipe(t)
	l := newLoop(t, "uring")
	got := make([]int, n)
	var errs [n]error
	done := 0
	ran := false
	l.AddTimer(0, func(*ringev.Timer) {
		ran = true
		for i := range n {
			h, err := l.Read(r, make([]byte, 1), -1, func(c *ringev.Completion) {
				got[c.Token]++
				errs[c.Token] = c.Err
				done++
			}, uint64(i))
			if err != nil {
				t.Errorf("Read %d: %v", i, err)
				return
			}
			if err := h.SetTimeout(20 * time.Millisecond); err != nil {
				t.Errorf("SetTimeout %d: %v", i, err)
			}
			if i%5 == 0 {
				if err := h.SetTimeout(0); err != nil {
					t.Errorf("SetTimeout(0) %d: %v", i, err)
				}
				if err := h.SetTimeout(30 * time.Millisecond); err != nil {
					t.Errorf("SetTimeout again %d: %v", i, err)
				}
			}
			if i%3 == 0 {
				if err := h.Cancel(); err != nil {
					t.Errorf("Cancel %d: %v", i, err)
				}
			}
		}
	})
	untilFor(t, l, deadline, "600 reads' last completions", func() bool { return ran && done >= n })
	quiet(t, l)
	for i := range n {
		want := unix.ETIME
		if i%3 == 0 {
			want = unix.ECANCELED
		}
		if got[i] != 1 || !errors.Is(errs[i], want) {
			t.Fatalf("read %d: %d callbacks, err %v; want 1 with %v", i, got[i], errs[i], want)
		}
	}
	testutil.Write(t, w, []byte("q"))
	testutil.ExpectHeld(t, r, "q")
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

// TestRequestDeadlineNotLastFiresThroughTheTimer: as above without the cancel: A's deadline,
// on the loop's timer, ends A with ETIME while B and C stay pending and then get the data.
func TestRequestDeadlineNotLastFiresThroughTheTimer(t *testing.T) {
	r, w := testutil.Pipe(t)
	l := newLoop(t, "uring")
	var ra, rb, rc recorder
	a := must(t)(l.Read(r, make([]byte, 1), -1, ra.cb, 0))
	must(t)(l.Read(r, make([]byte, 1), -1, rb.cb, 0))
	if err := a.SetTimeout(10 * time.Millisecond); err != nil {
		t.Fatal(err)
	}
	must(t)(l.Read(r, make([]byte, 1), -1, rc.cb, 0))
	until(t, l, func() bool { return ra.n() > 0 })
	if c := ra.last(t); ra.n() != 1 || !errors.Is(c.Err, unix.ETIME) {
		t.Fatalf("A: %d callbacks, last err %v; want one with ETIME", ra.n(), c.Err)
	}
	if rb.n()+rc.n() != 0 {
		t.Fatalf("B or C ended with A's deadline: %+v %+v", rb.got, rc.got)
	}
	testutil.Write(t, w, []byte("bc"))
	until(t, l, func() bool { return rb.n() > 0 && rc.n() > 0 })
	wantOne(t, &rb, 1)
	wantOne(t, &rc, 1)
}

// TestRequestDeadlineNotLastThenAnotherThenCancel: A's deadline is set after B was made (A's
// SQE is not the SQ's last: the loop's timer takes it), then C is made and A cancelled before
// the enter: A ends once with ECANCELED, its timer is gone, and B and C get the two bytes
// written later (A never read).
func TestRequestDeadlineNotLastThenAnotherThenCancel(t *testing.T) {
	r, w := testutil.Pipe(t)
	l := newLoop(t, "uring")
	base := ringev.TimersPending(l)
	var ra, rb, rc recorder
	a := must(t)(l.Read(r, make([]byte, 1), -1, ra.cb, 0))
	must(t)(l.Read(r, make([]byte, 1), -1, rb.cb, 0))
	if err := a.SetTimeout(time.Hour); err != nil {
		t.Fatal(err)
	}
	if ringev.RequestLinked(a) {
		t.Fatal("A's deadline was linked although B's SQE follows A's")
	}
	if got := ringev.TimersPending(l); got != base+1 {
		t.Fatalf("%d timers, want %d (A's deadline)", got, base+1)
	}
	must(t)(l.Read(r, make([]byte, 1), -1, rc.cb, 0))
	if err := a.Cancel(); err != nil {
		t.Fatal(err)
	}
	if got := ringev.TimersPending(l); got != base {
		t.Errorf("%d timers after A's cancel, want %d: A's deadline timer stayed", got, base)
	}
	until(t, l, func() bool { return ra.n() > 0 })
	testutil.Write(t, w, []byte("bc"))
	until(t, l, func() bool { return rb.n() > 0 && rc.n() > 0 })
	quiet(t, l)
	if c := ra.last(t); ra.n() != 1 || !errors.Is(c.Err, unix.ECANCELED) {
		t.Fatalf("A: %d callbacks, last err %v; want one with ECANCELED", ra.n(), c.Err)
	}
	wantOne(t, &rb, 1)
	wantOne(t, &rc, 1)
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
		untilFor(t, l, deadline, "the 20 ms deadline", func() bool { return shortened.n() > 0 })
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

// TestRequestDeadlineChangedAfterSubmissionIsTheLastOne: a deadline changed after the request
// went to the kernel is the one that counts, on every backend. A Read given 30 ms in the
// handler that made it (on uring: a LINK_TIMEOUT) and then, once the loop submitted it, no
// deadline (SetTimeout(0)) or a longer one (1 s) is still waiting at 150 ms and completes with
// the data written then; one given 30 s and then 20 ms ends with ETIME.
func TestRequestDeadlineChangedAfterSubmissionIsTheLastOne(t *testing.T) {
	for _, c := range []struct {
		name         string
		first, later time.Duration
	}{
		{"Removed", 30 * time.Millisecond, 0},
		{"Longer", 30 * time.Millisecond, time.Second},
		{"Shorter", 30 * time.Second, 20 * time.Millisecond},
	} {
		t.Run(c.name, func(t *testing.T) {
			eachBackend(t, ringev.Backends(), func(t *testing.T, backend string) {
				// A round shows nothing if the change reached the backend only after the
				// first deadline had passed (a machine too busy to run the loop for 30 ms):
				// that is measured, and such a round is made again.
				for try := 1; !deadlineChangedAfterSubmission(t, backend, c.first, c.later); try++ {
					if try == 5 {
						t.Fatalf("in 5 rounds the loop never changed a %v deadline before it passed", c.first)
					}
				}
			})
		})
	}
}

// deadlineChangedAfterSubmission is one round of TestRequestDeadlineChangedAfterSubmissionIsTheLastOne.
// It reports false, having asserted nothing, when the change reached the backend only after the
// first deadline had passed.
func deadlineChangedAfterSubmission(t *testing.T, backend string, first, later time.Duration) bool {
	t.Helper()
	r, w := testutil.Pipe(t)
	l := newLoop(t, backend)
	var got *ringev.Completion
	var gotErr error
	h := must(t)(l.Read(r, make([]byte, 4), -1, func(c *ringev.Completion) { got, gotErr = c, c.Err }, 0))
	set := time.Now()
	if err := h.SetTimeout(first); err != nil {
		t.Fatal(err)
	}
	untilWaited(t, l) // the Read is in the kernel
	if got != nil && time.Since(set) < first {
		t.Fatalf("the Read completed before its %v deadline: %v", first, gotErr)
	}
	if err := h.SetTimeout(later); err != nil {
		t.Fatal(err)
	}
	untilWaited(t, l) // the change is in the kernel (uring) or the loop's timer
	if time.Since(set) >= first {
		return false
	}
	if later == 0 || later > first {
		fired := false
		l.AddTimer(150*time.Millisecond, func(*ringev.Timer) { fired = true })
		untilFor(t, l, deadline, "150 ms", func() bool { return fired || got != nil })
		if got != nil {
			t.Fatalf("SetTimeout(%v) after submission: the Read ended at the old %v deadline with %v", later, first, gotErr)
		}
		testutil.Write(t, w, []byte("ok"))
		untilFor(t, l, deadline, "the Read", func() bool { return got != nil })
		if gotErr != nil {
			t.Fatalf("the Read: %v, want the data", gotErr)
		}
		return true
	}
	untilFor(t, l, deadline, "the Read's deadline", func() bool { return got != nil })
	if !errors.Is(gotErr, unix.ETIME) {
		t.Fatalf("the Read ended with %v, want ETIME", gotErr)
	}
	return true
}

// TestRequestDeadlineAndCancelAfterARideSubmittedTheRead: in one handler, a Read A
// is made (its SQE prepared), a WriteNonblocking rides the ring (its enter submits A), then A
// gets a deadline (no longer linkable: the loop's timer) and a Read B made after is cancelled
// before the enter: A ends with ETIME, B with ECANCELED, each once, and the pipe keeps a byte
// written after both ended.
func TestRequestDeadlineAndCancelAfterARideSubmittedTheRead(t *testing.T) {
	l := newLoop(t, "uring", ringev.WithIOPath(ringev.IOPathRing))
	r, w := testutil.Pipe(t)
	_, w2 := testutil.Pipe(t)
	var ra, rb recorder
	ran := false
	l.AddTimer(0, func(*ringev.Timer) {
		ran = true
		a, err := l.Read(r, make([]byte, 1), -1, ra.cb, 0)
		if err != nil {
			t.Errorf("Read A: %v", err)
			return
		}
		if n, err := l.WriteNonblocking(w2, []byte("x")); n != 1 || err != nil {
			t.Errorf("WriteNonblocking: %d %v", n, err)
		}
		if err := a.SetTimeout(10 * time.Millisecond); err != nil {
			t.Errorf("SetTimeout A: %v", err)
		}
		b, err := l.Read(r, make([]byte, 1), -1, rb.cb, 0)
		if err != nil {
			t.Errorf("Read B: %v", err)
			return
		}
		if err := b.Cancel(); err != nil {
			t.Errorf("Cancel B: %v", err)
		}
	})
	until(t, l, func() bool { return ran && ra.n() > 0 && rb.n() > 0 })
	quiet(t, l)
	if c := ra.last(t); ra.n() != 1 || !errors.Is(c.Err, unix.ETIME) {
		t.Fatalf("A: %d callbacks, last err %v; want one with ETIME", ra.n(), c.Err)
	}
	if c := rb.last(t); rb.n() != 1 || !errors.Is(c.Err, unix.ECANCELED) {
		t.Fatalf("B: %d callbacks, last err %v; want one with ECANCELED", rb.n(), c.Err)
	}
	testutil.Write(t, w, []byte("k"))
	testutil.ExpectHeld(t, r, "k")
}
