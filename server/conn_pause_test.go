//go:build linux

package server

// Tests of paused reads (Conn.PauseRead, ResumeRead): while a connection is held nothing is
// read (no recv pending, no read interest) and its input stays buffered; resuming serves it;
// the hold is apart from the write limit's pause.

import (
	"bytes"
	"context"
	"errors"
	"io"
	"net"
	"os"
	"strings"
	"testing"
	"time"
	"unsafe"

	"github.com/ringev/ringev"
	"golang.org/x/sys/unix"
)

// reading reports, on sc's loop, whether the driver reads sc: a recv pending (requests) or
// Read asked of its fd event (readiness).
func reading(t *testing.T, sc *Conn) bool {
	t.Helper()
	var on bool
	onLoop(t, sc.Loop(), func() { on = readingNow(sc) })
	return on
}

// readingNow is reading, on sc's loop's goroutine.
func readingNow(sc *Conn) bool {
	if d, ok := sc.l.drv.(*connRdy); ok {
		return d.ev(sc).Flags()&ringev.Read != 0
	}
	return sc.recv.Pending()
}

// inKernel is the number of bytes waiting in sc's socket receive queue (SIOCINQ).
func inKernel(t *testing.T, sc *Conn) int {
	t.Helper()
	n, err := unix.IoctlGetInt(sc.Fd(), unix.SIOCINQ)
	if err != nil {
		t.Fatalf("SIOCINQ on fd %d: %v", sc.Fd(), err)
	}
	return n
}

// heldLine sends line to c while sc is held, checks that it stays in the kernel unread and
// unserved (r's log), and returns.
func heldLine(t *testing.T, r *recorder, c net.Conn, sc *Conn, line string) {
	t.Helper()
	eventually(t, "no recv pending, no read interest", func() bool { return !reading(t, sc) })
	c.Write([]byte(line + "\n"))
	eventually(t, "the line in the socket's receive queue", func() bool { return inKernel(t, sc) == len(line)+1 })
	for _, ev := range r.log() {
		if ev == "data "+line {
			t.Fatalf("the line was served while reading was paused (events %q)", r.log())
		}
	}
	if reading(t, sc) {
		t.Fatal("a recv is pending (or Read asked) while reading is paused")
	}
}

// pauseOnLoop calls sc.PauseRead on its loop and waits for it.
func pauseOnLoop(t *testing.T, sc *Conn) {
	t.Helper()
	onLoop(t, sc.Loop(), func() {
		if err := sc.PauseRead(); err != nil {
			t.Errorf("PauseRead: %v", err)
		}
	})
}

// TestConnPauseReadStopsReading: after PauseRead on the loop no recv is pending (no read
// interest) and a line the peer sends stays in the kernel; ResumeRead serves it.
func TestConnPauseReadStopsReading(t *testing.T) {
	eachSetup(t, func(t *testing.T, s setup) {
		r := newRecorder()
		e := startEngine(t, r, s.opts()...)
		c := dialEngine(t, e)
		sc := r.next(t)
		pauseOnLoop(t, sc)
		heldLine(t, r, c, sc, "held")
		onLoop(t, sc.Loop(), func() {
			if err := sc.ResumeRead(); err != nil {
				t.Errorf("ResumeRead: %v", err)
			}
		})
		if got := readN(t, c, 5); got != "held\n" {
			t.Fatalf("reply %q after ResumeRead", got)
		}
	})
}

// pausedWithLine serves a recorder on s, connects, pauses the connection's reading from the
// test's goroutine and sends line, which stays in the kernel (heldLine); it returns the
// recorder, the client and the server's Conn.
func pausedWithLine(t *testing.T, s setup, line string) (*recorder, net.Conn, *Conn) {
	t.Helper()
	r := newRecorder()
	e := startEngine(t, r, s.opts()...)
	c := dialEngine(t, e)
	sc := r.next(t)
	if err := sc.PauseRead(); err != nil {
		t.Fatalf("PauseRead: %v", err)
	}
	heldLine(t, r, c, sc, line)
	return r, c, sc
}

// TestConnPauseReadFromAnotherGoroutine: PauseRead and ResumeRead called from another
// goroutine than the loop's hold and release reading as on the loop.
func TestConnPauseReadFromAnotherGoroutine(t *testing.T) {
	eachSetup(t, func(t *testing.T, s setup) {
		_, c, sc := pausedWithLine(t, s, "held")
		if err := sc.ResumeRead(); err != nil {
			t.Fatalf("ResumeRead: %v", err)
		}
		if got := readN(t, c, 5); got != "held\n" {
			t.Fatalf("reply %q after ResumeRead", got)
		}
	})
}

// TestConnResumeReadServesBufferedInput: a handler that serves one line per call and pauses
// leaves the rest buffered; each ResumeRead serves the next line without new bytes.
func TestConnResumeReadServesBufferedInput(t *testing.T) {
	eachSetup(t, func(t *testing.T, s setup) {
		lines := make(chan string, 10)
		h := handlerFunc(func(c *Conn) {
			b, _ := c.Peek(-1)
			i := strings.IndexByte(string(b), '\n')
			if i < 0 {
				return
			}
			lines <- string(b[:i])
			c.Discard(i + 1)
			if err := c.PauseRead(); err != nil {
				t.Errorf("PauseRead in OnData: %v", err)
			}
		})
		e := startEngine(t, h, s.opts()...)
		c := dialEngine(t, e)
		c.Write([]byte("a\nb\nc\n"))
		var sc *Conn
		for _, step := range []struct {
			want string
			left int
		}{{"a", 4}, {"b", 2}, {"c", 0}} {
			want := step.want
			if sc != nil {
				if err := sc.ResumeRead(); err != nil {
					t.Fatalf("ResumeRead: %v", err)
				}
			}
			if got := recvString(t, lines); got != want {
				t.Fatalf("line %q, want %q", got, want)
			}
			if sc == nil {
				sc = onlyConn(t, e)
			}
			var left int
			onLoop(t, sc.Loop(), func() { left = sc.Buffered() })
			if left != step.left {
				t.Fatalf("after line %q, %d bytes buffered, want %d", want, left, step.left)
			}
		}
	})
}

// TestConnPauseReadOutlastsBackpressure: a connection held by PauseRead stays unread when the
// write limit's pause ends (the client reads the flood): the line it sent meanwhile is served
// only at ResumeRead.
func TestConnPauseReadOutlastsBackpressure(t *testing.T) {
	eachSetup(t, func(t *testing.T, s setup) {
		f, e, c := startFlooded(t, s)
		sc := onlyConn(t, e)
		onLoop(t, sc.Loop(), func() {
			if err := sc.PauseRead(); err != nil {
				t.Errorf("PauseRead: %v", err)
			}
		})
		c.Write([]byte("after\n"))
		if got := readN(t, c, 1<<20); got != strings.Repeat("f", 1<<20) {
			t.Fatal("the flood came back altered")
		}
		eventually(t, "the end of backpressure, and the line in the kernel or served", func() bool {
			return strings.Contains(f.log(), "after") || f.log() == "flood paused resumed" && inKernel(t, sc) == 6
		})
		if got := f.log(); got != "flood paused resumed" {
			t.Fatalf("events %q: the line was served while reading was paused", got)
		}
		if reading(t, sc) {
			t.Fatal("the end of backpressure resumed reading that PauseRead paused")
		}
		if err := sc.ResumeRead(); err != nil {
			t.Fatalf("ResumeRead: %v", err)
		}
		if got := readN(t, c, 6); got != "after\n" {
			t.Fatalf("reply %q", got)
		}
	})
}

// recvString receives from ch within waitFor.
func recvString(t *testing.T, ch <-chan string) string {
	t.Helper()
	select {
	case s := <-ch:
		return s
	case <-time.After(waitFor):
		t.Fatalf("nothing received within %v", waitFor)
		return ""
	}
}

// onlyConn is e's one connection (e has one loop).
func onlyConn(t *testing.T, e *Engine) *Conn {
	t.Helper()
	var sc *Conn
	l := e.Loops()[0]
	onLoop(t, l, func() {
		for _, c := range l.conns.all {
			if c == nil {
				continue
			}
			sc = c
		}
	})
	if sc == nil {
		t.Fatal("no connection open")
	}
	return sc
}

// TestConnPauseReadSeesPeerReset: a connection whose reading is paused (no recv pending, no read
// interest) learns of its peer's reset without being resumed: OnClose comes, its err wrapping
// ECONNRESET.
func TestConnPauseReadSeesPeerReset(t *testing.T) {
	eachSetup(t, func(t *testing.T, s setup) {
		r, c, _ := pausedWithLine(t, s, "unread")
		c.(*net.TCPConn).SetLinger(0)
		c.Close() // a reset: SO_LINGER 0
		if _, err := r.closedWith(t); !errors.Is(err, unix.ECONNRESET) {
			t.Fatalf("OnClose err %v, want ECONNRESET", err)
		}
	})
}

// TestConnPauseReadKeepsInputAfterPeerFIN: the peer's half-close seen while reading is paused
// loses no byte: the line it sent before it stays in the kernel, and ResumeRead serves it (the
// reply comes, then EOF).
func TestConnPauseReadKeepsInputAfterPeerFIN(t *testing.T) {
	eachSetup(t, func(t *testing.T, s setup) {
		_, c, sc := pausedWithLine(t, s, "kept")
		c.(*net.TCPConn).CloseWrite()
		eventually(t, "the half-close seen while paused", func() bool {
			var seen bool
			onLoop(t, sc.Loop(), func() { seen = sc.fl&cfPeerShut != 0 })
			return seen
		})
		if n := inKernel(t, sc); n != 5 {
			t.Fatalf("%d bytes in the socket's receive queue after the half-close, want 5", n)
		}
		if err := sc.ResumeRead(); err != nil {
			t.Fatalf("ResumeRead: %v", err)
		}
		if got := readToEOF(t, c); got != "kept\n" {
			t.Fatalf("the peer read %q before EOF, want %q", got, "kept\n")
		}
	})
}

// afterPauser is a Handler that, at its connection's first input, pauses reading and asks
// AfterPause for the input and a dup(2) of the socket: what the test reads from there.
type afterPauser struct {
	got chan afterPaused
}

type afterPaused struct {
	c     *Conn
	input []byte
	dup   net.Conn
	err   error
}

func (a *afterPauser) OnOpen(*Conn)         {}
func (a *afterPauser) OnClose(*Conn, error) {}
func (a *afterPauser) OnData(c *Conn) {
	if err := c.PauseRead(); err != nil {
		a.got <- afterPaused{err: err}
		return
	}
	err := c.AfterPause(func() {
		in, _ := c.Peek(-1)
		p := afterPaused{c: c, input: bytes.Clone(in)}
		var fd int
		if fd, p.err = unix.FcntlInt(uintptr(c.Fd()), unix.F_DUPFD_CLOEXEC, 0); p.err == nil {
			f := os.NewFile(uintptr(fd), "dup")
			p.dup, p.err = net.FileConn(f)
			f.Close()
		}
		a.got <- p
	})
	if err != nil {
		a.got <- afterPaused{err: err}
	}
}

// TestConnAfterPauseLeavesTheRestInTheSocket: AfterPause's function runs once nothing more
// comes into the input: the input it sees, then what a dup of the socket reads, are the stream
// the peer sent, in order, and the input does not grow after it (a recv in flight when
// PauseRead came has ended first).
func TestConnAfterPauseLeavesTheRestInTheSocket(t *testing.T) {
	eachSetup(t, func(t *testing.T, s setup) {
		a := &afterPauser{got: make(chan afterPaused, 1)}
		e := startEngine(t, a, s.opts()...)
		c := dialEngine(t, e)
		stream := make([]byte, 8<<20)
		for i := range stream {
			stream[i] = byte(i*7 + i>>12)
		}
		sent := make(chan error, 1)
		go func() {
			_, err := c.Write(stream)
			sent <- err
		}()
		var p afterPaused
		select {
		case p = <-a.got:
		case <-time.After(waitFor):
			t.Fatal("AfterPause's function did not run")
		}
		if p.err != nil {
			t.Fatal(p.err)
		}
		defer p.dup.Close()
		p.dup.SetReadDeadline(time.Now().Add(waitFor))
		rest := make([]byte, len(stream)-len(p.input))
		if _, err := io.ReadFull(p.dup, rest); err != nil {
			t.Fatalf("reading the rest from the socket after %d bytes of input: %v", len(p.input), err)
		}
		if got := append(p.input, rest...); !bytes.Equal(got, stream) {
			i := 0
			for i < len(got) && got[i] == stream[i] {
				i++
			}
			t.Fatalf("input (%d bytes) then socket differ from the stream at byte %d", len(p.input), i)
		}
		if err := <-sent; err != nil {
			t.Fatalf("sending: %v", err)
		}
		var n int
		onLoop(t, p.c.Loop(), func() { n = p.c.Buffered() })
		if n != len(p.input) {
			t.Fatalf("the input grew after AfterPause's function: %d bytes, then %d", len(p.input), n)
		}
	})
}

// inboxLen is the number of entries waiting in l's inbox (writes, closes, sockets, functions).
func inboxLen(l *Loop) int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return len(l.inW) + len(l.inC) + len(l.inFd) + len(l.inF)
}

// TestConnPauseResumeStormCoalesces: while a goroutine calls PauseRead and ResumeRead in a
// tight loop, the loop's inbox holds at most a few entries (the requests coalesce), a line the
// client sends is echoed, and the engine still ends within Shutdown's deadline.
func TestConnPauseResumeStormCoalesces(t *testing.T) {
	eachSetup(t, func(t *testing.T, s setup) {
		r := newRecorder()
		e := startEngine(t, r, s.opts()...)
		c := dialEngine(t, e)
		sc := r.next(t)
		stop := make(chan struct{})
		stormed := make(chan int)
		go func() {
			n := 0
			defer func() { stormed <- n }()
			for ; ; n++ {
				select {
				case <-stop:
					return
				default:
				}
				if sc.PauseRead() != nil || sc.ResumeRead() != nil {
					return // the loop has ended
				}
			}
		}()
		stopped := false
		stopStorm := func() {
			if !stopped {
				stopped = true
				close(stop)
				t.Logf("%d PauseRead, ResumeRead pairs", <-stormed)
			}
		}
		defer stopStorm()
		most := 0
		for range 100 {
			most = max(most, inboxLen(sc.Loop()))
			time.Sleep(50 * time.Microsecond)
		}
		if most > 4 {
			t.Errorf("the loop's inbox held %d entries during the storm, want at most 4", most)
		}
		// The echo's deadline starts here: on a starved machine the sampling above, a hundred
		// sleeps beside a spinning goroutine, can take longer than the one set at the dial.
		c.SetDeadline(time.Now().Add(waitFor))
		c.Write([]byte("through\n"))
		if got := readN(t, c, 8); got != "through\n" {
			t.Fatalf("reply %q", got)
		}
		shut, stopShut := context.WithTimeout(context.Background(), waitFor)
		defer stopShut()
		done := make(chan error, 1)
		go func() { done <- e.Shutdown(shut) }()
		select {
		case err := <-done:
			if err != nil {
				t.Fatalf("Shutdown: %v", err)
			}
		case <-time.After(2 * waitFor):
			t.Fatalf("Shutdown did not return within %v", 2*waitFor)
		}
		stopStorm()
	})
}

// TestConnPauseResumeLastCallWins: of many PauseRead and ResumeRead calls from another
// goroutine, the last one counts: after a thousand pairs and a PauseRead a line stays unread;
// ResumeRead serves it.
func TestConnPauseResumeLastCallWins(t *testing.T) {
	eachSetup(t, func(t *testing.T, s setup) {
		r := newRecorder()
		e := startEngine(t, r, s.opts()...)
		c := dialEngine(t, e)
		sc := r.next(t)
		for range 1000 {
			if err := sc.PauseRead(); err != nil {
				t.Fatalf("PauseRead: %v", err)
			}
			if err := sc.ResumeRead(); err != nil {
				t.Fatalf("ResumeRead: %v", err)
			}
		}
		if err := sc.PauseRead(); err != nil {
			t.Fatalf("PauseRead: %v", err)
		}
		heldLine(t, r, c, sc, "last")
		if err := sc.ResumeRead(); err != nil {
			t.Fatalf("ResumeRead: %v", err)
		}
		if got := readN(t, c, 5); got != "last\n" {
			t.Fatalf("reply %q after ResumeRead", got)
		}
	})
}

// pausingReader is a handler that takes all of its input on each call and pauses reading: it
// sends what each call saw (its size, and whether EOF was true) on got.
type pausingReader struct{ got chan [2]int }

func (h pausingReader) OnData(c *Conn) {
	n := c.Buffered()
	eof := 0
	if c.EOF() {
		eof = 1
	}
	c.Discard(n)
	if err := c.PauseRead(); err != nil {
		panic(err)
	}
	h.got <- [2]int{n, eof}
}

// servedInPauses sends size bytes to a pausingReader on s, resumes its
// reading from the test's goroutine after each call, and returns the sizes and EOFs the calls
// saw, until they have taken size bytes.
func servedInPauses(t *testing.T, s setup, size int) [][2]int {
	t.Helper()
	h := pausingReader{got: make(chan [2]int, 1)}
	e := startEngine(t, h, s.opts()...)
	c := dialEngine(t, e)
	go c.Write(bytes.Repeat([]byte{'x'}, size))
	var calls [][2]int
	var sc *Conn
	deadline := time.After(waitFor)
	for taken := 0; taken < size; {
		select {
		case got := <-h.got:
			calls = append(calls, got)
			taken += got[0]
		case <-deadline:
			t.Fatalf("%d of %d bytes served within %v", func() int {
				n := 0
				for _, g := range calls {
					n += g[0]
				}
				return n
			}(), size, waitFor)
		}
		if sc == nil {
			sc = onlyConn(t, e)
		}
		if err := sc.ResumeRead(); err != nil && taken < size {
			t.Fatalf("ResumeRead: %v", err)
		}
	}
	return calls
}

// TestConnResumeServesWhatWaitedInPieces: the input that waited through a PauseRead (on uring,
// the multishot recv's completions in flight when it came: up to megabytes) is given to OnData
// in pieces of at most 64 KiB, and none after the handler pauses again, so that a handler
// that passes its input on (a broadcast) is not handed megabytes at once.
func TestConnResumeServesWhatWaitedInPieces(t *testing.T) {
	eachSetup(t, func(t *testing.T, s setup) {
		calls := servedInPauses(t, s, 4<<20)
		most := 0
		for _, g := range calls {
			most = max(most, g[0])
		}
		if most > leftPiece {
			t.Fatalf("an OnData was given %d bytes at once (of 4 MiB, in %d calls); want at most %d", most, len(calls), leftPiece)
		}
	})
}

// TestConnEOFOnlyWithTheLastPiece: while the input that waited is given in pieces, EOF is
// false until the piece that holds the last byte, and true with it: a handler that trusts EOF
// sees everything. The FIN is in before the pause ends.
func TestConnEOFOnlyWithTheLastPiece(t *testing.T) {
	eachSetup(t, func(t *testing.T, s setup) {
		const size = 512 << 10
		type call struct {
			n   int
			eof bool
		}
		var calls []call
		taken := 0
		done := make(chan []call, 1)
		resumeHoard(t, s, size, true, func(c *Conn) {
			n := c.Buffered()
			calls = append(calls, call{n, c.EOF()})
			c.Discard(n)
			if taken += n; taken == size {
				done <- calls
			}
		})
		got := received(t, done, "the input was not all served")
		if len(got) < 2 {
			t.Fatalf("the %d bytes that waited were given in %d call; want pieces", size, len(got))
		}
		taken = 0
		for i, g := range got {
			taken += g.n
			if g.eof != (i == len(got)-1) {
				t.Fatalf("call %d of %d (%d of %d bytes given) saw EOF %v", i+1, len(got), taken, size, g.eof)
			}
		}
	})
}

// hoarder is a handler that leaves all of its input until it holds size bytes (and, with fin,
// EOF is true), then pauses reading and sends the connection on full; once the test resumes
// it, take serves each call.
type hoarder struct {
	size   int
	fin    bool
	full   chan *Conn
	take   func(c *Conn)
	taking bool // the loop's goroutine only
}

func (h *hoarder) OnData(c *Conn) {
	if h.taking {
		h.take(c)
		return
	}
	if c.Buffered() < h.size || h.fin && !c.EOF() {
		return
	}
	h.taking = true
	if err := c.PauseRead(); err != nil {
		panic(err)
	}
	h.full <- c
}

// resumeHoard has size bytes (and a FIN if fin) sent to a hoarder on s, waits until they are
// all in the connection's input with reading paused and no recv pending, then resumes it from
// the test's goroutine: what waited (megabytes, all in the input) goes to take in pieces. It
// returns the client's side.
func resumeHoard(t *testing.T, s setup, size int, fin bool, take func(c *Conn)) net.Conn {
	t.Helper()
	h := &hoarder{size: size, fin: fin, full: make(chan *Conn, 1), take: take}
	e := startEngine(t, h, s.opts()...)
	c := dialEngine(t, e)
	sent := make(chan error, 1)
	go func() {
		_, err := c.Write(bytes.Repeat([]byte{'x'}, size))
		if err == nil && fin {
			err = c.(*net.TCPConn).CloseWrite()
		}
		sent <- err
	}()
	sc := received(t, h.full, "the bytes sent, all in the input")
	if err := <-sent; err != nil {
		t.Fatalf("client write: %v", err)
	}
	eventually(t, "the recv's end (a cancelled one may still be pending)", func() bool { return !reading(t, sc) })
	if err := sc.ResumeRead(); err != nil {
		t.Fatalf("ResumeRead: %v", err)
	}
	return c
}

// TestConnPiecesLeaveTheInputInPlace: the pieces of what waited through a pause are given
// where they are in the input: what a piece's OnData consumed is passed over, not the rest
// moved to the front after each piece (a 2 MiB backlog given in 64 KiB pieces moved about
// 32 MiB). The test sees where each call's input starts (Peek's first byte) and counts the
// bytes the layer moved between calls.
func TestConnPiecesLeaveTheInputInPlace(t *testing.T) {
	eachSetup(t, func(t *testing.T, s setup) {
		const size = 1 << 20
		type call struct{ at, n uintptr }
		var calls []call
		taken := 0
		done := make(chan []call, 1)
		resumeHoard(t, s, size, false, func(c *Conn) {
			b, _ := c.Peek(-1)
			calls = append(calls, call{uintptr(unsafe.Pointer(unsafe.SliceData(b))), uintptr(len(b))})
			if taken += len(b); taken == size {
				done <- calls
			}
			c.Discard(len(b))
		})
		got := received(t, done, "the input was not all served")
		moved, left := uintptr(0), uintptr(size)-got[0].n
		for i := 1; i < len(got); i++ {
			if got[i].at != got[i-1].at+got[i-1].n {
				moved += left
			}
			left -= got[i].n
		}
		if moved != 0 {
			t.Fatalf("the layer moved %d bytes of input between the %d calls that took %d bytes; want 0", moved, len(got), size)
		}
	})
}

// TestConnPiecesWaitForTheOutput: a handler that stops for its output within a piece of what
// waited through a pause (it leaves its input while output is pending: WriteLimit's doc) is
// given the rest once the output has drained, as after any OnData, not handed ever larger
// pieces in the same turn. The handler answers a 4 KiB request with 4 KiB when nothing is
// pending and takes nothing otherwise.
func TestConnPiecesWaitForTheOutput(t *testing.T) {
	eachSetup(t, func(t *testing.T, s setup) {
		const size, req = 1 << 20, 4 << 10
		reply := bytes.Repeat([]byte{'y'}, req)
		type call struct{ pending, took int }
		var calls []call
		taken := 0
		done := make(chan []call, 1)
		c := resumeHoard(t, s, size, false, func(c *Conn) {
			k := call{pending: c.Pending()}
			if k.pending == 0 && c.Buffered() >= req {
				c.Discard(req)
				c.Write(reply)
				k.took = req
			}
			calls = append(calls, k)
			if taken += k.took; taken == size {
				done <- calls
			}
		})
		readN(t, c, size)
		got := received(t, done, "the input was not all served")
		for i := 1; i < len(got); i++ {
			if got[i-1].took == 0 && got[i-1].pending > 0 && got[i].pending > 0 {
				t.Fatalf("call %d of %d found %d bytes of output pending, as did call %d, which took nothing: OnData was called again before the output drained", i+1, len(got), got[i].pending, i)
			}
		}
	})
}

// TestConnResumeReadAfterTheLoopEndedIsErrClosed: once the connection's loop has ended,
// PauseRead and ResumeRead from another goroutine return net.ErrClosed, also the call that
// finds an earlier one queued (it changed the hold asked without the lock and returned nil).
// The loop is ended underneath with a PauseRead queued, and the test calls ResumeRead while
// the loop's end runs a function queued before it.
func TestConnResumeReadAfterTheLoopEndedIsErrClosed(t *testing.T) {
	eachSetup(t, func(t *testing.T, s setup) {
		r := newRecorder()
		e := startEngine(t, r, s.opts()...)
		dialEngine(t, e)
		sc := r.next(t)
		l := sc.Loop()
		wait := func(ch chan struct{}) {
			select {
			case <-ch:
			case <-time.After(waitFor):
				t.Errorf("not within %v", waitFor)
			}
		}
		inside, stop := make(chan struct{}), make(chan struct{})
		err := l.Post(func() {
			close(inside)
			wait(stop)
			l.EventLoop().Stop() // the loop ends after this function: what is queued runs at its end
		})
		if err != nil {
			t.Fatalf("Post: %v", err)
		}
		wait(inside)
		ending, release := make(chan struct{}), make(chan struct{})
		if err := l.Post(func() { close(ending); wait(release) }); err != nil {
			t.Fatalf("Post: %v", err)
		}
		if err := sc.PauseRead(); err != nil {
			t.Fatalf("PauseRead while the loop runs: %v", err)
		}
		close(stop)
		wait(ending)
		err = sc.ResumeRead()
		close(release)
		if !errors.Is(err, net.ErrClosed) {
			t.Errorf("ResumeRead once the loop has ended: %v, want net.ErrClosed", err)
		}
	})
}

// TestConnResumeReadsOnlyOnceWhatWaitedIsServed: once a pause ends, the connection is not read
// (no recv pending, no Read asked) until the input that waited has been given to OnData: a
// handler that holds reading again between its pieces (Forward does, at each) would otherwise
// be brought more at each resume than its pieces take, and its input would grow without end.
// Then reading resumes, and what the peer sends next is served.
func TestConnResumeReadsOnlyOnceWhatWaitedIsServed(t *testing.T) {
	eachSetup(t, func(t *testing.T, s setup) {
		const size, more = 512 << 10, 64 << 10
		var readAt []int // the input left when a call found the connection read (the loop's goroutine)
		taken := 0
		done := make(chan []int, 2)
		var sc *Conn
		c := resumeHoard(t, s, size, false, func(c *Conn) {
			sc = c
			if taken < size && readingNow(c) {
				readAt = append(readAt, size-taken)
			}
			n, _ := c.Discard(c.Buffered())
			if taken += n; taken == size || taken == size+more {
				done <- readAt
			}
		})
		got := received(t, done, "the input that waited was not all served")
		if len(got) > 0 {
			t.Fatalf("the connection was read while the input that waited was served: with %d bytes of it left (and at %d calls more)", got[0], len(got)-1)
		}
		eventually(t, "reading resumed", func() bool { return reading(t, sc) })
		if _, err := c.Write(make([]byte, more)); err != nil {
			t.Fatal(err)
		}
		select {
		case <-done:
		case <-time.After(waitFor):
			t.Fatalf("what the peer sent after the input that waited was not served within %v", waitFor)
		}
	})
}
