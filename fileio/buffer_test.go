//go:build linux

package fileio_test

// Tests of AlignedBuffer, registered (fixed) buffers and ReadFixed/WriteFixed, and registered
// files.

import (
	"bytes"
	"errors"
	"io"
	"os"
	"path/filepath"
	"testing"
	"unsafe"

	"golang.org/x/sys/unix"

	"github.com/ringev/ringev/fileio"
)

func TestAlignedBufferIsAligned(t *testing.T) {
	for _, n := range []int{0, 1, 512, 4096, 5000, 1 << 20} {
		b := fileio.AlignedBuffer(n)
		if len(b) != n || cap(b) != n {
			t.Errorf("AlignedBuffer(%d): len %d cap %d", n, len(b), cap(b))
		}
		if n > 0 && uintptr(unsafe.Pointer(&b[0]))%fileio.Alignment != 0 {
			t.Errorf("AlignedBuffer(%d) at %p: not %d-aligned", n, &b[0], fileio.Alignment)
		}
	}
}

func TestFileWriteFixedThenReadFixed(t *testing.T) {
	forModes(t, func(t *testing.T, r *fileio.Ring) {
		bufs := registerBuffers(t, r, 2, 8192)
		if len(bufs) != 2 || bufs[1].Index() != 1 || bufs[0].Len() != 8192 {
			t.Fatalf("RegisterBuffers(2, 8192) = %d buffers, second index %d, len %d", len(bufs), bufs[1].Index(), bufs[0].Len())
		}
		f := openFile(t, r, filepath.Join(t.TempDir(), "fixed"), os.O_RDWR|os.O_CREATE)
		copy(bufs[0].Bytes(), pattern(8192))
		if n, err := f.WriteFixed(bufs[0], 4096); err != nil || n != 8192 {
			t.Fatalf("WriteFixed = %d, %v", n, err)
		}
		part := bufs[1].Slice(100, 4196)
		n, err := f.ReadFixed(part, 4096)
		if err != nil || n != 4096 {
			t.Fatalf("ReadFixed = %d, %v", n, err)
		}
		if !bytes.Equal(part.Bytes(), pattern(8192)[:4096]) {
			t.Fatal("ReadFixed: wrong bytes")
		}
		n, err = f.ReadFixed(bufs[1], 8192)
		if n != 4096 || err != io.EOF {
			t.Fatalf("ReadFixed past the end = %d, %v; want 4096, io.EOF", n, err)
		}
	}, fileio.WithPageCacheFirst(false))
}

func TestFileReadFixedWithDirectIO(t *testing.T) {
	dir := t.TempDir()
	skipUnlessDirect(t, dir)
	p := filepath.Join(dir, "d")
	if err := os.WriteFile(p, pattern(1<<16), 0o644); err != nil {
		t.Fatal(err)
	}
	forModes(t, func(t *testing.T, r *fileio.Ring) {
		bufs := registerBuffers(t, r, 1, 4096)
		f := openFile(t, r, p, os.O_RDONLY|unix.O_DIRECT)
		if n, err := f.ReadFixed(bufs[0], 8192); err != nil || n != 4096 {
			t.Fatalf("O_DIRECT ReadFixed = %d, %v", n, err)
		}
		if !bytes.Equal(bufs[0].Bytes(), pattern(1 << 16)[8192:12288]) {
			t.Fatal("wrong bytes")
		}
	})
}

func TestFileReadFixedRefusesAnotherRingsBuffer(t *testing.T) {
	r1, r2 := newRing(t), newRing(t)
	bufs := registerBuffers(t, r2, 1, 4096)
	f := openFile(t, r1, tempFile(t, pattern(4096)), os.O_RDONLY)
	if _, err := f.ReadFixed(bufs[0], 0); !errors.Is(err, unix.EFAULT) {
		t.Errorf("ReadFixed with another ring's buffer: %v, want EFAULT", err)
	}
	if _, err := f.ReadFixed(fileio.FixedBuffer{}, 0); !errors.Is(err, unix.EFAULT) {
		t.Errorf("ReadFixed with the zero FixedBuffer: %v, want EFAULT", err)
	}
}

func TestRingRegisterBuffersTwiceFailsWithEBUSY(t *testing.T) {
	r := newRing(t)
	registerBuffers(t, r, 1, 4096)
	if _, err := r.RegisterBuffers(1, 4096); !errors.Is(err, unix.EBUSY) {
		t.Errorf("second RegisterBuffers: %v, want EBUSY", err)
	}
}

func TestRingRegisterBuffersRejectsBadSizes(t *testing.T) {
	r := newRing(t)
	for _, c := range [][2]int{{0, 4096}, {1, 0}, {1 << 15, 4096}, {1, 2 << 30}} {
		if _, err := r.RegisterBuffers(c[0], c[1]); !errors.Is(err, unix.EINVAL) {
			t.Errorf("RegisterBuffers(%d, %d): %v, want EINVAL", c[0], c[1], err)
		}
	}
}

func TestFileRegisteredInTheRingsTable(t *testing.T) {
	requireDeferTaskrun(t)
	requireRegisteredFiles(t)
	for _, on := range []bool{true, false} {
		r := newRing(t, fileio.WithMode(fileio.ModeDeferTaskrun), fileio.WithRegisteredFiles(on))
		f := openFile(t, r, tempFile(t, pattern(100)), os.O_RDONLY)
		if f.Registered() != on {
			t.Errorf("WithRegisteredFiles(%v): Registered() = %v", on, f.Registered())
		}
		buf := make([]byte, 100)
		if n, err := f.ReadAt(buf, 0); n != 100 || err != nil {
			t.Errorf("registered %v: ReadAt = %d, %v", on, n, err)
		}
		f.Close()
		if f.Registered() {
			t.Errorf("registered %v: still registered after Close", on)
		}
	}
}
