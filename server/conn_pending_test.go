//go:build linux

package server

// Tests of Conn.Pending and the output cap (WithMaxPending): Pending is right from any
// goroutine, and a write that would take it past the cap is refused, on the loop and from
// another goroutine, and closes the connection with ErrOutputFull.

import (
	"errors"
	"io"
	"net"
	"testing"

	"golang.org/x/sys/unix"
)

// TestConnOutputCapRefusesAWriteOnTheLoop: with a 64 KiB output cap, a handler that writes
// 32 KiB three times in one OnData (nothing is sent before the turn ends) has the first two
// writes taken and the third refused with ErrOutputFull; the connection closes with
// ErrOutputFull, and the peer gets none of the output (it was dropped).
func TestConnOutputCapRefusesAWriteOnTheLoop(t *testing.T) {
	eachSetup(t, func(t *testing.T, s setup) {
		r := newRecorder()
		var errs []error // the writes' errors (the loop's goroutine, then after OnClose)
		r.line = func(c *Conn, line string) {
			chunk := make([]byte, 32<<10)
			for range 3 {
				_, err := c.Write(chunk)
				errs = append(errs, err)
			}
		}
		e := startEngine(t, r, append(s.opts(), WithMaxPending(64<<10))...)
		c := dialEngine(t, e)
		c.Write([]byte("write\n"))
		if _, err := r.closedWith(t); !errors.Is(err, ErrOutputFull) {
			t.Errorf("OnClose err %v, want ErrOutputFull", err)
		}
		if len(errs) != 3 || errs[0] != nil || errs[1] != nil || !errors.Is(errs[2], ErrOutputFull) {
			t.Errorf("the writes returned %v, want nil, nil, ErrOutputFull", errs)
		}
		if b, err := io.ReadAll(c); len(b) > 0 {
			t.Errorf("the peer read %d bytes (then %v), want none: the output is dropped", len(b), err)
		}
	})
}

// TestConnOutputCapRefusesAWriteFromAnotherGoroutine: writes of 32 KiB from another goroutine
// to a connection whose peer does not read are taken until Pending would pass the 64 KiB cap;
// that write is refused with ErrOutputFull, and the connection closes with ErrOutputFull.
func TestConnOutputCapRefusesAWriteFromAnotherGoroutine(t *testing.T) {
	eachSetup(t, func(t *testing.T, s setup) {
		r := newRecorder()
		e := startEngine(t, r, append(s.opts(), WithMaxPending(64<<10))...)
		nc := dialEngine(t, e)
		nc.(*net.TCPConn).SetReadBuffer(32 << 10)
		c := r.next(t)
		unix.SetsockoptInt(c.Fd(), unix.SOL_SOCKET, unix.SO_SNDBUF, 32<<10)
		chunk := make([]byte, 32<<10)
		var err error
		for written := 0; err == nil; written += len(chunk) {
			if written > 64<<20 {
				t.Fatalf("%d bytes written to a peer that does not read, none refused", written)
			}
			_, err = c.Write(chunk)
		}
		if !errors.Is(err, ErrOutputFull) {
			t.Errorf("the refused write returned %v, want ErrOutputFull", err)
		}
		if _, err := r.closedWith(t); !errors.Is(err, ErrOutputFull) {
			t.Errorf("OnClose err %v, want ErrOutputFull", err)
		}
	})
}

// TestConnPendingFromAnotherGoroutine: once a 1 MiB write to a peer that does not read has
// paused the connection (its pending output passed the write limit at the turn's end),
// Pending read from another goroutine is past the write limit too, as it is on the loop.
func TestConnPendingFromAnotherGoroutine(t *testing.T) {
	eachSetup(t, func(t *testing.T, s setup) {
		r := &flooderConns{flooder: &flooder{}, opened: make(chan *Conn, 1)}
		e := startEngine(t, r, append(s.opts(), WithWriteLimit(64<<10))...)
		nc := dialEngine(t, e)
		nc.(*net.TCPConn).SetReadBuffer(32 << 10)
		c := <-r.opened
		nc.Write([]byte("flood\n"))
		eventually(t, "OnBackpressure(paused)", func() bool { return r.log() == "flood paused" })
		if p := c.Pending(); p <= 64<<10 {
			t.Errorf("Pending from another goroutine is %d, want more than the write limit (%d)", p, 64<<10)
		}
	})
}

// flooderConns is a flooder that hands over its connections as they open.
type flooderConns struct {
	*flooder
	opened chan *Conn
}

func (f *flooderConns) OnOpen(c *Conn) {
	f.flooder.OnOpen(c)
	f.opened <- c
}
