//go:build linux

package server

// Tests of the peer's EOF and half-close: the input left at the EOF is still handed to OnData
// (Conn.EOF true), a half-open connection (WithHalfOpen) stays writable after the peer's EOF,
// and CloseWrite sends a FIN and keeps reading.

import (
	"bytes"
	"errors"
	"io"
	"net"
	"os/exec"
	"strconv"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// atEOF is what a handler saw in its OnData call at the peer's EOF: the connection and the
// input left.
type atEOF struct {
	c    *Conn
	rest string
}

// eofLines is a Handler that echoes each complete line and sends what it sees at the peer's
// EOF to eofs; with reply set it answers the input left there with it (and consumes it).
type eofLines struct {
	eofs  chan atEOF
	reply bool
}

func newEOFLines() *eofLines { return &eofLines{eofs: make(chan atEOF, 10)} }

func (h *eofLines) OnData(c *Conn) {
	for {
		b, _ := c.Peek(-1)
		i := bytes.IndexByte(b, '\n')
		if i < 0 {
			break
		}
		c.Write(b[:i+1])
		c.Discard(i + 1)
	}
	if c.EOF() {
		b, _ := c.Peek(-1)
		h.eofs <- atEOF{c, string(b)}
		if h.reply {
			c.Write(b)
			c.Discard(len(b))
		}
	}
}

// next waits for an OnData call at the peer's EOF.
func (h *eofLines) next(t *testing.T) atEOF {
	t.Helper()
	select {
	case a := <-h.eofs:
		return a
	case <-time.After(waitFor):
		t.Fatalf("no OnData call with EOF true within %v", waitFor)
		return atEOF{}
	}
}

// TestConnPeerEOFHandsOverUnreadInput: input the handler left when the peer shuts down its
// side is handed to OnData once more, with EOF true; the handler's answer to it reaches the
// peer before the close.
func TestConnPeerEOFHandsOverUnreadInput(t *testing.T) {
	eachSetup(t, func(t *testing.T, s setup) {
		h := newEOFLines()
		h.reply = true
		e := startEngine(t, h, s.opts()...)
		c := dialEngine(t, e)
		c.Write([]byte("a\ntail"))
		if got := readN(t, c, 2); got != "a\n" {
			t.Fatalf("reply %q", got)
		}
		c.(*net.TCPConn).CloseWrite()
		if a := h.next(t); a.rest != "tail" {
			t.Fatalf("input at EOF %q, want \"tail\"", a.rest)
		}
		if got := readToEOF(t, c); got != "tail" {
			t.Fatalf("after the half-close the peer read %q, want \"tail\"", got)
		}
	})
}

// TestConnHalfOpenRepliesAfterPeerHalfClose: with WithHalfOpen, a client that sends "ping"
// and shuts down its writing side still gets the reply written from another goroutine after
// the server saw its EOF, then EOF when the handler closes.
func TestConnHalfOpenRepliesAfterPeerHalfClose(t *testing.T) {
	eachSetup(t, func(t *testing.T, s setup) {
		h := newEOFLines()
		e := startEngine(t, h, append(s.opts(), WithHalfOpen(true))...)
		c := dialEngine(t, e)
		c.Write([]byte("ping"))
		c.(*net.TCPConn).CloseWrite()
		a := h.next(t)
		if a.rest != "ping" {
			t.Fatalf("input at EOF %q, want \"ping\"", a.rest)
		}
		writeFromElsewhere(t, a.c, "pong")
		if err := a.c.Close(); err != nil {
			t.Fatalf("Close from another goroutine: %v", err)
		}
		if got := readToEOF(t, c); got != "pong" {
			t.Fatalf("the client read %q, want \"pong\"", got)
		}
	})
}

// TestConnCloseWriteKeepsReading: CloseWrite from another goroutine sends what was written,
// then EOF; later writes fail with net.ErrClosed; what the peer sends after is still handed to
// OnData; the peer's close then ends the connection with io.EOF.
func TestConnCloseWriteKeepsReading(t *testing.T) {
	eachSetup(t, func(t *testing.T, s setup) {
		r := newRecorder()
		e := startEngine(t, r, s.opts()...)
		c := dialEngine(t, e)
		sc := r.next(t)
		writeFromElsewhere(t, sc, "bye\n")
		if err := sc.CloseWrite(); err != nil {
			t.Fatalf("CloseWrite: %v", err)
		}
		if err := sc.CloseWrite(); !errors.Is(err, net.ErrClosed) {
			t.Errorf("second CloseWrite: %v, want net.ErrClosed", err)
		}
		if got := readToEOF(t, c); got != "bye\n" {
			t.Fatalf("the client read %q before EOF, want \"bye\\n\"", got)
		}
		if _, err := sc.WriteString("late\n"); !errors.Is(err, net.ErrClosed) {
			t.Errorf("Write after CloseWrite: %v, want net.ErrClosed", err)
		}
		if _, err := c.Write([]byte("more\n")); err != nil {
			t.Fatalf("the client's write after the server's FIN: %v", err)
		}
		eventually(t, "the line sent after CloseWrite served", func() bool {
			return strings.Contains(strings.Join(r.log(), "|"), "data more")
		})
		c.Close()
		if _, err := r.closedWith(t); err != io.EOF {
			t.Errorf("OnClose err %v, want io.EOF", err)
		}
	})
}

// TestConnHalfOpenServesNCN: `nc -N` (a real client that shuts down its writing side at the
// end of its input) gets its reply from a connection made half-open by SetHalfOpen in OnOpen.
func TestConnHalfOpenServesNCN(t *testing.T) {
	nc, err := exec.LookPath("nc")
	if err != nil {
		t.Skip("nc is not installed")
	}
	if help, _ := exec.Command(nc, "-h").CombinedOutput(); !bytes.Contains(help, []byte("-N")) {
		t.Skip("this nc has no -N (shutdown at the end of its input)")
	}
	eachSetup(t, func(t *testing.T, s setup) {
		h := &halfOpener{eofLines: newEOFLines()}
		e := startEngine(t, h, s.opts()...)
		addr := e.Addr().(*net.TCPAddr)
		cmd := exec.Command(nc, "-N", addr.IP.String(), strconv.Itoa(addr.Port))
		cmd.Stdin = strings.NewReader("ping")
		var out bytes.Buffer
		cmd.Stdout = &out
		if err := cmd.Start(); err != nil {
			t.Fatalf("nc: %v", err)
		}
		done := make(chan error, 1)
		go func() { done <- cmd.Wait() }()
		a := h.next(t)
		writeFromElsewhere(t, a.c, "pong")
		a.c.Close()
		select {
		case err := <-done:
			if err != nil || out.String() != "pong" {
				t.Fatalf("nc -N: %v, read %q, want \"pong\"", err, out.String())
			}
		case <-time.After(waitFor):
			cmd.Process.Kill()
			<-done
			t.Fatalf("nc -N did not end within %v (read %q)", waitFor, out.String())
		}
	})
}

// halfOpener is eofLines whose connections are made half-open in OnOpen.
type halfOpener struct{ *eofLines }

func (h *halfOpener) OnOpen(c *Conn) { c.SetHalfOpen(true) }

// unreadAtClose is eofLines that sends, from OnClose, its reason and the input left (Peek).
type unreadAtClose struct {
	*eofLines
	closed chan atEOF
	errs   chan error
}

func (h *unreadAtClose) OnClose(c *Conn, err error) {
	b, _ := c.Peek(-1)
	if c.Buffered() != len(b) {
		b = []byte("Buffered and Peek disagree")
	}
	h.closed <- atEOF{c, string(b)}
	h.errs <- err
}

// TestConnOnCloseShowsUnreadInput: input the handler leaves to the end (here, past the peer's
// EOF) is still there in OnClose: Buffered and Peek show it.
func TestConnOnCloseShowsUnreadInput(t *testing.T) {
	eachSetup(t, func(t *testing.T, s setup) {
		h := &unreadAtClose{eofLines: newEOFLines(), closed: make(chan atEOF, 1), errs: make(chan error, 1)}
		e := startEngine(t, h, s.opts()...)
		c := dialEngine(t, e)
		c.Write([]byte("a\ntail"))
		c.(*net.TCPConn).CloseWrite()
		if got := readToEOF(t, c); got != "a\n" {
			t.Fatalf("the client read %q, want \"a\\n\"", got)
		}
		select {
		case a := <-h.closed:
			if err := <-h.errs; a.rest != "tail" || err != io.EOF {
				t.Fatalf("OnClose(%v) with input %q, want io.EOF and \"tail\"", err, a.rest)
			}
		case <-time.After(waitFor):
			t.Fatalf("no OnClose within %v", waitFor)
		}
	})
}

// TestConnCloseRacingCloseWriteCloses: Close from one goroutine while another calls CloseWrite
// always takes (nil): whichever comes first, the connection is open or only its writing side is
// closed, and Close works on both. The peer reads EOF and the connection closes once.
func TestConnCloseRacingCloseWriteCloses(t *testing.T) {
	eachSetup(t, func(t *testing.T, s setup) {
		r := newRecorder()
		e := startEngine(t, r, s.opts()...)
		for i := range 300 {
			c := dialEngine(t, e)
			sc := r.next(t)
			start := make(chan struct{})
			errc := make(chan error, 2)
			go func() { <-start; sc.CloseWrite(); errc <- nil }()
			go func() { <-start; errc <- sc.Close() }()
			close(start)
			for range 2 {
				if err := <-errc; err != nil {
					t.Fatalf("connection %d: Close racing CloseWrite: %v, want nil", i, err)
				}
			}
			if got := readToEOF(t, c); got != "" {
				t.Fatalf("connection %d: the peer read %q before EOF", i, got)
			}
			c.Close()
			if got, _ := r.closedWith(t); got != sc {
				t.Fatalf("connection %d: another connection closed", i)
			}
		}
	})
}

// TestConnCloseAfterCloseWriteClaimCloses: a Close that comes while another goroutine's
// CloseWrite is under way (once CloseWrite has taken the writing side and queued the shutdown:
// the afterCloseWriteClaim seam) takes (nil) and closes the connection, as any Close after
// CloseWrite does.
func TestConnCloseAfterCloseWriteClaimCloses(t *testing.T) {
	eachSetup(t, func(t *testing.T, s setup) {
		r := newRecorder()
		e := startEngine(t, r, s.opts()...)
		c := dialEngine(t, e)
		sc := r.next(t)
		var closeErr error
		afterCloseWriteClaim = func(cc *Conn) { closeErr = cc.Close() }
		t.Cleanup(func() { afterCloseWriteClaim = nil })
		if err := sc.CloseWrite(); err != nil {
			t.Fatalf("CloseWrite: %v", err)
		}
		if closeErr != nil {
			t.Fatalf("Close during CloseWrite: %v, want nil", closeErr)
		}
		if got := readToEOF(t, c); got != "" {
			t.Fatalf("the peer read %q before EOF", got)
		}
		c.Close()
		if _, err := r.closedWith(t); err != nil {
			t.Errorf("OnClose err %v, want nil (Close)", err)
		}
		if err := sc.Close(); !errors.Is(err, net.ErrClosed) {
			t.Errorf("Close after the close: %v, want net.ErrClosed", err)
		}
	})
}

// TestConnCloseWriteRefusesAPostedWriteAfterIt: once CloseWrite from another goroutine has
// refused a Write (the afterCloseWriteClaim seam, as it returns), a function that goroutine
// posts next runs after the shutdown: its Write fails too, and the peer reads EOF alone, not
// the function's bytes after the refused ones (a hole in the stream).
func TestConnCloseWriteRefusesAPostedWriteAfterIt(t *testing.T) {
	eachSetup(t, func(t *testing.T, s setup) {
		r := newRecorder()
		e := startEngine(t, r, s.opts()...)
		c := dialEngine(t, e)
		sc := r.next(t)
		var refused error
		posted := make(chan error, 1)
		afterCloseWriteClaim = func(cc *Conn) {
			_, refused = cc.WriteString("refused\n")
			if err := cc.Loop().Post(func() { _, err := cc.WriteString("posted\n"); posted <- err }); err != nil {
				posted <- err
			}
		}
		t.Cleanup(func() { afterCloseWriteClaim = nil })
		if err := sc.CloseWrite(); err != nil {
			t.Fatalf("CloseWrite: %v", err)
		}
		afterCloseWriteClaim = nil
		if !errors.Is(refused, net.ErrClosed) {
			t.Errorf("Write after CloseWrite took the writing side: %v, want net.ErrClosed", refused)
		}
		select {
		case err := <-posted:
			if !errors.Is(err, net.ErrClosed) {
				t.Errorf("the posted function's Write: %v, want net.ErrClosed", err)
			}
		case <-time.After(waitFor):
			t.Fatal("the posted function did not run")
		}
		if got := readToEOF(t, c); got != "" {
			t.Errorf("the peer read %q before EOF, want nothing", got)
		}
	})
}

// TestConnPeerEOFSendsWhatOtherGoroutinesWrote: what another goroutine wrote (its Write
// returned nil) before the loop saw the peer's EOF is sent before the connection closes, also
// when the loop sees the EOF before it has taken those bytes (here: a goroutine writes while
// OnData runs, and the EOF came with the data).
func TestConnPeerEOFSendsWhatOtherGoroutinesWrote(t *testing.T) {
	eachSetup(t, func(t *testing.T, s setup) {
		const want = "written by another goroutine during OnData\n"
		r := newRecorder()
		r.line = func(c *Conn, line string) { writeFromElsewhere(t, c, want) }
		e := startEngine(t, r, s.opts()...)
		c := dialEngine(t, e)
		sc := r.next(t)
		release := holdLoop(t, sc.Loop())
		if _, err := io.WriteString(c, "line\n"); err != nil {
			t.Fatalf("Write: %v", err)
		}
		if err := c.(*net.TCPConn).CloseWrite(); err != nil {
			t.Fatalf("CloseWrite: %v", err)
		}
		peerFINIn(t, sc)
		release()
		if got := readToEOF(t, c); got != want {
			t.Fatalf("the peer read %q, then EOF; want %q", got, want)
		}
	})
}

// TestConnCloseAfterPeerHalfCloseWithInputUnreadSendsTheOutput: a Close of a connection whose
// peer has shut down its side (its FIN in the kernel) with input the connection has not read
// (PauseRead) sends the output and then a FIN: the input left is read and dropped first, as a
// lingering close does. Closing the socket with unread input makes the kernel send a reset,
// which drops the output still in the socket's buffer, and the peer reads ECONNRESET.
func TestConnCloseAfterPeerHalfCloseWithInputUnreadSendsTheOutput(t *testing.T) {
	eachSetup(t, func(t *testing.T, s setup) {
		r := newRecorder()
		r.line = func(*Conn, string) {} // (never called: the connection is held)
		e := startEngine(t, r, s.opts()...)
		c := dialEngine(t, e)
		sc := r.next(t)
		pauseOnLoop(t, sc)
		if _, err := io.WriteString(c, strings.Repeat("not read\n", 1000)); err != nil {
			t.Fatalf("Write: %v", err)
		}
		if err := c.(*net.TCPConn).CloseWrite(); err != nil {
			t.Fatalf("CloseWrite: %v", err)
		}
		peerFINIn(t, sc)
		want := strings.Repeat("output\n", 50000)
		writeFromElsewhere(t, sc, want)
		if err := sc.Close(); err != nil {
			t.Fatalf("Close: %v", err)
		}
		r.closedWith(t)
		if got := readToEOF(t, c); got != want {
			t.Fatalf("the peer read %d bytes of %d", len(got), len(want))
		}
	})
}

// peerFINIn waits until the peer's FIN is in sc's socket (POLLRDHUP), at most waitFor.
func peerFINIn(t *testing.T, sc *Conn) {
	t.Helper()
	eventually(t, "the peer's FIN in the kernel", func() bool {
		fds := []unix.PollFd{{Fd: int32(sc.Fd()), Events: unix.POLLRDHUP}}
		n, err := unix.Poll(fds, 0)
		return err == nil && n == 1 && fds[0].Revents&unix.POLLRDHUP != 0
	})
}
