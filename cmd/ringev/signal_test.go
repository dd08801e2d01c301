//go:build linux

package main

import (
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// processesWithEnv returns the IDs of the processes whose environment holds kv ("KEY=VALUE"):
// those a run started (bench file's rows) carry its $TMPDIR.
func processesWithEnv(kv string) []int {
	var pids []int
	ents, _ := os.ReadDir("/proc")
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		env, err := os.ReadFile("/proc/" + e.Name() + "/environ")
		if err != nil {
			continue // gone, or not ours to read
		}
		if slices.Contains(strings.Split(string(env), "\x00"), kv) {
			pids = append(pids, pid)
		}
	}
	return pids
}

// checkSignalRemovesTempFile runs the command args (a benchmark that writes a temporary file
// named like pattern) in a child process with its own $TMPDIR, once per signal: SIGINT and
// SIGTERM sent once the file is there must stop the run, remove the file and exit with 128 +
// the signal's number, saying so on stderr and printing nothing on stdout, and leave no process
// it started running.
func checkSignalRemovesTempFile(t *testing.T, args []string, pattern string) {
	t.Helper()
	for _, sig := range []syscall.Signal{syscall.SIGINT, syscall.SIGTERM} {
		t.Run(sig.String(), func(t *testing.T) {
			dir := t.TempDir()
			cmd := exec.Command(os.Args[0], args...)
			cmd.Env = append(os.Environ(), mainEnv+"=1", "TMPDIR="+dir)
			var stdout, stderr syncBuffer
			cmd.Stdout, cmd.Stderr = &stdout, &stderr
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			waited := make(chan error, 1)
			go func() { waited <- cmd.Wait() }()
			t.Cleanup(func() { // a failed check may leave the run or its processes behind
				cmd.Process.Kill()
				for _, pid := range processesWithEnv("TMPDIR=" + dir) {
					syscall.Kill(pid, syscall.SIGKILL)
				}
			})
			// Wait for the temporary file (the run catches the signals by then), and signal
			// some time into the run: any moment after the file exists will do.
			deadline := time.Now().Add(20 * time.Second)
			for !strings.Contains(stderr.String(), "temporary file") {
				select {
				case err := <-waited:
					t.Fatalf("the run ended before the signal (%v): %s", err, stderr.String())
				case <-time.After(10 * time.Millisecond):
				}
				if time.Now().After(deadline) {
					cmd.Process.Kill()
					t.Fatalf("no temporary file after 20 s: stderr %q", stderr.String())
				}
			}
			time.Sleep(300 * time.Millisecond)
			if ents, _ := filepath.Glob(filepath.Join(dir, pattern)); len(ents) != 1 {
				t.Errorf("before the signal: temporary files %v, want 1", ents)
			}
			if err := cmd.Process.Signal(sig); err != nil {
				t.Fatal(err)
			}
			var err error
			select {
			case err = <-waited:
			case <-time.After(20 * time.Second):
				cmd.Process.Kill()
				t.Fatalf("still running 20 s after %v: stderr %q", sig, stderr.String())
			}
			var ee *exec.ExitError
			if !errors.As(err, &ee) || ee.ExitCode() != 128+int(sig) {
				t.Errorf("after %v: %v, want exit status %d; stderr %q", sig, err, 128+int(sig), stderr.String())
			}
			if !strings.Contains(stderr.String(), "interrupted by SIG") || !strings.Contains(stderr.String(), "temporary file removed") {
				t.Errorf("stderr %q lacks the interruption message", stderr.String())
			}
			if ents, _ := os.ReadDir(dir); len(ents) != 0 {
				t.Errorf("left in $TMPDIR after %v: %v", sig, ents)
			}
			if pids := processesWithEnv("TMPDIR=" + dir); len(pids) != 0 {
				t.Errorf("processes %v of the run (their $TMPDIR is the run's) still alive after %v", pids, sig)
			}
			if stdout.String() != "" {
				t.Errorf("stdout %q, want nothing", stdout.String())
			}
		})
	}
}
