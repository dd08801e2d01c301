//go:build linux

package ringev_test

// Tests of timers (Loop.AddTimer): the largest durations, and a due timer's turn among ready fds.

import (
	"math"
	"testing"
	"time"

	"github.com/ringev/ringev"
	"github.com/ringev/ringev/internal/testutil"
)

// TestTimerRunsPromptlyAmongManyReadyFds: 150 always-ready fds keep the loop busy; a 5 ms timer
// still runs at the first Once (or batch) that starts after its deadline, 5 times over.
func TestTimerRunsPromptlyAmongManyReadyFds(t *testing.T) {
	const n = 150
	eachMode(t, withFallback(), allModes, func(t *testing.T, backend string, m mode) {
		rs, _ := testutil.Pipes(t, n, true)
		l := newLoop(t, backend, m.opts()...)
		fdRuns := 0
		for _, r := range rs {
			addFd(t, l, r, ringev.Read, func(*ringev.FdEvent, ringev.Flags) { fdRuns++ })
		}
		for k := range 5 {
			ran := false
			tm := l.AddTimer(5*time.Millisecond, func(*ringev.Timer) { ran = true })
			for !ran {
				due := !time.Now().Before(tm.Deadline())
				before := fdRuns
				once(t, l)
				if due && !ran {
					t.Fatalf("timer %d: a Once that started after its deadline ran %d fd handlers instead of the timer", k, fdRuns-before)
				}
			}
		}
	})
}

// TestTimerHugeDurationsDoNotOverflow: A timer or request deadline of the largest time.Duration (a
// common "never") does not fire at once (now + d must not overflow), and the loop sleeps meanwhile:
// a 50 ms timer beside it is the only thing that runs, within a handful of Onces.
func TestTimerHugeDurationsDoNotOverflow(t *testing.T) {
	eachBackend(t, ringev.Backends(), func(t *testing.T, backend string) {
		l := newLoop(t, backend)
		never := time.Duration(math.MaxInt64)
		neverRan := false
		l.AddTimer(never, func(*ringev.Timer) { neverRan = true })
		r, _ := testutil.Pipe(t)
		var reqErr error
		reqDone := false
		h, err := l.Read(r, make([]byte, 1), -1, func(c *ringev.Completion) { reqDone, reqErr = true, c.Err }, 0)
		if err != nil {
			t.Fatal(err)
		}
		if err := h.SetTimeout(never); err != nil {
			t.Fatal(err)
		}
		fired := false
		l.AddTimer(50*time.Millisecond, func(*ringev.Timer) { fired = true })
		onces := 0
		end := time.Now().Add(5 * time.Second)
		for !fired && time.Now().Before(end) {
			if err := l.Once(); err != nil {
				t.Fatal(err)
			}
			onces++
		}
		if neverRan {
			t.Error("a timer of math.MaxInt64 ns ran at once")
		}
		if reqDone {
			t.Errorf("a Read with a deadline of math.MaxInt64 ns ended at once: %v", reqErr)
		}
		if onces > 10 {
			t.Errorf("%d Onces in 50 ms: the loop spins instead of sleeping", onces)
		}
		h.Cancel()
		untilFor(t, l, deadline, "the cancelled Read", func() bool { return reqDone })
	})
}
