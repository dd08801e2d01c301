//go:build linux

package bench

// Tests of the path of the handlers' I/O in bench pipes: mode ring, Result.IOPath and
// IOPathReason, and how the JSON shows them.

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/ringev/ringev"
)

// TestIOPathResultsSayWhichPathAndWhy: every ringev result carries the path its handlers' I/O
// took and why: on uring by default read(2)/write(2) ("the default: ..."), in mode ring
// `WithIOPath("ring")` and path ring, in mode syscall the handlers' own read(2)/write(2); on
// epoll "syscall", the backend having no ring; the netpoller nothing.
func TestIOPathResultsSayWhichPathAndWhy(t *testing.T) {
	for _, tc := range []struct {
		backend, mode string
		path          string
		reason        string // prefix
	}{
		{"uring", PipesModeDefault, ringev.IOPathSyscall, "the default: handler I/O is read(2)/write(2)"},
		{"uring", PipesModeRing, ringev.IOPathRing, `WithIOPath("ring")`},
		{"uring", PipesModeSyscall, ringev.IOPathSyscall, "mode syscall: the handlers make their own read(2)/write(2)"},
		{"epoll", PipesModeDefault, ringev.IOPathSyscall, "the epoll backend has no ring"},
		{Netpoller, PipesModeDefault, "", ""},
	} {
		t.Run(tc.backend+"/"+tc.mode, func(t *testing.T) {
			requireBackend(t, tc.backend)
			r, err := RunPipes(tc.backend, ShapeFdSpeed1, Options{Events: 2000, Mode: tc.mode})
			if err != nil {
				t.Fatal(err)
			}
			switch {
			case tc.backend == Netpoller:
				if r.IOPath != "" || r.IOPathReason != "" {
					t.Errorf("netpoller: IOPath %q, IOPathReason %q; want none", r.IOPath, r.IOPathReason)
				}
				return
			case r.IOPath != tc.path || !strings.HasPrefix(r.IOPathReason, tc.reason):
				t.Errorf("IOPath %q, IOPathReason %q; want %q, %q...", r.IOPath, r.IOPathReason, tc.path, tc.reason)
			}
		})
	}
}

// TestIOPathModeRingRunsOnUringOnly: Run in mode ring measures the uring backend and the
// netpoller (which has no modes and runs in the first one), and skips epoll with one note that
// says only uring has a ring.
func TestIOPathModeRingRunsOnUringOnly(t *testing.T) {
	requireBackend(t, "uring")
	var notes strings.Builder
	rs, err := Run(Config{Backends: []string{"uring", "epoll", Netpoller}, Shapes: []string{ShapeFdSpeed1, ShapeFdSpeed2},
		Modes: []string{PipesModeRing}, Options: Options{Events: 500}, Notes: &notes})
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, r := range rs {
		got = append(got, r.Shape+" "+r.Label())
	}
	if want := "fd_speed1 uring/ring,fd_speed1 go-netpoller,fd_speed2 uring/ring,fd_speed2 go-netpoller"; strings.Join(got, ",") != want {
		t.Errorf("results %v, want %s", got, want)
	}
	if n := strings.Count(notes.String(), "skipping mode ring on epoll: only the uring backend has a ring"); n != 1 {
		t.Errorf("notes %q: want one note skipping mode ring on epoll", notes.String())
	}
}

// TestIOPathJSONCarriesPathAndReason: a result's path and reason are in the JSON as io_path and
// io_path_reason, and left out where there are none (the netpoller).
func TestIOPathJSONCarriesPathAndReason(t *testing.T) {
	rs := []Result{newResult("uring", PipesModeDefault, ShapeFdSpeed1, 1000, 0.002), newResult(Netpoller, PipesModeDefault, ShapeFdSpeed1, 1000, 0.002)}
	rs[0].IOPath, rs[0].IOPathReason = "ring", `WithIOPath("ring")`
	var b strings.Builder
	if err := WriteJSON(&b, rs); err != nil {
		t.Fatal(err)
	}
	var got []map[string]any
	if err := json.Unmarshal([]byte(b.String()), &got); err != nil {
		t.Fatal(err)
	}
	if got[0]["io_path"] != "ring" || got[0]["io_path_reason"] != `WithIOPath("ring")` {
		t.Errorf("uring: io_path %v, io_path_reason %v", got[0]["io_path"], got[0]["io_path_reason"])
	}
	if _, ok := got[1]["io_path"]; ok {
		t.Errorf("netpoller has io_path %v, want none", got[1]["io_path"])
	}
	if _, ok := got[1]["io_path_reason"]; ok {
		t.Errorf("netpoller has io_path_reason %v, want none", got[1]["io_path_reason"])
	}
}
