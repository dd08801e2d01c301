//go:build linux

package ringev_test

// The breaker's tests of Loop.CheckOp and of the probe seam (SetProbeHides) it is tested with.

import (
	"errors"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/ringev/ringev"
	"github.com/ringev/ringev/internal/testutil"
	"github.com/ringev/ringev/uring"
)

// TestCheckOpOfEveryOpValueAgreesWithItself: on every backend, CheckOp of each of the 256 Op
// values returns (no panic) nil or an error, the same answer when asked again, EINVAL for the
// values no request call makes, and the loop still serves a Recv afterwards.
func TestCheckOpOfEveryOpValueAgreesWithItself(t *testing.T) {
	eachBackend(t, ringev.Backends(), func(t *testing.T, b string) {
		l := newLoop(t, b)
		for v := range 256 {
			op := ringev.Op(v)
			first, again := l.CheckOp(op), l.CheckOp(op)
			if (first == nil) != (again == nil) {
				t.Errorf("CheckOp(%d) = %v, then %v", v, first, again)
			}
			if (v == 0 || v > int(ringev.OpSQE)) && !errors.Is(first, unix.EINVAL) {
				t.Errorf("CheckOp(%d) = %v, want EINVAL", v, first)
			}
		}
		a, c := testutil.Socketpair(t)
		testutil.Write(t, c, []byte("x"))
		var rec recorder
		must(t)(l.Recv(a, make([]byte, 4), 0, rec.cb, 0))
		until(t, l, func() bool { return rec.n() > 0 })
		if rec.got[0].Err != nil || rec.got[0].N != 1 {
			t.Fatalf("Recv after CheckOp of every op: %+v", rec.got[0])
		}
	})
}

// TestProbeHidingIORING_OP_SOCKETTurnsRecvPollFirstOff: a loop made while SetProbeHides hides
// IORING_OP_SOCKET, the witness of Linux 5.19 and so of IORING_RECVSEND_POLL_FIRST, plays a
// 5.18 kernel all through: a Recv after one that drained the socket is prepared without
// POLL_FIRST (which a 5.18 kernel refuses with EINVAL), as AcceptMultishot is refused.
func TestProbeHidingIORING_OP_SOCKETTurnsRecvPollFirstOff(t *testing.T) {
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

// TestProbeHidesTakesOnlyLoopsMadeWhileItHolds: SetProbeHides changes the loops made after it
// and before its restore, and only them, whenever they ask: a loop made before it still finds
// the multishot recv while it holds, and one made while it held still lacks it after the
// restore (the answer of a loop does not change, and a hide cannot leak into a loop of another
// test that merely asks late).
func TestProbeHidesTakesOnlyLoopsMadeWhileItHolds(t *testing.T) {
	before := newLoop(t, "uring") // skips where io_uring is not available
	if err := before.CheckOp(ringev.OpRecvMultishot); err != nil {
		t.Skipf("IORING_RECV_MULTISHOT (Linux 6.0): %v", err)
	}
	other := newLoop(t, "uring")
	restore := ringev.SetProbeHides(uring.OpSendZC) // IORING_RECV_MULTISHOT's witness
	during := newLoop(t, "uring")
	if err := other.CheckOp(ringev.OpRecvMultishot); err != nil {
		t.Errorf("CheckOp(OpRecvMultishot), first asked while SetProbeHides holds, on a loop made before it = %v, want nil", err)
	}
	restore()
	if err := during.CheckOp(ringev.OpRecvMultishot); !errors.Is(err, unix.EOPNOTSUPP) {
		t.Errorf("CheckOp(OpRecvMultishot) after the restore, on a loop made while the hide held = %v, want EOPNOTSUPP", err)
	}
}
