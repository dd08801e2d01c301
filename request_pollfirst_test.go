//go:build linux

package ringev_test

// Tests of IORING_RECVSEND_POLL_FIRST on a Recv after one that drained the socket
// (WithRecvPollFirst).

import (
	"errors"
	"testing"

	"github.com/ringev/ringev"
	"github.com/ringev/ringev/internal/testutil"
	"github.com/ringev/ringev/uring"
	"golang.org/x/sys/unix"
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

// TestRequestRecvPollFirstAfterARecvThatDrainedTheSocket: on uring the first Recv on a socket is
// prepared without POLL_FIRST, one after a Recv that took less than its buffer with it, and one
// after a Recv that filled its buffer without it.
func TestRequestRecvPollFirstAfterARecvThatDrainedTheSocket(t *testing.T) {
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

// TestRequestRecvPollFirstStillTakesDataAlreadyThere: a Recv prepared with POLL_FIRST on a socket
// that already holds data completes with it.
func TestRequestRecvPollFirstStillTakesDataAlreadyThere(t *testing.T) {
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

// TestRequestRecvPollFirstOffWithWithRecvPollFirstFalse: with WithRecvPollFirst(false) no Recv is
// prepared with POLL_FIRST, on every backend (the emulation never uses it).
func TestRequestRecvPollFirstOffWithWithRecvPollFirstFalse(t *testing.T) {
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

// TestRequestRecvPollFirstOffWhenTheProbeHidesIORING_OP_SOCKET: a loop made while SetProbeHides
// hides IORING_OP_SOCKET, the witness of Linux 5.19 and so of IORING_RECVSEND_POLL_FIRST, plays a
// 5.18 kernel all through: a Recv after one that drained the socket is prepared without POLL_FIRST
// (which a 5.18 kernel refuses with EINVAL), as AcceptMultishot is refused.
func TestRequestRecvPollFirstOffWhenTheProbeHidesIORING_OP_SOCKET(t *testing.T) {
	requirePollFirst(t)
	defer ringev.SetProbeHides(uring.OpSocket)()
	a, b := testutil.Socketpair(t)
	l := newLoop(t, "uring")
	if err := l.CheckOp(ringev.OpAcceptMultishot); !errors.Is(err, unix.EOPNOTSUPP) {
		t.Fatalf("CheckOp(OpAcceptMultishot) with IORING_OP_SOCKET hidden = %v, want EOPNOTSUPP", err)
	}
	recvOne(t, l, a, make([]byte, 16), func() { testutil.Write(t, b, []byte("abc")) })
	if pf, _ := recvOne(t, l, a, make([]byte, 16), func() { testutil.Write(t, b, []byte("def")) }); pf {
		t.Fatal("a Recv was prepared with POLL_FIRST on a loop whose probe hides IORING_OP_SOCKET (a 5.18 kernel)")
	}
}
