//go:build linux

package bench

import (
	"fmt"
	"slices"
	"strings"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/ringev/ringev"
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

// TestCompletionRunRegistersThePipesOnUringOnly: a completion run on uring puts its pipes in the
// ring's registered-file table (Result.RegisteredFiles, registered_files in JSON) unless
// Options.UnregisteredFiles; on epoll it does not (the loop has no table there).
func TestCompletionRunRegistersThePipesOnUringOnly(t *testing.T) {
	for _, c := range []struct {
		backend string
		unreg   bool
		want    bool
	}{{"uring", false, true}, {"uring", true, false}, {"epoll", false, false}} {
		requireBackend(t, c.backend)
		r, err := RunPipes(c.backend, FdBusyShape(2), Options{Events: 500, Mode: PipesModeCompletionInline, UnregisteredFiles: c.unreg})
		if err != nil {
			t.Fatal(err)
		}
		if c.want && r.RegisterFileError != "" {
			t.Skipf("RegisterFile (IORING_RSRC_REGISTER_SPARSE, Linux 5.19): %s", r.RegisterFileError)
		}
		if r.RegisteredFiles != c.want || r.RegisterFileError != "" || r.Events != 500 {
			t.Errorf("%s, UnregisteredFiles %v: RegisteredFiles %v, RegisterFileError %q, %d events; want %v, \"\", 500",
				c.backend, c.unreg, r.RegisteredFiles, r.RegisterFileError, r.Events, c.want)
		}
	}
}

// TestCompletionRunGoesOnUnregisteredWhenRegisterFileFails: where Loop.RegisterFile fails (played
// here from the third fd on, as a kernel without sparse file tables fails the first), the
// completion run empties the slots it filled, measures with every pipe unregistered, reports
// the error in Result.RegisterFileError, and Run says so in a note; it does not fail.
func TestCompletionRunGoesOnUnregisteredWhenRegisterFileFails(t *testing.T) {
	requireBackend(t, "uring")
	refusal := fmt.Errorf("ringev: RegisterFile: making a registered-file table (IORING_REGISTER_FILES2 with IORING_RSRC_REGISTER_SPARSE, Linux 5.19): %w", unix.EINVAL)
	var registered, unregistered []int
	oldReg, oldUnreg := registerFile, unregisterFile
	registerFile = func(l *ringev.Loop, fd int) error {
		if len(registered) == 2 {
			return refusal
		}
		if err := oldReg(l, fd); err != nil {
			return err
		}
		registered = append(registered, fd)
		return nil
	}
	unregisterFile = func(l *ringev.Loop, fd int) error {
		unregistered = append(unregistered, fd)
		return oldUnreg(l, fd)
	}
	defer func() { registerFile, unregisterFile = oldReg, oldUnreg }()
	var notes strings.Builder
	rs, err := Run(Config{Backends: []string{"uring"}, Shapes: []string{ShapeFdBusy}, Busy: []int{2},
		Modes: []string{PipesModeCompletion}, Options: Options{Events: 500}, Notes: &notes})
	if err != nil {
		t.Fatal(err)
	}
	if len(registered) < 2 {
		t.Skipf("RegisterFile (IORING_RSRC_REGISTER_SPARSE, Linux 5.19) fails here: registered %v", registered)
	}
	if !slices.Equal(unregistered, registered) {
		t.Errorf("unregistered %v after the refusal, want the fds registered before it, %v", unregistered, registered)
	}
	if len(rs) != 1 || rs[0].Events != 500 || rs[0].RegisteredFiles || !strings.Contains(rs[0].RegisterFileError, "IORING_RSRC_REGISTER_SPARSE") {
		t.Fatalf("results %+v; want one run of 500 events, RegisteredFiles false, RegisterFileError naming IORING_RSRC_REGISTER_SPARSE", rs)
	}
	if want := "uring/completion fd_busy2 ran with its pipes unregistered: Loop.RegisterFile on pipe 1: ringev: RegisterFile: making"; !strings.Contains(notes.String(), want) {
		t.Errorf("notes %q, want a line containing %q", notes.String(), want)
	}
}
