//go:build linux

package server

// Tests of Conn.RemoteAddr after the connection has closed.

import (
	"net"
	"testing"
	"time"
)

// addrAtClose records RemoteAddr in OnClose, and asks for it in OnOpen when early is set.
type addrAtClose struct {
	early bool
	got   chan string
}

func (h *addrAtClose) OnOpen(c *Conn) {
	if h.early {
		c.RemoteAddr()
	}
}

func (h *addrAtClose) OnData(c *Conn) { c.Next(-1) }

func (h *addrAtClose) OnClose(c *Conn, err error) {
	s := "<nil>"
	if a := c.RemoteAddr(); a != nil {
		s = a.String()
	}
	h.got <- s
}

// TestConnRemoteAddrInOnCloseWhenAskedInOnOpen: RemoteAddr asked in OnOpen is still there in
// OnClose, after the socket closed, as its doc comment says.
func TestConnRemoteAddrInOnCloseWhenAskedInOnOpen(t *testing.T) {
	eachBackendRequests(t, func(t *testing.T, s setup) {
		h := &addrAtClose{early: true, got: make(chan string, 1)}
		e := startEngine(t, h, s.opts()...)
		c := dialEngine(t, e)
		local := c.LocalAddr().String()
		c.Close()
		select {
		case got := <-h.got:
			if got != local {
				t.Errorf("RemoteAddr in OnClose %s, want the client's %s", got, local)
			}
		case <-time.After(waitFor):
			t.Fatal("OnClose not called")
		}
	})
}

// addrAtCloseAfter serves an addrAtClose that does not ask for the address before, on network
// and addr, connects, ends the client's side with end, and returns RemoteAddr's string in
// OnClose and the client's address.
func addrAtCloseAfter(t *testing.T, s setup, network, addr string, end func(c *net.TCPConn)) (got, want string) {
	t.Helper()
	h := &addrAtClose{got: make(chan string, 1)}
	e := startEngineOn(t, network, addr, h, s.opts()...)
	c := dialEngine(t, e)
	end(c.(*net.TCPConn))
	select {
	case got = <-h.got:
	case <-time.After(waitFor):
		t.Fatal("OnClose not called")
	}
	return got, c.LocalAddr().String()
}

// TestConnRemoteAddrInOnClose: RemoteAddr in OnClose is the peer's address, though it was not
// asked while the socket was open (the client closed its side).
func TestConnRemoteAddrInOnClose(t *testing.T) {
	eachSetup(t, func(t *testing.T, s setup) {
		got, want := addrAtCloseAfter(t, s, "tcp", "127.0.0.1:0", func(c *net.TCPConn) { c.Close() })
		if got != want {
			t.Errorf("RemoteAddr in OnClose %s, want the client's %s", got, want)
		}
	})
}

// TestConnRemoteAddrInOnCloseAfterAReset: RemoteAddr in OnClose is the peer's address after
// the peer reset the connection too (getpeername(2) then fails with ENOTCONN), over IPv4 and
// IPv6.
func TestConnRemoteAddrInOnCloseAfterAReset(t *testing.T) {
	addrs := []string{"127.0.0.1:0"}
	if l, err := net.Listen("tcp6", "[::1]:0"); err == nil {
		l.Close()
		addrs = append(addrs, "[::1]:0")
	}
	eachSetup(t, func(t *testing.T, s setup) {
		for _, addr := range addrs {
			got, want := addrAtCloseAfter(t, s, "tcp", addr, func(c *net.TCPConn) {
				c.SetLinger(0)
				c.Close()
			})
			if got != want {
				t.Errorf("on %s: RemoteAddr in OnClose after a reset %s, want the client's %s", addr, got, want)
			}
		}
	})
}
