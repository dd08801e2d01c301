//go:build linux

package ringev_test

// Tests of requests whose peer goes away: a close, a reset, a half-close or a refused connect
// ends them with the errno.

import (
	"errors"
	"testing"
	"time"

	"github.com/ringev/ringev"
	"github.com/ringev/ringev/internal/testutil"
	"golang.org/x/sys/unix"
)

// TestRequestSendToClosedPeerEndsWithEPIPE: Send and Write on a socket whose peer has closed end
// with EPIPE (or ECONNRESET) in the callback; the process gets no SIGPIPE that kills it.
func TestRequestSendToClosedPeerEndsWithEPIPE(t *testing.T) {
	eachBackend(t, ringev.Backends(), func(t *testing.T, backend string) {
		a, b := testutil.Socketpair(t)
		l := newLoop(t, backend)
		testutil.Close(t, b)
		for _, op := range []string{"send", "write"} {
			var got error
			done := false
			cb := func(c *ringev.Completion) { got, done = c.Err, true }
			var err error
			if op == "send" {
				_, err = l.Send(a, []byte("x"), 0, cb, 0)
			} else {
				_, err = l.Write(a, []byte("x"), -1, cb, 0)
			}
			if err != nil {
				t.Fatal(err)
			}
			untilFor(t, l, deadline, op, func() bool { return done })
			if !errors.Is(got, unix.EPIPE) && !errors.Is(got, unix.ECONNRESET) {
				t.Errorf("%s to a closed peer: %v, want EPIPE", op, got)
			}
		}
	})
}

// TestRequestConnectRefusedEndsWithECONNREFUSED: Connect to a closed TCP port ends with
// ECONNREFUSED on every backend, and CloseFd after it closes the socket.
func TestRequestConnectRefusedEndsWithECONNREFUSED(t *testing.T) {
	eachBackend(t, ringev.Backends(), func(t *testing.T, backend string) {
		// a port nobody listens on: bind one, do not listen
		p := testutil.TCPSocket(t)
		if err := unix.Bind(p, &unix.SockaddrInet4{Addr: [4]byte{127, 0, 0, 1}}); err != nil {
			t.Fatal(err)
		}
		sa, err := unix.Getsockname(p)
		if err != nil {
			t.Fatal(err)
		}
		s := testutil.TCPSocket(t)
		l := newLoop(t, backend)
		var got error
		done := false
		must(t)(l.Connect(s, sa, func(c *ringev.Completion) { got, done = c.Err, true }, 0))
		untilFor(t, l, deadline, "Connect", func() bool { return done })
		if !errors.Is(got, unix.ECONNREFUSED) {
			t.Errorf("Connect to a closed port: %v, want ECONNREFUSED", got)
		}
		closed := false
		must(t)(l.CloseFd(s, func(*ringev.Completion) { closed = true }, 0))
		testutil.HandOver(t, s)
		untilFor(t, l, deadline, "CloseFd", func() bool { return closed })
		if !testutil.IsClosed(s) {
			t.Fatal("CloseFd after a refused Connect left the socket open")
		}
	})
}

// TestRequestSendWaitingForRoomEndsOnPeerReset: a Send that waits for room (the peer reads
// nothing) completes with ECONNRESET or EPIPE once the peer resets the connection: the
// emulation's wait for Write and errors (hangup) learns of the reset.
func TestRequestSendWaitingForRoomEndsOnPeerReset(t *testing.T) {
	eachBackend(t, ringev.Backends(), func(t *testing.T, backend string) {
		peer, a := testutil.TCPPair(t, 32<<10)
		fillTCP(t, a)
		l := newLoop(t, backend)
		var snd recorder
		must(t)(l.Send(a, make([]byte, 64<<10), 0, snd.cb, 1))
		settle(t, l, 20*time.Millisecond, 3)
		if snd.n() != 0 {
			t.Fatalf("the send completed before the peer read: N %d err %v", snd.got[0].N, snd.got[0].Err)
		}
		reset(t, peer)
		until(t, l, func() bool { return snd.n() > 0 })
		sendErr(t, &snd, "send to a reset peer")
	})
}

// TestRequestWriteWaitingOnFullPipeEndsWithEPIPEWhenReaderCloses: a Write waiting for room in a
// full pipe completes with EPIPE once the pipe's read end is closed (SIGPIPE is ignored for fds
// other than 1 and 2 by the Go runtime).
func TestRequestWriteWaitingOnFullPipeEndsWithEPIPEWhenReaderCloses(t *testing.T) {
	eachBackend(t, ringev.Backends(), func(t *testing.T, backend string) {
		r, w := testutil.Pipe(t)
		testutil.Fill(t, w)
		l := newLoop(t, backend)
		var wr recorder
		must(t)(l.Write(w, make([]byte, 4096), -1, wr.cb, 1))
		settle(t, l, 20*time.Millisecond, 3)
		if wr.n() != 0 {
			t.Fatalf("the write completed on a full pipe: N %d err %v", wr.got[0].N, wr.got[0].Err)
		}
		testutil.Close(t, r)
		until(t, l, func() bool { return wr.n() > 0 })
		if c := wr.got[0]; !errors.Is(c.Err, unix.EPIPE) {
			t.Fatalf("write to a pipe without a reader: N %d err %v, want EPIPE", c.N, c.Err)
		}
	})
}

// TestRequestSendBesideUserReadEventEndsOnHalfCloseThenReset: a user fd event watching Read|Error
// and a Send waiting for room share a TCP socket. The peer half-closes (the user's handler reads
// end of file and disarms itself), the loop sleeps, then the peer resets: the Send completes
// with ECONNRESET or EPIPE, and the user's handler does not run again.
func TestRequestSendBesideUserReadEventEndsOnHalfCloseThenReset(t *testing.T) {
	eachBackend(t, ringev.Backends(), func(t *testing.T, backend string) {
		peer, a := testutil.TCPPair(t, 32<<10)
		fillTCP(t, a)
		l := newLoop(t, backend)
		runs := 0
		addFd(t, l, a, ringev.Read|ringev.Error, func(ev *ringev.FdEvent, f ringev.Flags) {
			runs++
			var b [16]byte
			if n, err := unix.Read(ev.Fd(), b[:]); n == 0 && err == nil {
				ev.SetFlags(0)
			}
		})
		var snd recorder
		must(t)(l.Send(a, make([]byte, 64<<10), 0, snd.cb, 1))
		if err := unix.Shutdown(peer, unix.SHUT_WR); err != nil {
			t.Fatal(err)
		}
		until(t, l, func() bool { return runs > 0 })
		settle(t, l, 50*time.Millisecond, 3)
		if snd.n() != 0 {
			t.Fatalf("the send completed though the peer read nothing: N %d err %v", snd.got[0].N, snd.got[0].Err)
		}
		reset(t, peer)
		until(t, l, func() bool { return snd.n() > 0 })
		sendErr(t, &snd, "send beside a user event, peer half-closed then reset")
		settle(t, l, 20*time.Millisecond, 3)
		if runs != 1 {
			t.Fatalf("the user's handler ran %d times, want 1 (it disarmed itself at end of file)", runs)
		}
	})
}

// TestRequestRecvAndSendOnHalfClosedThenResetSocket: a Recv and a Send waiting for room on one TCP
// socket: the peer's half-close completes the Recv with end of file, the Send waits (the loop
// sleeps), and the peer's reset then completes it with ECONNRESET or EPIPE.
func TestRequestRecvAndSendOnHalfClosedThenResetSocket(t *testing.T) {
	eachBackend(t, ringev.Backends(), func(t *testing.T, backend string) {
		peer, a := testutil.TCPPair(t, 32<<10)
		fillTCP(t, a)
		l := newLoop(t, backend)
		var rcv, snd recorder
		must(t)(l.Recv(a, make([]byte, 16), 0, rcv.cb, 1))
		must(t)(l.Send(a, make([]byte, 64<<10), 0, snd.cb, 2))
		if err := unix.Shutdown(peer, unix.SHUT_WR); err != nil {
			t.Fatal(err)
		}
		until(t, l, func() bool { return rcv.n() > 0 })
		wantOne(t, &rcv, 0)
		settle(t, l, 50*time.Millisecond, 3)
		if snd.n() != 0 {
			t.Fatalf("the send completed though the peer read nothing: N %d err %v", snd.got[0].N, snd.got[0].Err)
		}
		reset(t, peer)
		until(t, l, func() bool { return snd.n() > 0 })
		sendErr(t, &snd, "send after the peer half-closed, then reset")
	})
}

// fillTCP fills the TCP socket a until its send queue stays full until the peer reads: a write
// finds no room, the peer advertises a zero window (TCP_INFO's tcpi_snd_wnd, Linux 5.4) and
// bytes wait unsent. Loopback moves data to the peer's receive queue after a write returns, so
// this can take several fills.
func fillTCP(t *testing.T, a int) {
	t.Helper()
	end := time.Now().Add(deadline)
	for {
		n := testutil.Fill(t, a)
		info, err := unix.GetsockoptTCPInfo(a, unix.IPPROTO_TCP, unix.TCP_INFO)
		if err != nil {
			t.Fatalf("getsockopt(TCP_INFO) of fd %d: %v", a, err)
		}
		if n == 0 && info.Snd_wnd == 0 && info.Notsent_bytes > 0 {
			return
		}
		if time.Now().After(end) {
			t.Fatalf("fd %d does not fill up: the peer's window is %d bytes, %d bytes unsent", a, info.Snd_wnd, info.Notsent_bytes)
		}
		time.Sleep(time.Millisecond)
	}
}

// reset closes f with SO_LINGER 0: its TCP peer gets a reset (RST).
func reset(t *testing.T, f int) {
	t.Helper()
	if err := unix.SetsockoptLinger(f, unix.SOL_SOCKET, unix.SO_LINGER, &unix.Linger{Onoff: 1, Linger: 0}); err != nil {
		t.Fatal(err)
	}
	testutil.Close(t, f)
}

// sendErr fails the test unless c is one completion with an error (a send to a reset or closed
// peer: ECONNRESET or EPIPE).
func sendErr(t *testing.T, r *recorder, what string) {
	t.Helper()
	if r.n() != 1 {
		t.Fatalf("%s: %d completions, want 1", what, r.n())
	}
	if c := r.got[0]; !errors.Is(c.Err, unix.ECONNRESET) && !errors.Is(c.Err, unix.EPIPE) {
		t.Fatalf("%s: N %d err %v, want ECONNRESET or EPIPE", what, c.N, c.Err)
	}
}
