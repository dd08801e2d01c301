//go:build linux

package ringev_test

// Tests of signal events (Loop.AddSignal) through os/signal: counts, one-shot handlers, Close,
// and delivery to a busy loop.

import (
	"fmt"
	"os"
	"runtime"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/ringev/ringev"
	"golang.org/x/sys/unix"
)

// TestSignalCountsEveryDeliveredRaise: SIGUSR1 is raised 30 times, each delivery let through to
// the handler before the next raise: the counts handed to the handler add up to 30 exactly. Then
// 10 back-to-back raises add at least 1 and at most 10.
func TestSignalCountsEveryDeliveredRaise(t *testing.T) {
	eachBackend(t, ringev.Backends(), func(t *testing.T, backend string) {
		guard := sigGuard(t, syscall.SIGUSR1)
		l := newLoop(t, backend)
		sum, calls := 0, 0
		s, err := l.AddSignal(syscall.SIGUSR1, func(s *ringev.Signal, count int) {
			if count < 1 {
				t.Errorf("signal handler called with count %d, want >= 1", count)
			}
			sum += count
			calls++
		})
		if err != nil {
			t.Fatalf("AddSignal: %v", err)
		}
		defer s.Close()
		n := 30
		for i := 1; i <= n; i++ {
			raise(t, guard, syscall.SIGUSR1)
			until(t, l, func() bool { return sum >= i })
			if sum != i {
				t.Fatalf("after %d raises the handler was handed %d deliveries", i, sum)
			}
		}
		settle(t, l, 20*time.Millisecond, 3)
		if sum != n {
			t.Fatalf("handler was handed %d deliveries for %d raises", sum, n)
		}
		// Deliveries that arrive while the loop is not running add up: 3 raises, each
		// delivered to the process before the next, then the handler gets them all.
		for r := 0; r < 5; r++ {
			for k := 0; k < 3; k++ {
				raise(t, guard, syscall.SIGUSR1)
			}
			want := sum + 3
			until(t, l, func() bool { return sum >= want })
			settle(t, l, 5*time.Millisecond, 3)
			if sum != want {
				t.Fatalf("3 deliveries while the loop was not running were handed over as %d", 3+sum-want)
			}
		}
		n += 15
		for i := 0; i < 10; i++ {
			if err := unix.Kill(os.Getpid(), syscall.SIGUSR1); err != nil {
				t.Fatalf("kill: %v", err)
			}
		}
		until(t, l, func() bool { return sum > n })
		settle(t, l, 50*time.Millisecond, 12)
		if sum < n+1 || sum > n+10 {
			t.Fatalf("10 back-to-back raises were counted as %d, want 1..10", sum-n)
		}
		t.Logf("%d handler calls; 10 back-to-back raises counted as %d", calls, sum-n)
	})
}

// TestSignalTwoSignalsCountedSeparately (tevent's context shape): SIGUSR1 and SIGALRM raised
// alternately, each delivered before the next raise, are counted exactly, each by its own
// handler.
func TestSignalTwoSignalsCountedSeparately(t *testing.T) {
	eachBackend(t, ringev.Backends(), func(t *testing.T, backend string) {
		guard := sigGuard(t, syscall.SIGUSR1, syscall.SIGALRM)
		l := newLoop(t, backend)
		var usr1, alrm int
		s1, err := l.AddSignal(syscall.SIGUSR1, func(_ *ringev.Signal, c int) { usr1 += c })
		if err != nil {
			t.Fatalf("AddSignal(SIGUSR1): %v", err)
		}
		defer s1.Close()
		s2, err := l.AddSignal(syscall.SIGALRM, func(_ *ringev.Signal, c int) { alrm += c })
		if err != nil {
			t.Fatalf("AddSignal(SIGALRM): %v", err)
		}
		defer s2.Close()
		for i := 1; i <= 10; i++ {
			raise(t, guard, syscall.SIGUSR1)
			until(t, l, func() bool { return usr1 >= i })
			raise(t, guard, syscall.SIGALRM)
			until(t, l, func() bool { return alrm >= i })
			if usr1 != i || alrm != i {
				t.Fatalf("after %d raises of each: SIGUSR1 counted %d, SIGALRM counted %d", i, usr1, alrm)
			}
		}
	})
}

// TestSignalOnceRunsOnce: an AddSignalOnce handler runs once, for the first delivery, and never
// again for later ones.
func TestSignalOnceRunsOnce(t *testing.T) {
	eachBackend(t, ringev.Backends(), func(t *testing.T, backend string) {
		guard := sigGuard(t, syscall.SIGUSR1)
		l := newLoop(t, backend)
		var counts []int
		if _, err := l.AddSignalOnce(syscall.SIGUSR1, func(_ *ringev.Signal, c int) { counts = append(counts, c) }); err != nil {
			t.Fatalf("AddSignalOnce: %v", err)
		}
		raise(t, guard, syscall.SIGUSR1)
		until(t, l, func() bool { return len(counts) > 0 })
		for i := 0; i < 3; i++ {
			raise(t, guard, syscall.SIGUSR1)
			settle(t, l, 20*time.Millisecond, 3)
		}
		if len(counts) != 1 || counts[0] != 1 {
			t.Fatalf("one-shot handler calls: %v, want exactly one call with count 1", counts)
		}
	})
}

// TestSignalCloseStopsDelivery: after Signal.Close the handler is not called for later
// deliveries, and another handler of the same signal still is.
func TestSignalCloseStopsDelivery(t *testing.T) {
	eachBackend(t, ringev.Backends(), func(t *testing.T, backend string) {
		guard := sigGuard(t, syscall.SIGUSR1)
		l := newLoop(t, backend)
		closedSum, otherSum := 0, 0
		s, err := l.AddSignal(syscall.SIGUSR1, func(_ *ringev.Signal, c int) { closedSum += c })
		if err != nil {
			t.Fatalf("AddSignal: %v", err)
		}
		other, err := l.AddSignal(syscall.SIGUSR1, func(_ *ringev.Signal, c int) { otherSum += c })
		if err != nil {
			t.Fatalf("AddSignal: %v", err)
		}
		defer other.Close()
		raise(t, guard, syscall.SIGUSR1)
		until(t, l, func() bool { return closedSum == 1 && otherSum == 1 })
		s.Close()
		for i := 2; i <= 4; i++ {
			raise(t, guard, syscall.SIGUSR1)
			until(t, l, func() bool { return otherSum >= i })
		}
		settle(t, l, 20*time.Millisecond, 3)
		if closedSum != 1 {
			t.Fatalf("closed handler was handed %d deliveries, want 1 (the one before Close)", closedSum)
		}
		if otherSum != 4 {
			t.Fatalf("the other handler was handed %d deliveries, want 4", otherSum)
		}
	})
}

// TestSignalWhileBusyIsDelivered: a signal raised while the loop is never idle reaches
// its handler (os/signal, and WithExactSignals where it exists).
func TestSignalWhileBusyIsDelivered(t *testing.T) {
	for _, exact := range []bool{false, true} {
		t.Run(fmt.Sprintf("exact=%v", exact), func(t *testing.T) {
			eachMode(t, withFallback(), allModes, func(t *testing.T, backend string, m mode) {
				opts := m.opts()
				if exact {
					requireExactSignals(t)
					opts = append(opts, ringev.WithExactSignals())
				}
				guard := sigGuard(t, syscall.SIGUSR2)
				l := newLoop(t, backend, opts...)
				var fdRuns atomic.Int64
				always(t, l, &fdRuns)
				got := 0
				s, err := l.AddSignal(syscall.SIGUSR2, func(_ *ringev.Signal, n int) { got += n })
				if err != nil {
					t.Fatalf("AddSignal: %v", err)
				}
				defer s.Close()
				for i := 1; i <= 5; i++ {
					go func() {
						for fdRuns.Load() < int64(50*i) {
							if stopped(t) {
								return
							}
							runtime.Gosched()
						}
						unix.Kill(os.Getpid(), syscall.SIGUSR2)
					}()
					until(t, l, func() bool { return got >= i })
				}
				if got != 5 {
					t.Fatalf("signal count %d, want 5", got)
				}
				_ = guard
			})
		})
	}
}
