//go:build linux

package server

// Tests of outbound connections (Engine.Dial, Loop.Dial, NewEngine): each on every backend and
// driver.

import (
	"context"
	"errors"
	"net"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/ringev/ringev/internal/testutil"
	"golang.org/x/sys/unix"
)

// echoPeer is a net.Listener on network and addr whose connections send back what they get;
// cleanup closes it and waits for its goroutines.
func echoPeer(t *testing.T, network, addr string) net.Listener {
	t.Helper()
	ln, err := net.Listen(network, addr)
	if err != nil {
		t.Fatalf("listen %s %s: %v", network, addr, err)
	}
	return echoOn(t, ln)
}

// echoOn has each connection ln accepts send back what it gets, until its EOF; cleanup closes
// ln and the connections, and waits for their goroutines. It returns ln.
func echoOn(t *testing.T, ln net.Listener) net.Listener {
	var wg sync.WaitGroup
	var mu sync.Mutex
	var conns []net.Conn
	wg.Add(1)
	go func() {
		defer wg.Done()
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			mu.Lock()
			conns = append(conns, c)
			mu.Unlock()
			wg.Add(1)
			go func() {
				defer wg.Done()
				testutil.EchoUntilEOF(c)
				c.Close()
			}()
		}
	}()
	t.Cleanup(func() {
		ln.Close()
		mu.Lock()
		for _, c := range conns {
			c.Close()
		}
		mu.Unlock()
		wg.Wait()
	})
	return ln
}

// startDialEngine starts an engine without a listener (NewEngine) with one loop and opts after
// it; cleanup cancels its context and waits for its end.
func startDialEngine(t *testing.T, opts ...Option) *Engine {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	e, err := NewEngine(ctx, append([]Option{WithLoops(1), WithLogf(t.Logf)}, opts...)...)
	if err != nil {
		cancel()
		t.Fatalf("NewEngine: %v", err)
	}
	t.Cleanup(func() {
		cancel()
		waitEngine(t, e, "the cancellation of its context")
	})
	return e
}

// dialFromLoop calls Loop.Dial on l's goroutine and waits for its done.
func dialFromLoop(t *testing.T, l *Loop, ctx context.Context, network, addr string, h Handler) (*Conn, error) {
	t.Helper()
	type result struct {
		c   *Conn
		err error
	}
	res := make(chan result, 1)
	onLoop(t, l, func() {
		if err := l.Dial(ctx, network, addr, h, func(c *Conn, err error) { res <- result{c, err} }); err != nil {
			res <- result{nil, err}
		}
	})
	select {
	case r := <-res:
		return r.c, r.err
	case <-time.After(waitFor):
		t.Fatalf("Loop.Dial %s %s: done not called within %v", network, addr, waitFor)
		return nil, nil
	}
}

// engineDial is e.Dial, failing the test when it has not returned within waitFor.
func engineDial(t *testing.T, e *Engine, ctx context.Context, network, addr string, h Handler) (*Conn, error) {
	t.Helper()
	type result struct {
		c   *Conn
		err error
	}
	res := make(chan result, 1)
	go func() {
		c, err := e.Dial(ctx, network, addr, h)
		res <- result{c, err}
	}()
	select {
	case r := <-res:
		return r.c, r.err
	case <-time.After(waitFor):
		t.Fatalf("Engine.Dial %s %s did not return within %v", network, addr, waitFor)
		return nil, nil
	}
}

// pingThrough writes "ping\n" to c (from the test's goroutine) and waits for r, c's handler, to
// be given the echo.
func pingThrough(t *testing.T, r *recorder, c *Conn) {
	t.Helper()
	r.line = func(*Conn, string) {} // record, do not answer (the peer echoes)
	if _, err := c.WriteString("ping\n"); err != nil {
		t.Fatalf("Write: %v", err)
	}
	eventually(t, "the echo of ping", func() bool {
		for _, ev := range r.log() {
			if ev == "data ping" {
				return true
			}
		}
		return false
	})
}

// TestDialFromLoopServesTheConnWithItsOwnHandler: a handler's loop dials (Loop.Dial on a
// listening engine); done gets the open Conn before its OnOpen, and the Conn is served by the
// Handler the dial named, not the engine's.
func TestDialFromLoopServesTheConnWithItsOwnHandler(t *testing.T) {
	eachSetup(t, func(t *testing.T, s setup) {
		peer := echoPeer(t, "tcp", "127.0.0.1:0")
		own := newRecorder()
		e := startEngine(t, own, s.opts()...)
		r := newRecorder()
		var openedBeforeDone bool
		res := make(chan *Conn, 1)
		onLoop(t, e.Loops()[0], func() {
			err := e.Loops()[0].Dial(context.Background(), "tcp", peer.Addr().String(), r, func(c *Conn, err error) {
				if err != nil {
					t.Errorf("dial: %v", err)
				}
				openedBeforeDone = len(r.log()) > 0
				res <- c
			})
			if err != nil {
				t.Errorf("Loop.Dial: %v", err)
			}
		})
		var c *Conn
		select {
		case c = <-res:
		case <-time.After(waitFor):
			t.Fatal("done not called")
		}
		if c == nil {
			t.FailNow()
		}
		if openedBeforeDone {
			t.Error("OnOpen ran before done")
		}
		r.next(t)
		pingThrough(t, r, c)
		if got := own.log(); len(got) > 0 {
			t.Errorf("the engine's own handler was told %v", got)
		}
		if e.Conns() != 1 {
			t.Errorf("Conns() = %d, want 1", e.Conns())
		}
	})
}

// TestDialFromGoroutineReturnsTheOpenConn: Engine.Dial from another goroutine returns an open
// Conn of an engine without a listener (NewEngine), writable from that goroutine; its
// handler's OnData gets the peer's bytes.
func TestDialFromGoroutineReturnsTheOpenConn(t *testing.T) {
	eachSetup(t, func(t *testing.T, s setup) {
		peer := echoPeer(t, "tcp", "127.0.0.1:0")
		e := startDialEngine(t, s.opts()...)
		r := newRecorder()
		ctx, cancel := context.WithTimeout(context.Background(), waitFor)
		defer cancel()
		c, err := engineDial(t, e, ctx, "tcp", peer.Addr().String(), r)
		if err != nil {
			t.Fatalf("Engine.Dial: %v", err)
		}
		r.next(t)
		pingThrough(t, r, c)
		if err := c.Close(); err != nil {
			t.Errorf("Close: %v", err)
		}
		if _, err := r.closedWith(t); err != nil {
			t.Errorf("OnClose after Close: %v, want nil", err)
		}
	})
}

// TestDialFromGoroutineGivesTheConnsAddresses: the Conn that Engine.Dial returns tells its
// caller's goroutine its remote address (the peer's) and its local one, though its handler
// never asked for them on the loop (RemoteAddr and LocalAddr are nil from another goroutine
// until the loop has asked).
func TestDialFromGoroutineGivesTheConnsAddresses(t *testing.T) {
	eachSetup(t, func(t *testing.T, s setup) {
		peer := echoPeer(t, "tcp", "127.0.0.1:0")
		e := startDialEngine(t, s.opts()...)
		c, err := engineDial(t, e, context.Background(), "tcp", peer.Addr().String(), handlerFunc(func(c *Conn) { c.Discard(-1) }))
		if err != nil {
			t.Fatalf("Engine.Dial: %v", err)
		}
		defer c.Close()
		if got := c.RemoteAddr(); got == nil || got.String() != peer.Addr().String() {
			t.Errorf("RemoteAddr %v, want %v", got, peer.Addr())
		}
		if got, ok := c.LocalAddr().(*net.TCPAddr); !ok || !got.IP.IsLoopback() || got.Port == 0 {
			t.Errorf("LocalAddr %v, want 127.0.0.1:port", c.LocalAddr())
		}
	})
}

// TestDialRefusedIsAnErrorNamingTheAddress: a connect to a port nobody listens on fails the
// dial with an error that names the address and wraps ECONNREFUSED, from the loop and from a
// goroutine; no OnOpen, no connection left.
func TestDialRefusedIsAnErrorNamingTheAddress(t *testing.T) {
	eachSetup(t, func(t *testing.T, s setup) {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		addr := ln.Addr().String()
		ln.Close()
		e := startDialEngine(t, s.opts()...)
		r := newRecorder()
		check := func(how string, c *Conn, err error) {
			if c != nil || !errors.Is(err, unix.ECONNREFUSED) || !strings.Contains(err.Error(), addr) {
				t.Errorf("%s: (%v, %v), want an error naming %s and wrapping ECONNREFUSED", how, c, err, addr)
			}
		}
		c, err := engineDial(t, e, context.Background(), "tcp", addr, r)
		check("Engine.Dial", c, err)
		c, err = dialFromLoop(t, e.Loops()[0], context.Background(), "tcp", addr, r)
		check("Loop.Dial", c, err)
		if got := r.log(); len(got) > 0 || e.Conns() != 0 {
			t.Errorf("after refused dials: handler told %v, Conns() = %d", got, e.Conns())
		}
	})
}

// fullBacklog returns the address of a listening socket (backlog 0) whose accept queue is full,
// so that a connect to it is never answered (its SYNs are dropped); cleanup closes it all.
func fullBacklog(t *testing.T) string {
	t.Helper()
	lfd, err := unix.Socket(unix.AF_INET, unix.SOCK_STREAM|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { unix.Close(lfd) })
	if err := unix.Bind(lfd, &unix.SockaddrInet4{Addr: [4]byte{127, 0, 0, 1}}); err != nil {
		t.Fatal(err)
	}
	if err := unix.Listen(lfd, 0); err != nil {
		t.Fatal(err)
	}
	sa, _ := unix.Getsockname(lfd)
	addr := sockaddrToNet(sa, unix.SOCK_STREAM).String()
	for i := 0; ; i++ {
		c, err := net.DialTimeout("tcp", addr, 200*time.Millisecond)
		if err != nil {
			var ne net.Error
			if errors.As(err, &ne) && ne.Timeout() {
				return addr
			}
			t.Fatalf("filling the backlog of %s: %v", addr, err)
		}
		t.Cleanup(func() { c.Close() })
		if i > 16 {
			t.Skipf("the backlog of %s does not fill (%d connections)", addr, i)
		}
	}
}

// TestDialTimesOutAtTheContextDeadline: a connect that is never answered ends at the context's
// deadline, with an error that names the address and wraps context.DeadlineExceeded; its
// socket is closed (noLeaks).
func TestDialTimesOutAtTheContextDeadline(t *testing.T) {
	eachSetup(t, func(t *testing.T, s setup) {
		addr := fullBacklog(t)
		e := startDialEngine(t, s.opts()...)
		for _, how := range []string{"Engine.Dial", "Loop.Dial"} {
			ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
			var c *Conn
			var err error
			if how == "Engine.Dial" {
				c, err = engineDial(t, e, ctx, "tcp", addr, newRecorder())
			} else {
				c, err = dialFromLoop(t, e.Loops()[0], ctx, "tcp", addr, newRecorder())
			}
			cancel()
			if c != nil || !errors.Is(err, context.DeadlineExceeded) || !strings.Contains(err.Error(), addr) {
				t.Errorf("%s: (%v, %v), want an error naming %s and wrapping context.DeadlineExceeded", how, c, err, addr)
			}
		}
	})
}

// TestDialIPv6: a dial to [::1] on "tcp6" opens a connection that carries bytes.
func TestDialIPv6(t *testing.T) {
	needIPv6Loopback(t)
	eachSetup(t, func(t *testing.T, s setup) {
		peer := echoPeer(t, "tcp6", "[::1]:0")
		e := startDialEngine(t, s.opts()...)
		r := newRecorder()
		c, err := engineDial(t, e, context.Background(), "tcp6", peer.Addr().String(), r)
		if err != nil {
			t.Fatalf("Engine.Dial: %v", err)
		}
		r.next(t)
		pingThrough(t, r, c)
	})
}

// TestDialUnix: a dial to a Unix socket's path opens a connection that carries bytes.
func TestDialUnix(t *testing.T) {
	eachSetup(t, func(t *testing.T, s setup) {
		peer := echoPeer(t, "unix", filepath.Join(t.TempDir(), "peer.sock"))
		e := startDialEngine(t, s.opts()...)
		r := newRecorder()
		c, err := dialFromLoop(t, e.Loops()[0], context.Background(), "unix", peer.Addr().String(), r)
		if err != nil {
			t.Fatalf("Loop.Dial: %v", err)
		}
		r.next(t)
		pingThrough(t, r, c)
	})
}

// TestDialResolvesANameOffTheLoop: a dial to a name ("localhost") looks it up (on a goroutine
// of its own) and connects to what it names.
func TestDialResolvesANameOffTheLoop(t *testing.T) {
	eachSetup(t, func(t *testing.T, s setup) {
		peer := echoPeer(t, "tcp", "127.0.0.1:0")
		_, port, _ := net.SplitHostPort(peer.Addr().String())
		e := startDialEngine(t, s.opts()...)
		r := newRecorder()
		c, err := engineDial(t, e, context.Background(), "tcp", "localhost:"+port, r)
		if err != nil {
			t.Fatalf("Engine.Dial: %v", err)
		}
		r.next(t)
		pingThrough(t, r, c)
	})
}

// TestDialUnderWayEndsWithTheEngine: a dial that is never answered fails (wrapping
// ErrShutdown) when the engine is closed, and the engine ends.
func TestDialUnderWayEndsWithTheEngine(t *testing.T) {
	eachSetup(t, func(t *testing.T, s setup) {
		addr := fullBacklog(t)
		e := startDialEngine(t, s.opts()...)
		errc := make(chan error, 1)
		go func() {
			_, err := e.Dial(context.Background(), "tcp", addr, newRecorder())
			errc <- err
		}()
		eventually(t, "the dial under way", func() bool {
			n := 0
			onLoop(t, e.Loops()[0], func() { n = len(e.Loops()[0].dials) })
			return n == 1
		})
		e.Close()
		select {
		case err := <-errc:
			if !errors.Is(err, ErrShutdown) {
				t.Errorf("Engine.Dial: %v, want an error wrapping ErrShutdown", err)
			}
		case <-time.After(waitFor):
			t.Fatal("Engine.Dial did not return after Close")
		}
		waitEngine(t, e, "Close")
	})
}

// TestDialFromLoopWithEngineDialIsErrFromLoop: Engine.Dial from a handler would block the
// loop: it returns ErrFromLoop at once.
func TestDialFromLoopWithEngineDialIsErrFromLoop(t *testing.T) {
	eachSetup(t, func(t *testing.T, s setup) {
		e := startDialEngine(t, s.opts()...)
		var err error
		onLoop(t, e.Loops()[0], func() { _, err = e.Dial(context.Background(), "tcp", "127.0.0.1:1", newRecorder()) })
		if !errors.Is(err, ErrFromLoop) {
			t.Errorf("Engine.Dial on a loop: %v, want ErrFromLoop", err)
		}
	})
}

// TestDialWithANilContextIsAnError: a nil ctx is refused with an error naming it, by Engine.Dial
// and by Loop.Dial, and the engine still serves a dial after it (before, Loop.Dial dereferenced
// it on the loop's goroutine: the panic ended the process, Engine.Dial's caller included).
func TestDialWithANilContextIsAnError(t *testing.T) {
	eachSetup(t, func(t *testing.T, s setup) {
		ln := echoPeer(t, "tcp", "127.0.0.1:0")
		e := startDialEngine(t, s.opts()...)
		r := newRecorder()
		var nilCtx context.Context
		check := func(how string, c *Conn, err error) {
			if c != nil || err == nil || !strings.Contains(err.Error(), "nil Context") {
				t.Errorf("%s with a nil ctx: (%v, %v), want an error naming the nil Context", how, c, err)
			}
		}
		c, err := engineDial(t, e, nilCtx, "tcp", ln.Addr().String(), r)
		check("Engine.Dial", c, err)
		onLoop(t, e.Loops()[0], func() {
			err = e.Loops()[0].Dial(nilCtx, "tcp", ln.Addr().String(), r, func(*Conn, error) {
				t.Error("Loop.Dial with a nil ctx called done")
			})
		})
		check("Loop.Dial", nil, err)
		c, err = engineDial(t, e, context.Background(), "tcp", ln.Addr().String(), r)
		if err != nil {
			t.Fatalf("a dial after them: %v", err)
		}
		pingThrough(t, r, c)
		c.Close()
	})
}

// TestDialedConnHasTheEngineIdleTimeout: a dialed connection is served as an accepted one is:
// the engine's idle timeout (WithIdleTimeout) closes it when nothing passes, with
// ErrIdleTimeout.
func TestDialedConnHasTheEngineIdleTimeout(t *testing.T) {
	eachSetup(t, func(t *testing.T, s setup) {
		peer := echoPeer(t, "tcp", "127.0.0.1:0")
		e := startDialEngine(t, append(s.opts(), WithIdleTimeout(50*time.Millisecond))...)
		r := newRecorder()
		if _, err := engineDial(t, e, context.Background(), "tcp", peer.Addr().String(), r); err != nil {
			t.Fatalf("Engine.Dial: %v", err)
		}
		if _, err := r.closedWith(t); !errors.Is(err, ErrIdleTimeout) {
			t.Errorf("OnClose: %v, want ErrIdleTimeout", err)
		}
	})
}

// TestDialBadNetworkOrAddressIsAnErrorNamingIt: Engine.Dial and Loop.Dial refuse an unknown
// network and a malformed address with an error (returned, before any socket) that names both
// the network and the address given, as a dial's other errors do.
func TestDialBadNetworkOrAddressIsAnErrorNamingIt(t *testing.T) {
	e := startDialEngine(t)
	for _, tc := range []struct{ network, addr string }{
		{"udp", "127.0.0.1:9"},
		{"tcp", "127.0.0.1"}, // no port
	} {
		_, err := engineDial(t, e, context.Background(), tc.network, tc.addr, newRecorder())
		var loopErr error
		onLoop(t, e.Loops()[0], func() {
			loopErr = e.Loops()[0].Dial(context.Background(), tc.network, tc.addr, newRecorder(), func(*Conn, error) {
				t.Errorf("Loop.Dial %s %s: done called for a dial refused at once", tc.network, tc.addr)
			})
		})
		for how, err := range map[string]error{"Engine.Dial": err, "Loop.Dial": loopErr} {
			if err == nil || !strings.Contains(err.Error(), tc.network) || !strings.Contains(err.Error(), tc.addr) {
				t.Errorf("%s %s %s: %v, want an error naming the network and the address", how, tc.network, tc.addr, err)
			}
		}
	}
	if e.Conns() != 0 {
		t.Errorf("after refused dials: Conns() = %d", e.Conns())
	}
}

// TestDialTimeoutEndsTheDial: with WithDialTimeout, a connect that is never answered ends at
// that bound under a context without one, with an error that names the address and wraps
// context.DeadlineExceeded.
func TestDialTimeoutEndsTheDial(t *testing.T) {
	eachSetup(t, func(t *testing.T, s setup) {
		addr := fullBacklog(t)
		e := startDialEngine(t, append(s.opts(), WithDialTimeout(100*time.Millisecond))...)
		for _, how := range []string{"Engine.Dial", "Loop.Dial"} {
			var c *Conn
			var err error
			if how == "Engine.Dial" {
				c, err = engineDial(t, e, context.Background(), "tcp", addr, newRecorder())
			} else {
				c, err = dialFromLoop(t, e.Loops()[0], context.Background(), "tcp", addr, newRecorder())
			}
			if c != nil || !errors.Is(err, context.DeadlineExceeded) || !strings.Contains(err.Error(), addr) {
				t.Errorf("%s: (%v, %v), want an error naming %s and wrapping context.DeadlineExceeded", how, c, err, addr)
			}
		}
	})
}

// resetPeer is a net.Listener on 127.0.0.1 that resets each connection it accepts at once
// (SO_LINGER 0) and then sends on reset; cleanup closes it and waits for its goroutine.
func resetPeer(t *testing.T) (net.Listener, <-chan struct{}) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatalf("listen: %v", err)
	}
	reset := make(chan struct{}, 10)
	done := make(chan struct{})
	go func() {
		defer close(done)
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			c.(*net.TCPConn).SetLinger(0)
			c.Close()
			reset <- struct{}{}
		}
	}()
	t.Cleanup(func() {
		ln.Close()
		<-done
	})
	return ln, reset
}

// TestDialResetRightAfterAcceptIsECONNRESET: a dial whose peer accepts and resets the
// connection before the loop has looked at it (the connect completed, then the reset came)
// fails with ECONNRESET and names the address, from Engine.Dial and from Loop.Dial.
func TestDialResetRightAfterAcceptIsECONNRESET(t *testing.T) {
	eachSetup(t, func(t *testing.T, s setup) {
		peer, reset := resetPeer(t)
		var dials, waited atomic.Int32   // each dial waits for its reset once
		beforeDialCheck = func(fd int) { // the loop's goroutine, the connect completed
			if waited.Load() == dials.Load() {
				return // checked again (a spurious wake-up's connect)
			}
			waited.Add(1)
			select {
			case <-reset:
			case <-time.After(waitFor):
				t.Error("the peer did not accept within waitFor")
				return
			}
			end := time.Now().Add(waitFor)
			for { // the reset reaches the socket: TCP_CLOSE
				ti, err := unix.GetsockoptTCPInfo(fd, unix.IPPROTO_TCP, unix.TCP_INFO)
				if err != nil || ti.State == unix.BPF_TCP_CLOSE || time.Now().After(end) {
					return
				}
				time.Sleep(100 * time.Microsecond)
			}
		}
		defer func() { beforeDialCheck = nil }()
		e := startDialEngine(t, s.opts()...)
		addr := peer.Addr().String()
		dials.Add(1)
		c, err := engineDial(t, e, context.Background(), "tcp", addr, newRecorder())
		if c != nil || !errors.Is(err, unix.ECONNRESET) || !strings.Contains(err.Error(), addr) {
			t.Errorf("Engine.Dial: %v, %v; want an error wrapping ECONNRESET that names %s", c, err, addr)
		}
		dials.Add(1)
		c, err = dialFromLoop(t, e.Loops()[0], context.Background(), "tcp", addr, newRecorder())
		if c != nil || !errors.Is(err, unix.ECONNRESET) || !strings.Contains(err.Error(), addr) {
			t.Errorf("Loop.Dial: %v, %v; want an error wrapping ECONNRESET that names %s", c, err, addr)
		}
	})
}
