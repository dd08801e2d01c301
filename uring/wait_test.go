//go:build linux

package uring

import (
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// TestSubmitAndWaitOneNopForTwoCQEsTimesOutOnce: one NOP submitted, two CQEs
// wanted, 1 s timeout: returns after 1 s and before 2 s (the timeout once, not
// twice; a tighter upper bound measured the scheduler), with submitted 1, an
// error wrapping ETIME, and the one completion ready (liburing issue 684).
func TestSubmitAndWaitOneNopForTwoCQEsTimesOutOnce(t *testing.T) {
	r := newTestRing(t)
	getSQE(t, r).PrepNop()
	start := time.Now()
	n, err := r.SubmitAndWaitTimeout(2, time.Second)
	el := time.Since(start)
	if n != 1 || !errors.Is(err, unix.ETIME) {
		t.Errorf("SubmitAndWaitTimeout = %d, %v; want 1, ETIME", n, err)
	}
	if el < time.Second || el >= 2*time.Second {
		t.Errorf("returned after %v, want 1 s and less than 2 s (one timeout, not two)", el)
	}
	if got := r.CQReady(); got != 1 {
		t.Errorf("CQReady = %d, want 1", got)
	}
}

// TestWaitRetriesEINTRWithRemainingTime: signals hitting the waiting thread
// every 20 ms interrupt the wait (EINTR), which resumes with the remaining
// time: a 300 ms wait still ends after 300-450 ms with ETIME.
func TestWaitRetriesEINTRWithRemainingTime(t *testing.T) {
	r := newTestRing(t)
	tid := unix.Gettid()
	stop := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		tick := time.NewTicker(20 * time.Millisecond)
		defer tick.Stop()
		for {
			select {
			case <-stop:
				return
			case <-tick.C:
				// SIGURG: the Go runtime's preemption signal, harmless here.
				unix.Tgkill(unix.Getpid(), tid, unix.SIGURG)
			}
		}
	}()
	start := time.Now()
	_, err := r.SubmitAndWaitTimeout(1, 300*time.Millisecond)
	el := time.Since(start)
	close(stop)
	wg.Wait()
	if !errors.Is(err, unix.ETIME) {
		t.Errorf("err = %v, want ETIME", err)
	}
	if el < 300*time.Millisecond || el > 450*time.Millisecond {
		t.Errorf("returned after %v, want 300-450 ms", el)
	}
	if r.eintrs == 0 {
		t.Errorf("the wait saw no EINTR: the test did not interrupt it")
	}
	t.Logf("EINTR retries: %d", r.eintrs)
}

// TestMinWaitReturnsWithOneCQEAfterMinWait: wanting 2 CQEs with one NOP, a
// 50 ms min_wait ends the wait after ~50 ms with the one CQE and no error.
func TestMinWaitReturnsWithOneCQEAfterMinWait(t *testing.T) {
	r := newTestRing(t)
	requireFeature(t, r, FeatMinTimeout)
	getSQE(t, r).PrepNop()
	start := time.Now()
	n, err := r.SubmitAndWaitMin(2, 2*time.Second, 50*time.Millisecond)
	el := time.Since(start)
	if n != 1 || err != nil {
		t.Errorf("SubmitAndWaitMin = %d, %v; want 1, nil", n, err)
	}
	if el < 45*time.Millisecond || el > 500*time.Millisecond {
		t.Errorf("returned after %v, want ~50ms", el)
	}
	if r.CQReady() != 1 {
		t.Errorf("CQReady = %d, want 1", r.CQReady())
	}
}

// TestMinWaitBelowOneMicrosecondLeftEndsAtOneCQE: wanting 2 CQEs with one NOP and a min_wait
// whose last part is below the kernel's unit (1.5 µs, 1 µs, 500 ns), the wait ends with the one
// CQE at once, not at the 3 s timeout (min_wait_usec 0 with min_complete 2 would wait for both).
func TestMinWaitBelowOneMicrosecondLeftEndsAtOneCQE(t *testing.T) {
	r := newTestRing(t)
	requireFeature(t, r, FeatMinTimeout)
	for _, mw := range []time.Duration{1500 * time.Nanosecond, time.Microsecond, 500 * time.Nanosecond} {
		getSQE(t, r).PrepNop()
		start := time.Now()
		n, err := r.SubmitAndWaitMin(2, 3*time.Second, mw)
		if el := time.Since(start); n != 1 || err != nil || el > time.Second {
			t.Errorf("min_wait %v: SubmitAndWaitMin = %d, %v after %v; want 1, nil at once", mw, n, err, el)
		}
		r.CQAdvance(r.CQReady())
	}
}

// TestMinWaitWithoutFeatureNamesIt: without IORING_FEAT_MIN_TIMEOUT the error names it.
func TestMinWaitWithoutFeatureNamesIt(t *testing.T) {
	r := newTestRing(t)
	r.features &^= FeatMinTimeout // pretend an older kernel
	_, err := r.SubmitAndWaitMin(1, 0, time.Millisecond)
	if !errors.Is(err, unix.EOPNOTSUPP) || err == nil || !strings.Contains(err.Error(), "IORING_FEAT_MIN_TIMEOUT") {
		t.Errorf("err = %v, want EOPNOTSUPP naming IORING_FEAT_MIN_TIMEOUT", err)
	}
}

// TestCQOverflowLosesNoCompletion: 1,000 NOPs on a ring with an 8-entry CQ,
// submitted without reaping: every completion arrives, each exactly once.
func TestCQOverflowLosesNoCompletion(t *testing.T) {
	r := newTestRing(t, WithEntries(8), WithCQEntries(8))
	requireFeature(t, r, FeatNoDrop)
	const total = 1000
	sawOverflow := false
	for i := 0; i < total; {
		for ; i < total; i++ {
			sqe := r.GetSQE()
			if sqe == nil {
				break
			}
			sqe.PrepNop()
			sqe.SetUserData(uint64(i))
		}
		if _, err := r.Submit(); err != nil {
			t.Fatalf("Submit after %d: %v", i, err)
		}
		sawOverflow = sawOverflow || r.CQOverflowPending()
	}
	if !sawOverflow {
		t.Errorf("the CQ never overflowed")
	}
	seen := make([]bool, total)
	for _, c := range collect(t, r, total) {
		if c.UserData >= total || seen[c.UserData] || c.Res != 0 {
			t.Fatalf("bad or repeated CQE %+v", c)
		}
		seen[c.UserData] = true
	}
	if *r.cqOverflow != 0 {
		t.Errorf("kernel counted %d dropped CQEs", *r.cqOverflow)
	}
}

// TestMinWaitLongerThanTimeoutEndsAfterMinWait: SubmitAndWaitMin with a
// 200 ms minimum wait and a 20 ms timeout, nothing in flight: the wait ends
// after the minimum wait (as the kernel's does), not at the timeout, with
// ETIME; with a NOP's CQE ready and two wanted it ends there too, without an
// error.
func TestMinWaitLongerThanTimeoutEndsAfterMinWait(t *testing.T) {
	r := newTestRing(t)
	requireFeature(t, r, FeatMinTimeout)
	start := time.Now()
	_, err := r.SubmitAndWaitMin(1, 20*time.Millisecond, 200*time.Millisecond)
	el := time.Since(start)
	if !errors.Is(err, unix.ETIME) {
		t.Errorf("nothing in flight: err = %v, want ETIME", err)
	}
	if el < 190*time.Millisecond || el > time.Second {
		t.Errorf("nothing in flight: returned after %v, want ~200 ms (the minimum wait)", el)
	}
	getSQE(t, r).PrepNop()
	start = time.Now()
	n, err := r.SubmitAndWaitMin(2, 20*time.Millisecond, 200*time.Millisecond)
	el = time.Since(start)
	if n != 1 || err != nil {
		t.Errorf("one NOP: SubmitAndWaitMin = %d, %v; want 1, nil", n, err)
	}
	if el < 190*time.Millisecond || el > time.Second {
		t.Errorf("one NOP: returned after %v, want ~200 ms (the minimum wait)", el)
	}
}
