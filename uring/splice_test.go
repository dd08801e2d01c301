//go:build linux

package uring

import (
	"bytes"
	"testing"

	"golang.org/x/sys/unix"
)

// splicePair returns a non-blocking unix stream socket pair and a non-blocking pipe, closed at
// the test's end.
func splicePair(t *testing.T) (sp, p [2]int) {
	t.Helper()
	s, err := unix.Socketpair(unix.AF_UNIX, unix.SOCK_STREAM|unix.SOCK_NONBLOCK|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		t.Fatal(err)
	}
	if err := unix.Pipe2(p[:], unix.O_NONBLOCK|unix.O_CLOEXEC); err != nil {
		t.Fatal(err)
	}
	sp = [2]int{s[0], s[1]}
	for _, fd := range []int{s[0], s[1], p[0], p[1]} {
		closeLater(t, fd)
	}
	return sp, p
}

// TestSpliceMovesSocketToPipeToSocket: two SPLICEs move bytes from a socket into a pipe and
// from the pipe into another socket, each Res the bytes moved.
func TestSpliceMovesSocketToPipeToSocket(t *testing.T) {
	r := newTestRing(t)
	requireOp(t, r, OpSplice)
	in, p := splicePair(t)
	out, _ := splicePair(t)
	msg := []byte("spliced through a pipe")
	if _, err := unix.Write(in[1], msg); err != nil {
		t.Fatal(err)
	}
	prep(t, r, 1, func(s *SQE) {
		s.PrepSplice(in[0], SpliceNoOffset, p[1], SpliceNoOffset, 1<<16, unix.SPLICE_F_MOVE)
	})
	if c := collect(t, r, 1)[0]; c.Res != int32(len(msg)) {
		t.Fatalf("socket to pipe: Res %d, want %d", c.Res, len(msg))
	}
	prep(t, r, 2, func(s *SQE) {
		s.PrepSplice(p[0], SpliceNoOffset, out[0], SpliceNoOffset, uint32(len(msg)), unix.SPLICE_F_MOVE)
	})
	if c := collect(t, r, 1)[0]; c.Res != int32(len(msg)) {
		t.Fatalf("pipe to socket: Res %d, want %d", c.Res, len(msg))
	}
	got := make([]byte, 64)
	n, err := unix.Read(out[1], got)
	if err != nil || !bytes.Equal(got[:n], msg) {
		t.Errorf("read %q, %v; want %q", got[:n], err, msg)
	}
}

// TestSpliceFromEmptyNonblockingSocketIsEAGAIN: a SPLICE from a non-blocking socket with
// nothing to read completes at once with -EAGAIN (the kernel does not wait for readiness).
func TestSpliceFromEmptyNonblockingSocketIsEAGAIN(t *testing.T) {
	r := newTestRing(t)
	requireOp(t, r, OpSplice)
	in, p := splicePair(t)
	prep(t, r, 1, func(s *SQE) {
		s.PrepSplice(in[0], SpliceNoOffset, p[1], SpliceNoOffset, 1<<16, unix.SPLICE_F_MOVE|unix.SPLICE_F_NONBLOCK)
	})
	if c := collect(t, r, 1)[0]; c.Res != -int32(unix.EAGAIN) {
		t.Errorf("Res %d, want -EAGAIN (%d)", c.Res, -int32(unix.EAGAIN))
	}
}

// TestSpliceAtEndOfFileIsZero: a SPLICE from a socket whose peer closed returns 0.
func TestSpliceAtEndOfFileIsZero(t *testing.T) {
	r := newTestRing(t)
	requireOp(t, r, OpSplice)
	in, p := splicePair(t)
	unix.Shutdown(in[1], unix.SHUT_WR)
	prep(t, r, 1, func(s *SQE) {
		s.PrepSplice(in[0], SpliceNoOffset, p[1], SpliceNoOffset, 1<<16, unix.SPLICE_F_MOVE)
	})
	if c := collect(t, r, 1)[0]; c.Res != 0 {
		t.Errorf("Res %d, want 0 (end of file)", c.Res)
	}
}
