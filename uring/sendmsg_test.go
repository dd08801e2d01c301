//go:build linux

package uring

// Tests of the message ops: a datagram sent with SENDMSG to a UDP socket is received by
// RECVMSG with its bytes and the sender's address.

import (
	"testing"
	"unsafe"

	"github.com/ringev/ringev/internal/testutil"
	"golang.org/x/sys/unix"
)

// TestSendmsgRecvmsgCarryTheAddress: SENDMSG sends a datagram to an address given in the
// msghdr; RECVMSG receives it with the sender's address and no MSG_TRUNC.
func TestSendmsgRecvmsgCarryTheAddress(t *testing.T) {
	r := newTestRing(t)
	requireOp(t, r, OpSendmsg)
	requireOp(t, r, OpRecvmsg)
	a, aAddr := testutil.UDPSocket(t)
	b, bAddr := testutil.UDPSocket(t)

	rbuf := make([]byte, 64)
	var from unix.RawSockaddrInet4
	riov := &unix.Iovec{Base: &rbuf[0]}
	riov.SetLen(len(rbuf))
	rmsg := &unix.Msghdr{Name: (*byte)(unsafe.Pointer(&from)), Namelen: unix.SizeofSockaddrInet4, Iov: riov, Iovlen: 1}
	prep(t, r, 1, func(s *SQE) { s.PrepRecvmsg(b, rmsg, 0) })

	payload := []byte("datagram")
	to := &unix.RawSockaddrInet4{Family: unix.AF_INET, Addr: bAddr.Addr, Port: uint16(bAddr.Port)<<8 | uint16(bAddr.Port)>>8}
	siov := &unix.Iovec{Base: &payload[0]}
	siov.SetLen(len(payload))
	smsg := &unix.Msghdr{Name: (*byte)(unsafe.Pointer(to)), Namelen: unix.SizeofSockaddrInet4, Iov: siov, Iovlen: 1}
	prep(t, r, 2, func(s *SQE) { s.PrepSendmsg(a, smsg, 0) })

	got := byUserData(collect(t, r, 2))
	if c := got[2]; c.Res != int32(len(payload)) {
		t.Fatalf("SENDMSG CQE %+v, want Res %d", c, len(payload))
	}
	c := got[1]
	if c.Res != int32(len(payload)) || string(rbuf[:c.Res]) != string(payload) {
		t.Fatalf("RECVMSG CQE %+v, bytes %q; want %q", c, rbuf[:max(c.Res, 0)], payload)
	}
	port := int(from.Port>>8 | from.Port<<8)
	if from.Addr != aAddr.Addr || port != aAddr.Port {
		t.Errorf("sender %v:%d, want %v:%d", from.Addr, port, aAddr.Addr, aAddr.Port)
	}
	if rmsg.Flags&unix.MSG_TRUNC != 0 {
		t.Error("MSG_TRUNC set on a datagram that fits")
	}
}
