//go:build linux

package server

// Tests of the engine's budget for what its connections hold (WithMaxBuffered): past it, the
// connection that holds the most is closed with ErrEngineFull, and the others are served.

import (
	"errors"
	"net"
	"runtime/debug"
	"strings"
	"testing"
	"time"

	"github.com/ringev/ringev/internal/testutil"
)

// floodCloser is a flooder that reports the reason each connection closed.
type floodCloser struct {
	*flooder
	closed chan error
}

func (f *floodCloser) OnClose(c *Conn, err error) { f.closed <- err }

// TestEngineBudgetShedsTheConnectionHoldingTheMostOutput: with a budget of 512 KiB, 1 MiB
// written to a client that does not read closes that connection with ErrEngineFull, and
// another client is still answered.
func TestEngineBudgetShedsTheConnectionHoldingTheMostOutput(t *testing.T) {
	eachSetup(t, func(t *testing.T, s setup) {
		f := &floodCloser{flooder: &flooder{}, closed: make(chan error, 2)}
		e := startEngine(t, f, append(s.opts(), WithMaxBuffered(512<<10))...)
		stalled, other := dialEngine(t, e), dialEngine(t, e)
		stalled.(*net.TCPConn).SetReadBuffer(32 << 10)
		stalled.Write([]byte("flood\n"))
		select {
		case err := <-f.closed:
			if !errors.Is(err, ErrEngineFull) {
				t.Errorf("OnClose err %v, want ErrEngineFull", err)
			}
		case <-time.After(waitFor):
			t.Fatalf("no connection closed within %v of 1 MiB held past a 512 KiB budget (%d bytes held)", waitFor, e.Buffered())
		}
		stillAnswered(t, other)
	})
}

// TestEngineBudgetShedsTheConnectionHoldingTheMostInput: with a budget of 512 KiB, a client
// that sends 1 MiB its handler leaves unconsumed (a line without its end) is closed with
// ErrEngineFull, and another client is still answered.
func TestEngineBudgetShedsTheConnectionHoldingTheMostInput(t *testing.T) {
	eachSetup(t, func(t *testing.T, s setup) {
		r := newRecorder()
		e := startEngine(t, r, append(s.opts(), WithMaxBuffered(512<<10))...)
		greedy, other := dialEngine(t, e), dialEngine(t, e)
		r.next(t)
		r.next(t)
		sent := make(chan struct{})
		go func() {
			defer close(sent)
			greedy.Write([]byte(strings.Repeat("x", 1<<20))) // fails once the server resets it
		}()
		if _, err := r.closedWith(t); !errors.Is(err, ErrEngineFull) {
			t.Errorf("OnClose err %v, want ErrEngineFull", err)
		}
		<-sent
		stillAnswered(t, other)
	})
}

// stillAnswered fails the test unless a line sent on c comes back.
func stillAnswered(t *testing.T, c net.Conn) {
	t.Helper()
	c.Write([]byte("still here\n"))
	if got := readN(t, c, 11); got != "still here\n" {
		t.Errorf("the other client got %q", got)
	}
}

// TestEngineBudgetDefaultIsAnEighthOfGOMEMLIMIT: with GOMEMLIMIT at 64 MiB (below the machine's
// RAM and any cgroup limit a test machine has), an engine's default budget is 8 MiB.
func TestEngineBudgetDefaultIsAnEighthOfGOMEMLIMIT(t *testing.T) {
	testutil.NoLeaks(t)
	defer debug.SetMemoryLimit(debug.SetMemoryLimit(64 << 20))
	e := startEngine(t, newRecorder())
	if got := e.o.maxBuffered; got != 8<<20 {
		t.Errorf("default budget %d bytes with GOMEMLIMIT at 64 MiB, want %d", got, 8<<20)
	}
}

// TestEngineBudgetCountsNothingOnceConnectionsClose: after connections that held input (a line
// without its end), output their clients did not read (1 MiB), and output written from another
// goroutine have all closed, their loop counts no byte held: what the connections held was
// taken off the count as it was sent, consumed or dropped.
func TestEngineBudgetCountsNothingOnceConnectionsClose(t *testing.T) {
	eachSetup(t, func(t *testing.T, s setup) {
		f := &floodCloser{flooder: &flooder{}, closed: make(chan error, 10)}
		e := startEngine(t, f, s.opts()...)
		flooded, partial, echoed := dialEngine(t, e), dialEngine(t, e), dialEngine(t, e)
		flooded.Write([]byte("flood\n"))
		partial.Write([]byte("no end of line"))
		echoed.Write([]byte("one\n"))
		readN(t, echoed, 4)
		eventually(t, "the flood written", func() bool { return strings.Contains(f.log(), "flood") })
		l := e.Loops()[0]
		var conns []*Conn
		onLoop(t, l, func() {
			for _, c := range l.conns.all {
				if c == nil {
					continue
				}
				conns = append(conns, c)
			}
		})
		for _, c := range conns {
			if _, err := c.WriteString("from another goroutine\n"); err != nil {
				t.Error(err)
			}
		}
		for _, c := range []net.Conn{flooded, partial, echoed} {
			c.Close()
		}
		eventually(t, "the connections closed", func() bool { return e.Conns() == 0 })
		var held int64
		onLoop(t, l, func() { held = l.bufHeld + l.bufAsync.Load() })
		if held != 0 {
			t.Errorf("the loop counts %d bytes held once its connections have closed, want 0", held)
		}
	})
}

// lendCounter forwards the input of each connection but the first to the first, and sends
// what each Forward did to seen: the bytes moved, whether it lent the recv's buffer (a send in
// flight from the group: dst.lentBid), and the loop's count of bytes held right after it.
type lendCounter struct {
	forwarder
	seen chan lendSeen
}

type lendSeen struct {
	n    int
	lent bool
	held int64
}

func (f *lendCounter) OnData(c *Conn) {
	dst := forwardsTo(c)
	if dst == nil {
		return
	}
	n, _ := c.Forward(dst)
	f.seen <- lendSeen{n, dst.lentBid != 0, c.l.bufHeld}
}

// TestEngineBudgetCountsNoSendLentFromTheRecvGroup: a Forward that sends from the recv's group
// buffer (the requests driver's multishot recv) adds nothing to the engine's count of bytes
// held, which the group's buffers are not; one that copies counts the copy until it is sent.
// Once the connections have closed, the count is 0.
func TestEngineBudgetCountsNoSendLentFromTheRecvGroup(t *testing.T) {
	eachSetup(t, func(t *testing.T, s setup) {
		f := &lendCounter{seen: make(chan lendSeen, 100)}
		e, a, b := firstAndSource(t, f, f.hasFirst, s.opts()...)
		want := "lent or copied\n"
		forwardedTo(t, b, a, want)
		lent := false
		for moved := 0; moved < len(want); {
			select {
			case x := <-f.seen:
				moved += x.n
				lent = lent || x.lent
				if x.lent && x.held != 0 {
					t.Errorf("after a Forward that lent the recv's buffer (%d bytes), the loop counts %d bytes held, want 0", x.n, x.held)
				}
				if !x.lent && x.held != int64(x.n) {
					t.Errorf("after a Forward that copied %d bytes, the loop counts %d bytes held, want %d", x.n, x.held, x.n)
				}
			case <-time.After(waitFor):
				t.Fatalf("Forward moved %d bytes within %v, want %d", moved, waitFor, len(want))
			}
		}
		if s.backend == "uring" && s.api == APIRequests && s.recv != RecvPerConn && !lent {
			t.Error("no Forward lent the recv's buffer on the requests driver's multishot recv")
		}
		a.Close()
		b.Close()
		eventually(t, "the connections closed", func() bool { return e.Conns() == 0 })
		l := e.Loops()[0]
		var held int64
		onLoop(t, l, func() { held = l.bufHeld + l.bufAsync.Load() })
		if held != 0 {
			t.Errorf("the loop counts %d bytes held once its connections have closed, want 0", held)
		}
	})
}
