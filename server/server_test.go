//go:build linux

package server

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"os"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/ringev/ringev"
	"github.com/ringev/ringev/internal/testutil"
	"github.com/ringev/ringev/internal/testutil/backends"
	"golang.org/x/sys/unix"
)

// ioTimeout bounds every client read and write of these tests.
const ioTimeout = 10 * time.Second

// usableBackends returns the backends this kernel lets a loop use; the others are logged.
func usableBackends(t *testing.T) []string {
	var ok []string
	for _, b := range ringev.Backends() {
		if err := backends.Check(b); err != nil {
			t.Logf("backend %s cannot be used here: %v", b, err)
			continue
		}
		ok = append(ok, b)
	}
	return ok
}

// forEachBackend runs test as a subtest on each usable backend.
func forEachBackend(t *testing.T, test func(t *testing.T, backend string)) {
	for _, b := range usableBackends(t) {
		t.Run(b, func(t *testing.T) { test(t, b) })
	}
}

// srvConfig is what the servers' tests vary: the backend ("" is auto), the driver and its
// receive mode, the number of loops (0 is 1), the handler, and more options.
type srvConfig struct {
	Backend, API, Recv string
	Loops              int
	Handler            Handler
	Opts               []Option
}

// options are cfg's engine options, with the test's log.
func (cfg srvConfig) options(t *testing.T) []Option {
	return append([]Option{WithBackend(cfg.Backend), WithAPI(cfg.API), WithRecv(cfg.Recv),
		WithLoops(max(cfg.Loops, 1)), WithLogf(t.Logf)}, cfg.Opts...)
}

// drivers are the connection drivers the TCP tests run: the readiness API, and the requests
// API with each receive mode.
var drivers = []srvConfig{{API: APIReadiness}, {API: APIRequests, Recv: RecvMultishot}, {API: APIRequests, Recv: RecvPerConn}}

// driverName names a driver's subtest: "readiness", "requests-multishot", "requests-per-conn",
// "requests" (its default receive mode).
func driverName(cfg srvConfig) string {
	if cfg.API == APIRequests && cfg.Recv != "" {
		return cfg.API + "-" + cfg.Recv
	}
	return cfg.API
}

// forEachDriver runs test as a subtest with each of drivers, or, with all false (the tests
// whose cost is in their clients), with the readiness API and the requests API in its default
// receive mode; test adds the rest of the srvConfig to the one it is given.
func forEachDriver(t *testing.T, all bool, test func(t *testing.T, cfg srvConfig)) {
	list := drivers
	if !all {
		list = []srvConfig{{API: APIReadiness}, {API: APIRequests}}
	}
	for _, cfg := range list {
		t.Run(driverName(cfg), func(t *testing.T) { test(t, cfg) })
	}
}

// forEachBackendDriver runs test on each usable backend with each driver (see forEachDriver);
// cfg.Backend is set.
func forEachBackendDriver(t *testing.T, all bool, test func(t *testing.T, cfg srvConfig)) {
	forEachBackend(t, func(t *testing.T, backend string) {
		forEachDriver(t, all, func(t *testing.T, cfg srvConfig) {
			cfg.Backend = backend
			test(t, cfg)
		})
	})
}

// listenServer starts an engine with cfg on 127.0.0.1, any port (no cleanup).
func listenServer(t *testing.T, cfg srvConfig) (*Engine, error) {
	t.Helper()
	return Listen(context.Background(), "tcp", "127.0.0.1:0", cfg.Handler, cfg.options(t)...)
}

// startServer starts an engine with cfg on 127.0.0.1, any port; the test's cleanup shuts it
// down and fails the test if that does not end within 10 s or ends with an error.
func startServer(t *testing.T, cfg srvConfig) *Engine {
	t.Helper()
	srv, err := listenServer(t, cfg)
	if err != nil {
		t.Fatalf("Listen: %v", err)
	}
	t.Cleanup(func() { stopServer(t, srv) })
	return srv
}

// shutdown starts srv's graceful shutdown (Engine.Shutdown, bounded by d) on another
// goroutine and returns at once; waitServer waits for its end.
func shutdown(srv *Engine, d time.Duration) {
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), d)
		defer cancel()
		srv.Shutdown(ctx)
	}()
}

// stopServer shuts srv down (its drain bounded by 5 s) and waits for it, at most 10 s.
func stopServer(t *testing.T, srv *Engine) {
	t.Helper()
	shutdown(srv, 5*time.Second)
	waitServer(t, srv, "Shutdown")
}

// waitServer waits until srv has ended, at most 10 s after what (Shutdown, Close) was asked;
// an error from Wait fails the test.
func waitServer(t *testing.T, srv *Engine, what string) {
	t.Helper()
	select {
	case <-srv.Done():
		if err := srv.Wait(); err != nil {
			t.Errorf("Wait: %v", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatalf("the engine did not end within 10 s of %s (%d connections open)", what, srv.Conns())
	}
}

func respServer() Handler { return NewRESP(NewKeyspace()) }
func httpServer() Handler { return NewHTTP() }
func echoServer() Handler { return Echo{} }

// dial connects to srv with deadlines on every read and write.
func dial(t *testing.T, srv *Engine) net.Conn {
	t.Helper()
	c, err := net.DialTimeout("tcp", srv.Addr().String(), ioTimeout)
	if err != nil {
		t.Fatalf("dial %s: %v", srv.Addr(), err)
	}
	c.SetDeadline(time.Now().Add(ioTimeout))
	t.Cleanup(func() { c.Close() })
	return c
}

// awaitFull waits until c, a client that does not read, is full: its receive window is zero
// (testutil.AwaitZeroWindow), so the server's output to it piles up.
func awaitFull(t *testing.T, c net.Conn) {
	t.Helper()
	if err := testutil.AwaitZeroWindow(c.(*net.TCPConn), 10*time.Second); err != nil {
		t.Fatal(err)
	}
}

// dialSend dials srv (as dial) and writes req; a failed write fails the test.
func dialSend(t *testing.T, srv *Engine, req string) net.Conn {
	t.Helper()
	c := dial(t, srv)
	if _, err := c.Write([]byte(req)); err != nil {
		t.Fatalf("write: %v", err)
	}
	return c
}

// readAll reads until EOF, each read within ioTimeout (a long stream may take longer than one
// ioTimeout under -race on a busy machine; a stalled one fails within one); it fails the test
// on any other error (a reset, the deadline).
func readAll(t *testing.T, c net.Conn) string {
	t.Helper()
	var b []byte
	buf := make([]byte, 64<<10)
	for {
		n, err := readSome(c, buf)
		b = append(b, buf[:n]...)
		if err == io.EOF {
			return string(b)
		}
		if err != nil {
			t.Fatalf("reading until EOF: %v (after %d bytes: %.200q)", err, len(b), b)
		}
	}
}

// readSome is c.Read with a deadline of ioTimeout from now: a hang guard that ends a read that
// makes no progress, where dial's deadline would also end a long exchange that a busy machine
// makes slowly.
func readSome(c net.Conn, p []byte) (int, error) {
	c.SetReadDeadline(time.Now().Add(ioTimeout))
	return c.Read(p)
}

// readFull is io.ReadFull with readSome's deadline on each read.
func readFull(c net.Conn, p []byte) error {
	for got := 0; got < len(p); {
		n, err := readSome(c, p[got:])
		got += n
		if err != nil {
			if err == io.EOF && got < len(p) {
				err = io.ErrUnexpectedEOF
			}
			return err
		}
	}
	return nil
}

// writeAll writes p to c in pieces of 64 KiB, each with a deadline of ioTimeout from then (as
// readSome).
func writeAll(c net.Conn, p []byte) error {
	for len(p) > 0 {
		k := min(len(p), 64<<10)
		c.SetWriteDeadline(time.Now().Add(ioTimeout))
		n, err := c.Write(p[:k])
		p = p[n:]
		if err != nil {
			return err
		}
	}
	return nil
}

// waitConns waits until srv has n connections open, at most 10 s.
func waitConns(t *testing.T, srv *Engine, n int) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for srv.Conns() != n {
		if time.Now().After(deadline) {
			t.Fatalf("%d connections open, want %d", srv.Conns(), n)
		}
		time.Sleep(time.Millisecond)
	}
}

// TestEchoOverTCP: the echo server sends back what it receives, on every backend, with each
// driver.
func TestEchoOverTCP(t *testing.T) {
	forEachBackendDriver(t, true, func(t *testing.T, cfg srvConfig) {
		cfg.Handler = echoServer()
		srv := startServer(t, cfg)
		c := dial(t, srv)
		msg := bytes.Repeat([]byte("0123456789abcdef"), 20000) // 320 KB: more than one read, and than OutputLimit
		go c.Write(msg)
		got := make([]byte, len(msg))
		if _, err := io.ReadFull(c, got); err != nil || !bytes.Equal(got, msg) {
			t.Fatalf("echo of %d bytes: %v, equal %v", len(msg), err, bytes.Equal(got, msg))
		}
	})
}

// TestHalfClosedPeerGetsItsReplies: a client that sends its requests and shuts down its writing
// side at once (`printf 'PING\r\n' | nc -N`: the data and the FIN arrive together, POLLRDHUP
// with POLLIN) reads every reply and then EOF, not a reset, on every backend, with each driver.
func TestHalfClosedPeerGetsItsReplies(t *testing.T) {
	forEachBackendDriver(t, true, func(t *testing.T, cfg srvConfig) {
		for _, tc := range []struct {
			proto     func() Handler
			req, want string
		}{
			{echoServer, "hello ringev", "hello ringev"},
			{respServer, "PING\r\nPING\r\n", "+PONG\r\n+PONG\r\n"},
		} {
			cfg.Handler = tc.proto()
			srv := startServer(t, cfg)
			c := dialSend(t, srv, tc.req)
			if err := c.(*net.TCPConn).CloseWrite(); err != nil {
				t.Fatalf("shutdown(SHUT_WR): %v", err)
			}
			if got := readAll(t, c); got != tc.want {
				t.Errorf("%q then a half-close: got %q, want %q", tc.req, got, tc.want)
			}
			waitConns(t, srv, 0)
		}
	})
}

// bigReplies is a RESP pipeline whose replies (16 MiB) are far larger than the socket buffers
// (loopback TCP autotunes them to a few MB at most), from requests that fit in them: SET k to a
// 1 MiB value (MaxRESPBulk), then 16 GETs of it. want is the replies.
func bigReplies() (req, want string) {
	value := strings.Repeat("v", MaxRESPBulk)
	get := "*2\r\n$3\r\nGET\r\n$1\r\nk\r\n"
	req = "*3\r\n$3\r\nSET\r\n$1\r\nk\r\n$" + strconv.Itoa(len(value)) + "\r\n" + value + "\r\n" + strings.Repeat(get, 16)
	want = "+OK\r\n" + strings.Repeat("$"+strconv.Itoa(len(value))+"\r\n"+value+"\r\n", 16)
	return req, want
}

// halfClosedBigReplies starts a RESP server with cfg, sends it bigReplies' requests on a new
// connection and shuts down that connection's writing side; it returns the server, the
// connection and the replies the client should read.
func halfClosedBigReplies(t *testing.T, cfg srvConfig) (*Engine, net.Conn, string) {
	t.Helper()
	cfg.Handler = respServer()
	srv := startServer(t, cfg)
	req, want := bigReplies()
	c := dialSend(t, srv, req)
	if err := c.(*net.TCPConn).CloseWrite(); err != nil {
		t.Fatalf("shutdown(SHUT_WR): %v", err)
	}
	return srv, c, want
}

// TestHalfClosedPeerGetsRepliesLargerThanItsSocketBuffers: a client that sends requests whose
// replies are far larger than the socket buffers and shuts down its writing side before it has
// read them receives every reply byte and then EOF (the server waits for writability while the
// half-close stays reported, instead of closing): a RESP pipeline whose FIN comes with it (16 MiB
// of GET replies), and 150,000 pipelined HTTP requests (20 MB of replies) whose FIN comes once the
// client has started reading (so that whether the server's output is full then varies); on every
// backend, with the readiness API and the requests API.
func TestHalfClosedPeerGetsRepliesLargerThanItsSocketBuffers(t *testing.T) {
	forEachBackendDriver(t, false, func(t *testing.T, cfg srvConfig) {
		t.Run("resp", func(t *testing.T) {
			srv, c, want := halfClosedBigReplies(t, cfg)
			awaitFull(t, c) // slow to read: the server's output fills first
			if got := readAll(t, c); got != want {
				t.Errorf("got %d bytes of replies, want %d", len(got), len(want))
			}
			waitConns(t, srv, 0)
		})
		t.Run("http", func(t *testing.T) {
			cfg.Handler = httpServer()
			srv := startServer(t, cfg)
			c := dial(t, srv)
			const n = 150000 // 7.6 MB of requests, 20 MB of replies
			errc := make(chan error, 1)
			go func() { // the write may wait for the server to read: it waits for its output
				err := writeAll(c, []byte(strings.Repeat(wrkRequest, n)))
				if err == nil {
					err = c.(*net.TCPConn).CloseWrite()
				}
				errc <- err
			}()
			awaitFull(t, c) // slow to read: the server's output fills first
			got := readAll(t, c)
			if err := <-errc; err != nil {
				t.Fatalf("writing %d requests then shutdown(SHUT_WR): %v", n, err)
			}
			if k := strings.Count(got, "HTTP/1.1 200 OK\r\n"); k != n || !strings.HasSuffix(got, "Hello, World!") {
				t.Errorf("%d pipelined requests then a half-close: got %d replies (%d bytes)", n, k, len(got))
			}
			waitConns(t, srv, 0)
		})
	})
}

// TestResetOfAHalfClosedPeerClosesItsConnection: a client that has shut down its writing side
// while the server waits to write it 16 MiB of replies (bigReplies), and then resets the
// connection (close with SO_LINGER 0) without reading them, has its connection closed by the
// server (within 10 s), though a reset does not wake a handler that waits for Write alone; on
// every backend, with the readiness API and the requests API.
func TestResetOfAHalfClosedPeerClosesItsConnection(t *testing.T) {
	forEachBackendDriver(t, false, func(t *testing.T, cfg srvConfig) {
		srv, c, _ := halfClosedBigReplies(t, cfg)
		awaitFull(t, c) // the server reads the requests and fills its output
		if n := srv.Conns(); n != 1 {
			t.Fatalf("%d connections open while the replies wait for the half-closed client, want 1", n)
		}
		c.(*net.TCPConn).SetLinger(0)
		c.Close()
		waitConns(t, srv, 0)
	})
}

// processCPU is the CPU time (user and system) this process has used so far.
func processCPU(t *testing.T) time.Duration {
	t.Helper()
	var ru unix.Rusage
	if err := unix.Getrusage(unix.RUSAGE_SELF, &ru); err != nil {
		t.Fatalf("getrusage(RUSAGE_SELF): %v", err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// TestHalfClosedSlowReaderLeavesTheServerAsleep: while a client that has shut down its writing
// side does not read the replies the server waits to write (16 MiB, see bigReplies), the server
// sleeps once the client's receive window is full: in the quietest of four 150 ms windows the whole process uses less than half a core (a
// handler woken by the half-close on every dispatch, as the level-triggered Error is, would spin
// at a whole core in every window); then the client reads every reply; on every backend, with the
// readiness API and the requests API.
func TestHalfClosedSlowReaderLeavesTheServerAsleep(t *testing.T) {
	forEachBackendDriver(t, false, func(t *testing.T, cfg srvConfig) {
		srv, c, want := halfClosedBigReplies(t, cfg)
		awaitFull(t, c) // the server has written all the client's window takes: it waits now
		quietest, wall := time.Duration(1<<62), time.Duration(0)
		for range 4 { // the first windows may still see the last requests served
			cpu0, wall0 := processCPU(t), time.Now()
			time.Sleep(150 * time.Millisecond)
			if cpu := processCPU(t) - cpu0; cpu < quietest {
				quietest, wall = cpu, time.Since(wall0)
			}
		}
		t.Logf("%v of CPU in %v while the half-closed client did not read", quietest, wall)
		if quietest > wall/2 {
			t.Errorf("the process used %v of CPU in %v (its quietest window) while the server waited to write to a half-closed client: the server spins", quietest, wall)
		}
		if got := readAll(t, c); got != want {
			t.Errorf("got %d bytes of replies, want %d", len(got), len(want))
		}
		waitConns(t, srv, 0)
	})
}

// TestRESPPipelinedOverTCP: a thousand commands in one write get a thousand replies in order, on
// every backend, with each driver.
func TestRESPPipelinedOverTCP(t *testing.T) {
	forEachBackendDriver(t, true, func(t *testing.T, cfg srvConfig) {
		cfg.Handler = respServer()
		srv := startServer(t, cfg)
		c := dialSend(t, srv, strings.Repeat("INCR n\r\n", 1000)+"QUIT\r\n")
		got := readAll(t, c)
		var want strings.Builder
		for i := 1; i <= 1000; i++ {
			want.WriteString(":" + strconv.Itoa(i) + "\r\n")
		}
		if got != want.String()+"+OK\r\n" {
			t.Errorf("got %d bytes, want %d (%.100q...)", len(got), want.Len()+5, got)
		}
	})
}

// TestMalformedRequestGetsErrorThenClose: a RESP protocol error and a malformed HTTP request
// are answered, then the server closes the connection (the client reads EOF, not a reset), and
// no connection is left open; on every backend, with each driver.
func TestMalformedRequestGetsErrorThenClose(t *testing.T) {
	forEachBackendDriver(t, true, func(t *testing.T, cfg srvConfig) {
		for _, tc := range []struct {
			proto     func() Handler
			req, want string
		}{
			{respServer, "PING\r\n*1\r\n$x\r\nPING\r\n", "+PONG\r\n-ERR Protocol error: invalid bulk length\r\n"},
			{httpServer, wrkRequest + "GET / HTTP/1.1\nHost: h\n\n" + wrkRequest, "HTTP/1.1 400 Bad Request\r\n"},
		} {
			cfg.Handler = tc.proto()
			srv := startServer(t, cfg)
			c := dialSend(t, srv, tc.req)
			if got := readAll(t, c); !strings.Contains(got, tc.want) {
				t.Errorf("%q: got %q, want it to contain %q", tc.req, got, tc.want)
			}
			c.Close() // the server lingers until the client has closed too
			waitConns(t, srv, 0)
		}
	})
}

// TestLingeringCloseEndsAtItsTimeout: a client that has its reply and EOF after QUIT but never
// closes its side, and keeps sending, is closed by the server within lingerTimeout (plus slack),
// with each driver (the requests driver's bound is its recv's deadline).
func TestLingeringCloseEndsAtItsTimeout(t *testing.T) {
	forEachDriver(t, true, func(t *testing.T, cfg srvConfig) {
		cfg.Handler = respServer()
		srv := startServer(t, cfg)
		c := dialSend(t, srv, "PING\r\nQUIT\r\n")
		if got := readAll(t, c); got != "+PONG\r\n+OK\r\n" {
			t.Fatalf("got %q", got)
		}
		start := time.Now()
		for srv.Conns() > 0 && time.Since(start) < lingerTimeout+5*time.Second {
			c.Write([]byte("PING\r\n")) // dropped by the lingering server
			time.Sleep(10 * time.Millisecond)
		}
		if n := srv.Conns(); n > 0 {
			t.Fatalf("%d connections still open %v after the reply", n, time.Since(start))
		}
		if took := time.Since(start); took < lingerTimeout/2 {
			t.Errorf("closed after %v: the server did not linger", took)
		}
	})
}

// TestRandomInputLeavesNoConnection: 100 connections per protocol that send 64 KiB of random
// bytes (some answered with an error and closed by the server, some left incomplete), read what
// comes back and close, leave no connection open; with each driver.
func TestRandomInputLeavesNoConnection(t *testing.T) {
	forEachDriver(t, true, func(t *testing.T, cfg srvConfig) {
		rng := rand.New(rand.NewPCG(13, uint64(len(driverName(cfg)))))
		for _, proto := range []func() Handler{respServer, httpServer} {
			cfg.Handler = proto()
			srv := startServer(t, cfg)
			for range 100 {
				c := dial(t, srv)
				junk := make([]byte, 64<<10)
				for i := range junk {
					junk[i] = byte(rng.UintN(256))
				}
				go c.Write(junk) // may fail once the server has closed
				c.SetReadDeadline(time.Now().Add(50 * time.Millisecond))
				io.Copy(io.Discard, c)
				c.Close()
			}
			waitConns(t, srv, 0)
			stopServer(t, srv)
		}
	})
}

// TestAcceptResumesAfterFdsRunOut: when accept fails for lack of fds (EMFILE: RLIMIT_NOFILE set
// 4 above what the process and the server need), the server pauses accepting instead of failing
// or spinning, and once fds are available again every connection left in the backlog is
// served; with each driver on uring and epoll (the requests driver's multishot accept ends with
// EMFILE and is re-armed).
func TestAcceptResumesAfterFdsRunOut(t *testing.T) {
	forEachBackendDriver(t, true, func(t *testing.T, cfg srvConfig) {
		srv, fds, restore := startShortOfFds(t, cfg)
		awaitAcceptPauses(t, srv, 3)
		if got := srv.Conns(); got >= len(fds) {
			t.Fatalf("%d connections accepted: the limit did not bite", got)
		}
		restore()
		reply := make([]byte, 16)
		for _, fd := range fds {
			rawReply(t, fd, reply)
		}
	})
}

// TestAcceptPauseIsLoggedOncePerEpisode: while accept keeps failing for lack of fds, the server
// logs the first pause of the episode and, once it accepts again, its end; not a line per pause
// (every 100 ms); with each driver on uring and epoll.
func TestAcceptPauseIsLoggedOncePerEpisode(t *testing.T) {
	forEachBackendDriver(t, true, func(t *testing.T, cfg srvConfig) {
		var mu sync.Mutex
		var paused, resumed int
		cfg.Opts = append(cfg.Opts, WithLogf(func(format string, args ...any) {
			line := fmt.Sprintf(format, args...)
			t.Log(line)
			mu.Lock()
			defer mu.Unlock()
			switch {
			case strings.Contains(line, "pausing accept"):
				paused++
			case strings.Contains(line, "accepting again"):
				resumed++
			}
		}))
		srv, fds, restore := startShortOfFds(t, cfg)
		awaitAcceptPauses(t, srv, 3)
		restore()
		reply := make([]byte, 16)
		for _, fd := range fds {
			rawReply(t, fd, reply)
		}
		mu.Lock()
		defer mu.Unlock()
		if paused != 1 || resumed != 1 {
			t.Errorf("one episode of three pauses or more logged %d pause lines and %d resume lines, want 1 and 1", paused, resumed)
		}
	})
}

// awaitAcceptPauses waits until srv's (one) loop has paused accepting n times in the current
// episode of accept failing (Loop.acceptFailed).
func awaitAcceptPauses(t *testing.T, srv *Engine, n int) {
	t.Helper()
	l := srv.Loops()[0]
	eventually(t, fmt.Sprintf("%d accept pauses", n), func() bool {
		var got int
		onLoop(t, l, func() { got = l.acceptPauses })
		return got >= n
	})
}

// startShortOfFds starts a RESP server with cfg (uring and epoll only: the other backends run
// the same drivers) under an RLIMIT_NOFILE 4 above what the process and the server need, and
// connects 12 sockets to it, each with a PING sent: the server accepts 4 of them at most, the
// others wait in the backlog. restore puts the limit back (the test's cleanup does too). The
// limit is lowered before the server starts: io_uring reads RLIMIT_NOFILE when it prepares an
// accept SQE, so a lower limit set later does not bind an accept already armed.
func startShortOfFds(t *testing.T, cfg srvConfig) (srv *Engine, fds [12]int, restore func()) {
	t.Helper()
	if cfg.Backend != "uring" && cfg.Backend != "epoll" {
		t.Skipf("the other backends run the same drivers; tested on uring and epoll")
	}
	cfg.Handler = respServer()
	for i := range fds {
		fd, err := unix.Socket(unix.AF_INET, unix.SOCK_STREAM|unix.SOCK_CLOEXEC, 0)
		if err != nil {
			t.Fatal(err)
		}
		fds[i] = fd
		t.Cleanup(func() { unix.Close(fd) })
		tv := unix.Timeval{Sec: 10}
		unix.SetsockoptTimeval(fd, unix.SOL_SOCKET, unix.SO_RCVTIMEO, &tv)
	}
	before := fdCount(t)
	probe := startServer(t, cfg) // how many fds a server takes
	need := fdCount(t) - before
	stopServer(t, probe)
	var old unix.Rlimit
	if err := unix.Getrlimit(unix.RLIMIT_NOFILE, &old); err != nil {
		t.Fatal(err)
	}
	restored := false
	restore = func() {
		if !restored {
			restored = true
			unix.Setrlimit(unix.RLIMIT_NOFILE, &old)
		}
	}
	t.Cleanup(restore)
	low := unix.Rlimit{Cur: uint64(fdCount(t) + need + 4), Max: old.Max}
	if err := unix.Setrlimit(unix.RLIMIT_NOFILE, &low); err != nil {
		t.Fatal(err)
	}
	srv = startServer(t, cfg)
	sa := sockaddr(t, srv)
	for _, fd := range fds { // connect needs no new fd: they wait in the backlog
		if err := unix.Connect(fd, sa); err != nil {
			t.Fatal(err)
		}
		if _, err := unix.Write(fd, pingRequest); err != nil {
			t.Fatal(err)
		}
	}
	return srv, fds, restore
}

// TestSlowReaderGetsEveryReply: a client that sends a long pipeline before reading anything makes
// the server stop reading while its output is full (OutputLimit); once the client reads, every
// reply arrives, in order; with each driver.
func TestSlowReaderGetsEveryReply(t *testing.T) {
	forEachDriver(t, true, func(t *testing.T, cfg srvConfig) {
		cfg.Handler = respServer()
		srv := startServer(t, cfg)
		c := dial(t, srv)
		const n = 300000 // 2.4 MB of requests, 2.1 MB of replies: more than the socket buffers hold
		errc := make(chan error, 1)
		go func() {
			err := writeAll(c, []byte(strings.Repeat("PING\r\n", n)+"QUIT\r\n"))
			errc <- err
		}()
		awaitFull(t, c) // the replies fill the buffers
		got := readAll(t, c)
		if err := <-errc; err != nil {
			t.Fatal(err)
		}
		if want := strings.Repeat("+PONG\r\n", n) + "+OK\r\n"; got != want {
			t.Errorf("got %d bytes, want %d", len(got), len(want))
		}
	})
}

// fdCount is the number of fds this process has open.
func fdCount(t *testing.T) int {
	t.Helper()
	ents, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		t.Fatal(err)
	}
	return len(ents) - 1 // the directory's own fd
}

// raiseNofile raises RLIMIT_NOFILE's soft limit to at least n (up to the hard limit) for the
// test, and restores it after.
func raiseNofile(t *testing.T, n uint64) {
	var old unix.Rlimit
	if err := unix.Getrlimit(unix.RLIMIT_NOFILE, &old); err != nil {
		t.Fatal(err)
	}
	if old.Cur >= n {
		return
	}
	if old.Max < n {
		t.Skipf("RLIMIT_NOFILE hard limit %d < %d fds needed", old.Max, n)
	}
	if err := unix.Setrlimit(unix.RLIMIT_NOFILE, &unix.Rlimit{Cur: n, Max: old.Max}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { unix.Setrlimit(unix.RLIMIT_NOFILE, &old) })
}

// TestShutdownWritesPendingRepliesThenCloses: Shutdown serves what a connection has sent, writes
// the replies held back by a full output, closes it, and closes idle connections; Wait returns nil;
// with each driver.
func TestShutdownWritesPendingRepliesThenCloses(t *testing.T) {
	forEachDriver(t, true, testShutdown)
}

// testShutdown is TestShutdownWritesPendingRepliesThenCloses with one driver.
func testShutdown(t *testing.T, cfg srvConfig) {
	cfg.Handler = respServer()
	srv, err := listenServer(t, cfg)
	if err != nil {
		t.Fatal(err)
	}
	idle, busy := dial(t, srv), dial(t, srv)
	waitConns(t, srv, 2)
	go busy.Write([]byte(strings.Repeat("PING\r\n", 300000))) // more than the buffers and OutputLimit take
	awaitFull(t, busy)
	shutdown(srv, DefaultDrainTimeout)
	got := readAll(t, busy)
	if len(got) == 0 || len(got)%7 != 0 || got != strings.Repeat("+PONG\r\n", len(got)/7) {
		t.Errorf("the busy connection got %d bytes (%.50q...): want whole +PONG replies", len(got), got)
	}
	if got := readAll(t, idle); got != "" {
		t.Errorf("the idle connection got %q", got)
	}
	waitServer(t, srv, "Shutdown")
	if _, err := net.DialTimeout("tcp", srv.Addr().String(), time.Second); err == nil {
		t.Error("the server still accepts connections after Shutdown")
	}
}

// TestLoopsShareTheKeyspace: with 4 loops (SO_REUSEPORT), connections land on several loops and
// see one keyspace; with each driver.
func TestLoopsShareTheKeyspace(t *testing.T) {
	forEachDriver(t, false, func(t *testing.T, cfg srvConfig) {
		ks := NewKeyspace()
		cfg.Loops, cfg.Handler = 4, NewRESP(ks)
		srv := startServer(t, cfg)
		for i := range 40 {
			c := dial(t, srv)
			c.Write([]byte("INCR n\r\nQUIT\r\n"))
			if got, want := readAll(t, c), ":"+strconv.Itoa(i+1)+"\r\n+OK\r\n"; got != want {
				t.Fatalf("connection %d: got %q, want %q", i, got, want)
			}
		}
	})
}

// TestHTTPDateRefreshedByTimer: the Date header follows the clock, through the loop's timer; with
// each driver.
func TestHTTPDateRefreshedByTimer(t *testing.T) {
	forEachDriver(t, false, testHTTPDate)
}

// testHTTPDate is TestHTTPDateRefreshedByTimer with one driver.
func testHTTPDate(t *testing.T, cfg srvConfig) {
	cfg.Handler = httpServer()
	srv := startServer(t, cfg)
	c := dial(t, srv)
	r := bufio.NewReader(c)
	date := func() string {
		c.Write([]byte(wrkRequest))
		for {
			line, err := r.ReadString('\n')
			if err != nil {
				t.Fatal(err)
			}
			if d, ok := strings.CutPrefix(line, "Date: "); ok {
				r.Discard(len("Content-Type: text/plain\r\nContent-Length: 13\r\n\r\nHello, World!"))
				return strings.TrimSpace(d)
			}
		}
	}
	first := date()
	if when, err := time.Parse(time.RFC1123, first); err != nil || time.Since(when).Abs() > 5*time.Second {
		t.Fatalf("Date %q (%v): not now", first, err)
	}
	time.Sleep(2100 * time.Millisecond)
	if second := date(); second == first {
		t.Errorf("Date still %q 2.1 s later", second)
	}
}

// TestBackendReasonSaysWhyAutoChose: with Backend "" (auto) the server says why its loops got
// their backend (the loop's "auto: ..." reason, which names the failing kernel feature when
// io_uring cannot be used); with a backend named, it says nothing.
func TestBackendReasonSaysWhyAutoChose(t *testing.T) {
	srv := startServer(t, srvConfig{Handler: echoServer()})
	if r := srv.BackendReason(); !strings.HasPrefix(r, "auto: ") || !strings.Contains(r, srv.Backend()) {
		t.Errorf("auto chose %s; BackendReason %q, want an \"auto: \" reason naming it", srv.Backend(), r)
	}
	named := startServer(t, srvConfig{Handler: echoServer(), Backend: "poll"})
	if r := named.BackendReason(); r != "" {
		t.Errorf("backend named: BackendReason %q, want \"\"", r)
	}
}

// TestCloseCutsADrainShort: Close after Shutdown closes a connection whose peer does not read
// (a drain that would wait out its bound, here a minute) at once, and the loops end.
func TestCloseCutsADrainShort(t *testing.T) {
	forEachDriver(t, false, func(t *testing.T, cfg srvConfig) {
		cfg.Handler = echoServer()
		srv, err := listenServer(t, cfg)
		if err != nil {
			t.Fatal(err)
		}
		c := dial(t, srv)
		go func() { // the echo's replies fill both socket buffers: the drain cannot finish
			chunk := make([]byte, 64<<10)
			for {
				if _, err := c.Write(chunk); err != nil {
					return
				}
			}
		}()
		waitConns(t, srv, 1)
		awaitFull(t, c) // the echo's replies fill the buffers
		shutdown(srv, time.Minute)
		srv.Close()
		waitServer(t, srv, "Close (a drain bounded by 1 min)")
		if n := srv.Conns(); n != 0 {
			t.Errorf("%d connections open after Close, want 0", n)
		}
	})
}

// TestIdleConnectionsOwnNoBuffers: 5,000 connections that have each been served one request and
// sit idle cost the server less than 2 KiB of heap each (its conn, its fd event or its pending
// recv request, and the loop's slot for the fd): an idle connection owns no read or write buffer;
// with the readiness driver and with the requests driver's multishot recv (the kernel picks a
// buffer of the loop's group only when bytes arrive).
func TestIdleConnectionsOwnNoBuffers(t *testing.T) {
	for _, cfg := range []srvConfig{{API: APIReadiness}, {API: APIRequests, Recv: RecvMultishot}} {
		t.Run(driverName(cfg), func(t *testing.T) {
			if per := idleHeapPerConn(t, cfg, 5000); per > 2048 {
				t.Errorf("%.0f bytes of heap per idle connection, want < 2048", per)
			}
		})
	}
}

// TestIdlePerConnRecvOwnsOneBuffer: with the requests driver's RecvPerConn mode, each of 5,000
// idle connections holds its recv's buffer (RecvBufferSize) and no other: between
// RecvBufferSize and RecvBufferSize + 2 KiB of heap each.
func TestIdlePerConnRecvOwnsOneBuffer(t *testing.T) {
	per := idleHeapPerConn(t, srvConfig{API: APIRequests, Recv: RecvPerConn}, 5000)
	if per < RecvBufferSize || per > RecvBufferSize+2048 {
		t.Errorf("%.0f bytes of heap per idle connection, want %d to %d", per, RecvBufferSize, RecvBufferSize+2048)
	}
}

// idleHeapPerConn opens n connections to a RESP server run with cfg, has each served a PING,
// leaves them idle, and returns the server's heap growth per connection, in bytes. The clients
// are raw sockets, so that their own memory is not counted.
func idleHeapPerConn(t *testing.T, cfg srvConfig, n int) float64 {
	raiseNofile(t, uint64(2*n+256))
	cfg.Handler = respServer()
	srv := startServer(t, cfg)
	sa := sockaddr(t, srv)
	heap := func() uint64 {
		var m runtime.MemStats
		runtime.GC()
		runtime.ReadMemStats(&m)
		return m.HeapAlloc
	}
	before := heap()
	fds := make([]int, 0, n)
	defer func() {
		for _, fd := range fds {
			unix.Close(fd)
		}
	}()
	reply := make([]byte, 16)
	for range n {
		fd := rawConn(t, sa)
		fds = append(fds, fd)
		rawPing(t, fd, reply)
	}
	waitConns(t, srv, n)
	per := float64(int64(heap())-int64(before)) / float64(n)
	t.Logf("%s: %.0f bytes of heap per idle connection", driverName(cfg), per)
	return per
}

// sockaddr is srv's address for unix.Connect.
func sockaddr(t *testing.T, srv *Engine) unix.Sockaddr {
	addr := srv.Addr().(*net.TCPAddr)
	sa := &unix.SockaddrInet4{Port: addr.Port}
	copy(sa.Addr[:], addr.IP.To4())
	return sa
}

// rawConn connects a blocking socket with a 10 s receive timeout to sa; the caller closes it.
func rawConn(t *testing.T, sa unix.Sockaddr) int {
	t.Helper()
	fd, err := unix.Socket(unix.AF_INET, unix.SOCK_STREAM|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		t.Fatal(err)
	}
	tv := unix.Timeval{Sec: 10}
	unix.SetsockoptTimeval(fd, unix.SOL_SOCKET, unix.SO_RCVTIMEO, &tv)
	if err := unix.Connect(fd, sa); err != nil {
		unix.Close(fd)
		t.Fatal(err)
	}
	return fd
}

var pingRequest = []byte("PING\r\n")

// rawPing sends PING on fd and reads +PONG into reply (16 bytes or more), without allocating;
// it retries a read or write that a signal interrupted (the Go runtime's preemption).
func rawPing(t *testing.T, fd int, reply []byte) {
	for {
		_, err := unix.Write(fd, pingRequest)
		if err == unix.EINTR {
			continue
		}
		if err != nil {
			t.Fatal(err)
		}
		break
	}
	rawReply(t, fd, reply)
}

// rawReply reads +PONG from fd into reply, retrying a read that a signal interrupted.
func rawReply(t *testing.T, fd int, reply []byte) {
	for {
		k, err := unix.Read(fd, reply)
		if err == unix.EINTR {
			continue
		}
		if err != nil || string(reply[:k]) != "+PONG\r\n" {
			t.Fatalf("PING: %q, %v", string(reply[:max(k, 0)]), err)
		}
		return
	}
}

// TestServingAllocatesNothingPerRequest: 20,000 PINGs on 4 connections, after a warm-up, make
// fewer than 100 heap allocations in the whole process (the server's loop, the test's client
// and the runtime): serving a request allocates nothing, with each driver, on uring and epoll.
func TestServingAllocatesNothingPerRequest(t *testing.T) {
	forEachBackendDriver(t, true, func(t *testing.T, cfg srvConfig) {
		if cfg.Backend != "uring" && cfg.Backend != "epoll" {
			t.Skipf("the other backends run the same drivers; measured on uring and epoll")
		}
		cfg.Handler = respServer()
		srv := startServer(t, cfg)
		sa := sockaddr(t, srv)
		var fds [4]int
		for i := range fds {
			fds[i] = rawConn(t, sa)
			defer unix.Close(fds[i])
		}
		reply := make([]byte, 16)
		for range 500 { // warm-up: free lists, records, tables
			for _, fd := range fds {
				rawPing(t, fd, reply)
			}
		}
		var m0, m1 runtime.MemStats
		runtime.ReadMemStats(&m0)
		for range 5000 {
			for _, fd := range fds {
				rawPing(t, fd, reply)
			}
		}
		runtime.ReadMemStats(&m1)
		if n := m1.Mallocs - m0.Mallocs; n >= 100 {
			t.Errorf("%d heap allocations for 20,000 requests, want < 100", n)
		} else {
			t.Logf("%d heap allocations for 20,000 requests", n)
		}
	})
}
