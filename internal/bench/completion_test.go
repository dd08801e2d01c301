package bench

import (
	"testing"
)

// TestPipesCompletionMode: every shape runs in completion mode on every ringev backend
// (requests on uring, emulated on the others), with no spurious handler call, counting exactly
// its events (context: until its timer, two signals raised per event).
func TestPipesCompletionMode(t *testing.T) {
	for _, backend := range Backends() {
		for _, shape := range testShapes() {
			t.Run(shape+"/"+backend, func(t *testing.T) {
				if backend == Netpoller {
					t.Skipf("%s has no modes", Netpoller)
				}
				requireBackend(t, backend)
				opt := testOptions
				opt.Mode = PipesModeCompletion
				r, err := RunPipes(backend, shape, opt)
				if err != nil {
					t.Fatal(err)
				}
				want := opt.Events
				if shape == ShapeContext {
					want = r.SignalsRaised / 2
				}
				if r.Mode != PipesModeCompletion || r.Events != want || r.Events == 0 || r.Spurious != 0 {
					t.Fatalf("result %+v", r)
				}
			})
		}
	}
}

// TestFdBusyShapeNames: fd_busy<N> parses for 1..MaxBusy only.
func TestFdBusyShapeNames(t *testing.T) {
	for _, c := range []struct {
		name string
		n    int
		ok   bool
	}{{"fd_busy1", 1, true}, {"fd_busy256", 256, true}, {"fd_busy0", 0, false}, {"fd_busy01", 0, false},
		{"fd_busy", 0, false}, {FdBusyShape(MaxBusy + 1), 0, false}} {
		if n, ok := parseFdBusy(c.name); n != c.n || ok != c.ok {
			t.Errorf("parseFdBusy(%q) = %d, %v; want %d, %v", c.name, n, ok, c.n, c.ok)
		}
	}
}
