package ringev_test

import (
	"testing"

	"github.com/ringev/ringev"
	"github.com/ringev/ringev/internal/testutil"
)

// With WithDispatchAll, one Once runs every handler of the fds one wait found ready, each once.
func TestDispatchAllRunsEveryReadyHandlerInOneOnce(t *testing.T) {
	for _, backend := range ringev.Backends() {
		t.Run(backend, func(t *testing.T) {
			var pipes [4][2]int
			for i := range pipes {
				pipes[i][0], pipes[i][1] = testutil.Pipe(t)
				testutil.Write(t, pipes[i][1], []byte{'x'})
			}
			l := ctNewLoop(t, backend, ringev.WithDispatchAll())
			var ran [4]int
			for i := range pipes {
				i := i
				if _, err := l.AddFd(pipes[i][0], ringev.Read, func(*ringev.FdEvent, ringev.Flags) { ran[i]++ }); err != nil {
					t.Fatal(err)
				}
			}
			testutil.Once(t, l, deadline)
			if ran != [4]int{1, 1, 1, 1} {
				t.Fatalf("handler runs after one Once = %v, want [1 1 1 1]", ran)
			}
		})
	}
}

// With WithDispatchAll, a handler closed by an earlier handler of the same batch does not run.
func TestDispatchAllSkipsHandlerClosedEarlierInBatch(t *testing.T) {
	for _, backend := range ringev.Backends() {
		t.Run(backend, func(t *testing.T) {
			r1, w1 := testutil.Pipe(t)
			r2, w2 := testutil.Pipe(t)
			testutil.Write(t, w1, []byte{'x'})
			testutil.Write(t, w2, []byte{'x'})
			l := ctNewLoop(t, backend, ringev.WithDispatchAll())
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
			var err error
			if evs[0], err = l.AddFd(r1, ringev.Read, h); err != nil {
				t.Fatal(err)
			}
			if evs[1], err = l.AddFd(r2, ringev.Read, h); err != nil {
				t.Fatal(err)
			}
			testutil.Once(t, l, deadline)
			if ran != 1 {
				t.Fatalf("%d handlers ran, want 1: the other was closed by the first", ran)
			}
		})
	}
}
