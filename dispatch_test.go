//go:build linux

package ringev_test

// Tests of what one Once runs, and in which order: requeuing handlers, WithDispatchAll and
// WithFreshReadiness.

import (
	"errors"
	"testing"
	"time"

	"github.com/ringev/ringev"
	"github.com/ringev/ringev/internal/testutil"
	"golang.org/x/sys/unix"
)

// TestDispatchRequeuingHandlerDoesNotStarveFds: a zero-delay timer re-added from its
// own handler (or an immediate, or a posted function, that re-queues itself) and a pipe that
// stays readable; 1,000 Onces. The first Once keeps tevent's order (the timer, immediate or
// posted function runs before the fd handler), but at most FdStarvationLimit Onces in a row run
// it while the fd is ready: the fd handler runs at least 1,000/(FdStarvationLimit+1) times, and
// every Once runs one handler. Every backend and dispatch mode.
func TestDispatchRequeuingHandlerDoesNotStarveFds(t *testing.T) {
	const onces = 1000
	k := ringev.FdStarvationLimit
	eachMode(t, ringev.Backends(), allModes, func(t *testing.T, b string, m mode) {
		for _, q := range requeuers {
			t.Run(q.name, func(t *testing.T) {
				r, w := testutil.Pipe(t)
				l := newLoop(t, b, m.opts()...)
				fdRuns, otherRuns := 0, 0
				addFd(t, l, r, ringev.Read, func(*ringev.FdEvent, ringev.Flags) { fdRuns++ }) // never drained
				testutil.Write(t, w, []byte{'x'})
				q.start(l, &otherRuns)
				gap, maxGap, firstFd := 0, 0, -1
				for i := 0; i < onces; i++ {
					before := fdRuns
					once(t, l)
					if fdRuns > before {
						if firstFd < 0 {
							firstFd = i
						}
						gap = 0
					} else {
						gap++
						maxGap = max(maxGap, gap)
					}
				}
				t.Logf("%d Onces: %d fd handler runs (the first in Once %d), %d %s runs, at most %d Onces in a row without the fd", onces, fdRuns, firstFd, otherRuns, q.name, maxGap)
				if firstFd == 0 {
					t.Errorf("the first Once ran the fd handler; tevent's order runs the %s first", q.name)
				}
				if want := onces / (k + 1); fdRuns < want {
					t.Errorf("the fd handler ran %d times in %d Onces, want at least %d (FdStarvationLimit %d)", fdRuns, onces, want, k)
				}
				if maxGap > k {
					t.Errorf("%d Onces in a row ran no fd handler while the fd was readable, want at most FdStarvationLimit (%d)", maxGap, k)
				}
				if fdRuns+otherRuns != onces {
					t.Errorf("%d Onces ran %d handlers, want one each", onces, fdRuns+otherRuns)
				}
			})
		}
	})
}

// requeuer is a handler kind that re-queues itself from its own run: a zero-delay timer, an
// immediate, a posted function.
type requeuer struct {
	name  string
	start func(l *ringev.Loop, ran *int)
}

var requeuers = []requeuer{
	{"timer", func(l *ringev.Loop, ran *int) {
		var h func(*ringev.Timer)
		h = func(*ringev.Timer) { *ran++; l.AddTimer(0, h) }
		l.AddTimer(0, h)
	}},
	{"immediate", func(l *ringev.Loop, ran *int) {
		var h func()
		h = func() { *ran++; l.AddImmediate(h) }
		l.AddImmediate(h)
	}},
	{"posted", func(l *ringev.Loop, ran *int) {
		var h func()
		h = func() { *ran++; l.Post(h) }
		l.Post(h)
	}},
}

// TestDispatchAllRunsEveryReadyHandlerInOneOnce: With WithDispatchAll, one Once runs every handler
// of the fds one wait found ready, each once.
func TestDispatchAllRunsEveryReadyHandlerInOneOnce(t *testing.T) {
	eachBackend(t, ringev.Backends(), func(t *testing.T, backend string) {
		rs, _ := testutil.Pipes(t, 4, true)
		l := newLoop(t, backend, modeAll.opts()...)
		var ran [4]int
		for i, r := range rs {
			addFd(t, l, r, ringev.Read, func(*ringev.FdEvent, ringev.Flags) { ran[i]++ })
		}
		once(t, l)
		if ran != [4]int{1, 1, 1, 1} {
			t.Fatalf("handler runs after one Once = %v, want [1 1 1 1]", ran)
		}
	})
}

// TestDispatchAllSkipsHandlerClosedEarlierInBatch: With WithDispatchAll, a handler closed by an
// earlier handler of the same batch does not run.
func TestDispatchAllSkipsHandlerClosedEarlierInBatch(t *testing.T) {
	eachBackend(t, ringev.Backends(), func(t *testing.T, backend string) {
		rs, _ := testutil.Pipes(t, 2, true)
		l := newLoop(t, backend, modeAll.opts()...)
		var evs [2]*ringev.FdEvent
		ran := 0
		h := func(ev *ringev.FdEvent, _ ringev.Flags) {
			ran++
			for _, o := range evs {
				if o != ev {
					o.Close()
				}
			}
		}
		evs[0] = addFd(t, l, rs[0], ringev.Read, h)
		evs[1] = addFd(t, l, rs[1], ringev.Read, h)
		once(t, l)
		if ran != 1 {
			t.Fatalf("%d handlers ran, want 1: the other was closed by the first", ran)
		}
	})
}

// TestDispatchFreshReadinessNoStaleRunAfterPOLLNVAL: with WithFreshReadiness, a wait reports a
// readable pipe together with an fd closed behind the loop's back (POLLNVAL on the backends that
// watch by number); Once returns the EBADF error. The test then drains the pipe itself: the next
// Once must not run the pipe's handler from the earlier wait (nothing is readable any more).
func TestDispatchFreshReadinessNoStaleRunAfterPOLLNVAL(t *testing.T) {
	// Only the backends that watch fd numbers report POLLNVAL: an fd closed behind an epoll
	// set's back just leaves the set.
	eachMode(t, []string{"poll", "uring-poll"}, []mode{modeFresh, modeFreshAll}, func(t *testing.T, backend string, m mode) {
		r, w := testutil.Pipe(t)
		pr, _ := testutil.Pipe(t)
		l := newLoop(t, backend, m.opts()...)
		stale := 0
		addFd(t, l, r, ringev.Read, func(ev *ringev.FdEvent, f ringev.Flags) {
			var b [8]byte
			if _, err := ringev.ReadNonblocking(ev.Fd(), b[:]); errors.Is(err, unix.EAGAIN) {
				stale++
			}
		})
		addFd(t, l, pr, ringev.Read, func(*ringev.FdEvent, ringev.Flags) {})
		testutil.Write(t, w, oneByte)
		testutil.Close(t, pr) // behind the loop's back; the number stays free
		var sawErr bool
		for range 3 {
			err := onceErr(t, l)
			if err != nil {
				if !errors.Is(err, unix.EBADF) {
					t.Fatalf("Once: %v", err)
				}
				sawErr = true
				break
			}
			// The pipe's handler ran (reading the byte): make it readable again.
			testutil.Write(t, w, oneByte)
		}
		if !sawErr {
			t.Fatalf("%s reported no POLLNVAL (EBADF) for the fd closed behind its back", backend)
		}
		testutil.Drain(t, r) // the condition the earlier wait saw is gone
		ran := 0
		l.AddTimer(20*time.Millisecond, func(*ringev.Timer) { ran = -1 })
		for ran == 0 {
			if err := onceErr(t, l); err != nil {
				t.Fatalf("Once: %v", err)
			}
			if stale > 0 {
				t.Fatalf("WithFreshReadiness: the pipe's handler ran on readiness from an earlier Once (read EAGAIN)")
			}
		}
	})
}
