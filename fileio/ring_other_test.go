//go:build unix && !linux

package fileio_test

// Tests of fileio off Linux (cross-compiled on Linux, run on macOS and the BSDs): ModeAuto runs
// the thread pool and names the system, an io_uring mode fails with errors.ErrUnsupported, and
// the pool's reads, writes and syncs work.

import (
	"bytes"
	"errors"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"github.com/ringev/ringev/fileio"
)

func TestRingOtherAutoRunsThreadsAndNamesTheSystem(t *testing.T) {
	r, err := fileio.NewRing()
	if err != nil {
		t.Fatalf("NewRing: %v", err)
	}
	defer r.Close()
	if r.Mode() != fileio.ModeThreads {
		t.Errorf("Mode() = %q, want %q", r.Mode(), fileio.ModeThreads)
	}
	if !strings.Contains(r.Reason(), runtime.GOOS) {
		t.Errorf("Reason() = %q, want it to name %s", r.Reason(), runtime.GOOS)
	}
}

func TestRingOtherIoUringModeFailsWithErrUnsupported(t *testing.T) {
	for _, m := range []fileio.Mode{fileio.ModePlain, fileio.ModeDeferTaskrun, fileio.ModeSQPoll, fileio.ModeDeputy, fileio.ModeNetpoll} {
		r, err := fileio.NewRing(fileio.WithMode(m))
		if err == nil {
			r.Close()
			t.Fatalf("NewRing(WithMode(%q)) succeeded off Linux", m)
		}
		if !errors.Is(err, errors.ErrUnsupported) || !strings.Contains(err.Error(), runtime.GOOS) {
			t.Errorf("NewRing(WithMode(%q)) = %v, want an error naming %s and wrapping errors.ErrUnsupported", m, err, runtime.GOOS)
		}
	}
}

func TestRingOtherThreadsReadWriteAndSync(t *testing.T) {
	r, err := fileio.NewRing()
	if err != nil {
		t.Fatalf("NewRing: %v", err)
	}
	defer r.Close()
	f, err := r.Open(filepath.Join(t.TempDir(), "data"), os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	defer f.Close()
	if _, err := f.WriteAt([]byte("hello "), 0); err != nil {
		t.Fatalf("WriteAt: %v", err)
	}
	if _, err := f.WritevAt([][]byte{[]byte("wor"), []byte("ld")}, 6); err != nil {
		t.Fatalf("WritevAt: %v", err)
	}
	if err := f.Sync(); err != nil {
		t.Fatalf("Sync: %v", err)
	}
	if err := f.Datasync(); err != nil {
		t.Fatalf("Datasync: %v", err)
	}
	got := make([]byte, 11)
	if _, err := f.ReadAt(got, 0); err != nil || string(got) != "hello world" {
		t.Fatalf("ReadAt = %q, %v; want \"hello world\"", got, err)
	}
	a, b := make([]byte, 5), make([]byte, 10)
	n, err := f.ReadvAt([][]byte{a, b}, 0)
	if n != 11 || err != io.EOF || !bytes.Equal(append(a, b[:6]...), []byte("hello world")) {
		t.Fatalf("ReadvAt = %d, %v (%q %q); want 11, io.EOF, \"hello world\"", n, err, a, b)
	}
}
