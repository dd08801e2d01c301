package main

// Tests of how `ringev bench pipes` shows the path of the handlers' I/O (--mode ring, the
// note under the table, io_path and io_path_reason in --json).

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/ringev/ringev/internal/bench"
)

// requireUring skips the test where the uring backend cannot be set up (io_uring switched off
// or missing), naming why.
func requireUring(t *testing.T) {
	t.Helper()
	if err := bench.CheckBackend("uring"); err != nil {
		t.Skipf("the uring backend is not usable here: %v", err)
	}
}

// TestIOPathPipesJSONSaysWhichPathAndWhy: `bench pipes --backend uring --mode default,ring
// --json` gives every result io_path and io_path_reason: the loop's own choice ("auto: ...") in
// mode default, the forced ring in mode ring.
func TestIOPathPipesJSONSaysWhichPathAndWhy(t *testing.T) {
	requireUring(t)
	var stdout, stderr strings.Builder
	args := []string{"bench", "pipes", "--backend", "uring", "--shape", "fd_speed1", "--mode", "default,ring", "--events", "1000", "--json"}
	if got := run(args, &stdout, &stderr); got != 0 {
		t.Fatalf("exit status %d, stderr %q", got, stderr.String())
	}
	var rs []map[string]any
	if err := json.Unmarshal([]byte(stdout.String()), &rs); err != nil {
		t.Fatalf("stdout is not a JSON array: %v\n%s", err, stdout.String())
	}
	if len(rs) != 2 {
		t.Fatalf("%d results, want 2:\n%s", len(rs), stdout.String())
	}
	path, _ := rs[0]["io_path"].(string)
	if reason, _ := rs[0]["io_path_reason"].(string); rs[0]["mode"] != "default" || !strings.HasPrefix(reason, "auto: "+path+": ") {
		t.Errorf("mode %v: io_path %q, io_path_reason %q; want the loop's own choice", rs[0]["mode"], path, reason)
	}
	if rs[1]["mode"] != "ring" || rs[1]["io_path"] != "ring" || rs[1]["io_path_reason"] != `WithIOPath("ring")` {
		t.Errorf("mode %v: io_path %v, io_path_reason %v; want ring, WithIOPath(\"ring\")", rs[1]["mode"], rs[1]["io_path"], rs[1]["io_path_reason"])
	}
}

// TestIOPathPipesTableNotesTheChoice: the table of `bench pipes --backend uring` has a note
// "fd_speed1 uring: handler I/O: auto: ..." under it.
func TestIOPathPipesTableNotesTheChoice(t *testing.T) {
	requireUring(t)
	var stdout, stderr strings.Builder
	if got := run([]string{"bench", "pipes", "--backend", "uring", "--shape", "fd_speed1", "--events", "1000"}, &stdout, &stderr); got != 0 {
		t.Fatalf("exit status %d, stderr %q", got, stderr.String())
	}
	if !strings.Contains(stdout.String(), "\nfd_speed1 uring: handler I/O: auto: ") {
		t.Errorf("no note on the handlers' I/O under the table:\n%s", stdout.String())
	}
}

// TestIOPathPipesModeRingOnEpollOnly: `--mode ring --backend epoll` measures nothing: a note says
// only uring has a ring, and the command exits 1 saying nothing was measured.
func TestIOPathPipesModeRingOnEpollOnly(t *testing.T) {
	var stdout, stderr strings.Builder
	got := run([]string{"bench", "pipes", "--backend", "epoll", "--shape", "fd_speed1", "--mode", "ring", "--events", "100"}, &stdout, &stderr)
	if got != 1 || !strings.Contains(stderr.String(), "skipping mode ring on epoll: only the uring backend has a ring") ||
		!strings.Contains(stderr.String(), "nothing was measured") {
		t.Errorf("exit status %d, stderr %q; want 1, a note on mode ring and \"nothing was measured\"", got, stderr.String())
	}
}
