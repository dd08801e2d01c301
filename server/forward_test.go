//go:build linux

package server

// Tests of Conn.Forward.

import (
	"errors"
	"io"
	"net"
	"sync"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// forwarder forwards the input of each connection but the first to the first.
type forwarder struct {
	mu    sync.Mutex
	first *Conn
	moved chan int
	err   error // Forward's first error
}

func (f *forwarder) OnOpen(c *Conn) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.first == nil {
		f.first = c
	} else {
		c.SetContext(f.first)
	}
}

func (f *forwarder) OnData(c *Conn) {
	dst, ok := c.Context().(*Conn)
	if !ok {
		c.Next(-1)
		return
	}
	in := c.Buffered()
	if n, err := c.Forward(dst); err != nil || n != in || c.Buffered() != 0 {
		f.mu.Lock()
		if f.err == nil {
			f.err = err
		}
		f.mu.Unlock()
		f.moved <- -1 // input left behind, or an error
	} else {
		f.moved <- n
	}
}

// TestConnForwardMovesInputToAnotherConn: Forward moves what one connection received, all of
// it and in order, to another connection's output: its client reads it.
func TestConnForwardMovesInputToAnotherConn(t *testing.T) {
	eachSetup(t, func(t *testing.T, s setup) {
		f := &forwarder{moved: make(chan int, 100)}
		e := startEngine(t, f, s.opts()...)
		a := dialEngine(t, e)
		eventually(t, "the first connection", func() bool { f.mu.Lock(); defer f.mu.Unlock(); return f.first != nil })
		b := dialEngine(t, e)
		want := "hello, forwarded\n"
		if _, err := b.Write([]byte(want)); err != nil {
			t.Fatal(err)
		}
		if got := readN(t, a, len(want)); got != want {
			t.Errorf("the first client read %q, want %q", got, want)
		}
		total := 0
		for total < len(want) {
			select {
			case n := <-f.moved:
				if n < 0 {
					t.Fatal("Forward left input behind or failed")
				}
				total += n
			case <-time.After(waitFor):
				t.Fatalf("Forward moved %d bytes, want %d", total, len(want))
			}
		}
	})
}

// TestConnForwardRefusesPastTheOutputCap: Forward to a connection whose client does not read
// moves input until the destination's output would pass its 64 KiB cap; then it returns
// ErrOutputFull, and the destination is closed (its client is reset).
func TestConnForwardRefusesPastTheOutputCap(t *testing.T) {
	eachSetup(t, func(t *testing.T, s setup) {
		f := &forwarder{moved: make(chan int, 1<<16)}
		e := startEngine(t, f, append(s.opts(), WithMaxPending(64<<10))...)
		a := dialEngine(t, e)
		a.(*net.TCPConn).SetReadBuffer(32 << 10)
		eventually(t, "the first connection", func() bool { f.mu.Lock(); defer f.mu.Unlock(); return f.first != nil })
		b := dialEngine(t, e)
		go b.Write(make([]byte, 32<<20)) // ends when the test closes b
		eventually(t, "Forward failing", func() bool { f.mu.Lock(); defer f.mu.Unlock(); return f.err != nil })
		f.mu.Lock()
		err := f.err
		f.mu.Unlock()
		if !errors.Is(err, ErrOutputFull) {
			t.Errorf("Forward: %v, want ErrOutputFull", err)
		}
		if _, err := io.Copy(io.Discard, a); !errors.Is(err, unix.ECONNRESET) {
			t.Errorf("the destination's client read until %v, want a reset", err)
		}
	})
}
