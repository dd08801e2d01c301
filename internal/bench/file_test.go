//go:build linux

package bench

// Tests of the file benchmark: a row measured in this process, the run's temporary file, its
// stop, its checks, and the table's ratios.

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/ringev/ringev/fileio"
)

// smallFile is a 1 MiB file of random data in the test's directory.
func smallFile(t *testing.T) string {
	t.Helper()
	p, err := writeTempFile(t.TempDir(), "f-*.dat", "test", 1<<20, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

func TestRunFileRowMeasuresReadsAndWrites(t *testing.T) {
	path := smallFile(t)
	for _, api := range []string{APIOS, APIRingev} {
		for _, rw := range []string{RWRandRead, RWRandWrite} {
			row := FileRow{Path: path, BS: 4096, RW: rw, API: api, Mode: fileio.ModeAuto, Goroutines: 3,
				Duration: 100 * time.Millisecond, PageCacheFirst: true, Seed: 1}
			res, err := RunFileRow(row, nil)
			if err != nil {
				t.Fatalf("%s %s: %v", api, rw, err)
			}
			if res.Ops == 0 || res.IOPS <= 0 || res.P50Us <= 0 || res.P99Us < res.P50Us || res.CPUUsPerOp <= 0 || res.Threads < 1 {
				t.Errorf("%s %s: %+v", api, rw, res)
			}
			if api == APIRingev && (res.Mode == "" || res.Mode == string(fileio.ModeAuto)) {
				t.Errorf("ringev row: mode %q, want the mode in use", res.Mode)
			}
		}
	}
}

func TestRunFileRemovesItsTempFile(t *testing.T) {
	dir := t.TempDir()
	cfg := DefaultFileConfig()
	cfg.Dir, cfg.Size, cfg.Goroutines, cfg.Direct, cfg.Duration = dir, 1<<20, []int{2}, []bool{false}, 50*time.Millisecond
	rs, err := RunFile(cfg)
	if err != nil || len(rs) != 2 {
		t.Fatalf("RunFile: %d rows, %v", len(rs), err)
	}
	if ents, _ := os.ReadDir(dir); len(ents) != 0 {
		t.Errorf("left in the directory: %v", ents)
	}
}

func TestRunFileStopsAndRemovesItsTempFile(t *testing.T) {
	dir := t.TempDir()
	stop := make(chan struct{})
	cfg := DefaultFileConfig()
	cfg.Dir, cfg.Size, cfg.Goroutines, cfg.Direct, cfg.Duration = dir, 1<<20, []int{2}, []bool{false}, time.Hour
	cfg.Stop = stop
	cfg.RunRow = func(row FileRow, s <-chan struct{}) (FileResult, error) {
		close(stop) // the first row is under way: stop it
		return RunFileRow(row, s)
	}
	done := make(chan error, 1)
	go func() { _, err := RunFile(cfg); done <- err }()
	select {
	case err := <-done:
		if !errors.Is(err, ErrStopped) {
			t.Errorf("RunFile after Stop: %v, want ErrStopped", err)
		}
	case <-time.After(20 * time.Second):
		t.Fatal("RunFile did not stop")
	}
	if ents, _ := os.ReadDir(dir); len(ents) != 0 {
		t.Errorf("left in the directory: %v", ents)
	}
}

func TestFileConfigValidateNamesTheField(t *testing.T) {
	for _, tc := range []struct {
		change func(*FileConfig)
		want   string
	}{
		{func(c *FileConfig) { c.RW = "trim" }, "rw"},
		{func(c *FileConfig) { c.BS = 1000 }, "O_DIRECT"},
		{func(c *FileConfig) { c.Goroutines = nil }, "goroutines"},
		{func(c *FileConfig) { c.Goroutines = []int{0} }, "goroutines"},
		{func(c *FileConfig) { c.Direct = nil }, "direct"},
		{func(c *FileConfig) { c.Modes, c.NoOS = nil, true }, "no API"},
		{func(c *FileConfig) { c.Modes = []fileio.Mode{"x"} }, "mode"},
		{func(c *FileConfig) { c.Duration = 0 }, "seconds"},
		{func(c *FileConfig) { c.Rate = -1 }, "rate"},
		{func(c *FileConfig) { c.Size = 100 }, "size"},
	} {
		c := DefaultFileConfig()
		tc.change(&c)
		if err := c.Validate(); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("Validate: %v, want an error naming %q", err, tc.want)
		}
	}
}

func TestRunFileRefusesAFileThatIsNotRegular(t *testing.T) {
	cfg := DefaultFileConfig()
	cfg.File, cfg.Direct = t.TempDir(), []bool{false}
	if _, err := RunFile(cfg); err == nil || !strings.Contains(err.Error(), "not a regular file") {
		t.Errorf("RunFile on a directory: %v", err)
	}
	cfg.File = filepath.Join(t.TempDir(), "missing")
	if _, err := RunFile(cfg); err == nil || !strings.Contains(err.Error(), "missing") {
		t.Errorf("RunFile on a missing file: %v", err)
	}
}

func TestWriteFileTableGivesRatiosToOSFile(t *testing.T) {
	rs := []FileResult{
		{API: APIOS, Goroutines: 16, Mode: "pread", IOPS: 1000, CPUUsPerOp: 2, Threads: 20, RW: RWRandRead, BS: 4096, Seconds: 5},
		{API: APIRingev, Goroutines: 16, Mode: "defer-taskrun", IOPS: 1500, CPUUsPerOp: 1, Threads: 5, Ops: 100, RingOps: 25},
	}
	var b bytes.Buffer
	if err := WriteFileTable(&b, rs); err != nil {
		t.Fatal(err)
	}
	out := b.String()
	for _, want := range []string{"1.50", "0.50", "25%", "ringev defer-taskrun", "os.File"} {
		if !strings.Contains(out, want) {
			t.Errorf("table lacks %q:\n%s", want, out)
		}
	}
}

// TestWriteFileTableShowsASubSecondRowsTime: a row measured for 0.3 s (--seconds 0.3) is said
// to be 0.3 s long, not rounded to "0 s".
func TestWriteFileTableShowsASubSecondRowsTime(t *testing.T) {
	rs := []FileResult{{API: APIOS, Goroutines: 4, Mode: "pread", IOPS: 1000, RW: RWRandRead, BS: 4096, Seconds: 0.3004}}
	var b bytes.Buffer
	if err := WriteFileTable(&b, rs); err != nil {
		t.Fatal(err)
	}
	if head, _, _ := strings.Cut(b.String(), "\n"); !strings.Contains(head, ", 0.3 s per row") {
		t.Errorf("heading %q, want it to say 0.3 s per row", head)
	}
}
