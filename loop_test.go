//go:build linux

package ringev_test

// Tests of the loop's life: Run, Once and Stop, nesting, nil functions, and a panicking handler.

import (
	"errors"
	"runtime"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/ringev/ringev"
	"github.com/ringev/ringev/internal/testutil"
	"golang.org/x/sys/unix"
)

// TestLoopStopOutsideRunDoesNotShortCutOnce: Stop is for Run: a Stop while Run is not running does
// not make Once return without running a handler (it would spin a loop driven by Once); the next
// Run returns at once.
func TestLoopStopOutsideRunDoesNotShortCutOnce(t *testing.T) {
	l := newLoop(t, "epoll")
	l.Stop()
	fired := false
	l.AddTimer(20*time.Millisecond, func(*ringev.Timer) { fired = true })
	once(t, l)
	if !fired {
		t.Fatal("Once after Stop returned without running the timer")
	}
	l.AddTimer(time.Hour, func(*ringev.Timer) {})
	run(t, l, deadline) // fails the test if Run does not return before the deadline
}

// TestLoopStopFromGoroutineEndsBusyRun: Run on a loop that is never idle returns after the Once
// in progress when another goroutine calls Stop: at most one more handler run after Stop
// returned, in 20 rounds.
func TestLoopStopFromGoroutineEndsBusyRun(t *testing.T) {
	eachMode(t, withFallback(), allModes, func(t *testing.T, backend string, m mode) {
		l := newLoop(t, backend, m.opts()...)
		var fdRuns atomic.Int64
		always(t, l, &fdRuns)
		for round := range 20 {
			var atStop atomic.Int64 // fd handler runs when Stop had returned
			done := make(chan struct{})
			go func() {
				defer close(done)
				for fdRuns.Load() < int64(100*(round+1)) {
					if stopped(t) {
						return
					}
					runtime.Gosched()
				}
				l.Stop()
				atStop.Store(fdRuns.Load())
			}()
			if err := run(t, l, deadline); err != nil {
				t.Fatalf("Run: %v", err)
			}
			select {
			case <-done:
			case <-time.After(deadline):
				t.Fatalf("round %d: the stopping goroutine did not finish", round)
			}
			if more := fdRuns.Load() - atStop.Load(); more > 1 {
				t.Fatalf("round %d: Run ran %d fd handlers after Stop returned, want at most 1 (the Once in progress)", round, more)
			}
		}
	})
}

// TestLoopStopRightAfterPostedFunctionIsNotLost: another goroutine calls Stop just after a
// function it posted ran (the loop is then between its busy look and its blocking wait). Run
// returns every time before the loop sleeps in its wait again (awaitWoken): a Stop that comes
// after Once computed "stopping" but before the loop announced its sleep must still end the
// blocking wait.
func TestLoopStopRightAfterPostedFunctionIsNotLost(t *testing.T) {
	eachMode(t, withFallback(), allModes, func(t *testing.T, backend string, m mode) {
		r, _ := testutil.Pipe(t)
		l := newLoop(t, backend, m.opts()...)
		tid := unix.Gettid()                                // New locked this goroutine to its thread
		addFd(t, l, r, ringev.Read, never(t, "empty pipe")) // something to wait for
		const rounds = 300
		var lost atomic.Int64
		var problem atomic.Value
		for round := range rounds {
			returned := make(chan struct{})
			go func() {
				ran := make(chan struct{})
				if err := l.Post(func() { close(ran) }); err != nil {
					t.Errorf("Post: %v", err)
					l.Stop()
					return
				}
				select {
				case <-ran:
				case <-time.After(deadline):
					t.Errorf("round %d: the posted function did not run within %v", round, deadline)
				}
				l.Stop()
				if p := testutil.AwaitWoken(tid, ringev.WakeFd(l), returned); p != "" {
					lost.Add(1)
					problem.Store(p)
					l.Post(func() {}) // wake it so the test goes on
				}
			}()
			if err := run(t, l, deadline); err != nil {
				t.Fatalf("Run: %v", err)
			}
			close(returned)
			if lost.Load() > 0 {
				t.Fatalf("round %d: Run after Stop: %v; it returned only after a posted wake-up", round, problem.Load())
			}
		}
	})
}

// TestLoopNestedOnceInsideHandlerReturnsErrNested: Once and Run called from inside every kind of
// handler (fd, timer, immediate, posted function, signal) return ErrNested, Loop.Close from
// inside a handler returns an error wrapping ErrNested, and the loop works normally afterwards.
func TestLoopNestedOnceInsideHandlerReturnsErrNested(t *testing.T) {
	eachBackend(t, ringev.Backends(), func(t *testing.T, backend string) {
		guard := sigGuard(t, syscall.SIGUSR1)
		a, peer := testutil.Socketpair(t)
		l := newLoop(t, backend)
		kinds := map[string]bool{}
		nest := func(kind string) {
			kinds[kind] = true
			if err := l.Once(); !errors.Is(err, ringev.ErrNested) {
				t.Errorf("Once inside a %s handler: %v, want ErrNested", kind, err)
			}
			if err := l.Run(); !errors.Is(err, ringev.ErrNested) {
				t.Errorf("Run inside a %s handler: %v, want ErrNested", kind, err)
			}
			if err := l.Close(); !errors.Is(err, ringev.ErrNested) {
				t.Errorf("Loop.Close inside a %s handler: %v, want an error wrapping ErrNested", kind, err)
			}
		}
		ev := addFd(t, l, a, ringev.Read, func(ev *ringev.FdEvent, f ringev.Flags) {
			testutil.Drain(t, ev.Fd())
			nest("fd")
		})
		l.AddTimer(time.Millisecond, func(*ringev.Timer) { nest("timer") })
		l.AddImmediate(func() { nest("immediate") })
		if err := l.Post(func() { nest("posted") }); err != nil {
			t.Fatalf("Post: %v", err)
		}
		sig, err := l.AddSignal(syscall.SIGUSR1, func(*ringev.Signal, int) { nest("signal") })
		if err != nil {
			t.Fatalf("AddSignal: %v", err)
		}
		defer sig.Close()
		testutil.Write(t, peer, []byte{'x'})
		raise(t, guard, syscall.SIGUSR1)
		until(t, l, func() bool { return len(kinds) == 5 })
		// Afterwards the loop works: a new byte runs the fd handler once more.
		before := len(kinds)
		kinds = map[string]bool{}
		testutil.Write(t, peer, []byte{'y'})
		until(t, l, func() bool { return kinds["fd"] })
		if before != 5 || ev.Flags() != ringev.Read {
			t.Fatalf("after nesting: %d handler kinds ran, event flags %v", before, ev.Flags())
		}
	})
}

// TestLoopNilFunctionsAreRefused: Timers, immediates and posts with a nil function are refused at
// once, not on the loop later.
func TestLoopNilFunctionsAreRefused(t *testing.T) {
	l := newLoop(t, "epoll")
	if l.AddTimer(0, nil) != nil || l.AddTimerAt(time.Now(), nil) != nil || l.AddImmediate(nil) != nil {
		t.Fatal("a nil timer or immediate handler was accepted")
	}
	if err := l.Post(nil); !errors.Is(err, ringev.ErrNilFunc) {
		t.Fatalf("Post(nil) = %v, want ErrNilFunc", err)
	}
	if err := l.Once(); !errors.Is(err, ringev.ErrNothingToDo) {
		t.Fatalf("Once after refused nil functions: %v, want ErrNothingToDo", err)
	}
}

// TestLoopHandlerPanicLeavesLoopUsable: a handler of every kind (fd handler, timer, immediate,
// posted function, request callback) that panics out of Once, recovered by Once's caller,
// leaves the loop usable, on every backend in every dispatch mode. The panic reaches the caller
// once. Once from the owner is not refused as nested afterwards, and a nested Once from a
// handler still is. Another ready fd handler, an fd event added afterwards, a timer, a posted
// function and a new request all run. A panicking fd handler runs again (level-triggered).
// After a panicking callback, the other completion of its batch runs once, a Read made in the
// callback completes, and the request's record is released: a CloseFd of its fd, with no
// request left, closes it at once. Close returns nil (newLoop's cleanup checks it).
func TestLoopHandlerPanicLeavesLoopUsable(t *testing.T) {
	const boom = "a handler's panic"
	for _, kind := range []string{"fd", "timer", "immediate", "post", "callback"} {
		t.Run(kind, func(t *testing.T) {
			eachMode(t, withFallback(), allModes, func(t *testing.T, backend string, m mode) {
				// 0: the panicking handler's; 1: another handler's; 2: the callback batch's
				// second Read; 3: a Read made after the panic; 4: an fd event added after it.
				rs, _ := testutil.Pipes(t, 5, true)
				r5, w5 := testutil.Pipe(t) // a Read made in the panicking callback
				l := newLoop(t, backend, m.opts()...)
				firstRuns, otherRuns, panics := 0, 0, 0
				var second, made recorder
				switch kind {
				case "fd":
					addFd(t, l, rs[0], ringev.Read, func(*ringev.FdEvent, ringev.Flags) {
						if firstRuns++; firstRuns == 1 {
							panic(boom)
						}
					})
				case "timer":
					l.AddTimer(0, func(*ringev.Timer) { firstRuns++; panic(boom) })
				case "immediate":
					l.AddImmediate(func() { firstRuns++; panic(boom) })
				case "post":
					if err := l.Post(func() { firstRuns++; panic(boom) }); err != nil {
						t.Fatal(err)
					}
				case "callback":
					must(t)(l.Read(rs[0], make([]byte, 1), -1, func(*ringev.Completion) {
						firstRuns++
						if _, err := l.Read(r5, make([]byte, 1), -1, made.cb, 0); err != nil {
							t.Errorf("Read in the panicking callback: %v", err)
						}
						panic(boom)
					}, 0))
					must(t)(l.Read(rs[2], make([]byte, 1), -1, second.cb, 0))
				}
				addFd(t, l, rs[1], ringev.Read, func(*ringev.FdEvent, ringev.Flags) { otherRuns++ })
				// turn is one Once that recovers the handler's panic, and only that.
				turn := func() { onceRecovering(t, l, boom, &panics) }
				for i := 0; panics == 0; i++ {
					if i == 50 {
						t.Fatalf("the panicking %s handler did not run within 50 Onces", kind)
					}
					turn()
				}
				if kind == "fd" { // the panicking handler runs again, beside the other one
					for i := 0; firstRuns < 3 || otherRuns < 3; i++ {
						if i == 20 {
							t.Fatalf("after 20 Onces: the panicking handler ran %d times, the other %d", firstRuns, otherRuns)
						}
						turn()
					}
				}
				if kind == "callback" {
					must(t)(l.CloseFd(rs[0], func(*ringev.Completion) {}, 0))
					testutil.HandOver(t, rs[0])
					if !testutil.IsClosed(rs[0]) {
						t.Error("CloseFd of the panicking request's fd, with no request left, did not close it at once: the panic kept its record")
					}
					testutil.Write(t, w5, oneByte)
				}
				timerRan, postRan, addedRan := false, false, false
				var after recorder
				var nested error
				l.AddTimer(time.Millisecond, func(*ringev.Timer) { timerRan = true })
				if err := l.Post(func() { postRan = true }); err != nil {
					t.Fatal(err)
				}
				must(t)(l.Read(rs[3], make([]byte, 1), -1, func(c *ringev.Completion) { after.cb(c); nested = l.Once() }, 0))
				addFd(t, l, rs[4], ringev.Read, func(ev *ringev.FdEvent, _ ringev.Flags) { addedRan = true; ev.SetFlags(0) })
				others := otherRuns
				done := func() bool {
					return timerRan && postRan && addedRan && after.n() > 0 && otherRuns > others &&
						(kind != "callback" || second.n() > 0 && made.n() > 0)
				}
				for end := time.Now().Add(deadline); !done(); turn() {
					if time.Now().After(end) {
						t.Fatalf("%v after the panic: timer %v, post %v, added fd event %v, Read %d, other handler %d more; callback batch's second %d, Read made in it %d",
							deadline, timerRan, postRan, addedRan, after.n(), otherRuns-others, second.n(), made.n())
					}
				}
				runTimer(t, l, quietFor, 0) // nothing runs twice meanwhile
				if panics != 1 || firstRuns > 1 && kind != "fd" {
					t.Errorf("the handler ran %d times and its panic reached Once's caller %d times, want once", firstRuns, panics)
				}
				if !errors.Is(nested, ringev.ErrNested) {
					t.Errorf("Once from a callback after the panic: %v, want ErrNested (the nesting guard is off)", nested)
				}
				wantOne(t, &after, 1)
				if kind == "callback" {
					wantOne(t, &second, 1)
					wantOne(t, &made, 1)
				}
			})
		})
	}
}
