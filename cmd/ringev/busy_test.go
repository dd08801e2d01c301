//go:build linux

package main

import (
	"encoding/json"
	"slices"
	"strings"
	"testing"
)

// TestParsePipesBusy: --busy counts are parsed, de-duplicated, in the order given, over several
// flags; the completion modes are known to --mode.
func TestParsePipesBusy(t *testing.T) {
	o, err := parsePipes([]string{"--busy", "16, 1,16", "--busy=256", "--shape", "fd_busy,fd_speed1",
		"--mode", "completion,completion-inline"})
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(o.busy, []int{16, 1, 256}) || !slices.Equal(o.shapes, []string{"fd_busy", "fd_speed1"}) ||
		!slices.Equal(o.modes, []string{"completion", "completion-inline"}) {
		t.Errorf("parsed %+v", o)
	}
}

// TestPipesBadBusy: a bad --busy value is a usage error (exit status 2) naming the flag and the
// bad count, and nothing is measured.
func TestPipesBadBusy(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--busy", "0"}, `invalid value "0" for flag --busy: pipe count "0": must be > 0`},
		{[]string{"--busy", "16,x"}, `invalid value "16,x" for flag --busy: pipe count "x": not an integer`},
		{[]string{"--busy", "-3"}, `pipe count "-3": must be > 0`},
		{[]string{"--busy", "16,,1"}, `pipe count "": not an integer`},
		{[]string{"--busy", "100001"}, `pipe count "100001": must be <= 100000`},
		{[]string{"--busy", "99999999999999999999"}, `pipe count "99999999999999999999": out of range`},
		{[]string{"--busy", "4", "--shape", "fd_speed1"}, "--busy 4: only the fd_busy shape uses it, and --shape does not select it"},
		{[]string{"--mode", "completion,proactor"}, `--mode: unknown mode "proactor"`},
	} {
		var stdout, stderr strings.Builder
		args := append([]string{"bench", "pipes"}, tc.args...)
		if got := run(args, &stdout, &stderr); got != 2 {
			t.Errorf("%q: exit status %d, want 2", tc.args, got)
		}
		if !strings.Contains(stderr.String(), tc.want) || stdout.Len() != 0 {
			t.Errorf("%q: stderr %q (stdout %q), want it to contain %q and stdout empty", tc.args, stderr.String(), stdout.String(), tc.want)
		}
	}
}

// TestRunPipesBusyCompletion: a short real run of fd_busy in a completion mode and the default
// mode prints one JSON result per count and mode, with the events asked for.
func TestRunPipesBusyCompletion(t *testing.T) {
	var stdout, stderr strings.Builder
	args := []string{"bench", "pipes", "--backend", "epoll", "--shape", "fd_busy", "--busy", "3,1",
		"--mode", "completion,default", "--events", "500", "--json"}
	if got := run(args, &stdout, &stderr); got != 0 {
		t.Fatalf("exit status %d, stderr %q", got, stderr.String())
	}
	var rs []struct {
		Shape, Mode string
		Events      int64
		Spurious    int64
	}
	if err := json.Unmarshal([]byte(stdout.String()), &rs); err != nil {
		t.Fatalf("stdout is not a JSON array: %v\n%s", err, stdout.String())
	}
	var got []string
	for _, r := range rs {
		got = append(got, r.Shape+"/"+r.Mode)
		if r.Events != 500 || r.Spurious != 0 {
			t.Errorf("%s/%s: %d events, %d spurious; want 500, 0", r.Shape, r.Mode, r.Events, r.Spurious)
		}
	}
	if want := "fd_busy3/default fd_busy3/completion fd_busy1/default fd_busy1/completion"; strings.Join(got, " ") != want {
		t.Errorf("measured %q, want %q", strings.Join(got, " "), want)
	}
}
