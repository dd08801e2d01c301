//go:build linux

package ringev_test

// Tests of the loop's yield to the Go scheduler before a blocking wait (yieldBeforeBlock):
// wake-ups during it, the loop's thread, and what it spares the runtime's monitor.

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/ringev/ringev"
	"github.com/ringev/ringev/internal/testutil"
	"go.uber.org/goleak"
	"golang.org/x/sys/unix"
)

// yieldHammer is how long each hammer below runs at least per backend and GOMAXPROCS.
const yieldHammer = 600 * time.Millisecond

// hammerDone reports whether a hammer that began at start may end, its loop having yielded
// yields times: once yieldHammer has passed, and with more than one P only once the loop has
// yielded, or else at 2*deadline (checkYields then fails the test). The loop yields only when
// the scheduler is idle: on a loaded machine the hammer's goroutines hold their Ps longer, and
// 600 ms may pass without a yield.
func hammerDone(start time.Time, yields uint64) bool {
	d := time.Since(start)
	return d >= yieldHammer && (yields > 0 || runtime.GOMAXPROCS(0) == 1) || d >= 2*deadline
}

// wakeDeadline is how long a signal may take to reach a loop before the test calls its wake-up
// lost (a signal reaches the loop through the Go runtime, not at once), and how long a loop
// woken by hand after a lost wake-up may take (the loops below otherwise block for ever, or wake
// every 100 µs).
const wakeDeadline = 2 * time.Second

// checkYields fails the test if a loop that made yields yields did not yield where it should,
// or yielded where it must not: with GOMAXPROCS 1 it never yields (a Gosched there would put it
// behind any runnable goroutine and saves nothing: the monitor takes a P blocked in a syscall
// after 20 µs anyway); with more Ps the tests' loops, mostly alone, yield.
func checkYields(t *testing.T, yields uint64) {
	t.Helper()
	if runtime.GOMAXPROCS(0) == 1 {
		if yields != 0 {
			t.Errorf("with GOMAXPROCS 1 the loop yielded %d times", yields)
		}
		return
	}
	if yields == 0 {
		t.Errorf("the loop never yielded: the test did not test the yield")
	}
}

// eachProcs runs fn with GOMAXPROCS 1 and 2 (subtests "procs1", "procs2"), restoring it after.
func eachProcs(t *testing.T, fn func(t *testing.T)) {
	for _, n := range []int{1, 2} {
		t.Run(fmt.Sprintf("procs%d", n), func(t *testing.T) {
			old := runtime.GOMAXPROCS(n)
			defer runtime.GOMAXPROCS(old)
			fn(t)
		})
	}
}

// idleFd watches the read end of a fresh pipe (never written unless unblock is called), so that a
// loop with nothing else to do blocks in its wait for ever instead of returning ErrNothingToDo.
// unblock writes a byte: the handler drains it, so a loop whose wake-up was lost gets going again.
func idleFd(t *testing.T, l *ringev.Loop, r, w int) (unblock func()) {
	t.Helper()
	if _, err := l.AddFd(r, ringev.Read, func(ev *ringev.FdEvent, f ringev.Flags) { testutil.Drain(t, ev.Fd()) }); err != nil {
		t.Fatalf("AddFd: %v", err)
	}
	return func() { unix.Write(w, []byte{1}) }
}

// TestYieldPostsAndStopsDuringItReachTheLoop: a loop in Run with nothing but an idle fd (every
// wait blocks for ever, and the first after 5 ms of loop time yields first), or with a 100 µs
// timer re-armed for ever (it blocks and yields often), while four goroutines Post at random
// moments, each waiting for its function to run, and a fifth calls Stop at random moments, each
// waiting for Run to return: every Post runs, and every Stop ends Run, before the loop sleeps in
// its wait again (awaitWoken), on every backend, with GOMAXPROCS 1 and 2.
func TestYieldPostsAndStopsDuringItReachTheLoop(t *testing.T) {
	for _, withTimer := range []bool{false, true} {
		name := "idle"
		if withTimer {
			name = "timer100us"
		}
		t.Run(name, func(t *testing.T) {
			eachProcs(t, func(t *testing.T) {
				eachBackend(t, withFallback(), func(t *testing.T, backend string) {
					hammerPostStop(t, backend, withTimer)
				})
			})
		})
	}
}

func hammerPostStop(t *testing.T, backend string, withTimer bool) {
	r, w := testutil.Pipe(t)
	l := newLoop(t, backend)
	tid := unix.Gettid() // New locked this goroutine to its thread
	unblock := idleFd(t, l, r, w)
	if withTimer {
		var rearm func(*ringev.Timer)
		rearm = func(*ringev.Timer) { l.AddTimer(100*time.Microsecond, rearm) }
		l.AddTimer(100*time.Microsecond, rearm)
	}
	var (
		done      atomic.Bool
		wg        sync.WaitGroup
		posts     atomic.Int64
		ran       atomic.Int64
		lost      atomic.Int64
		maxLat    atomic.Int64
		runEnds   = make(chan struct{}, 1)
		stops     atomic.Int64
		stopLost  atomic.Int64
		stopMaxNs atomic.Int64
	)
	setMax := func(m *atomic.Int64, v int64) {
		for {
			old := m.Load()
			if v <= old || m.CompareAndSwap(old, v) {
				return
			}
		}
	}
	pause := func(rng *rand.Rand) {
		switch rng.IntN(4) {
		case 0: // at once
		case 1:
			runtime.Gosched()
		default: // around the 5 ms yield interval
			time.Sleep(time.Duration(rng.IntN(7000)) * time.Microsecond)
		}
	}
	for p := 0; p < 4; p++ {
		wg.Add(1)
		go func(seed uint64) {
			defer wg.Done()
			rng := rand.New(rand.NewPCG(seed, 1))
			got := make(chan struct{}, 1)
			for !done.Load() {
				pause(rng)
				start := time.Now()
				if err := l.Post(func() { got <- struct{}{} }); err != nil {
					t.Errorf("Post: %v", err)
					return
				}
				posts.Add(1)
				if problem := testutil.AwaitWoken(tid, ringev.WakeFd(l), got); problem == "" {
					ran.Add(1)
					setMax(&maxLat, int64(time.Since(start)))
				} else {
					lost.Add(1)
					t.Errorf("%s: a posted function: %s; goroutines:\n%s", backend, problem, allStacks())
					unblock()
					select {
					case <-got:
					case <-time.After(wakeDeadline):
						panic("the loop is stuck")
					}
					ran.Add(1)
				}
			}
		}(uint64(p))
	}
	wg.Add(1)
	go func() {
		defer wg.Done()
		rng := rand.New(rand.NewPCG(99, 2))
		for !done.Load() {
			pause(rng)
			start := time.Now()
			l.Stop()
			stops.Add(1)
			if problem := testutil.AwaitWoken(tid, ringev.WakeFd(l), runEnds); problem == "" {
				setMax(&stopMaxNs, int64(time.Since(start)))
			} else {
				stopLost.Add(1)
				t.Errorf("%s: Run after Stop: %s; goroutines:\n%s", backend, problem, allStacks())
				unblock()
				select {
				case <-runEnds:
				case <-time.After(wakeDeadline):
					l.Stop()
					t.Errorf("%s: Run did not return within %v of a byte on its fd after the Stop either; goroutines:\n%s", backend, wakeDeadline, allStacks())
					select {
					case <-runEnds:
					case <-time.After(wakeDeadline):
						panic("the loop is stuck")
					}
				}
			}
		}
	}()
	start := time.Now()
	runs := 0
	for {
		if err := l.Run(); err != nil {
			t.Fatalf("Run: %v", err)
		}
		runs++
		if hammerDone(start, ringev.Yields(l)) {
			done.Store(true)
		}
		select {
		case runEnds <- struct{}{}:
		default:
			t.Fatalf("Run returned without a Stop waiting for it")
		}
		if done.Load() {
			break
		}
	}
	// The stopper has the last token (done was set before it) and ends; the posters finish their
	// last round: keep the loop turning for them.
	finished := make(chan struct{})
	go func() { wg.Wait(); close(finished) }()
	for stillGoing := true; stillGoing; {
		select {
		case <-finished:
			stillGoing = false
		default:
			l.Post(func() {})
			if err := l.Once(); err != nil {
				t.Fatalf("Once: %v", err)
			}
		}
	}
	yields := ringev.Yields(l)
	t.Logf("%d posts (%d ran; max latency %v), %d stops (%d Runs; max %v), %d yields, %d waits; lost: %d posts, %d stops",
		posts.Load(), ran.Load(), time.Duration(maxLat.Load()), stops.Load(), runs, time.Duration(stopMaxNs.Load()),
		yields, ringev.Waits(l), lost.Load(), stopLost.Load())
	checkYields(t, yields)
}

// TestYieldAPostOrStopAloneDuringItWakesTheLoop: one goroutine, alone, calls Post or Stop at
// random moments around the 5 ms yield interval and waits for each to take effect (the posted
// function to run, Run to return) before the next, while the loop in Run has nothing but an
// idle fd: no other wake-up can cover for a lost one, so the loop never sleeps in its wait
// before serving each (awaitWoken), on every backend, with GOMAXPROCS 1 and 2.
func TestYieldAPostOrStopAloneDuringItWakesTheLoop(t *testing.T) {
	eachProcs(t, func(t *testing.T) {
		eachBackend(t, withFallback(), func(t *testing.T, backend string) {
			r, w := testutil.Pipe(t)
			l := newLoop(t, backend)
			tid := unix.Gettid() // New locked this goroutine to its thread
			unblock := idleFd(t, l, r, w)
			runEnds := make(chan struct{}, 1)
			got := make(chan struct{}, 1)
			var last atomic.Bool     // set before the sender's last Stop: Run's return ends the test
			var yields atomic.Uint64 // ringev.Yields(l), for the sender: set on the loop after each Post and Stop
			var posts, stops, lost int
			var maxLat time.Duration
			ownerDone := make(chan struct{})
			senderDone := make(chan struct{})
			go func() {
				defer close(senderDone)
				// awaitOrUnblock waits for c (awaitWoken); after a lost wake-up a byte on the
				// idle fd gets the loop going again.
				awaitOrUnblock := func(c chan struct{}, what string, start time.Time) {
					if problem := testutil.AwaitWoken(tid, ringev.WakeFd(l), c); problem == "" {
						maxLat = max(maxLat, time.Since(start))
					} else {
						lost++
						t.Errorf("%s: after %d posts and %d stops, a %s: %s", backend, posts, stops, what, problem)
						unblock()
						select {
						case <-c:
						case <-time.After(wakeDeadline):
							panic("the loop is stuck")
						}
					}
				}
				rng := rand.New(rand.NewPCG(3, 4))
				for start := time.Now(); !hammerDone(start, yields.Load()); {
					switch rng.IntN(3) {
					case 0:
						runtime.Gosched()
					default:
						time.Sleep(time.Duration(rng.IntN(7000)) * time.Microsecond)
					}
					start := time.Now()
					if rng.IntN(4) == 0 {
						stops++
						l.Stop()
						awaitOrUnblock(runEnds, "Stop", start)
						continue
					}
					posts++
					if err := l.Post(func() { yields.Store(ringev.Yields(l)); got <- struct{}{} }); err != nil {
						t.Errorf("Post: %v", err)
						break
					}
					awaitOrUnblock(got, "Post", start)
				}
				time.Sleep(6 * time.Millisecond) // a pace past the 5 ms yield interval, as above: not a condition
				last.Store(true)
				l.Stop()
				awaitOrUnblock(ownerDone, "last Stop", time.Now())
			}()
			for {
				if err := l.Run(); err != nil {
					t.Fatalf("Run: %v", err)
				}
				if last.Load() {
					break
				}
				yields.Store(ringev.Yields(l))
				runEnds <- struct{}{}
			}
			close(ownerDone)
			<-senderDone
			t.Logf("%d posts, %d stops, max latency %v, %d yields, %d waits, %d lost", posts, stops, maxLat, ringev.Yields(l), ringev.Waits(l), lost)
			checkYields(t, ringev.Yields(l))
		})
	})
}

// TestYieldSignalsDuringItAreEachDelivered: SIGUSR1 sent to the process 150 times, each after
// the previous one's handler ran and a pause of up to 7 ms (so that many land while the loop
// yields or is about to), reaches a loop in Run (idle fd only) every time within 2 s, with a
// count of exactly one each, with and without WithExactSignals, on every backend, GOMAXPROCS 1
// and 2.
func TestYieldSignalsDuringItAreEachDelivered(t *testing.T) {
	for _, exact := range []bool{false, true} {
		name := "osSignal"
		if exact {
			name = "exact"
		}
		t.Run(name, func(t *testing.T) {
			eachProcs(t, func(t *testing.T) {
				eachBackend(t, withFallback(), func(t *testing.T, backend string) {
					sigGuard(t, unix.SIGUSR1)
					r, w := testutil.Pipe(t)
					var opts []ringev.Option
					if exact {
						requireExactSignals(t)
						opts = append(opts, ringev.WithExactSignals())
					}
					l := newLoop(t, backend, opts...)
					unblock := idleFd(t, l, r, w)
					var total atomic.Int64
					var calls atomic.Int64
					got := make(chan struct{}, 1)
					if _, err := l.AddSignal(unix.SIGUSR1, func(s *ringev.Signal, count int) {
						total.Add(int64(count))
						calls.Add(1)
						select {
						case got <- struct{}{}:
						default:
						}
					}); err != nil {
						t.Fatalf("AddSignal: %v", err)
					}
					const n = 150
					senderDone := make(chan struct{})
					go func() {
						defer close(senderDone)
						defer l.Stop()
						rng := rand.New(rand.NewPCG(7, 7))
						for i := 0; i < n; i++ {
							time.Sleep(time.Duration(rng.IntN(7000)) * time.Microsecond)
							if err := unix.Kill(os.Getpid(), syscall.SIGUSR1); err != nil {
								t.Errorf("kill: %v", err)
								return
							}
							select {
							case <-got:
							case <-time.After(wakeDeadline):
								t.Errorf("%s: signal %d not handled within %v", backend, i, wakeDeadline)
								unblock()
								select {
								case <-got:
								case <-time.After(wakeDeadline):
									t.Errorf("%s: signal %d still not handled after the fd woke the loop", backend, i)
									return
								}
							}
						}
					}()
					if err := run(t, l, 60*time.Second); err != nil {
						t.Fatalf("Run: %v", err)
					}
					<-senderDone
					t.Logf("%d signals sent, %d handler runs, total count %d, %d yields", n, calls.Load(), total.Load(), ringev.Yields(l))
					if total.Load() != n || calls.Load() != n {
						t.Errorf("%d signals sent one at a time: %d handler runs with a total count of %d", n, calls.Load(), total.Load())
					}
					if runtime.GOMAXPROCS(0) == 1 {
						checkYields(t, ringev.Yields(l)) // none with one P
					} // with two, the sender often runs when the loop would yield (the yield waits for an idle scheduler): the count is only logged
				})
			})
		})
	}
}

// TestYieldKeepsTheLoopOnItsThread: a loop waiting on a 100 µs timer again and again for 200 ms
// (~40 yields) runs every Once on the thread that created it (io_uring's SINGLE_ISSUER and
// DEFER_TASKRUN need that; a Once on another thread fails with EEXIST), with GOMAXPROCS 2
// (with 1 it does not yield: checkYields), while other goroutines keep waking the scheduler.
func TestYieldKeepsTheLoopOnItsThread(t *testing.T) {
	eachProcs(t, func(t *testing.T) {
		eachBackend(t, withFallback(), func(t *testing.T, backend string) {
			l := newLoop(t, backend)
			tid := unix.Gettid()
			stop := make(chan struct{})
			var wg sync.WaitGroup
			for i := 0; i < 2; i++ { // goroutines for the scheduler to run now and then while the loop yields
				wg.Add(1)
				go func() {
					defer wg.Done()
					for {
						select {
						case <-stop:
							return
						case <-time.After(200 * time.Microsecond):
						}
					}
				}()
			}
			defer func() { close(stop); wg.Wait() }()
			var rearm func(*ringev.Timer)
			rearm = func(*ringev.Timer) { l.AddTimer(100*time.Microsecond, rearm) }
			l.AddTimer(100*time.Microsecond, rearm)
			// Enough turns to see 10 yields (with GOMAXPROCS 1, where the loop does not
			// yield, 200 Onces), counted, not timed: a loaded machine makes fewer in a while.
			enough := func(onces int) bool {
				if runtime.GOMAXPROCS(0) == 1 {
					return onces >= 200
				}
				return ringev.Yields(l) >= 10
			}
			onces := 0
			for end := time.Now().Add(deadline); !enough(onces); onces++ {
				if time.Now().After(end) {
					t.Fatalf("only %d yields in %d Onces within %v", ringev.Yields(l), onces, deadline)
				}
				if err := l.Once(); err != nil {
					t.Fatalf("Once %d: %v", onces, err)
				}
				if got := unix.Gettid(); got != tid {
					t.Fatalf("after Once %d (%d yields) the loop runs on thread %d, created on %d", onces, ringev.Yields(l), got, tid)
				}
			}
			t.Logf("%d Onces, %d yields, thread %d throughout", onces, ringev.Yields(l), tid)
			checkYields(t, ringev.Yields(l))
		})
	})
}

// TestYieldThenNestedOnceAndCloseInAHandlerAreErrNested: after the loop has yielded, Once and
// Close called from a handler return ErrNested and leave the loop working.
func TestYieldThenNestedOnceAndCloseInAHandlerAreErrNested(t *testing.T) {
	eachBackend(t, withFallback(), func(t *testing.T, backend string) {
		l := newLoop(t, backend)
		var rearm func(*ringev.Timer)
		ticks := 0
		rearm = func(*ringev.Timer) { ticks++; l.AddTimer(100*time.Microsecond, rearm) }
		l.AddTimer(100*time.Microsecond, rearm)
		untilFor(t, l, 10*time.Second, "a few yields", func() bool { return ringev.Yields(l) >= 3 })
		var onceErr, closeErr error
		ran := false
		l.AddTimer(0, func(*ringev.Timer) { ran, onceErr, closeErr = true, l.Once(), l.Close() })
		until(t, l, func() bool { return ran })
		if !errors.Is(onceErr, ringev.ErrNested) || !errors.Is(closeErr, ringev.ErrNested) {
			t.Errorf("in a handler: Once = %v, Close = %v; want ErrNested for both", onceErr, closeErr)
		}
		before := ticks
		until(t, l, func() bool { return ticks > before+10 })
	})
}

// TestYieldLoopsMadeAndClosedConcurrentlyLeakNothing: eight goroutines each make a loop
// (backends in turn), run it on a 100 µs timer for 12 ms (past the 5 ms yield), and close it, 15
// times, while two other loops block on idle fds (woken by Posts now and then): no error, and
// afterwards the process has the fds and goroutines it had before.
func TestYieldLoopsMadeAndClosedConcurrentlyLeakNothing(t *testing.T) {
	eachProcs(t, func(t *testing.T) {
		ignore := goleak.IgnoreCurrent()
		before := testutil.OpenFds(t)
		backends := withFallback()
		var wg sync.WaitGroup
		errs := make(chan error, 64)
		stopIdle := make(chan struct{})
		var idleWG sync.WaitGroup
		for i := 0; i < 2; i++ {
			idleWG.Add(1)
			go func(b string) {
				defer idleWG.Done()
				var p [2]int
				if err := unix.Pipe2(p[:], unix.O_CLOEXEC|unix.O_NONBLOCK); err != nil {
					errs <- err
					return
				}
				defer unix.Close(p[0])
				defer unix.Close(p[1])
				l, err := newLoopNamed(b)
				if err != nil {
					errs <- err
					return
				}
				if _, err := l.AddFd(p[0], ringev.Read, func(*ringev.FdEvent, ringev.Flags) {}); err != nil {
					errs <- err
					return
				}
				go func() {
					for {
						select {
						case <-stopIdle:
							l.Stop()
							return
						case <-time.After(7 * time.Millisecond):
							l.Post(func() {})
						}
					}
				}()
				if err := l.Run(); err != nil {
					errs <- fmt.Errorf("idle loop %s: Run: %w", b, err)
				}
				if err := l.Close(); err != nil {
					errs <- fmt.Errorf("idle loop %s: Close: %w", b, err)
				}
			}(backends[i%len(backends)])
		}
		for g := 0; g < 8; g++ {
			wg.Add(1)
			go func(g int) {
				defer wg.Done()
				for i := 0; i < 15; i++ {
					b := backends[(g+i)%len(backends)]
					l, err := newLoopNamed(b)
					if err != nil {
						errs <- err
						return
					}
					var rearm func(*ringev.Timer)
					rearm = func(*ringev.Timer) { l.AddTimer(100*time.Microsecond, rearm) }
					l.AddTimer(100*time.Microsecond, rearm)
					for end := time.Now().Add(12 * time.Millisecond); time.Now().Before(end); {
						if err := l.Once(); err != nil {
							errs <- fmt.Errorf("%s: Once: %w", b, err)
							break
						}
					}
					if err := l.Close(); err != nil {
						errs <- fmt.Errorf("%s: Close: %w", b, err)
					}
				}
			}(g)
		}
		wg.Wait()
		close(stopIdle)
		idleWG.Wait()
		close(errs)
		for err := range errs {
			t.Error(err)
		}
		if now := testutil.OpenFds(t); !slices.Equal(now, before) {
			t.Errorf("open fds after: %v, before: %v", now, before)
		}
		goleak.VerifyNone(t, ignore)
	})
}

// TestYieldNoneBesideACPUBoundGoroutineOnOneProc: with GOMAXPROCS 1 (what Go sets in a
// container limited to one CPU) and one CPU-bound goroutine beside the loop, the loop never
// yields, and a 2 ms timer re-armed over and over runs at least 100 times a second and at a
// median of at most 5 ms late, both over the timers the machine left alone. A yield there puts
// the loop behind the CPU-bound goroutine for that goroutine's whole time slice (10-20 ms,
// until the runtime's monitor preempts it), waiting for Go's scheduler, not for a CPU; without
// a yield the loop keeps its P through its short waits.
//
// The machine's load is left out: the rate and the lateness are those of the timers during whose
// 2 ms the thread never waited for a CPU (runWait; at least 75 of them, the loop runs on until it
// has them), over the time from their arming to their run. A wait for a CPU
// costs more than itself: it prolongs the loop's syscall, and the monitor takes a P held that
// long in a syscall and gives it to the CPU-bound goroutine, for its time slice.
func TestYieldNoneBesideACPUBoundGoroutineOnOneProc(t *testing.T) {
	eachBackend(t, withFallback(), func(t *testing.T, backend string) {
		old := runtime.GOMAXPROCS(1)
		defer runtime.GOMAXPROCS(old)
		l := newLoop(t, backend)
		tid := unix.Gettid() // New locked this goroutine to its thread
		stop := make(chan struct{})
		var wg sync.WaitGroup
		wg.Add(1)
		go func() { // CPU-bound: preempted only by the runtime
			defer wg.Done()
			for x := 0; ; x++ {
				select {
				case <-stop:
					return
				default:
				}
				for j := 0; j < 100000; j++ {
					x += j
				}
			}
		}()
		defer func() { close(stop); wg.Wait() }()
		var late []time.Duration // of the timers the machine left alone
		var alone time.Duration  // their time from arming to run
		timers := 0
		const d = 2 * time.Millisecond
		var arm func()
		arm = func() {
			armed, waited := time.Now(), testutil.RunWait(t, tid)
			l.AddTimer(d, func(*ringev.Timer) {
				timers++
				if testutil.RunWait(t, tid) == waited {
					late = append(late, time.Since(armed)-d)
					alone += time.Since(armed)
				}
				arm()
			})
		}
		start := time.Now()
		arm()
		for time.Since(start) < 1500*time.Millisecond || len(late) < 75 {
			if time.Since(start) > 10*deadline {
				t.Fatalf("%d timers in %v, of which the machine left %d alone: the machine is too busy for this test", timers, time.Since(start), len(late))
			}
			if err := l.Once(); err != nil {
				t.Fatalf("Once: %v", err)
			}
		}
		slices.Sort(late)
		p50 := late[len(late)/2]
		rate := float64(len(late)) / alone.Seconds()
		t.Logf("%d timers of %v in %v; the %d the machine left alone: %.0f a second of their time, median %v late, max %v; %d yields",
			timers, d, time.Since(start).Round(time.Millisecond), len(late), rate, p50.Round(time.Microsecond), late[len(late)-1].Round(time.Microsecond), ringev.Yields(l))
		if n := ringev.Yields(l); n != 0 {
			t.Errorf("with one P and a CPU-bound goroutine the loop yielded %d times", n)
		}
		if rate < 100 || p50 > 5*time.Millisecond {
			t.Errorf("beside a CPU-bound goroutine on one P, the %d timers of %v the machine left alone ran %.0f times a second of their time, a median %v late (want >= 100 a second, median <= 5ms)", len(late), d, rate, p50.Round(time.Microsecond))
		}
	})
}

// sysmonRun is how long (of its own time) the test's loop goes from one short timer wait to the
// next.
const sysmonRun = 300 * time.Millisecond

// sysmonTries is how many runs of sysmonRun the test makes before it fails.
const sysmonTries = 3

// othersSwitches sums voluntary_ctxt_switches of every thread of this process but tid
// (/proc/self/task/*/status). A thread that exits meanwhile is left out.
func othersSwitches(t *testing.T, tid int) int {
	t.Helper()
	dirs, err := filepath.Glob("/proc/self/task/*")
	if err != nil || len(dirs) == 0 {
		t.Fatalf("listing /proc/self/task: %v (%d threads)", err, len(dirs))
	}
	sum := 0
	for _, d := range dirs {
		if filepath.Base(d) == strconv.Itoa(tid) {
			continue
		}
		b, err := os.ReadFile(filepath.Join(d, "status"))
		if err != nil {
			continue // exited
		}
		for _, line := range strings.Split(string(b), "\n") {
			if v, ok := strings.CutPrefix(line, "voluntary_ctxt_switches:"); ok {
				n, err := strconv.Atoi(strings.TrimSpace(v))
				if err != nil {
					t.Fatalf("%s/status: %q: %v", d, line, err)
				}
				sum += n
			}
		}
	}
	return sum
}

// TestYieldShortBlockingWaitsLeaveTheRuntimeMonitorAsleep: a loop that waits on a 100 µs timer
// again and again for 300 ms of its own (every wait blocks in the backend's syscall; the time its
// thread waited for a CPU left out) makes the process's other threads (the runtime's monitor
// above all) switch far fewer times than it waits, in one of up to three runs. Without the
// loop's yields the monitor takes the loop's P every 10 ms and then ticks every 20 µs for a
// millisecond: about as many switches as 100 µs waits.
func TestYieldShortBlockingWaitsLeaveTheRuntimeMonitorAsleep(t *testing.T) {
	if runtime.GOMAXPROCS(0) < 2 {
		t.Skip("needs GOMAXPROCS >= 2: with one P the runtime's monitor takes a P blocked in a syscall after 20 µs, whatever the loop does")
	}
	eachBackend(t, withFallback(), func(t *testing.T, backend string) {
		l := newLoop(t, backend)
		tid := unix.Gettid() // New locked this goroutine to its thread
		waits := 0
		var rearm func(*ringev.Timer)
		rearm = func(*ringev.Timer) { waits++; l.AddTimer(100*time.Microsecond, rearm) }
		l.AddTimer(100*time.Microsecond, rearm)
		runFor := func(d time.Duration) { // d of the loop's own time
			start, waited := time.Now(), testutil.RunWait(t, tid)
			for time.Since(start)-(testutil.RunWait(t, tid)-waited) < d {
				if time.Since(start) > 10*deadline {
					t.Fatalf("the loop had less than %v of its own in %v: the machine is too busy for this test", d, time.Since(start))
				}
				if err := l.Once(); err != nil {
					t.Fatalf("Once: %v", err)
				}
			}
		}
		runFor(20 * time.Millisecond) // past the monitor's 10 ms time slice
		// Up to sysmonTries runs: on a loaded machine the loop's thread may be kept off its CPU
		// past the monitor's time slice now and then (the old behaviour for that run); without
		// the yield every run fails.
		for try := 1; ; try++ {
			before, w0 := othersSwitches(t, tid), waits
			runFor(sysmonRun)
			others, n := othersSwitches(t, tid)-before, waits-w0
			t.Logf("run %d: %d timer waits, %d voluntary switches of the other threads", try, n, others)
			if n < 200 {
				t.Fatalf("only %d timer waits of 100 µs in %v of the loop's own time", n, sysmonRun)
			}
			if others*4 <= n {
				return
			}
			if try == sysmonTries {
				t.Errorf("in each of %d runs the other threads switched more than a quarter as often as the loop waited (last: %d times in %d short waits): the runtime's monitor keeps taking the loop's P", try, others, n)
				return
			}
		}
	})
}

// allStacks returns every goroutine's stack.
func allStacks() string {
	buf := make([]byte, 1<<20)
	return string(buf[:runtime.Stack(buf, true)])
}

// newLoopNamed makes a loop on backend b from the calling goroutine, without a test's cleanup
// (the caller closes it on its own goroutine). uringFallback is plain uring here: the fallback
// switch is a package variable that loops made concurrently would race on.
func newLoopNamed(b string) (*ringev.Loop, error) {
	name := b
	if b == uringFallback {
		name = "uring"
	}
	return ringev.New(ringev.WithBackend(name))
}
