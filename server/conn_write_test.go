//go:build linux

package server

// Tests of Conn.Write's cost: however many writes a turn makes to a connection, it makes one
// send at the turn's end (a broadcast to N connections is N sends), also across loops, and a
// write on the loop allocates nothing once the buffers have grown.

import (
	"errors"
	"fmt"
	"io"
	"net"
	"strings"
	"testing"
	"time"
)

// broadcaster is a recorder whose "go" line writes 100 lines to every other connection.
func broadcaster() *recorder {
	r := newRecorder()
	r.line = func(c *Conn, line string) {
		r.mu.Lock()
		conns := append([]*Conn(nil), r.conns...)
		r.mu.Unlock()
		for _, o := range conns {
			if o == c {
				continue
			}
			for range 100 {
				if _, err := o.WriteString("m\n"); err != nil {
					panic(err)
				}
			}
		}
	}
	return r
}

// sendsMade sums the sends the engine's loops have made.
func sendsMade(t *testing.T, e *Engine) uint64 {
	var n uint64
	for _, l := range e.Loops() {
		onLoop(t, l, func() { n += l.sends })
	}
	return n
}

// TestConnWritesCoalesce: 100 writes to each of 4 connections in one OnData make 4 sends.
func TestConnWritesCoalesce(t *testing.T) {
	eachSetup(t, func(t *testing.T, s setup) {
		r := broadcaster()
		e := startEngine(t, r, s.opts()...)
		var cs []net.Conn
		for range 5 {
			cs = append(cs, dialEngine(t, e))
			r.next(t)
		}
		before := sendsMade(t, e)
		cs[0].Write([]byte("go\n"))
		for i, c := range cs[1:] {
			if got := readN(t, c, 200); got != strings.Repeat("m\n", 100) {
				t.Fatalf("client %d got %q", i+1, got)
			}
		}
		if n := sendsMade(t, e) - before; n != 4 {
			t.Errorf("%d sends for 100 writes to each of 4 connections, want 4", n)
		}
	})
}

// TestConnWritesCoalesceAcrossLoops: writes from one loop's handler to connections of another
// loop reach them in order; on uring, where the other loop, asleep, is woken through the ring
// after the handler's turn, they make one send per connection. (A loop awake meanwhile takes
// its inbox when its turn comes: a part of the handler's writes, perhaps.)
func TestConnWritesCoalesceAcrossLoops(t *testing.T) {
	eachSetup(t, func(t *testing.T, s setup) {
		r := broadcaster()
		e := startEngine(t, r, append(s.opts(), WithLoops(2), WithBalance(BalanceRoundRobin))...)
		var cs []net.Conn
		loops := map[int]int{}
		for range 5 {
			cs = append(cs, dialEngine(t, e))
			loops[r.next(t).Loop().Index()]++
		}
		if loops[0] != 3 || loops[1] != 2 {
			t.Fatalf("connections per loop %v, want 3 and 2 (round-robin)", loops)
		}
		before := sendsMade(t, e)
		awaitAsleep(t, e.Loops()[1]) // sendsMade woke it
		cs[0].Write([]byte("go\n"))
		for i, c := range cs[1:] {
			if got := readN(t, c, 200); got != strings.Repeat("m\n", 100) {
				t.Fatalf("client %d got %q", i+1, got)
			}
		}
		if n := sendsMade(t, e) - before; s.backend == "uring" && n != 4 {
			t.Errorf("%d sends for 100 writes to each of 4 connections on two loops, want 4", n)
		}
	})
}

// TestConnWriteOnTheLoopDoesNotAllocate: Write and WriteString on the loop allocate nothing
// once the connection's output buffer has grown.
func TestConnWriteOnTheLoopDoesNotAllocate(t *testing.T) {
	eachSetup(t, func(t *testing.T, s setup) {
		r := newRecorder()
		allocs := make(chan float64, 1)
		r.line = func(c *Conn, line string) {
			msg := []byte("0123456789abcdef\n")
			allocs <- testing.AllocsPerRun(200, func() {
				c.Write(msg)
				c.WriteString("0123456789abcdef\n")
			})
		}
		e := startEngine(t, r, s.opts()...)
		c := dialEngine(t, e)
		c.Write([]byte("go\n"))
		if n := <-allocs; n != 0 {
			t.Errorf("%v allocations per Write and WriteString on the loop, want 0", n)
		}
		readN(t, c, 201*34)
	})
}

// TestConnAvailableBufferWritesInPlace: bytes appended to AvailableBuffer and given to Write
// reach the peer, written without a copy (the output buffer is the one AvailableBuffer showed).
func TestConnAvailableBufferWritesInPlace(t *testing.T) {
	eachBackendRequests(t, func(t *testing.T, s setup) {
		r := newRecorder()
		r.line = func(c *Conn, line string) {
			b := append(c.AvailableBuffer(), "in place: "...)
			b = append(b, line...)
			b = append(b, '\n')
			c.Write(b)
			if &c.pend[0] != &b[0] {
				t.Error("Write copied bytes appended to AvailableBuffer")
			}
		}
		e := startEngine(t, r, s.opts()...)
		c := dialEngine(t, e)
		c.Write([]byte("x\n"))
		if got := readN(t, c, 12); got != "in place: x\n" {
			t.Fatalf("got %q", got)
		}
	})
}

// TestConnWriteOnTheLoopComesAfterAnotherGoroutinesWrite: bytes another goroutine wrote (Write
// returned) before the handler writes reach the peer first, also when the handler's bytes were
// appended to AvailableBuffer.
func TestConnWriteOnTheLoopComesAfterAnotherGoroutinesWrite(t *testing.T) {
	eachSetup(t, func(t *testing.T, s setup) {
		r := newRecorder()
		r.line = func(c *Conn, line string) {
			writeFromElsewhere(t, c, "first:"+line+"\n")
			if line == "inplace" {
				c.Write(append(c.AvailableBuffer(), "then:"+line+"\n"...))
			} else {
				c.WriteString("then:" + line + "\n")
			}
		}
		e := startEngine(t, r, s.opts()...)
		c := dialEngine(t, e)
		for _, line := range []string{"copy", "inplace"} {
			c.Write([]byte(line + "\n"))
			want := "first:" + line + "\nthen:" + line + "\n"
			if got := readN(t, c, len(want)); got != want {
				t.Fatalf("the peer read %q, want %q", got, want)
			}
		}
	})
}

// TestConnWriteAfterPostComesAfterThePostedWrite: from one goroutine, Loop.Post of a function
// that writes to a connection, then a Write to it: the peer reads the posted function's bytes
// first, each time (the order the goroutine did them in).
func TestConnWriteAfterPostComesAfterThePostedWrite(t *testing.T) {
	eachSetup(t, func(t *testing.T, s setup) {
		r := newRecorder()
		e := startEngine(t, r, s.opts()...)
		c := dialEngine(t, e)
		sc := r.next(t)
		var want strings.Builder
		for i := range 200 {
			posted, written := fmt.Sprintf("posted %d\n", i), fmt.Sprintf("written %d\n", i)
			want.WriteString(posted + written)
			if err := sc.Loop().Post(func() { sc.WriteString(posted) }); err != nil {
				t.Fatalf("Post: %v", err)
			}
			if _, err := sc.WriteString(written); err != nil {
				t.Fatalf("Write from another goroutine: %v", err)
			}
		}
		if got := readN(t, c, want.Len()); got != want.String() {
			i := 0
			for i < len(got) && got[i] == want.String()[i] {
				i++
			}
			t.Fatalf("the peer read the lines out of order from byte %d: %.40q, want %.40q", i, got[i:], want.String()[i:])
		}
	})
}

// holdLoop posts a function that keeps l's goroutine until the returned release is called (at
// most waitFor), and returns once it runs: what is queued for l meanwhile waits behind it.
func holdLoop(t *testing.T, l *Loop) (release func()) {
	t.Helper()
	inside, done := make(chan struct{}), make(chan struct{})
	err := l.Post(func() {
		close(inside)
		select {
		case <-done:
		case <-time.After(waitFor):
		}
	})
	if err != nil {
		t.Fatalf("Post: %v", err)
	}
	select {
	case <-inside:
	case <-time.After(waitFor):
		t.Fatalf("the posted function did not run within %v", waitFor)
	}
	return func() { close(done) }
}

// postHeldConn starts an engine with s's options, dials it, and holds the served connection's loop
// (holdLoop): the peer's end, the served connection, and the release.
func postHeldConn(t *testing.T, s setup) (c net.Conn, sc *Conn, release func()) {
	t.Helper()
	r := newRecorder()
	e := startEngine(t, r, s.opts()...)
	c = dialEngine(t, e)
	sc = r.next(t)
	return c, sc, holdLoop(t, sc.Loop())
}

// TestConnPostAfterAWriteRunsWithItInTheOutput: from one goroutine, while a function it posted
// waits, a Write, then Loop.Post of a function that writes (the hand-over Conn.Write's doc
// names): the peer reads the Write's bytes, then the function's.
func TestConnPostAfterAWriteRunsWithItInTheOutput(t *testing.T) {
	eachSetup(t, func(t *testing.T, s setup) {
		r := newRecorder()
		e := startEngine(t, r, s.opts()...)
		c := dialEngine(t, e)
		sc := r.next(t)
		l := sc.Loop()
		release := holdLoop(t, l)
		if _, err := sc.WriteString("written\n"); err != nil {
			t.Fatalf("Write from another goroutine: %v", err)
		}
		if err := l.Post(func() { sc.WriteString("then\n") }); err != nil {
			t.Fatalf("Post: %v", err)
		}
		release()
		if got, want := readN(t, c, len("written\nthen\n")), "written\nthen\n"; got != want {
			t.Fatalf("the peer read %q, want %q", got, want)
		}
	})
}

// TestConnCloseAfterWriteBehindAPostSendsTheWrite: from one goroutine, Loop.Post of a
// function, a Write, then Close: the peer reads what was written, then EOF (the close waits
// behind the write, which waits behind the function).
func TestConnCloseAfterWriteBehindAPostSendsTheWrite(t *testing.T) {
	eachSetup(t, func(t *testing.T, s setup) {
		r := newRecorder()
		e := startEngine(t, r, s.opts()...)
		c := dialEngine(t, e)
		sc := r.next(t)
		if err := sc.Loop().Post(func() {}); err != nil {
			t.Fatalf("Post: %v", err)
		}
		if _, err := sc.WriteString("written\n"); err != nil {
			t.Fatalf("Write from another goroutine: %v", err)
		}
		if err := sc.Close(); err != nil {
			t.Fatalf("Close from another goroutine: %v", err)
		}
		if got, err := io.ReadAll(c); err != nil || string(got) != "written\n" {
			t.Fatalf("the peer read %q, %v; want \"written\\n\" then EOF", got, err)
		}
	})
}

// TestConnWriteBehindPostMakesNoInboxEntry: while a posted function waits, a write from another
// goroutine makes no entry in the loop's inbox (Loop.inW), which Conn.takeQueued relies on: the
// write is queued behind the function, and the entry made before the Post holds the first
// write's bytes alone. The peer reads the first write, the function's, then the second.
func TestConnWriteBehindPostMakesNoInboxEntry(t *testing.T) {
	eachSetup(t, func(t *testing.T, s setup) {
		r := newRecorder()
		r.line = func(c *Conn, line string) {
			l := c.Loop()
			writeFromElsewhere(t, c, "first\n") // the loop is busy here: the bytes wait in an entry
			posted := make(chan error)
			go func() { posted <- l.Post(func() { c.WriteString("posted\n") }) }()
			if err := <-posted; err != nil {
				t.Errorf("Post: %v", err)
			}
			writeFromElsewhere(t, c, "second\n")
			l.mu.Lock()
			var entries []string
			for _, w := range l.inW {
				entries = append(entries, string(w.b))
			}
			at := c.asyncAt.Load()
			l.mu.Unlock()
			if len(entries) != 1 || entries[0] != "first\n" || at != 1 {
				t.Errorf("inbox entries %q, Conn.asyncAt %d; want [\"first\\n\"], 1 (the write behind the Post queued as a function)", entries, at)
			}
		}
		e := startEngine(t, r, s.opts()...)
		c := dialEngine(t, e)
		c.Write([]byte("go\n"))
		if got, want := readN(t, c, len("first\nposted\nsecond\n")), "first\nposted\nsecond\n"; got != want {
			t.Fatalf("the peer read %q, want %q", got, want)
		}
	})
}

// TestConnWriteBehindPostDoesNotAllocate: while a posted function runs (or waits), writes to a
// connection from another goroutine queue behind it without an allocation each: consecutive
// ones join one entry of the loop's queue of functions, not one closure (and buffer) apiece.
func TestConnWriteBehindPostDoesNotAllocate(t *testing.T) {
	eachSetup(t, func(t *testing.T, s setup) {
		c, sc, release := postHeldConn(t, s)
		msg := []byte("0123456789abcdef\n")
		for range 300 { // the entry's buffer grows to the writes measured
			sc.Write(msg)
		}
		n := testing.AllocsPerRun(100, func() { sc.Write(msg) })
		release()
		if n != 0 {
			t.Errorf("%v allocations per Write from another goroutine behind a posted function, want 0", n)
		}
		readN(t, c, 401*len(msg))
	})
}

// TestConnCommitOnAClosedConnIsErrClosed: Commit on a closed connection returns net.ErrClosed,
// as Write does, also with nothing to write.
func TestConnCommitOnAClosedConnIsErrClosed(t *testing.T) {
	eachSetup(t, func(t *testing.T, s setup) {
		r := newRecorder()
		e := startEngine(t, r, s.opts()...)
		dialEngine(t, e)
		sc := r.next(t)
		onLoop(t, sc.Loop(), func() { sc.Abort() })
		r.closedWith(t)
		onLoop(t, sc.Loop(), func() {
			if err := sc.Commit(0, nil); !errors.Is(err, net.ErrClosed) {
				t.Errorf("Commit(0, nil) on a closed connection: %v, want net.ErrClosed", err)
			}
		})
	})
}

// TestConnPostedWriteBeforeCloseIsSent: from one goroutine, Loop.Post of a function that
// writes, a Write, then Close (or CloseWrite), while the loop is busy: the function runs
// before the close, which is queued behind it, so its write succeeds and the peer reads the
// function's bytes, the written ones, then EOF; not the written bytes alone, with a hole where
// the function's were.
func TestConnPostedWriteBeforeCloseIsSent(t *testing.T) {
	for _, closeWrite := range []bool{false, true} {
		name := map[bool]string{false: "Close", true: "CloseWrite"}[closeWrite]
		t.Run(name, func(t *testing.T) {
			eachSetup(t, func(t *testing.T, s setup) {
				c, sc, release := postHeldConn(t, s)
				wrote := make(chan error, 1)
				if err := sc.Loop().Post(func() { _, err := sc.WriteString("posted\n"); wrote <- err }); err != nil {
					t.Fatalf("Post: %v", err)
				}
				if _, err := sc.WriteString("written\n"); err != nil {
					t.Fatalf("Write from another goroutine: %v", err)
				}
				closeIt := sc.Close
				if closeWrite {
					closeIt = sc.CloseWrite
				}
				if err := closeIt(); err != nil {
					t.Fatalf("%s from another goroutine: %v", name, err)
				}
				release()
				if got, err := io.ReadAll(c); err != nil || string(got) != "posted\nwritten\n" {
					t.Errorf("the peer read %q, %v; want \"posted\\nwritten\\n\" then EOF", got, err)
				}
				select {
				case err := <-wrote:
					if err != nil {
						t.Errorf("the posted function's Write: %v", err)
					}
				case <-time.After(waitFor):
					t.Fatal("the posted function did not run")
				}
			})
		})
	}
}
