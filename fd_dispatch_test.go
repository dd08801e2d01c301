//go:build linux

package ringev_test

// The fd dispatch order (once.go: markReady, pickFd): among the ready fd events the one that ran
// least recently runs first, with 1 to 1,000 ready fds, and the cost of picking it does not grow
// with the number of ready (or idle) fds.

import (
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/ringev/ringev"
	"github.com/ringev/ringev/internal/testutil"
)

// readyCounts are the numbers of ready fds the dispatch tests run with.
var readyCounts = []int{1, 16, 256, 1000}

// lruLog checks, at every handler run, that the handler is the least recently run of those
// whose fds are ready (ready[i]); it counts runs on a clock of its own.
type lruLog struct {
	t       *testing.T
	lastRun []uint64 // clock value of handler i's last run; 0: never ran
	ready   []bool
	clock   uint64
	bad     int // runs that were not the least recently run (the first few are reported)
}

func newLRULog(t *testing.T, n int) *lruLog {
	return &lruLog{t: t, lastRun: make([]uint64, n), ready: make([]bool, n)}
}

// ran records a run of handler i and checks that no ready handler ran less recently.
func (g *lruLog) ran(i int) {
	g.t.Helper()
	if !g.ready[i] {
		g.t.Errorf("handler %d ran while its fd was not ready", i)
	}
	for j, r := range g.ready {
		if r && g.lastRun[j] < g.lastRun[i] {
			if g.bad++; g.bad <= 3 {
				g.t.Errorf("run %d: handler %d (last run at %d) ran before ready handler %d (last run at %d)",
					g.clock+1, i, g.lastRun[i], j, g.lastRun[j])
			}
			break
		}
	}
	g.clock++
	g.lastRun[i] = g.clock
}

// TestFdDispatchAlwaysReadyRunLeastRecentlyRunFirst: k pipes that stay readable (the handlers
// never read): over k runs and up to 100 more, every run is of the handler that ran least
// recently, on every backend and in every dispatch mode. (With WithFreshReadiness every run
// waits, and on uring-poll re-arms every ready fd's poll: 1,000 SQEs a run at k = 1,000.)
func TestFdDispatchAlwaysReadyRunLeastRecentlyRunFirst(t *testing.T) {
	eachMode(t, withFallback(), allModes, func(t *testing.T, backend string, m mode) {
		for _, k := range readyCounts {
			t.Run(fmt.Sprint(k), func(t *testing.T) {
				rs, _ := testutil.Pipes(t, k, true)
				l := newLoop(t, backend, m.opts()...)
				g := newLRULog(t, k)
				for i, r := range rs {
					g.ready[i] = true
					addFd(t, l, r, ringev.Read, func(*ringev.FdEvent, ringev.Flags) { g.ran(i) })
				}
				untilFor(t, l, 4*deadline, "the dispatch rounds", func() bool { return g.clock >= uint64(k+min(k, 100)) || g.bad > 0 })
			})
		}
	})
}

// TestFdDispatchChangingReadinessRunsLeastRecentlyRunFirst: k pipes whose handlers read their
// byte; 30 times over, a random set of them (1 to k, or up to 300) gets a byte each, written in
// a random order, and the loop runs until every byte is read: every run is of the least
// recently run handler among those with a byte to read, so the handlers that ran in an earlier
// set but not the last one are put in order too.
func TestFdDispatchChangingReadinessRunsLeastRecentlyRunFirst(t *testing.T) {
	eachMode(t, withFallback(), allModes, func(t *testing.T, backend string, m mode) {
		for _, k := range readyCounts {
			t.Run(fmt.Sprint(k), func(t *testing.T) {
				rs, ws := testutil.Pipes(t, k, false)
				l := newLoop(t, backend, m.opts()...)
				g := newLRULog(t, k)
				pending := 0
				for i, r := range rs {
					addFd(t, l, r, ringev.Read, func(ev *ringev.FdEvent, _ ringev.Flags) {
						g.ran(i)
						testutil.Drain(t, ev.Fd())
						g.ready[i] = false
						pending--
					})
				}
				rng := rand.New(rand.NewPCG(uint64(k), 26))
				for range 30 {
					set := rng.Perm(k)[:1+rng.IntN(min(k, 300))]
					for _, i := range set {
						g.ready[i] = true
						testutil.Write(t, ws[i], oneByte)
					}
					pending = len(set)
					until(t, l, func() bool { return pending == 0 || g.bad > 0 })
					if g.bad > 0 {
						return
					}
				}
			})
		}
	})
}

// TestFdDispatchPickCostDoesNotGrowWithReadyFds: with k always-ready pipes, and 2,000 idle
// pipes watched beside them, the loop's picks look at one entry of the dispatch order per
// handler run, for k = 1 to 1,000 (a scan of the readiness cache per pick looked at all of
// them), on every backend.
func TestFdDispatchPickCostDoesNotGrowWithReadyFds(t *testing.T) {
	eachBackend(t, withFallback(), func(t *testing.T, backend string) {
		for _, k := range readyCounts {
			t.Run(fmt.Sprint(k), func(t *testing.T) {
				rs, _ := testutil.Pipes(t, k, true)
				idle, _ := testutil.Pipes(t, 2000, false)
				l := newLoop(t, backend)
				runs := 0
				for _, r := range rs {
					addFd(t, l, r, ringev.Read, func(*ringev.FdEvent, ringev.Flags) { runs++ })
				}
				for _, r := range idle {
					addFd(t, l, r, ringev.Read, never(t, "idle pipe's Read handler"))
				}
				until(t, l, func() bool { return runs >= 2*k }) // warm-up: every fd ran
				v0, n0 := ringev.PickVisits(l)
				until(t, l, func() bool { return runs >= 2*k+max(k, 100) })
				v1, n1 := ringev.PickVisits(l)
				if per := float64(v1-v0) / float64(n1-n0); per > 1.1 {
					t.Fatalf("%d ready fds, 2000 idle: the picks looked at %.2f entries of the dispatch order per handler run (%d for %d runs), want 1",
						k, per, v1-v0, n1-n0)
				}
			})
		}
	})
}
