//go:build linux

package uring

import (
	"errors"
	"runtime"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// requireDeferTaskrun skips unless the ring got SINGLE_ISSUER|DEFER_TASKRUN.
func requireDeferTaskrun(t *testing.T, r *Ring) {
	t.Helper()
	if want := SetupSingleIssuer | SetupDeferTaskrun; r.SetupFlags()&want != want {
		t.Skipf("IORING_SETUP_SINGLE_ISSUER|IORING_SETUP_DEFER_TASKRUN (6.1) not granted; got setup flags %#x", r.SetupFlags())
	}
}

// requireSingleIssuer skips unless the ring got SINGLE_ISSUER.
func requireSingleIssuer(t *testing.T, r *Ring) {
	t.Helper()
	if r.SetupFlags()&SetupSingleIssuer == 0 {
		t.Skipf("IORING_SETUP_SINGLE_ISSUER (6.0) not granted; got setup flags %#x", r.SetupFlags())
	}
}

// onOtherThread runs f on a goroutine locked to another OS thread and waits.
func onOtherThread(t *testing.T, f func()) {
	t.Helper()
	owner := unix.Gettid()
	done := make(chan int)
	go func() {
		runtime.LockOSThread()
		defer runtime.UnlockOSThread()
		f()
		done <- unix.Gettid()
	}()
	select {
	case tid := <-done:
		if tid == owner {
			t.Fatalf("other goroutine ran on the owner thread %d", tid)
		}
	case <-time.After(waitTimeout):
		t.Fatal("call from another thread hung")
	}
}

// newDeferRingWithReadyPoll returns a DEFER_TASKRUN ring with a poll (user_data 1) submitted on
// a pipe that has since become readable: its completion work is deferred until the owner
// enters with GETEVENTS.
func newDeferRingWithReadyPoll(t *testing.T) *Ring {
	t.Helper()
	r := newTestRing(t)
	requireDeferTaskrun(t, r)
	rfd, wfd := newPipe(t)
	prep(t, r, 1, func(s *SQE) { s.PrepPollAdd(rfd, unix.POLLIN) })
	if _, err := r.Submit(); err != nil {
		t.Fatal(err)
	}
	if _, err := unix.Write(wfd, []byte("x")); err != nil {
		t.Fatal(err)
	}
	return r
}

// TestDeferTaskrunCompletionsAppearOnlyAfterOwnerWaits: with DEFER_TASKRUN a
// poll that became ready posts its CQE only when the owner enters with GETEVENTS.
func TestDeferTaskrunCompletionsAppearOnlyAfterOwnerWaits(t *testing.T) {
	r := newDeferRingWithReadyPoll(t)
	time.Sleep(30 * time.Millisecond)
	if n := r.CQReady(); n != 0 {
		t.Fatalf("CQReady = %d before the owner waited, want 0", n)
	}
	c := collect(t, r, 1)[0]
	if c.UserData != 1 || c.Res&unix.POLLIN == 0 {
		t.Errorf("CQE %+v, want user_data 1 with POLLIN", c)
	}
}

// TestSingleIssuerOtherThreadGetsEEXIST: submitting or waiting on a
// SINGLE_ISSUER|DEFER_TASKRUN ring from another thread fails at once with an
// error wrapping EEXIST (no hang); the owner then submits the SQE normally.
func TestSingleIssuerOtherThreadGetsEEXIST(t *testing.T) {
	r := newTestRing(t)
	requireDeferTaskrun(t, r)
	var submitErr, waitErr error
	onOtherThread(t, func() {
		sqe := r.GetSQE()
		sqe.PrepNop()
		sqe.SetUserData(5)
		_, submitErr = r.Submit()
		_, waitErr = r.SubmitAndWaitTimeout(1, 50*time.Millisecond)
	})
	if !errors.Is(submitErr, unix.EEXIST) {
		t.Errorf("Submit from another thread: %v, want EEXIST", submitErr)
	}
	if !errors.Is(waitErr, unix.EEXIST) {
		t.Errorf("wait from another thread: %v, want EEXIST", waitErr)
	}
	t.Logf("error: %v", submitErr)
	if c := collect(t, r, 1)[0]; c.UserData != 5 || c.Res != 0 {
		t.Errorf("owner's reap: %+v, want the NOP (5, 0)", c)
	}
}

// TestSubmitOnDeferTaskrunRingRunsDeferredCompletions: Submit on a DEFER_TASKRUN ring (the
// one-enter fast path) also runs the deferred completion work, without waiting: a poll that
// became ready is in the CQ when Submit returns.
func TestSubmitOnDeferTaskrunRingRunsDeferredCompletions(t *testing.T) {
	r := newDeferRingWithReadyPoll(t)
	if n := r.CQReady(); n != 0 {
		t.Fatalf("CQReady = %d before the owner entered, want 0", n)
	}
	if n, err := r.Submit(); err != nil || n != 0 {
		t.Fatalf("Submit with nothing queued = %d, %v; want 0, nil", n, err)
	}
	c, ok := r.PopCQE()
	if !ok || c.UserData != 1 || c.Res&unix.POLLIN == 0 {
		t.Fatalf("after Submit: %+v, %v; want the poll's CQE (user_data 1, POLLIN)", c, ok)
	}
}
