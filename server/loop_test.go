//go:build linux

package server

// Tests of a Loop's own state: its table of connections, and its end.

import "testing"

// TestLoopConnectionsReuseFreedSlots: a closed connection's slot in the loop's table goes to
// the next connection, so the table does not grow with connections that come and go.
func TestLoopConnectionsReuseFreedSlots(t *testing.T) {
	eachSetup(t, func(t *testing.T, s setup) {
		r := newRecorder()
		e := startEngine(t, r, s.opts()...)
		a := dialEngine(t, e)
		r.next(t)
		dialEngine(t, e)
		r.next(t)
		a.Close()
		r.closedWith(t)
		dialEngine(t, e)
		c := r.next(t)
		l := e.Loops()[0]
		var slots, n int
		var at *Conn
		onLoop(t, l, func() { slots, n, at = len(l.conns.all), l.conns.n, l.conns.all[c.slot] })
		if slots != 2 || n != 2 || at != c {
			t.Fatalf("after a close and a new connection: %d slots, %d connections, the new one in its slot %v; want 2, 2, true", slots, n, at == c)
		}
	})
}

// TestLoopStoppedUnderneathLeavesNoFd: a loop whose ringev loop is stopped underneath
// (EventLoop().Stop, which any goroutine may call) closes its listener and its connections'
// sockets as it ends, as after an error: the drain that closes them did not run.
func TestLoopStoppedUnderneathLeavesNoFd(t *testing.T) {
	eachSetup(t, func(t *testing.T, s setup) {
		r := newRecorder()
		e := startEngine(t, r, s.opts()...)
		c := dialEngine(t, e)
		r.next(t)
		c.Write([]byte("up\n"))
		if got := readN(t, c, 3); got != "up\n" {
			t.Fatalf("reply %q", got)
		}
		e.Loops()[0].EventLoop().Stop()
		waitEngine(t, e, "the stop of its loop")
	})
}

// TestLoopBufferPoolMakesOnePageBuffers: a buffer the loop's free list makes (an output or
// leftover-input buffer) has room for one page, so that the free list, which keeps as many as
// there were sends in flight at once, holds one page of memory for each, not four.
func TestLoopBufferPoolMakesOnePageBuffers(t *testing.T) {
	var p bufPool
	if b := p.get(); len(b) != 0 || cap(b) != 4<<10 {
		t.Fatalf("a new buffer: len %d cap %d, want 0 and 4096", len(b), cap(b))
	}
}
