//go:build linux

package uring

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"runtime"
	"testing"
	"time"

	"github.com/ringev/ringev/internal/testutil"
	"golang.org/x/sys/unix"
)

// newTestDeputy creates an SQPOLL ring (idle 1 ms, the kernel's smallest) with
// deputy submission of at most n SQEs; both are closed at the end of the test.
// It skips, naming the feature, when IORING_SETUP_SQPOLL is unavailable.
func newTestDeputy(t *testing.T, n int, opts ...Option) *Deputy {
	t.Helper()
	lockThread(t)
	opts = append([]Option{WithSQPoll(time.Millisecond)}, opts...)
	r, err := New(opts...)
	testutil.SkipIfIOUringUnavailable(t, err, "IORING_SETUP_SQPOLL (5.1)")
	if err != nil {
		t.Fatalf("New(WithSQPoll): %v", err)
	}
	t.Cleanup(func() { r.Close() })
	d, err := NewDeputy(r, n)
	if err != nil {
		t.Fatalf("NewDeputy(%d): %v", n, err)
	}
	t.Cleanup(func() {
		if err := d.Close(); err != nil {
			t.Errorf("Deputy.Close: %v", err)
		}
	})
	return d
}

// lockThread locks the test goroutine to its thread for the test (the thread rule).
func lockThread(t *testing.T) {
	runtime.LockOSThread()
	t.Cleanup(runtime.UnlockOSThread)
}

// waitAsleep waits (bounded) until the SQ thread has gone to sleep.
func waitAsleep(t *testing.T, d *Deputy) {
	t.Helper()
	deadline := time.Now().Add(waitTimeout)
	for !d.Ring().SQThreadSleeping() {
		if time.Now().After(deadline) {
			t.Fatalf("SQ thread not asleep after %v (idle 1 ms)", waitTimeout)
		}
		time.Sleep(200 * time.Microsecond)
	}
}

// reapDeputy waits (bounded) until n CQEs reached the caller and returns copies.
func reapDeputy(t *testing.T, d *Deputy, n int) []CQE {
	t.Helper()
	var out []CQE
	deadline := time.Now().Add(waitTimeout)
	for len(out) < n {
		for cqe := d.PeekCQE(); cqe != nil; cqe = d.PeekCQE() {
			out = append(out, *cqe)
			d.CQESeen()
		}
		if len(out) >= n {
			break
		}
		left := time.Until(deadline)
		if left <= 0 {
			t.Fatalf("reaped %d CQEs of %d within %v: %+v", len(out), n, waitTimeout, out)
		}
		if _, err := d.SubmitAndWaitTimeout(1, left); err != nil && !errors.Is(err, unix.ETIME) {
			t.Fatalf("SubmitAndWaitTimeout: %v", err)
		}
	}
	if cqe := d.PeekCQE(); cqe != nil {
		t.Fatalf("extra CQE after %d: %+v", n, *cqe)
	}
	return out
}

func stageNops(t *testing.T, d *Deputy, first uint64, n int) {
	t.Helper()
	for i := range n {
		sqe := d.GetSQE()
		if sqe == nil {
			t.Fatalf("GetSQE: staging full after %d", i)
		}
		sqe.PrepNop()
		sqe.SetUserData(first + uint64(i))
	}
}

// TestDeputyNeedsSQPollRingAndN: NewDeputy rejects a ring without SQPOLL and n < 1 with EINVAL.
func TestDeputyNeedsSQPollRingAndN(t *testing.T) {
	r := newTestRing(t)
	if _, err := NewDeputy(r, 4); !errors.Is(err, unix.EINVAL) {
		t.Errorf("NewDeputy(non-SQPOLL ring) = %v, want EINVAL", err)
	}
	d := newTestDeputy(t, 1)
	if _, err := NewDeputy(d.Ring(), 0); !errors.Is(err, unix.EINVAL) {
		t.Errorf("NewDeputy(n=0) = %v, want EINVAL", err)
	}
	if d.Companion().SetupFlags()&(SetupSQPoll|SetupDeferTaskrun) != 0 {
		t.Errorf("companion setup flags %#x: want neither SQPOLL nor DEFER_TASKRUN", d.Companion().SetupFlags())
	}
}

// TestDeputySubmitsWhileSQThreadSleeps: with the SQ thread asleep, a NOP is
// complete when Submit returns, without waiting for the thread's wake-up.
func TestDeputySubmitsWhileSQThreadSleeps(t *testing.T) {
	d := newTestDeputy(t, 4)
	waitAsleep(t, d)
	stageNops(t, d, 7, 1)
	if n, err := d.Submit(); n != 1 || err != nil {
		t.Fatalf("Submit = %d, %v; want 1, nil", n, err)
	}
	// No wait, no syscall: the CQE was posted in our own io_uring_enter.
	cqe := d.PeekCQE()
	if cqe == nil {
		t.Fatal("no CQE right after Submit: the NOP waited for the SQ thread")
	}
	if cqe.UserData != 7 || cqe.Res != 0 {
		t.Errorf("CQE %+v, want user_data 7 res 0", *cqe)
	}
	d.CQESeen()
	st := d.Stats()
	if st.Asleep != 1 || st.DeputySQEs != 1 || st.SQPollSQEs != 0 || st.Wakeups != 1 {
		t.Errorf("stats %+v: want Asleep 1, DeputySQEs 1, SQPollSQEs 0, Wakeups 1", st)
	}
	// Once awake, the SQ thread takes the next SQE itself.
	if !d.Ring().SQThreadSleeping() {
		stageNops(t, d, 8, 1)
		if _, err := d.Submit(); err != nil {
			t.Fatal(err)
		}
		reapDeputy(t, d, 1)
		if st := d.Stats(); st.SQPollSQEs+st.DeputySQEs != 2 {
			t.Errorf("stats %+v: want 2 SQEs in all", st)
		}
	}
}

// TestDeputyCompanionSQEDoesNotWakeTheSQThread: an SQE from
// GetCompanionSQE, submitted while the SQ thread sleeps, completes through
// the companion ring and leaves the thread asleep.
func TestDeputyCompanionSQEDoesNotWakeTheSQThread(t *testing.T) {
	d := newTestDeputy(t, 4)
	waitAsleep(t, d)
	sqe := d.GetCompanionSQE()
	sqe.PrepNop()
	sqe.SetUserData(9)
	if n, err := d.Submit(); n != 1 || err != nil {
		t.Fatalf("Submit = %d, %v; want 1, nil", n, err)
	}
	if !d.Ring().SQThreadSleeping() {
		t.Errorf("the SQ thread was woken by a companion SQE: %+v", d.Stats())
	}
	if cqe := reapDeputy(t, d, 1); cqe[0].UserData != 9 || cqe[0].Res != 0 {
		t.Errorf("CQE %+v, want user_data 9 res 0", cqe[0])
	}
	if st := d.Stats(); st.CompanionSQEs != 1 || st.DeputySQEs != 0 || st.SQPollSQEs != 0 || st.Wakeups != 0 {
		t.Errorf("stats %+v: want CompanionSQEs 1 and nothing else", st)
	}
}

// TestDeputyCompanionSQEGoesToTheCompanionRingBesideSQPollRequests: a
// companion SQE staged behind one for the SQPOLL ring goes to the companion
// ring, and a wait on both rings (ppoll on the eventfd) ends when the
// companion request completes after an event from another goroutine.
func TestDeputyCompanionSQEGoesToTheCompanionRingBesideSQPollRequests(t *testing.T) {
	d := newTestDeputy(t, 1)
	quiet, _ := newPipe(t)
	rfd, wfd := newPipe(t)
	stageNops(t, d, 1, 1) // to the companion ring if the SQ thread sleeps: N is 1
	sqe := d.GetSQE()     // so this one goes to the SQPOLL ring
	sqe.PrepPollAdd(quiet, unix.POLLIN)
	sqe.SetUserData(2)
	sqe = d.GetCompanionSQE()
	sqe.PrepPollAdd(rfd, unix.POLLIN)
	sqe.SetUserData(3)
	if _, err := d.Submit(); err != nil {
		t.Fatal(err)
	}
	if st := d.Stats(); st.CompanionSQEs != 1 || st.SQPollSQEs < 1 {
		t.Fatalf("stats %+v: want CompanionSQEs 1 and the quiet poll on the SQPOLL ring", st)
	}
	if cqe := reapDeputy(t, d, 1); cqe[0].UserData != 1 {
		t.Fatalf("CQE %+v, want the NOP's (user_data 1)", cqe[0])
	}
	go unix.Write(wfd, []byte{1})
	if cqe := reapDeputy(t, d, 1); cqe[0].UserData != 3 || cqe[0].Res&unix.POLLIN == 0 {
		t.Errorf("CQE %+v, want user_data 3 with POLLIN", cqe[0])
	}
	sqe = d.GetSQE()
	sqe.PrepPollRemove(2)
	sqe.SetUserData(4)
	check(t, reapAfterSubmit(t, d, map[uint64]int32{2: -int32(unix.ECANCELED), 4: 0}))
}

// TestDeputyRetriesWhatAFailedSubmitLeftInTheCompanionRing: SQEs that a Submit copied to
// the companion ring and could not submit (EEXIST: another thread entered the SINGLE_ISSUER
// companion) complete after the owner's next SubmitAndWaitTimeout, even when that call's own
// SQEs all go to the SQPOLL ring because the companion's SQ is full of them.
func TestDeputyRetriesWhatAFailedSubmitLeftInTheCompanionRing(t *testing.T) {
	d := newTestDeputy(t, 4, WithEntries(4))
	requireSingleIssuer(t, d.Companion()) // the EEXIST that leaves SQEs behind
	waitAsleep(t, d)
	stageNops(t, d, 1, 4) // all four to the companion ring: N is 4
	var err error
	onOtherThread(t, func() { _, err = d.Submit() })
	if !errors.Is(err, unix.EEXIST) {
		t.Fatalf("Submit from another thread: %v, want EEXIST", err)
	}
	if st := d.Stats(); st.DeputySQEs != 4 || d.Companion().SQReady() != 4 {
		t.Fatalf("stats %+v, companion SQ %d: want the four NOPs copied and left there", st, d.Companion().SQReady())
	}
	stageNops(t, d, 5, 1) // the companion's SQ is full: to the SQPOLL ring
	if _, err := d.SubmitAndWaitTimeout(5, waitTimeout); err != nil {
		t.Fatalf("SubmitAndWaitTimeout(5, %v): %v (the four left in the companion's SQ never submitted?)", waitTimeout, err)
	}
	got := map[uint64]bool{}
	for _, c := range reapDeputy(t, d, 5) {
		got[c.UserData] = true
	}
	if len(got) != 5 {
		t.Errorf("user_data seen %v, want 1 to 5", got)
	}
}

// TestDeputySplitsBurstLargerThanN: of a burst of 3N+1 SQEs while the SQ
// thread sleeps, N complete through the companion ring at once and the rest
// through the SQ thread; every one completes exactly once.
func TestDeputySplitsBurstLargerThanN(t *testing.T) {
	const n = 4
	d := newTestDeputy(t, n)
	waitAsleep(t, d)
	stageNops(t, d, 1, 3*n+1)
	if got, err := d.Submit(); got != 3*n+1 || err != nil {
		t.Fatalf("Submit = %d, %v; want %d, nil", got, err, 3*n+1)
	}
	if ready := d.Companion().CQReady(); ready != n {
		t.Errorf("companion CQ holds %d CQEs right after Submit, want %d", ready, n)
	}
	st := d.Stats()
	if st.DeputySQEs != n || st.SQPollSQEs != 2*n+1 {
		t.Errorf("stats %+v: want DeputySQEs %d, SQPollSQEs %d", st, n, 2*n+1)
	}
	seen := map[uint64]int{}
	for _, c := range reapDeputy(t, d, 3*n+1) {
		seen[c.UserData]++
	}
	for ud := uint64(1); ud <= 3*n+1; ud++ {
		if seen[ud] != 1 {
			t.Errorf("user_data %d completed %d times", ud, seen[ud])
		}
	}
}

// TestDeputyKeepsLinkChainsWhole: a link chain that would straddle the N
// boundary goes to the SQPOLL ring whole.
func TestDeputyKeepsLinkChainsWhole(t *testing.T) {
	d := newTestDeputy(t, 4)
	waitAsleep(t, d)
	stageNops(t, d, 1, 6)
	d.staged[3].Flags |= SQEIOLink // chain: 4 -> 5 -> 6
	d.staged[4].Flags |= SQEIOLink
	if _, err := d.Submit(); err != nil {
		t.Fatal(err)
	}
	if st := d.Stats(); st.DeputySQEs != 3 || st.SQPollSQEs != 3 {
		t.Errorf("stats %+v: want DeputySQEs 3 (the chain not split), SQPollSQEs 3", st)
	}
	reapDeputy(t, d, 6)
}

// TestDeputyCancelReachesEitherRing: cancels and poll removes reach polls on
// the companion ring and on the SQPOLL ring, and each gives one CQE.
func TestDeputyCancelReachesEitherRing(t *testing.T) {
	d := newTestDeputy(t, 2)
	rfd, _ := newPipe(t)
	waitAsleep(t, d)
	for ud := uint64(1); ud <= 4; ud++ { // 1, 2: companion; 3, 4: SQPOLL ring
		sqe := d.GetSQE()
		sqe.PrepPollAdd(rfd, unix.POLLIN)
		sqe.SetUserData(ud)
	}
	if _, err := d.Submit(); err != nil {
		t.Fatal(err)
	}
	if st := d.Stats(); st.DeputySQEs != 2 || st.SQPollSQEs != 2 {
		t.Fatalf("stats %+v: want 2 polls on each ring", st)
	}
	prep := func(ud uint64, f func(*SQE)) {
		sqe := d.GetSQE()
		f(sqe)
		sqe.SetUserData(ud)
	}
	prep(101, func(s *SQE) { s.PrepCancel(1, 0) })
	prep(103, func(s *SQE) { s.PrepCancel(3, 0) })
	prep(104, func(s *SQE) { s.PrepPollRemove(4) })
	prep(199, func(s *SQE) { s.PrepCancel(99, 0) })
	ecanceled := -int32(unix.ECANCELED)
	check(t, reapAfterSubmit(t, d, map[uint64]int32{
		1: ecanceled, 3: ecanceled, 4: ecanceled, 101: 0, 103: 0, 104: 0, 199: -int32(unix.ENOENT),
	}))
	// Separately: a cancelled poll stays findable until its own CQE is
	// posted, and an fd match would count it again (the kernel's doing).
	prep(200, func(s *SQE) { s.PrepCancelFd(rfd, AsyncCancelAll) }) // only poll 2 left
	check(t, reapAfterSubmit(t, d, map[uint64]int32{2: ecanceled, 200: 1}))
	if st := d.Stats(); st.Cancels != 5 {
		t.Errorf("stats %+v: want 5 merged cancels", st)
	}
}

// reapAfterSubmit submits, reaps len(want) CQEs and returns an error string
// per mismatch with want (user_data -> res), or per CQE that came twice.
func reapAfterSubmit(t *testing.T, d *Deputy, want map[uint64]int32) []string {
	t.Helper()
	if _, err := d.Submit(); err != nil {
		t.Fatal(err)
	}
	var bad []string
	got := map[uint64]int32{}
	for _, c := range reapDeputy(t, d, len(want)) {
		if _, dup := got[c.UserData]; dup {
			bad = append(bad, fmt.Sprintf("user_data %d completed twice", c.UserData))
		}
		got[c.UserData] = c.Res
	}
	for ud, res := range want {
		if r, ok := got[ud]; !ok || r != res {
			bad = append(bad, fmt.Sprintf("user_data %d: res %d (present %v), want %d", ud, r, ok, res))
		}
	}
	return bad
}

func check(t *testing.T, bad []string) {
	t.Helper()
	for _, b := range bad {
		t.Error(b)
	}
}

// TestMergeCancel: the merge rule of the two halves of a duplicated cancel.
func TestMergeCancel(t *testing.T) {
	enoent, ealready, einval := -int32(unix.ENOENT), -int32(unix.EALREADY), -int32(unix.EINVAL)
	for _, tc := range []struct {
		all  bool
		a, b int32
		want int32
	}{
		{false, 0, enoent, 0},
		{false, enoent, 0, 0},
		{false, enoent, enoent, enoent},
		{false, enoent, ealready, ealready},
		{false, einval, einval, einval},
		{true, 2, 3, 5},
		{true, enoent, 1, 1},
		{true, enoent, enoent, enoent},
	} {
		c := deputyCancel{all: tc.all, res: [2]int32{tc.a, tc.b}}
		if got := mergeCancel(&c); got != tc.want {
			t.Errorf("mergeCancel(all %v, %d, %d) = %d, want %d", tc.all, tc.a, tc.b, got, tc.want)
		}
	}
}

// TestDeputyNoDoubleCompletion: 100,000 NOPs in random bursts, with random
// cancels and pauses that let the SQ thread sleep, each complete exactly once.
func TestDeputyNoDoubleCompletion(t *testing.T) {
	const total = 100_000
	d := newTestDeputy(t, 4, WithEntries(64))
	rng := rand.New(rand.NewPCG(1, 2))
	seen := make([]uint8, total+1)
	var cancels, cancelsDone int
	done := 0
	reap := func() {
		for cqe := d.PeekCQE(); cqe != nil; cqe = d.PeekCQE() {
			ud := cqe.UserData
			switch {
			case ud >= 1 && ud <= total:
				seen[ud]++
				done++
			case ud == 1<<40:
				cancelsDone++
			default:
				t.Fatalf("unexpected CQE %+v", *cqe)
			}
			d.CQESeen()
		}
	}
	deadline := time.Now().Add(30 * time.Second)
	next := uint64(1)
	for next <= total {
		if time.Now().After(deadline) {
			t.Fatalf("not done within 30 s: %d submitted, %d completed", next-1, done)
		}
		if rng.IntN(3000) == 0 {
			waitAsleep(t, d)
		}
		burst := 1 + rng.IntN(20)
		for i := 0; i < burst && next <= total; i++ {
			sqe := d.GetSQE()
			if sqe == nil {
				break
			}
			if rng.IntN(50) == 0 {
				sqe.PrepCancel(1+rng.Uint64N(next), 0)
				sqe.SetUserData(1 << 40)
				cancels++
				continue
			}
			sqe.PrepNop()
			sqe.SetUserData(next)
			next++
		}
		if _, err := d.Submit(); err != nil {
			t.Fatalf("Submit: %v", err)
		}
		reap()
		if inflight := int(next-1) - done + cancels - cancelsDone; inflight > 48 {
			if _, err := d.SubmitAndWaitTimeout(1, waitTimeout); err != nil {
				t.Fatalf("SubmitAndWaitTimeout: %v (in flight %d)", err, inflight)
			}
		}
	}
	for done < total || cancelsDone < cancels {
		if time.Now().After(deadline) {
			t.Fatalf("drain: %d of %d NOPs, %d of %d cancels", done, total, cancelsDone, cancels)
		}
		if _, err := d.SubmitAndWaitTimeout(1, waitTimeout); err != nil && !errors.Is(err, unix.ETIME) {
			t.Fatal(err)
		}
		reap()
	}
	for ud := 1; ud <= total; ud++ {
		if seen[ud] != 1 {
			t.Fatalf("user_data %d completed %d times", ud, seen[ud])
		}
	}
	st := d.Stats()
	t.Logf("stats %+v", st)
	if st.DeputySQEs == 0 || st.SQPollSQEs == 0 {
		t.Errorf("stats %+v: want SQEs through both rings", st)
	}
}
