//go:build linux

package server

// Tests of the fds an engine holds: connections that their peers drop leave none behind.

import (
	"fmt"
	"net"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/ringev/ringev/internal/testutil"
)

// TestEngineDroppedConnectionsLeaveNoFd: 10,000 connections opened, sent half a request and
// dropped (half with a FIN, half with a reset), 1,000 open at a time, leave no connection and no
// fd behind, and the engine's end leaves no fd or goroutine; on every backend, with each driver,
// for RESP and HTTP.
func TestEngineDroppedConnectionsLeaveNoFd(t *testing.T) {
	raiseNofile(t, 4096)
	forEachBackendDriver(t, true, func(t *testing.T, cfg srvConfig) {
		for _, p := range []struct {
			name        string
			proto       func() Handler
			half, whole string
		}{
			{"resp", respServer, "*3\r\n$3\r\nSET\r\n$1\r\nk", "PING\r\n"},
			{"http", httpServer, "GET /plaintext HTTP/1.1\r\nHost: 127.", wrkRequest},
		} {
			t.Run(p.name, func(t *testing.T) {
				testutil.NoLeaks(t)
				cfg.Handler = p.proto()
				srv := startServer(t, cfg)
				// The process's first dial opens the Go runtime's poller (an epoll fd and an
				// eventfd): one served connection before the count keeps them out of it.
				servedAfter(t, srv, p.whole)
				waitConns(t, srv, 0)
				before := testutil.OpenFds(t)
				for batch := range 10 {
					dropConns(t, srv, p.half, 1000, batch)
					// Until the server has accepted them, dropped connections wait in the
					// listener's backlog, where they count in no Conns and hold no fd of this
					// process: Conns 0 says nothing. The backlog is a FIFO and the engine one
					// loop, so a connection made now and served shows the whole batch accepted
					// (and the backlog stays under 1,000, far from its 4,096).
					servedAfter(t, srv, p.whole)
				}
				waitConns(t, srv, 0) // every connection was accepted: 0 now means every one closed
				deadline := time.Now().Add(waitFor)
				for len(testutil.FdsSince(t, before)) > 0 && time.Now().Before(deadline) {
					time.Sleep(time.Millisecond) // the clients' closes, on the runtime's poller
				}
				if fds := testutil.FdsSince(t, before); len(fds) > 0 {
					t.Errorf("fds %s open after 10,000 dropped connections (%d before)", describeFds(fds), len(before))
				}
			})
		}
	})
}

// dropConns opens n connections to srv, sends half on each, and closes them: the even ones
// with a reset (SO_LINGER 0), the odd ones with a FIN. batch names the batch in failures.
func dropConns(t *testing.T, srv *Engine, half string, n, batch int) {
	t.Helper()
	conns := make([]*net.TCPConn, 0, n)
	defer func() {
		for _, c := range conns {
			c.Close()
		}
	}()
	for i := range n {
		c, err := net.DialTimeout("tcp", srv.Addr().String(), ioTimeout)
		if err != nil {
			t.Fatalf("batch %d, dial %d: %v", batch, i, err)
		}
		tc := c.(*net.TCPConn)
		conns = append(conns, tc)
		tc.SetDeadline(time.Now().Add(ioTimeout))
		if _, err := tc.Write([]byte(half)); err != nil {
			t.Fatalf("batch %d, write %d: %v", batch, i, err)
		}
	}
	for i, c := range conns {
		if i%2 == 0 {
			c.SetLinger(0) // close with a reset
		}
		c.Close() // nothing else uses c: its fd is closed when Close returns
	}
	conns = nil
}

// servedAfter dials srv, sends req (a whole request) and waits for the first byte of its
// reply, then closes the connection: the server has accepted every connection made before.
func servedAfter(t *testing.T, srv *Engine, req string) {
	t.Helper()
	c, err := net.DialTimeout("tcp", srv.Addr().String(), ioTimeout)
	if err != nil {
		t.Fatalf("dial %s: %v", srv.Addr(), err)
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(ioTimeout))
	if _, err := c.Write([]byte(req)); err != nil {
		t.Fatalf("write: %v", err)
	}
	if _, err := c.Read(make([]byte, 1)); err != nil {
		t.Fatalf("no reply to %q: %v", req, err)
	}
}

// describeFds names each fd with what it is (/proc/self/fd's link: socket:[inode],
// anon_inode:[eventpoll], ...), for a failure's message.
func describeFds(fds []int) string {
	var b strings.Builder
	for i, fd := range fds {
		if i > 0 {
			b.WriteString(", ")
		}
		link, err := os.Readlink("/proc/self/fd/" + strconv.Itoa(fd))
		if err != nil {
			link = "closed"
		}
		fmt.Fprintf(&b, "%d (%s)", fd, link)
	}
	return b.String()
}
