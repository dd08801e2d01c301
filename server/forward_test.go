//go:build linux

package server

// Tests of Conn.Forward.

import (
	"bytes"
	"crypto/rand"
	"errors"
	"fmt"
	"io"
	"net"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
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

// forwardsTo returns the connection c forwards to (its Context), or nil for the first
// connection (whose input it drops).
func forwardsTo(c *Conn) *Conn {
	dst, ok := c.Context().(*Conn)
	if !ok {
		c.Next(-1)
	}
	return dst
}

func (f *forwarder) OnData(c *Conn) {
	dst := forwardsTo(c)
	if dst == nil {
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

// firstAndSource starts an engine serving h with opts, and dials two clients: dst, whose
// connection the handler takes for its first (first reports that it has it), then src.
func firstAndSource(t *testing.T, h Handler, first func() bool, opts ...Option) (e *Engine, dst, src net.Conn) {
	t.Helper()
	e = startEngine(t, h, opts...)
	dst = dialEngine(t, e)
	eventually(t, "the first connection", first)
	return e, dst, dialEngine(t, e)
}

// forwardedTo writes msg on src and checks that dst's client reads it, whole and alone.
func forwardedTo(t *testing.T, src, dst net.Conn, msg string) {
	t.Helper()
	if _, err := src.Write([]byte(msg)); err != nil {
		t.Fatal(err)
	}
	if got := readN(t, dst, len(msg)); got != msg {
		t.Fatalf("the first client read %q, want %q", got, msg)
	}
}

// hasFirst reports whether f has its first connection.
func (f *forwarder) hasFirst() bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.first != nil
}

// TestConnForwardMovesInputToAnotherConn: Forward moves what one connection received, all of
// it and in order, to another connection's output: its client reads it.
func TestConnForwardMovesInputToAnotherConn(t *testing.T) {
	eachSetup(t, func(t *testing.T, s setup) {
		f := &forwarder{moved: make(chan int, 100)}
		_, a, b := firstAndSource(t, f, f.hasFirst, s.opts()...)
		want := "hello, forwarded\n"
		forwardedTo(t, b, a, want)
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

// crossForwarder forwards the input of the second connection to the first, which is on another
// loop, as a proxy's OnData does with nothing else (no OnBackpressure), and records the most
// output the destination held before a Forward and after one.
type crossForwarder struct {
	forwarder   // its first connection, under its mu
	src         *Conn
	before, max int // the destination's Pending before a Forward, and after one: the most seen
}

func (f *crossForwarder) OnData(c *Conn) {
	dst := forwardsTo(c)
	if dst == nil {
		return
	}
	before := dst.Pending()
	_, err := c.Forward(dst)
	after := dst.Pending()
	f.mu.Lock()
	f.src = c
	f.before, f.max = max(f.before, before), max(f.max, after)
	if f.err == nil && !errors.Is(err, io.EOF) { // (io.EOF: the last bytes moved, the sender's EOF behind them)
		f.err = err
	}
	f.mu.Unlock()
}

// TestConnForwardHoldsItsSourceAcrossLoops: a 12 MB stream forwarded from a fast sender to a
// reader slower than it, the two connections on different loops, arrives whole: Forward stops
// reading its source once the destination's output passes the write limit, so the destination
// holds at most the limit before a Forward and, after one, the limit and what the source received
// while its hold took effect: far below the output cap (4 MiB).
func TestConnForwardHoldsItsSourceAcrossLoops(t *testing.T) {
	eachSetup(t, func(t *testing.T, s setup) {
		f := &crossForwarder{}
		e := startEngine(t, f, append(s.opts(), WithLoops(2), WithBalance(BalanceRoundRobin))...)
		a := dialEngine(t, e)
		eventually(t, "the first connection", func() bool { f.mu.Lock(); defer f.mu.Unlock(); return f.first != nil })
		b := dialEngine(t, e)
		const size = 12 << 20
		sent := make([]byte, size)
		for i := range sent {
			sent[i] = byte(i * 7 / 251)
		}
		go func() {
			b.Write(sent)
			b.(*net.TCPConn).CloseWrite()
		}()
		got := make([]byte, 0, size)
		buf := make([]byte, 64<<10)
		a.SetReadDeadline(time.Now().Add(4 * waitFor))
		for len(got) < size {
			n, err := a.Read(buf)
			got = append(got, buf[:n]...)
			if err != nil {
				t.Fatalf("the reader got %d bytes of %d, then %v", len(got), size, err)
			}
			time.Sleep(200 * time.Microsecond) // a reader slower than the sender
		}
		if !bytes.Equal(got, sent) {
			t.Fatal("the reader got other bytes than were sent")
		}
		f.mu.Lock()
		defer f.mu.Unlock()
		if f.src.Loop() == f.first.Loop() {
			t.Fatal("the two connections were on one loop")
		}
		if f.err != nil {
			t.Errorf("Forward: %v", f.err)
		}
		limit := f.first.WriteLimit()
		if f.before > limit {
			t.Errorf("the destination held %d bytes before a Forward, want at most the write limit (%d)", f.before, limit)
		}
		// One Forward moves at most what the source received while its hold took effect: at most
		// a loop's buffer group (2 MiB) of multishot receives already completed.
		if most := limit + RecvLargeGroupBuffers*RecvLargeBufferSize; f.max > most {
			t.Errorf("the destination held %d bytes after a Forward, want at most %d (the output cap is %d)", f.max, most, DefaultMaxPending)
		}
		t.Logf("the destination held at most %d bytes before a Forward, %d after one", f.before, f.max)
	})
}

// TestConnForwardWithAClosedConnIsErrClosed: Forward to a closed connection, and Forward of a
// closed connection with no input left, return net.ErrClosed, as Write does, even with nothing
// to move.
func TestConnForwardWithAClosedConnIsErrClosed(t *testing.T) {
	eachSetup(t, func(t *testing.T, s setup) {
		r := newRecorder()
		e := startEngine(t, r, s.opts()...)
		dialEngine(t, e)
		closed := r.next(t)
		dialEngine(t, e)
		open := r.next(t)
		onLoop(t, e.Loops()[0], func() { closed.Abort() })
		r.closedWith(t)
		onLoop(t, e.Loops()[0], func() {
			if n, err := open.Forward(closed); n != 0 || !errors.Is(err, net.ErrClosed) {
				t.Errorf("Forward to a closed connection: %d, %v; want 0, net.ErrClosed", n, err)
			}
			if n, err := closed.Forward(open); n != 0 || !errors.Is(err, net.ErrClosed) {
				t.Errorf("Forward of a closed connection: %d, %v; want 0, net.ErrClosed", n, err)
			}
		})
	})
}

// eofForwarder forwards the input of each connection but the first to the first, and sends
// each Forward's error to errs.
type eofForwarder struct {
	forwarder
	errs chan error
}

func (f *eofForwarder) OnData(c *Conn) {
	dst := forwardsTo(c)
	if dst == nil {
		return
	}
	_, err := c.Forward(dst)
	f.errs <- err
}

// TestConnForwardAtThePeersEOFIsEOF: on a half-open connection, the Forward that moves the last
// input after the peer has shut down its writing side (EOF) returns io.EOF, and those before
// it nil: a proxy learns there that it passes the half-close on.
func TestConnForwardAtThePeersEOFIsEOF(t *testing.T) {
	eachSetup(t, func(t *testing.T, s setup) {
		f := &eofForwarder{errs: make(chan error, 100)}
		e := startEngine(t, f, append(s.opts(), WithHalfOpen(true))...)
		a := dialEngine(t, e)
		eventually(t, "the first connection", func() bool { f.mu.Lock(); defer f.mu.Unlock(); return f.first != nil })
		b := dialEngine(t, e)
		want := "the last words\n"
		if _, err := b.Write([]byte(want)); err != nil {
			t.Fatal(err)
		}
		if err := b.(*net.TCPConn).CloseWrite(); err != nil {
			t.Fatal(err)
		}
		if got := readN(t, a, len(want)); got != want {
			t.Errorf("the first client read %q, want %q", got, want)
		}
		deadline := time.After(waitFor)
		for {
			select {
			case err := <-f.errs:
				if err == io.EOF {
					return
				}
				if err != nil {
					t.Fatalf("Forward: %v before io.EOF, want nil", err)
				}
			case <-deadline:
				t.Fatal("no Forward returned io.EOF after the peer's half-close")
			}
		}
	})
}

// TestConnForwardLendsAtMostHalfTheRecvGroup: Forward sends a received group buffer itself
// (no copy) only while the loop lends at most half of its receive group, so destinations whose
// peers do not read, each with a send stalled on a full socket, cannot take the buffers every
// receive of the loop needs: with 100 of them stalled, a new pair on the same loop is still
// served, 1 MiB each way.
func TestConnForwardLendsAtMostHalfTheRecvGroup(t *testing.T) {
	eachSetup(t, func(t *testing.T, s setup) {
		j := newJoiner()
		j.forward, j.sndbuf = true, 16<<10
		e := startEngine(t, j, append(s.opts(), WithHalfOpen(true))...)
		small := net.Dialer{Timeout: waitFor, Control: func(_, _ string, rc syscall.RawConn) error {
			rc.Control(func(fd uintptr) { unix.SetsockoptInt(int(fd), unix.SOL_SOCKET, unix.SO_RCVBUF, 16<<10) })
			return nil
		}}
		const stalled = 100
		var wg sync.WaitGroup
		var conns []net.Conn
		defer func() {
			for _, c := range conns {
				c.Close()
			}
			wg.Wait()
		}()
		var srcs []*Conn
		for range stalled {
			a, err := net.DialTimeout("tcp", e.Addr().String(), waitFor)
			if err != nil {
				t.Fatal(err)
			}
			conns = append(conns, a)
			b, err := small.Dial("tcp", e.Addr().String()) // reads nothing
			if err != nil {
				t.Fatal(err)
			}
			conns = append(conns, b)
			select {
			case p := <-j.pairs:
				srcs = append(srcs, p[0])
			case <-time.After(waitFor):
				t.Fatal("two connections were not joined")
			}
			wg.Add(1)
			go func() {
				defer wg.Done()
				chunk := make([]byte, 4<<10)
				for {
					if _, err := a.Write(chunk); err != nil {
						return
					}
				}
			}()
		}
		l := e.Loops()[0]
		// Every source is held by Forward: its destination's output is past the write limit
		// behind a send that its peer's full socket stalls.
		eventually(t, "every source held by Forward (a receive group run dry holds some back)", func() bool {
			held := 0
			onLoop(t, l, func() {
				for _, c := range srcs {
					if c.rare != nil && c.rare.fwdOn != nil {
						held++
					}
				}
			})
			return held == stalled
		})
		var lent, most int
		onLoop(t, l, func() { lent, most = l.lend.held, l.lend.max })
		t.Logf("%d group buffers lent to stalled sends (at most %d)", lent, most)
		if lent > most {
			t.Errorf("%d group buffers lent, past the bound of %d", lent, most)
		}
		a, b, _ := joinedOn(t, e, j)
		data := make([]byte, 1<<20)
		rand.Read(data)
		if err := <-sendAndCheck(a, b, data); err != nil {
			t.Fatalf("a new pair, while %d destinations stall: %v", stalled, err)
		}
	})
}

// forwardOrEcho forwards the input of its second connection to its first, whose input it drops,
// and echoes the lines of the others (recorder, whose conns are in the order they opened).
type forwardOrEcho struct{ *recorder }

func (f forwardOrEcho) OnData(c *Conn) {
	f.mu.Lock()
	conns := f.conns
	f.mu.Unlock()
	switch {
	case c == conns[0]:
		c.Next(-1)
	case c == conns[1]:
		c.Forward(conns[0])
	default:
		f.recorder.OnData(c)
	}
}

// TestConnSendsTakeNoLockWhileAForwardWaits: while Forward holds a source until its
// destination's output drains, the sends of the loop's other connections do not take the
// loop's lock (each took it to look for sources to wake, however unrelated): a connection's
// lines are echoed while the test holds it. The destination's socket buffers are made small,
// and the test takes the lock once the kernel refuses the destination's output, so that
// nothing more drains from it (whose end of the hold takes the lock).
func TestConnSendsTakeNoLockWhileAForwardWaits(t *testing.T) {
	eachSetup(t, func(t *testing.T, s setup) {
		f := forwardOrEcho{newRecorder()}
		e := startEngine(t, f, append(s.opts(), WithLoops(1))...)
		dst := dialEngine(t, e) // its client does not read
		dst.(*net.TCPConn).SetReadBuffer(4 << 10)
		sdst := f.next(t)
		l := e.Loops()[0]
		onLoop(t, l, func() { unix.SetsockoptInt(sdst.Fd(), unix.SOL_SOCKET, unix.SO_SNDBUF, 4<<10) })
		src := dialEngine(t, e)
		f.next(t)
		go src.Write(make([]byte, 4<<20)) // ends when the test closes src, if not before
		eventually(t, "Forward holding its source, the destination's socket full", func() bool {
			var full bool
			onLoop(t, l, func() { full = sdst.pending() > l.limit/2 && (sdst.fl&cfWBlocked != 0 || sdst.outLen > 0) })
			l.mu.Lock()
			defer l.mu.Unlock()
			return full && len(l.fwdWait) > 0
		})
		c := dialEngine(t, e)
		f.next(t)
		l.mu.Lock()
		locked := true
		defer func() {
			if locked {
				l.mu.Unlock()
			}
		}()
		for i := range 3 {
			line := fmt.Sprintf("line %d\n", i)
			c.Write([]byte(line))
			if got := readN(t, c, len(line)); got != line {
				t.Fatalf("echo %q, want %q", got, line)
			}
		}
		locked = false
		l.mu.Unlock()
	})
}

// pairForwarder joins the connections it accepts two by two (pairer) and forwards each one's
// whole input to the other at every OnData, as a proxy does, with no OnBackpressure. It
// records the most input a connection held while served (maxIn), and the first connection
// closed with an error of the engine's (ErrInputTooLarge, a reset).
type pairForwarder struct {
	pairer
	maxIn  int
	failed error
}

func newPairForwarder() *pairForwarder {
	return &pairForwarder{pairer: pairer{pairs: make(chan [2]*Conn, 1)}}
}

func (p *pairForwarder) OnData(c *Conn) {
	p.mu.Lock()
	p.maxIn = max(p.maxIn, len(c.inBytes()), c.Buffered())
	p.mu.Unlock()
	if other, ok := c.Context().(*Conn); ok {
		c.Forward(other)
	}
}

func (p *pairForwarder) OnClose(c *Conn, err error) {
	if other, ok := c.Context().(*Conn); ok {
		other.Close()
	}
	if err != nil && !errors.Is(err, io.EOF) {
		p.mu.Lock()
		if p.failed == nil {
			p.failed = err
		}
		p.mu.Unlock()
	}
}

// pairOn dials e twice (the second with SO_SNDBUF and SO_RCVBUF of sockbuf bytes, if not 0),
// and returns the two clients and their connections, which p joined.
func pairOn(t *testing.T, e *Engine, p *pairForwarder, sockbuf int) (a, b net.Conn, pair [2]*Conn) {
	t.Helper()
	a = dialEngine(t, e)
	eventually(t, "the first connection", func() bool { p.mu.Lock(); defer p.mu.Unlock(); return p.wait != nil })
	d := net.Dialer{Timeout: waitFor, Control: func(_, _ string, rc syscall.RawConn) error {
		if sockbuf > 0 {
			rc.Control(func(fd uintptr) {
				unix.SetsockoptInt(int(fd), unix.SOL_SOCKET, unix.SO_SNDBUF, sockbuf)
				unix.SetsockoptInt(int(fd), unix.SOL_SOCKET, unix.SO_RCVBUF, sockbuf)
			})
		}
		return nil
	}}
	b, err := d.Dial("tcp", e.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	b.SetDeadline(time.Now().Add(waitFor))
	t.Cleanup(func() { b.Close() })
	select {
	case pair = <-p.pairs:
	case <-time.After(waitFor):
		t.Fatal("the two connections were not joined")
	}
	return a, b, pair
}

// TestConnForwardDestinationIsReadPastItsWriteLimit: a connection whose output Forward fills
// is read while that output is past the write limit (Forward holds the source instead). A
// proxy's upstream (an echo that reads only while it can write) has the client's bytes to
// read, past the limit, and does not read them while it writes 1 MiB back: the upstream's
// connection must take those (and forward them to the client, who reads) or neither side
// moves again.
func TestConnForwardDestinationIsReadPastItsWriteLimit(t *testing.T) {
	eachSetup(t, func(t *testing.T, s setup) {
		p := newPairForwarder()
		p.sndbuf, p.rcvbuf = 32<<10, 32<<10
		e := startEngine(t, p, append(s.opts(), WithWriteLimit(64<<10))...)
		a, b, pair := pairOn(t, e, p, 32<<10)
		up := pair[1] // the upstream's connection: its output is what a sends
		toUp, toA := make([]byte, 2<<20), make([]byte, 1<<20)
		rand.Read(toUp)
		rand.Read(toA)
		written := make(chan error, 2)
		go func() { _, err := a.Write(toUp); written <- err }()
		// The client's bytes pass the upstream connection's write limit: Forward holds the
		// client's connection (the upstream reads nothing yet).
		eventually(t, "the client's connection held by Forward", func() bool {
			held := false
			onLoop(t, up.Loop(), func() { held = pair[0].rare != nil && pair[0].rare.fwdOn == up })
			return held
		})
		readA := make(chan []byte, 1)
		go func() {
			got := make([]byte, len(toA))
			n, _ := io.ReadFull(a, got)
			readA <- got[:n]
		}()
		if _, err := b.Write(toA); err != nil {
			t.Fatalf("the upstream wrote 1 MiB while its connection's output was past the write limit: %v (the connection was not read)", err)
		}
		if got := <-readA; !bytes.Equal(got, toA) {
			t.Fatalf("the client read %d bytes, other than the %d the upstream wrote", len(got), len(toA))
		}
		got := make([]byte, len(toUp))
		if n, err := io.ReadFull(b, got); err != nil || !bytes.Equal(got, toUp) {
			t.Fatalf("the upstream read %d bytes (%v), want the %d the client wrote", n, err, len(toUp))
		}
		if err := <-written; err != nil {
			t.Fatalf("the client's write: %v", err)
		}
	})
}

// TestConnForwardHeldSourceIsNotReadUntilItsInputIsServed: a source that Forward holds is
// not read again, once its hold ends, until the input that waited is served: its input stays
// within what its reading brought as the hold began (a receive group, 2 MiB, on uring), and it
// is not closed for it (ErrInputTooLarge), however often the hold comes back. 24 MiB go from
// a fast client through a proxy whose destination has a small write limit and small socket
// buffers, and arrive whole.
func TestConnForwardHeldSourceIsNotReadUntilItsInputIsServed(t *testing.T) {
	eachSetup(t, func(t *testing.T, s setup) {
		p := newPairForwarder()
		p.sndbuf = 32 << 10
		e := startEngine(t, p, append(s.opts(), WithWriteLimit(16<<10))...)
		a, b, _ := pairOn(t, e, p, 32<<10)
		data := make([]byte, 24<<20)
		rand.Read(data)
		a.SetDeadline(time.Now().Add(4 * waitFor))
		b.SetDeadline(time.Now().Add(4 * waitFor))
		if err := <-sendAndCheck(a, b, data); err != nil {
			p.mu.Lock()
			defer p.mu.Unlock()
			t.Fatalf("%v (the proxy closed a connection for: %v)", err, p.failed)
		}
		p.mu.Lock()
		defer p.mu.Unlock()
		if p.failed != nil {
			t.Errorf("the proxy closed a connection for: %v", p.failed)
		}
		if most := RecvLargeGroupBuffers*RecvLargeBufferSize + leftPiece; p.maxIn > most {
			t.Errorf("a held source's input reached %d bytes, want at most %d (MaxInput is %d)", p.maxIn, most, MaxInput)
		}
		t.Logf("a source's input held at most %d bytes", p.maxIn)
	})
}

// onceFed is a handler whose first connection floods its client with 1 MiB at "flood\n"
// (through a small socket send buffer) and whose others forward their input to the first;
// it tells when one closes and when the first is told of backpressure.
type onceFed struct {
	first  atomic.Pointer[Conn]
	closed chan struct{}
	told   chan bool
}

func (f *onceFed) OnOpen(c *Conn) {
	if f.first.CompareAndSwap(nil, c) {
		unix.SetsockoptInt(c.Fd(), unix.SOL_SOCKET, unix.SO_SNDBUF, 32<<10)
	}
}

func (f *onceFed) OnData(c *Conn) {
	if dst := f.first.Load(); c != dst {
		c.Forward(dst)
		return
	}
	if b, _ := c.Peek(-1); bytes.Contains(b, []byte("flood\n")) {
		c.Discard(len(b))
		c.WriteString(strings.Repeat("f", 1<<20))
	}
}

func (f *onceFed) OnClose(c *Conn, err error) {
	if c != f.first.Load() {
		close(f.closed)
	}
}

func (f *onceFed) OnBackpressure(c *Conn, paused bool) {
	if paused {
		select {
		case f.told <- true:
		default:
		}
	}
}

// TestConnForwardDestinationPausesForItsOutputOnceItsSourceClosed: a connection that was a
// Forward destination is paused for its own output past the write limit, and its handler told
// (OnBackpressure), once the source that forwarded to it has closed: it behaves as any other.
func TestConnForwardDestinationPausesForItsOutputOnceItsSourceClosed(t *testing.T) {
	eachSetup(t, func(t *testing.T, s setup) {
		f := &onceFed{closed: make(chan struct{}), told: make(chan bool, 1)}
		_, a, b := firstAndSource(t, f, func() bool { return f.first.Load() != nil }, append(s.opts(), WithWriteLimit(64<<10))...)
		forwardedTo(t, b, a, "forwarded\n")
		b.Close()
		received(t, f.closed, "the source's close")
		if _, err := a.Write([]byte("flood\n")); err != nil {
			t.Fatal(err)
		}
		received(t, f.told, "OnBackpressure(true) for 1 MiB of output past a 64 KiB write limit")
	})
}

// refed is a handler whose first connection floods its client with 1 MiB at "flood\n"
// (through a small socket send buffer), whose second drops its input, and whose others
// forward their input to the first, or to the second once it starts with "second"; it tells
// when the first is told of backpressure.
type refed struct {
	first, second atomic.Pointer[Conn]
	told          chan bool
}

func (f *refed) OnOpen(c *Conn) {
	if f.first.CompareAndSwap(nil, c) {
		unix.SetsockoptInt(c.Fd(), unix.SOL_SOCKET, unix.SO_SNDBUF, 32<<10)
		return
	}
	f.second.CompareAndSwap(nil, c)
}

func (f *refed) OnData(c *Conn) {
	first, second := f.first.Load(), f.second.Load()
	b, _ := c.Peek(-1)
	switch c {
	case first:
		if bytes.Contains(b, []byte("flood\n")) {
			c.Discard(len(b))
			c.WriteString(strings.Repeat("f", 1<<20))
		}
	case second:
		c.Discard(len(b))
	default:
		if bytes.HasPrefix(b, []byte("second")) {
			c.Forward(second)
		} else {
			c.Forward(first)
		}
	}
}

func (f *refed) OnBackpressure(c *Conn, paused bool) {
	if paused && c == f.first.Load() {
		select {
		case f.told <- true:
		default:
		}
	}
}

// TestConnForwardDestinationPausesForItsOutputOnceItsSourceForwardsElsewhere: a connection
// that was a Forward destination is paused for its own output past the write limit, and its
// handler told (OnBackpressure), once the source that forwarded to it forwards to another
// connection, the source still open.
func TestConnForwardDestinationPausesForItsOutputOnceItsSourceForwardsElsewhere(t *testing.T) {
	eachSetup(t, func(t *testing.T, s setup) {
		f := &refed{told: make(chan bool, 1)}
		e := startEngine(t, f, append(s.opts(), WithWriteLimit(64<<10))...)
		a := dialEngine(t, e)
		eventually(t, "the first connection", func() bool { return f.first.Load() != nil })
		b := dialEngine(t, e)
		eventually(t, "the second connection", func() bool { return f.second.Load() != nil })
		src := dialEngine(t, e)
		if _, err := src.Write([]byte("forwarded\n")); err != nil {
			t.Fatal(err)
		}
		if got := readN(t, a, len("forwarded\n")); got != "forwarded\n" {
			t.Fatalf("the first client read %q", got)
		}
		if _, err := src.Write([]byte("second\n")); err != nil {
			t.Fatal(err)
		}
		if got := readN(t, b, len("second\n")); got != "second\n" {
			t.Fatalf("the second client read %q", got)
		}
		if _, err := a.Write([]byte("flood\n")); err != nil {
			t.Fatal(err)
		}
		received(t, f.told, "OnBackpressure(true) for 1 MiB of output past a 64 KiB write limit")
	})
}

// collectable is a handler whose first connection is the destination of the others' Forward
// until it closes (then their input is dropped, said on dropped); it tells when the first
// closes and when the garbage collector has freed it (a cleanup).
type collectable struct {
	first     atomic.Pointer[Conn]
	closed    chan struct{}
	dropped   chan struct{}
	collected chan struct{}
}

func (f *collectable) OnOpen(c *Conn) {
	if f.first.CompareAndSwap(nil, c) {
		runtime.AddCleanup(c, func(ch chan struct{}) { close(ch) }, f.collected)
	}
}

func (f *collectable) OnData(c *Conn) {
	if dst := f.first.Load(); dst != nil && c != dst {
		c.Forward(dst)
		return
	}
	c.Next(-1)
	f.dropped <- struct{}{}
}

func (f *collectable) OnClose(c *Conn, err error) {
	if f.first.CompareAndSwap(c, nil) {
		close(f.closed)
	}
}

// TestConnForwardSourcesLetGoOfADestinationThatClosed: connections whose Forward wrote to
// another (two: one found at once, the other looked for) that has closed since keep nothing of
// it: the destination is freed while the sources stay open.
func TestConnForwardSourcesLetGoOfADestinationThatClosed(t *testing.T) {
	eachSetup(t, func(t *testing.T, s setup) {
		f := &collectable{closed: make(chan struct{}), dropped: make(chan struct{}, 2), collected: make(chan struct{})}
		e, a, b := firstAndSource(t, f, func() bool { return f.first.Load() != nil }, s.opts()...)
		srcs := []net.Conn{b, dialEngine(t, e)}
		for _, b := range srcs {
			forwardedTo(t, b, a, "forwarded\n")
		}
		a.Close()
		received(t, f.closed, "the destination's close")
		for _, b := range srcs {
			if _, err := b.Write([]byte("dropped\n")); err != nil {
				t.Fatal(err)
			}
			received(t, f.dropped, "a source's input after the destination closed")
		}
		eventually(t, "the closed destination freed", func() bool {
			runtime.GC()
			select {
			case <-f.collected:
				return true
			default:
				return false
			}
		})
	})
}
