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
