//go:build linux

package fileio_test

// Tests of File's operations in every mode: reads and writes at offsets, the end of the file,
// vectored I/O, sync, O_DIRECT alignment errors, and the errors of bad calls.

import (
	"bytes"
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/ringev/ringev/fileio"
)

func TestFileReadAtReadsAtOffsets(t *testing.T) {
	data := pattern(64 << 10)
	forModes(t, func(t *testing.T, r *fileio.Ring) {
		f := openFile(t, r, tempFile(t, data), os.O_RDONLY)
		for _, off := range []int64{0, 1, 4095, 4096, 30000} {
			buf := make([]byte, 5000)
			n, err := f.ReadAt(buf, off)
			if err != nil || n != len(buf) {
				t.Fatalf("ReadAt(%d bytes, %d) = %d, %v", len(buf), off, n, err)
			}
			if !bytes.Equal(buf, data[off:off+int64(n)]) {
				t.Fatalf("ReadAt at %d: wrong bytes", off)
			}
		}
	})
}

// TestFileReadAtFromTheRing reads with the page cache path off, so that every read goes
// through the ring.
func TestFileReadAtFromTheRing(t *testing.T) {
	data := pattern(16 << 10)
	forModes(t, func(t *testing.T, r *fileio.Ring) {
		f := openFile(t, r, tempFile(t, data), os.O_RDONLY)
		buf := make([]byte, 8192)
		if n, err := f.ReadAt(buf, 100); err != nil || n != len(buf) || !bytes.Equal(buf, data[100:100+8192]) {
			t.Fatalf("ReadAt = %d, %v (bytes equal: %v)", n, err, bytes.Equal(buf, data[100:100+8192]))
		}
		if got := r.Stats().RingOps; got != 1 {
			t.Errorf("Stats().RingOps = %d, want 1 (the read went through the ring)", got)
		}
	}, fileio.WithPageCacheFirst(false))
}

// TestFileReadAtIntoABufferOver4GiB: a buffer longer than an SQE's 32-bit length reads the
// whole file through the ring, not a length cut to its low 32 bits (then 0: a false io.EOF).
func TestFileReadAtIntoABufferOver4GiB(t *testing.T) {
	data := pattern(10000)
	forModes(t, func(t *testing.T, r *fileio.Ring) {
		f := openFile(t, r, tempFile(t, data), os.O_RDONLY)
		buf := hugeBuffer(t, 1<<32+4096)
		n, err := f.ReadAt(buf, 0)
		if n != len(data) || err != io.EOF {
			t.Fatalf("ReadAt(4 GiB + 4 KiB, 0) of a %d-byte file = %d, %v; want %d, io.EOF", len(data), n, err, len(data))
		}
		if !bytes.Equal(buf[:n], data) {
			t.Fatal("wrong bytes")
		}
	}, fileio.WithPageCacheFirst(false))
}

func TestFileReadAtShortAtEndOfFile(t *testing.T) {
	data := pattern(10000)
	forModes(t, func(t *testing.T, r *fileio.Ring) {
		f := openFile(t, r, tempFile(t, data), os.O_RDONLY)
		buf := make([]byte, 4096)
		n, err := f.ReadAt(buf, 8000)
		if n != 2000 || err != io.EOF {
			t.Fatalf("ReadAt(4096, 8000) of a 10000-byte file = %d, %v; want 2000, io.EOF", n, err)
		}
		if !bytes.Equal(buf[:n], data[8000:]) {
			t.Fatal("wrong bytes before the end")
		}
		if n, err := f.ReadAt(buf, 10000); n != 0 || err != io.EOF {
			t.Fatalf("ReadAt at the end = %d, %v; want 0, io.EOF", n, err)
		}
	})
}

func TestFileWriteAtWritesAtOffsets(t *testing.T) {
	forModes(t, func(t *testing.T, r *fileio.Ring) {
		p := filepath.Join(t.TempDir(), "w")
		f := openFile(t, r, p, os.O_RDWR|os.O_CREATE)
		a, b := bytes.Repeat([]byte("a"), 5000), bytes.Repeat([]byte("b"), 3000)
		if n, err := f.WriteAt(a, 0); n != len(a) || err != nil {
			t.Fatalf("WriteAt(a, 0) = %d, %v", n, err)
		}
		if n, err := f.WriteAt(b, 4000); n != len(b) || err != nil {
			t.Fatalf("WriteAt(b, 4000) = %d, %v", n, err)
		}
		got, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		want := append(append([]byte{}, a[:4000]...), b...)
		if !bytes.Equal(got, want) {
			t.Fatalf("file holds %d bytes, not the %d written at their offsets", len(got), len(want))
		}
	})
}

func TestFileReadvAtFillsBuffersInOrder(t *testing.T) {
	data := pattern(20000)
	forModes(t, func(t *testing.T, r *fileio.Ring) {
		f := openFile(t, r, tempFile(t, data), os.O_RDONLY)
		bufs := [][]byte{make([]byte, 100), nil, make([]byte, 5000), make([]byte, 7)}
		n, err := f.ReadvAt(bufs, 333)
		if err != nil || n != 5107 {
			t.Fatalf("ReadvAt = %d, %v; want 5107, nil", n, err)
		}
		if !bytes.Equal(bytes.Join(bufs, nil), data[333:333+5107]) {
			t.Fatal("ReadvAt: wrong bytes")
		}
	})
}

func TestFileReadvAtShortAtEndOfFile(t *testing.T) {
	data := pattern(1000)
	forModes(t, func(t *testing.T, r *fileio.Ring) {
		f := openFile(t, r, tempFile(t, data), os.O_RDONLY)
		bufs := [][]byte{make([]byte, 600), make([]byte, 600)}
		n, err := f.ReadvAt(bufs, 100)
		if n != 900 || err != io.EOF {
			t.Fatalf("ReadvAt = %d, %v; want 900, io.EOF", n, err)
		}
		if !bytes.Equal(append(bufs[0], bufs[1][:300]...), data[100:]) {
			t.Fatal("wrong bytes")
		}
	})
}

func TestFileWritevAtWritesBuffersInOrder(t *testing.T) {
	forModes(t, func(t *testing.T, r *fileio.Ring) {
		p := filepath.Join(t.TempDir(), "w")
		f := openFile(t, r, p, os.O_RDWR|os.O_CREATE)
		bufs := [][]byte{[]byte("hello, "), {}, []byte("vectored "), []byte("world")}
		n, err := f.WritevAt(bufs, 10)
		if err != nil || n != 21 {
			t.Fatalf("WritevAt = %d, %v; want 21, nil", n, err)
		}
		got, _ := os.ReadFile(p)
		if want := string(make([]byte, 10)) + "hello, vectored world"; string(got) != want {
			t.Fatalf("file = %q, want %q", got, want)
		}
	})
}

func TestFileWritevAtManyBuffers(t *testing.T) {
	forModes(t, func(t *testing.T, r *fileio.Ring) {
		p := filepath.Join(t.TempDir(), "w")
		f := openFile(t, r, p, os.O_RDWR|os.O_CREATE)
		var bufs [][]byte
		for i := range 3000 { // more than IOV_MAX (1024) buffers
			bufs = append(bufs, []byte{byte(i)})
		}
		if n, err := f.WritevAt(bufs, 0); err != nil || n != 3000 {
			t.Fatalf("WritevAt of 3000 buffers = %d, %v", n, err)
		}
		got, _ := os.ReadFile(p)
		if !bytes.Equal(got, bytes.Join(bufs, nil)) {
			t.Fatal("wrong bytes")
		}
	})
}

func TestFileSyncAndDatasync(t *testing.T) {
	forModes(t, func(t *testing.T, r *fileio.Ring) {
		f := openFile(t, r, filepath.Join(t.TempDir(), "s"), os.O_RDWR|os.O_CREATE)
		if _, err := f.WriteAt([]byte("x"), 0); err != nil {
			t.Fatal(err)
		}
		if err := f.Sync(); err != nil {
			t.Errorf("Sync: %v", err)
		}
		if err := f.Datasync(); err != nil {
			t.Errorf("Datasync: %v", err)
		}
	})
}

func TestFileDirectMisalignedReadFailsWithEINVAL(t *testing.T) {
	dir := t.TempDir()
	skipUnlessDirect(t, dir)
	p := filepath.Join(dir, "d")
	if err := os.WriteFile(p, pattern(1<<20), 0o644); err != nil {
		t.Fatal(err)
	}
	forModes(t, func(t *testing.T, r *fileio.Ring) {
		f := openFile(t, r, p, os.O_RDONLY|unix.O_DIRECT)
		buf := fileio.AlignedBuffer(8192)
		if n, err := f.ReadAt(buf[:4096], 4096); err != nil || n != 4096 {
			t.Fatalf("aligned O_DIRECT read = %d, %v", n, err)
		}
		for _, c := range []struct {
			name string
			buf  []byte
			off  int64
		}{{"offset", buf[:4096], 100}, {"address", buf[1:4097], 0}, {"length", buf[:100], 0}} {
			_, err := f.ReadAt(c.buf, c.off)
			if !errors.Is(err, unix.EINVAL) {
				t.Errorf("O_DIRECT read with a misaligned %s: err %v, want EINVAL", c.name, err)
				continue
			}
			var fe *fileio.Error
			if !errors.As(err, &fe) || fe.Op != "read" || fe.Fd != int(f.Fd()) {
				t.Errorf("misaligned %s: error %v is not a *fileio.Error naming the read and fd %d", c.name, err, f.Fd())
			}
			if msg := err.Error(); !strings.Contains(msg, "EINVAL") || !strings.Contains(msg, "O_DIRECT") {
				t.Errorf("misaligned %s: error %q does not name EINVAL and O_DIRECT", c.name, msg)
			}
		}
	})
}

func TestFileDirectWriteAndReadAligned(t *testing.T) {
	dir := t.TempDir()
	skipUnlessDirect(t, dir)
	forModes(t, func(t *testing.T, r *fileio.Ring) {
		f := openFile(t, r, filepath.Join(dir, string(r.Mode())), os.O_RDWR|os.O_CREATE|unix.O_DIRECT)
		w := fileio.AlignedBuffer(8192)
		copy(w, pattern(8192))
		if n, err := f.WriteAt(w, 4096); err != nil || n != 8192 {
			t.Fatalf("O_DIRECT WriteAt = %d, %v", n, err)
		}
		rb := fileio.AlignedBuffer(16384)
		n, err := f.ReadAt(rb, 0)
		if n != 12288 || err != io.EOF {
			t.Fatalf("O_DIRECT ReadAt past the end = %d, %v; want 12288, io.EOF", n, err)
		}
		if !bytes.Equal(rb[4096:12288], w) {
			t.Fatal("O_DIRECT read back wrong bytes")
		}
	})
}

func TestFileNegativeOffsetFails(t *testing.T) {
	r := newRing(t)
	f := openFile(t, r, tempFile(t, pattern(10)), os.O_RDWR)
	if _, err := f.ReadAt(make([]byte, 1), -1); err == nil || !strings.Contains(err.Error(), "negative offset") {
		t.Errorf("ReadAt at -1: %v, want a negative offset error", err)
	}
	if _, err := f.WriteAt(make([]byte, 1), -1); err == nil || !strings.Contains(err.Error(), "negative offset") {
		t.Errorf("WriteAt at -1: %v, want a negative offset error", err)
	}
}

func TestFileWriteAtRefusesAppendMode(t *testing.T) {
	r := newRing(t)
	f := openFile(t, r, tempFile(t, pattern(10)), os.O_RDWR|os.O_APPEND)
	if _, err := f.WriteAt([]byte("x"), 0); err == nil || !strings.Contains(err.Error(), "O_APPEND") {
		t.Errorf("WriteAt on an O_APPEND file: %v, want an error naming O_APPEND", err)
	}
}

func TestFileReadAtOnWriteOnlyFileFailsWithEBADF(t *testing.T) {
	forModes(t, func(t *testing.T, r *fileio.Ring) {
		f := openFile(t, r, tempFile(t, pattern(100)), os.O_WRONLY)
		_, err := f.ReadAt(make([]byte, 10), 0)
		if !errors.Is(err, unix.EBADF) {
			t.Fatalf("ReadAt on a write-only file: %v, want EBADF", err)
		}
		if !strings.Contains(err.Error(), f.Name()) {
			t.Errorf("error %q does not name the file", err)
		}
	})
}

func TestFileUseAfterCloseFailsWithErrClosed(t *testing.T) {
	forModes(t, func(t *testing.T, r *fileio.Ring) {
		f := openFile(t, r, tempFile(t, pattern(100)), os.O_RDWR)
		if err := f.Close(); err != nil {
			t.Fatal(err)
		}
		if _, err := f.ReadAt(make([]byte, 10), 0); !errors.Is(err, os.ErrClosed) {
			t.Errorf("ReadAt after Close: %v, want os.ErrClosed", err)
		}
		if _, err := f.WriteAt(make([]byte, 10), 0); !errors.Is(err, os.ErrClosed) {
			t.Errorf("WriteAt after Close: %v, want os.ErrClosed", err)
		}
		if err := f.Sync(); !errors.Is(err, os.ErrClosed) {
			t.Errorf("Sync after Close: %v, want os.ErrClosed", err)
		}
		if err := f.Close(); !errors.Is(err, os.ErrClosed) {
			t.Errorf("second Close: %v, want os.ErrClosed", err)
		}
	})
}

// TestFileConcurrentUseFrom1000Goroutines has 1000 goroutines write their own block and read
// it back at once, through the ring (page cache first off) and through the page cache.
func TestFileConcurrentUseFrom1000Goroutines(t *testing.T) {
	for _, first := range []bool{false, true} {
		t.Run(map[bool]string{false: "ring", true: "page-cache-first"}[first], func(t *testing.T) {
			forModes(t, func(t *testing.T, r *fileio.Ring) {
				const n, bs = 1000, 512
				f := openFile(t, r, filepath.Join(t.TempDir(), "c"), os.O_RDWR|os.O_CREATE)
				var wg sync.WaitGroup
				errs := make(chan error, n)
				for g := range n {
					wg.Add(1)
					go func() {
						defer wg.Done()
						w := bytes.Repeat([]byte{byte(g)}, bs)
						if _, err := f.WriteAt(w, int64(g*bs)); err != nil {
							errs <- err
							return
						}
						got := make([]byte, bs)
						if _, err := f.ReadAt(got, int64(g*bs)); err != nil {
							errs <- err
							return
						}
						if !bytes.Equal(got, w) {
							errs <- errors.New("read back other bytes than written")
						}
					}()
				}
				done := make(chan struct{})
				go func() { wg.Wait(); close(done) }()
				select {
				case <-done:
				case <-timeAfter():
					t.Fatal("1000 goroutines did not finish within the deadline")
				}
				close(errs)
				for err := range errs {
					t.Fatal(err)
				}
			}, fileio.WithPageCacheFirst(first))
		})
	}
}
