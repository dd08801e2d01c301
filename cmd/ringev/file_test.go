//go:build linux

package main

// Tests of `ringev bench file`: its flags, help, exit statuses, output, chart, and its
// temporary file (removed after a run, and after SIGINT or SIGTERM).

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/ringev/ringev/fileio"
)

// TestParseFileDefaults: 4 KiB random reads of a 1 GiB file, 1/16/64/256 goroutines, page cache
// and O_DIRECT, ringev in mode auto against os.File, 5 s a row.
func TestParseFileDefaults(t *testing.T) {
	o, err := parseFile(nil)
	if err != nil {
		t.Fatal(err)
	}
	c := o.cfg
	if c.BS != 4096 || c.Size != 1<<30 || c.RW != "randread" || !slices.Equal(c.Goroutines, []int{1, 16, 64, 256}) ||
		!slices.Equal(c.Direct, []bool{false, true}) || !slices.Equal(c.Modes, []fileio.Mode{fileio.ModeAuto}) ||
		c.NoOS || c.Duration != 5*time.Second || c.Rate != 0 || !c.PageCacheFirst || o.json || o.png != "" {
		t.Errorf("defaults %+v", o)
	}
}

// TestParseFileFlags: every flag reaches the config.
func TestParseFileFlags(t *testing.T) {
	o, err := parseFile(strings.Fields("--file /x --dir /d --size 2g --bs 8k --rw randwrite --goroutines 2,3 " +
		"--direct=false --mode plain,deputy --os=false --seconds 0.5 --rate 2000 --page-cache-first=false " +
		"--sq-idle 3 --deputy 4 --seed 9 --json --png x.png"))
	if err != nil {
		t.Fatal(err)
	}
	c := o.cfg
	if c.File != "/x" || c.Dir != "/d" || c.Size != 2<<30 || c.BS != 8192 || c.RW != "randwrite" ||
		!slices.Equal(c.Goroutines, []int{2, 3}) || !slices.Equal(c.Direct, []bool{false}) ||
		!slices.Equal(c.Modes, []fileio.Mode{fileio.ModePlain, fileio.ModeDeputy}) || !c.NoOS ||
		c.Duration != 500*time.Millisecond || c.Rate != 2000 || c.PageCacheFirst || c.SQIdle != 3*time.Millisecond ||
		c.Deputy != 4 || c.Seed != 9 || !o.json || o.png != "x.png" {
		t.Errorf("parsed %+v", o)
	}
	for args, want := range map[string][]bool{"--direct": {true}, "--direct=true": {true}, "--direct=both": {false, true}} {
		o, err := parseFile([]string{args})
		if err != nil || !slices.Equal(o.cfg.Direct, want) {
			t.Errorf("%s: %v, %v; want %v", args, o.cfg.Direct, err, want)
		}
	}
}

// TestParseFileBadFlags: each bad command line is a usage error (exit status 2) naming the flag.
func TestParseFileBadFlags(t *testing.T) {
	for _, tc := range []struct{ args, want string }{
		{"--nope", "--nope"},
		{"--bs 0", "--bs"},
		{"--bs 1000", "O_DIRECT"},
		{"--size lots", "--size"},
		{"--rw randtrim", "--rw"},
		{"--goroutines 0", "--goroutines"},
		{"--goroutines 1,x", "--goroutines"},
		{"--direct=sometimes", "--direct"},
		{"--mode fast", "--mode"},
		{"--seconds 0", "--seconds"},
		{"--rate -1", "--rate"},
		{"--deputy 0", "--deputy"},
		{"--sq-idle -3", "--sq-idle"},
		{"--seed -1", "--seed"},
		{"--file=", "--file"},
		{"--os=false --mode=", "--mode"},
		{"--size 1k", "smaller than bs"},
		{"extra", "unexpected argument"},
		{"--direct both", "--direct takes its value after '='"},
		{"--direct maybe", "--direct=both"},
	} {
		_, err := parseFile(strings.Fields(tc.args))
		if err == nil || exitStatus(err) != 2 || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%q: %v (exit %d), want a usage error with %q", tc.args, err, exitStatus(err), tc.want)
		}
	}
}

// TestRunFileHelpAndExitStatus: --help is 0 and names the JSON fields, a bad flag 2 naming it,
// a missing file or one that is not a regular file 1 naming it.
func TestRunFileHelpAndExitStatus(t *testing.T) {
	var out, errb bytes.Buffer
	if st := run([]string{"bench", "file", "--help"}, &out, &errb); st != 0 || !strings.Contains(out.String(), "cpu_us_per_op") ||
		!strings.Contains(out.String(), "SIGINT or SIGTERM") {
		t.Errorf("--help: status %d, output %q", st, out.String())
	}
	errb.Reset()
	if st := run([]string{"bench", "file", "--goroutines", "0"}, &out, &errb); st != 2 || !strings.Contains(errb.String(), "--goroutines") {
		t.Errorf("--goroutines 0: status %d, stderr %q", st, errb.String())
	}
	errb.Reset()
	missing := filepath.Join(t.TempDir(), "missing")
	if st := run([]string{"bench", "file", "--file", missing, "--seconds", "0.1", "--direct=false"}, &out, &errb); st != 1 ||
		!strings.Contains(errb.String(), missing) {
		t.Errorf("missing file: status %d, stderr %q", st, errb.String())
	}
	errb.Reset()
	if st := run([]string{"bench", "file", "--file", os.DevNull, "--seconds", "0.1", "--direct=false"}, &out, &errb); st != 1 ||
		!strings.Contains(errb.String(), "--file "+os.DevNull+": not a regular file") {
		t.Errorf("--file %s: status %d, stderr %q", os.DevNull, st, errb.String())
	}
}

// TestRunFileJSONAndPNG: a short run prints one JSON object per row with the fields,
// draws the chart, and removes its temporary file.
func TestRunFileJSONAndPNG(t *testing.T) {
	dir := t.TempDir()
	t.Setenv("TMPDIR", dir)
	png := filepath.Join(t.TempDir(), "file.png")
	var out, errb bytes.Buffer
	st := run(strings.Fields("bench file --size 1m --goroutines 1,4 --seconds 0.2 --mode auto,threads --json --png "+png), &out, &errb)
	if st != 0 {
		t.Fatalf("status %d: %s", st, errb.String())
	}
	var rows []map[string]any
	if err := json.Unmarshal(out.Bytes(), &rows); err != nil {
		t.Fatalf("JSON: %v: %s", err, out.String())
	}
	if len(rows) != 12 { // 2 cache modes x 2 goroutine counts x (os + 2 modes)
		t.Fatalf("%d rows, want 12: %s", len(rows), out.String())
	}
	for _, r := range rows {
		for _, k := range []string{"api", "goroutines", "direct", "mode", "iops", "p50_us", "p99_us", "cpu_us_per_op", "threads"} {
			if _, ok := r[k]; !ok {
				t.Errorf("row %v has no %q", r, k)
			}
		}
		if r["iops"].(float64) <= 0 || r["threads"].(float64) < 1 {
			t.Errorf("row %v: no operations or threads", r)
		}
	}
	if data, err := os.ReadFile(png); err != nil || !bytes.HasPrefix(data, []byte("\x89PNG\r\n\x1a\n")) {
		t.Errorf("%s: %v, %d bytes, want a PNG", png, err, len(data))
	}
	if ents, _ := os.ReadDir(dir); len(ents) != 0 {
		t.Errorf("left in $TMPDIR: %v", ents)
	}
}

// TestFileSignalRemovesTempFile: SIGINT and SIGTERM during a run (of the real command, in a
// child process) stop it, remove its temporary file and exit with 128 + the signal's number.
func TestFileSignalRemovesTempFile(t *testing.T) {
	checkSignalRemovesTempFile(t, []string{"bench", "file", "--size", "1m", "--seconds", "1h", "--direct=false",
		"--goroutines", "2", "--rate", "1000"}, "ringev-file-*.dat")
}
