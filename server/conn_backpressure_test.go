//go:build linux

package server

// Tests of backpressure: a connection whose pending output passes the write limit is no longer
// read, the handler is told, and reading resumes (with the input that waited) once the output
// has drained.

import (
	"fmt"
	"io"
	"net"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"golang.org/x/sys/unix"
)

// flooder is a Handler whose "flood" line writes 1 MiB; it records the backpressure calls and
// the lines it serves, in order.
type flooder struct {
	mu     sync.Mutex
	events []string
	conn   atomic.Pointer[Conn] // the last connection opened
}

func (f *flooder) add(ev string) {
	f.mu.Lock()
	f.events = append(f.events, ev)
	f.mu.Unlock()
}

func (f *flooder) log() string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return strings.Join(f.events, " ")
}

func (f *flooder) OnData(c *Conn) {
	for {
		b, _ := c.Peek(-1)
		i := strings.IndexByte(string(b), '\n')
		if i < 0 {
			return
		}
		line := string(b[:i])
		c.Discard(i + 1)
		f.add(line)
		if line == "flood" {
			c.WriteString(strings.Repeat("f", 1<<20))
		} else {
			c.WriteString(line + "\n")
		}
	}
}

// OnOpen makes the socket's send buffer small, so that the kernel cannot take the flood.
func (f *flooder) OnOpen(c *Conn) {
	f.conn.Store(c)
	unix.SetsockoptInt(c.Fd(), unix.SOL_SOCKET, unix.SO_SNDBUF, 32<<10)
}

func (f *flooder) OnBackpressure(c *Conn, paused bool) {
	if paused {
		f.add("paused")
	} else {
		f.add("resumed")
	}
}

// TestConnBackpressurePausesReading: 1 MiB written to a client that does not read passes a
// 64 KiB write limit: the handler is told, and a line the client sends meanwhile is not served
// until the client has read the output; then reading resumes and the line is answered.
func TestConnBackpressurePausesReading(t *testing.T) {
	eachSetup(t, func(t *testing.T, s setup) {
		f, _, c := startFlooded(t, s)
		c.Write([]byte("after\n"))
		// The line must wait: while paused, the connection is not read. Reading the flood
		// (the only way to drain it) then lets it through.
		if got := f.log(); got != "flood paused" {
			t.Fatalf("events %q before the client read: the line was served while paused", got)
		}
		if got := readN(t, c, 1<<20); got != strings.Repeat("f", 1<<20) {
			t.Fatal("the flood came back altered")
		}
		if got := readN(t, c, 6); got != "after\n" {
			t.Fatalf("reply %q", got)
		}
		if got := f.log(); got != "flood paused resumed after" {
			t.Errorf("events %q, want \"flood paused resumed after\"", got)
		}
	})
}

// startFlooded serves a flooder with a 64 KiB write limit and connects a client with a small
// receive buffer that sends "flood" and reads nothing: it returns once the connection is paused.
func startFlooded(t *testing.T, s setup) (*flooder, *Engine, net.Conn) {
	t.Helper()
	f := &flooder{}
	e := startEngine(t, f, append(s.opts(), WithWriteLimit(64<<10))...)
	c := dialEngine(t, e)
	c.(*net.TCPConn).SetReadBuffer(32 << 10)
	c.Write([]byte("flood\n"))
	eventually(t, "OnBackpressure(paused)", func() bool { return f.log() == "flood paused" })
	return f, e, c
}

// politeReplier answers each "q" line with replySize bytes, and stops answering while Pending
// and the next reply would pass the write limit, leaving the other lines in the input, as
// WriteLimit's doc asks of a handler.
type politeReplier struct{}

const replySize = 1000

func (politeReplier) OnData(c *Conn) {
	for c.Pending()+replySize <= c.WriteLimit() {
		b, _ := c.Peek(2)
		if len(b) < 2 {
			return
		}
		c.Discard(2)
		c.WriteString(strings.Repeat("r", replySize))
	}
}

// TestConnInputLeftForOutputIsServedOnceItDrains: a handler that stops answering a pipeline
// below the write limit (its next reply would pass it) is given the rest of the input once the
// output has drained to half the limit, without more bytes arriving; before, only a connection
// whose output had passed the limit was served again, and this one stalled with its requests
// buffered.
func TestConnInputLeftForOutputIsServedOnceItDrains(t *testing.T) {
	eachSetup(t, func(t *testing.T, s setup) {
		const n = 1000
		e := startEngine(t, politeReplier{}, append(s.opts(), WithWriteLimit(64<<10))...)
		c := dialEngine(t, e)
		if _, err := c.Write([]byte(strings.Repeat("q\n", n))); err != nil {
			t.Fatal(err)
		}
		if got := readN(t, c, n*replySize); got != strings.Repeat("r", n*replySize) {
			t.Fatal("the replies came back altered")
		}
	})
}

// drainWatcher is a recorder that counts its OnBackpressure calls.
type drainWatcher struct {
	*recorder
	paused, resumed atomic.Int64
}

func (w *drainWatcher) OnBackpressure(c *Conn, paused bool) {
	if paused {
		w.paused.Add(1)
	} else {
		w.resumed.Add(1)
	}
}

// TestConnBackpressureEndIsToldAfterEveryPassSeen: a goroutine that writes to a connection and
// then sees Pending past WriteLimit is told when the output has drained: an OnBackpressure(c,
// false) comes after its write, each time, also when the loop sent the output before any turn's
// end found it past the limit (a send that completed between the write and the loop's taking of
// its bytes).
func TestConnBackpressureEndIsToldAfterEveryPassSeen(t *testing.T) {
	eachSetup(t, func(t *testing.T, s setup) {
		w := &drainWatcher{recorder: newRecorder()}
		e := startEngine(t, w, append(s.opts(), WithWriteLimit(passLimit))...)
		c := dialEngine(t, e)
		drainToldAfterEveryPass(t, w, c, w.next(t))
	})
}

// passLimit is the write limit of drainToldAfterEveryPass's connections.
const passLimit = 16 << 10

// drainToldAfterEveryPass writes 2,000 chunks of 3/4 of passLimit to sc from the test's
// goroutine while the client c reads them all, and after each write that leaves Pending past
// the limit waits (at most waitFor) for an OnBackpressure(sc, false) that comes after it. It
// fails if no write left Pending past the limit: the case was not made.
func drainToldAfterEveryPass(t *testing.T, w *drainWatcher, c net.Conn, sc *Conn) {
	t.Helper()
	read := make(chan error, 1)
	go func() {
		_, err := io.Copy(io.Discard, c)
		read <- err
	}()
	defer func() {
		c.Close()
		<-read
	}()
	chunk := strings.Repeat("x", passLimit*3/4)
	seen := 0
	for i := range 2000 {
		before := w.resumed.Load()
		if _, err := sc.WriteString(chunk); err != nil {
			t.Fatalf("write %d: %v", i, err)
		}
		if sc.Pending() <= sc.WriteLimit() {
			continue
		}
		seen++
		eventually(t, fmt.Sprintf("OnBackpressure(false) after write %d (Pending was past the limit)", i), func() bool {
			return w.resumed.Load() > before
		})
	}
	if seen == 0 {
		t.Fatalf("Pending was never past the limit after a write (of 2000; OnBackpressure true %d, false %d): the case was not made", w.paused.Load(), w.resumed.Load())
	}
}

// streamer is a Handler whose output does not answer its input: OnOpen starts a goroutine that
// writes streamOut bytes to the connection, and OnData consumes whatever arrives and counts it.
// Both sides' socket buffers are made small, so that the output stays pending and a peer that
// is not read blocks writing. setInOpen: OnOpen calls SetPauseOnOutput(false).
type streamer struct {
	setInOpen bool
	wrote     chan error
	got       atomic.Int64
}

const streamOut, streamIn = 1 << 20, 2 << 20

func newStreamer(setInOpen bool) *streamer {
	return &streamer{setInOpen: setInOpen, wrote: make(chan error, 1)}
}

func (h *streamer) OnOpen(c *Conn) {
	unix.SetsockoptInt(c.Fd(), unix.SOL_SOCKET, unix.SO_SNDBUF, 32<<10)
	unix.SetsockoptInt(c.Fd(), unix.SOL_SOCKET, unix.SO_RCVBUF, 32<<10)
	if h.setInOpen {
		if err := c.SetPauseOnOutput(false); err != nil {
			h.wrote <- fmt.Errorf("SetPauseOnOutput: %w", err)
			return
		}
	}
	go func() {
		_, err := c.WriteString(strings.Repeat("o", streamOut))
		h.wrote <- err
	}()
}

func (h *streamer) OnData(c *Conn) {
	n, _ := c.Discard(c.Buffered())
	h.got.Add(int64(n))
}

// streamBothWays connects a client with small socket buffers to e (a streamer's engine with a
// 64 KiB write limit) and, once the streamer's goroutine has written its output, past the
// limit, writes streamIn bytes, all of them before it reads (as a client that must finish
// sending first does), then reads the output. Every wait has a deadline: a server that stops
// reading the connection for its output stalls the client's write until it.
func streamBothWays(t *testing.T, e *Engine, h *streamer) {
	t.Helper()
	c := dialEngine(t, e)
	c.(*net.TCPConn).SetReadBuffer(32 << 10)
	c.(*net.TCPConn).SetWriteBuffer(32 << 10)
	if err := received(t, h.wrote, "the streamer's write"); err != nil {
		t.Fatalf("the streamer's write: %v", err)
	}
	if n, err := c.Write([]byte(strings.Repeat("i", streamIn))); err != nil {
		t.Fatalf("the client wrote %d of %d bytes before it read: %v (the server read %d)", n, streamIn, err, h.got.Load())
	}
	if got := readN(t, c, streamOut); got != strings.Repeat("o", streamOut) {
		t.Fatal("the stream came back altered")
	}
	eventually(t, "the server consumed the client's stream", func() bool { return h.got.Load() == streamIn })
}

// TestConnSetPauseOnOutputOffReadsPastTheLimit: a connection made not to pause for its output
// (SetPauseOnOutput(false) in OnOpen), whose output, written from another goroutine, is past
// the write limit, is still read: a client that writes a 2 MiB stream before it reads finishes.
// With the default the server stops reading, the client blocks in its write, and neither moves
// until the write's deadline.
func TestConnSetPauseOnOutputOffReadsPastTheLimit(t *testing.T) {
	eachSetup(t, func(t *testing.T, s setup) {
		h := newStreamer(true)
		streamBothWays(t, startEngine(t, h, append(s.opts(), WithWriteLimit(64<<10))...), h)
	})
}

// TestConnWithPauseOnOutputOffReadsPastTheLimit: WithPauseOnOutput(false) is
// SetPauseOnOutput(false) for every connection of the engine.
func TestConnWithPauseOnOutputOffReadsPastTheLimit(t *testing.T) {
	eachSetup(t, func(t *testing.T, s setup) {
		h := newStreamer(false)
		streamBothWays(t, startEngine(t, h, append(s.opts(), WithWriteLimit(64<<10), WithPauseOnOutput(false))...), h)
	})
}

// TestConnSetPauseOnOutputOffResumesAPausedConnection: SetPauseOnOutput(false) on a connection
// paused for its output resumes its reading at once: a line the client sent meanwhile is served
// before the client reads the output, and OnBackpressure(false) still comes once it drains.
func TestConnSetPauseOnOutputOffResumesAPausedConnection(t *testing.T) {
	eachSetup(t, func(t *testing.T, s setup) {
		f, e, c := startFlooded(t, s)
		c.Write([]byte("after\n"))
		sc := f.conn.Load()
		onLoop(t, e.Loops()[0], func() {
			if err := sc.SetPauseOnOutput(false); err != nil {
				t.Errorf("SetPauseOnOutput: %v", err)
			}
		})
		eventually(t, "the line served while the output is pending", func() bool { return f.log() == "flood paused after" })
		if got := readN(t, c, 1<<20+6); got != strings.Repeat("f", 1<<20)+"after\n" {
			t.Fatal("the output came back altered")
		}
		eventually(t, "OnBackpressure(false) once the output drained", func() bool { return f.log() == "flood paused after resumed" })
	})
}

// TestConnPauseOnOutputOffTellsBackpressure: a connection that does not pause for its output
// (WithPauseOnOutput(false)) still tells its handler, true past the write limit and false once
// the output has drained, after every pass a writer saw.
func TestConnPauseOnOutputOffTellsBackpressure(t *testing.T) {
	eachSetup(t, func(t *testing.T, s setup) {
		w := &drainWatcher{recorder: newRecorder()}
		e := startEngine(t, w, append(s.opts(), WithWriteLimit(passLimit), WithPauseOnOutput(false))...)
		c := dialEngine(t, e)
		drainToldAfterEveryPass(t, w, c, w.next(t))
	})
}
