//go:build linux

package ringev_test

// Tests of Post: functions queued from any goroutine run on the loop, once each, in order, and
// wake it.

import (
	"errors"
	"runtime"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/ringev/ringev"
	"github.com/ringev/ringev/internal/testutil"
	"golang.org/x/sys/unix"
)

// TestPostFromManyGoroutinesRunsEachOnceInOrder: 100 goroutines, released at once, each post 100
// functions while the loop runs: every function runs exactly once, on the loop's goroutine, and
// the functions of each goroutine run in the order posted.
func TestPostFromManyGoroutinesRunsEachOnceInOrder(t *testing.T) {
	eachBackend(t, ringev.Backends(), func(t *testing.T, backend string) {
		const posters, each = 100, 100
		l := newLoop(t, backend)
		seen := make([][]int, posters) // written only on the loop's goroutine
		total := 0
		start := make(chan struct{})
		var wg sync.WaitGroup
		errs := make(chan error, posters)
		for g := 0; g < posters; g++ {
			wg.Add(1)
			go func() {
				defer wg.Done()
				<-start
				for i := 0; i < each; i++ {
					if err := l.Post(func() { seen[g] = append(seen[g], i); total++ }); err != nil {
						errs <- err
						return
					}
				}
			}()
		}
		// Something to wait for while no post is queued yet (else Once returns ErrNothingToDo).
		keep := l.AddTimer(time.Minute, func(*ringev.Timer) {})
		defer keep.Stop()
		close(start)
		untilFor(t, l, 4*deadline, "every posted function", func() bool { return total >= posters*each })
		wg.Wait()
		close(errs)
		for err := range errs {
			t.Fatalf("Post: %v", err)
		}
		settle(t, l, 20*time.Millisecond, 3)
		if total != posters*each {
			t.Fatalf("%d posted functions ran, want %d", total, posters*each)
		}
		want := make([]int, each)
		for i := range want {
			want[i] = i
		}
		for g, s := range seen {
			if !slices.Equal(s, want) {
				t.Fatalf("goroutine %d: its functions ran in the order %v, want each once, in posting order", g, s)
			}
		}
	})
}

// TestPostFromGoroutinesWhileBusyAllRun: the loop is never idle (an always-readable fd);
// four goroutines post 500 functions each; all of them run, in order per goroutine, and the fd
// handler keeps running meanwhile.
func TestPostFromGoroutinesWhileBusyAllRun(t *testing.T) {
	eachMode(t, withFallback(), allModes, func(t *testing.T, backend string, m mode) {
		l := newLoop(t, backend, m.opts()...)
		var fdRuns atomic.Int64
		always(t, l, &fdRuns)
		const g, per = 4, 500
		last := make([]int, g)
		ran := 0
		var wg sync.WaitGroup
		for k := range g {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for i := 1; i <= per; i++ {
					if err := l.Post(func() {
						if last[k] != i-1 {
							t.Errorf("goroutine %d: post %d ran after %d", k, i, last[k])
						}
						last[k] = i
						ran++
					}); err != nil {
						t.Errorf("Post: %v", err)
						return
					}
					if i%50 == 0 {
						runtime.Gosched()
					}
				}
			}()
		}
		untilFor(t, l, 2*deadline, "every posted function", func() bool { return ran == g*per })
		wg.Wait()
		// Posted functions come before fd handlers: the fd handler may or may not have run.
		n := fdRuns.Load()
		until(t, l, func() bool { return fdRuns.Load() > n })
	})
}

// TestPostWakesLoopBlockedInWait: a loop blocked in its wait (its only event is a 10 s timer)
// wakes for a Post from another goroutine; over 20 tries the median latency from Post to the
// function running is under 10 ms (a behaviour check with a generous bound, not a benchmark).
// Each Post comes once the loop's thread sleeps in its wait (whenBlocked), and the latency
// leaves out the time the loop's and the poster's threads waited for a CPU meanwhile (runWait):
// that is the machine's load, not the loop's.
func TestPostWakesLoopBlockedInWait(t *testing.T) {
	eachBackend(t, ringev.Backends(), func(t *testing.T, backend string) {
		l := newLoop(t, backend)
		tid := unix.Gettid() // New locked this goroutine to its thread
		sentinel := l.AddTimer(10*time.Second, func(*ringev.Timer) { t.Error("the 10 s timer ran") })
		defer sentinel.Stop()
		const tries = 20
		var lat, raw []time.Duration
		for i := 0; i < tries; i++ {
			var t0, ranAt time.Time
			var loopWait0, loopWait1, posterWait time.Duration
			posted := testutil.WhenBlocked(t, tid, func() {
				runtime.LockOSThread() // its waits for a CPU are this thread's
				defer runtime.UnlockOSThread()
				ptid := unix.Gettid()
				pw0, lw0 := testutil.RunWait(t, ptid), testutil.RunWait(t, tid)
				t0, loopWait0 = time.Now(), lw0
				if err := l.Post(func() { ranAt, loopWait1 = time.Now(), testutil.RunWait(t, tid) }); err != nil {
					t.Errorf("Post: %v", err)
				}
				posterWait = testutil.RunWait(t, ptid) - pw0
			})
			once(t, l)
			<-posted
			if ranAt.IsZero() {
				t.Fatalf("try %d: Once returned without running the posted function", i)
			}
			took := ranAt.Sub(t0)
			raw = append(raw, took)
			lat = append(lat, max(0, took-(loopWait1-loopWait0)-posterWait))
		}
		slices.Sort(lat)
		slices.Sort(raw)
		median := lat[len(lat)/2]
		t.Logf("Post wake-up latency over %d tries, without the waits for a CPU: min %v, median %v, max %v (with them: median %v, max %v)",
			tries, lat[0], median, lat[len(lat)-1], raw[len(raw)/2], raw[len(raw)-1])
		if median >= 10*time.Millisecond {
			t.Fatalf("median Post wake-up latency %v, want < 10ms (all: %v)", median, lat)
		}
	})
}

// TestPostWakesLoopRightAfterBusySpell: the loop alternates between busy spells (a pipe
// with data its handler drains over a few runs) and blocking; a goroutine posts at arbitrary
// moments, including the busy-to-blocking transition. Every post runs before the loop sleeps in
// its wait again (awaitWoken: the loop never sleeps on a post it missed).
func TestPostWakesLoopRightAfterBusySpell(t *testing.T) {
	eachMode(t, withFallback(), allModes, func(t *testing.T, backend string, m mode) {
		r, w := testutil.Pipe(t)
		l := newLoop(t, backend, m.opts()...)
		tid := unix.Gettid() // New locked this goroutine to its thread
		addFd(t, l, r, ringev.Read, func(ev *ringev.FdEvent, f ringev.Flags) {
			var b [1]byte // one byte per run: a few busy turns per burst
			ringev.ReadNonblocking(ev.Fd(), b[:])
		})
		const rounds = 300
		var worst atomic.Int64
		done := make(chan struct{})
		go func() {
			defer close(done)
			for i := range rounds {
				unix.Write(w, []byte("abcd")[:1+i%4])
				if i%3 == 0 {
					runtime.Gosched()
				} else if i%3 == 1 {
					time.Sleep(time.Duration(i%7) * 10 * time.Microsecond)
				}
				ran := make(chan struct{})
				t0 := time.Now()
				if err := l.Post(func() { close(ran) }); err != nil {
					t.Errorf("Post: %v", err)
					l.Stop() // Run would otherwise wait for its deadline
					return
				}
				if problem := testutil.AwaitWoken(tid, ringev.WakeFd(l), ran); problem != "" {
					t.Errorf("post %d: %s", i, problem)
					l.Stop()
					return
				}
				if d := int64(time.Since(t0)); d > worst.Load() {
					worst.Store(d)
				}
			}
			l.Stop()
		}()
		if err := run(t, l, 2*time.Minute); err != nil {
			t.Fatalf("Run: %v", err)
		}
		select {
		case <-done:
		case <-time.After(deadline):
			t.Fatal("poster did not finish")
		}
		t.Logf("worst post latency %v", time.Duration(worst.Load()))
	})
}

// TestPostRacingCloseGetsErrClosed: Posts from 8 goroutines racing the owner's Close: each Post
// returns nil or ErrClosed, no posted function runs after Close has returned, and nothing
// deadlocks.
func TestPostRacingCloseGetsErrClosed(t *testing.T) {
	eachBackend(t, ringev.Backends(), func(t *testing.T, backend string) {
		for round := range 20 {
			l := newLoop(t, backend) // closed by the test; cleanup's second Close returns nil
			var closedAt atomic.Bool
			var lateRuns atomic.Int64
			start := make(chan struct{})
			errc := make(chan error, 8)
			for range 8 {
				go func() {
					<-start
					for {
						err := l.Post(func() {
							if closedAt.Load() {
								lateRuns.Add(1)
							}
						})
						if err != nil {
							if !errors.Is(err, ringev.ErrClosed) {
								errc <- err
								return
							}
							errc <- nil
							return
						}
						l.Stop()
					}
				}()
			}
			close(start)
			tm := l.AddTimer(time.Duration(round)*100*time.Microsecond, func(*ringev.Timer) {})
			_ = tm
			for range 50 {
				l.Once()
			}
			if err := l.Close(); err != nil {
				t.Fatal(err)
			}
			closedAt.Store(true)
			for range 8 {
				select {
				case err := <-errc:
					if err != nil {
						t.Fatalf("Post: %v", err)
					}
				case <-time.After(5 * time.Second):
					t.Fatal("a poster did not see ErrClosed within 5 s")
				}
			}
			if n := lateRuns.Load(); n > 0 {
				t.Fatalf("%d posted functions ran after Close", n)
			}
		}
	})
}
