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

// Stop is for Run: a Stop while Run is not running does not make Once return without running a
// handler (it would spin a loop driven by Once); the next Run returns at once.
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
// returns within 1 s every time: a Stop that comes after Once computed "stopping" but before
// the loop announced its sleep must still end the blocking wait.
func TestLoopStopRightAfterPostedFunctionIsNotLost(t *testing.T) {
	eachMode(t, withFallback(), allModes, func(t *testing.T, backend string, m mode) {
		r, _ := testutil.Pipe(t)
		l := newLoop(t, backend, m.opts()...)
		addFd(t, l, r, ringev.Read, never(t, "empty pipe")) // something to wait for
		const rounds = 300
		var lost atomic.Int64
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
				select {
				case <-returned:
				case <-time.After(time.Second):
					lost.Add(1)
					l.Post(func() {}) // wake it so the test goes on
				}
			}()
			if err := run(t, l, deadline); err != nil {
				t.Fatalf("Run: %v", err)
			}
			close(returned)
			if lost.Load() > 0 {
				t.Fatalf("round %d: Run did not return within 1 s of Stop; it returned only after a posted wake-up", round)
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

// Timers, immediates and posts with a nil function are refused at once, not on the loop later.
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

// TestLoopHandlerPanicLeavesLoopUsable: a handler panics out of Once (recovered by the
// caller); the loop is not left "inside a handler": the next Once runs the other ready handler,
// and the panicking one runs again later (level-triggered).
func TestLoopHandlerPanicLeavesLoopUsable(t *testing.T) {
	eachMode(t, withFallback(), allModes, func(t *testing.T, backend string, m mode) {
		rs, _ := pipes(t, 2, true)
		l := newLoop(t, backend, m.opts()...)
		counts := [2]int{}
		addFd(t, l, rs[0], ringev.Read, func(*ringev.FdEvent, ringev.Flags) {
			counts[0]++
			if counts[0] == 1 {
				panic("b2 boom")
			}
		})
		addFd(t, l, rs[1], ringev.Read, func(*ringev.FdEvent, ringev.Flags) { counts[1]++ })
		recovered := 0
		for i := 0; counts[0] < 3 || counts[1] < 3; i++ {
			if i > 20 {
				t.Fatalf("after 20 Onces: runs %v", counts)
			}
			func() {
				defer func() {
					p := recover()
					if p != nil && p != "b2 boom" {
						panic(p)
					}
					if p != nil {
						recovered++
					}
				}()
				if err := onceErr(t, l); err != nil {
					t.Fatalf("Once after a handler panicked: %v", err)
				}
			}()
		}
		if recovered != 1 {
			t.Fatalf("the handler's panic reached Once's caller %d times, want 1", recovered)
		}
	})
}

// A handler of every kind (fd handler doing its I/O through the loop, timer, immediate, posted
// function), in the default mode and with WithDispatchAll, that panics leaves the loop usable:
// after the panic is recovered, an fd handler on another pipe, a timer and a posted function
// still run, and Close returns nil.
func TestBreakerPanickingHandlerLeavesLoopUsable(t *testing.T) {
	for _, all := range []bool{false, true} {
		for _, kind := range []string{"fd", "timer", "immediate", "post"} {
			name := kind
			if all {
				name += "/dispatch-all"
			}
			t.Run(name, func(t *testing.T) {
				eachBackend(t, ringev.Backends(), func(t *testing.T, backend string) {
					var opts []ringev.Option
					opts = append(opts, ringev.WithBackend(backend))
					if all {
						opts = append(opts, ringev.WithDispatchAll())
					}
					l, err := ringev.New(opts...)
					if err != nil {
						if errors.Is(err, unix.EPERM) || errors.Is(err, unix.ENOSYS) {
							t.Skip(err)
						}
						t.Fatal(err)
					}
					defer func() {
						if err := l.Close(); err != nil {
							t.Errorf("Close: %v", err)
						}
					}()
					r1, w1 := testutil.Pipe(t)
					r2, w2 := testutil.Pipe(t)
					unix.Write(w1, []byte("a"))
					unix.Write(w2, []byte("b"))
					boom := func() { panic("boom") }
					var ev1 *ringev.FdEvent
					switch kind {
					case "fd":
						ev1, err = l.AddFd(r1, ringev.Read, func(ev *ringev.FdEvent, _ ringev.Flags) {
							var b [1]byte
							l.ReadNonblocking(r1, b[:])
							ev.Close()
							boom()
						})
						if err != nil {
							t.Fatal(err)
						}
					case "timer":
						l.AddTimer(0, func(*ringev.Timer) { boom() })
					case "immediate":
						l.AddImmediate(boom)
					case "post":
						l.Post(boom)
					}
					_ = ev1
					panicked := false
					for i := 0; i < 50 && !panicked; i++ {
						func() {
							defer func() { panicked = recover() != nil }()
							l.Once()
						}()
					}
					if !panicked {
						t.Fatal("the handler did not run within 50 Onces")
					}
					fdRan, timerRan, postRan := false, false, false
					ev2, err := l.AddFd(r2, ringev.Read, func(ev *ringev.FdEvent, _ ringev.Flags) {
						var b [1]byte
						if n, err := l.ReadNonblocking(r2, b[:]); n == 1 && err == nil {
							fdRan = true
						}
						ev.Close()
					})
					if err != nil {
						t.Fatalf("AddFd after the panic: %v", err)
					}
					defer ev2.Close()
					l.AddTimer(time.Millisecond, func(*ringev.Timer) { timerRan = true })
					if err := l.Post(func() { postRan = true }); err != nil {
						t.Fatal(err)
					}
					untilFor(t, l, deadline, "handlers after a panic", func() bool { return fdRan && timerRan && postRan })
				})
			})
		}
	}
}

// A completion callback that panics leaves the loop usable: once the panic is recovered, Once
// is not refused as nested, the request's record is released (its fd has no request left, so a
// CloseFd closes it at once) and new requests complete.
func TestBreakerPanicInCallbackLeavesLoopUsable(t *testing.T) {
	eachBackend(t, ringev.Backends(), func(t *testing.T, backend string) {
		l := newLoop(t, backend)
		rp, wp := testutil.Pipe(t)
		r, w := rp, wp
		if _, err := unix.Write(w, []byte("ab")); err != nil {
			t.Fatal(err)
		}
		buf := make([]byte, 1)
		if _, err := l.Read(r, buf, -1, func(*ringev.Completion) { panic("boom") }, 0); err != nil {
			t.Fatal(err)
		}
		panicked := false
		end := time.Now().Add(5 * time.Second)
		for !panicked && time.Now().Before(end) {
			func() {
				defer func() {
					if recover() != nil {
						panicked = true
					}
				}()
				if err := l.Once(); err != nil {
					t.Fatalf("Once: %v", err)
				}
			}()
		}
		if !panicked {
			t.Fatal("the callback did not run within 5 s")
		}
		got := 0
		buf2 := make([]byte, 1)
		if _, err := l.Read(r, buf2, -1, func(c *ringev.Completion) {
			if c.Err != nil || c.N != 1 || buf2[0] != 'b' {
				t.Errorf("second Read: N %d err %v byte %q, want 1 <nil> 'b'", c.N, c.Err, buf2[0])
			}
			got++
		}, 0); err != nil {
			t.Fatalf("Read after the panic: %v", err)
		}
		untilFor(t, l, deadline, "the Read after a panicking callback", func() bool { return got > 0 })
		closed := false
		if _, err := l.CloseFd(r, func(c *ringev.Completion) { closed = c.Err == nil }, 0); err != nil {
			t.Fatal(err)
		}
		testutil.HandOver(t, rp) // the loop closes it now
		if _, err := unix.FcntlInt(uintptr(r), unix.F_GETFD, 0); !errors.Is(err, unix.EBADF) {
			t.Errorf("CloseFd with no request left did not close the fd at once (fcntl: %v): a record leaked by the panic still counts", err)
		}
		untilFor(t, l, deadline, "CloseFd's callback", func() bool { return closed })
	})
}

// TestRequestPanicInABatchLeavesTheRestForTheNextOnce: two completions ready in one batch, the
// first callback makes a Read and panics; recovered outside Once, the loop goes on: the second
// callback runs exactly once on the next Once, the Read made before the panic completes, a
// nested Once from a callback is still refused (the nesting guard works) and one from the owner
// outside callbacks is not (it was reset).
func TestRequestPanicInABatchLeavesTheRestForTheNextOnce(t *testing.T) {
	eachBackend(t, ringev.Backends(), func(t *testing.T, backend string) {
		r1, w1 := testutil.Pipe(t)
		r2, w2 := testutil.Pipe(t)
		r3, w3 := testutil.Pipe(t)
		testutil.Write(t, w1, []byte("a"))
		testutil.Write(t, w2, []byte("b"))
		l := newLoop(t, backend)
		var second, made recorder
		firstRuns := 0
		must(t)(l.Read(r1, make([]byte, 1), -1, func(*ringev.Completion) {
			firstRuns++
			if _, err := l.Read(r3, make([]byte, 1), -1, made.cb, 0); err != nil {
				t.Errorf("Read in the panicking callback: %v", err)
			}
			panic("boom")
		}, 0))
		must(t)(l.Read(r2, make([]byte, 1), -1, second.cb, 0))
		panicked := false
		end := time.Now().Add(deadline)
		for !panicked && time.Now().Before(end) {
			func() {
				defer func() { panicked = recover() != nil }()
				if err := l.Once(); err != nil {
					t.Fatalf("Once: %v", err)
				}
			}()
		}
		if !panicked {
			t.Fatal("the panicking callback did not run")
		}
		testutil.Write(t, w3, []byte("c"))
		var nested error
		nestedRan := false
		must(t)(l.Read(r1, make([]byte, 1), -1, func(*ringev.Completion) {
			nestedRan = true
			nested = l.Once()
		}, 0))
		testutil.Write(t, w1, []byte("d"))
		until(t, l, func() bool { return second.n() > 0 && made.n() > 0 && nestedRan })
		quiet(t, l)
		if firstRuns != 1 {
			t.Errorf("the panicking callback ran %d times", firstRuns)
		}
		wantOne(t, &second, 1)
		wantOne(t, &made, 1)
		if nested == nil {
			t.Error("Once from a callback after the panic was allowed: the nesting guard is off")
		}
	})
}
