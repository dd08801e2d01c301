//go:build linux

package server

// Helpers of the connection layer's tests (Engine, Conn, Loop, PacketConn): the backend and
// driver matrix, engines that end with the test and leave nothing behind, clients with
// deadlines, and a handler that records what it is told.

import (
	"context"
	"fmt"
	"io"
	"net"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/ringev/ringev/internal/testutil"
	"github.com/ringev/ringev/internal/testutil/backends"
	"golang.org/x/sys/unix"
)

// waitFor bounds every wait of these tests.
const waitFor = 10 * time.Second

// setup is one cell of the matrix: a backend, a driver and the requests driver's receive mode.
type setup struct {
	backend, api, recv string
}

func (s setup) name() string {
	if s.recv != "" {
		return s.backend + "/" + s.api + "-" + s.recv
	}
	return s.backend + "/" + s.api
}

func (s setup) opts() []Option {
	return []Option{WithBackend(s.backend), WithAPI(s.api), WithRecv(s.recv)}
}

// layerDrivers are the drivers of the matrix: the requests driver in its default receive
// mode (multishot) and with a recv per connection, and the readiness driver.
var layerDrivers = []setup{{api: APIRequests}, {api: APIRequests, recv: RecvPerConn}, {api: APIReadiness}}

// eachSetup runs test once per backend and driver, as subtests "backend/api[-recv]". Each
// subtest checks that no goroutine and no fd is left behind when it ends.
func eachSetup(t *testing.T, test func(t *testing.T, s setup)) {
	for _, b := range backends.All {
		for _, d := range layerDrivers {
			s := setup{b, d.api, d.recv}
			t.Run(s.name(), func(t *testing.T) {
				backends.Require(t, b)
				testutil.NoLeaks(t)
				test(t, s)
			})
		}
	}
}

// eachBackendRequests runs test once per backend with the requests driver alone (what only
// the default driver does differently), as eachSetup does.
func eachBackendRequests(t *testing.T, test func(t *testing.T, s setup)) {
	for _, b := range backends.All {
		s := setup{backend: b, api: APIRequests}
		t.Run(b, func(t *testing.T) {
			backends.Require(t, b)
			testutil.NoLeaks(t)
			test(t, s)
		})
	}
}

// startEngine serves h on 127.0.0.1 (any port) with one loop and opts after it; cleanup cancels
// the engine's context and waits for its end (failing the test on an error).
func startEngine(t *testing.T, h Handler, opts ...Option) *Engine {
	t.Helper()
	return startEngineOn(t, "tcp", "127.0.0.1:0", h, opts...)
}

// startEngineOn is startEngine on network and addr.
func startEngineOn(t *testing.T, network, addr string, h Handler, opts ...Option) *Engine {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	e, err := Listen(ctx, network, addr, h, append([]Option{WithLoops(1), WithLogf(t.Logf)}, opts...)...)
	if err != nil {
		cancel()
		t.Fatalf("Listen: %v", err)
	}
	t.Cleanup(func() {
		cancel()
		waitEngine(t, e, "the cancellation of its context")
	})
	return e
}

// waitEngine waits for e's end, at most waitFor after what; an error from Wait fails the test.
func waitEngine(t *testing.T, e *Engine, what string) {
	t.Helper()
	select {
	case <-e.Done():
	case <-time.After(waitFor):
		t.Fatalf("the engine did not end within %v of %s (%d connections open)", waitFor, what, e.Conns())
	}
	if err := e.Wait(); err != nil {
		t.Errorf("Wait: %v", err)
	}
}

// needIPv6Loopback skips the test where there is no IPv6 loopback ([::1]).
func needIPv6Loopback(t *testing.T) {
	t.Helper()
	l, err := net.Listen("tcp6", "[::1]:0")
	if err != nil {
		t.Skipf("no IPv6 loopback here: %v", err)
	}
	l.Close()
}

// dialEngine connects to e with deadlines on every read and write; cleanup closes it.
func dialEngine(t *testing.T, e *Engine) net.Conn {
	t.Helper()
	c, err := net.DialTimeout(e.Addr().Network(), e.Addr().String(), waitFor)
	if err != nil {
		t.Fatalf("dial %s: %v", e.Addr(), err)
	}
	c.SetDeadline(time.Now().Add(waitFor))
	t.Cleanup(func() { c.Close() })
	return c
}

// progressConn is a client whose Reads, and Writes in pieces of 64 KiB, each have a deadline
// waitFor after they start: a stream of any length fails when it stalls (no byte for waitFor),
// not when a busy machine makes it slow.
type progressConn struct{ net.Conn }

func (c progressConn) Read(p []byte) (int, error) {
	c.SetReadDeadline(time.Now().Add(waitFor))
	return c.Conn.Read(p)
}

func (c progressConn) Write(p []byte) (n int, err error) {
	for n < len(p) && err == nil {
		c.SetWriteDeadline(time.Now().Add(waitFor))
		var m int
		m, err = c.Conn.Write(p[n:min(len(p), n+64<<10)])
		n += m
	}
	return n, err
}

// readN reads exactly n bytes from c; an error fails the test.
func readN(t *testing.T, c net.Conn, n int) string {
	t.Helper()
	b := make([]byte, n)
	if got, err := io.ReadFull(c, b); err != nil {
		t.Fatalf("reading %d bytes: %v (after %d: %.100q)", n, err, got, b[:got])
	}
	return string(b)
}

// readToEOF reads until EOF; any other error (a reset, the deadline) fails the test.
func readToEOF(t *testing.T, c net.Conn) string {
	t.Helper()
	b, err := io.ReadAll(c)
	if err != nil {
		t.Fatalf("reading until EOF: %v (after %d bytes: %.100q)", err, len(b), b)
	}
	return string(b)
}

// eventually polls cond until it holds, failing the test after waitFor.
func eventually(t *testing.T, what string, cond func() bool) {
	t.Helper()
	end := time.Now().Add(waitFor)
	for !cond() {
		if time.Now().After(end) {
			t.Fatalf("%s: not within %v", what, waitFor)
		}
		time.Sleep(100 * time.Microsecond)
	}
}

// received returns the next value on ch; none within waitFor fails the test, saying what
// did not come.
func received[T any](t *testing.T, ch <-chan T, what string) T {
	t.Helper()
	select {
	case v := <-ch:
		return v
	case <-time.After(waitFor):
		t.Fatalf("%s: not within %v", what, waitFor)
		panic("unreachable")
	}
}

// awaitAsleep waits until l's goroutine sleeps in its wait (testutil.BlockedIn of its thread,
// to which ringev.New locked it), at most waitFor. A loop that a posted function (onLoop) woke
// may still be ending that turn: it takes what another loop's handler writes to its
// connections when it gets there, part of the writes perhaps, rather than when that loop's
// enter wakes it after the handler's turn.
func awaitAsleep(t *testing.T, l *Loop) {
	t.Helper()
	var tid int
	onLoop(t, l, func() { tid = unix.Gettid() })
	eventually(t, fmt.Sprintf("loop %d asleep in its wait", l.Index()), func() bool { return testutil.BlockedIn(tid) != "" })
}

// writeFromElsewhere writes s to c from another goroutine and waits until Write has returned
// (at most waitFor); an error is reported with t.Error (it may run on the loop's goroutine).
func writeFromElsewhere(t *testing.T, c *Conn, s string) {
	written := make(chan error)
	go func() {
		_, err := c.WriteString(s)
		written <- err
	}()
	select {
	case err := <-written:
		if err != nil {
			t.Errorf("Write from another goroutine: %v", err)
		}
	case <-time.After(waitFor):
		t.Error("Write from another goroutine did not return")
	}
}

// onLoop runs f on l's goroutine and waits for it.
func onLoop(t *testing.T, l *Loop, f func()) {
	t.Helper()
	done := make(chan struct{})
	if err := l.Post(func() { f(); close(done) }); err != nil {
		t.Fatalf("Loop.Post: %v", err)
	}
	select {
	case <-done:
	case <-time.After(waitFor):
		t.Fatalf("a posted function did not run within %v", waitFor)
	}
}

// recorder is a Handler that records the events of its connections and serves lines: each
// complete line received is passed to line (if set), else sent back.
type recorder struct {
	mu     sync.Mutex
	events []string
	conns  []*Conn
	closed map[*Conn]error
	opened chan *Conn
	ended  chan *Conn
	line   func(c *Conn, line string)
	greet  string
}

func newRecorder() *recorder {
	return &recorder{closed: map[*Conn]error{}, opened: make(chan *Conn, 1000), ended: make(chan *Conn, 1000)}
}

func (r *recorder) OnOpen(c *Conn) {
	r.mu.Lock()
	r.events = append(r.events, "open")
	r.conns = append(r.conns, c)
	r.mu.Unlock()
	if r.greet != "" {
		c.WriteString(r.greet)
	}
	r.opened <- c
}

func (r *recorder) OnData(c *Conn) {
	for {
		b, _ := c.Peek(-1)
		i := slices.Index(b, '\n')
		if i < 0 {
			return
		}
		line := string(b[:i])
		c.Discard(i + 1)
		r.mu.Lock()
		r.events = append(r.events, "data "+line)
		r.mu.Unlock()
		if r.line != nil {
			r.line(c, line)
		} else {
			c.WriteString(line + "\n")
		}
	}
}

func (r *recorder) OnClose(c *Conn, err error) {
	r.mu.Lock()
	r.events = append(r.events, "close")
	r.closed[c] = err
	r.mu.Unlock()
	r.ended <- c
}

// next waits for a connection to open.
func (r *recorder) next(t *testing.T) *Conn {
	t.Helper()
	select {
	case c := <-r.opened:
		return c
	case <-time.After(waitFor):
		t.Fatalf("no connection opened within %v", waitFor)
		return nil
	}
}

// closedWith waits for a connection to close and returns its reason.
func (r *recorder) closedWith(t *testing.T) (*Conn, error) {
	t.Helper()
	select {
	case c := <-r.ended:
		r.mu.Lock()
		defer r.mu.Unlock()
		return c, r.closed[c]
	case <-time.After(waitFor):
		t.Fatalf("no connection closed within %v", waitFor)
		return nil, nil
	}
}

// log returns the events so far.
func (r *recorder) log() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.events)
}
