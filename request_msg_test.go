//go:build linux

package ringev_test

// Tests of RecvMsg and SendMsg, UDP's requests: a datagram and its peer's address.

import (
	"bytes"
	"errors"
	"testing"
	"unsafe"

	"github.com/ringev/ringev"
	"github.com/ringev/ringev/internal/testutil"
	"golang.org/x/sys/unix"
)

// udpMsg is a msghdr of one iovec over buf, with room for an IPv4 address.
type udpMsg struct {
	msg  unix.Msghdr
	iov  unix.Iovec
	name unix.RawSockaddrInet4
}

func newUDPMsg(buf []byte, to *unix.SockaddrInet4) *udpMsg {
	m := &udpMsg{}
	m.iov.Base = &buf[0]
	m.iov.SetLen(len(buf))
	m.msg.Iov, m.msg.Iovlen = &m.iov, 1
	m.msg.Name, m.msg.Namelen = (*byte)(unsafe.Pointer(&m.name)), unix.SizeofSockaddrInet4
	if to != nil {
		m.name.Family, m.name.Addr = unix.AF_INET, to.Addr
		m.name.Port = uint16(to.Port>>8) | uint16(to.Port&0xff)<<8 // network byte order
	}
	return m
}

// TestRequestSendMsgAndRecvMsgCarryADatagramAndItsAddress: a SendMsg to a UDP socket's address
// sends one datagram (N its length); a RecvMsg on that socket, made before the datagram came,
// gets it whole with the sender's address, on every backend.
func TestRequestSendMsgAndRecvMsgCarryADatagramAndItsAddress(t *testing.T) {
	eachBackend(t, ringev.Backends(), func(t *testing.T, backend string) {
		l := newLoop(t, backend)
		a, aAddr := testutil.UDPSocket(t)
		b, bAddr := testutil.UDPSocket(t)
		in := make([]byte, 64)
		rm := newUDPMsg(in, nil)
		var recv, sent recorder
		must(t)(l.RecvMsg(b, &rm.msg, 0, recv.cb, 1))
		untilWaited(t, l)
		if recv.n() != 0 {
			t.Fatalf("a RecvMsg on an empty socket completed: %+v", recv.got[0])
		}
		out := []byte("datagram")
		sm := newUDPMsg(out, bAddr)
		must(t)(l.SendMsg(a, &sm.msg, 0, sent.cb, 2))
		until(t, l, func() bool { return recv.n() > 0 && sent.n() > 0 })
		wantOne(t, &sent, len(out))
		c := wantOne(t, &recv, len(out))
		if !bytes.Equal(in[:c.N], out) {
			t.Fatalf("received %q, want %q", in[:c.N], out)
		}
		port := int(rm.name.Port>>8 | rm.name.Port<<8)
		if rm.name.Family != unix.AF_INET || rm.name.Addr != aAddr.Addr || port != aAddr.Port {
			t.Fatalf("sender %v:%d (family %d), want %v:%d", rm.name.Addr, port, rm.name.Family, aAddr.Addr, aAddr.Port)
		}
	})
}

// TestRequestMsgWithoutAMsghdrIsRefused: RecvMsg and SendMsg with a nil msghdr return an error
// wrapping EINVAL and submit nothing.
func TestRequestMsgWithoutAMsghdrIsRefused(t *testing.T) {
	eachBackend(t, ringev.Backends(), func(t *testing.T, backend string) {
		l := newLoop(t, backend)
		a, _ := testutil.UDPSocket(t)
		var rec recorder
		if _, err := l.RecvMsg(a, nil, 0, rec.cb, 1); !errors.Is(err, unix.EINVAL) {
			t.Errorf("RecvMsg with a nil msghdr: %v, want EINVAL", err)
		}
		if _, err := l.SendMsg(a, nil, 0, rec.cb, 1); !errors.Is(err, unix.EINVAL) {
			t.Errorf("SendMsg with a nil msghdr: %v, want EINVAL", err)
		}
	})
}
