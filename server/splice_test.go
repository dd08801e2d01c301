//go:build linux

package server

// Tests of Conn.Splice: every backend and driver (the kernel path on uring with the requests
// driver, Forward elsewhere), with a handler that joins connections in pairs, as a proxy does.

import (
	"bytes"
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/ringev/ringev"
	"github.com/ringev/ringev/internal/testutil"
	"golang.org/x/sys/unix"
)

// pairer joins its connections in pairs, in the order they open (OnOpen): the first of a pair
// waits (PauseRead) for the second, then each has the other as its Context and the pair is sent
// on pairs. sndbuf and rcvbuf, when not 0, are each connection's SO_SNDBUF and SO_RCVBUF.
type pairer struct {
	mu             sync.Mutex
	wait           *Conn
	pairs          chan [2]*Conn
	sndbuf, rcvbuf int
}

func (p *pairer) OnOpen(c *Conn) {
	if p.sndbuf > 0 {
		unix.SetsockoptInt(c.Fd(), unix.SOL_SOCKET, unix.SO_SNDBUF, p.sndbuf)
	}
	if p.rcvbuf > 0 {
		unix.SetsockoptInt(c.Fd(), unix.SOL_SOCKET, unix.SO_RCVBUF, p.rcvbuf)
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.wait == nil {
		p.wait = c
		c.PauseRead()
		return
	}
	a := p.wait
	p.wait = nil
	a.SetContext(c)
	c.SetContext(a)
	a.ResumeRead()
	p.pairs <- [2]*Conn{a, c}
}

// joiner joins its connections in pairs (pairer): each splices its input to the other, passes
// the peer's half-close on (WithHalfOpen), pauses the other's reading while its output is past
// the write limit, and closes the other when it closes.
type joiner struct {
	pairer
	closed  chan *Conn
	hold    int            // OnData leaves the input until this many bytes are buffered
	started map[*Conn]bool // OnData has called Splice
	forward bool           // OnData calls Forward, not Splice
}

func newJoiner() *joiner {
	return &joiner{pairer: pairer{pairs: make(chan [2]*Conn, 10)}, closed: make(chan *Conn, 512), started: map[*Conn]bool{}}
}

func (j *joiner) OnData(c *Conn) {
	other, ok := c.Context().(*Conn)
	if !ok || !j.started[c] && c.Buffered() < j.hold && !c.EOF() {
		return
	}
	j.started[c] = true // (the loop's goroutine only)
	if j.forward {
		c.Forward(other)
	} else {
		c.Splice(other)
	}
	if c.EOF() {
		other.CloseWrite()
	}
}

func (j *joiner) OnBackpressure(c *Conn, paused bool) {
	if other, ok := c.Context().(*Conn); !ok {
	} else if paused {
		other.PauseRead()
	} else {
		other.ResumeRead()
	}
}

func (j *joiner) OnClose(c *Conn, err error) {
	if other, ok := c.Context().(*Conn); ok {
		other.Close()
	}
	j.closed <- c
}

// joined starts an engine serving j (half-open) with opts and returns two clients whose
// connections it joined, and those connections.
func joined(t *testing.T, j *joiner, opts []Option) (a, b net.Conn, pair [2]*Conn) {
	t.Helper()
	return joinedOn(t, startEngine(t, j, append(opts, WithHalfOpen(true))...), j)
}

// joinedOn is joined on e, an engine serving j.
func joinedOn(t *testing.T, e *Engine, j *joiner) (a, b net.Conn, pair [2]*Conn) {
	t.Helper()
	a = dialEngine(t, e)
	b = dialEngine(t, e)
	select {
	case pair = <-j.pairs:
	case <-time.After(waitFor):
		t.Fatal("the two connections were not joined")
	}
	return a, b, pair
}

// splicedBytes is what the loop of c moved through its splice pipes.
func splicedBytes(t *testing.T, c *Conn) uint64 {
	var n uint64
	onLoop(t, c.Loop(), func() { n = c.l.pipes.moved })
	return n
}

// kernelPath reports whether s is a setup where Splice goes through the kernel.
func kernelPath(s setup) bool { return s.backend == "uring" && s.api == APIRequests }

// sendAndCheck writes data to w (then CloseWrite) while r reads until EOF, in a goroutine, and
// returns a channel that gets the error of either (nil: r read data exactly).
func sendAndCheck(w, r net.Conn, data []byte) <-chan error {
	errc := make(chan error, 1)
	go func() {
		werr := make(chan error, 1)
		go func() {
			_, err := w.Write(data)
			if err == nil {
				err = w.(*net.TCPConn).CloseWrite()
			}
			werr <- err
		}()
		got, err := io.ReadAll(r)
		switch {
		case err != nil:
		case !bytes.Equal(got, data):
			err = errors.New("bytes differ")
			if len(got) != len(data) {
				err = errors.New("byte count differs")
			}
		}
		if e := <-werr; err == nil {
			err = e
		}
		errc <- err
	}()
	return errc
}

// TestConnSpliceMoves10MBEachWay: 10 MB each way through two joined connections arrive
// byte-identical, and then each side's half-close; on uring with the requests driver through
// the splice pipes.
func TestConnSpliceMoves10MBEachWay(t *testing.T) {
	eachSetup(t, func(t *testing.T, s setup) {
		a, b, pair := joined(t, newJoiner(), s.opts())
		ab, ba := make([]byte, 10<<20), make([]byte, 10<<20)
		rand.Read(ab)
		rand.Read(ba)
		e1, e2 := sendAndCheck(a, b, ab), sendAndCheck(b, a, ba)
		if err := <-e1; err != nil {
			t.Errorf("a to b: %v", err)
		}
		if err := <-e2; err != nil {
			t.Errorf("b to a: %v", err)
		}
		if n := splicedBytes(t, pair[0]); kernelPath(s) && n < 10<<20 {
			t.Errorf("%d bytes went through the splice pipes, want most of the 20 MB", n)
		}
	})
}

// TestConnSpliceSendsBufferedInputFirst: input the handler left in the connection before it
// calls Splice goes first, and what comes after it follows in order: on the kernel path, the
// pipe's bytes wait while the destination's own output (that input) is still being sent.
func TestConnSpliceSendsBufferedInputFirst(t *testing.T) {
	eachSetup(t, func(t *testing.T, s setup) {
		j := newJoiner()
		j.hold = 1 << 20
		opts := s.opts()
		if kernelPath(s) { // however much the recv brings before it stops, a's reading goes on
			opts = append(opts, WithWriteLimit(16<<20), WithMaxPending(64<<20))
		}
		a, b, pair := joined(t, j, opts)
		if kernelPath(s) { // so that the held input's send waits for b
			b.(*net.TCPConn).SetReadBuffer(16 << 10)
			onLoop(t, pair[1].Loop(), func() { unix.SetsockoptInt(pair[1].Fd(), unix.SOL_SOCKET, unix.SO_SNDBUF, 16<<10) })
		}
		data := make([]byte, 32<<20) // more than the socket buffers and the recv's last bytes
		rand.Read(data)
		a, b = progressConn{a}, progressConn{b} // 32 MB: only a stall fails, not a slow machine
		werr := make(chan error, 1)
		go func() {
			_, err := a.Write(data)
			werr <- err
		}()
		if kernelPath(s) { // b reads once a pipe holds bytes while the held input is being sent
			eventually(t, "a splice while the held input is sent", func() bool {
				var both bool
				onLoop(t, pair[0].Loop(), func() { both = pair[1].unsentSpliced() > 0 && pair[1].outLen > 0 })
				return both
			})
		}
		got := make([]byte, len(data))
		if n, err := io.ReadFull(b, got); err != nil {
			t.Fatalf("b read %d of %d bytes: %v", n, len(data), err)
		}
		if !bytes.Equal(got, data) {
			t.Errorf("b read other bytes than a wrote: %s", firstDiff(got, data))
		}
		if err := <-werr; err != nil {
			t.Errorf("a writing: %v", err)
		}
	})
}

// TestConnSplicePassesHalfClose: a client's half-close reaches the other client (EOF after
// every byte), which can still answer; its own half-close then ends the first client's input,
// and both connections close. On the kernel path each half-close comes once splicing waits for
// input, so that a splice, not the recv, finds it.
func TestConnSplicePassesHalfClose(t *testing.T) {
	eachSetup(t, func(t *testing.T, s setup) {
		j := newJoiner()
		a, b, pair := joined(t, j, s.opts())
		halfClose := func(w, r net.Conn, src *Conn, msg string) {
			t.Helper()
			if _, err := w.Write([]byte(msg)); err != nil {
				t.Fatal(err)
			}
			if got := readN(t, r, len(msg)); got != msg {
				t.Fatalf("read %.20q..., want %.20q...", got, msg)
			}
			if kernelPath(s) {
				eventually(t, "splicing waiting for input", func() bool {
					var polling bool
					onLoop(t, src.Loop(), func() { polling = src.splicingOut() != nil && src.splicingOut().inPoll })
					return polling
				})
			}
			w.(*net.TCPConn).CloseWrite()
			if got := readToEOF(t, r); got != "" {
				t.Fatalf("read %q before EOF, want nothing more", got)
			}
		}
		halfClose(a, b, pair[0], strings.Repeat("ping", SpliceMinChunk)) // enough to start splicing
		halfClose(b, a, pair[1], strings.Repeat("pong", SpliceMinChunk))
		for range 2 {
			select {
			case <-j.closed:
			case <-time.After(waitFor):
				t.Fatal("the joined connections did not both close")
			}
		}
	})
}

// TestConnSplicePeerResetClosesBoth: a client reset in the middle of a stream each way, while
// the other direction waits for it to read, closes both connections (the other client reads
// EOF or a reset), and no fd, pipe or goroutine is left (eachSetup counts them).
func TestConnSplicePeerResetClosesBoth(t *testing.T) {
	eachSetup(t, func(t *testing.T, s setup) {
		j := newJoiner()
		a, b, pair := joined(t, j, s.opts())
		chunk := make([]byte, 256<<10)
		for range 8 {
			if _, err := a.Write(chunk); err != nil {
				t.Fatal(err)
			}
		}
		readN(t, b, 1<<20)              // the stream from a is under way
		go b.Write(make([]byte, 8<<20)) // a reads none of it; ends when b closes
		if kernelPath(s) {
			eventually(t, "a pipe holding bytes for a", func() bool {
				var n int
				onLoop(t, pair[0].Loop(), func() { n = pair[0].unsentSpliced() })
				return n > 0
			})
		}
		a.(*net.TCPConn).SetLinger(0)
		a.Close() // a reset, with bytes in flight both ways
		if _, err := io.Copy(io.Discard, b); err != nil && !isReset(err) {
			t.Errorf("b read until %v, want EOF or a reset", err)
		}
		for range 2 {
			select {
			case <-j.closed:
			case <-time.After(waitFor):
				t.Fatal("the joined connections did not both close")
			}
		}
	})
}

// isReset reports whether err is a connection reset.
func isReset(err error) bool {
	var op *net.OpError
	return errors.As(err, &op) && bytes.Contains([]byte(op.Err.Error()), []byte("reset"))
}

// TestConnSpliceSlowDestinationStopsTheSource: a client that does not read stops the other's
// input from being read: the writer stalls after a bounded number of bytes (the kernel's socket
// buffers and a pipe), and the reader then gets every one of them.
func TestConnSpliceSlowDestinationStopsTheSource(t *testing.T) {
	eachSetup(t, func(t *testing.T, s setup) {
		a, b, pair := joined(t, newJoiner(), s.opts())
		chunk := make([]byte, 256<<10)
		rand.Read(chunk)
		written, err := testutil.WriteUntilStall(a, chunk, 256<<20, 2*time.Second)
		if err != nil {
			t.Fatal(err)
		}
		var held int
		onLoop(t, pair[0].Loop(), func() { held = pair[1].Pending() + pair[1].unsentSpliced() + len(pair[0].inBytes()) })
		if held > 2*DefaultWriteLimit+SplicePipeSize {
			t.Errorf("the server holds %d bytes of the stalled direction, want at most %d", held, 2*DefaultWriteLimit+SplicePipeSize)
		}
		b.SetReadDeadline(time.Now().Add(waitFor))
		got := make([]byte, written)
		if n, err := io.ReadFull(b, got); err != nil {
			t.Fatalf("read %d of the %d bytes written: %v", n, written, err)
		}
		for off := 0; off < written; off += len(chunk) {
			if !bytes.Equal(got[off:min(off+len(chunk), written)], chunk[:min(len(chunk), written-off)]) {
				t.Fatalf("bytes differ in the chunk at %d", off)
			}
		}
	})
}

// TestConnSplicePauseReadStopsSplicing: PauseRead on a connection whose input is being spliced
// stops its reading (its client's writes stall, with the other client reading all the while),
// and ResumeRead brings every byte on, in order.
func TestConnSplicePauseReadStopsSplicing(t *testing.T) {
	eachSetup(t, func(t *testing.T, s setup) {
		a, b, pair := joined(t, newJoiner(), s.opts())
		chunk := make([]byte, 256<<10)
		rand.Read(chunk)
		if _, err := a.Write(chunk); err != nil { // the stream starts (splicing, on the kernel path)
			t.Fatal(err)
		}
		if got := readN(t, b, len(chunk)); got != string(chunk) {
			t.Fatal("b read other bytes than a wrote")
		}
		onLoop(t, pair[0].Loop(), func() { pair[0].PauseRead() })
		got := make(chan []byte, 1)
		go func() { // b reads on: only the pause holds a's bytes back
			all, _ := io.ReadAll(b)
			got <- all
		}()
		written, err := testutil.WriteUntilStall(a, chunk, 256<<20, 2*time.Second)
		if err != nil {
			t.Fatal(err)
		}
		if written > 32<<20 { // the kernel's socket buffers hold a few MiB
			t.Errorf("%d bytes written in 2 s while the reading was paused: it went on", written)
		}
		onLoop(t, pair[0].Loop(), func() { pair[0].ResumeRead() })
		a.SetWriteDeadline(time.Now().Add(waitFor))
		a.(*net.TCPConn).CloseWrite()
		var want []byte
		for range (written + len(chunk) - 1) / len(chunk) {
			want = append(want, chunk...)
		}
		want = want[:written]
		select {
		case all := <-got:
			if !bytes.Equal(all, want) {
				t.Errorf("b read other bytes than a wrote after the pause: %s", firstDiff(all, want))
			}
		case <-time.After(waitFor):
			t.Fatal("b did not read to EOF after ResumeRead")
		}
	})
}

// TestConnSpliceLoopEndingOnAnErrorLeavesNoFd: a loop whose wait fails (its Run ends on an error,
// not through the drain that gives the driver back) closes its splice pipes (the free ones and
// one that holds bytes for a destination that does not read), its connections' sockets and its
// listener (NoLeaks). The error is made by putting a
// file that is not an epoll set in the place of the uring backend's epoll fd (its
// IORING_OP_EPOLL_WAIT then fails with EINVAL).
func TestConnSpliceLoopEndingOnAnErrorLeavesNoFd(t *testing.T) {
	eachSetup(t, func(t *testing.T, s setup) {
		if !kernelPath(s) {
			t.Skip("Splice is Forward here: no pipe")
		}
		before := testutil.OpenFds(t)
		j := newJoiner()
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		e, err := Listen(ctx, "tcp", "127.0.0.1:0", j, append(s.opts(), WithLoops(1), WithLogf(t.Logf), WithHalfOpen(true))...)
		if err != nil {
			t.Fatalf("Listen: %v", err)
		}
		epfd := -1
		for _, fd := range testutil.FdsSince(t, before) {
			if link, _ := os.Readlink("/proc/self/fd/" + strconv.Itoa(fd)); link == "anon_inode:[eventpoll]" {
				epfd = fd
			}
		}
		if epfd < 0 {
			t.Fatalf("no epoll fd among the engine's: %s", describeFds(testutil.FdsSince(t, before)))
		}
		a, err := net.DialTimeout("tcp", e.Addr().String(), waitFor)
		if err != nil {
			t.Fatal(err)
		}
		defer a.Close()
		b, err := net.DialTimeout("tcp", e.Addr().String(), waitFor)
		if err != nil {
			t.Fatal(err)
		}
		defer b.Close()
		select {
		case <-j.pairs:
		case <-time.After(waitFor):
			t.Fatal("the two connections were not joined")
		}
		// a streams to b, which does not read: a pipe ends up holding bytes.
		go func() {
			a.SetWriteDeadline(time.Now().Add(waitFor))
			a.Write(make([]byte, 32<<20))
		}()
		var p [2]int
		if err := unix.Pipe2(p[:], unix.O_NONBLOCK|unix.O_CLOEXEC); err != nil {
			t.Fatal(err)
		}
		defer unix.Close(p[1])
		l := e.Loops()[0]
		eventually(t, "a splice pipe holding bytes", func() bool {
			held := false
			onLoop(t, l, func() { held = len(l.pipes.used) > 0 && l.pipes.moved > 0 })
			return held
		})
		// An fd event of the loop's own makes the backend wait through its epoll set.
		onLoop(t, l, func() {
			ev, err := l.EventLoop().AddFd(p[0], ringev.Read, func(*ringev.FdEvent, ringev.Flags) {
				var buf [8]byte
				unix.Read(p[0], buf[:])
			})
			if err != nil {
				t.Errorf("AddFd: %v", err)
				return
			}
			ev.SetAutoClose(true)
		})
		null, err := unix.Open("/dev/null", unix.O_RDONLY|unix.O_CLOEXEC, 0)
		if err != nil {
			t.Fatal(err)
		}
		if err := unix.Dup3(null, epfd, unix.O_CLOEXEC); err != nil {
			t.Fatal(err)
		}
		unix.Close(null)
		unix.Write(p[1], []byte{1}) // ends the wait in flight; the next one fails
		select {
		case <-e.Done():
		case <-time.After(waitFor):
			t.Fatal("the loop did not end on its failed wait")
		}
		if err := e.Wait(); err == nil || !errors.Is(err, unix.EINVAL) {
			t.Fatalf("Wait: %v; want the failed wait's EINVAL", err)
		}
		var pipes []string
		for _, fd := range testutil.FdsSince(t, before) {
			if link, _ := os.Readlink("/proc/self/fd/" + strconv.Itoa(fd)); strings.HasPrefix(link, "pipe:") && fd != p[1] {
				pipes = append(pipes, fmt.Sprintf("%d (%s)", fd, link))
			}
		}
		if len(pipes) > 0 {
			t.Fatalf("pipes open after the loop's end: %v", pipes)
		}
	})
}
