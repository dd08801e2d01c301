package main

import (
	"encoding/json"
	"errors"
	"flag"
	"slices"
	"strings"
	"testing"

	"github.com/ringev/ringev/internal/bench"
)

// TestParsePipesDefaults: no flags selects everything with 1,000,000 events and a table.
func TestParsePipesDefaults(t *testing.T) {
	o, err := parsePipes(nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(o.backends) != 0 || len(o.shapes) != 0 || o.events != bench.DefaultEvents || o.json {
		t.Errorf("defaults %+v", o)
	}
}

// TestParsePipesFlags: lists are split, trimmed and de-duplicated; both dash styles work.
func TestParsePipesFlags(t *testing.T) {
	o, err := parsePipes([]string{"--backend", "epoll, go-netpoller,epoll", "-shape=fd_speed1,context", "--events=2000", "--json"})
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(o.backends, []string{"epoll", "go-netpoller"}) || !slices.Equal(o.shapes, []string{"fd_speed1", "context"}) ||
		o.events != 2000 || !o.json {
		t.Errorf("parsed %+v", o)
	}
}

// TestParsePipesBadInput: every bad command line is a usage error (exit status 2) whose message
// names the flag and the bad value.
func TestParsePipesBadInput(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want []string // substrings of the message
	}{
		{[]string{"--backend", "nope"}, []string{"--backend", `"nope"`, "unknown backend", "epoll"}},
		{[]string{"--backend", "epoll,"}, []string{"--backend", "empty backend name"}},
		{[]string{"--shape", "fd_speed4"}, []string{"--shape", `"fd_speed4"`, "unknown shape"}},
		{[]string{"--events", "abc"}, []string{"--events", `"abc"`, "not an integer"}},
		{[]string{"--events", "0"}, []string{"--events", `"0"`, "must be > 0"}},
		{[]string{"--events=-5"}, []string{"--events", `"-5"`, "must be > 0"}},
		{[]string{"--events", "99999999999999999999"}, []string{"--events", "out of range"}},
		{[]string{"--events"}, []string{"--events", "needs an argument"}},
		{[]string{"--json=maybe"}, []string{"--json", `"maybe"`}},
		{[]string{"--frobnicate"}, []string{"--frobnicate", "not defined"}},
		{[]string{"extra"}, []string{`"extra"`, "unexpected argument"}},
		{[]string{"--json", "fd_speed1"}, []string{`"fd_speed1"`, "unexpected argument"}},
	} {
		_, err := parsePipes(tc.args)
		if got := exitStatus(err); got != 2 {
			t.Errorf("%q: exit status %d (err %v), want 2", tc.args, got, err)
			continue
		}
		for _, w := range tc.want {
			if !strings.Contains(err.Error(), w) {
				t.Errorf("%q: message %q does not contain %q", tc.args, err, w)
			}
		}
	}
}

// TestParsePipesHelp: --help and -h are flag.ErrHelp (exit status 0).
func TestParsePipesHelp(t *testing.T) {
	for _, a := range []string{"--help", "-h", "-help"} {
		_, err := parsePipes([]string{a})
		if !errors.Is(err, flag.ErrHelp) || exitStatus(err) != 0 {
			t.Errorf("%s: err %v, exit status %d; want flag.ErrHelp, 0", a, err, exitStatus(err))
		}
	}
}

// TestRunExitStatus: the command's exit status and where its text goes, without measuring.
func TestRunExitStatus(t *testing.T) {
	for _, tc := range []struct {
		args       []string
		status     int
		stdout     string // substring ("" = must be empty)
		stderrPart string // substring ("" = must be empty)
	}{
		{nil, 2, "", "usage: ringev"},
		{[]string{"frobnicate"}, 2, "", `unknown command "frobnicate"`},
		{[]string{"--help"}, 0, "usage: ringev", ""},
		{[]string{"bench"}, 2, "", "usage: ringev bench"},
		{[]string{"bench", "nope"}, 2, "", `unknown benchmark "nope"`},
		{[]string{"bench", "pipes", "--help"}, 0, "--events N", ""},
		{[]string{"bench", "pipes", "--backend", "x"}, 2, "", `--backend: unknown backend "x"`},
		{[]string{"bench", "pipes", "--events", "0"}, 2, "", `invalid value "0" for flag --events: must be > 0`},
	} {
		var stdout, stderr strings.Builder
		got := run(tc.args, &stdout, &stderr)
		if got != tc.status {
			t.Errorf("%q: exit status %d, want %d (stderr %q)", tc.args, got, tc.status, stderr.String())
		}
		check := func(name, out, want string) {
			if want == "" && out != "" || !strings.Contains(out, want) {
				t.Errorf("%q: %s %q, want it to contain %q", tc.args, name, out, want)
			}
		}
		check("stdout", stdout.String(), tc.stdout)
		check("stderr", stderr.String(), tc.stderrPart)
	}
}

// TestRunPipesJSON: a real (small) run with --json prints a JSON array whose objects carry the
// documented keys.
func TestRunPipesJSON(t *testing.T) {
	var stdout, stderr strings.Builder
	args := []string{"bench", "pipes", "--backend", "epoll,go-netpoller", "--shape", "fd_speed1", "--events", "2000", "--json"}
	if got := run(args, &stdout, &stderr); got != 0 {
		t.Fatalf("exit status %d, stderr %q", got, stderr.String())
	}
	var rs []map[string]any
	if err := json.Unmarshal([]byte(stdout.String()), &rs); err != nil {
		t.Fatalf("stdout is not a JSON array: %v\n%s", err, stdout.String())
	}
	if len(rs) == 0 {
		t.Fatalf("no results (stderr %q)", stderr.String())
	}
	for _, r := range rs {
		for _, k := range []string{"backend", "shape", "events", "seconds", "events_per_sec", "spurious", "signals_raised", "signals_counted"} {
			if _, ok := r[k]; !ok {
				t.Errorf("result %v lacks key %q", r, k)
			}
		}
		if r["shape"] != "fd_speed1" || r["events"] != 2000.0 {
			t.Errorf("result %v: want shape fd_speed1 with 2000 events", r)
		}
	}
}
