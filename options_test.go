//go:build linux

package ringev_test

import (
	"testing"

	"github.com/ringev/ringev"
	"github.com/ringev/ringev/internal/testutil"
)

// With WithDispatchAll, one Once runs every handler of the fds one wait found ready, each once.
func TestDispatchAllRunsEveryReadyHandlerInOneOnce(t *testing.T) {
	eachBackend(t, ringev.Backends(), func(t *testing.T, backend string) {
		rs, _ := pipes(t, 4, true)
		l := newLoop(t, backend, modeAll.opts()...)
		var ran [4]int
		for i, r := range rs {
			addFd(t, l, r, ringev.Read, func(*ringev.FdEvent, ringev.Flags) { ran[i]++ })
		}
		testutil.Once(t, l, deadline)
		if ran != [4]int{1, 1, 1, 1} {
			t.Fatalf("handler runs after one Once = %v, want [1 1 1 1]", ran)
		}
	})
}

// With WithDispatchAll, a handler closed by an earlier handler of the same batch does not run.
func TestDispatchAllSkipsHandlerClosedEarlierInBatch(t *testing.T) {
	eachBackend(t, ringev.Backends(), func(t *testing.T, backend string) {
		rs, _ := pipes(t, 2, true)
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
		testutil.Once(t, l, deadline)
		if ran != 1 {
			t.Fatalf("%d handlers ran, want 1: the other was closed by the first", ran)
		}
	})
}
