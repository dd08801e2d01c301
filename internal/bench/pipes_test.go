//go:build linux

package bench

import (
	"errors"
	"math"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/ringev/ringev"
	"github.com/ringev/ringev/internal/testutil"
	"golang.org/x/sys/unix"
)

// testOptions keeps every measurement short: 2000 read events, 200 ms of context.
var testOptions = Options{Events: 2000, ContextDuration: 200 * time.Millisecond}

// openFds is openFdCount, failing the test when /proc/self/fd cannot be read.
func openFds(t *testing.T) int {
	t.Helper()
	n := openFdCount()
	if n == 0 {
		t.Fatal("cannot count open fds: /proc/self/fd unreadable")
	}
	return n
}

// testShapes are the runnable shapes of the tests: Shapes() with fd_many as fd_many1 and
// fd_many50, fd_busy as fd_busy1 and fd_busy16.
func testShapes() []string {
	var out []string
	for _, s := range Shapes() {
		if s == ShapeFdMany {
			out = append(out, FdManyShape(1), FdManyShape(50))
			continue
		}
		if s == ShapeFdBusy {
			out = append(out, FdBusyShape(1), FdBusyShape(16))
			continue
		}
		out = append(out, s)
	}
	return out
}

// requireBackend skips the test when backend cannot be set up here because io_uring is switched
// off or missing, naming why; any other error fails it.
func requireBackend(t testing.TB, backend string) {
	t.Helper()
	err := CheckBackend(backend)
	testutil.SkipIfIOUringUnavailable(t, err, "backend "+backend)
	if err != nil {
		t.Fatalf("backend %s: %v", backend, err)
	}
}

// TestPipesShapes: every shape runs to completion on every usable backend, with no spurious
// handler calls, and for context with two signals raised per read event.
func TestPipesShapes(t *testing.T) {
	for _, backend := range Backends() {
		for _, shape := range testShapes() {
			t.Run(shape+"/"+backend, func(t *testing.T) {
				requireBackend(t, backend)
				if backend == Netpoller && shape == ShapeContext {
					t.Skipf("%s has no %s shape", Netpoller, ShapeContext)
				}
				r, err := RunPipes(backend, shape, testOptions)
				if err != nil {
					t.Fatal(err)
				}
				if r.Backend != backend || r.Shape != shape || r.Mode != PipesModeDefault {
					t.Errorf("result is for %s/%s in mode %q, want %s/%s in %q", r.Shape, r.Backend, r.Mode,
						shape, backend, PipesModeDefault)
				}
				if r.NsPerEvent <= 0 || math.Abs(r.NsPerEvent*r.EventsPerSec-1e9) > 1 {
					t.Errorf("ns/event %v does not match events/sec %v", r.NsPerEvent, r.EventsPerSec)
				}
				if n, many := parseFdMany(shape); r.Fds != n || many != (r.Fds > 0) {
					t.Errorf("fds %d, want %d", r.Fds, n)
				}
				if r.Seconds <= 0 || r.EventsPerSec <= 0 {
					t.Errorf("seconds %v, events/sec %v: want both > 0", r.Seconds, r.EventsPerSec)
				}
				if r.Spurious != 0 {
					t.Errorf("%d spurious handler calls, want 0", r.Spurious)
				}
				if shape == ShapeContext {
					if r.Events <= 0 {
						t.Errorf("context counted %d events, want > 0", r.Events)
					}
					if r.Seconds < 0.9*testOptions.ContextDuration.Seconds() {
						t.Errorf("context ran %.3f s, much shorter than its timer %v", r.Seconds, testOptions.ContextDuration)
					}
					if r.SignalsRaised != 2*r.Events {
						t.Errorf("signals raised %d, want 2 per read event (%d)", r.SignalsRaised, 2*r.Events)
					}
					if r.SignalsCounted <= 0 || r.SignalsCounted > r.SignalsRaised {
						t.Errorf("signals counted %d, want in (0, %d]", r.SignalsCounted, r.SignalsRaised)
					}
				} else {
					if r.Events != testOptions.Events {
						t.Errorf("counted %d events, want %d", r.Events, testOptions.Events)
					}
					if r.SignalsRaised != 0 || r.SignalsCounted != 0 {
						t.Errorf("signals raised %d, counted %d in %s: want 0", r.SignalsRaised, r.SignalsCounted, shape)
					}
				}
			})
		}
	}
}

// TestPipesNoFdLeak: a measurement closes every fd it opened (pipe, loop) on every backend.
func TestPipesNoFdLeak(t *testing.T) {
	for _, backend := range Backends() {
		t.Run(backend, func(t *testing.T) {
			requireBackend(t, backend)
			opt := Options{Events: 100, ContextDuration: 50 * time.Millisecond}
			shape := ShapeContext // every kind of event: fds, timer, signals
			if backend == Netpoller {
				shape = ShapeFdSpeed1
			}
			// A first run may open fds that live as long as the process (the runtime
			// netpoller's epoll instance); the second must leave the count unchanged.
			if _, err := RunPipes(backend, shape, opt); err != nil {
				t.Fatal(err)
			}
			before := openFds(t)
			if _, err := RunPipes(backend, shape, opt); err != nil {
				t.Fatal(err)
			}
			if backend != Netpoller {
				if _, err := RunPipes(backend, ShapeFdSpeed3, opt); err != nil {
					t.Fatal(err)
				}
			}
			if _, err := RunPipes(backend, FdManyShape(50), opt); err != nil {
				t.Fatal(err)
			}
			if after := openFds(t); after != before {
				t.Errorf("open fds: %d before the run, %d after", before, after)
			}
		})
	}
}

// TestRunPipesRejectsUnknownNames: bad names are errors wrapping ErrUnknownBackend or
// ErrUnknownShape, and the context shape is refused on the netpoller.
func TestRunPipesRejectsUnknownNames(t *testing.T) {
	if _, err := RunPipes("nope", ShapeFdSpeed1, testOptions); !errors.Is(err, ErrUnknownBackend) {
		t.Errorf("backend nope: err = %v, want ErrUnknownBackend", err)
	}
	if _, err := RunPipes(Netpoller, "fd_speed9", testOptions); !errors.Is(err, ErrUnknownShape) {
		t.Errorf("shape fd_speed9: err = %v, want ErrUnknownShape", err)
	}
	if _, err := RunPipes(Netpoller, ShapeContext, testOptions); err == nil {
		t.Error("context on go-netpoller: no error")
	}
	if _, err := Run(Config{Backends: []string{"epoll", "bogus"}}); !errors.Is(err, ErrUnknownBackend) || !strings.Contains(err.Error(), "bogus") {
		t.Errorf("Run with backend bogus: err = %v, want ErrUnknownBackend naming it", err)
	}
	if _, err := Run(Config{Shapes: []string{"ctx"}}); !errors.Is(err, ErrUnknownShape) {
		t.Errorf("Run with shape ctx: err = %v, want ErrUnknownShape", err)
	}
	for _, shape := range []string{ShapeFdMany, "fd_many0", "fd_many01", "fd_many-3", "fd_many1x", "fd_many2000000"} {
		if _, err := RunPipes(Netpoller, shape, testOptions); !errors.Is(err, ErrUnknownShape) {
			t.Errorf("shape %s: err = %v, want ErrUnknownShape", shape, err)
		}
	}
	if _, err := RunPipes(RatioBase, ShapeFdSpeed1, Options{Mode: "turbo"}); !errors.Is(err, ErrUnknownMode) {
		t.Errorf("mode turbo: err = %v, want ErrUnknownMode", err)
	}
	if _, err := RunPipes(Netpoller, ShapeFdSpeed1, Options{Mode: PipesModeAll}); err == nil {
		t.Error("go-netpoller in mode all: no error")
	}
	if _, err := Run(Config{Modes: []string{"fresh", "warp"}}); !errors.Is(err, ErrUnknownMode) || !strings.Contains(err.Error(), "warp") {
		t.Errorf("Run with mode warp: err = %v, want ErrUnknownMode naming it", err)
	}
	if _, err := Run(Config{Shapes: []string{ShapeFdMany}, Fds: []int{10, 0}}); err == nil || !strings.Contains(err.Error(), "pipe count 0") {
		t.Errorf("Run with fds 0: err = %v, want an error naming the count", err)
	}
}

// TestRunSkipsContextOnNetpoller: Run measures the selection in shape order, notes the skipped
// netpoller context, and sets ratios to epoll when epoll was measured.
func TestRunSkipsContextOnNetpoller(t *testing.T) {
	var notes strings.Builder
	backends := []string{Netpoller, RatioBase}
	rs, err := Run(Config{
		Backends: backends,
		Shapes:   []string{ShapeFdSpeed1, ShapeContext},
		Options:  testOptions,
		Notes:    &notes,
	})
	if err != nil {
		t.Fatal(err)
	}
	epollOK := CheckBackend(RatioBase) == nil
	var got []string
	for _, r := range rs {
		got = append(got, r.Shape+"/"+r.Label())
		if epollOK && r.RatioToEpoll <= 0 {
			t.Errorf("%s/%s: ratio to epoll %v, want > 0", r.Shape, r.Label(), r.RatioToEpoll)
		}
	}
	want := "fd_speed1/go-netpoller"
	if epollOK {
		want = "context/epoll fd_speed1/epoll fd_speed1/go-netpoller fd_speed1/epoll/completion-inline"
	}
	if strings.Join(got, " ") != want {
		t.Errorf("measured %q, want %q", strings.Join(got, " "), want)
	}
	if !strings.Contains(notes.String(), "skipping context on go-netpoller") {
		t.Errorf("notes %q do not mention the skipped context shape", notes.String())
	}
}

// TestRunNamesTheCombinationsItSkipped: when every selected combination is skipped, Run measures
// nothing and its error says so, naming them (the command refuses the combinations it can tell
// from its flags; this is what remains, e.g. when the kernel rejects the backends).
func TestRunNamesTheCombinationsItSkipped(t *testing.T) {
	rs, err := Run(Config{Backends: []string{Netpoller}, Shapes: []string{ShapeContext}, Options: testOptions})
	if len(rs) != 0 || err == nil || !strings.Contains(err.Error(), "nothing was measured") ||
		!strings.Contains(err.Error(), "context on go-netpoller") {
		t.Errorf("Run: %d results, error %v; want none and \"nothing was measured\" naming context on go-netpoller", len(rs), err)
	}
}

// TestRunModesAndFdMany: Run expands fd_many per pipe count and runs each ringev backend in every
// mode, the netpoller once per shape; ratios are taken to epoll in the same shape and mode.
func TestRunModesAndFdMany(t *testing.T) {
	requireBackend(t, RatioBase)
	rs, got := runOrder(t, Config{
		Backends: []string{Netpoller, RatioBase},
		Shapes:   []string{ShapeFdMany, ShapeFdSpeed1},
		Fds:      []int{3, 1, 3},
		Modes:    []string{PipesModeAll, PipesModeDefault, PipesModeFresh},
		Options:  Options{Events: 500},
	})
	for _, r := range rs {
		if r.Spurious != 0 {
			t.Errorf("%s %s: %d spurious handler calls", r.Shape, r.Label(), r.Spurious)
		}
		want := r.EventsPerSec / find(t, rs, r.Shape, RatioBase, r.Mode).EventsPerSec
		if r.RatioToEpoll != want {
			t.Errorf("%s %s: ratio %v, want %v (epoll in mode %s)", r.Shape, r.Label(), r.RatioToEpoll, want, r.Mode)
		}
	}
	want := "fd_speed1:epoll fd_speed1:go-netpoller fd_speed1:epoll/fresh fd_speed1:epoll/all " +
		"fd_many3:epoll fd_many3:go-netpoller fd_many3:epoll/fresh fd_many3:epoll/all " +
		"fd_many1:epoll fd_many1:go-netpoller fd_many1:epoll/fresh fd_many1:epoll/all"
	if got != want {
		t.Errorf("measured\n%s\nwant\n%s", got, want)
	}
}

// find returns the result of backend in shape and mode, or fails the test.
func find(t *testing.T, rs []Result, shape, backend, mode string) Result {
	t.Helper()
	for _, r := range rs {
		if r.Shape == shape && r.Backend == backend && r.modeOf() == mode {
			return r
		}
	}
	t.Fatalf("no result for %s %s in mode %s", shape, backend, mode)
	return Result{}
}

// TestPipesModes: every mode runs fd_speed3 and fd_many50 on every ringev backend without
// spurious calls, and the result carries the mode.
func TestPipesModes(t *testing.T) {
	for _, backend := range ringev.Backends() {
		for _, mode := range PipesModes() {
			t.Run(backend+"/"+mode, func(t *testing.T) {
				requireBackend(t, backend)
				for _, shape := range []string{ShapeFdSpeed3, FdManyShape(50)} {
					r, err := RunPipes(backend, shape, Options{Events: 300, Mode: mode})
					if err != nil {
						t.Fatal(err)
					}
					if r.Mode != mode || r.Events != 300 || r.Spurious != 0 {
						t.Errorf("%s: mode %q, %d events, %d spurious; want %q, 300, 0", shape, r.Mode, r.Events, r.Spurious, mode)
					}
				}
			})
		}
	}
}

// TestContextCountsEverySignal: the context shape counts every SIGUSR1 and SIGALRM it raised, as
// tevent's test asserts, on every backend (exact signals, amd64).
func TestContextCountsEverySignal(t *testing.T) {
	if runtime.GOARCH != "amd64" {
		t.Skip("ringev.WithExactSignals: no handler for " + runtime.GOARCH)
	}
	for _, b := range ringev.Backends() {
		if err := CheckBackend(b); err != nil {
			if !errors.Is(err, unix.EPERM) && !errors.Is(err, unix.ENOSYS) {
				t.Errorf("backend %s: %v", b, err)
			} else {
				t.Logf("skipping %s (io_uring switched off or missing): %v", b, err)
			}
			continue
		}
		r, err := RunPipes(b, ShapeContext, Options{ContextDuration: 200 * time.Millisecond})
		if err != nil {
			t.Fatalf("%s: %v", b, err)
		}
		if r.SignalsRaised == 0 || r.SignalsCounted != r.SignalsRaised {
			t.Errorf("%s: signals raised %d, counted %d", b, r.SignalsRaised, r.SignalsCounted)
		}
	}
}

// TestRunPipesWithFewEvents: a run of fewer events than the warm-up needs (5 %, so none below
// 20) still ends and counts exactly its events, on a ringev backend and on the netpoller.
func TestRunPipesWithFewEvents(t *testing.T) {
	for _, b := range []string{"epoll", Netpoller} {
		done := make(chan struct{})
		var r Result
		var err error
		go func() {
			defer close(done)
			r, err = RunPipes(b, ShapeFdSpeed1, Options{Events: 5})
		}()
		select {
		case <-done:
		case <-time.After(10 * time.Second):
			t.Fatalf("%s: RunPipes with 5 events did not end within 10 s", b)
		}
		if err != nil || r.Events != 5 {
			t.Errorf("%s: RunPipes(5 events) = %d events, %v; want 5, nil", b, r.Events, err)
		}
	}
}

// TestRunWithoutModesAddsACompletionRow: with no modes, Run measures every shape in the default
// (readiness) mode and adds, for each ringev backend, a completion-inline row in fd_speed1 and
// fd_busy, whose ratio is to epoll's readiness row; the netpoller runs once per shape.
func TestRunWithoutModesAddsACompletionRow(t *testing.T) {
	requireBackend(t, RatioBase)
	rs, got := runOrder(t, Config{
		Backends: []string{RatioBase, "poll", Netpoller},
		Shapes:   []string{ShapeFdSpeed1, ShapeFdSpeed2, ShapeFdBusy},
		Busy:     []int{2},
		Options:  Options{Events: 500},
	})
	for _, r := range rs {
		if r.RatioMode != PipesModeDefault {
			t.Errorf("%s %s: ratio to epoll in mode %q, want %q (readiness)", r.Shape, r.Label(), r.RatioMode, PipesModeDefault)
		}
		if want := r.EventsPerSec / find(t, rs, r.Shape, RatioBase, PipesModeDefault).EventsPerSec; r.RatioToEpoll != want {
			t.Errorf("%s %s: ratio %v, want %v", r.Shape, r.Label(), r.RatioToEpoll, want)
		}
	}
	want := "fd_speed1:epoll fd_speed1:poll fd_speed1:go-netpoller fd_speed1:epoll/completion-inline fd_speed1:poll/completion-inline " +
		"fd_speed2:epoll fd_speed2:poll fd_speed2:go-netpoller " +
		"fd_busy2:epoll fd_busy2:poll fd_busy2:go-netpoller fd_busy2:epoll/completion-inline fd_busy2:poll/completion-inline"
	if got != want {
		t.Errorf("measured\n%s\nwant\n%s", got, want)
	}
}

// runOrder runs cfg, failing the test on error, and returns the results and their names in the
// order measured, "shape:label" joined by spaces.
func runOrder(t *testing.T, cfg Config) ([]Result, string) {
	t.Helper()
	rs, err := Run(cfg)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, r := range rs {
		got = append(got, r.Shape+":"+r.Label())
	}
	return rs, strings.Join(got, " ")
}

// TestRunDrawsProgressOfItsRuns: with a Progress writer, Run draws a line that counts its runs
// and names the one running.
func TestRunDrawsProgressOfItsRuns(t *testing.T) {
	requireBackend(t, RatioBase)
	var bar strings.Builder
	rs, err := Run(Config{
		Backends: []string{RatioBase},
		Shapes:   []string{ShapeFdSpeed1},
		Modes:    []string{PipesModeDefault, PipesModeFresh},
		Options:  testOptions,
		Progress: &bar,
	})
	if err != nil || len(rs) != 2 {
		t.Fatalf("Run: %d results, %v; want 2", len(rs), err)
	}
	for _, want := range []string{"fd_speed1 epoll " + PipesModeFresh, "(1/2)"} {
		if !strings.Contains(bar.String(), want) {
			t.Errorf("progress %q does not contain %q", bar.String(), want)
		}
	}
}
