//go:build linux

package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io/fs"
	"os"
	"os/signal"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/ringev/ringev/internal/bench"
)

// TestParsePipesDefaults: no flags selects everything with 1,000,000 events and a table.
func TestParsePipesDefaults(t *testing.T) {
	o, err := parsePipes(nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(o.backends) != 0 || len(o.shapes) != 0 || len(o.fds) != 0 || len(o.modes) != 0 ||
		o.events != bench.DefaultEvents || o.json || o.png != "" {
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

// TestParsePipesRegisteredFiles: the completion modes register the pipes unless
// --registered-files=false; a bare --registered-files keeps them registered.
func TestParsePipesRegisteredFiles(t *testing.T) {
	for _, tc := range []struct {
		args  []string
		unreg bool
	}{{nil, false}, {[]string{"--registered-files"}, false}, {[]string{"--registered-files=false"}, true}, {[]string{"--registered-files=true"}, false}} {
		o, err := parsePipes(tc.args)
		if err != nil || o.unreg != tc.unreg {
			t.Errorf("parsePipes(%q): unreg %v, err %v; want unreg %v", tc.args, o.unreg, err, tc.unreg)
		}
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
		{[]string{"--registered-files=maybe"}, []string{"--registered-files", `"maybe"`, "true or false"}},
		{[]string{"--registered-files", "false"}, []string{`"false"`, "--registered-files", "after '='", "--registered-files=false"}},
		{[]string{"--json", "--registered-files", "0"}, []string{`"0"`, "after '='", "--registered-files=0"}},
		{[]string{"--json", "true"}, []string{`"true"`, "after '='", "--json=true"}},
		{[]string{"--events", "5", "false"}, []string{`"false"`, "unexpected argument", "takes only flags"}},
		{[]string{"--frobnicate"}, []string{"--frobnicate", "not defined"}},
		{[]string{"extra"}, []string{`"extra"`, "unexpected argument"}},
		{[]string{"--json", "fd_speed1"}, []string{`"fd_speed1"`, "unexpected argument"}},
		{[]string{"--fds", "1,x"}, []string{"--fds", `"x"`, "not an integer"}},
		{[]string{"--fds", "0"}, []string{"--fds", `"0"`, "must be > 0"}},
		{[]string{"--fds", "10,-2"}, []string{"--fds", `"-2"`, "must be > 0"}},
		{[]string{"--fds", "1,,2"}, []string{"--fds", `""`, "not an integer"}},
		{[]string{"--fds", "2000000"}, []string{"--fds", `"2000000"`, "must be <= 1000000"}},
		{[]string{"--fds"}, []string{"--fds", "needs an argument"}},
		{[]string{"--shape", "fd_speed1", "--fds", "5"}, []string{"--fds 5", "fd_many", "--shape"}},
		{[]string{"--mode", "turbo"}, []string{"--mode", `"turbo"`, "unknown mode", "default, syscall, fresh, all"}},
		{[]string{"--mode", "all,"}, []string{"--mode", "empty mode name"}},
		{[]string{"--mode"}, []string{"--mode", "needs an argument"}},
		{[]string{"--png", ""}, []string{"--png", "empty file name"}},
		{[]string{"--png"}, []string{"--png", "needs an argument"}},
		{[]string{"--mode", "ring", "--backend", "epoll,poll"}, []string{"--mode ring", "uring", "--backend epoll,poll"}},
		{[]string{"--shape", "context", "--backend", "go-netpoller"}, []string{"--shape context", "go-netpoller"}},
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

// TestParsePipesAcceptsCombinationsThatMeasureSomething: a mode or shape that only some of the
// selected backends run is no usage error (the others are skipped with a note).
func TestParsePipesAcceptsCombinationsThatMeasureSomething(t *testing.T) {
	for _, args := range [][]string{
		{"--mode", "ring", "--backend", "uring,epoll"},
		{"--mode", "ring,default", "--backend", "epoll"},
		{"--mode", "ring", "--backend", "go-netpoller"},
		{"--mode", "ring"},
		{"--shape", "context,fd_speed1", "--backend", "go-netpoller"},
		{"--shape", "context", "--backend", "epoll,go-netpoller"},
	} {
		if _, err := parsePipes(args); err != nil {
			t.Errorf("%q: %v, want it accepted", args, err)
		}
	}
}

// TestParsePipesNewFlags: --fds, --mode and --png are parsed, de-duplicated, in the order given.
func TestParsePipesNewFlags(t *testing.T) {
	o, err := parsePipes([]string{"--fds", "50, 1,50", "--fds=7", "--mode", "all,default", "--mode=all,fresh",
		"--png", "/tmp/x.png", "--shape", "fd_many"})
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(o.fds, []int{50, 1, 7}) || !slices.Equal(o.modes, []string{"all", "default", "fresh"}) ||
		o.png != "/tmp/x.png" || !slices.Equal(o.shapes, []string{"fd_many"}) {
		t.Errorf("parsed %+v", o)
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
		// A flag before the command: said to be a flag, not an unknown command.
		{[]string{"--bogus"}, 2, "", `ringev: "--bogus" is not a command: a flag goes after the command (e.g. 'ringev serve --help')`},
		{[]string{"bench", "--json"}, 2, "", `ringev bench: "--json" is not a benchmark: a flag goes after the benchmark (e.g. 'ringev bench net --help')`},
		{[]string{"--help"}, 0, "usage: ringev", ""},
		{[]string{"help"}, 0, "usage: ringev <command>", ""},
		{[]string{"help", "probe"}, 0, "usage: ringev probe", ""},
		{[]string{"help", "bench"}, 0, "usage: ringev bench <benchmark>", ""},
		{[]string{"help", "bench", "rio"}, 0, "usage: ringev bench rio", ""},
		{[]string{"help", "bench", "pipes"}, 0, "usage: ringev bench pipes", ""},
		{[]string{"bench", "help", "rio"}, 0, "usage: ringev bench rio", ""},
		{[]string{"help", "frobnicate"}, 2, "", `unknown command "frobnicate"`},
		{[]string{"bench"}, 2, "", "usage: ringev bench"},
		{[]string{"bench", "--help"}, 0, "usage: ringev bench", ""},
		{[]string{"bench", "nope"}, 2, "", `unknown benchmark "nope"`},
		{[]string{"probe", "--help"}, 0, "usage: ringev probe", ""},
		{[]string{"probe", "--nosuch"}, 2, "", "ringev probe: flag provided but not defined: --nosuch"},
		// A boolean flag's value as a separate argument: a usage error saying to use '='.
		{[]string{"probe", "--json", "false"}, 2, "", `unexpected argument "false" after --json: a boolean flag takes its value after '=' (--json=false)`},
		{[]string{"bench", "pipes", "--registered-files", "false"}, 2, "",
			`unexpected argument "false" after --registered-files: a boolean flag takes its value after '=' (--registered-files=false)`},
		// A combination that measures nothing whatever the kernel: a usage error naming the flags
		// (bench.Run's "nothing was measured" is TestRunNamesTheCombinationsItSkipped).
		{[]string{"bench", "pipes", "--shape", "context", "--backend", "go-netpoller"}, 2, "",
			"--shape context: go-netpoller has none"},
		{[]string{"bench", "pipes", "--help"}, 0, "--events N", ""},
		{[]string{"bench", "pipes", "--help"}, 0, "--png FILE", ""},
		{[]string{"bench", "pipes", "--fds", "0"}, 2, "", `invalid value "0" for flag --fds: pipe count "0": must be > 0`},
		{[]string{"bench", "pipes", "--mode", "x"}, 2, "", `--mode: unknown mode "x"`},
		// A path that cannot be created fails at once (exit status 1), before measuring.
		{[]string{"bench", "pipes", "--png", "/nonexistent-dir/x.png"}, 1, "", "--png: open /nonexistent-dir/x.png: no such file or directory"},
		{[]string{"bench", "pipes", "--backend", "x"}, 2, "", `--backend: unknown backend "x"`},
		{[]string{"bench", "rio", "--file", "/nonexistent-dir/x", "--runtime", "1s"}, 1, "",
			"ringev bench rio: --file /nonexistent-dir/x: no such file or directory\n"},
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

// TestUsageListsCommands: the top-level usage (shown for no command, --help and an unknown
// command) lists every command, and the bench usage every benchmark.
func TestUsageListsCommands(t *testing.T) {
	for _, args := range [][]string{nil, {"--help"}, {"frobnicate"}} {
		var stdout, stderr strings.Builder
		run(args, &stdout, &stderr)
		out := stdout.String() + stderr.String()
		for _, want := range []string{"bench pipes", "bench rio", "probe", "help"} {
			if !strings.Contains(out, "\n  "+want+" ") {
				t.Errorf("%q: usage lacks command %q:\n%s", args, want, out)
			}
		}
	}
	for _, args := range [][]string{{"bench"}, {"bench", "--help"}, {"bench", "nope"}} {
		var stdout, stderr strings.Builder
		run(args, &stdout, &stderr)
		out := stdout.String() + stderr.String()
		for _, want := range []string{"pipes", "rio"} {
			if !strings.Contains(out, "\n  "+want+" ") {
				t.Errorf("%q: usage lacks benchmark %q:\n%s", args, want, out)
			}
		}
	}
}

// TestPipesTableSignalsNote: a table with a context result that counted fewer signals than it
// raised explains it once, under the table; one without such a result has no note.
func TestPipesTableSignalsNote(t *testing.T) {
	ctx := bench.Result{Backend: "epoll", Shape: bench.ShapeContext, Events: 10, Seconds: 2, EventsPerSec: 5,
		SignalsRaised: 20, SignalsCounted: 15}
	ctx2 := ctx
	ctx2.Backend = "poll"
	var b strings.Builder
	if err := writePipesTable(&b, []bench.Result{ctx, ctx2}); err != nil {
		t.Fatal(err)
	}
	out := b.String()
	if n := strings.Count(out, "merges a"); n != 1 {
		t.Errorf("%d signal notes, want 1:\n%s", n, out)
	}
	if !strings.HasSuffix(out, signalsNote) || !strings.Contains(out, "signals raised 20, counted 15") {
		t.Errorf("want the signals line, then the note last:\n%s", out)
	}
	b.Reset()
	fd := bench.Result{Backend: "epoll", Shape: "fd_speed1", Events: 10, Seconds: 1, EventsPerSec: 10}
	if err := writePipesTable(&b, []bench.Result{fd}); err != nil || strings.Contains(b.String(), "signal") {
		t.Errorf("fd_speed1 table (%v) mentions signals:\n%s", err, b.String())
	}
	b.Reset()
	exact := ctx
	exact.SignalsCounted = exact.SignalsRaised
	if err := writePipesTable(&b, []bench.Result{exact}); err != nil || strings.Contains(b.String(), "merges a") {
		t.Errorf("a context run that counted every signal (%v) gets the note:\n%s", err, b.String())
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

// TestRunPipesFdManyModesPNG: a real (small) run of fd_many and fd_speed1 in two modes with
// --json and --png: the JSON carries mode, fds and ns_per_event, the chart is a PNG file.
func TestRunPipesFdManyModesPNG(t *testing.T) {
	png := filepath.Join(t.TempDir(), "pipes.png")
	var stdout, stderr strings.Builder
	args := []string{"bench", "pipes", "--backend", "epoll,go-netpoller", "--shape", "fd_speed1,fd_many",
		"--fds", "1,50", "--mode", "default,all", "--events", "500", "--json", "--png", png}
	if got := run(args, &stdout, &stderr); got != 0 {
		t.Fatalf("exit status %d, stderr %q", got, stderr.String())
	}
	var rs []map[string]any
	if err := json.Unmarshal([]byte(stdout.String()), &rs); err != nil {
		t.Fatalf("stdout is not a JSON array: %v\n%s", err, stdout.String())
	}
	var got []string
	for _, r := range rs {
		got = append(got, fmt.Sprintf("%v:%v:%v:%v", r["shape"], r["backend"], r["mode"], r["fds"]))
		if ns, _ := r["ns_per_event"].(float64); ns <= 0 {
			t.Errorf("result %v: ns_per_event %v, want > 0", r, r["ns_per_event"])
		}
		if r["spurious"] != 0.0 {
			t.Errorf("result %v: spurious calls", r)
		}
	}
	want := "fd_speed1:epoll:default:<nil> fd_speed1:go-netpoller:default:<nil> fd_speed1:epoll:all:<nil> " +
		"fd_many1:epoll:default:1 fd_many1:go-netpoller:default:1 fd_many1:epoll:all:1 " +
		"fd_many50:epoll:default:50 fd_many50:go-netpoller:default:50 fd_many50:epoll:all:50"
	if bench.CheckBackend("epoll") != nil {
		t.Skipf("epoll not usable here (measured %s)", strings.Join(got, " "))
	}
	if strings.Join(got, " ") != want {
		t.Errorf("measured\n%s\nwant\n%s", strings.Join(got, " "), want)
	}
	data, err := os.ReadFile(png)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.HasPrefix(data, []byte("\x89PNG\r\n\x1a\n")) {
		t.Errorf("%s does not start with the PNG signature: %q", png, data[:min(8, len(data))])
	}
}

// interruptUntilDone sends SIGINT to this process every 20 ms until a run started on another
// goroutine returns its status on done, and returns it: the first SIGINT that comes after the
// run caught the signal (a moment the test cannot see) interrupts it, and a guard of the test's
// own catches the others, which would otherwise end the test binary. It fails the test if the
// run has not returned within 10 s.
func interruptUntilDone(t *testing.T, done <-chan int) int {
	t.Helper()
	guard := make(chan os.Signal, 1024)
	signal.Notify(guard, syscall.SIGINT)
	defer signal.Stop(guard)
	tick := time.NewTicker(20 * time.Millisecond)
	defer tick.Stop()
	end := time.After(10 * time.Second)
	for {
		if err := syscall.Kill(os.Getpid(), syscall.SIGINT); err != nil {
			t.Fatal(err)
		}
		select {
		case st := <-done:
			return st
		case <-end:
			t.Fatal("the run did not stop within 10 s of SIGINTs")
		case <-tick.C:
		}
	}
}

// TestPipesInterruptedKeepsAnExistingPNG: SIGINT during `bench pipes --png FILE` exits 130,
// leaves an existing FILE as it was, and removes a FILE the run created.
func TestPipesInterruptedKeepsAnExistingPNG(t *testing.T) {
	dir := t.TempDir()
	old := filepath.Join(dir, "old.png")
	if err := os.WriteFile(old, []byte("an older chart"), 0o644); err != nil {
		t.Fatal(err)
	}
	fresh := filepath.Join(dir, "new.png")
	for _, path := range []string{old, fresh} {
		var stdout, stderr bytes.Buffer
		done := make(chan int, 1)
		go func() {
			done <- run([]string{"bench", "pipes", "--shape", "fd_speed1", "--backend", "epoll", "--events", "1000000000", "--png", path}, &stdout, &stderr)
		}()
		st := interruptUntilDone(t, done)
		if st != 130 || !strings.Contains(stderr.String(), "interrupted by SIGINT") {
			t.Errorf("%s: status %d, stderr %q; want 130 and \"interrupted by SIGINT\"", path, st, stderr.String())
		}
	}
	if b, err := os.ReadFile(old); err != nil || string(b) != "an older chart" {
		t.Errorf("existing --png file after the interrupt: %q, %v; want it unchanged", b, err)
	}
	if _, err := os.Stat(fresh); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("--png file created by the interrupted run: stat says %v, want it removed", err)
	}
}
