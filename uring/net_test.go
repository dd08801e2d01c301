//go:build linux

package uring

import (
	"testing"
	"unsafe"

	"github.com/ringev/ringev/internal/testutil"
	"golang.org/x/sys/unix"
)

// listener returns a listening TCP socket on 127.0.0.1 and its address.
func listener(t *testing.T) (int, *unix.SockaddrInet4) {
	t.Helper()
	fd, err := unix.Socket(unix.AF_INET, unix.SOCK_STREAM|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { unix.Close(fd) })
	if err := unix.Bind(fd, &unix.SockaddrInet4{Addr: [4]byte{127, 0, 0, 1}}); err != nil {
		t.Fatal(err)
	}
	if err := unix.Listen(fd, 16); err != nil {
		t.Fatal(err)
	}
	sa, err := unix.Getsockname(fd)
	if err != nil {
		t.Fatal(err)
	}
	return fd, sa.(*unix.SockaddrInet4)
}

func closeLater(t *testing.T, fd int) { t.Cleanup(func() { unix.Close(fd) }) }

// TestMsgRingBetweenTwoRings: MSG_RING from ring A posts a CQE with the given Res and user_data in ring B.
func TestMsgRingBetweenTwoRings(t *testing.T) {
	a := newTestRing(t)
	b := newTestRing(t)
	requireOp(t, a, OpMsgRing)
	prep(t, a, 1, func(s *SQE) { s.PrepMsgRing(b.Fd(), 42, 0xabc, 0, 0) })
	if c := collect(t, a, 1)[0]; c.Res != 0 {
		t.Fatalf("sender CQE %+v", c)
	}
	if c := collect(t, b, 1)[0]; c.UserData != 0xabc || c.Res != 42 {
		t.Errorf("target CQE %+v, want user_data 0xabc, Res 42", c)
	}
}

// TestAcceptMultishot: one multishot ACCEPT yields a CQE with MORE and a new fd per connection.
func TestAcceptMultishot(t *testing.T) {
	r := newTestRing(t)
	requireOp(t, r, OpAccept)
	lfd, addr := listener(t)
	prep(t, r, 1, func(s *SQE) { s.PrepAcceptMultishot(lfd, unix.SOCK_CLOEXEC) })
	if _, err := r.Submit(); err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 3; i++ {
		c, err := unix.Socket(unix.AF_INET, unix.SOCK_STREAM|unix.SOCK_CLOEXEC, 0)
		if err != nil {
			t.Fatal(err)
		}
		closeLater(t, c)
		if err := unix.Connect(c, addr); err != nil {
			t.Fatal(err)
		}
	}
	for i, c := range collect(t, r, 3) {
		if c.Res == errnoRes(unix.EINVAL) {
			t.Skip("IORING_ACCEPT_MULTISHOT (5.19) unsupported")
		}
		if c.UserData != 1 || c.Res < 0 || !c.More() {
			t.Errorf("accept %d: CQE %+v, want an fd with MORE", i, c)
		}
		if c.Res >= 0 {
			closeLater(t, int(c.Res))
		}
	}
	prep(t, r, 2, func(s *SQE) { s.PrepCancel(1, 0) })
	m := byUserData(collect(t, r, 2))
	if m[1].Res != errnoRes(unix.ECANCELED) || m[1].More() {
		t.Errorf("after cancel: %+v", m[1])
	}
}

// TestRecvMultishotRunsOutOfBuffersAndRecovers: a multishot RECV on a
// 2-buffer ring gets ENOBUFS (and stops) at the third message; re-providing a
// buffer and re-arming receives the waiting data.
func TestRecvMultishotRunsOutOfBuffersAndRecovers(t *testing.T) {
	testutil.SkipUnlessKernel(t, 6, 0, "IORING_RECV_MULTISHOT")
	r := newTestRing(t)
	requireOp(t, r, OpRecv)
	sp, err := unix.Socketpair(unix.AF_UNIX, unix.SOCK_STREAM|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		t.Fatal(err)
	}
	closeLater(t, sp[0])
	closeLater(t, sp[1])
	br, err := r.SetupBufRing(2, 7) // IORING_REGISTER_PBUF_RING, 5.19: older than 6.0, checked above
	if err != nil {
		t.Fatalf("SetupBufRing: %v", err)
	}
	defer br.Close()
	bufs := [][]byte{make([]byte, 8), make([]byte, 8)}
	br.Add(bufs[0], 0, 0)
	br.Add(bufs[1], 1, 1)
	br.Advance(2)
	arm := func() { prep(t, r, 1, func(s *SQE) { s.PrepRecvMultishot(sp[0], br.Bgid(), 0) }) }
	arm()
	for i, msg := range []string{"aaaaaaaa", "bbbbbbbb"} {
		if _, err := unix.Write(sp[1], []byte(msg)); err != nil {
			t.Fatal(err)
		}
		c := collect(t, r, 1)[0]
		bid, ok := c.BufferID()
		if c.Res != 8 || !ok || !c.More() || string(bufs[bid]) != msg {
			t.Fatalf("message %d: CQE %+v buffer %d ok %v data %q", i, c, bid, ok, bufs[bid])
		}
	}
	if _, err := unix.Write(sp[1], []byte("cccccccc")); err != nil {
		t.Fatal(err)
	}
	if c := collect(t, r, 1)[0]; c.Res != errnoRes(unix.ENOBUFS) || c.More() {
		t.Fatalf("out of buffers: CQE %+v, want -ENOBUFS without MORE", c)
	}
	br.Provide(bufs[0], 0)
	arm()
	c := collect(t, r, 1)[0]
	bid, _ := c.BufferID()
	if c.Res != 8 || bid != 0 || string(bufs[0]) != "cccccccc" {
		t.Fatalf("after recovery: CQE %+v data %q", c, bufs[0])
	}
	prep(t, r, 2, func(s *SQE) { s.PrepCancel(1, 0) })
	collect(t, r, 2)
}

// TestConnectSendRecvShutdown: CONNECT, ACCEPT, SEND, RECV and SHUTDOWN over loopback TCP.
func TestConnectSendRecvShutdown(t *testing.T) {
	r := newTestRing(t)
	requireOp(t, r, OpShutdown)
	lfd, addr := listener(t)
	cfd, err := unix.Socket(unix.AF_INET, unix.SOCK_STREAM|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		t.Fatal(err)
	}
	closeLater(t, cfd)
	sa := &unix.RawSockaddrInet4{Family: unix.AF_INET, Port: uint16(addr.Port>>8 | addr.Port<<8&0xff00), Addr: addr.Addr}
	var peer unix.RawSockaddrAny
	peerLen := uint32(unsafe.Sizeof(peer))
	prep(t, r, 1, func(s *SQE) { s.PrepConnect(cfd, unsafe.Pointer(sa), uint32(unsafe.Sizeof(*sa))) })
	prep(t, r, 2, func(s *SQE) { s.PrepAccept(lfd, &peer, &peerLen, unix.SOCK_CLOEXEC) })
	m := byUserData(collect(t, r, 2))
	if m[1].Res != 0 || m[2].Res < 0 {
		t.Fatalf("connect/accept: %+v", m)
	}
	sfd := int(m[2].Res)
	closeLater(t, sfd)
	if peer.Addr.Family != unix.AF_INET {
		t.Errorf("peer family %d", peer.Addr.Family)
	}
	msg := []byte("hello")
	got := make([]byte, 16)
	prep(t, r, 3, func(s *SQE) { s.PrepSend(cfd, msg, 0) }).SetFlags(SQEIOLink)
	prep(t, r, 4, func(s *SQE) { s.PrepShutdown(cfd, unix.SHUT_WR) })
	prep(t, r, 5, func(s *SQE) { s.PrepRecv(sfd, got, 0) })
	m = byUserData(collect(t, r, 3))
	if m[3].Res != 5 || m[4].Res != 0 || m[5].Res != 5 || string(got[:5]) != "hello" {
		t.Fatalf("send/shutdown/recv: %+v data %q", m, got[:5])
	}
	prep(t, r, 6, func(s *SQE) { s.PrepRecv(sfd, got, 0) })
	if c := collect(t, r, 1)[0]; c.Res != 0 {
		t.Errorf("recv after peer shutdown: Res %d, want 0 (EOF)", c.Res)
	}
}
