package ringev

// Tests of the kernel features a request's op needs (missingReqFeature), with given probes.

import (
	"errors"
	"strings"
	"testing"

	"github.com/ringev/ringev/uring"
	"golang.org/x/sys/unix"
)

// TestRequestOnKernelWithoutFeatureNamesIt: on a kernel whose probe lacks what a request op
// needs (an opcode, or the witness of a flag the probe cannot show), the request is refused
// with an error that names the feature and its release and wraps EOPNOTSUPP; with everything
// there, nothing is refused. The kernels are given as opcode sets.
func TestRequestOnKernelWithoutFeatureNamesIt(t *testing.T) {
	all := func(uint8) bool { return true }
	upTo := func(last uint8) func(uint8) bool { return func(op uint8) bool { return op <= last } }
	for op := OpRead; op < OpSQE; op++ {
		if err := missingReqFeature(op, all); err != nil {
			t.Errorf("%v with every opcode: %v", op, err)
		}
	}
	cases := []struct {
		name   string
		op     Op
		kernel func(uint8) bool
		want   string
	}{
		{"5.18 multishot accept", OpAcceptMultishot, upTo(uring.OpSocket - 1), "IORING_ACCEPT_MULTISHOT (Linux 5.19)"},
		{"5.19 multishot recv", OpRecvMultishot, upTo(uring.OpSendZC - 1), "IORING_RECV_MULTISHOT"},
		{"5.18 CloseFd", OpClose, upTo(uring.OpSocket - 1), "IORING_ASYNC_CANCEL_FD"},
		{"5.5 read", OpRead, upTo(uring.OpRead - 1), "IORING_OP_READ (Linux 5.6)"},
	}
	for _, c := range cases {
		err := missingReqFeature(c.op, c.kernel)
		if err == nil || !strings.Contains(err.Error(), c.want) || !errors.Is(err, unix.EOPNOTSUPP) {
			t.Errorf("%s: %v; want an error naming %q, wrapping EOPNOTSUPP", c.name, err, c.want)
		}
	}
	if err := missingReqFeature(OpAcceptMultishot, upTo(uring.OpSocket)); err != nil {
		t.Errorf("multishot accept on 5.19: %v", err)
	}
}
