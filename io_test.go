//go:build linux

package ringev_test

import (
	"errors"
	"testing"

	"github.com/ringev/ringev"
	"github.com/ringev/ringev/internal/testutil"
	"golang.org/x/sys/unix"
)

// ReadNonblocking and WriteNonblocking move bytes through a non-blocking pipe.
func TestNonblockingReadWriteMoveBytes(t *testing.T) {
	r, w := testutil.Pipe(t)
	if n, err := ringev.WriteNonblocking(w, []byte("abc")); n != 3 || err != nil {
		t.Fatalf("WriteNonblocking = %d, %v; want 3, nil", n, err)
	}
	buf := make([]byte, 8)
	if n, err := ringev.ReadNonblocking(r, buf); n != 3 || err != nil || string(buf[:n]) != "abc" {
		t.Fatalf("ReadNonblocking = %d %q, %v; want 3 \"abc\", nil", n, buf[:n], err)
	}
}

// ReadNonblocking on an empty non-blocking pipe returns EAGAIN, comparable with errors.Is and
// without allocating.
func TestNonblockingReadEmptyReturnsEAGAIN(t *testing.T) {
	r, _ := testutil.Pipe(t)
	buf := make([]byte, 1)
	if _, err := ringev.ReadNonblocking(r, buf); !errors.Is(err, unix.EAGAIN) {
		t.Fatalf("ReadNonblocking on an empty pipe: %v, want EAGAIN", err)
	}
	if a := testing.AllocsPerRun(100, func() { ringev.ReadNonblocking(r, buf) }); a != 0 {
		t.Fatalf("%.1f allocations per EAGAIN read, want 0", a)
	}
}

// WriteNonblocking to a pipe whose reader is closed returns EPIPE (SIGPIPE is ignored by Go for
// fds other than stdout/stderr).
func TestNonblockingWriteToClosedPipeReturnsEPIPE(t *testing.T) {
	r, w := ownedPipe(t)
	r.Close()
	if _, err := ringev.WriteNonblocking(w.fd, []byte{1}); !errors.Is(err, unix.EPIPE) {
		t.Fatalf("write to a pipe without reader: %v, want EPIPE", err)
	}
}
