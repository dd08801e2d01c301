//go:build linux

package ringev_test

// Tests of WithBatchWait: a blocking wait on uring gathers completions up to a count or a time,
// backs off when batches do not fill, and never delays a timer.

import (
	"errors"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/ringev/ringev"
	"github.com/ringev/ringev/internal/testutil"
	"github.com/ringev/ringev/uring"
	"golang.org/x/sys/unix"
)

// writeWhenBlocked writes one byte to each of fds, from another goroutine, once the loop's
// thread tid sleeps in its wait (whenBlocked): the bytes arrive during a blocking wait.
func writeWhenBlocked(t *testing.T, tid int, fds ...int) <-chan struct{} {
	return testutil.WhenBlocked(t, tid, func() {
		for _, fd := range fds {
			if _, err := unix.Write(fd, []byte{1}); err != nil {
				t.Errorf("write: %v", err)
			}
		}
	})
}

// TestBatchWaitHoldsALoneCompletionUntilTheWaitEnds: WithBatchWait(4, 300 ms) with one Read in
// the kernel whose byte arrives during the wait: the lone completion (one of the 4 asked for)
// waits for the end of the batching wait.
func TestBatchWaitHoldsALoneCompletionUntilTheWaitEnds(t *testing.T) {
	const wait = 300 * time.Millisecond
	requireBatchWait(t)
	r, w := testutil.Pipe(t)
	l := newLoop(t, "uring", ringev.WithBatchWait(4, wait))
	tid := unix.Gettid() // New locked this goroutine to its thread
	var rec recorder
	must(t)(l.Read(r, make([]byte, 8), -1, rec.cb, 1))
	start := time.Now()
	writeWhenBlocked(t, tid, w)
	untilFor(t, l, deadline, "the read's completion", func() bool { return rec.n() == 1 })
	wantOne(t, &rec, 1)
	// The byte arrives during the wait; one completion of the 4 asked for: the wait lasts its
	// whole min_wait (a wait ended early by a signal starts a new one).
	if got := time.Since(start); got < wait*5/6 {
		t.Fatalf("the read's callback ran %v after the wait began; the batching wait is %v", got, wait)
	}
}

// TestBatchWaitEndsWhenTheCountIsReached: WithBatchWait(2, 1 s) with two Reads whose bytes
// arrive together during the wait: the wait ends at the count, well before its 1 s.
func TestBatchWaitEndsWhenTheCountIsReached(t *testing.T) {
	const wait = time.Second
	requireBatchWait(t)
	r1, w1 := testutil.Pipe(t)
	r2, w2 := testutil.Pipe(t)
	l := newLoop(t, "uring", ringev.WithBatchWait(2, wait))
	tid := unix.Gettid() // New locked this goroutine to its thread
	var rec recorder
	must(t)(l.Read(r1, make([]byte, 8), -1, rec.cb, 1))
	must(t)(l.Read(r2, make([]byte, 8), -1, rec.cb, 2))
	start := time.Now()
	writeWhenBlocked(t, tid, w1, w2)
	untilFor(t, l, 2*wait, "both reads' completions", func() bool { return rec.n() == 2 })
	if got := time.Since(start); got >= wait*3/4 {
		t.Fatalf("2 completions of 2 asked for took %v; the wait should end at the count, not at its %v", got, wait)
	}
}

// TestBatchWaitCountAboveTheRequestsInFlightEndsAtTheWait: WithBatchWait(1024, 100 ms) with
// one Read in the kernel: its completion comes after the batching wait, not never, and the
// loop does not spin meanwhile.
func TestBatchWaitCountAboveTheRequestsInFlightEndsAtTheWait(t *testing.T) {
	requireBatchWait(t)
	r, w := testutil.Pipe(t)
	l := newLoop(t, "uring", ringev.WithBatchWait(1024, 100*time.Millisecond))
	tid := unix.Gettid() // New locked this goroutine to its thread
	var rec recorder
	must(t)(l.Read(r, make([]byte, 8), -1, rec.cb, 1))
	writeWhenBlocked(t, tid, w)
	onces := untilFor(t, l, deadline, "the read's completion", func() bool { return rec.n() == 1 })
	wantOne(t, &rec, 1)
	if onces > 20 {
		t.Errorf("%d Once calls for one completion: the batching wait spins", onces)
	}
}

// TestBatchWaitNeverDelaysATimer: a 50 ms timer beside a 1 s batching wait (a Read in the kernel
// that never completes) runs well before the batching wait would end.
func TestBatchWaitNeverDelaysATimer(t *testing.T) {
	const wait = time.Second
	requireBatchWait(t)
	r, _ := testutil.Pipe(t)
	l := newLoop(t, "uring", ringev.WithBatchWait(4, wait))
	var rec recorder
	must(t)(l.Read(r, make([]byte, 8), -1, rec.cb, 1)) // never completes: a request in the kernel (Close cancels it)
	fired := false
	start := time.Now()
	l.AddTimer(50*time.Millisecond, func(*ringev.Timer) { fired = true })
	untilFor(t, l, 2*wait, "the timer", func() bool { return fired })
	if got := time.Since(start); got >= wait*3/4 {
		t.Fatalf("a 50 ms timer fired after %v with a %v batching wait", got, wait)
	}
}

// TestBatchWaitRejectsACountOutOfRange: New with WithBatchWait of a count outside 1 to 1024
// fails with an error wrapping EINVAL.
func TestBatchWaitRejectsACountOutOfRange(t *testing.T) {
	for _, n := range []int{0, -1, 1025} {
		l, err := ringev.New(ringev.WithBackend("epoll"), ringev.WithBatchWait(n, time.Millisecond))
		if err == nil {
			l.Close()
			t.Fatalf("WithBatchWait(%d, 1ms): no error", n)
		}
		if !errors.Is(err, unix.EINVAL) {
			t.Fatalf("WithBatchWait(%d, 1ms): %v, want one wrapping EINVAL", n, err)
		}
	}
}

// TestBatchWaitRejectsAWaitOutsideOneMicrosecondToOneSecond: New with WithBatchWait of a wait
// under 1 µs or over 1 s fails with an error wrapping EINVAL.
func TestBatchWaitRejectsAWaitOutsideOneMicrosecondToOneSecond(t *testing.T) {
	for _, d := range []time.Duration{time.Second + time.Microsecond, 999 * time.Nanosecond, time.Nanosecond} {
		l, err := ringev.New(ringev.WithBackend("epoll"), ringev.WithBatchWait(16, d))
		if err == nil {
			l.Close()
			t.Fatalf("WithBatchWait(16, %v): no error", d)
		}
		if !errors.Is(err, unix.EINVAL) {
			t.Fatalf("WithBatchWait(16, %v): %v, want one wrapping EINVAL", d, err)
		}
	}
}

// TestBatchWaitOfOneMicrosecondEndsAtTheFirstCompletion: the shortest batching wait ends with a
// lone completion soon after it (the binding's last microsecond of a min_wait must not become
// min_wait_usec 0, which the kernel takes as no min_wait and waits for all n).
func TestBatchWaitOfOneMicrosecondEndsAtTheFirstCompletion(t *testing.T) {
	requireBatchWait(t)
	r, w := testutil.Pipe(t)
	l := newLoop(t, "uring", ringev.WithBatchWait(16, time.Microsecond))
	tid := unix.Gettid() // New locked this goroutine to its thread
	var rec recorder
	must(t)(l.Read(r, make([]byte, 8), -1, rec.cb, 1))
	l.AddTimer(3*time.Second, func(*ringev.Timer) {}) // a wait that ignores the min_wait would last until this timer
	start := time.Now()
	writeWhenBlocked(t, tid, w)
	untilFor(t, l, deadline, "the read's completion", func() bool { return rec.n() == 1 })
	if got := time.Since(start); got > 2*time.Second {
		t.Fatalf("a lone completion under a 1 µs batching wait came after %v", got)
	}
}

// TestBatchWaitHoldsAPostUntilTheWaitEnds: a Post from another goroutine during a batching wait
// is one completion of the batch (the loop's wait on its epoll set): it runs when the wait
// ends, as WithBatchWait's doc says.
func TestBatchWaitHoldsAPostUntilTheWaitEnds(t *testing.T) {
	const wait = 300 * time.Millisecond
	requireBatchWait(t)
	r, _ := testutil.Pipe(t)
	l := newLoop(t, "uring", ringev.WithBatchWait(4, wait))
	tid := unix.Gettid() // New locked this goroutine to its thread
	var rec recorder
	must(t)(l.Read(r, make([]byte, 8), -1, rec.cb, 1)) // a request in the kernel (Close cancels it)
	ran := false
	start := time.Now()
	testutil.WhenBlocked(t, tid, func() { l.Post(func() { ran = true }) })
	untilFor(t, l, deadline, "the posted function", func() bool { return ran })
	if got := time.Since(start); got < wait*5/6 {
		t.Fatalf("the posted function ran %v after the wait began; the batching wait is %v", got, wait)
	}
}

// TestBatchWaitStopEndsRunWhenTheWaitEnds: Stop from another goroutine during Run's batching
// wait (a Read in the kernel that never completes) ends Run when the batching wait ends, as
// WithBatchWait's and Stop's docs say: the wake-up is one completion of the batch.
func TestBatchWaitStopEndsRunWhenTheWaitEnds(t *testing.T) {
	const wait = 300 * time.Millisecond
	requireBatchWait(t)
	r, _ := testutil.Pipe(t)
	l := newLoop(t, "uring", ringev.WithBatchWait(4, wait))
	tid := unix.Gettid() // New locked this goroutine to its thread
	var rec recorder
	must(t)(l.Read(r, make([]byte, 8), -1, rec.cb, 1))
	start := time.Now()
	testutil.WhenBlocked(t, tid, l.Stop)
	if err := run(t, l, deadline); err != nil {
		t.Fatalf("Run: %v", err)
	}
	if got := time.Since(start); got < wait*5/6 {
		t.Fatalf("Run ended %v after it began; a Stop during a %v batching wait waits for it", got.Round(time.Millisecond), wait)
	}
}

// TestBatchWaitIsIgnoredByBackendsWithoutOne: on epoll and poll WithBatchWait(4, 1 s) changes
// nothing: a lone completion is not held for the batch.
func TestBatchWaitIsIgnoredByBackendsWithoutOne(t *testing.T) {
	const wait = time.Second
	for _, backend := range []string{"epoll", "poll"} {
		t.Run(backend, func(t *testing.T) {
			r, w := testutil.Pipe(t)
			l := newLoop(t, backend, ringev.WithBatchWait(4, wait))
			tid := unix.Gettid() // New locked this goroutine to its thread
			var rec recorder
			must(t)(l.Read(r, make([]byte, 8), -1, rec.cb, 1))
			start := time.Now()
			writeWhenBlocked(t, tid, w)
			untilFor(t, l, 2*wait, "the read's completion", func() bool { return rec.n() == 1 })
			if got := time.Since(start); got >= wait*3/4 {
				t.Fatalf("the read's callback ran after %v: %s has no batching wait", got, backend)
			}
		})
	}
}

// roundTrips makes rounds rounds of k pipe reads on l, whose thread is tid. Each round's bytes
// are written together, from another goroutine, once the loop sleeps in its wait, and, with
// ticks (a count of timer runs), once 5 more timer runs came since the round began: the round's
// completions end one blocking wait (with ticks, after several waits that timers ended).
func roundTrips(t *testing.T, l *ringev.Loop, tid, rounds, k int, ticks *atomic.Int64) {
	t.Helper()
	rs, ws := make([]int, k), make([]int, k)
	for i := range k {
		rs[i], ws[i] = testutil.Pipe(t)
	}
	buf := make([]byte, 8*k)
	for range rounds {
		var rec recorder
		for i := range k {
			must(t)(l.Read(rs[i], buf[8*i:8*i+8], -1, rec.cb, uint64(i)))
		}
		var from int64
		if ticks != nil {
			from = ticks.Load()
		}
		go func() {
			for end := time.Now().Add(deadline); ticks != nil && ticks.Load() < from+5; time.Sleep(100 * time.Microsecond) {
				if time.Now().After(end) {
					t.Errorf("5 timer runs did not come within %v", deadline)
					break
				}
			}
			writeWhenBlocked(t, tid, ws...)
		}()
		untilFor(t, l, deadline, "a round's completions", func() bool { return rec.n() == k })
	}
}

// TestBatchWaitBacksOffWhenALoneRequestCannotFillIt: 64 rounds of one Read under
// WithBatchWait(16, 2 ms), each completing during a blocking wait: after a batching wait that
// gathers too few, the next waits go without the batch, so at most 8 of the 64 batch.
func TestBatchWaitBacksOffWhenALoneRequestCannotFillIt(t *testing.T) {
	requireBatchWait(t)
	l := newLoop(t, "uring", ringev.WithBatchWait(16, 2*time.Millisecond))
	tid := unix.Gettid() // New locked this goroutine to its thread
	roundTrips(t, l, tid, 64, 1, nil)
	// One completion a wait, of 16 asked for: after each batching wait that gathers fewer than
	// 3, the next 1, 3, 7, 15, 31 then 63 blocking waits go without the batch.
	if n, all := ringev.BatchingWaits(l), ringev.BlockingEnters(l); n > 8 || all < 64 {
		t.Fatalf("%d of %d blocking waits batched for 64 lone reads; want at most 8 (the back-off)", n, all)
	}
}

// TestBatchWaitStaysOnWhileBatchesFill: 16 rounds of 4 Reads under WithBatchWait(4, 1 s), each
// round's 4 completions arriving together during a blocking wait: every blocking wait
// batches.
func TestBatchWaitStaysOnWhileBatchesFill(t *testing.T) {
	requireBatchWait(t)
	l := newLoop(t, "uring", ringev.WithBatchWait(4, time.Second))
	tid := unix.Gettid() // New locked this goroutine to its thread
	roundTrips(t, l, tid, 16, 4, nil)
	// Each round's 4 completions arrive together, filling the batch of 4: every blocking wait
	// batches (a round whose bytes came before the loop slept made none).
	if n, all := ringev.BatchingWaits(l), ringev.BlockingEnters(l); n != all || all < 8 {
		t.Fatalf("%d of %d blocking waits batched for 16 rounds of 4 reads that fill the batch; want all (and 8 or more)", n, all)
	}
}

// tick runs a timer on l every d until the test ends, counting its runs in ticks.
func tick(l *ringev.Loop, d time.Duration, ticks *atomic.Int64) {
	var again func(*ringev.Timer)
	again = func(*ringev.Timer) { ticks.Add(1); l.AddTimer(d, again) }
	l.AddTimer(d, again)
}

// TestBatchWaitBackOffSurvivesTimerEndedWaits: a batching wait that a timer ends with nothing
// ready (ETIME) does not reset the back-off, so a lone client on a loop with a timer that fires
// several times between its requests is backed off as without the timer.
func TestBatchWaitBackOffSurvivesTimerEndedWaits(t *testing.T) {
	requireBatchWait(t)
	l := newLoop(t, "uring", ringev.WithBatchWait(16, 2*time.Millisecond))
	tid := unix.Gettid() // New locked this goroutine to its thread
	var ticks atomic.Int64
	tick(l, time.Millisecond, &ticks)
	roundTrips(t, l, tid, 32, 1, &ticks)
	// ~5 timer-ended waits per request. Without the back-off (the reset) about 3 in 4 blocking
	// waits batch; with it, most of them go without.
	if n, all := ringev.BatchingWaits(l), ringev.BlockingEnters(l); 2*n > all || all < 64 {
		t.Fatalf("%d of %d blocking waits batched for 32 lone reads with a 1 ms timer; want fewer than half (the back-off)", n, all)
	}
}

// TestBatchWaitOfTwoBacksOffWhenALoneRequestCannotFillIt: a batch of 2 that gathers 1 backs off
// like a larger one (a lone request would wait the whole min_wait for a second).
func TestBatchWaitOfTwoBacksOffWhenALoneRequestCannotFillIt(t *testing.T) {
	requireBatchWait(t)
	l := newLoop(t, "uring", ringev.WithBatchWait(2, 2*time.Millisecond))
	tid := unix.Gettid() // New locked this goroutine to its thread
	roundTrips(t, l, tid, 64, 1, nil)
	if n, all := ringev.BatchingWaits(l), ringev.BlockingEnters(l); n > 8 || all < 64 {
		t.Fatalf("%d of %d blocking waits batched for 64 lone reads with a batch of 2; want at most 8 (the back-off)", n, all)
	}
}

// TestCheckBatchWaitAgreesWithNew: CheckBatchWait says nil exactly when a uring loop with
// WithBatchWait can be made, and otherwise an error wrapping the errno New's does; it leaves no
// fd open.
func TestCheckBatchWaitAgreesWithNew(t *testing.T) {
	before := testutil.OpenFds(t)
	checkErr := ringev.CheckBatchWait()
	if after := testutil.OpenFds(t); !slices.Equal(before, after) {
		t.Errorf("CheckBatchWait left fds: %v before, %v after", before, after)
	}
	l, err := ringev.New(ringev.WithBackend("uring"), ringev.WithBatchWait(16, 50*time.Microsecond))
	if err == nil {
		l.Close()
	}
	switch {
	case checkErr == nil && err != nil:
		t.Fatalf("CheckBatchWait: nil, but New with WithBatchWait: %v", err)
	case checkErr != nil && err == nil:
		t.Fatalf("CheckBatchWait: %v, but New with WithBatchWait made a loop", checkErr)
	case checkErr != nil:
		for _, errno := range []error{unix.EOPNOTSUPP, unix.EPERM, unix.ENOSYS} {
			if errors.Is(checkErr, errno) != errors.Is(err, errno) {
				t.Errorf("CheckBatchWait: %q, New: %q; want both to wrap %v or neither", checkErr, err, errno)
			}
		}
	}
}

// TestCheckBatchWaitNamesMinTimeoutWhenTheKernelLacksIt: on a kernel without
// IORING_FEAT_MIN_TIMEOUT (played by hiding the bit) CheckBatchWait's error names the feature
// and wraps EOPNOTSUPP, and New with WithBatchWait fails with it.
func TestCheckBatchWaitNamesMinTimeoutWhenTheKernelLacksIt(t *testing.T) {
	newLoop(t, "uring").Close() // skips where io_uring is not available
	defer ringev.SetFeatureHides(uring.FeatMinTimeout)()
	err := ringev.CheckBatchWait()
	if !errors.Is(err, unix.EOPNOTSUPP) || !strings.Contains(err.Error(), "IORING_FEAT_MIN_TIMEOUT") {
		t.Fatalf("CheckBatchWait without the feature: %v, want EOPNOTSUPP naming IORING_FEAT_MIN_TIMEOUT", err)
	}
	l, newErr := ringev.New(ringev.WithBackend("uring"), ringev.WithBatchWait(16, 50*time.Microsecond))
	if newErr == nil {
		l.Close()
		t.Fatal("New with WithBatchWait made a loop on a kernel without IORING_FEAT_MIN_TIMEOUT")
	}
	if newErr.Error() != err.Error() {
		t.Errorf("New: %q, CheckBatchWait: %q; want the same error", newErr, err)
	}
}
