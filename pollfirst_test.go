//go:build linux

package ringev_test

// Tests of IORING_RECVSEND_POLL_FIRST on a Recv after one that drained the socket
// (WithRecvPollFirst).

import (
	"testing"

	"github.com/ringev/ringev"
	"github.com/ringev/ringev/internal/testutil"
)

// recvOne makes a Recv on fd into buf and runs the loop until its callback; it returns whether
// the Recv was prepared with POLL_FIRST and its completion.
func recvOne(t *testing.T, l *ringev.Loop, fd int, buf []byte, feed func()) (bool, ringev.Completion) {
	t.Helper()
	var rec recorder
	h := must(t)(l.Recv(fd, buf, 0, rec.cb, 0))
	pf := ringev.RequestPollFirst(h)
	if feed != nil {
		feed()
	}
	until(t, l, func() bool { return rec.n() > 0 })
	if rec.n() != 1 || rec.got[0].Err != nil {
		t.Fatalf("Recv: %+v, want one completion without error", rec.got)
	}
	return pf, rec.got[0]
}

// TestRecvPollFirstAfterARecvThatDrainedTheSocket: on uring the first Recv on a socket is
// prepared without POLL_FIRST, one after a Recv that took less than its buffer with it, and one
// after a Recv that filled its buffer without it.
func TestRecvPollFirstAfterARecvThatDrainedTheSocket(t *testing.T) {
	requirePollFirst(t)
	a, b := testutil.Socketpair(t)
	l := newLoop(t, "uring")
	send := func(s string) func() { return func() { testutil.Write(t, b, []byte(s)) } }
	if pf, _ := recvOne(t, l, a, make([]byte, 16), send("abc")); pf {
		t.Fatal("the first Recv on the socket was prepared with POLL_FIRST")
	}
	if pf, _ := recvOne(t, l, a, make([]byte, 2), send("wxyz")); !pf {
		t.Fatal("a Recv after one that took 3 of 16 bytes was prepared without POLL_FIRST")
	}
	// That Recv filled its 2 bytes ("wx"); "yz" is still there.
	if pf, c := recvOne(t, l, a, make([]byte, 16), nil); pf || c.N != 2 {
		t.Fatalf("a Recv after one that filled its buffer: POLL_FIRST %v, N %d; want no POLL_FIRST, N 2", pf, c.N)
	}
}

// TestRecvPollFirstStillTakesDataAlreadyThere: a Recv prepared with POLL_FIRST on a socket that
// already holds data completes with it.
func TestRecvPollFirstStillTakesDataAlreadyThere(t *testing.T) {
	requirePollFirst(t)
	a, b := testutil.Socketpair(t)
	l := newLoop(t, "uring")
	recvOne(t, l, a, make([]byte, 16), func() { testutil.Write(t, b, []byte("one")) })
	testutil.Write(t, b, []byte("two"))
	buf := make([]byte, 16)
	pf, c := recvOne(t, l, a, buf, nil)
	if !pf || c.N != 3 || string(buf[:3]) != "two" {
		t.Fatalf("POLL_FIRST %v, completion %+v, buf %q; want POLL_FIRST and \"two\"", pf, c, buf[:max(c.N, 0)])
	}
}

// TestWithRecvPollFirstFalseTurnsItOff: with WithRecvPollFirst(false) no Recv is prepared with
// POLL_FIRST, on every backend (the emulation never uses it).
func TestWithRecvPollFirstFalseTurnsItOff(t *testing.T) {
	eachBackend(t, ringev.Backends(), func(t *testing.T, backend string) {
		a, b := testutil.Socketpair(t)
		l := newLoop(t, backend, ringev.WithRecvPollFirst(false))
		for _, s := range []string{"abc", "def"} {
			if pf, _ := recvOne(t, l, a, make([]byte, 16), func() { testutil.Write(t, b, []byte(s)) }); pf {
				t.Fatal("a Recv was prepared with POLL_FIRST under WithRecvPollFirst(false)")
			}
		}
	})
}
