//go:build linux

package main

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/ringev/ringev/internal/bench"
)

// mainEnv, set in the environment, makes the test binary run the command with its arguments
// instead of the tests (TestRioSignalRemovesTempFile runs it so, to signal it).
const mainEnv = "RINGEV_TEST_RUN_MAIN"

func TestMain(m *testing.M) {
	// A row of `bench file` runs in a new process of this binary (bench.ExecFileRow).
	if done, status := bench.FileRowChild(os.Stdout, os.Stderr); done {
		os.Exit(status)
	}
	if os.Getenv(mainEnv) == "1" {
		os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
	}
	os.Exit(m.Run())
}

// syncBuffer is a bytes.Buffer safe for a writing process and a reading test.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// TestRioSignalRemovesTempFile: SIGINT and SIGTERM during a run (of the real command, in a
// child process) stop it, remove its temporary file and exit with 128 + the signal's number.
func TestRioSignalRemovesTempFile(t *testing.T) {
	requireUring(t)
	checkSignalRemovesTempFile(t, []string{"bench", "rio", "--size", "1m", "--runtime", "1h",
		"--direct=false", "--rate-iops", "1000"}, "ringev-rio-*.dat")
}

// TestRioChecksBeforeWriting: what can fail (the --png path, SQPOLL on a CPU that does not
// exist, pinning to one, IOPOLL on a device that cannot poll) fails before the temporary file is
// written (no note of it), with the mode named in words, and leaves no file behind.
func TestRioChecksBeforeWriting(t *testing.T) {
	requireUring(t)
	for _, tc := range []struct {
		args string
		want string
	}{
		{"--png /nonexistent-dir/x.png", "--png: open /nonexistent-dir/x.png"},
		{"--sqpoll --sq-cpu 100000", "mode SQPOLL: io_uring setup with SQPOLL (SQ thread idle 0s, on CPU 100000)"},
		{"--cpu 100000", "mode no SQPOLL: --cpu 100000: sched_setaffinity"},
		{"--grid rate=100 --cpu 100000", "mode no SQPOLL: --cpu 100000"},
		{"--hipri", "mode no SQPOLL: hipri: the device of a file in "},
	} {
		dir := t.TempDir()
		t.Setenv("TMPDIR", dir)
		var stdout, stderr bytes.Buffer
		st := run(append([]string{"bench", "rio", "--size", "64m", "--runtime", "100ms"}, strings.Fields(tc.args)...), &stdout, &stderr)
		if st == 0 && tc.args == "--hipri" {
			t.Logf("%s can poll: --hipri ran", dir)
			continue
		}
		if st != 1 || !strings.Contains(stderr.String(), tc.want) {
			t.Errorf("%s: status %d, stderr %q; want 1 and %q", tc.args, st, stderr.String(), tc.want)
		}
		if strings.Contains(stderr.String(), "writing") {
			t.Errorf("%s: the temporary file was written before failing: %q", tc.args, stderr.String())
		}
		if ents, _ := os.ReadDir(dir); len(ents) != 0 {
			t.Errorf("%s: left in $TMPDIR: %v", tc.args, ents)
		}
	}
}

// TestRunRioPNG: --png draws the chart into the file, which was created before the run.
func TestRunRioPNG(t *testing.T) {
	requireUring(t)
	png := filepath.Join(t.TempDir(), "rio.png")
	var out, errb bytes.Buffer
	st := run([]string{"bench", "rio", "--op", "nop", "--runtime", "100ms", "--rate-iops", "1000", "--png", png}, &out, &errb)
	if st != 0 {
		t.Fatalf("status %d: %s", st, errb.String())
	}
	data, err := os.ReadFile(png)
	if err != nil || !bytes.HasPrefix(data, []byte("\x89PNG\r\n\x1a\n")) {
		t.Errorf("%s: %v, %d bytes, want a PNG", png, err, len(data))
	}
}

// TestParseRioDefaults: the defaults are fio's job (4k, iodepth 128, 10 s, O_DIRECT, read).
func TestParseRioDefaults(t *testing.T) {
	o, err := parseRio(nil)
	if err != nil {
		t.Fatal(err)
	}
	c := o.cfg
	if c.BS != 4096 || c.IODepth != 128 || c.Runtime != 10*time.Second || !c.Direct || c.Op != "read" ||
		c.Size != 1<<30 || c.RateIOPS != 0 || c.RateProcess != "linear" || c.SQPoll || c.Deputy != 0 || o.stats[0] != "p99" {
		t.Errorf("defaults %+v, stats %v", c, o.stats)
	}
}

// TestParseRioFlags: every flag reaches the config.
func TestParseRioFlags(t *testing.T) {
	o, err := parseRio(strings.Fields("--file /dev/null --size 2g --bs 8k --iodepth 32 --rate-iops 2000 " +
		"--rate-process poisson --direct=false --op nop --runtime 3 --sqpoll --sq-idle 10 --sq-cpu 1 --cpu 0 " +
		"--deputy 4 --json --png x.png"))
	if err != nil {
		t.Fatal(err)
	}
	c := o.cfg
	if c.File != "/dev/null" || c.Size != 2<<30 || c.BS != 8192 || c.IODepth != 32 || c.RateIOPS != 2000 ||
		c.RateProcess != "poisson" || c.Direct || c.Op != "nop" || c.Runtime != 3*time.Second || !c.SQPoll ||
		c.SQIdle != 10*time.Millisecond || c.SQCPU != 1 || c.CPU != 0 || c.Deputy != 4 || !o.json || o.png != "x.png" {
		t.Errorf("parsed %+v", o)
	}
	o, err = parseRio([]string{"--grid", "rate=200,2000;idle=1,10", "--stat", "p99,mean"})
	if err != nil || len(o.grid.Rates) != 2 || len(o.stats) != 2 {
		t.Errorf("grid: %+v, %v", o, err)
	}
}

// TestParseRioBadFlags: each bad command line is a usage error (exit status 2) naming the flag.
func TestParseRioBadFlags(t *testing.T) {
	for _, tc := range []struct {
		args string
		want string
	}{
		{"--nope", "--nope"},
		{"--bs 0", "--bs"},
		{"--bs lots", "--bs"},
		{"--bs 1000", "O_DIRECT"},
		{"--iodepth 0", "--iodepth"},
		{"--iodepth 40000", "iodepth"},
		{"--rate-iops -5", "--rate-iops"},
		{"--rate-process bursty", "--rate-process"},
		{"--op write", "--op"},
		{"--runtime 0", "--runtime"},
		{"--runtime soon", "--runtime"},
		{"--deputy 4", "--deputy needs --sqpoll"},
		{"--sq-idle 10", "--sq-idle needs --sqpoll"},
		{"--sq-cpu 1", "--sq-cpu needs --sqpoll"},
		{"--hipri --direct=false", "hipri"},
		{"--grid rate=x", "--grid"},
		{"--grid speed=1", "--grid"},
		{"--grid rate=1 --stat p42", "--stat"},
		{"--stat p99", "--stat needs --grid"},
		{"--size 1k", "smaller than bs"},
		{"extra", "unexpected argument"},
	} {
		_, err := parseRio(strings.Fields(tc.args))
		if err == nil || exitStatus(err) != 2 || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%q: %v (exit %d), want a usage error with %q", tc.args, err, exitStatus(err), tc.want)
		}
	}
}

// TestRunRioExitStatus: help is 0, a bad flag 2, a missing file 1 with the file named.
func TestRunRioExitStatus(t *testing.T) {
	var out, errb bytes.Buffer
	if st := run([]string{"bench", "rio", "--help"}, &out, &errb); st != 0 || !strings.Contains(out.String(), "--rate-process") ||
		!strings.Contains(out.String(), "SIGINT or SIGTERM stops the run") {
		t.Errorf("--help: status %d, output %q", st, out.String())
	}
	errb.Reset()
	if st := run([]string{"bench", "rio", "--bs", "0"}, &out, &errb); st != 2 || !strings.Contains(errb.String(), "--bs") {
		t.Errorf("--bs 0: status %d, stderr %q", st, errb.String())
	}
	errb.Reset()
	missing := filepath.Join(t.TempDir(), "missing")
	if st := run([]string{"bench", "rio", "--file", missing, "--runtime", "100ms"}, &out, &errb); st != 1 ||
		!strings.Contains(errb.String(), missing) || !strings.Contains(errb.String(), "no such file") {
		t.Errorf("missing file: status %d, stderr %q", st, errb.String())
	}
}

// TestRunRioJSON: a short nop run prints one JSON result.
func TestRunRioJSON(t *testing.T) {
	requireUring(t)
	var out, errb bytes.Buffer
	st := run([]string{"bench", "rio", "--op", "nop", "--runtime", "200ms", "--rate-iops", "1000", "--json"}, &out, &errb)
	if st != 0 {
		t.Fatalf("status %d: %s", st, errb.String())
	}
	var rs []map[string]any
	if err := json.Unmarshal(out.Bytes(), &rs); err != nil || len(rs) != 1 || rs[0]["mode"] != "none" {
		t.Errorf("JSON %v: %s", err, out.String())
	}
}

// TestRioRefusesADirectoryAndATooLargeTempFile: --file naming a directory, and a temporary file
// larger than the free space of $TMPDIR, fail at once (status 1) with the reason, writing nothing.
func TestRioRefusesADirectoryAndATooLargeTempFile(t *testing.T) {
	requireUring(t)
	dir := t.TempDir()
	t.Setenv("TMPDIR", dir)
	for _, tc := range []struct{ args, want string }{
		{"--file " + dir, "is a directory"},
		{"--size 1024t", "does not fit"},
	} {
		var out, errb bytes.Buffer
		st := run(append([]string{"bench", "rio", "--runtime", "100ms"}, strings.Fields(tc.args)...), &out, &errb)
		if !strings.Contains(errb.String(), tc.want) {
		}
		if st != 1 || !strings.Contains(errb.String(), tc.want) || strings.Contains(errb.String(), "writing") {
			t.Errorf("%s: status %d, stderr %q; want 1 and %q, and nothing written", tc.args, st, errb.String(), tc.want)
		}
		if ents, _ := os.ReadDir(dir); len(ents) != 0 {
			t.Errorf("%s: left in $TMPDIR: %v", tc.args, ents)
		}
	}
}
