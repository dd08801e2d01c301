//go:build linux

package ringev_test

// Tests of ReadNonblocking and WriteNonblocking, the package functions and the Loop methods:
// what they return, from a handler, from another goroutine and after Close.

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
	"time"
	"unsafe"

	"github.com/ringev/ringev"
	"github.com/ringev/ringev/internal/testutil"
	"golang.org/x/sys/unix"
)

// TestIONonblockingReadWriteMoveBytes: ReadNonblocking and WriteNonblocking move bytes through a
// non-blocking pipe.
func TestIONonblockingReadWriteMoveBytes(t *testing.T) {
	r, w := testutil.Pipe(t)
	if n, err := ringev.WriteNonblocking(w, []byte("abc")); n != 3 || err != nil {
		t.Fatalf("WriteNonblocking = %d, %v; want 3, nil", n, err)
	}
	buf := make([]byte, 8)
	if n, err := ringev.ReadNonblocking(r, buf); n != 3 || err != nil || string(buf[:n]) != "abc" {
		t.Fatalf("ReadNonblocking = %d %q, %v; want 3 \"abc\", nil", n, buf[:n], err)
	}
}

// TestIONonblockingReadEmptyReturnsEAGAIN: ReadNonblocking on an empty non-blocking pipe returns
// EAGAIN, comparable with errors.Is and without allocating.
func TestIONonblockingReadEmptyReturnsEAGAIN(t *testing.T) {
	r, _ := testutil.Pipe(t)
	buf := make([]byte, 1)
	if _, err := ringev.ReadNonblocking(r, buf); !errors.Is(err, unix.EAGAIN) {
		t.Fatalf("ReadNonblocking on an empty pipe: %v, want EAGAIN", err)
	}
	if a := testing.AllocsPerRun(100, func() { ringev.ReadNonblocking(r, buf) }); a != 0 {
		t.Fatalf("%.1f allocations per EAGAIN read, want 0", a)
	}
}

// TestIONonblockingWriteToClosedPipeReturnsEPIPE: WriteNonblocking to a pipe whose reader is closed
// returns EPIPE (SIGPIPE is ignored by Go for fds other than stdout/stderr).
func TestIONonblockingWriteToClosedPipeReturnsEPIPE(t *testing.T) {
	r, w := testutil.Pipe(t)
	testutil.Close(t, r)
	if _, err := ringev.WriteNonblocking(w, []byte{1}); !errors.Is(err, unix.EPIPE) {
		t.Fatalf("write to a pipe without reader: %v, want EPIPE", err)
	}
}

// TestIONonblockingIntoMovingStacks: many goroutines read and write pipes with
// ReadNonblocking/WriteNonblocking into stack buffers at varying stack depths (so stacks grow
// and move between calls) while the GC runs; every byte read is the byte written.
func TestIONonblockingIntoMovingStacks(t *testing.T) {
	var wg sync.WaitGroup
	stopGC := make(chan struct{})
	go func() {
		for {
			select {
			case <-stopGC:
				return
			default:
				runtime.GC()
				time.Sleep(time.Millisecond)
			}
		}
	}()
	defer close(stopGC)
	for g := range 8 {
		r, w := testutil.Pipe(t)
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range 3000 {
				atDepth(t, (i*7+g)%200, r, w, byte(i+g))
				if t.Failed() {
					return
				}
			}
		}()
	}
	done := make(chan struct{})
	go func() { wg.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(time.Minute):
		t.Fatal("readers did not finish within a minute")
	}
}

// atDepth recurses depth frames (each with stack data) and then writes and reads back 64
// bytes of pattern b through the raw calls, from stack buffers.
func atDepth(t *testing.T, depth, r, w int, b byte) byte {
	var pad [128]byte
	pad[depth%128] = b
	if depth > 0 {
		return atDepth(t, depth-1, r, w, b) + pad[depth%128] - b
	}
	var out, in [64]byte
	for i := range out {
		out[i] = b + byte(i)
	}
	if n, err := ringev.WriteNonblocking(w, out[:]); n != len(out) || err != nil {
		t.Errorf("WriteNonblocking: %d, %v", n, err)
		return 0
	}
	runtime.Gosched()
	if n, err := ringev.ReadNonblocking(r, in[:]); n != len(in) || err != nil {
		t.Errorf("ReadNonblocking: %d, %v", n, err)
		return 0
	}
	if in != out {
		t.Errorf("read %v, wrote %v", in[:8], out[:8])
	}
	return b
}

// TestLoopReadNonblockingReturnsWhatReadReturns: called from a handler, Loop.ReadNonblocking
// returns the bytes (content checked), unix.EAGAIN itself on an empty non-blocking pipe and
// socket, 0 at end of file, and an error wrapping unix.EBADF for a closed fd number, in the
// handler's first run and in a later one (on uring, one that runs on what the first one's look
// found).
func TestLoopReadNonblockingReturnsWhatReadReturns(t *testing.T) {
	eachBackend(t, withFallback(), func(t *testing.T, backend string) {
		tr, tw := testutil.Pipe(t)       // the handler's own fd
		dr, dw := testutil.Pipe(t)       // data
		er, ew := testutil.Pipe(t)       // empty
		sa, sb := testutil.Socketpair(t) // empty socket
		fr, fw := testutil.Pipe(t)       // end of file
		testutil.Close(t, fw)
		bad := testutil.ClosedFdNumber(t)
		l := newLoop(t, backend)
		testutil.Write(t, tw, []byte("12"))
		buf := new([16]byte)
		calls := 0
		addFd(t, l, tr, ringev.Read, func(ev *ringev.FdEvent, f ringev.Flags) {
			calls++
			testutil.Write(t, dw, []byte("hello"))
			if n, err := l.ReadNonblocking(dr, buf[:3]); n != 3 || err != nil || string(buf[:n]) != "hel" {
				t.Errorf("run %d: data: ReadNonblocking = %d %q, %v; want 3 \"hel\", nil", calls, n, buf[:n], err)
			}
			if n, err := l.ReadNonblocking(dr, buf[:]); n != 2 || err != nil || string(buf[:n]) != "lo" {
				t.Errorf("run %d: data: ReadNonblocking = %d %q, %v; want 2 \"lo\", nil", calls, n, buf[:n], err)
			}
			for _, c := range []struct {
				name     string
				fd, peer int
			}{{"empty pipe", er, ew}, {"empty socket", sa, sb}} {
				var n int
				var err error
				rescued := noBlock(unblockRead(c.peer), func() { n, err = l.ReadNonblocking(c.fd, buf[:]) })
				switch {
				case n == 0 && err == unix.EAGAIN && errors.Is(err, unix.EAGAIN):
				case rescued:
					t.Errorf("run %d: %s: ReadNonblocking blocked until the test wrote to the fd (then returned %d, %v); want unix.EAGAIN at once", calls, c.name, n, err)
				default:
					t.Errorf("run %d: %s: ReadNonblocking = %d, %v (%T); want 0, unix.EAGAIN itself", calls, c.name, n, err, err)
				}
				if rescued {
					testutil.Drain(t, c.fd)
				}
			}
			if n, err := l.ReadNonblocking(fr, buf[:]); n != 0 || err != nil {
				t.Errorf("run %d: end of file: ReadNonblocking = %d, %v; want 0, nil", calls, n, err)
			}
			if n, err := l.ReadNonblocking(bad, buf[:]); n != 0 || !errors.Is(err, unix.EBADF) {
				t.Errorf("run %d: closed fd %d: ReadNonblocking = %d, %v; want 0 and an error wrapping EBADF", calls, bad, n, err)
			}
			if n, err := l.ReadNonblocking(tr, buf[:1]); n != 1 || err != nil || buf[0] != "12"[calls-1] {
				t.Errorf("run %d: own fd: ReadNonblocking = %d %q, %v; want 1 %q, nil", calls, n, buf[:n], err, "12"[calls-1])
			}
		})
		until(t, l, func() bool { return calls == 2 })
		quiet(t, l)
	})
}

// TestLoopWriteNonblockingReturnsWhatWriteReturns: called from a handler,
// Loop.WriteNonblocking returns the bytes written (which arrive), unix.EAGAIN itself when the pipe
// is full, and unix.EPIPE itself when its reader is closed (the process survives: Go ignores
// SIGPIPE for fds other than stdout and stderr).
func TestLoopWriteNonblockingReturnsWhatWriteReturns(t *testing.T) {
	eachBackend(t, withFallback(), func(t *testing.T, backend string) {
		tr, tw := testutil.Pipe(t)
		dr, dw := testutil.Pipe(t)
		fr, fw := testutil.Pipe(t)
		held := testutil.Fill(t, fw)
		xr, xw := testutil.Pipe(t)
		testutil.Close(t, xr)
		l := newLoop(t, backend)
		testutil.Write(t, tw, []byte("12"))
		buf := new([8]byte)
		calls := 0
		addFd(t, l, tr, ringev.Read, func(ev *ringev.FdEvent, f ringev.Flags) {
			calls++
			copy(buf[:], "abc")
			if n, err := l.WriteNonblocking(dw, buf[:3]); n != 3 || err != nil {
				t.Errorf("run %d: WriteNonblocking = %d, %v; want 3, nil", calls, n, err)
			}
			var got [8]byte
			if n, err := unix.Read(dr, got[:]); n != 3 || err != nil || string(got[:n]) != "abc" {
				t.Errorf("run %d: read back %d %q, %v; want \"abc\"", calls, n, got[:max(n, 0)], err)
			}
			var n int
			var err error
			rescued := noBlock(unblockWrite(fr), func() { n, err = l.WriteNonblocking(fw, buf[:1]) })
			switch {
			case n == 0 && err == unix.EAGAIN && errors.Is(err, unix.EAGAIN):
			case rescued:
				t.Errorf("run %d: full pipe: WriteNonblocking blocked until the test read from the pipe (then returned %d, %v); want unix.EAGAIN at once", calls, n, err)
			default:
				t.Errorf("run %d: full pipe: WriteNonblocking = %d, %v; want 0, unix.EAGAIN itself", calls, n, err)
			}
			if rescued { // the test read from the pipe: fill it again
				testutil.Drain(t, fr)
				held = testutil.Fill(t, fw)
			}
			if n, err := l.WriteNonblocking(xw, buf[:1]); n != 0 || err != unix.EPIPE || !errors.Is(err, unix.EPIPE) {
				t.Errorf("run %d: pipe without reader: WriteNonblocking = %d, %v; want 0, unix.EPIPE itself", calls, n, err)
			}
			if n, err := l.ReadNonblocking(tr, buf[:1]); n != 1 || err != nil {
				t.Errorf("run %d: own fd: ReadNonblocking = %d, %v", calls, n, err)
			}
		})
		until(t, l, func() bool { return calls == 2 })
		quiet(t, l)
		if t.Failed() {
			return
		}
		if got := testutil.Drain(t, fr); got != held {
			t.Fatalf("the full pipe holds %d bytes, want the %d written before (a write that should have failed went through)", got, held)
		}
	})
}

// TestLoopReadNonblockingUntilEAGAINReturns: the usual drain loop of a handler (read through the
// loop until unix.EAGAIN) ends, and the loop goes on (a timer runs).
func TestLoopReadNonblockingUntilEAGAINReturns(t *testing.T) {
	eachBackend(t, withFallback(), func(t *testing.T, backend string) {
		r, w := testutil.Pipe(t)
		l := newLoop(t, backend)
		buf := new([4]byte)
		got := ""
		calls := 0
		addFd(t, l, r, ringev.Read, func(ev *ringev.FdEvent, f ringev.Flags) {
			calls++
			for range 10 {
				var n int
				var err error
				rescued := noBlock(unblockRead(w), func() { n, err = l.ReadNonblocking(r, buf[:]) })
				if rescued {
					testutil.Drain(t, r) // what the test wrote
				}
				if err == unix.EAGAIN {
					return
				}
				if rescued {
					t.Errorf("run %d: ReadNonblocking on the drained pipe blocked until the test wrote to it (then returned %d, %v); want unix.EAGAIN at once", calls, n, err)
					return
				}
				if err != nil || n == 0 {
					t.Errorf("run %d: ReadNonblocking = %d, %v", calls, n, err)
					return
				}
				got += string(buf[:n])
			}
			t.Errorf("run %d: no EAGAIN after 10 reads", calls)
		})
		testutil.Write(t, w, []byte("0123456789"))
		until(t, l, func() bool { return calls > 0 })
		if got != "0123456789" {
			t.Fatalf("read %q, want \"0123456789\"", got)
		}
		quiet(t, l)
	})
}

// TestLoopReadNonblockingRegularFile: through the loop, a handler reads a regular file (300 KB,
// opened O_RDONLY) to its end: every byte, then 0. Cached: the file is in the page cache. Cold:
// its pages were dropped first (fsync, then POSIX_FADV_DONTNEED), so the ring cannot complete
// the read at once and the method must wait for it.
func TestLoopReadNonblockingRegularFile(t *testing.T) {
	want := make([]byte, 300000)
	for i := range want {
		want[i] = byte(i*7 + i>>8)
	}
	f, err := os.CreateTemp(t.TempDir(), "loopio")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.Write(want); err != nil {
		t.Fatal(err)
	}
	if err := f.Sync(); err != nil {
		t.Fatal(err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
	for _, cold := range []bool{false, true} {
		name := "Cached"
		if cold {
			name = "Cold"
		}
		t.Run(name, func(t *testing.T) {
			eachBackend(t, withFallback(), func(t *testing.T, backend string) {
				fd, err := unix.Open(f.Name(), unix.O_RDONLY|unix.O_CLOEXEC, 0)
				if err != nil {
					t.Fatal(err)
				}
				t.Cleanup(func() { unix.Close(fd) })
				tr, tw := testutil.Pipe(t)
				l := newLoop(t, backend)
				testutil.Write(t, tw, []byte("12"))
				buf := new([65536]byte)
				var got []byte
				calls := 0
				addFd(t, l, tr, ringev.Read, func(*ringev.FdEvent, ringev.Flags) {
					calls++
					ringev.ReadNonblocking(tr, buf[:1])
					if calls == 1 {
						return // the second run reads: after the ring's first EPOLL_WAIT
					}
					if cold {
						if err := unix.Fadvise(fd, 0, 0, unix.FADV_DONTNEED); err != nil {
							t.Errorf("fadvise(DONTNEED): %v", err)
						}
					}
					for range 20 {
						n, err := l.ReadNonblocking(fd, buf[:])
						if err != nil {
							t.Errorf("ReadNonblocking of the file after %d bytes: %v", len(got), err)
							return
						}
						if n == 0 {
							return
						}
						got = append(got, buf[:n]...)
					}
					t.Errorf("no end of file after 20 reads (%d bytes)", len(got))
				})
				until(t, l, func() bool { return calls == 2 })
				if !bytes.Equal(got, want) {
					t.Fatalf("read %d bytes, want the file's %d (a prefix of it: %v)", len(got), len(want), bytes.Equal(got, want[:min(len(got), len(want))]))
				}
			})
		})
	}
}

// TestLoopWriteNonblockingEmptyToEventfdIsEINVAL: a write of 0 bytes to an eventfd through the
// loop fails with EINVAL, as write(2) does (eventfd wants 8 bytes; the ring would not even call
// the file's write for 0), on every backend, from a handler.
func TestLoopWriteNonblockingEmptyToEventfdIsEINVAL(t *testing.T) {
	eachBackend(t, withFallback(), func(t *testing.T, backend string) {
		efd, err := unix.Eventfd(0, unix.EFD_NONBLOCK|unix.EFD_CLOEXEC)
		if err != nil {
			t.Fatal(err)
		}
		defer unix.Close(efd)
		r, w := testutil.Pipe(t)
		l := newLoop(t, backend)
		var errs []error
		addFd(t, l, efd, ringev.Write, func(*ringev.FdEvent, ringev.Flags) {}) // watched: may ride
		addFd(t, l, r, ringev.Read, func(*ringev.FdEvent, ringev.Flags) {
			testutil.Drain(t, r)
			for _, p := range [][]byte{nil, {}} {
				_, err := l.WriteNonblocking(efd, p)
				errs = append(errs, err)
			}
		})
		testutil.Write(t, w, []byte{'x'})
		until(t, l, func() bool { return len(errs) > 0 })
		for _, err := range errs {
			if err != unix.EINVAL {
				t.Fatalf("WriteNonblocking(eventfd, empty) = %v, want unix.EINVAL (as write(2))", err)
			}
		}
	})
}

// TestLoopWriteNonblockingODirectMovesThePosition: 16 consecutive 4 KiB writes through the loop
// to an O_DIRECT file (which the ring would complete later, without moving the file position)
// land one after the other and leave the position at 64 KiB, as write(2)'s do, on every backend.
func TestLoopWriteNonblockingODirectMovesThePosition(t *testing.T) {
	eachBackend(t, withFallback(), func(t *testing.T, backend string) {
		name := filepath.Join(t.TempDir(), "direct")
		if err := os.WriteFile(name, make([]byte, 65536), 0o644); err != nil {
			t.Fatal(err)
		}
		fd, err := unix.Open(name, unix.O_RDWR|unix.O_DIRECT|unix.O_CLOEXEC, 0)
		if errors.Is(err, unix.EINVAL) {
			t.Skipf("O_DIRECT is not supported on %s's file system: %v", name, err)
		}
		if err != nil {
			t.Fatal(err)
		}
		defer unix.Close(fd)
		raw := make([]byte, 2*4096)
		off := (4096 - int(uintptr(unsafe.Pointer(&raw[0]))%4096)) % 4096
		buf := raw[off : off+4096] // O_DIRECT wants an aligned buffer
		r, w := testutil.Pipe(t)
		_, always := testutil.Pipe(t)
		l := newLoop(t, backend)
		done := false
		// An always-writable fd: every look finds something, so on uring every write would
		// carry a look if the file's I/O went through the ring.
		addFd(t, l, always, ringev.Write, func(*ringev.FdEvent, ringev.Flags) {})
		addFd(t, l, r, ringev.Read, func(*ringev.FdEvent, ringev.Flags) {
			testutil.Drain(t, r)
			for k := range 16 {
				for i := range buf {
					buf[i] = byte(k + 1)
				}
				if n, err := l.WriteNonblocking(fd, buf); n != 4096 || err != nil {
					t.Errorf("write %d: %d, %v", k, n, err)
				}
				if pos, _ := unix.Seek(fd, 0, io.SeekCurrent); pos != int64(4096*(k+1)) {
					t.Errorf("after write %d the position is %d, want %d", k, pos, 4096*(k+1))
				}
			}
			done = true
		})
		testutil.Write(t, w, []byte{'x'})
		until(t, l, func() bool { return done })
		got, err := os.ReadFile(name)
		if err != nil {
			t.Fatal(err)
		}
		for k := range 16 {
			if got[k*4096] != byte(k+1) {
				t.Fatalf("block %d holds %d, want %d: writes overwrote each other", k, got[k*4096], k+1)
			}
		}
	})
}

// TestLoopIOFromAnotherGoroutineIsPlainSyscall: a goroutine other than the owner writes 3000
// counting bytes through loop.WriteNonblocking and reads their echo through
// loop.ReadNonblocking while the owner runs Once, whose handler reads them through the loop and
// echoes them: every byte arrives in order both ways and no call fails (through the owner's
// SINGLE_ISSUER ring from another thread, the enter would fail with EEXIST; run with -race).
func TestLoopIOFromAnotherGoroutineIsPlainSyscall(t *testing.T) {
	const total = 3000
	eachBackend(t, withFallback(), func(t *testing.T, backend string) {
		in, inW := testutil.Pipe(t)
		out, outW := testutil.Pipe(t)
		l := newLoop(t, backend)
		watch(t, l, 2*deadline, nil)
		buf := new([64]byte)
		got := 0
		addFd(t, l, in, ringev.Read, func(*ringev.FdEvent, ringev.Flags) {
			n, err := l.ReadNonblocking(in, buf[:])
			if n <= 0 || err != nil {
				t.Errorf("owner: ReadNonblocking = %d, %v", n, err)
				return
			}
			for k, c := range buf[:n] {
				if c != byte(got+k) {
					t.Errorf("owner: byte %d is %d, want %d", got+k, c, byte(got+k))
				}
			}
			got += n
			if m, err := l.WriteNonblocking(outW, buf[:n]); m != n || err != nil {
				t.Errorf("owner: WriteNonblocking = %d, %v; want %d", m, err, n)
			}
		})
		peer := make(chan error, 1)
		var peerDone atomic.Bool
		go func() {
			err := echoPeer(l, inW, out, total)
			peerDone.Store(true)
			peer <- err
			l.Post(func() {}) // the owner may be waiting
		}()
		untilFor(t, l, 2*deadline, "the echoed bytes", func() bool { return got >= total || peerDone.Load() })
		select {
		case err := <-peer:
			if err != nil {
				t.Fatal(err)
			}
		case <-time.After(2 * deadline):
			t.Fatal("the other goroutine did not finish")
		}
		if got != total {
			t.Fatalf("the owner read %d bytes, want %d", got, total)
		}
	})
}

// echoPeer writes total counting bytes to w in chunks of up to 7 through l's methods and reads
// their echo from r the same way, from a goroutine that does not own l.
func echoPeer(l *ringev.Loop, w, r, total int) error {
	wb := make([]byte, 7)
	rb := make([]byte, 64)
	sent, echoed := 0, 0
	end := time.Now().Add(2 * deadline)
	for echoed < total {
		if time.Now().After(end) {
			return fmt.Errorf("peer: %d of %d bytes sent, %d echoed before the deadline", sent, total, echoed)
		}
		if sent < total {
			k := min(len(wb), total-sent)
			for i := range k {
				wb[i] = byte(sent + i)
			}
			n, err := l.WriteNonblocking(w, wb[:k])
			switch {
			case err == unix.EAGAIN:
			case err != nil || n <= 0:
				return fmt.Errorf("peer: Loop.WriteNonblocking from another goroutine = %d, %v", n, err)
			default:
				sent += n
			}
		}
		n, err := l.ReadNonblocking(r, rb)
		switch {
		case err == unix.EAGAIN:
			runtime.Gosched()
		case err != nil || n <= 0:
			return fmt.Errorf("peer: Loop.ReadNonblocking from another goroutine = %d, %v", n, err)
		default:
			for k, c := range rb[:n] {
				if c != byte(echoed+k) {
					return fmt.Errorf("peer: echoed byte %d is %d, want %d", echoed+k, c, byte(echoed+k))
				}
			}
			echoed += n
		}
	}
	return nil
}

// TestLoopIOFromAnotherGoroutineWhileOwnerCloses: the methods are documented to work from any
// goroutine (as the package functions there); a goroutine that keeps calling them while the
// owner closes the loop gets plain results throughout, without a data race (run with -race: the
// methods must not read Loop.ride, which Close clears, before checking the caller is the owner).
func TestLoopIOFromAnotherGoroutineWhileOwnerCloses(t *testing.T) {
	eachBackend(t, withFallback(), func(t *testing.T, backend string) {
		r, w := testutil.Pipe(t)
		l := newLoop(t, backend) // the test closes it; cleanup's second Close returns nil
		testutil.Write(t, w, []byte{'x'})
		addFd(t, l, r, ringev.Read, func(*ringev.FdEvent, ringev.Flags) {
			var b [1]byte
			ringev.ReadNonblocking(r, b[:])
		})
		once(t, l) // the ring's first EPOLL_WAIT completes
		var calls atomic.Int64
		stop := make(chan struct{})
		peer := make(chan error, 1)
		go func() {
			b := make([]byte, 1)
			for {
				select {
				case <-stop:
					peer <- nil
					return
				default:
				}
				if n, err := l.WriteNonblocking(w, b); n != 1 || err != nil {
					peer <- fmt.Errorf("Loop.WriteNonblocking from another goroutine = %d, %v", n, err)
					return
				}
				if n, err := l.ReadNonblocking(r, b); n != 1 || err != nil {
					peer <- fmt.Errorf("Loop.ReadNonblocking from another goroutine = %d, %v", n, err)
					return
				}
				calls.Add(1)
			}
		}()
		await(t, "100 rounds of calls from the other goroutine", func() bool { return calls.Load() >= 100 })
		if err := l.Close(); err != nil {
			t.Errorf("Close: %v", err)
		}
		at := calls.Load()
		await(t, "100 more rounds of calls after Close", func() bool { return calls.Load() >= at+100 })
		close(stop)
		if err := <-peer; err != nil {
			t.Fatal(err)
		}
	})
}

// TestLoopIOAfterCloseIsPlainSyscall: after Close (of a loop whose ring had served handler
// I/O), the methods still read and write: bytes, unix.EAGAIN, 0 at end of file.
func TestLoopIOAfterCloseIsPlainSyscall(t *testing.T) {
	eachBackend(t, withFallback(), func(t *testing.T, backend string) {
		r, w := testutil.Pipe(t)
		tr, tw := testutil.Pipe(t)
		l := newLoop(t, backend) // the test closes it; cleanup's second Close returns nil
		testutil.Write(t, tw, []byte("12"))
		buf := new([8]byte)
		addFd(t, l, tr, ringev.Read, func(*ringev.FdEvent, ringev.Flags) { l.ReadNonblocking(tr, buf[:1]) })
		once(t, l)
		once(t, l)
		if err := l.Close(); err != nil {
			t.Fatalf("Close: %v", err)
		}
		copy(buf[:], "xyz")
		if n, err := l.WriteNonblocking(w, buf[:3]); n != 3 || err != nil {
			t.Fatalf("WriteNonblocking after Close = %d, %v; want 3, nil", n, err)
		}
		clear(buf[:])
		if n, err := l.ReadNonblocking(r, buf[:]); n != 3 || err != nil || string(buf[:n]) != "xyz" {
			t.Fatalf("ReadNonblocking after Close = %d %q, %v; want 3 \"xyz\", nil", n, buf[:max(n, 0)], err)
		}
		if n, err := l.ReadNonblocking(r, buf[:]); n != 0 || err != unix.EAGAIN {
			t.Fatalf("ReadNonblocking of an empty pipe after Close = %d, %v; want 0, EAGAIN", n, err)
		}
		testutil.Close(t, w)
		if n, err := l.ReadNonblocking(r, buf[:]); n != 0 || err != nil {
			t.Fatalf("ReadNonblocking at end of file after Close = %d, %v; want 0, nil", n, err)
		}
	})
}
