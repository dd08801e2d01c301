//go:build linux

package ringev_test

// Post (DESIGN.md point 8, issue 4 item 5): the one call safe from any goroutine. It queues a
// function and wakes the loop.

import (
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/ringev/ringev"
	"github.com/ringev/ringev/internal/testutil"
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
		testutil.OnceUntil(t, l, func() bool { return total >= posters*each }, 4*deadline)
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

// TestPostWakesLoopBlockedInWait: a loop blocked in its wait (its only event is a 10 s timer)
// wakes for a Post from another goroutine; over 20 tries the median latency from Post to the
// function running is under 10 ms (a behaviour check with a generous bound, not a benchmark).
func TestPostWakesLoopBlockedInWait(t *testing.T) {
	eachBackend(t, ringev.Backends(), func(t *testing.T, backend string) {
		l := newLoop(t, backend)
		sentinel := l.AddTimer(10*time.Second, func(*ringev.Timer) { t.Error("the 10 s timer ran") })
		defer sentinel.Stop()
		const tries = 20
		var lat []time.Duration
		for i := 0; i < tries; i++ {
			var ran time.Duration
			go func() {
				time.Sleep(5 * time.Millisecond) // let the loop block in its wait
				t0 := time.Now()
				if err := l.Post(func() { ran = time.Since(t0) }); err != nil {
					t.Errorf("Post: %v", err)
				}
			}()
			testutil.Once(t, l, deadline)
			if ran == 0 {
				t.Fatalf("try %d: Once returned without running the posted function", i)
			}
			lat = append(lat, ran)
		}
		slices.Sort(lat)
		median := lat[len(lat)/2]
		t.Logf("Post wake-up latency over %d tries: min %v, median %v, max %v", tries, lat[0], median, lat[len(lat)-1])
		if median >= 10*time.Millisecond {
			t.Fatalf("median Post wake-up latency %v, want < 10ms (all: %v)", median, lat)
		}
	})
}
