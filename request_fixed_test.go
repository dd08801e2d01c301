//go:build linux

package ringev_test

// Tests of registered (fixed) buffers for requests: Loop.RegisterBuffers, ReadFixed and
// WriteFixed on every backend (READ_FIXED and WRITE_FIXED on uring, pread and pwrite elsewhere).

import (
	"bytes"
	"errors"
	"testing"
	"unsafe"

	"golang.org/x/sys/unix"

	"github.com/ringev/ringev"
	"github.com/ringev/ringev/internal/testutil"
)

// TestRequestFixedWriteThenRead: on every backend, WriteFixed of a registered buffer then
// ReadFixed into part of another give back the bytes written, with a Write's and a Read's
// completion; the buffers are page-aligned.
func TestRequestFixedWriteThenRead(t *testing.T) {
	eachBackend(t, ringev.Backends(), func(t *testing.T, backend string) {
		f := testutil.TempFile(t)
		fd := int(f.Fd())
		l := newLoop(t, backend)
		bufs := registerBuffers(t, l, 2, 8192)
		if len(bufs) != 2 || bufs[1].Index() != 1 || bufs[0].Len() != 8192 {
			t.Fatalf("RegisterBuffers(2, 8192): %d buffers, second index %d, len %d", len(bufs), bufs[1].Index(), bufs[0].Len())
		}
		if p := uintptr(unsafe.Pointer(&bufs[0].Bytes()[0])); p%4096 != 0 {
			t.Errorf("fixed buffer at %#x: not page-aligned", p)
		}
		copy(bufs[0].Bytes(), bytes.Repeat([]byte("fixed!"), 2000))
		var wr, rd recorder
		must(t)(l.WriteFixed(fd, bufs[0], 100, wr.cb, 0))
		until(t, l, func() bool { return wr.n() > 0 })
		if c := wantOne(t, &wr, 8192); c.Op != ringev.OpWrite {
			t.Errorf("WriteFixed's completion: Op %v, want OpWrite", c.Op)
		}
		part := bufs[1].Slice(8, 4104)
		must(t)(l.ReadFixed(fd, part, 100, rd.cb, 0))
		until(t, l, func() bool { return rd.n() > 0 })
		c := wantOne(t, &rd, 4096)
		if c.Op != ringev.OpRead {
			t.Errorf("ReadFixed's completion: Op %v, want OpRead", c.Op)
		}
		if !bytes.Equal(rd.bufs[0], bufs[0].Bytes()[:4096]) {
			t.Fatal("ReadFixed read other bytes than WriteFixed wrote")
		}
	})
}

// TestRequestFixedGoesThroughReadFixedOnUring gives ReadFixed memory outside the registered
// buffer: READ_FIXED refuses it (EFAULT), which a plain READ would not; the emulation (every
// backend but uring) reads it.
func TestRequestFixedGoesThroughReadFixedOnUring(t *testing.T) {
	eachBackend(t, ringev.Backends(), func(t *testing.T, backend string) {
		f := testutil.TempFile(t)
		f.WriteString("0123456789")
		l := newLoop(t, backend)
		registerBuffers(t, l, 1, 4096)
		var rd recorder
		must(t)(l.ReadFixed(int(f.Fd()), ringev.ForgeFixedBuffer(l, make([]byte, 10), 0), 0, rd.cb, 0))
		until(t, l, func() bool { return rd.n() > 0 })
		c := rd.last(t)
		if backend == "uring" { // the other backends, uring-poll included, emulate requests
			if !errors.Is(c.Err, unix.EFAULT) {
				t.Errorf("ReadFixed outside the registered buffer on %s: N %d err %v, want EFAULT (IORING_OP_READ_FIXED)", backend, c.N, c.Err)
			}
			return
		}
		if c.Err != nil || string(rd.bufs[0]) != "0123456789" {
			t.Errorf("ReadFixed on %s: %q, %v", backend, rd.bufs[0], c.Err)
		}
	})
}

// TestRequestFixedRefusesAnotherLoopsBuffer: ReadFixed with a buffer no loop registered (the
// zero FixedBuffer) fails at once with an error wrapping EFAULT.
func TestRequestFixedRefusesAnotherLoopsBuffer(t *testing.T) {
	f := testutil.TempFile(t)
	l := newLoop(t, "epoll")
	if _, err := l.ReadFixed(int(f.Fd()), ringev.FixedBuffer{}, 0, func(*ringev.Completion) {}, 0); !errors.Is(err, unix.EFAULT) {
		t.Errorf("ReadFixed with the zero FixedBuffer: %v, want EFAULT", err)
	}
}

// TestRequestFixedRegisterTwiceFailsWithEBUSY: a loop registers buffers once (a second
// RegisterBuffers wraps EBUSY), and a count of 0 wraps EINVAL.
func TestRequestFixedRegisterTwiceFailsWithEBUSY(t *testing.T) {
	eachBackend(t, ringev.Backends(), func(t *testing.T, backend string) {
		l := newLoop(t, backend)
		registerBuffers(t, l, 1, 4096)
		if _, err := l.RegisterBuffers(1, 4096); !errors.Is(err, unix.EBUSY) {
			t.Errorf("second RegisterBuffers: %v, want EBUSY", err)
		}
		if _, err := l.RegisterBuffers(0, 4096); !errors.Is(err, unix.EINVAL) {
			t.Errorf("RegisterBuffers(0, 4096): %v, want EINVAL", err)
		}
	})
}
