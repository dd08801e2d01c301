//go:build linux

package bench

import (
	"errors"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/ringev/ringev"
)

// TestParseFdBusy: fd_busy<N> names parse to N in [1, MaxBusy]; other names do not.
func TestParseFdBusy(t *testing.T) {
	for name, want := range map[string]int{"fd_busy1": 1, "fd_busy16": 16, "fd_busy256": 256, "fd_busy100000": MaxBusy} {
		if n, ok := parseFdBusy(name); !ok || n != want {
			t.Errorf("parseFdBusy(%q) = %d, %v; want %d, true", name, n, ok, want)
		}
	}
	for _, name := range []string{ShapeFdBusy, "fd_busy0", "fd_busy016", "fd_busy-1", "fd_busy1x", "fd_busy100001", "fd_many16"} {
		if n, ok := parseFdBusy(name); ok {
			t.Errorf("parseFdBusy(%q) = %d, true; want not ok", name, n)
		}
		if _, err := RunPipes(RatioBase, name, testOptions); !errors.Is(err, ErrUnknownShape) && name != "fd_many16" {
			t.Errorf("RunPipes(%q): err = %v, want ErrUnknownShape", name, err)
		}
	}
	if got := FdBusyShape(16); got != "fd_busy16" {
		t.Errorf("FdBusyShape(16) = %q", got)
	}
}

// TestRunExpandsFdBusy: Run measures fd_busy once per Config.Busy count, in the order given and
// without duplicates, and refuses a count outside [1, MaxBusy], naming it, before measuring.
func TestRunExpandsFdBusy(t *testing.T) {
	requireBackend(t, RatioBase)
	rs, err := Run(Config{Backends: []string{RatioBase}, Shapes: []string{ShapeFdBusy}, Busy: []int{3, 1, 3},
		Modes: []string{PipesModeDefault}, Options: Options{Events: 300}})
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, r := range rs {
		got = append(got, r.Shape)
	}
	if want := []string{"fd_busy3", "fd_busy1"}; !slices.Equal(got, want) {
		t.Errorf("measured %v, want %v", got, want)
	}
	for _, bad := range []int{0, -2, MaxBusy + 1} {
		if _, err := Run(Config{Backends: []string{RatioBase}, Shapes: []string{ShapeFdBusy}, Busy: []int{2, bad}}); err == nil ||
			!strings.Contains(err.Error(), "fd_busy: pipe count "+strconv.Itoa(bad)) {
			t.Errorf("Busy %d: err = %v, want one naming the count", bad, err)
		}
	}
}

// TestFdBusyEveryBackendAndMode: fd_busy4 runs on every backend in every mode (readiness and
// completion) and on the netpoller, counts exactly its events, with no spurious handler call.
func TestFdBusyEveryBackendAndMode(t *testing.T) {
	for _, backend := range Backends() {
		modes := PipesModes()
		if backend == Netpoller {
			modes = []string{PipesModeDefault}
		}
		for _, mode := range modes {
			t.Run(Label(backend, mode), func(t *testing.T) {
				if backend != Netpoller {
					requireBackend(t, backend)
				}
				r, err := RunPipes(backend, FdBusyShape(4), Options{Events: 2000, Mode: mode})
				if err != nil {
					t.Fatal(err)
				}
				if r.Shape != "fd_busy4" || r.Mode != mode || r.Events != 2000 || r.Spurious != 0 || r.EventsPerSec <= 0 {
					t.Errorf("got %s in mode %q: %d events, %d spurious, %v events/s; want fd_busy4 in %q, 2000, 0, > 0",
						r.Shape, r.Mode, r.Events, r.Spurious, r.EventsPerSec, mode)
				}
			})
		}
	}
}

// TestCompletionModesEveryShape: both completion modes run fd_speed1, fd_speed3 (idle fd events
// beside the requests), fd_many20 and fd_busy16 on every ringev backend, counting exactly their
// events with no spurious call.
func TestCompletionModesEveryShape(t *testing.T) {
	for _, backend := range ringev.Backends() {
		for _, mode := range completionModes() {
			t.Run(Label(backend, mode), func(t *testing.T) {
				requireBackend(t, backend)
				for _, shape := range []string{ShapeFdSpeed1, ShapeFdSpeed3, FdManyShape(20), FdBusyShape(16)} {
					r, err := RunPipes(backend, shape, Options{Events: 3000, Mode: mode})
					if err != nil {
						t.Fatal(err)
					}
					if r.Mode != mode || r.Events != 3000 || r.Spurious != 0 {
						t.Errorf("%s: mode %q, %d events, %d spurious; want %q, 3000, 0", shape, r.Mode, r.Events, r.Spurious, mode)
					}
				}
			})
		}
	}
}

// TestCompletionContextCountsEverySignal: in a completion mode the context shape's read
// completion raises two signals per event, and every one is counted (exact signals, amd64).
func TestCompletionContextCountsEverySignal(t *testing.T) {
	if runtime.GOARCH != "amd64" {
		t.Skip("ringev.WithExactSignals: no handler for " + runtime.GOARCH)
	}
	for _, backend := range []string{"uring", "epoll"} {
		requireBackend(t, backend)
		r, err := RunPipes(backend, ShapeContext, Options{ContextDuration: 100 * time.Millisecond, Mode: PipesModeCompletion})
		if err != nil {
			t.Fatalf("%s: %v", backend, err)
		}
		if r.Events == 0 || r.SignalsRaised != 2*r.Events || r.SignalsCounted != r.SignalsRaised {
			t.Errorf("%s: %d events, signals raised %d, counted %d; want raised = 2 × events = counted",
				backend, r.Events, r.SignalsRaised, r.SignalsCounted)
		}
	}
}

// TestCompletionAndBusyNoFdLeak: completion and fd_busy runs close every fd they opened, the
// loop's included, on every ringev backend and the netpoller.
func TestCompletionAndBusyNoFdLeak(t *testing.T) {
	for _, backend := range Backends() {
		t.Run(backend, func(t *testing.T) {
			if backend != Netpoller {
				requireBackend(t, backend)
			}
			opt := Options{Events: 200}
			if _, err := RunPipes(backend, FdBusyShape(8), opt); err != nil { // fds the process keeps (netpoller)
				t.Fatal(err)
			}
			before := openFds(t)
			if _, err := RunPipes(backend, FdBusyShape(8), opt); err != nil {
				t.Fatal(err)
			}
			if backend != Netpoller {
				opt.Mode = PipesModeCompletion
				for _, shape := range []string{FdBusyShape(8), ShapeFdSpeed3, FdManyShape(10)} {
					if _, err := RunPipes(backend, shape, opt); err != nil {
						t.Fatal(err)
					}
				}
			}
			if after := openFds(t); after != before {
				t.Errorf("open fds: %d before, %d after", before, after)
			}
		})
	}
}

// TestCompletionModeAllocatesNothingPerEvent: in steady state a request allocates nothing: the
// timed part of a 20,000-event completion run (two requests and two callbacks per event)
// allocates far less than one heap object per event, on every ringev backend.
func TestCompletionModeAllocatesNothingPerEvent(t *testing.T) {
	for _, backend := range ringev.Backends() {
		for _, mode := range completionModes() {
			t.Run(Label(backend, mode), func(t *testing.T) {
				requireBackend(t, backend)
				for _, shape := range []string{ShapeFdSpeed1, FdBusyShape(16)} {
					r, err := RunPipes(backend, shape, Options{Events: 20000, Mode: mode})
					if err != nil {
						t.Fatal(err)
					}
					if per := float64(lastRunAllocs) / float64(r.Events); per >= 0.01 {
						t.Errorf("%s: %d heap objects in %d events (%.3f per event), want < 0.01", shape, lastRunAllocs, r.Events, per)
					}
				}
			})
		}
	}
}

// TestHeapAllocsCounts: the allocation probe of the runs sees allocations (so that a 0 from
// it means something).
func TestHeapAllocsCounts(t *testing.T) {
	a0 := heapAllocs()
	var keep [][]byte
	for i := range 100 {
		keep = append(keep, make([]byte, 8+i))
	}
	if d := heapAllocs() - a0; d < 100 {
		t.Errorf("100 allocations counted as %d (kept %d)", d, len(keep))
	}
}

// TestFdBusyStops: Options.Stop ends an fd_busy run and a completion run early with ErrStopped.
func TestFdBusyStops(t *testing.T) {
	for _, c := range []struct{ backend, mode string }{{"epoll", PipesModeDefault}, {"epoll", PipesModeCompletion}, {Netpoller, PipesModeDefault}} {
		stop := make(chan struct{})
		time.AfterFunc(50*time.Millisecond, func() { close(stop) })
		done := make(chan error, 1)
		go func() {
			_, err := RunPipes(c.backend, FdBusyShape(4), Options{Events: 1 << 40, Mode: c.mode, Stop: stop})
			done <- err
		}()
		select {
		case err := <-done:
			if !errors.Is(err, ErrStopped) {
				t.Errorf("%s: err = %v, want ErrStopped", Label(c.backend, c.mode), err)
			}
		case <-time.After(10 * time.Second):
			t.Fatalf("%s: a stopped run did not end within 10 s", Label(c.backend, c.mode))
		}
	}
}
