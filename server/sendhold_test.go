//go:build linux

package server

// Replies to a message that the multishot recv delivers in two completions (the first with
// Completion.SockNonempty) go out in one send: the turn's end sends what both completions'
// OnData calls wrote.

import (
	"io"
	"net"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/ringev/ringev/internal/testutil"
	"golang.org/x/sys/unix"
)

// startMultishotRESP starts a RESP server on one uring loop, requests API, multishot recv; the
// test skips, naming the feature, where io_uring or the multishot recv is missing.
func startMultishotRESP(t *testing.T) *Engine {
	t.Helper()
	if !slices.Contains(usableBackends(t), "uring") {
		t.Skip("io_uring cannot be used here (the uring backend)")
	}
	srv, err := listenServer(t, srvConfig{Handler: respServer(), Backend: "uring", API: APIRequests, Recv: RecvMultishot})
	if err != nil {
		testutil.SkipIfFeatureMissing(t, err) // IORING_RECV_MULTISHOT, Linux 6.0
		t.Fatal(err)
	}
	t.Cleanup(func() { stopServer(t, srv) })
	return srv
}

// TestPipelineSplitAtABufferEndIsAnsweredInOneSend: with incremental buffer consumption
// (IOU_PBUF_RING_INC, Linux 6.12) a pipeline that reaches past the end of the group buffer in
// use arrives in two recv completions, the first with SockNonempty set; the first part's replies
// go with the rest's, at the turn's end: one send per pipeline, 100 for 100.
func TestPipelineSplitAtABufferEndIsAnsweredInOneSend(t *testing.T) {
	srv := startMultishotRESP(t)
	l := srv.Loops()[0]
	g := l.drv.(*connReqs).group
	if !g.Incremental() {
		t.Skip("the group's buffers are not consumed incrementally (IOU_PBUF_RING_INC, Linux 6.12): no message is split at a buffer's end")
	}
	const depth = 16
	req := strings.Repeat("PING\r\n", depth)
	pipelines := 2*g.Size()/len(req) + 4 // past the ends of the first two group buffers
	want := strings.Repeat("+PONG\r\n", depth)
	c := dial(t, srv)
	got := make([]byte, len(want))
	for i := range pipelines {
		if _, err := c.Write([]byte(req)); err != nil {
			t.Fatalf("pipeline %d: write: %v", i, err)
		}
		if _, err := io.ReadFull(c, got); err != nil || string(got) != want {
			t.Fatalf("pipeline %d: got %q, %v; want %d PONGs", i, got, err, depth)
		}
	}
	c.Close()          // (an open one would make the shutdown linger for a second)
	stopServer(t, srv) // the loop's counter is read once it has ended
	if l.sends != uint64(pipelines) {
		t.Errorf("%d sends for %d pipelines of %d bytes (group buffers of %d bytes), want one each", l.sends, pipelines, len(req), g.Size())
	}
}

// TestQuitInAHeldCompletionIsAnswered: a QUIT in a recv completion that has SockNonempty set
// (more of the pipeline follows it in the socket) is answered with +OK and the connection is
// closed, as it is when no more follows: the replies held for the next completion are sent
// even though, the connection closing, that completion's input is dropped.
func TestQuitInAHeldCompletionIsAnswered(t *testing.T) {
	srv := startMultishotRESP(t)
	c := dial(t, srv)
	defer c.Close()
	// QUIT, then more than a group buffer of PINGs: the first completion (QUIT's) leaves data
	// in the socket.
	req := "QUIT\r\n" + strings.Repeat("PING\r\n", 2*recvGroup(srv).Size()/6)
	if _, err := c.Write([]byte(req)); err != nil {
		t.Fatalf("write: %v", err)
	}
	got, err := io.ReadAll(c) // +OK, then the server's EOF (within ioTimeout, dial's deadline)
	if err != nil || string(got) != "+OK\r\n" {
		t.Fatalf("got %q, %v; want +OK and EOF", got, err)
	}
}

// TestPingFollowedByAnUrgentByteIsAnswered: a PING followed by one byte of TCP urgent data
// (send(2) with MSG_OOB, SO_OOBINLINE off: telnet's Synch) arrives in a recv completion with
// SockNonempty set, since the kernel counts the urgent byte as queued (tcp_inq); but the next
// recv skips that byte and finds nothing, so no completion comes at once. The PONG is sent
// all the same, not held until the client sends more.
func TestPingFollowedByAnUrgentByteIsAnswered(t *testing.T) {
	srv := startMultishotRESP(t)
	for i := range 20 { // the PING and the urgent byte must arrive before the recv runs: try a few
		c := dial(t, srv)
		tc := c.(*net.TCPConn)
		raw, err := tc.SyscallConn()
		if err != nil {
			t.Fatal(err)
		}
		var serr error
		err = raw.Write(func(fd uintptr) bool {
			if serr = unix.Sendto(int(fd), []byte("PING\r\n"), 0, nil); serr == nil {
				serr = unix.Sendto(int(fd), []byte("!"), unix.MSG_OOB, nil)
			}
			return true
		})
		if err != nil || serr != nil {
			t.Fatalf("write: %v, %v", err, serr)
		}
		c.SetReadDeadline(time.Now().Add(time.Second))
		got := make([]byte, len("+PONG\r\n"))
		if _, err := io.ReadFull(c, got); err != nil || string(got) != "+PONG\r\n" {
			t.Fatalf("connection %d: got %q, %v; want +PONG", i, got, err)
		}
		c.Close()
	}
}
