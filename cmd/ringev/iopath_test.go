//go:build linux

package main

// Tests of how `ringev bench pipes` shows the path of the handlers' I/O (--mode ring,
// io_path and io_path_reason in --json).

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/ringev/ringev/internal/bench"
	"github.com/ringev/ringev/internal/testutil"
)

// requireUring skips the test where the uring backend cannot be set up because io_uring is
// switched off or missing here; any other error fails it.
func requireUring(t *testing.T) {
	t.Helper()
	err := bench.CheckBackend("uring")
	testutil.SkipIfIOUringUnavailable(t, err, "the uring backend")
	if err != nil {
		t.Fatalf("the uring backend: %v", err)
	}
}

// TestIOPathPipesJSONSaysWhichPathAndWhy: `bench pipes --backend uring --mode default,ring
// --json` gives every result io_path and io_path_reason: read(2)/write(2) ("the default: ...")
// in mode default, the ring in mode ring.
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
	if reason, _ := rs[0]["io_path_reason"].(string); rs[0]["mode"] != "default" || path != "syscall" || !strings.HasPrefix(reason, "the default: ") {
		t.Errorf("mode %v: io_path %q, io_path_reason %q; want syscall, the default: ...", rs[0]["mode"], path, reason)
	}
	if rs[1]["mode"] != "ring" || rs[1]["io_path"] != "ring" || rs[1]["io_path_reason"] != `WithIOPath("ring")` {
		t.Errorf("mode %v: io_path %v, io_path_reason %v; want ring, WithIOPath(\"ring\")", rs[1]["mode"], rs[1]["io_path"], rs[1]["io_path_reason"])
	}
}

// TestIOPathPipesModeRingOnEpollOnly: `--mode ring --backend epoll` would measure nothing (only
// uring has a ring): a usage error (status 2) naming --mode and --backend, before any run.
func TestIOPathPipesModeRingOnEpollOnly(t *testing.T) {
	var stdout, stderr strings.Builder
	got := run([]string{"bench", "pipes", "--backend", "epoll", "--shape", "fd_speed1", "--mode", "ring", "--events", "100"}, &stdout, &stderr)
	if got != 2 || !strings.Contains(stderr.String(), "--mode ring: only the uring backend has a ring, and --backend epoll does not select it") ||
		stdout.Len() > 0 {
		t.Errorf("exit status %d, stdout %q, stderr %q; want 2 and a usage error naming --mode ring and --backend epoll", got, stdout.String(), stderr.String())
	}
}
