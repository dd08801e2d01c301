//go:build linux

package ringev_test

// Tests of Loop.Poll: one wait for an fd's readiness as a request.

import (
	"errors"
	"fmt"
	"runtime"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/ringev/ringev"
	"github.com/ringev/ringev/internal/testutil"
	"golang.org/x/sys/unix"
)

// TestRequestPollCompletesWhenTheFdBecomesReady: a Poll for POLLIN on an empty socket waits
// through the loop's wait, and completes with POLLIN in N once the peer writes, on every
// backend; the byte stays in the socket for the caller's own read.
func TestRequestPollCompletesWhenTheFdBecomesReady(t *testing.T) {
	eachSocketpair(t, func(t *testing.T, l *ringev.Loop, a, c int) {
		var rec recorder
		must(t)(l.Poll(a, unix.POLLIN, rec.cb, 7))
		untilWaited(t, l)
		if rec.n() != 0 {
			t.Fatalf("a Poll on an empty socket completed: %+v", rec.got[0])
		}
		testutil.Write(t, c, []byte("x"))
		until(t, l, func() bool { return rec.n() > 0 })
		got := rec.got[0]
		if rec.n() != 1 || got.Err != nil || got.N&unix.POLLIN == 0 || got.Op != ringev.OpPoll || got.Token != 7 {
			t.Fatalf("%d completions, first N %#x err %v op %v token %d; want one with POLLIN, op poll, token 7", rec.n(), got.N, got.Err, got.Op, got.Token)
		}
		buf := make([]byte, 2)
		if n, err := unix.Read(a, buf); n != 1 || err != nil {
			t.Fatalf("read after the Poll: %d, %v; want the byte", n, err)
		}
	})
}

// TestRequestPollOutCompletesAtOnceWhenThereIsRoom: a Poll for POLLOUT on a socket with room
// completes with POLLOUT in N, on every backend.
func TestRequestPollOutCompletesAtOnceWhenThereIsRoom(t *testing.T) {
	eachSocketpair(t, func(t *testing.T, l *ringev.Loop, a, _ int) {
		var rec recorder
		must(t)(l.Poll(a, unix.POLLOUT, rec.cb, 0))
		until(t, l, func() bool { return rec.n() > 0 })
		if got := rec.got[0]; rec.n() != 1 || got.Err != nil || got.N&unix.POLLOUT == 0 {
			t.Fatalf("%d completions, first N %#x err %v; want one with POLLOUT", rec.n(), got.N, got.Err)
		}
	})
}

// TestRequestPollCancelEndsItWithECANCELED: Cancel of a waiting Poll runs its callback once,
// with ECANCELED, on every backend.
func TestRequestPollCancelEndsItWithECANCELED(t *testing.T) {
	eachSocketpair(t, func(t *testing.T, l *ringev.Loop, a, _ int) {
		var rec recorder
		h := must(t)(l.Poll(a, unix.POLLIN, rec.cb, 0))
		untilWaited(t, l)
		if err := h.Cancel(); err != nil {
			t.Fatal(err)
		}
		until(t, l, func() bool { return rec.n() > 0 })
		quiet(t, l)
		wantOneErr(t, &rec, unix.ECANCELED)
	})
}

// TestRequestPollCloseFdWhileItWaitsCancelsIt: CloseFd on an fd with a waiting Poll ends the
// Poll with ECANCELED and closes the fd (the peer sees its end), on every backend.
func TestRequestPollCloseFdWhileItWaitsCancelsIt(t *testing.T) {
	eachSocketpair(t, func(t *testing.T, l *ringev.Loop, a, c int) {
		var rec, cls recorder
		must(t)(l.Poll(a, unix.POLLIN, rec.cb, 0))
		untilWaited(t, l)
		must(t)(l.CloseFd(a, cls.cb, 0))
		testutil.HandOver(t, a)
		until(t, l, func() bool { return rec.n() > 0 && cls.n() > 0 })
		wantOneErr(t, &rec, unix.ECANCELED)
		if got := cls.got[0]; got.Err != nil {
			t.Fatalf("CloseFd: %v", got.Err)
		}
		if n, err := unix.Read(c, make([]byte, 1)); n != 0 || err != nil {
			t.Fatalf("the peer's read after CloseFd: %d, %v; want its end (0, nil)", n, err)
		}
	})
}

// TestRequestPollRefusesEventsOtherThanInOrOut: Poll with events other than exactly POLLIN or
// POLLOUT returns an error wrapping EINVAL and submits nothing, on every backend.
func TestRequestPollRefusesEventsOtherThanInOrOut(t *testing.T) {
	eachSocketpair(t, func(t *testing.T, l *ringev.Loop, a, _ int) {
		var rec recorder
		for _, ev := range []int16{0, unix.POLLIN | unix.POLLOUT, unix.POLLPRI} {
			if _, err := l.Poll(a, ev, rec.cb, 0); !errors.Is(err, unix.EINVAL) {
				t.Errorf("Poll with events %#x: %v, want EINVAL", ev, err)
			}
		}
		quiet(t, l)
		if rec.n() != 0 {
			t.Fatalf("a refused Poll ran its callback: %+v", rec.got)
		}
	})
}

// TestRequestPollAllocatesNothing: a Poll on a ready fd, made and run to its callback, allocates
// nothing once the loop is warm, on every backend.
func TestRequestPollAllocatesNothing(t *testing.T) {
	eachSocketpair(t, func(t *testing.T, l *ringev.Loop, a, _ int) {
		done := 0
		cb := func(*ringev.Completion) { done++ }
		var err error
		round := func() {
			n := done
			if _, err = l.Poll(a, unix.POLLOUT, cb, 0); err != nil {
				return
			}
			for i := 0; i < 1000 && done == n && err == nil; i++ {
				err = l.Once()
			}
		}
		for range 20 {
			round()
		}
		allocs := testing.AllocsPerRun(200, round)
		if err != nil {
			t.Fatal(err)
		}
		if done != 221 {
			t.Fatalf("%d completions, want 221", done)
		}
		if allocs != 0 {
			t.Fatalf("%.2f allocations per Poll, want 0", allocs)
		}
	})
}

// TestRequestPollDeadlineEndsItWithETIME: a waiting Poll given a deadline with SetTimeout ends
// with ETIME once it passes, on every backend.
func TestRequestPollDeadlineEndsItWithETIME(t *testing.T) {
	eachSocketpair(t, func(t *testing.T, l *ringev.Loop, a, _ int) {
		var rec recorder
		h := must(t)(l.Poll(a, unix.POLLIN, rec.cb, 0))
		if err := h.SetTimeout(time.Millisecond); err != nil {
			t.Fatal(err)
		}
		until(t, l, func() bool { return rec.n() > 0 })
		wantOneErr(t, &rec, unix.ETIME)
	})
}

// pollDeniedEnv carries "NR:ERRNO" to TestRequestPollWokenByReadinessMakesNoPollSyscall's
// child (testutil.RunDenied).
const pollDeniedEnv = "RINGEV_TEST_POLL_DENIED_CHILD"

// TestRequestPollWokenByReadinessMakesNoPollSyscall: on the emulated backends that do not wait
// with poll(2) (epoll, uring-poll), a Poll for POLLIN that the fd's readiness wakes completes
// with POLLIN from that readiness, without a poll(2) of its own: in a child process whose
// ppoll(2) fails with ENOSYS (a seccomp filter), it still completes with POLLIN and no error.
func TestRequestPollWokenByReadinessMakesNoPollSyscall(t *testing.T) {
	testutil.ChildDenied(t, pollDeniedEnv, func(syscall.Errno) { pollWokenChild() })
	res := testutil.RunDenied(t, "TestRequestPollWokenByReadinessMakesNoPollSyscall", pollDeniedEnv, unix.SYS_PPOLL, unix.ENOSYS)
	want := fmt.Sprintf("N=%#x err=<nil>", unix.POLLIN)
	for _, b := range []string{"epoll", "uring-poll"} {
		switch got := res[b]; {
		case strings.HasPrefix(got, "unavailable"):
			t.Logf("%s: %s", b, got)
		case got != want:
			t.Errorf("%s: a Poll woken by readiness with ppoll(2) denied: %s, want %s", b, got, want)
		}
	}
}

// pollWokenChild is TestRequestPollWokenByReadinessMakesNoPollSyscall's child: on each backend,
// a Poll for POLLIN on a socket that the peer's byte makes ready in the loop's wait; it
// prints "DENIED backend=N=... err=..." (or "=unavailable: why").
func pollWokenChild() {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	for _, b := range []string{"epoll", "uring-poll"} {
		fmt.Printf("DENIED %s=%s\n", b, pollWokenOn(b))
	}
}

func pollWokenOn(backend string) string {
	fds, err := unix.Socketpair(unix.AF_UNIX, unix.SOCK_STREAM|unix.SOCK_NONBLOCK|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return "unavailable: " + err.Error()
	}
	defer unix.Close(fds[0])
	defer unix.Close(fds[1])
	l, err := ringev.New(ringev.WithBackend(backend))
	if err != nil {
		return "unavailable: " + err.Error()
	}
	defer l.Close()
	var got *ringev.Completion
	if _, err := l.Poll(fds[0], unix.POLLIN, func(c *ringev.Completion) { cc := *c; got = &cc }, 0); err != nil {
		return "Poll: " + err.Error()
	}
	// A Poll for POLLIN waits for the loop's wait, ready or not (the emulation reads no side
	// of an fd before its readiness): the byte written now wakes it there.
	unix.Write(fds[1], []byte("x"))
	for i := 0; i < 100 && got == nil; i++ {
		if err := l.Once(); err != nil {
			return "Once: " + err.Error()
		}
	}
	if got == nil {
		return "no completion"
	}
	return fmt.Sprintf("N=%#x err=%v", got.N, got.Err)
}
