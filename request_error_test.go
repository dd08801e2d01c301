//go:build linux

package ringev_test

// Completion errors name their request: the operation, its fd and, for a deadline, the deadline,
// and still wrap the errno, on every backend.

import (
	"errors"
	"strconv"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/ringev/ringev"
	"github.com/ringev/ringev/internal/testutil"
)

// wantNamed fails the test unless err wraps errno and its message holds every one of parts.
func wantNamed(t *testing.T, err error, errno unix.Errno, parts ...string) {
	t.Helper()
	if !errors.Is(err, errno) {
		t.Fatalf("error %v, want one wrapping %v", err, errno)
	}
	for _, p := range parts {
		if !strings.Contains(err.Error(), p) {
			t.Errorf("error %q does not name %q", err, p)
		}
	}
}

// onFd is how an error names a request on fd.
func onFd(op string, fd int) string { return op + " on fd " + strconv.Itoa(fd) }

// TestRequestErrorDeadlineNamesOpFdAndDeadline: a recv whose deadline passes fails with an error
// that names the recv, its fd and the deadline, and wraps ETIME.
func TestRequestErrorDeadlineNamesOpFdAndDeadline(t *testing.T) {
	eachBackend(t, ringev.Backends(), func(t *testing.T, backend string) {
		a, _ := testutil.Socketpair(t)
		l := newLoop(t, backend)
		var rec recorder
		h := must(t)(l.Recv(a, make([]byte, 8), 0, rec.cb, 0))
		if err := h.SetTimeout(20 * time.Millisecond); err != nil {
			t.Fatal(err)
		}
		until(t, l, func() bool { return rec.n() > 0 })
		wantNamed(t, rec.last(t).Err, unix.ETIME, onFd("recv", a), "deadline of 20ms")
	})
}

// TestRequestErrorCancelNamesOpAndFd: a cancelled recv fails with an error that names the recv
// and its fd, and wraps ECANCELED.
func TestRequestErrorCancelNamesOpAndFd(t *testing.T) {
	eachBackend(t, ringev.Backends(), func(t *testing.T, backend string) {
		a, _ := testutil.Socketpair(t)
		l := newLoop(t, backend)
		var rec recorder
		h := must(t)(l.Recv(a, make([]byte, 8), 0, rec.cb, 0))
		if err := h.Cancel(); err != nil {
			t.Fatal(err)
		}
		until(t, l, func() bool { return rec.n() > 0 })
		wantNamed(t, rec.last(t).Err, unix.ECANCELED, onFd("recv", a))
	})
}

// TestRequestErrorCloseFdNamesOpAndFd: a recv-multishot that CloseFd ends fails with an error
// that names it and its fd, and wraps ECANCELED.
func TestRequestErrorCloseFdNamesOpAndFd(t *testing.T) {
	eachBackend(t, ringev.Backends(), func(t *testing.T, backend string) {
		a, _ := testutil.Socketpair(t)
		l := newLoop(t, backend)
		if err := l.CheckOp(ringev.OpRecvMultishot); err != nil {
			requireOp(t, ringev.OpRecvMultishot) // skips where the kernel lacks the feature
			t.Fatalf("CheckOp: %v", err)
		}
		g, err := l.NewBufferGroup(4, 64)
		if err != nil {
			t.Fatal(err)
		}
		var rec, closed recorder
		must(t)(l.RecvMultishot(a, g, 0, rec.cb, 0))
		untilWaited(t, l) // the recv waits in the kernel (or for readiness)
		must(t)(l.CloseFd(a, closed.cb, 0))
		until(t, l, func() bool { return rec.n() > 0 && closed.n() > 0 })
		wantOne(t, &closed, 0)
		if c := rec.last(t); c.More {
			t.Fatalf("the recv-multishot did not end: %+v", c)
		}
		wantNamed(t, rec.last(t).Err, unix.ECANCELED, onFd("recv-multishot", a))
	})
}

// TestRequestErrorKernelNamesOpAndFd: a request the kernel fails names its op and fd and wraps
// the errno: a connect refused (ECONNREFUSED), and a write to a pipe's read end (EBADF), which
// ends on the request path's fast way (no deadline, no cancel).
func TestRequestErrorKernelNamesOpAndFd(t *testing.T) {
	eachBackend(t, ringev.Backends(), func(t *testing.T, backend string) {
		sa := refusingAddr(t)
		fd := testutil.TCPSocket(t)
		r, _ := testutil.Pipe(t)
		l := newLoop(t, backend)
		var rec, write recorder
		must(t)(l.Connect(fd, sa, rec.cb, 0))
		must(t)(l.Write(r, make([]byte, 8), -1, write.cb, 0))
		until(t, l, func() bool { return rec.n() > 0 && write.n() > 0 })
		wantNamed(t, rec.last(t).Err, unix.ECONNREFUSED, onFd("connect", fd))
		wantNamed(t, write.last(t).Err, unix.EBADF, onFd("write", r))
	})
}

// refusingAddr returns a loopback address whose port is bound but not listened on: a connect
// to it is refused. The port stays bound until the test ends.
func refusingAddr(t *testing.T) *unix.SockaddrInet4 {
	t.Helper()
	s := testutil.TCPSocket(t)
	if err := unix.Bind(s, &unix.SockaddrInet4{Addr: [4]byte{127, 0, 0, 1}}); err != nil {
		t.Fatal(err)
	}
	sa, err := unix.Getsockname(s)
	if err != nil {
		t.Fatal(err)
	}
	return sa.(*unix.SockaddrInet4)
}

// TestRequestErrorKeptAfterTheCallbackStaysTheSame: an error a callback keeps is a
// *ringev.RequestError whose fields name the request, and it still does after later requests
// (which reuse the loop's records) fail differently.
func TestRequestErrorKeptAfterTheCallbackStaysTheSame(t *testing.T) {
	eachBackend(t, ringev.Backends(), func(t *testing.T, backend string) {
		a, _ := testutil.Socketpair(t)
		c, _ := testutil.Socketpair(t)
		l := newLoop(t, backend)
		var kept []error
		cb := func(x *ringev.Completion) { kept = append(kept, x.Err) }
		h := must(t)(l.Recv(a, make([]byte, 8), 0, cb, 0))
		if err := h.SetTimeout(time.Millisecond); err != nil {
			t.Fatal(err)
		}
		until(t, l, func() bool { return len(kept) == 1 })
		first := kept[0].Error()
		for i := 0; i < 3; i++ { // other errors, on the same record
			h := must(t)(l.Recv(c, make([]byte, 8), 0, cb, 0))
			if err := h.Cancel(); err != nil {
				t.Fatal(err)
			}
			until(t, l, func() bool { return len(kept) == 2+i })
		}
		var re *ringev.RequestError
		if !errors.As(kept[0], &re) {
			t.Fatalf("error %T %v, want a *ringev.RequestError", kept[0], kept[0])
		}
		want := ringev.RequestError{Op: ringev.OpRecv, Fd: a, Errno: unix.ETIME, Timeout: time.Millisecond}
		if *re != want || kept[0].Error() != first {
			t.Fatalf("kept error %+v %q after later failures, want %+v %q", *re, kept[0], want, first)
		}
		wantNamed(t, kept[1], unix.ECANCELED, onFd("recv", c))
	})
}

// TestRequestErrorRepeatedAllocatesNothing: a recv on one connection that keeps timing out (an
// idle connection's) fails with the same error each time, and allocates nothing for it once the
// loop is warm.
func TestRequestErrorRepeatedAllocatesNothing(t *testing.T) {
	eachBackend(t, ringev.Backends(), func(t *testing.T, backend string) {
		a, _ := testutil.Socketpair(t)
		l := newLoop(t, backend)
		buf := make([]byte, 8)
		var last error
		done := 0
		cb := func(x *ringev.Completion) { last = x.Err; done++ }
		var err error
		round := func() {
			n := done
			var h ringev.Request
			if h, err = l.Recv(a, buf, 0, cb, 0); err == nil {
				err = h.SetTimeout(time.Microsecond)
			}
			for i := 0; i < 1000 && done == n && err == nil; i++ {
				err = l.Once()
			}
		}
		for i := 0; i < 20; i++ {
			round()
		}
		first := last
		allocs := testing.AllocsPerRun(200, round)
		if err != nil {
			t.Fatal(err)
		}
		if done != 221 {
			t.Fatalf("%d completions, want 221", done)
		}
		if last != first {
			t.Fatalf("the same failure got a new error value: %p, first %p (%v)", last, first, last)
		}
		wantNamed(t, last, unix.ETIME, onFd("recv", a))
		if allocs != 0 {
			t.Fatalf("%.2f allocations per timed-out recv, want 0", allocs)
		}
	})
}
