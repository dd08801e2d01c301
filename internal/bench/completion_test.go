package bench

import (
	"testing"
)

// TestPipesCompletionMode: every shape but context runs in completion mode on every ringev
// backend (requests on uring, emulated on the others), with no spurious handler call.
func TestPipesCompletionMode(t *testing.T) {
	for _, backend := range Backends() {
		for _, shape := range testShapes() {
			t.Run(shape+"/"+backend, func(t *testing.T) {
				if skipRun(backend, shape, PipesModeCompletion) || backend == Netpoller {
					t.Skipf("%s has no %s mode for %s", backend, PipesModeCompletion, shape)
				}
				requireBackend(t, backend)
				opt := testOptions
				opt.Mode = PipesModeCompletion
				r, err := RunPipes(backend, shape, opt)
				if err != nil {
					t.Fatal(err)
				}
				if r.Mode != PipesModeCompletion || r.Events != opt.Events || r.Spurious != 0 {
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
		{"fd_busy", 0, false}, {"fd_busy4097", 0, false}} {
		if n, ok := parseFdBusy(c.name); n != c.n || ok != c.ok {
			t.Errorf("parseFdBusy(%q) = %d, %v; want %d, %v", c.name, n, ok, c.n, c.ok)
		}
	}
}
