//go:build linux

package fileio_test

// Tests of File.Close and Ring.Close with operations in flight: each returns an error wrapping
// os.ErrClosed, once; no goroutine stays parked; no descriptor or goroutine is left behind.

import (
	"errors"
	"os"
	"strings"
	"sync"
	"testing"

	"go.uber.org/goleak"

	"github.com/ringev/ringev/fileio"
	"github.com/ringev/ringev/internal/testutil"
)

// blockedReads starts n reads of an empty pipe on r, each on its own goroutine; it returns
// the file and a channel that gets each read's result once.
func blockedReads(t *testing.T, r *fileio.Ring, n int) (*fileio.File, <-chan result) {
	t.Helper()
	f, _ := pipeFile(t, r)
	out := make(chan result, n)
	for range n {
		go func() {
			m, err := f.ReadAt(make([]byte, 8), 0)
			out <- result{m, err}
		}()
	}
	return f, out
}

// collectClosed receives n results from out and fails unless each is an error wrapping
// os.ErrClosed; then it checks that no more come.
func collectClosed(t *testing.T, out <-chan result, n int) {
	t.Helper()
	for i := range n {
		res := await(t, "a read after Close", out)
		if !errors.Is(res.err, os.ErrClosed) {
			t.Errorf("read %d after Close: %d, %v; want an error wrapping os.ErrClosed", i, res.n, res.err)
		}
	}
	select {
	case res := <-out:
		t.Errorf("a read returned twice: %+v", res)
	default:
	}
}

func TestFileCloseWithOperationsInFlight(t *testing.T) {
	for _, m := range uringModes {
		t.Run(string(m), func(t *testing.T) {
			watchHang(t)
			defer goleak.VerifyNone(t, goleak.IgnoreCurrent())
			requireMode(t, m)
			fds := testutil.OpenFds(t)
			r, err := fileio.NewRing(fileio.WithMode(m))
			if err != nil {
				t.Fatal(err)
			}
			const n = 20
			f, out := blockedReads(t, r, n)
			waitFor(t, "20 reads in the kernel", func() bool { return r.Stats().RingOps == n })
			if err := f.Close(); err != nil {
				t.Fatalf("Close: %v", err)
			}
			collectClosed(t, out, n)
			if err := r.Close(); err != nil {
				t.Fatalf("Ring.Close: %v", err)
			}
			if left := testutil.FdsSince(t, fds); len(left) != 1 { // the pipe's write end, closed by Cleanup
				t.Errorf("fds %v open since the ring was made, want 1 (the pipe's write end)", left)
			}
		})
	}
}

func TestRingCloseWithOperationsInFlight(t *testing.T) {
	for _, m := range uringModes {
		t.Run(string(m), func(t *testing.T) {
			watchHang(t)
			defer goleak.VerifyNone(t, goleak.IgnoreCurrent())
			requireMode(t, m)
			fds := testutil.OpenFds(t)
			r, err := fileio.NewRing(fileio.WithMode(m), fileio.WithEntries(4))
			if err != nil {
				t.Fatal(err)
			}
			// More reads than the kernel is given (4 entries: 8 in the kernel), so that some
			// are still held back by the owner when the ring closes.
			const n = 30
			_, out := blockedReads(t, r, n)
			waitFor(t, "reads in the kernel", func() bool { return r.Stats().RingOps >= 8 })
			if err := r.Close(); err != nil {
				t.Fatalf("Ring.Close: %v", err)
			}
			collectClosed(t, out, n)
			if left := testutil.FdsSince(t, fds); len(left) != 1 {
				t.Errorf("fds %v open since the ring was made, want 1 (the pipe's write end)", left)
			}
		})
	}
}

func TestRingCloseWithRegularFileOperationsRunning(t *testing.T) {
	forModes(t, func(t *testing.T, r *fileio.Ring) {
		f := openFile(t, r, tempFile(t, pattern(1<<20)), os.O_RDWR)
		var wg sync.WaitGroup
		for g := range 8 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				buf := make([]byte, 4096)
				for i := 0; ; i++ {
					_, err := f.ReadAt(buf, int64((g*31+i)%256)*4096)
					if err != nil {
						if !errors.Is(err, os.ErrClosed) {
							t.Errorf("read during Close: %v, want os.ErrClosed", err)
						}
						return
					}
				}
			}()
		}
		waitFor(t, "reads running", func() bool { return r.Stats().RingOps > 50 })
		if err := r.Close(); err != nil {
			t.Errorf("Ring.Close: %v", err)
		}
		done := make(chan struct{})
		go func() { wg.Wait(); close(done) }()
		select {
		case <-done:
		case <-timeAfter():
			t.Fatal("readers still running after Ring.Close")
		}
	}, fileio.WithPageCacheFirst(false))
}

func TestRingCloseIsIdempotent(t *testing.T) {
	forModes(t, func(t *testing.T, r *fileio.Ring) {
		if err := r.Close(); err != nil {
			t.Fatal(err)
		}
		if err := r.Close(); err != nil {
			t.Fatalf("second Close: %v", err)
		}
	})
}

func TestRingOpenAfterCloseFails(t *testing.T) {
	forModes(t, func(t *testing.T, r *fileio.Ring) {
		r.Close()
		if _, err := r.Open(tempFile(t, nil), os.O_RDONLY, 0); !errors.Is(err, os.ErrClosed) {
			t.Errorf("Open after Close: %v, want os.ErrClosed", err)
		}
		f, _ := os.Open(tempFile(t, nil))
		defer f.Close()
		if _, err := r.Adopt(f); !errors.Is(err, os.ErrClosed) {
			t.Errorf("Adopt after Close: %v, want os.ErrClosed", err)
		}
	})
}

func TestFileSecondCloseIsAFileioError(t *testing.T) {
	forModes(t, func(t *testing.T, r *fileio.Ring) {
		path := tempFile(t, []byte("x"))
		f := openFile(t, r, path, os.O_RDONLY)
		if err := f.Close(); err != nil {
			t.Fatalf("first Close: %v", err)
		}
		err := f.Close()
		var fe *fileio.Error
		if !errors.As(err, &fe) || fe.Op != "close" || !errors.Is(err, os.ErrClosed) {
			t.Fatalf("second Close: %v (%T); want a *fileio.Error for close wrapping os.ErrClosed", err, err)
		}
		if want := "fileio: close " + path; !strings.HasPrefix(err.Error(), want) {
			t.Errorf("second Close: %q; want it to begin %q", err, want)
		}
	})
}
