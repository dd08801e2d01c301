//go:build linux

package uring

import (
	"errors"
	"fmt"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// Signals never end a wait: only the wait's deadline, its n CQEs, or a TIMEOUT request in flight
// do, on every setup-flag set.

// setupKinds are the setup-flag sets the signal tests run on, each with the feature its skip names.
var setupKinds = []struct {
	name    string
	feature string // what the kernel must grant, named by the skip
	opts    []Option
}{
	{"none", "", []Option{WithFlags(0)}},
	{"coop_taskrun", "IORING_SETUP_COOP_TASKRUN|IORING_SETUP_TASKRUN_FLAG (5.19)",
		[]Option{WithFlags(SetupCoopTaskrun | SetupTaskrunFlag)}},
	{"defer_taskrun", "IORING_SETUP_SINGLE_ISSUER|IORING_SETUP_DEFER_TASKRUN (6.1)",
		[]Option{WithFlags(SetupSingleIssuer | SetupDeferTaskrun)}},
	{"sqpoll", "IORING_SETUP_SQPOLL (5.1, unprivileged 5.11)",
		[]Option{WithSQPoll(0), WithFlags(0)}},
}

// signalPeriods are the intervals at which the waiting thread gets SIGURG.
var signalPeriods = []time.Duration{10 * time.Millisecond, time.Millisecond}

// forEachSetupAndPeriod runs f as a subtest for every setup-flag set and signal period, on a new
// ring whose thread gets SIGURG every period while f runs (stop ends the signals).
func forEachSetupAndPeriod(t *testing.T, f func(t *testing.T, r *Ring, stop func())) {
	for _, k := range setupKinds {
		for _, p := range signalPeriods {
			t.Run(fmt.Sprintf("%s/%v", k.name, p), func(t *testing.T) {
				r := newFeatureRing(t, k.feature, k.opts...)
				stop := signalThread(unix.Gettid(), p)
				stopped := false
				stopOnce := func() {
					if !stopped {
						stopped = true
						stop()
					}
				}
				t.Cleanup(stopOnce)
				f(t, r, stopOnce)
			})
		}
	}
}

// wantSignalled fails unless the binding resumed at least one wait that a signal ended: without
// one, the test did not test anything.
func wantSignalled(t *testing.T, r *Ring) {
	t.Helper()
	if r.eintrs == 0 {
		t.Error("no wait was interrupted by a signal and resumed: the signals did not reach the wait")
	}
}

// TestWaitSignalsDoNotEndSubmitAndWaitTimeout: one NOP, SubmitAndWaitTimeout(2, 300 ms) while
// the thread gets SIGURG: it returns 1, ETIME at the deadline, with the NOP's CQE alone.
func TestWaitSignalsDoNotEndSubmitAndWaitTimeout(t *testing.T) {
	const timeout = 300 * time.Millisecond
	forEachSetupAndPeriod(t, func(t *testing.T, r *Ring, stop func()) {
		prep(t, r, 7, func(s *SQE) { s.PrepNop() })
		start := time.Now()
		n, err := r.SubmitAndWaitTimeout(2, timeout)
		el := time.Since(start)
		stop()
		if n != 1 || !errors.Is(err, unix.ETIME) {
			t.Errorf("SubmitAndWaitTimeout(2, %v) = %d, %v after %v; want 1, ETIME at the deadline", timeout, n, err, el)
		}
		if el < timeout || el > timeout+time.Second {
			t.Errorf("returned after %v, want %v to %v", el, timeout, timeout+time.Second)
		}
		if c := drain(r); len(c) != 1 || c[0].UserData != 7 {
			t.Errorf("CQEs %+v, want the NOP's alone", c)
		}
		wantSignalled(t, r)
	})
}

// TestWaitSignalsDoNotEndSubmitAndWait: one NOP and a poll on an empty pipe that is written
// after 300 ms, SubmitAndWait(2) while the thread gets SIGURG: it returns with both CQEs.
func TestWaitSignalsDoNotEndSubmitAndWait(t *testing.T) {
	forEachSetupAndPeriod(t, func(t *testing.T, r *Ring, stop func()) {
		rfd, wfd := newPipe(t)
		prep(t, r, 7, func(s *SQE) { s.PrepNop() })
		prep(t, r, 8, func(s *SQE) { s.PrepPollAdd(rfd, unix.POLLIN) })
		write := time.AfterFunc(300*time.Millisecond, func() { unix.Write(wfd, []byte{1}) })
		t.Cleanup(func() { write.Stop() })
		n, err := r.SubmitAndWait(2)
		stop()
		if n != 2 || err != nil {
			t.Errorf("SubmitAndWait(2) = %d, %v; want 2, nil", n, err)
		}
		if c := byUserData(drain(r)); len(c) != 2 || c[8].Res&int32(unix.POLLIN) == 0 {
			t.Errorf("CQEs %+v, want the NOP's and the poll's (POLLIN)", c)
		}
		wantSignalled(t, r)
	})
}

// TestWaitSignalsDoNotEndSubmitAndWaitMin: one NOP, SubmitAndWaitMin(3, 2 s, min_wait 200 ms)
// while the thread gets SIGURG: it returns 1, nil once the minimum wait is over, not before.
func TestWaitSignalsDoNotEndSubmitAndWaitMin(t *testing.T) {
	const minWait = 200 * time.Millisecond
	forEachSetupAndPeriod(t, func(t *testing.T, r *Ring, stop func()) {
		requireFeature(t, r, FeatMinTimeout)
		prep(t, r, 7, func(s *SQE) { s.PrepNop() })
		start := time.Now()
		n, err := r.SubmitAndWaitMin(3, 2*time.Second, minWait)
		el := time.Since(start)
		stop()
		if n != 1 || err != nil {
			t.Errorf("SubmitAndWaitMin(3, 2s, %v) = %d, %v; want 1, nil", minWait, n, err)
		}
		if el < minWait || el > minWait+time.Second {
			t.Errorf("returned after %v, want %v to %v", el, minWait, minWait+time.Second)
		}
		wantSignalled(t, r)
	})
}

// TestWaitTimeoutRequestEndsWaitDespiteSignals: a 50 ms TIMEOUT request in flight still ends
// SubmitAndWaitTimeout(2, 2 s) while the thread gets SIGURG: it returns 1, nil after at least
// 50 ms (and well before 2 s), with the TIMEOUT's CQE alone.
func TestWaitTimeoutRequestEndsWaitDespiteSignals(t *testing.T) {
	forEachSetupAndPeriod(t, func(t *testing.T, r *Ring, stop func()) {
		stageTimeoutReq(t, getSQE(t, r), timeoutReqDelay, 1)
		start := time.Now()
		n, err := r.SubmitAndWaitTimeout(2, 2*time.Second)
		el := time.Since(start)
		stop()
		if n != 1 || err != nil {
			t.Errorf("SubmitAndWaitTimeout(2, 2s) = %d, %v; want 1, nil", n, err)
		}
		if el < timeoutReqDelay || el > timeoutReqBound {
			t.Errorf("returned after %v, want %v to %v: the TIMEOUT's completion ends the wait", el, timeoutReqDelay, timeoutReqBound)
		}
		wantOnlyTimeoutCQE(t, drain(r))
	})
}

// TestWaitForgetsReapedTimeout: once a TIMEOUT request's CQE is consumed, its user_data no
// longer ends a wait: a NOP that reuses it, then SubmitAndWaitTimeout(2, 300 ms) while the
// thread gets SIGURG every millisecond, returns 1, ETIME at the deadline.
func TestWaitForgetsReapedTimeout(t *testing.T) {
	const timeout = 300 * time.Millisecond
	r := newTestRing(t)
	stageTimeoutReq(t, getSQE(t, r), time.Millisecond, 1)
	wantOnlyTimeoutCQE(t, collect(t, r, 1))
	if len(r.timeouts) != 0 {
		t.Fatalf("TIMEOUT requests still noted in flight after their CQE was consumed: %v", r.timeouts)
	}
	prep(t, r, 1, func(s *SQE) { s.PrepNop() })
	stop := signalThread(unix.Gettid(), time.Millisecond)
	start := time.Now()
	n, err := r.SubmitAndWaitTimeout(2, timeout)
	el := time.Since(start)
	stop()
	if n != 1 || !errors.Is(err, unix.ETIME) || el < timeout {
		t.Errorf("SubmitAndWaitTimeout(2, %v) = %d, %v after %v; want 1, ETIME at the deadline", timeout, n, err, el)
	}
	wantSignalled(t, r)
}
