//go:build linux

package main

// Tests of the proxy with real clients, on each backend and driver: nc -N (half-close), curl
// against a local HTTP server, redis-benchmark against redis-server, a 10 MB echo each way, and
// a refused upstream.

import (
	"bytes"
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"io"
	"log"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/ringev/ringev/internal/testutil"
	"github.com/ringev/ringev/server"
	"go.uber.org/goleak"
	"golang.org/x/sys/unix"
)

const waitFor = 30 * time.Second

// eachSetup runs test on each backend with each driver.
func eachSetup(t *testing.T, test func(t *testing.T, opts []server.Option)) {
	for _, backend := range []string{"uring", "epoll", "poll"} {
		for _, api := range []string{server.APIRequests, server.APIReadiness} {
			t.Run(backend+"/"+api, func(t *testing.T) {
				ignore := goleak.IgnoreCurrent()
				t.Cleanup(func() { goleak.VerifyNone(t, ignore) }) // after the other cleanups
				test(t, []server.Option{server.WithBackend(backend), server.WithAPI(api), server.WithLoops(1)})
			})
		}
	}
}

// startProxy serves the proxy to upstream on 127.0.0.1 (any port), its dials bounded by
// waitFor; cleanup shuts it down.
func startProxy(t *testing.T, upstream string, opts []server.Option) string {
	t.Helper()
	return startProxyDialing(t, upstream, waitFor, opts)
}

// startProxyDialing is startProxy with the dials bounded by dialTimeout.
func startProxyDialing(t *testing.T, upstream string, dialTimeout time.Duration, opts []server.Option) string {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	e, err := server.Listen(ctx, "tcp", "127.0.0.1:0", &proxy{upstream: upstream}, append(opts, server.WithHalfOpen(true), server.WithDialTimeout(dialTimeout), server.WithLogf(t.Logf))...)
	if err != nil {
		cancel()
		testutil.SkipIfIOUringUnavailable(t, err, "the uring backend")
		t.Fatal(err)
	}
	t.Cleanup(func() {
		cancel()
		select {
		case <-e.Done():
		case <-time.After(waitFor):
			t.Errorf("the proxy did not end within %v", waitFor)
		}
	})
	return e.Addr().String()
}

// peer serves each connection of a listener on 127.0.0.1 with serve; cleanup closes it and
// waits for its goroutines.
func peer(t *testing.T, serve func(c net.Conn)) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	wg.Go(func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			c.SetDeadline(time.Now().Add(waitFor))
			wg.Go(func() {
				defer c.Close()
				serve(c)
			})
		}
	})
	t.Cleanup(func() {
		ln.Close()
		wg.Wait()
	})
	return ln.Addr().String()
}

// needProgram returns the path of a program, or skips the test naming it and its package.
func needProgram(t *testing.T, name, pkg string) string {
	t.Helper()
	path, err := exec.LookPath(name)
	if err != nil {
		t.Skipf("%s is not installed (Debian package %s)", name, pkg)
	}
	return path
}

// run runs a program for at most waitFor with stdin and returns its output (stdout and stderr).
func run(t *testing.T, stdin string, name string, args ...string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), waitFor)
	defer cancel()
	cmd := exec.CommandContext(ctx, name, args...)
	cmd.Stdin = strings.NewReader(stdin)
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("%s %s: %v\n%s", name, strings.Join(args, " "), err, out)
	}
	return string(out)
}

// TestProxyPassesHalfCloseOfNC: nc -N sends a line, shuts down its writing side and reads: the
// upstream, which answers at its end of file, gets the half-close through the proxy and its
// answer comes back.
func TestProxyPassesHalfCloseOfNC(t *testing.T) {
	nc := needProgram(t, "nc", "netcat-openbsd")
	eachSetup(t, func(t *testing.T, opts []server.Option) {
		up := peer(t, func(c net.Conn) {
			b, _ := io.ReadAll(c) // until the client's half-close reaches here
			fmt.Fprintf(c, "got %q\n", b)
		})
		host, port, _ := net.SplitHostPort(startProxy(t, up, opts))
		if got, want := run(t, "ping\n", nc, "-N", host, port), "got \"ping\\n\"\n"; got != want {
			t.Errorf("nc -N through the proxy read %q, want %q", got, want)
		}
	})
}

// TestProxyServesCurl: curl gets a local HTTP server's page through the proxy.
func TestProxyServesCurl(t *testing.T) {
	curl := needProgram(t, "curl", "curl")
	eachSetup(t, func(t *testing.T, opts []server.Option) {
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			fmt.Fprintf(w, "hello %s", r.URL.Path)
		}))
		defer srv.Close()
		addr := startProxy(t, srv.Listener.Addr().String(), opts)
		if got := run(t, "", curl, "-sS", "--max-time", "20", "http://"+addr+"/x", "http://"+addr+"/y"); got != "hello /xhello /y" {
			t.Errorf("curl through the proxy: %q, want %q", got, "hello /xhello /y")
		}
	})
}

// TestProxyServesRedisBenchmark: redis-benchmark (50 connections, SET and GET) runs against
// redis-server through the proxy without an error.
func TestProxyServesRedisBenchmark(t *testing.T) {
	redis := needProgram(t, "redis-server", "redis-server")
	bench := needProgram(t, "redis-benchmark", "redis-tools")
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := ln.Addr().(*net.TCPAddr).Port
	ln.Close()
	ctx, cancel := context.WithCancel(context.Background())
	cmd := exec.CommandContext(ctx, redis, "--port", fmt.Sprint(port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { cancel(); cmd.Wait() }()
	up := fmt.Sprintf("127.0.0.1:%d", port)
	end := time.Now().Add(waitFor)
	for c, err := net.Dial("tcp", up); ; c, err = net.Dial("tcp", up) {
		if err == nil {
			c.Close()
			break
		}
		if time.Now().After(end) {
			t.Fatalf("redis-server did not listen on %s: %v", up, err)
		}
		time.Sleep(10 * time.Millisecond)
	}
	eachSetup(t, func(t *testing.T, opts []server.Option) {
		host, pport, _ := net.SplitHostPort(startProxy(t, up, opts))
		out := run(t, "", bench, "-h", host, "-p", pport, "-c", "50", "-n", "20000", "-t", "set,get", "-q")
		if !strings.Contains(out, "SET: ") || !strings.Contains(out, "GET: ") || strings.Contains(out, "ERR") {
			t.Errorf("redis-benchmark through the proxy:\n%s", out)
		}
	})
}

// TestProxyEchoes10MBEachWay: 10 MB written to the proxy come back through an echo upstream
// while they are written (backpressure both ways: the client reads as it writes).
func TestProxyEchoes10MBEachWay(t *testing.T) {
	eachSetup(t, func(t *testing.T, opts []server.Option) {
		addr := startProxy(t, peer(t, testutil.EchoUntilEOF), opts)
		c, err := net.Dial("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		c.SetDeadline(time.Now().Add(waitFor))
		data := make([]byte, 10<<20)
		rand.Read(data)
		werr := make(chan error, 1)
		go func() {
			_, err := c.Write(data)
			if err == nil {
				err = c.(*net.TCPConn).CloseWrite()
			}
			werr <- err
		}()
		got, err := io.ReadAll(c)
		if err != nil || !bytes.Equal(got, data) {
			t.Errorf("read %d bytes back (%v), want the %d written", len(got), err, len(data))
		}
		if err := <-werr; err != nil {
			t.Errorf("writing: %v", err)
		}
	})
}

// TestProxyRefusedUpstreamClosesTheClient: with nobody on the upstream address, the client is
// closed and a log line names the address.
func TestProxyRefusedUpstreamClosesTheClient(t *testing.T) {
	eachSetup(t, func(t *testing.T, opts []server.Option) {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		up := ln.Addr().String()
		ln.Close()
		logged := captureLog(t)
		closedAtOnce(t, startProxy(t, up, opts))
		if s := logged.String(); !strings.Contains(s, up) || !strings.Contains(s, "refused") {
			t.Errorf("log %q, want a line naming %s and the refusal", s, up)
		}
	})
}

// blackHole is an upstream address whose connects never complete: a listener whose backlog is
// made 0 once one connection waits in it, never accepted, so that the kernel drops further
// SYNs. Cleanup closes it.
func blackHole(t *testing.T) string {
	t.Helper()
	fd, sa := testutil.Listener(t)
	if err := unix.Listen(fd, 0); err != nil { // listen(2) again sets the backlog
		t.Fatal(err)
	}
	addr := fmt.Sprintf("127.0.0.1:%d", sa.Port)
	filler, err := net.DialTimeout("tcp", addr, waitFor)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { filler.Close() })
	return addr
}

// closedAtOnce connects to the proxy at addr and reads EOF, nothing before it: the proxy
// closed the client.
func closedAtOnce(t *testing.T, addr string) {
	t.Helper()
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(waitFor))
	if b, err := io.ReadAll(c); err != nil || len(b) > 0 {
		t.Errorf("the client read %q, %v; want EOF", b, err)
	}
}

// captureLog sends the log package's output to a buffer until the test ends.
func captureLog(t *testing.T) *testutil.SyncBuffer {
	logged := new(testutil.SyncBuffer)
	log.SetOutput(logged)
	t.Cleanup(func() { log.SetOutput(os.Stderr) })
	return logged
}

// waitLog waits until the log holds every one of parts, at most waitFor.
func waitLog(t *testing.T, logged *testutil.SyncBuffer, parts ...string) {
	t.Helper()
	for end := time.Now().Add(waitFor); ; time.Sleep(time.Millisecond) {
		all := true
		for _, p := range parts {
			all = all && strings.Contains(logged.String(), p)
		}
		if all {
			return
		}
		if time.Now().After(end) {
			t.Fatalf("log %q: no line with %q within %v", logged.String(), parts, waitFor)
		}
	}
}

// TestProxyClientResetEndsTheDial: a client that resets while its upstream's connect hangs
// ends the dial (its context is cancelled): a log line says so, long before the dial's own
// bound.
func TestProxyClientResetEndsTheDial(t *testing.T) {
	eachSetup(t, func(t *testing.T, opts []server.Option) {
		up := blackHole(t)
		logged := captureLog(t)
		c, err := net.Dial("tcp", startProxyDialing(t, up, time.Hour, opts))
		if err != nil {
			t.Fatal(err)
		}
		c.(*net.TCPConn).SetLinger(0)
		c.Close() // a reset
		waitLog(t, logged, up, context.Canceled.Error())
	})
}

// TestProxyDialTimeoutClosesTheClient: an upstream whose connect hangs is given up after the
// dial timeout: the client is closed (EOF) and a log line names the address and the deadline.
func TestProxyDialTimeoutClosesTheClient(t *testing.T) {
	eachSetup(t, func(t *testing.T, opts []server.Option) {
		up := blackHole(t)
		logged := captureLog(t)
		closedAtOnce(t, startProxyDialing(t, up, 50*time.Millisecond, opts))
		waitLog(t, logged, up, context.DeadlineExceeded.Error())
	})
}

// stallThenDrain writes to w until a write stalls (its deadline passes: nobody reads at the
// other end, and the proxy holds no more than its limits), then reads at r, the other end,
// every byte written: the proxy kept them all, and the connections. Without backpressure the
// proxy reads on, past its output cap, and the connection is closed.
func stallThenDrain(t *testing.T, w, r net.Conn) {
	t.Helper()
	written, err := testutil.WriteUntilStall(w, make([]byte, 256<<10), 256<<20, 3*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	r.SetReadDeadline(time.Now().Add(waitFor))
	if n, err := io.ReadFull(r, make([]byte, written)); err != nil {
		t.Errorf("read %d of the %d bytes written: %v", n, written, err)
	}
}

// backpressureWith starts a proxy to an upstream that never reads, connects a client, and runs
// stallThenDrain from the upstream to the client (toClient) or from the client to the upstream.
func backpressureWith(t *testing.T, opts []server.Option, toClient bool) {
	upc := make(chan net.Conn, 1)
	hold := make(chan struct{})
	addr := startProxy(t, peer(t, func(c net.Conn) { upc <- c; <-hold }), opts)
	defer close(hold)
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	select {
	case u := <-upc:
		if toClient {
			stallThenDrain(t, u, c)
		} else {
			stallThenDrain(t, c, u)
		}
	case <-time.After(waitFor):
		t.Fatal("the proxy did not connect to the upstream")
	}
}

// TestProxyBackpressureTowardsTheClient: an upstream that writes to a client that does not read
// is stalled, and the client then gets every byte.
func TestProxyBackpressureTowardsTheClient(t *testing.T) {
	eachSetup(t, func(t *testing.T, opts []server.Option) { backpressureWith(t, opts, true) })
}

// TestProxyBackpressureTowardsTheUpstream: a client that writes to an upstream that does not
// read is stalled, and the upstream then gets every byte.
func TestProxyBackpressureTowardsTheUpstream(t *testing.T) {
	eachSetup(t, func(t *testing.T, opts []server.Option) { backpressureWith(t, opts, false) })
}

// TestProxyUpstreamResetResetsTheClient: an upstream that resets its connection mid-stream
// resets the client's: the client does not read a clean EOF after a cut response.
func TestProxyUpstreamResetResetsTheClient(t *testing.T) {
	eachSetup(t, func(t *testing.T, opts []server.Option) {
		addr := startProxy(t, peer(t, func(c net.Conn) {
			if _, err := io.ReadFull(c, make([]byte, len("request"))); err != nil {
				return // the client's read fails the test
			}
			c.Write([]byte("part of a response"))
			c.(*net.TCPConn).SetLinger(0) // Close sends a reset
		}), opts)
		c, err := net.Dial("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		c.SetDeadline(time.Now().Add(waitFor))
		c.Write([]byte("request")) // it reaches the upstream once the proxy is joined to it
		if b, err := io.ReadAll(c); !errors.Is(err, syscall.ECONNRESET) {
			t.Errorf("the client read %q, then %v; want a reset", b, err)
		}
	})
}

// TestProxyClientResetResetsTheUpstream: a client that resets its connection mid-stream resets
// the upstream's: the upstream does not read a clean EOF after a cut request.
func TestProxyClientResetResetsTheUpstream(t *testing.T) {
	eachSetup(t, func(t *testing.T, opts []server.Option) {
		got := make(chan error, 1)
		arrived := make(chan struct{})
		addr := startProxy(t, peer(t, func(c net.Conn) {
			b := make([]byte, len("part of a request"))
			if _, err := io.ReadFull(c, b); err != nil {
				got <- err
				return
			}
			close(arrived)
			_, err := io.ReadAll(c)
			got <- err
		}), opts)
		c, err := net.Dial("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		c.Write([]byte("part of a request"))
		select {
		case <-arrived:
		case err := <-got:
			t.Fatalf("the upstream read %v, want the request's start", err)
		case <-time.After(waitFor):
			t.Fatal("the request's start did not reach the upstream")
		}
		c.(*net.TCPConn).SetLinger(0)
		c.Close() // a reset
		select {
		case err := <-got:
			if !errors.Is(err, syscall.ECONNRESET) {
				t.Errorf("the upstream read until %v, want a reset", err)
			}
		case <-time.After(waitFor):
			t.Fatal("the upstream's connection did not end")
		}
	})
}

// TestMain runs the command itself (main) when the test binary is started with PROXY_MAIN=1: the
// SIGTERM test runs it so.
func TestMain(m *testing.M) { testutil.MainOrTests(m, "PROXY_MAIN", main) }

// TestProxySIGTERMShutsDownAndFreesThePort: SIGTERM (kill, systemd, docker stop) shuts the
// proxy down as Ctrl-C does, on each backend: it exits 0 and its port is free at once for a
// restart.
func TestProxySIGTERMShutsDownAndFreesThePort(t *testing.T) {
	up := peer(t, func(c net.Conn) { io.Copy(io.Discard, c) })
	testutil.TermFreesThePortOnEachBackend(t, "PROXY_MAIN", "--listen", waitFor, "--upstream", up)
}

// TestProxyFlagsNameTheBadFlag: a bad --listen, --upstream, --backend, --loops or
// --dial-timeout is refused before anything starts, with an error that names the flag (main
// then exits 2, as for an unknown flag); good values pass.
func TestProxyFlagsNameTheBadFlag(t *testing.T) {
	good := struct {
		listen, upstream, backend string
		loops                     int
		dialTimeout               time.Duration
	}{"127.0.0.1:7001", "localhost:6379", "auto", 0, 0}
	for _, bad := range []struct {
		flag string
		set  func()
	}{
		{"--listen", func() { good.listen = "nohost" }},
		{"--listen", func() { good.listen = "127.0.0.1:99999" }},
		{"--upstream", func() { good.upstream = "redis" }},
		{"--backend", func() { good.backend = "foo" }},
		{"--loops", func() { good.loops = -1 }},
		{"--dial-timeout", func() { good.dialTimeout = -time.Second }},
	} {
		v := good
		bad.set()
		err := checkFlags(good.listen, good.upstream, good.backend, good.loops, good.dialTimeout)
		if err == nil || !strings.Contains(err.Error(), "flag "+bad.flag+":") {
			t.Errorf("checkFlags(%+v) = %v, want an error naming %s", good, err, bad.flag)
		}
		good = v
	}
	for _, b := range []string{"auto", "uring", "epoll", "poll", "uring-poll"} {
		if err := checkFlags(good.listen, good.upstream, b, 2, time.Second); err != nil {
			t.Errorf("--backend %s: %v", b, err)
		}
	}
}
