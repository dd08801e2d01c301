//go:build linux

package server

// Tests of an engine's end: the cancellation of Listen's context and Shutdown drain it
// gracefully (what arrived is answered, then EOF), Shutdown's own context bounds the drain, and
// Close ends every connection at once.

import (
	"context"
	"errors"
	"net"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// TestEngineShutdownOnContextCancel: cancelling Listen's context answers the request a client
// has sent, then closes the connection gracefully (the client reads the reply, then EOF;
// OnClose's err is ErrShutdown), stops accepting, and ends the engine without an error.
func TestEngineShutdownOnContextCancel(t *testing.T) {
	eachSetup(t, func(t *testing.T, s setup) {
		r := newRecorder()
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		e, err := Listen(ctx, "tcp", "127.0.0.1:0", r, append(s.opts(), WithLoops(2), WithLogf(t.Logf))...)
		if err != nil {
			t.Fatal(err)
		}
		c := dialEngine(t, e)
		r.next(t)
		c.Write([]byte("last request\n"))
		cancel()
		if got := readToEOF(t, c); got != "last request\n" {
			t.Fatalf("got %q before EOF", got)
		}
		c.Close()
		if _, err := r.closedWith(t); !errors.Is(err, ErrShutdown) {
			t.Errorf("OnClose err %v, want ErrShutdown", err)
		}
		waitEngine(t, e, "the cancellation of its context")
		if c, err := net.Dial("tcp", e.Addr().String()); err == nil {
			c.Close()
			t.Error("a connection was accepted after the shutdown")
		}
	})
}

// TestEngineShutdownDeadlineCloses: a drain that cannot end (a client that does not read 8 MiB
// of output) is cut off when Shutdown's context expires: Shutdown returns its error, and the
// connection is closed at once.
func TestEngineShutdownDeadlineCloses(t *testing.T) {
	eachSetup(t, func(t *testing.T, s setup) {
		f := &flooder{}
		e := startEngine(t, f, s.opts()...)
		c := dialEngine(t, e)
		c.(*net.TCPConn).SetReadBuffer(32 << 10)
		c.Write([]byte("flood\n"))
		eventually(t, "the flood is written", func() bool { return strings.HasPrefix(f.log(), "flood") })
		ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
		defer cancel()
		start := time.Now()
		if err := e.Shutdown(ctx); !errors.Is(err, context.DeadlineExceeded) {
			t.Fatalf("Shutdown: %v, want context.DeadlineExceeded", err)
		}
		if took := time.Since(start); took > waitFor {
			t.Errorf("Shutdown took %v", took)
		}
		select {
		case <-e.Done():
		default:
			t.Error("Shutdown returned before the engine ended")
		}
	})
}

// TestEngineCloseEndsEveryConnection: Close resets every connection at once (OnClose's err is
// ErrShutdown) and ends the engine.
func TestEngineCloseEndsEveryConnection(t *testing.T) {
	eachSetup(t, func(t *testing.T, s setup) {
		r := newRecorder()
		e := startEngine(t, r, append(s.opts(), WithLoops(2), WithBalance(BalanceRoundRobin))...)
		var cs []net.Conn
		for range 4 {
			cs = append(cs, dialEngine(t, e))
			r.next(t)
		}
		e.Close()
		for range 4 {
			if _, err := r.closedWith(t); !errors.Is(err, ErrShutdown) {
				t.Errorf("OnClose err %v, want ErrShutdown", err)
			}
		}
		waitEngine(t, e, "Close")
		for _, c := range cs {
			if b, err := c.Read(make([]byte, 1)); err == nil {
				t.Errorf("read %d bytes after Close", b)
			}
		}
	})
}

// TestEngineShutdownFromALoopFails: Shutdown called from a handler would wait for its own loop:
// it returns ErrFromLoop.
func TestEngineShutdownFromALoopFails(t *testing.T) {
	eachBackendRequests(t, func(t *testing.T, s setup) {
		errc := make(chan error, 1)
		var ep atomic.Pointer[Engine]
		r := newRecorder()
		r.line = func(c *Conn, line string) { errc <- ep.Load().Shutdown(context.Background()) }
		e := startEngine(t, r, s.opts()...)
		ep.Store(e)
		c := dialEngine(t, e)
		c.Write([]byte("stop\n"))
		if err := <-errc; !errors.Is(err, ErrFromLoop) {
			t.Errorf("Shutdown from a handler: %v, want ErrFromLoop", err)
		}
	})
}

// keeper answers "ok\n" to each input and, as a ShutdownHandler, keeps open through a graceful
// shutdown the connections that sent "keep\n".
type keeper struct {
	mu   sync.Mutex
	kept *Conn
}

func (k *keeper) OnData(c *Conn) {
	b, _ := c.Peek(-1)
	if string(b) == "keep\n" {
		c.SetContext(true)
	}
	c.Discard(len(b))
	c.WriteString("ok\n")
}

func (k *keeper) OnShutdown(c *Conn) bool {
	keep, _ := c.Context().(bool)
	if keep {
		k.mu.Lock()
		k.kept = c
		k.mu.Unlock()
	}
	return keep
}

// TestEngineShutdownKeepsWhatItsHandlerKeeps: a graceful shutdown closes the connections its
// ShutdownHandler does not keep, and leaves open the one it keeps (the engine does not end)
// until the handler closes it, its last reply sent.
func TestEngineShutdownKeepsWhatItsHandlerKeeps(t *testing.T) {
	eachSetup(t, func(t *testing.T, s setup) {
		k := &keeper{}
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		e, err := Listen(ctx, "tcp", "127.0.0.1:0", k, append(s.opts(), WithLoops(1), WithDrainTimeout(6*waitFor), WithLogf(t.Logf))...)
		if err != nil {
			t.Fatal(err)
		}
		defer e.Close()
		kc, dc := dialEngine(t, e), dialEngine(t, e)
		kc.Write([]byte("keep\n"))
		dc.Write([]byte("drop\n"))
		if a, b := readN(t, kc, 3), readN(t, dc, 3); a != "ok\n" || b != "ok\n" {
			t.Fatalf("replies %q, %q; want ok", a, b)
		}
		cancel()
		if got := readToEOF(t, dc); got != "" {
			t.Errorf("the connection not kept: %q before EOF", got)
		}
		dc.Close()
		k.mu.Lock()
		kept := k.kept
		k.mu.Unlock()
		if kept == nil {
			t.Fatal("OnShutdown did not keep the connection that asked for it")
		}
		select {
		case <-e.Done():
			t.Fatal("the engine ended with a connection kept open")
		default:
		}
		writeFromElsewhere(t, kept, "bye\n")
		kept.Close()
		if got := readToEOF(t, kc); got != "bye\n" {
			t.Errorf("the kept connection: %q before EOF, want %q", got, "bye\n")
		}
		kc.Close()
		waitEngine(t, e, "the kept connection's close")
	})
}
