package main

import (
	"bytes"
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestParseRioDefaults: the defaults of the issue (4k, iodepth 128, 10 s, O_DIRECT, read).
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
	if st := run([]string{"bench", "rio", "--help"}, &out, &errb); st != 0 || !strings.Contains(out.String(), "--rate-process") {
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
	var out, errb bytes.Buffer
	st := run([]string{"bench", "rio", "--op", "nop", "--runtime", "200ms", "--rate-iops", "1000", "--json"}, &out, &errb)
	if st != 0 {
		t.Skipf("io_uring unavailable? status %d: %s", st, errb.String())
	}
	var rs []map[string]any
	if err := json.Unmarshal(out.Bytes(), &rs); err != nil || len(rs) != 1 || rs[0]["mode"] != "none" {
		t.Errorf("JSON %v: %s", err, out.String())
	}
}
