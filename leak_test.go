//go:build linux

package ringev_test

// Tests of leaks: after 100,000 AddFd/Close cycles on every backend (with a few Once calls
// interleaved, so that the backend really arms and disarms its watch), the process has the same
// open fds as before and no extra goroutines.

import (
	"slices"
	"testing"
	"time"

	"go.uber.org/goleak"
	"golang.org/x/sys/unix"

	"github.com/ringev/ringev"
	"github.com/ringev/ringev/internal/testutil"
)

// leakCycles is the number of AddFd/Close cycles per backend.
const leakCycles = 100_000

// TestLeakNoFdsOrGoroutinesAfterManyAddFdClose: 100,000 cycles of AddFd (READ, on a pipe) and
// FdEvent.Close, every 1,000th with a byte written and one Once (the handler drains it), plus
// some with auto-close on a dup of the pipe: while the loop lives its open fds do not grow, and
// after Loop.Close the process has exactly the fds and goroutines it had before.
func TestLeakNoFdsOrGoroutinesAfterManyAddFdClose(t *testing.T) {
	eachBackend(t, ringev.Backends(), func(t *testing.T, backend string) {
		ignore := goleak.IgnoreCurrent()
		before := testutil.OpenFds(t)
		r, w := testutil.Pipe(t) // closed at cleanup, after the checks below
		l := newLoop(t, backend) // closed by the test; cleanup's second Close returns nil
		withLoop := testutil.OpenFds(t)
		start := time.Now()
		runs := 0
		h := func(ev *ringev.FdEvent, f ringev.Flags) { runs++; testutil.Drain(t, ev.Fd()) }
		for i := 0; i < leakCycles; i++ {
			fd := r
			auto := i%100 == 0
			if auto {
				var err error
				if fd, err = unix.Dup(r); err != nil {
					t.Fatalf("dup: %v", err)
				}
			}
			ev, err := l.AddFd(fd, ringev.Read, h)
			if err != nil {
				t.Fatalf("cycle %d: AddFd: %v", i, err)
			}
			ev.SetAutoClose(auto)
			if i%1000 == 0 {
				testutil.Write(t, w, []byte{'x'})
				want := runs + 1
				until(t, l, func() bool { return runs == want })
			}
			if err := ev.Close(); err != nil {
				t.Fatalf("cycle %d: FdEvent.Close: %v", i, err)
			}
		}
		took := time.Since(start)
		if now := testutil.OpenFds(t); !slices.Equal(now, withLoop) {
			t.Errorf("after %d AddFd/Close cycles the open fds are %v, were %v", leakCycles, now, withLoop)
		}
		if err := l.Close(); err != nil {
			t.Fatalf("Loop.Close: %v", err)
		}
		unix.Close(r) // the Pipe cleanup closes them again: harmless, nothing opens fds meanwhile
		unix.Close(w)
		if now := testutil.OpenFds(t); !slices.Equal(now, before) {
			t.Errorf("after Loop.Close the open fds are %v, were %v before the loop", now, before)
		}
		goleak.VerifyNone(t, ignore)
		t.Logf("%d cycles in %v (%d handler runs)", leakCycles, took.Round(time.Millisecond), runs)
	})
}

// TestLeakNoGoroutinesAfterSignalLoopClose: a loop with signal handlers (whose counting goroutine
// the loop starts) leaves no goroutine behind after Close.
func TestLeakNoGoroutinesAfterSignalLoopClose(t *testing.T) {
	eachBackend(t, ringev.Backends(), func(t *testing.T, backend string) {
		guard := sigGuard(t, unix.SIGUSR1)
		ignore := goleak.IgnoreCurrent()
		l := newLoop(t, backend) // closed by the test; cleanup's second Close returns nil
		got := 0
		if _, err := l.AddSignal(unix.SIGUSR1, func(_ *ringev.Signal, c int) { got += c }); err != nil {
			t.Fatalf("AddSignal: %v", err)
		}
		raise(t, guard, unix.SIGUSR1)
		until(t, l, func() bool { return got > 0 })
		if err := l.Close(); err != nil {
			t.Fatalf("Loop.Close: %v", err)
		}
		goleak.VerifyNone(t, ignore)
	})
}
