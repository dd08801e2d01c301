//go:build linux

package server

// Tests of Conn.Dial (a dial for a connection: a proxy's upstream for its client), each on
// every backend and driver.

import (
	"context"
	"errors"
	"net"
	"strings"
	"testing"
	"time"
)

// dialingHandler is an engine's Handler whose OnOpen dials addr for the connection (Conn.Dial,
// under ctx, the dialed connection served by a recorder); OnData records lines. What it sees
// goes to events, in order: "open", "done <error or ok>", "data <line>", with the dialed
// connection's Context and PauseRead's state at done.
type dialingHandler struct {
	ctx    context.Context
	addr   string
	pause  bool // OnOpen calls PauseRead before Dial
	events chan string
	dialed chan dialResult
}

// dialResult is what done was given, and what it saw.
type dialResult struct {
	c, u   *Conn
	err    error
	uCtx   any  // u's Context at done
	held   bool // c is not read at done
	dialed error
}

func newDialingHandler(ctx context.Context, addr string) *dialingHandler {
	return &dialingHandler{ctx: ctx, addr: addr, events: make(chan string, 100), dialed: make(chan dialResult, 1)}
}

func (h *dialingHandler) OnOpen(c *Conn) {
	h.events <- "open"
	if h.pause {
		c.PauseRead()
	}
	err := c.Dial(h.ctx, "tcp", h.addr, newRecorder(), func(u *Conn, err error) {
		r := dialResult{c: c, u: u, err: err, held: c.fl&cfHeld != 0}
		if u != nil {
			r.uCtx = u.Context()
		}
		h.events <- "done"
		h.dialed <- r
	})
	if err != nil {
		h.dialed <- dialResult{c: c, dialed: err}
	}
}

func (h *dialingHandler) OnData(c *Conn) {
	if b, _ := c.Next(-1); len(b) > 0 {
		h.events <- "data " + strings.TrimSpace(string(b))
	}
}

// result waits for done.
func (h *dialingHandler) result(t *testing.T) dialResult {
	t.Helper()
	select {
	case r := <-h.dialed:
		if r.dialed != nil {
			t.Fatalf("Conn.Dial: %v", r.dialed)
		}
		return r
	case <-time.After(waitFor):
		t.Fatalf("Conn.Dial's done not called within %v", waitFor)
		return dialResult{}
	}
}

// event waits for the next event.
func (h *dialingHandler) event(t *testing.T) string {
	t.Helper()
	select {
	case ev := <-h.events:
		return ev
	case <-time.After(waitFor):
		t.Fatalf("no event within %v", waitFor)
		return ""
	}
}

// TestConnDialReadsTheConnOnlyOnceTheDialHasEnded: bytes a client sends while the dial for it
// is under way reach OnData after done, not before.
func TestConnDialReadsTheConnOnlyOnceTheDialHasEnded(t *testing.T) {
	eachSetup(t, func(t *testing.T, s setup) {
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		h := newDialingHandler(ctx, fullBacklog(t)) // the connect hangs until cancel
		c := dialEngine(t, startEngine(t, h, s.opts()...))
		if ev := h.event(t); ev != "open" {
			t.Fatalf("first event %q, want open", ev)
		}
		if _, err := c.Write([]byte("hello\n")); err != nil { // in the server's socket on return (loopback)
			t.Fatal(err)
		}
		cancel()
		if r := h.result(t); !errors.Is(r.err, context.Canceled) {
			t.Errorf("done got (%p, %v), want context.Canceled", r.u, r.err)
		}
		for _, want := range []string{"done", "data hello"} {
			if ev := h.event(t); ev != want {
				t.Fatalf("event %q, want %q (the input waits for the dial)", ev, want)
			}
		}
	})
}

// TestConnDialEndsWhenTheConnCloses: a client that resets while the dial for it hangs ends the
// dial: done gets an error naming the address and wrapping context.Canceled, with no deadline
// of its own.
func TestConnDialEndsWhenTheConnCloses(t *testing.T) {
	eachSetup(t, func(t *testing.T, s setup) {
		addr := fullBacklog(t)
		h := newDialingHandler(context.Background(), addr)
		c := dialEngine(t, startEngine(t, h, s.opts()...))
		h.event(t) // open
		c.(*net.TCPConn).SetLinger(0)
		c.Close() // a reset
		if r := h.result(t); r.u != nil || !errors.Is(r.err, context.Canceled) || !strings.Contains(r.err.Error(), addr) {
			t.Errorf("done got (%p, %v), want an error naming %s and wrapping context.Canceled", r.u, r.err, addr)
		}
	})
}

// TestConnDialGivesTheDialedConnTheConnAsContext: the dialed connection's Context is the
// connection it was dialed for, from the start, and the latter is read again at done.
func TestConnDialGivesTheDialedConnTheConnAsContext(t *testing.T) {
	eachSetup(t, func(t *testing.T, s setup) {
		h := newDialingHandler(context.Background(), echoPeer(t, "tcp", "127.0.0.1:0").Addr().String())
		dialEngine(t, startEngine(t, h, s.opts()...))
		r := h.result(t)
		if r.err != nil || r.uCtx != r.c {
			t.Errorf("done got (%p, %v) with the dialed Conn's Context %v, want the client's Conn %p", r.u, r.err, r.uCtx, r.c)
		}
		if r.held {
			t.Error("the client is not read at done")
		}
	})
}

// TestConnDialKeepsPauseRead: a connection paused by its handler (PauseRead) before the dial
// for it stays paused at done.
func TestConnDialKeepsPauseRead(t *testing.T) {
	eachSetup(t, func(t *testing.T, s setup) {
		h := newDialingHandler(context.Background(), echoPeer(t, "tcp", "127.0.0.1:0").Addr().String())
		h.pause = true
		dialEngine(t, startEngine(t, h, s.opts()...))
		if r := h.result(t); r.err != nil || !r.held {
			t.Errorf("done got (%p, %v), held %v; want the client still paused", r.u, r.err, r.held)
		}
	})
}
