package uring

import (
	"testing"
	"time"
)

// waitSleeping polls SQThreadSleeping for up to 2 s.
func waitSleeping(t *testing.T, r *Ring) time.Duration {
	t.Helper()
	start := time.Now()
	for !r.SQThreadSleeping() {
		if time.Since(start) > 2*time.Second {
			t.Fatal("SQPOLL thread never set IORING_SQ_NEED_WAKEUP")
		}
		time.Sleep(time.Millisecond)
	}
	return time.Since(start)
}

// TestSQPollSetsNeedWakeupAfterIdleAndWakes: an SQPOLL thread with 10 ms idle
// sleeps (NEED_WAKEUP) after its idle time; Submit then wakes it with
// IORING_ENTER_SQ_WAKEUP and the submission completes.
func TestSQPollSetsNeedWakeupAfterIdleAndWakes(t *testing.T) {
	r := newTestRing(t, WithSQPoll(10*time.Millisecond), WithEntries(8))
	if r.SetupFlags()&SetupSQPoll == 0 {
		t.Fatalf("setup flags %#x lack SQPOLL", r.SetupFlags())
	}
	for round := 0; round < 3; round++ {
		slept := waitSleeping(t, r)
		before := r.sqWakeups
		prep(t, r, uint64(round), func(s *SQE) { s.PrepNop() })
		if n, err := r.Submit(); n != 1 || err != nil {
			t.Fatalf("Submit = %d, %v", n, err)
		}
		if r.sqWakeups != before+1 {
			t.Errorf("round %d: Submit made %d wake-ups, want 1", round, r.sqWakeups-before)
		}
		if c := collect(t, r, 1)[0]; c.UserData != uint64(round) || c.Res != 0 {
			t.Errorf("round %d: CQE %+v", round, c)
		}
		t.Logf("round %d: asleep after %v", round, slept)
	}
}

// TestSQPollAwakeThreadNeedsNoEnter: while the SQ thread is awake, Submit
// makes no wake-up and the SQE is still consumed.
func TestSQPollAwakeThreadNeedsNoEnter(t *testing.T) {
	r := newTestRing(t, WithSQPoll(time.Second), WithEntries(8))
	prep(t, r, 1, func(s *SQE) { s.PrepNop() })
	collect(t, r, 1) // wakes it if it started asleep; now busy for 1 s
	before := r.sqWakeups
	prep(t, r, 2, func(s *SQE) { s.PrepNop() })
	if _, err := r.Submit(); err != nil {
		t.Fatal(err)
	}
	if c := collect(t, r, 1)[0]; c.UserData != 2 {
		t.Errorf("CQE %+v", c)
	}
	if r.sqWakeups != before {
		t.Errorf("Submit woke an awake SQ thread")
	}
}

// TestSQPollThreadCPUAndAttachWQ: SQ_AFF pins the thread to CPU 0, and a
// second ring attached with ATTACH_WQ shares it; both complete NOPs.
func TestSQPollThreadCPUAndAttachWQ(t *testing.T) {
	a := newTestRing(t, WithSQPoll(10*time.Millisecond), WithSQThreadCPU(0), WithEntries(8))
	if a.SetupFlags()&SetupSQAff == 0 {
		t.Fatalf("setup flags %#x lack SQ_AFF", a.SetupFlags())
	}
	b := newTestRing(t, WithSQPoll(10*time.Millisecond), WithAttachWQ(a.Fd()), WithEntries(8))
	if b.SetupFlags()&SetupAttachWQ == 0 {
		t.Fatalf("setup flags %#x lack ATTACH_WQ", b.SetupFlags())
	}
	for _, r := range []*Ring{a, b} {
		prep(t, r, 7, func(s *SQE) { s.PrepNop() })
		if c := collect(t, r, 1)[0]; c.UserData != 7 || c.Res != 0 {
			t.Errorf("CQE %+v", c)
		}
	}
}
