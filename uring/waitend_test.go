//go:build linux

package uring

import (
	"errors"
	"runtime"
	"sync"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// The kernel ends an io_uring_enter(2) wait when a TIMEOUT request completes
// (io_should_wake: cq_timeouts changed), with fewer CQEs than asked for; the
// binding's waits must end there too (the shapes of liburing's
// test/timeout.c and test/defer-tw-timeout.c).

// waitRingKinds are the rings the wait tests run on: setup flags 0, and the
// default ring New makes on its owner thread (SINGLE_ISSUER|DEFER_TASKRUN
// where the kernel grants them).
var waitRingKinds = []struct {
	name string
	opts []Option
}{
	{"flags0", []Option{WithFlags(0)}},
	{"default", nil},
}

// timeoutReqDelay is the TIMEOUT request's delay; a wait that ends within
// timeoutReqBound of it ended because of it (the bound is loose: this is a
// correctness check, not a latency bound).
const (
	timeoutReqDelay = 50 * time.Millisecond
	timeoutReqBound = time.Second
)

// stageTimeoutReq prepares IORING_OP_TIMEOUT (count 0, relative) of d with
// user_data ud. The Timespec lives on the heap until the test ends.
func stageTimeoutReq(t *testing.T, sqe *SQE, d time.Duration, ud uint64) {
	t.Helper()
	ts := new(Timespec)
	*ts = NewTimespec(d)
	sqe.PrepTimeout(ts, 0, 0)
	sqe.SetUserData(ud)
	t.Cleanup(func() { runtime.KeepAlive(ts) })
}

// wantOnlyTimeoutCQE fails unless the CQs hold exactly one CQE: user_data 1,
// -ETIME.
func wantOnlyTimeoutCQE(t *testing.T, cqes []CQE) {
	t.Helper()
	if len(cqes) != 1 || cqes[0].UserData != 1 || cqes[0].Res != errnoRes(unix.ETIME) {
		t.Errorf("CQEs %+v, want exactly {user_data 1, res -ETIME}", cqes)
	}
}

// TestTimeoutRequestEndsSubmitAndWait: one TIMEOUT request (50 ms), then
// SubmitAndWait(2): the wait ends when the TIMEOUT completes, with 1 submitted
// and {1, -ETIME} in the CQ. A poll on an empty pipe, written after 2 s, is
// the backstop that ends a wait which ignored the TIMEOUT (so the test fails
// instead of hanging).
func TestTimeoutRequestEndsSubmitAndWait(t *testing.T) {
	for _, k := range waitRingKinds {
		t.Run(k.name, func(t *testing.T) {
			r := newTestRing(t, k.opts...)
			rfd, wfd := newPipe(t)
			prep(t, r, 99, func(s *SQE) { s.PrepPollAdd(rfd, unix.POLLIN) })
			if _, err := r.Submit(); err != nil {
				t.Fatal(err)
			}
			backstop := time.AfterFunc(2*time.Second, func() { unix.Write(wfd, []byte{1}) })
			t.Cleanup(func() { backstop.Stop() })
			wantTimeoutEndsWait(t, r, "SubmitAndWait(2)", timeoutReqBound, func() (int, error) { return r.SubmitAndWait(2) })
		})
	}
}

// TestTimeoutRequestEndsSubmitAndWaitTimeout: one TIMEOUT request (50 ms),
// then SubmitAndWaitTimeout(2, 2 s): it returns when the TIMEOUT completes,
// long before 2 s, with 1 submitted, no error and {1, -ETIME} in the CQ.
func TestTimeoutRequestEndsSubmitAndWaitTimeout(t *testing.T) {
	for _, k := range waitRingKinds {
		t.Run(k.name, func(t *testing.T) {
			r := newTestRing(t, k.opts...)
			wantTimeoutEndsWait(t, r, "SubmitAndWaitTimeout(2, 2s)", timeoutReqBound, func() (int, error) {
				return r.SubmitAndWaitTimeout(2, 2*time.Second)
			})
		})
	}
}

// TestTimeoutRequestEndsSubmitAndWaitMin: one TIMEOUT request (50 ms), then
// SubmitAndWaitMin(2, 2 s, min_wait 500 ms): the kernel ends the wait when
// the TIMEOUT completes, inside the minimum wait, and so must the binding.
func TestTimeoutRequestEndsSubmitAndWaitMin(t *testing.T) {
	for _, k := range waitRingKinds {
		t.Run(k.name, func(t *testing.T) {
			r := newTestRing(t, k.opts...)
			requireFeature(t, r, FeatMinTimeout)
			// The kernel ends the wait at ~50 ms, inside the minimum wait.
			wantTimeoutEndsWait(t, r, "SubmitAndWaitMin(2, 2s, 500ms)", 400*time.Millisecond, func() (int, error) {
				return r.SubmitAndWaitMin(2, 2*time.Second, 500*time.Millisecond)
			})
		})
	}
}

// wantTimeoutEndsWait stages one TIMEOUT request (timeoutReqDelay, count 1) on r, then calls
// wait (the call named call, which wants 2 CQEs): it must return 1 submitted and no error within
// bound, with only the TIMEOUT's {1, -ETIME} in the CQ.
func wantTimeoutEndsWait(t *testing.T, r *Ring, call string, bound time.Duration, wait func() (int, error)) {
	t.Helper()
	stageTimeoutReq(t, getSQE(t, r), timeoutReqDelay, 1)
	start := time.Now()
	n, err := wait()
	el := time.Since(start)
	if n != 1 || err != nil {
		t.Errorf("%s = %d, %v; want 1, nil", call, n, err)
	}
	if el > bound {
		t.Errorf("%s returned after %v, over %v: the completed TIMEOUT did not end the wait", call, el, bound)
	}
	wantOnlyTimeoutCQE(t, drain(r))
}

// signalThread sends SIGURG (the Go runtime's preemption signal, harmless)
// to thread tid every period until the returned stop is called. A period
// under a millisecond is kept by spinning (time.Sleep would stretch it).
func signalThread(tid int, period time.Duration) (stop func()) {
	done := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		for {
			select {
			case <-done:
				return
			default:
			}
			unix.Tgkill(unix.Getpid(), tid, unix.SIGURG)
			if period >= time.Millisecond {
				time.Sleep(period)
				continue
			}
			for next := time.Now().Add(period); time.Now().Before(next); {
				runtime.Gosched()
			}
		}
	}()
	return func() { close(done); wg.Wait() }
}

// TestWaitRetriesEINTRWithACQEAlreadyReady: with one CQE already in the CQ
// and two wanted, signals every 20 ms do not end a 300 ms wait early (the
// kernel reports such an interrupted wait as a success, not EINTR, because
// the CQ is not empty): it still ends after 300-450 ms with ETIME.
func TestWaitRetriesEINTRWithACQEAlreadyReady(t *testing.T) {
	r := newTestRing(t)
	getSQE(t, r).PrepNop()
	if _, err := r.SubmitAndWaitTimeout(1, waitTimeout); err != nil {
		t.Fatal(err)
	}
	stop := signalThread(unix.Gettid(), 20*time.Millisecond)
	start := time.Now()
	_, err := r.SubmitAndWaitTimeout(2, 300*time.Millisecond)
	el := time.Since(start)
	stop()
	if !errors.Is(err, unix.ETIME) {
		t.Errorf("err = %v, want ETIME", err)
	}
	if el < 300*time.Millisecond || el > 450*time.Millisecond {
		t.Errorf("returned after %v, want 300-450 ms", el)
	}
	if got := r.CQReady(); got != 1 {
		t.Errorf("CQReady = %d, want 1", got)
	}
}

// TestWaitRetriesEINTRHiddenBySubmission: a poll on an empty pipe submitted
// by the same call, signals every 20 ms: the kernel returns the submitted
// count and hides the wait's EINTR, which must still be retried: the 300 ms
// wait ends after 300-450 ms with ETIME and 1 submitted.
func TestWaitRetriesEINTRHiddenBySubmission(t *testing.T) {
	r := newTestRing(t)
	rfd, _ := newPipe(t)
	prep(t, r, 1, func(s *SQE) { s.PrepPollAdd(rfd, unix.POLLIN) })
	stop := signalThread(unix.Gettid(), 20*time.Millisecond)
	start := time.Now()
	n, err := r.SubmitAndWaitTimeout(1, 300*time.Millisecond)
	el := time.Since(start)
	stop()
	if n != 1 || !errors.Is(err, unix.ETIME) {
		t.Errorf("SubmitAndWaitTimeout = %d, %v; want 1, ETIME", n, err)
	}
	if el < 300*time.Millisecond || el > 450*time.Millisecond {
		t.Errorf("returned after %v, want 300-450 ms", el)
	}
}

// TestDeputyTimeoutRequestEndsWait: a TIMEOUT request (50 ms; 500 ms where it
// is submitted before the wait) and
// Deputy.SubmitAndWaitTimeout(2, 2 s) ends when it completes, wherever it
// runs: on the SQPOLL ring alone, on the companion ring alone, or on either
// while the other ring has a request in flight (the eventfd wait).
func TestDeputyTimeoutRequestEndsWait(t *testing.T) {
	type route struct {
		name      string
		both      bool // a poll on an empty pipe is in flight on the other ring
		pollFirst bool // that poll is staged before the TIMEOUT (takes the companion's slot)
		nopFirst  bool // a NOP takes the companion ring's slot and is reaped first
	}
	for _, rt := range []route{
		{name: "sqpoll ring", nopFirst: true},
		{name: "companion ring"},
		{name: "both rings, TIMEOUT on companion", both: true},
		{name: "both rings, TIMEOUT on SQPOLL ring", both: true, pollFirst: true},
	} {
		t.Run(rt.name, func(t *testing.T) {
			for attempt := 1; !deputyTimeoutEndsWait(t, rt.both, rt.pollFirst, rt.nopFirst); attempt++ {
				if attempt == 5 {
					t.Fatalf("the TIMEOUT was submitted before the wait, and %d times the wait began after half its delay: the case was never set up", attempt)
				}
			}
		})
	}
}

// deputyTimeoutEndsWait runs one route of TestDeputyTimeoutRequestEndsWait.
// With nopFirst the TIMEOUT is submitted (with the NOP) before the wait, so
// its timer runs before the wait begins: a wait that begins after the TIMEOUT
// completed is not the case (it rightly waits for two CQEs), and a wait that
// begins after half the delay returns false without a verdict.
func deputyTimeoutEndsWait(t *testing.T, both, pollFirst, nopFirst bool) bool {
	t.Helper()
	delay, bound := timeoutReqDelay, timeoutReqBound
	if nopFirst {
		delay, bound = 10*timeoutReqDelay, timeoutReqBound+10*timeoutReqDelay
	}
	d := newTestDeputy(t, 1)
	rfd, _ := newPipe(t)
	waitAsleep(t, d)
	if nopFirst {
		stageNops(t, d, 5, 1)
	}
	if both && pollFirst {
		sqe := d.GetSQE()
		sqe.PrepPollAdd(rfd, unix.POLLIN)
		sqe.SetUserData(99)
	}
	stageTimeoutReq(t, d.GetSQE(), delay, 1)
	if both && !pollFirst {
		sqe := d.GetSQE()
		sqe.PrepPollAdd(rfd, unix.POLLIN)
		sqe.SetUserData(99)
	}
	staged := d.Staged()
	var submitted time.Time
	if nopFirst {
		submitted = time.Now()
		if _, err := d.Submit(); err != nil {
			t.Fatal(err)
		}
		if c := reapDeputy(t, d, 1)[0]; c.UserData != 5 {
			t.Fatalf("CQE %+v, want the NOP's", c)
		}
		staged = 0
	}
	start := time.Now()
	if nopFirst && start.Sub(submitted) > delay/2 {
		reapDeputy(t, d, 1) // the TIMEOUT's CQE, so the deputy ends empty
		return false
	}
	n, err := d.SubmitAndWaitTimeout(2, 2*time.Second)
	el := time.Since(start)
	st := d.Stats()
	wantComp, wantRing := uint64(0), uint64(0)
	if nopFirst || both {
		wantComp, wantRing = 1, 1
	} else {
		wantComp = 1
	}
	if st.DeputySQEs != wantComp || st.SQPollSQEs != wantRing {
		t.Fatalf("stats %+v: want DeputySQEs %d, SQPollSQEs %d (the route this case is about)", st, wantComp, wantRing)
	}
	if n != staged || err != nil {
		t.Errorf("SubmitAndWaitTimeout(2, 2s) = %d, %v; want %d, nil", n, err, staged)
	}
	if el > bound {
		t.Errorf("returned after %v: the completed TIMEOUT did not end the wait", el)
	}
	var cqes []CQE
	for cqe := d.PeekCQE(); cqe != nil; cqe = d.PeekCQE() {
		cqes = append(cqes, *cqe)
		d.CQESeen()
	}
	wantOnlyTimeoutCQE(t, cqes)
	return true
}
