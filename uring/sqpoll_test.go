//go:build linux

package uring

import (
	"testing"
	"time"

	"github.com/ringev/ringev/internal/testutil"
	"golang.org/x/sys/unix"
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

// TestSQPollSubmitAndWaitCountsEachSQEOnce: an SQPOLL ring (idle 1 ms) left to
// fall asleep, one poll on an empty pipe, SubmitAndWait(1) while the thread
// receives SIGURG every 50 µs, the pipe written after 20 ms; 50 rounds. Every
// call returns 1 submitted: the kernel answers each enter of an SQPOLL ring
// with the to_submit it was given, and an SQE the SQ thread has not consumed
// yet when an interrupted wait is resumed must not be counted again.
func TestSQPollSubmitAndWaitCountsEachSQEOnce(t *testing.T) {
	r := newTestRing(t, WithSQPoll(time.Millisecond), WithEntries(8))
	rfd, wfd := newPipe(t)
	stop := signalThread(unix.Gettid(), 50*time.Microsecond)
	defer stop()
	const rounds = 50
	twice := 0
	for round := range rounds {
		waitSleeping(t, r)
		prep(t, r, uint64(round), func(s *SQE) { s.PrepPollAdd(rfd, unix.POLLIN) })
		writer := time.AfterFunc(20*time.Millisecond, func() { unix.Write(wfd, []byte{1}) })
		n, err := r.SubmitAndWait(1)
		writer.Stop()
		if err != nil {
			t.Fatalf("round %d: SubmitAndWait(1): %v", round, err)
		}
		if n != 1 {
			twice++
			t.Errorf("round %d: SubmitAndWait(1) = %d submitted, want 1", round, n)
		}
		if c := collect(t, r, 1)[0]; c.UserData != uint64(round) || c.Res&unix.POLLIN == 0 {
			t.Fatalf("round %d: CQE %+v, want the poll's with POLLIN", round, c)
		}
		testutil.Drain(t, rfd)
	}
	t.Logf("%d of %d calls counted the SQE more than once; EINTR retries: %d", twice, rounds, r.eintrs)
}

// TestSQPollSubmitCountsEachSQEOnce: on an SQPOLL ring, a Submit right after
// the one that published (and woke the sleeping thread for) a NOP reports 0,
// not the NOP again while the SQ thread has not picked it up; 20 rounds.
func TestSQPollSubmitCountsEachSQEOnce(t *testing.T) {
	r := newTestRing(t, WithSQPoll(time.Millisecond), WithEntries(8))
	const rounds = 20
	again := 0
	for round := range rounds {
		waitSleeping(t, r)
		prep(t, r, uint64(round), func(s *SQE) { s.PrepNop() })
		n1, err1 := r.Submit()
		n2, err2 := r.Submit()
		if err1 != nil || err2 != nil {
			t.Fatalf("round %d: Submit: %v, %v", round, err1, err2)
		}
		if n1 != 1 || n2 != 0 {
			again++
			t.Errorf("round %d: Submit, Submit = %d, %d; want 1, 0", round, n1, n2)
		}
		if c := collect(t, r, 1)[0]; c.UserData != uint64(round) {
			t.Fatalf("round %d: CQE %+v", round, c)
		}
	}
	t.Logf("%d of %d rounds counted the NOP twice", again, rounds)
}
