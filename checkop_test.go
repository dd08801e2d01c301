//go:build linux

package ringev_test

// Tests of Loop.CheckOp: whether requests of an op can run on a loop, asked before any fd.

import (
	"errors"
	"strings"
	"testing"

	"github.com/ringev/ringev"
	"github.com/ringev/ringev/internal/testutil"
	"github.com/ringev/ringev/uring"
	"golang.org/x/sys/unix"
)

// requestOps is every op a request call makes but SubmitSQE's.
var requestOps = []ringev.Op{ringev.OpRead, ringev.OpWrite, ringev.OpRecv, ringev.OpSend, ringev.OpAccept,
	ringev.OpAcceptMultishot, ringev.OpConnect, ringev.OpClose, ringev.OpFsync, ringev.OpRecvMultishot}

// TestCheckOpOnTheEmulationTakesEveryOpButSQE: on epoll, poll and uring-poll CheckOp takes every
// op a request call makes, and refuses OpSQE with ErrNeedsUring.
func TestCheckOpOnTheEmulationTakesEveryOpButSQE(t *testing.T) {
	for _, b := range ringev.Backends() {
		if b == "uring" {
			continue
		}
		t.Run(b, func(t *testing.T) {
			l := newLoop(t, b)
			for _, op := range requestOps {
				if err := l.CheckOp(op); err != nil {
					t.Errorf("CheckOp(%v) = %v, want nil", op, err)
				}
			}
			if err := l.CheckOp(ringev.OpSQE); !errors.Is(err, ringev.ErrNeedsUring) {
				t.Errorf("CheckOp(OpSQE) = %v, want ErrNeedsUring", err)
			}
		})
	}
}

// TestCheckOpOnUringAgreesWithTheRequestCall: on uring CheckOp(OpRecvMultishot) says nil exactly
// when RecvMultishot is taken.
func TestCheckOpOnUringAgreesWithTheRequestCall(t *testing.T) {
	a, _ := testutil.Socketpair(t)
	l := newLoop(t, "uring")
	g, err := l.NewBufferGroup(8, 64)
	testutil.SkipIfFeatureMissing(t, err) // IORING_REGISTER_PBUF_RING, Linux 5.19
	if err != nil {
		t.Fatalf("NewBufferGroup: %v", err)
	}
	checked := l.CheckOp(ringev.OpRecvMultishot)
	_, made := l.RecvMultishot(a, g, 0, func(*ringev.Completion) {}, 0) // Close (cleanup) ends it
	if (checked == nil) != (made == nil) {
		t.Fatalf("CheckOp(OpRecvMultishot) = %v but RecvMultishot = %v", checked, made)
	}
}

// TestCheckOpNamesAFeatureTheKernelLacks: on a kernel without the multishot recv (played by
// hiding its witness from the probe), CheckOp(OpRecvMultishot) wraps EOPNOTSUPP and names
// IORING_RECV_MULTISHOT, the other ops are taken, and RecvMultishot is refused as CheckOp said.
func TestCheckOpNamesAFeatureTheKernelLacks(t *testing.T) {
	defer ringev.SetProbeHides(uring.OpSendZC)() // IORING_RECV_MULTISHOT's witness: a 6.0 kernel's opcode
	a, _ := testutil.Socketpair(t)
	l := newLoop(t, "uring")
	err := l.CheckOp(ringev.OpRecvMultishot)
	if !errors.Is(err, unix.EOPNOTSUPP) || !strings.Contains(err.Error(), "IORING_RECV_MULTISHOT") {
		t.Fatalf("CheckOp(OpRecvMultishot) with no 6.0 opcode = %v, want EOPNOTSUPP naming IORING_RECV_MULTISHOT", err)
	}
	if err := l.CheckOp(ringev.OpRecv); err != nil {
		t.Errorf("CheckOp(OpRecv) = %v, want nil (only 6.0's opcodes are hidden)", err)
	}
	if g, gerr := l.NewBufferGroup(8, 64); gerr == nil {
		if _, rerr := l.RecvMultishot(a, g, 0, func(*ringev.Completion) {}, 0); !errors.Is(rerr, unix.EOPNOTSUPP) {
			t.Errorf("RecvMultishot after CheckOp refused it = %v, want EOPNOTSUPP", rerr)
		}
	}
}

// TestCheckOpRefusesAnUnknownOp: CheckOp of an Op value no request call makes wraps EINVAL, on
// every backend.
func TestCheckOpRefusesAnUnknownOp(t *testing.T) {
	eachBackend(t, ringev.Backends(), func(t *testing.T, b string) {
		l := newLoop(t, b)
		for _, op := range []ringev.Op{0, ringev.OpPoll + 1, 255} {
			if err := l.CheckOp(op); !errors.Is(err, unix.EINVAL) {
				t.Errorf("CheckOp(%v) = %v, want EINVAL", op, err)
			}
		}
	})
}

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
			if (v == 0 || v > int(ringev.OpPoll)) && !errors.Is(first, unix.EINVAL) {
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

// TestCheckOpAfterCloseIsErrClosed: CheckOp on a closed loop returns ErrClosed.
func TestCheckOpAfterCloseIsErrClosed(t *testing.T) {
	l := newLoop(t, "epoll")
	l.Close()
	if err := l.CheckOp(ringev.OpRecv); !errors.Is(err, ringev.ErrClosed) {
		t.Fatalf("CheckOp after Close = %v, want ErrClosed", err)
	}
}

// TestCheckOpProbeHidesTakesOnlyLoopsMadeWhileItHolds: SetProbeHides changes the loops made after
// it and before its restore, and only them, whenever they ask: a loop made before it still finds
// the multishot recv while it holds, and one made while it held still lacks it after the restore
// (the answer of a loop does not change, and a hide cannot leak into a loop of another test that
// merely asks late).
func TestCheckOpProbeHidesTakesOnlyLoopsMadeWhileItHolds(t *testing.T) {
	before := newLoop(t, "uring") // skips where io_uring is not available
	err := before.CheckOp(ringev.OpRecvMultishot)
	testutil.SkipIfFeatureMissing(t, err) // IORING_RECV_MULTISHOT, Linux 6.0
	if err != nil {
		t.Fatalf("CheckOp(OpRecvMultishot): %v", err)
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
