//go:build linux

package ringev_test

import (
	"runtime"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/ringev/ringev"
)

// TestTimersBesideACPUBoundGoroutineOnOneProcStayOnTime: with GOMAXPROCS 1 (what Go sets in a
// container limited to one CPU) and one CPU-bound goroutine beside the loop, a 2 ms timer re-armed
// for 1.5 s runs at least 150 times, half of them at most 5 ms late, and the loop never yields.
// A yield there (once.go, yieldBeforeBlock, before it looked at the scheduler) put the loop
// behind the CPU-bound goroutine for that goroutine's whole time slice (10-20 ms, until the
// runtime's monitor preempts it), and every wait then came more than 5 ms after the last yield
// and yielded again: ~75-80 runs, median 18 ms late. Without a yield the loop keeps its P
// through its short waits (~440 runs, median 0.1 ms late).
func TestTimersBesideACPUBoundGoroutineOnOneProcStayOnTime(t *testing.T) {
	eachBackend(t, withFallback(), func(t *testing.T, backend string) {
		old := runtime.GOMAXPROCS(1)
		defer runtime.GOMAXPROCS(old)
		l := newLoop(t, backend)
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
		var late []time.Duration
		const d = 2 * time.Millisecond
		var arm func()
		arm = func() {
			want := time.Now().Add(d)
			l.AddTimer(d, func(*ringev.Timer) { late = append(late, time.Since(want)); arm() })
		}
		arm()
		for end := time.Now().Add(1500 * time.Millisecond); time.Now().Before(end); {
			if err := l.Once(); err != nil {
				t.Fatalf("Once: %v", err)
			}
		}
		if len(late) == 0 {
			t.Fatalf("no timer ran in 1.5 s")
		}
		slices.Sort(late)
		p50 := late[len(late)/2]
		t.Logf("%d timers of %v in 1.5 s: median %v late, max %v, %d yields", len(late), d, p50.Round(time.Microsecond), late[len(late)-1].Round(time.Microsecond), ringev.Yields(l))
		if n := ringev.Yields(l); n != 0 {
			t.Errorf("with one P and a CPU-bound goroutine the loop yielded %d times", n)
		}
		if len(late) < 150 || p50 > 5*time.Millisecond {
			t.Errorf("beside a CPU-bound goroutine on one P, %d timers of %v ran in 1.5 s, the median %v late (want >= 150, median <= 5ms)", len(late), d, p50.Round(time.Microsecond))
		}
	})
}
