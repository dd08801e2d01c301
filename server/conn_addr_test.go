//go:build linux

package server

// Tests of Conn.RemoteAddr after the connection has closed.

import (
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
