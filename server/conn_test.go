//go:build linux

package server

// Tests of Conn: the handler's view of a connection (open, data, close and its reason), its
// input (Peek, Discard), its output (buffered, flushed before a close, dropped by an abort),
// and the calls that come from other goroutines.

import (
	"errors"
	"fmt"
	"io"
	"net"
	"strings"
	"syscall"
	"testing"
	"time"
	"unsafe"

	"github.com/ringev/ringev"
)

// TestConnOpenDataClose: a connection is opened (its greeting sent), each line it sends is
// handed to OnData and answered, and the peer's close ends it with io.EOF, in that order.
func TestConnOpenDataClose(t *testing.T) {
	eachSetup(t, func(t *testing.T, s setup) {
		r := newRecorder()
		r.greet = "hello\n"
		e := startEngine(t, r, s.opts()...)
		c := dialEngine(t, e)
		if got := readN(t, c, 6); got != "hello\n" {
			t.Fatalf("greeting %q", got)
		}
		c.Write([]byte("one\ntw"))
		if got := readN(t, c, 4); got != "one\n" {
			t.Fatalf("reply %q", got)
		}
		c.Write([]byte("o\n"))
		if got := readN(t, c, 4); got != "two\n" {
			t.Fatalf("reply %q (a line split over two reads)", got)
		}
		c.Close()
		_, err := r.closedWith(t)
		if err != io.EOF {
			t.Errorf("OnClose err %v, want io.EOF", err)
		}
		want := []string{"open", "data one", "data two", "close"}
		if got := r.log(); strings.Join(got, "|") != strings.Join(want, "|") {
			t.Errorf("events %q, want %q", got, want)
		}
	})
}

// TestConnCloseReasonIsTheReset: a peer that resets its connection ends it with an error
// wrapping ECONNRESET.
func TestConnCloseReasonIsTheReset(t *testing.T) {
	eachSetup(t, func(t *testing.T, s setup) {
		r := newRecorder()
		e := startEngine(t, r, s.opts()...)
		c := dialEngine(t, e)
		r.next(t)
		c.(*net.TCPConn).SetLinger(0)
		c.Close()
		_, err := r.closedWith(t)
		if !errors.Is(err, syscall.ECONNRESET) {
			t.Errorf("OnClose err %v, want ECONNRESET", err)
		}
	})
}

// TestConnResetIsAnErrorNamingTheFd: the reset's error given to OnClose names the operation
// and the connection's fd, with every driver (the readiness driver gave the bare errno,
// "connection reset by peer"), and wraps ECONNRESET.
func TestConnResetIsAnErrorNamingTheFd(t *testing.T) {
	eachSetup(t, func(t *testing.T, s setup) {
		r := newRecorder()
		e := startEngine(t, r, s.opts()...)
		c := dialEngine(t, e)
		fd := r.next(t).Fd()
		c.(*net.TCPConn).SetLinger(0)
		c.Close()
		_, err := r.closedWith(t)
		if want := fmt.Sprintf("fd %d:", fd); !errors.Is(err, syscall.ECONNRESET) || !strings.Contains(fmt.Sprint(err), want) {
			t.Errorf("OnClose err %v, want ECONNRESET and %q", err, want)
		}
	})
}

// TestConnCloseFlushesFirst: what a handler writes before Close reaches the peer (a goodbye of
// 1 MiB, more than one send), then EOF, not a reset; OnClose's err is nil.
func TestConnCloseFlushesFirst(t *testing.T) {
	eachSetup(t, func(t *testing.T, s setup) {
		r := newRecorder()
		bye := strings.Repeat("goodbye ", 1<<17)
		r.line = func(c *Conn, line string) {
			c.WriteString(bye)
			c.WriteString("\n")
			if err := c.Close(); err != nil {
				t.Errorf("Close: %v", err)
			}
			if err := c.Close(); !errors.Is(err, net.ErrClosed) {
				t.Errorf("second Close: %v, want net.ErrClosed", err)
			}
			if _, err := c.WriteString("more"); !errors.Is(err, net.ErrClosed) {
				t.Errorf("Write after Close: %v, want net.ErrClosed", err)
			}
		}
		e := startEngine(t, r, s.opts()...)
		c := dialEngine(t, e)
		c.Write([]byte("quit\n"))
		if got := readToEOF(t, c); got != bye+"\n" {
			t.Fatalf("got %d bytes before EOF, want %d", len(got), len(bye)+1)
		}
		c.Close() // ends the server's lingering close
		if _, err := r.closedWith(t); err != nil {
			t.Errorf("OnClose err %v, want nil", err)
		}
	})
}

// TestConnAbortResets: Abort drops what was written and resets the connection; OnClose's err
// is nil.
func TestConnAbortResets(t *testing.T) {
	eachSetup(t, func(t *testing.T, s setup) {
		r := newRecorder()
		r.line = func(c *Conn, line string) {
			c.WriteString("never sent\n")
			if err := c.Abort(); err != nil {
				t.Errorf("Abort: %v", err)
			}
		}
		e := startEngine(t, r, s.opts()...)
		c := dialEngine(t, e)
		c.Write([]byte("abort\n"))
		b, err := io.ReadAll(c)
		if !errors.Is(err, syscall.ECONNRESET) || len(b) > 0 {
			t.Fatalf("read %q, %v; want nothing and ECONNRESET", b, err)
		}
		if _, err := r.closedWith(t); err != nil {
			t.Errorf("OnClose err %v, want nil", err)
		}
	})
}

// TestConnPeekDiscard: Peek returns what is buffered (io.ErrShortBuffer when asked for more),
// Discard consumes it, and what OnData leaves comes again with the next bytes.
func TestConnPeekDiscard(t *testing.T) {
	eachBackendRequests(t, func(t *testing.T, s setup) {
		got := make(chan string, 10)
		h := handlerFunc(func(c *Conn) {
			if b, err := c.Peek(8); err == nil {
				got <- string(b)
				c.Discard(8)
				return
			} else if !errors.Is(err, io.ErrShortBuffer) || c.Buffered() != len(b) {
				t.Errorf("Peek(8) of %d bytes: %q, %v", c.Buffered(), b, err)
			}
		})
		e := startEngine(t, h, s.opts()...)
		c := dialEngine(t, e)
		c.Write([]byte("abc"))
		c.Write([]byte("defghijk"))
		for _, want := range []string{"abcdefgh"} {
			if g := <-got; g != want {
				t.Fatalf("frame %q, want %q", g, want)
			}
		}
		c.Write([]byte("lmnop"))
		if g := <-got; g != "ijklmnop" {
			t.Fatalf("frame %q, want ijklmnop", g)
		}
	})
}

// handlerFunc is a Handler of OnData alone.
type handlerFunc func(c *Conn)

func (f handlerFunc) OnData(c *Conn) { f(c) }

// TestConnWriteAndCloseFromAnotherGoroutine: Write from another goroutine reaches the peer in
// order; Close from there flushes first; later calls return net.ErrClosed.
func TestConnWriteAndCloseFromAnotherGoroutine(t *testing.T) {
	eachSetup(t, func(t *testing.T, s setup) {
		r := newRecorder()
		e := startEngine(t, r, s.opts()...)
		c := dialEngine(t, e)
		sc := r.next(t)
		var want strings.Builder
		for i := range 200 {
			line := strings.Repeat("x", i%7) + "\n"
			want.WriteString(line)
			if n, err := sc.WriteString(line); err != nil || n != len(line) {
				t.Fatalf("Write from another goroutine: %d, %v", n, err)
			}
		}
		if err := sc.Close(); err != nil {
			t.Fatalf("Close from another goroutine: %v", err)
		}
		if got := readToEOF(t, c); got != want.String() {
			t.Fatalf("got %d bytes, want %d", len(got), want.Len())
		}
		c.Close()
		if _, err := r.closedWith(t); err != nil {
			t.Errorf("OnClose err %v, want nil", err)
		}
		if _, err := sc.Write([]byte("late")); !errors.Is(err, net.ErrClosed) {
			t.Errorf("Write after close: %v, want net.ErrClosed", err)
		}
		if err := sc.Close(); !errors.Is(err, net.ErrClosed) {
			t.Errorf("Close after close: %v, want net.ErrClosed", err)
		}
		if err := sc.Abort(); !errors.Is(err, net.ErrClosed) {
			t.Errorf("Abort after close: %v, want net.ErrClosed", err)
		}
	})
}

// TestConnCloseSendsWhatAnotherGoroutineWroteBefore: bytes another goroutine wrote (Write
// returned) before the handler's Close reach the peer before its EOF.
func TestConnCloseSendsWhatAnotherGoroutineWroteBefore(t *testing.T) {
	eachSetup(t, func(t *testing.T, s setup) {
		r := newRecorder()
		r.line = func(c *Conn, line string) {
			writeFromElsewhere(t, c, "bye\n")
			if err := c.Close(); err != nil {
				t.Errorf("Close: %v", err)
			}
		}
		e := startEngine(t, r, s.opts()...)
		c := dialEngine(t, e)
		if _, err := c.Write([]byte("quit\n")); err != nil {
			t.Fatal(err)
		}
		if got := readToEOF(t, c); got != "bye\n" {
			t.Fatalf("the peer read %q before EOF, want %q", got, "bye\n")
		}
	})
}

// TestConnAbortFromAnotherGoroutine: Abort from another goroutine resets the connection.
func TestConnAbortFromAnotherGoroutine(t *testing.T) {
	eachSetup(t, func(t *testing.T, s setup) {
		r := newRecorder()
		e := startEngine(t, r, s.opts()...)
		c := dialEngine(t, e)
		if err := r.next(t).Abort(); err != nil {
			t.Fatalf("Abort: %v", err)
		}
		if _, err := io.ReadAll(c); !errors.Is(err, syscall.ECONNRESET) {
			t.Fatalf("read: %v, want ECONNRESET", err)
		}
		r.closedWith(t)
	})
}

// TestConnLoopOnlyMethodsRefuseOtherGoroutines: the methods that belong to the loop return an
// error wrapping ringev.ErrNotOwner from another goroutine, and work in a function posted to
// the loop.
func TestConnLoopOnlyMethodsRefuseOtherGoroutines(t *testing.T) {
	eachBackendRequests(t, func(t *testing.T, s setup) {
		r := newRecorder()
		e := startEngine(t, r, s.opts()...)
		dialEngine(t, e)
		sc := r.next(t)
		if _, err := sc.Peek(1); !errors.Is(err, ringev.ErrNotOwner) {
			t.Errorf("Peek: %v", err)
		}
		if _, err := sc.Discard(1); !errors.Is(err, ringev.ErrNotOwner) {
			t.Errorf("Discard: %v", err)
		}
		if err := sc.SetIdleTimeout(1); !errors.Is(err, ringev.ErrNotOwner) {
			t.Errorf("SetIdleTimeout: %v", err)
		}
		if err := sc.SetRequestTimeout(1); !errors.Is(err, ringev.ErrNotOwner) {
			t.Errorf("SetRequestTimeout: %v", err)
		}
		if err := sc.SetTimeouts(1, 1); !errors.Is(err, ringev.ErrNotOwner) {
			t.Errorf("SetTimeouts: %v", err)
		}
		onLoop(t, sc.Loop(), func() {
			if !sc.Loop().EventLoop().Owned() {
				t.Error("a posted function does not run on the loop's goroutine")
			}
			if _, err := sc.Peek(0); err != nil {
				t.Errorf("Peek on the loop: %v", err)
			}
			if a := sc.RemoteAddr(); a == nil || a.String() == "" {
				t.Errorf("RemoteAddr on the loop: %v", a)
			}
		})
	})
}

// TestConnAddrsFromAnotherGoroutineAreRaceFree: LocalAddr and RemoteAddr may be called from
// any goroutine while the loop asks the kernel for them and while the connection closes.
func TestConnAddrsFromAnotherGoroutineAreRaceFree(t *testing.T) {
	eachBackendRequests(t, func(t *testing.T, s setup) {
		r := newRecorder()
		e := startEngine(t, r, s.opts()...)
		c := dialEngine(t, e)
		sc := r.next(t)
		stop, done := make(chan struct{}), make(chan struct{})
		var seen net.Addr
		go func() {
			defer close(done)
			for {
				if a := sc.RemoteAddr(); a != nil {
					seen = a
				}
				sc.LocalAddr()
				select {
				case <-stop:
					return
				default:
				}
			}
		}()
		onLoop(t, sc.Loop(), func() {
			if sc.RemoteAddr() == nil || sc.LocalAddr() == nil {
				t.Error("RemoteAddr or LocalAddr nil on the loop")
			}
		})
		c.Close()
		r.closedWith(t)
		close(stop)
		select {
		case <-done:
		case <-time.After(waitFor):
			t.Fatal("the goroutine calling RemoteAddr did not end")
		}
		if seen != nil && seen.String() != c.LocalAddr().String() {
			t.Errorf("RemoteAddr from another goroutine: %v, want %v", seen, c.LocalAddr())
		}
		if a := sc.RemoteAddr(); a == nil || a.String() != c.LocalAddr().String() {
			t.Errorf("RemoteAddr after the close: %v, want %v (asked on the loop before)", a, c.LocalAddr())
		}
	})
}

// TestLoopPostAfterTheEndFails: Loop.Post says ringev.ErrClosed once the loop has ended.
func TestLoopPostAfterTheEndFails(t *testing.T) {
	eachBackendRequests(t, func(t *testing.T, s setup) {
		e := startEngine(t, newRecorder(), s.opts()...)
		l := e.Loops()[0]
		e.Close()
		waitEngine(t, e, "Close")
		if err := l.Post(func() {}); !errors.Is(err, ringev.ErrClosed) {
			t.Errorf("Post after the end: %v, want ringev.ErrClosed", err)
		}
	})
}

// maxConnSize is the most a Conn may take, in bytes: a size class of Go's allocator, which is
// what each connection spends on it.
const maxConnSize = 176

// TestConnFitsInItsSizeClass: a Conn takes at most maxConnSize bytes.
func TestConnFitsInItsSizeClass(t *testing.T) {
	if n := unsafe.Sizeof(Conn{}); n > maxConnSize {
		t.Errorf("a Conn takes %d bytes, want at most %d", n, maxConnSize)
	}
}

// TestConnClosedByPeerHoldsNoRarePart: a connection the peer closed is told io.EOF without
// taking a rare part for it (connRare), except with a recv per connection, whose buffer is in it.
func TestConnClosedByPeerHoldsNoRarePart(t *testing.T) {
	eachSetup(t, func(t *testing.T, s setup) {
		r := newRecorder()
		e := startEngine(t, r, s.opts()...)
		c := dialEngine(t, e)
		r.next(t)
		c.Close()
		sc, err := r.closedWith(t)
		if err != io.EOF {
			t.Fatalf("OnClose(%v), want io.EOF", err)
		}
		var rare bool
		onLoop(t, e.Loops()[0], func() { rare = sc.rare != nil })
		if want := s.recv == RecvPerConn; rare != want {
			t.Errorf("the closed connection holds a rare part: %v, want %v", rare, want)
		}
	})
}

// TestConnIdleHoldsNoRarePart: a connection idle after an exchange holds no rare part
// (connRare), except with a recv per connection, whose buffer is in it.
func TestConnIdleHoldsNoRarePart(t *testing.T) {
	eachSetup(t, func(t *testing.T, s setup) {
		r := newRecorder()
		e := startEngine(t, r, s.opts()...)
		c := dialEngine(t, e)
		sc := r.next(t)
		c.Write([]byte("one\n"))
		if got := readN(t, c, 4); got != "one\n" {
			t.Fatalf("reply %q", got)
		}
		var rare bool
		onLoop(t, e.Loops()[0], func() { rare = sc.rare != nil })
		if want := s.recv == RecvPerConn; rare != want {
			t.Errorf("an idle connection holds a rare part: %v, want %v", rare, want)
		}
	})
}
