//go:build linux

package uring

import (
	"errors"
	"runtime"
	"testing"
	"time"

	"github.com/ringev/ringev/internal/testutil"
	"golang.org/x/sys/unix"
)

// waitTimeout bounds every wait in these tests.
const waitTimeout = 5 * time.Second

// newTestRing locks the test goroutine to its thread (the SINGLE_ISSUER /
// DEFER_TASKRUN thread rule), creates a ring and closes it at the end. It
// skips the test, naming the cause, when io_uring is unavailable.
func newTestRing(t *testing.T, opts ...Option) *Ring {
	t.Helper()
	return newFeatureRing(t, "", opts...)
}

// newFeatureRing is newTestRing for setup flags the kernel may refuse: it also skips, naming
// feature, when New fails with EINVAL (flags this kernel does not know) or EPERM (SQPOLL without
// privilege before 5.11).
func newFeatureRing(t *testing.T, feature string, opts ...Option) *Ring {
	t.Helper()
	runtime.LockOSThread()
	t.Cleanup(runtime.UnlockOSThread)
	r, err := New(opts...)
	if feature != "" && (errors.Is(err, unix.EINVAL) || errors.Is(err, unix.EPERM)) {
		t.Skipf("%s not granted: %v", feature, err)
	}
	testutil.SkipIfIOUringUnavailable(t, err, "a ring")
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	t.Cleanup(func() {
		if err := r.Close(); err != nil {
			t.Errorf("Close: %v", err)
		}
	})
	return r
}

// newPipe returns a pipe closed at the end of the test.
func newPipe(t *testing.T) (rfd, wfd int) {
	t.Helper()
	var p [2]int
	if err := unix.Pipe2(p[:], unix.O_CLOEXEC|unix.O_NONBLOCK); err != nil {
		t.Fatalf("pipe2: %v", err)
	}
	t.Cleanup(func() { unix.Close(p[0]); unix.Close(p[1]) })
	return p[0], p[1]
}

func getSQE(t *testing.T, r *Ring) *SQE {
	t.Helper()
	sqe := r.GetSQE()
	if sqe == nil {
		t.Fatal("GetSQE: SQ full")
	}
	return sqe
}

// TestNewReportsSetupFlags: by default New gets SINGLE_ISSUER|DEFER_TASKRUN (6.1).
func TestNewReportsSetupFlags(t *testing.T) {
	r := newTestRing(t)
	requireDeferTaskrun(t, r)
	if r.Fd() < 0 {
		t.Errorf("Fd() = %d", r.Fd())
	}
	if r.Features()&FeatExtArg == 0 {
		t.Errorf("Features() = %#x lacks IORING_FEAT_EXT_ARG", r.Features())
	}
}

// TestWithFlagsSkipsTrial: WithFlags(0) gets exactly no setup flags.
func TestWithFlagsSkipsTrial(t *testing.T) {
	r := newTestRing(t, WithFlags(0), WithEntries(8))
	if got := r.SetupFlags(); got != 0 {
		t.Errorf("SetupFlags() = %#x, want 0", got)
	}
}

// TestWithFlagsRejectsLayoutFlags: flags that change the ring layout fail with EINVAL.
func TestWithFlagsRejectsLayoutFlags(t *testing.T) {
	r, err := New(WithFlags(SetupCQE32))
	if err == nil {
		r.Close()
		t.Fatal("New(WithFlags(SetupCQE32)) succeeded")
	}
	if !errors.Is(err, unix.EINVAL) {
		t.Errorf("err = %v, want EINVAL", err)
	}
}

// TestCloseIsIdempotent: a second Close returns nil and the ring refuses work.
func TestCloseIsIdempotent(t *testing.T) {
	r := newTestRing(t)
	if err := r.Close(); err != nil {
		t.Fatalf("first Close: %v", err)
	}
	if err := r.Close(); err != nil {
		t.Fatalf("second Close: %v", err)
	}
	if r.Fd() != -1 || r.GetSQE() != nil || r.PeekCQE() != nil {
		t.Errorf("closed ring still usable: fd %d", r.Fd())
	}
	if _, err := r.Submit(); !errors.Is(err, unix.EBADF) {
		t.Errorf("Submit after Close: %v, want EBADF", err)
	}
}

// TestGetSQEReturnsNilWhenSQFull: GetSQE gives nil once every SQE is taken, and works again after Submit.
func TestGetSQEReturnsNilWhenSQFull(t *testing.T) {
	r := newTestRing(t, WithEntries(4))
	for i := 0; i < 4; i++ {
		getSQE(t, r).PrepNop()
	}
	if r.GetSQE() != nil {
		t.Fatal("GetSQE on a full SQ returned an SQE")
	}
	if n, err := r.Submit(); n != 4 || err != nil {
		t.Fatalf("Submit = %d, %v; want 4, nil", n, err)
	}
	if r.GetSQE() == nil {
		t.Fatal("GetSQE after Submit returned nil")
	}
}

// TestNopCompletesWithUserData: a NOP completes with Res 0 and its user_data.
func TestNopCompletesWithUserData(t *testing.T) {
	r := newTestRing(t)
	sqe := getSQE(t, r)
	sqe.PrepNop()
	sqe.SetUserData(0xdeadbeef)
	cqes := collect(t, r, 1)
	if cqes[0].UserData != 0xdeadbeef || cqes[0].Res != 0 {
		t.Errorf("CQE = %+v, want UserData 0xdeadbeef, Res 0", cqes[0])
	}
}

// TestPollAddCompletesWhenPipeWritten: a POLLIN poll on a pipe completes once it is written.
func TestPollAddCompletesWhenPipeWritten(t *testing.T) {
	r := newTestRing(t)
	rfd, wfd := newPipe(t)
	sqe := getSQE(t, r)
	sqe.PrepPollAdd(rfd, unix.POLLIN)
	sqe.SetUserData(7)
	if n, err := r.Submit(); n != 1 || err != nil {
		t.Fatalf("Submit = %d, %v; want 1, nil", n, err)
	}
	if _, err := r.SubmitAndWaitTimeout(1, 20*time.Millisecond); !errors.Is(err, unix.ETIME) {
		t.Fatalf("poll on an empty pipe: wait err = %v, want ETIME (CQE %+v)", err, r.PeekCQE())
	}
	if _, err := unix.Write(wfd, []byte("x")); err != nil {
		t.Fatalf("write: %v", err)
	}
	cqes := collect(t, r, 1)
	if cqes[0].UserData != 7 || cqes[0].Res < 0 || cqes[0].Res&unix.POLLIN == 0 {
		t.Errorf("CQE = %+v, want UserData 7 and POLLIN in Res", cqes[0])
	}
}

// TestPollMultishotSetsMore: a multishot poll's CQE carries IORING_CQE_F_MORE.
func TestPollMultishotSetsMore(t *testing.T) {
	r := newTestRing(t)
	rfd, wfd := newPipe(t)
	if _, err := unix.Write(wfd, []byte("x")); err != nil {
		t.Fatalf("write: %v", err)
	}
	sqe := getSQE(t, r)
	sqe.PrepPollMultishot(rfd, unix.POLLIN)
	sqe.SetUserData(9)
	cqes := collect(t, r, 1)
	if cqes[0].UserData != 9 || cqes[0].Res&unix.POLLIN == 0 || cqes[0].Flags&CQEFMore == 0 {
		t.Errorf("CQE = %+v, want UserData 9, POLLIN, CQEFMore", cqes[0])
	}
}

// TestPollRemoveCancelsPendingPoll: POLL_REMOVE completes a pending poll with -ECANCELED.
func TestPollRemoveCancelsPendingPoll(t *testing.T) {
	r := newTestRing(t)
	rfd, _ := newPipe(t)
	sqe := getSQE(t, r)
	sqe.PrepPollAdd(rfd, unix.POLLIN)
	sqe.SetUserData(1)
	if _, err := r.Submit(); err != nil {
		t.Fatalf("Submit: %v", err)
	}
	sqe = getSQE(t, r)
	sqe.PrepPollRemove(1)
	sqe.SetUserData(2)
	res := map[uint64]int32{}
	for _, c := range collect(t, r, 2) {
		res[c.UserData] = c.Res
	}
	if res[1] != -int32(unix.ECANCELED) || res[2] != 0 {
		t.Errorf("results by user_data = %v, want 1: -ECANCELED, 2: 0", res)
	}
}

// TestCancelFdCancelsPendingPoll: ASYNC_CANCEL keyed on the fd cancels a pending poll.
func TestCancelFdCancelsPendingPoll(t *testing.T) {
	testutil.SkipUnlessKernel(t, 5, 19, "IORING_ASYNC_CANCEL_FD")
	r := newTestRing(t)
	rfd, _ := newPipe(t)
	sqe := getSQE(t, r)
	sqe.PrepPollAdd(rfd, unix.POLLIN)
	sqe.SetUserData(1)
	if _, err := r.Submit(); err != nil {
		t.Fatalf("Submit: %v", err)
	}
	sqe = getSQE(t, r)
	sqe.PrepCancelFd(rfd, AsyncCancelAll)
	sqe.SetUserData(2)
	res := map[uint64]int32{}
	for _, c := range collect(t, r, 2) {
		res[c.UserData] = c.Res
	}
	if res[1] != -int32(unix.ECANCELED) || res[2] != 1 {
		t.Errorf("results by user_data = %v, want 1: -ECANCELED, 2: 1 (one cancelled)", res)
	}
}

// TestSubmitAndWaitTimeoutWithNothingSubmittedReturnsETIME: an empty wait times out with ETIME.
func TestSubmitAndWaitTimeoutWithNothingSubmittedReturnsETIME(t *testing.T) {
	r := newTestRing(t)
	start := time.Now()
	n, err := r.SubmitAndWaitTimeout(1, 50*time.Millisecond)
	if n != 0 || !errors.Is(err, unix.ETIME) {
		t.Errorf("SubmitAndWaitTimeout = %d, %v; want 0, ETIME", n, err)
	}
	if elapsed := time.Since(start); elapsed < 40*time.Millisecond || elapsed > waitTimeout {
		t.Errorf("returned after %v, want ~50ms", elapsed)
	}
}

// TestSubmitAndWaitReturnsWhenReady: SubmitAndWait (no timeout) returns once a NOP completes.
func TestSubmitAndWaitReturnsWhenReady(t *testing.T) {
	r := newTestRing(t)
	getSQE(t, r).PrepNop()
	n, err := r.SubmitAndWait(1)
	if n != 1 || err != nil || r.CQReady() != 1 {
		t.Errorf("SubmitAndWait = %d, %v, CQReady %d; want 1, nil, 1", n, err, r.CQReady())
	}
}

// TestPeekOnEmptyCQDoesNotAllocate: PeekCQE/CQReady on an empty CQ allocate nothing.
func TestPeekOnEmptyCQDoesNotAllocate(t *testing.T) {
	r := newTestRing(t)
	allocs := testing.AllocsPerRun(100, func() {
		if r.PeekCQE() != nil || r.CQReady() != 0 {
			t.Fatal("CQ not empty")
		}
	})
	if allocs != 0 {
		t.Errorf("allocs per empty peek = %v, want 0", allocs)
	}
}

// TestPeekOnFullCQDoesNotAllocate: peeking and consuming a full CQ allocates nothing.
func TestPeekOnFullCQDoesNotAllocate(t *testing.T) {
	r := newTestRing(t, WithEntries(4), WithCQEntries(8))
	fill := func() {
		for i := 0; i < 2; i++ {
			for j := 0; j < 4; j++ {
				r.GetSQE().PrepNop()
			}
			if _, err := r.Submit(); err != nil {
				t.Fatalf("Submit: %v", err)
			}
		}
		if _, err := r.SubmitAndWaitTimeout(8, waitTimeout); err != nil {
			t.Fatalf("wait: %v", err)
		}
	}
	// Each run fills the CQ and drains it (AllocsPerRun's uncounted warm-up run included), so
	// every counted run peeks a full CQ.
	allocs := testing.AllocsPerRun(10, func() {
		fill()
		if got := r.CQReady(); got != 8 {
			t.Fatalf("CQReady = %d, want 8 (full)", got)
		}
		n := 0
		for cqe := r.PeekCQE(); cqe != nil; cqe = r.PeekCQE() {
			r.CQESeen()
			n++
		}
		if n != 8 || r.CQReady() != 0 {
			t.Fatalf("drained %d CQEs, CQReady after %d; want 8 and 0", n, r.CQReady())
		}
	})
	if allocs != 0 {
		t.Errorf("allocs filling and draining a full CQ = %v, want 0", allocs)
	}
}

// TestNopCycleDoesNotAllocate: GetSQE + Submit + SubmitAndWaitTimeout + PeekCQE + CQESeen allocate nothing.
func TestNopCycleDoesNotAllocate(t *testing.T) {
	r := newTestRing(t)
	allocs := testing.AllocsPerRun(200, func() {
		sqe := r.GetSQE()
		sqe.PrepNop()
		sqe.SetUserData(5)
		if _, err := r.Submit(); err != nil {
			t.Fatalf("Submit: %v", err)
		}
		if _, err := r.SubmitAndWaitTimeout(1, waitTimeout); err != nil {
			t.Fatalf("wait: %v", err)
		}
		cqe := r.PeekCQE()
		if cqe == nil || cqe.UserData != 5 {
			t.Fatalf("CQE = %+v", cqe)
		}
		r.CQESeen()
	})
	if allocs != 0 {
		t.Errorf("allocs per NOP cycle = %v, want 0", allocs)
	}
}

// TestTimeoutErrorDoesNotAllocate: the ETIME error path allocates nothing.
func TestTimeoutErrorDoesNotAllocate(t *testing.T) {
	r := newTestRing(t)
	allocs := testing.AllocsPerRun(50, func() {
		if _, err := r.SubmitAndWaitTimeout(1, 0); !errors.Is(err, unix.ETIME) {
			t.Fatalf("err = %v, want ETIME", err)
		}
	})
	if allocs != 0 {
		t.Errorf("allocs per timed-out wait = %v, want 0", allocs)
	}
}

// TestEpollWaitReturnsReadyEvent: IORING_OP_EPOLL_WAIT (6.15) on an epoll set with a ready pipe returns 1 event.
func TestEpollWaitReturnsReadyEvent(t *testing.T) {
	testutil.SkipUnlessKernel(t, 6, 15, "IORING_OP_EPOLL_WAIT")
	r := newTestRing(t)
	rfd, wfd := newPipe(t)
	epfd, err := unix.EpollCreate1(unix.EPOLL_CLOEXEC)
	if err != nil {
		t.Fatalf("epoll_create1: %v", err)
	}
	defer unix.Close(epfd)
	if err := unix.EpollCtl(epfd, unix.EPOLL_CTL_ADD, rfd, &unix.EpollEvent{Events: unix.EPOLLIN, Fd: int32(rfd)}); err != nil {
		t.Fatalf("epoll_ctl: %v", err)
	}
	if _, err := unix.Write(wfd, []byte("x")); err != nil {
		t.Fatalf("write: %v", err)
	}
	events := make([]unix.EpollEvent, 4)
	sqe := getSQE(t, r)
	sqe.PrepEpollWait(epfd, events, 0)
	sqe.SetUserData(3)
	c := collect(t, r, 1)[0]
	if c.UserData != 3 || c.Res != 1 {
		t.Fatalf("CQE = %+v, want UserData 3, Res 1", c)
	}
	if events[0].Fd != int32(rfd) || events[0].Events&unix.EPOLLIN == 0 {
		t.Errorf("event = %+v, want fd %d with EPOLLIN", events[0], rfd)
	}
	runtime.KeepAlive(events)
}

// TestPopCQECopiesAndConsumes: PopCQE on an empty CQ reports false; after two NOPs it returns
// their user_data in order, each once, and the CQ is empty again.
func TestPopCQECopiesAndConsumes(t *testing.T) {
	r := newTestRing(t)
	if c, ok := r.PopCQE(); ok {
		t.Fatalf("PopCQE on an empty CQ: %+v, true", c)
	}
	prep(t, r, 7, (*SQE).PrepNop)
	prep(t, r, 8, (*SQE).PrepNop)
	if _, err := r.SubmitAndWaitTimeout(2, waitTimeout); err != nil {
		t.Fatalf("SubmitAndWaitTimeout: %v", err)
	}
	for _, want := range []uint64{7, 8} {
		c, ok := r.PopCQE()
		if !ok || c.UserData != want || c.Res != 0 {
			t.Fatalf("PopCQE = %+v, %v; want user_data %d, res 0", c, ok, want)
		}
	}
	if n := r.CQReady(); n != 0 {
		t.Fatalf("CQReady after popping both = %d, want 0", n)
	}
	if c, ok := r.PopCQE(); ok {
		t.Fatalf("PopCQE after both: %+v, true", c)
	}
}

// TestCQEAtReadsABatchInOrderAcrossTheWrap: CQEAt(i) is the i-th unconsumed CQE, oldest
// first, also when the batch wraps around the end of the CQ ring, and nothing is consumed until
// CQAdvance.
func TestCQEAtReadsABatchInOrderAcrossTheWrap(t *testing.T) {
	r := newTestRing(t, WithEntries(4))
	size := uint32(len(r.cqes))
	ud := uint64(0)
	// Batches of 3 on a CQ of size 8 (a multiple of 3 it is not) start at every offset, so
	// some of them wrap.
	for round := uint32(0); round < size; round++ {
		for i := 0; i < 3; i++ {
			ud++
			prep(t, r, ud, (*SQE).PrepNop)
		}
		if _, err := r.SubmitAndWaitTimeout(3, waitTimeout); err != nil {
			t.Fatalf("SubmitAndWaitTimeout: %v", err)
		}
		n := r.CQReady()
		if n != 3 {
			t.Fatalf("round %d: CQReady = %d, want 3", round, n)
		}
		for i := uint32(0); i < n; i++ {
			if got, want := r.CQEAt(i).UserData, ud-2+uint64(i); got != want {
				t.Fatalf("round %d: CQEAt(%d).UserData = %d, want %d", round, i, got, want)
			}
		}
		if r.CQReady() != 3 {
			t.Fatalf("round %d: CQEAt consumed CQEs", round)
		}
		r.CQAdvance(n)
		if r.CQReady() != 0 {
			t.Fatalf("round %d: CQReady after CQAdvance = %d, want 0", round, r.CQReady())
		}
	}
}
