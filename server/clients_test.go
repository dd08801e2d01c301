//go:build linux

package server

import (
	"context"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/ringev/ringev"
	"github.com/ringev/ringev/internal/testutil"
)

// Tests against the real clients (and the real Redis), which .ci/run installs from Debian:
// redis-benchmark (package redis-tools), wrk (wrk), redis-server (redis-server). Each test skips,
// naming the program and its package, only when the program is not installed.

// needProgram returns the path of a program, or skips the test naming it and its Debian package.
func needProgram(t *testing.T, name, pkg string) string {
	t.Helper()
	path, err := exec.LookPath(name)
	if err != nil {
		t.Skipf("%s is not installed (Debian package %s; .ci/run installs it)", name, pkg)
	}
	return path
}

// runClient runs a client for at most 2 minutes and returns its stdout and stderr together.
func runClient(t *testing.T, name string, args ...string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	out, err := exec.CommandContext(ctx, name, args...).CombinedOutput()
	if err != nil {
		t.Fatalf("%s %s: %v\n%s", name, strings.Join(args, " "), err, out)
	}
	return string(out)
}

// benchmarkTests are the tests of redis-benchmark's default run (the LRANGE ones under lrange),
// and the lines each prints in -q mode.
const benchmarkTests = "ping,set,get,incr,lpush,rpush,lpop,rpop,sadd,hset,spop,zadd,zpopmin,lrange,mset"

var benchmarkLines = []string{"PING_INLINE", "PING_MBULK", "SET", "GET", "INCR", "LPUSH", "RPUSH", "LPOP", "RPOP", "SADD",
	"HSET", "SPOP", "ZADD", "ZPOPMIN", "LPUSH (needed to benchmark LRANGE)", "LRANGE_100", "LRANGE_300", "LRANGE_500",
	"LRANGE_600", "MSET"}

// TestRedisBenchmarkAgainstRESP: redis-benchmark's default tests run against the RESP server
// (pipelined and not) on the uring and epoll backends, with no error reply, no warning (it asks
// CONFIG GET first), and a rate for each test. (redis-benchmark 7 exits non-zero at the first
// error reply.) With each driver and receive mode.
func TestRedisBenchmarkAgainstRESP(t *testing.T) {
	rb := needProgram(t, "redis-benchmark", "redis-tools")
	forEachBackendDriver(t, true, func(t *testing.T, cfg srvConfig) {
		if cfg.Backend != "uring" && cfg.Backend != "epoll" {
			t.Skipf("the other backends run the same drivers; redis-benchmark runs on uring and epoll")
		}
		cfg.Handler = respServer()
		srv := startServer(t, cfg)
		host, port, _ := net.SplitHostPort(srv.Addr().String())
		for _, pipeline := range []string{"1", "16"} {
			out := runClient(t, rb, "-h", host, "-p", port, "-t", benchmarkTests, "-n", "2000", "-P", pipeline, "-q")
			if strings.Contains(out, "ERR") || strings.Contains(out, "WARN") {
				t.Errorf("-P %s: errors or warnings:\n%s", pipeline, out)
			}
			for _, name := range benchmarkLines {
				line := `(?m)^` + regexp.QuoteMeta(name) + `( \([^)]*\))?: [0-9.]+ requests per second`
				if !regexp.MustCompile(line).MatchString(strings.ReplaceAll(out, "\r", "\n")) {
					t.Errorf("-P %s: no rate for %s:\n%s", pipeline, name, out)
				}
			}
		}
		waitConns(t, srv, 0)
	})
}

// TestRedisBenchmarkAgainstRESPWithBatchWait: with the uring loop's batching wait
// (ringev.WithBatchWait, the `serve --batch-wait` of cmd/ringev) every request of redis-benchmark
// is answered, pipelined or not, with fewer connections than the batch waits for (each
// completion then waits out the 1 ms), and the connections all close.
func TestRedisBenchmarkAgainstRESPWithBatchWait(t *testing.T) {
	rb := needProgram(t, "redis-benchmark", "redis-tools")
	for _, recv := range []string{RecvPerConn, RecvMultishot} {
		t.Run(recv, func(t *testing.T) {
			cfg := srvConfig{Backend: "uring", API: APIRequests, Recv: recv, Handler: respServer(),
				Opts: []Option{WithLoopOptions(ringev.WithBatchWait(16, time.Millisecond))}}
			srv, err := listenServer(t, cfg)
			testutil.SkipIfIOUringUnavailable(t, err, "the uring backend")
			testutil.SkipIfFeatureMissing(t, err) // WithBatchWait: IORING_FEAT_MIN_TIMEOUT, Linux 6.12
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { stopServer(t, srv) })
			host, port, _ := net.SplitHostPort(srv.Addr().String())
			for _, pipeline := range []string{"1", "16"} {
				out := runClient(t, rb, "-h", host, "-p", port, "-t", "set,get", "-n", "2000", "-c", "4", "-P", pipeline, "-q")
				if strings.Contains(out, "ERR") || !strings.Contains(out, "GET: ") {
					t.Errorf("-P %s:\n%s", pipeline, out)
				}
			}
			waitConns(t, srv, 0)
		})
	}
}

// TestRedisBenchmarkReconnecting: with -k 0, a new connection for every request (accept churn:
// 6,000 connections, the multishot accept's with the requests driver), every request is
// answered and no connection or fd is left open; with each driver.
func TestRedisBenchmarkReconnecting(t *testing.T) {
	rb := needProgram(t, "redis-benchmark", "redis-tools")
	forEachDriver(t, false, func(t *testing.T, cfg srvConfig) {
		cfg.Handler = respServer()
		srv := startServer(t, cfg)
		before := fdCount(t)
		host, port, _ := net.SplitHostPort(srv.Addr().String())
		out := runClient(t, rb, "-h", host, "-p", port, "-t", "ping_mbulk,set", "-n", "3000", "-c", "20", "-k", "0", "-q")
		if strings.Contains(out, "ERR") || !strings.Contains(out, "SET: ") {
			t.Errorf("redis-benchmark -k 0:\n%s", out)
		}
		waitConns(t, srv, 0)
		if n := fdCount(t); n > before {
			t.Errorf("%d fds open after 6,000 connections, %d before", n, before)
		}
	})
}

// TestRESPMatchesRedisServer: respReplyCases and respProtocolErrorCases are what the installed
// redis-server answers (the expectations of the unit tests are Redis's, not this package's idea
// of them).
func TestRESPMatchesRedisServer(t *testing.T) {
	redis := needProgram(t, "redis-server", "redis-server")
	l, err := net.Listen("tcp", "127.0.0.1:0") // a free port for redis-server
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close()
	_, port, _ := net.SplitHostPort(addr)
	cmd := exec.Command(redis, "--port", port, "--bind", "127.0.0.1", "--save", "", "--appendonly", "no", "--loglevel", "warning")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { cmd.Process.Kill(); cmd.Wait() }()
	var c net.Conn
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		if c, err = net.Dial("tcp", addr); err == nil {
			c.Close()
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("redis-server did not listen on %s within 10 s: %v", addr, err)
		}
	}
	ask := func(in string, closes bool) string { // in's replies from a fresh keyspace
		c, err := net.Dial("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		c.SetDeadline(time.Now().Add(ioTimeout))
		if !closes {
			in = "FLUSHALL\r\n" + in + "QUIT\r\n"
		}
		c.Write([]byte(in))
		got, _ := io.ReadAll(c)
		if !closes {
			return strings.TrimSuffix(strings.TrimPrefix(string(got), "+OK\r\n"), "+OK\r\n")
		}
		return string(got)
	}
	for _, tc := range respReplyCases {
		if got := ask(tc.in, false); got != tc.want {
			t.Errorf("%q: redis-server answers\n%q\nthe test expects\n%q", tc.in, got, tc.want)
		}
	}
	for _, tc := range respProtocolErrorCases {
		if tc.limit {
			continue
		}
		if got := ask(tc.in, true); got != tc.want {
			t.Errorf("%.40q: redis-server answers %q, the test expects %q", tc.in, got, tc.want)
		}
	}
}

// pipelineLua is a wrk script sending its requests DEPTH at a time (TechEmpower's pipelining).
const pipelineLua = `init = function(args)
  local r = {}
  for i = 1, tonumber(args[1]) do r[i] = wrk.format() end
  req = table.concat(r)
end
request = function() return req end
`

// wrkRate runs wrk for 1 s and returns requests/s; it fails the test on any non-2xx response or
// socket error.
func wrkRate(t *testing.T, wrk string, args ...string) float64 {
	t.Helper()
	out := runClient(t, wrk, args...)
	if strings.Contains(out, "Non-2xx") || strings.Contains(out, "Socket errors") {
		t.Errorf("wrk %s:\n%s", strings.Join(args, " "), out)
	}
	m := regexp.MustCompile(`Requests/sec:\s+([0-9.]+)`).FindStringSubmatch(out)
	if m == nil {
		t.Fatalf("wrk printed no rate:\n%s", out)
	}
	rate, _ := strconv.ParseFloat(m[1], 64)
	if rate <= 0 {
		t.Errorf("wrk: %s requests/s\n%s", m[1], out)
	}
	return rate
}

// TestWrkAgainstHTTP: wrk for 1 s, plain and pipelined 16 deep, on uring and epoll: every
// response a 200, no socket error.
func TestWrkAgainstHTTP(t *testing.T) {
	wrk := needProgram(t, "wrk", "wrk")
	script := filepath.Join(t.TempDir(), "pipeline.lua")
	if err := os.WriteFile(script, []byte(pipelineLua), 0o644); err != nil {
		t.Fatal(err)
	}
	forEachBackendDriver(t, true, func(t *testing.T, cfg srvConfig) {
		if cfg.Backend != "uring" && cfg.Backend != "epoll" {
			t.Skipf("the other backends run the same drivers; wrk runs on uring and epoll")
		}
		cfg.Handler = httpServer()
		srv := startServer(t, cfg)
		url := "http://" + srv.Addr().String() + "/plaintext"
		wrkRate(t, wrk, "-t1", "-c32", "-d1s", url)
		wrkRate(t, wrk, "-t1", "-c32", "-d1s", "-s", script, url, "--", "16")
		waitConns(t, srv, 0)
	})
}

// TestWrkConnectionCloseChurn: wrk with "Connection: close" (a connection per request): every
// response a 200, and no connection or fd left behind; with each driver.
func TestWrkConnectionCloseChurn(t *testing.T) {
	wrk := needProgram(t, "wrk", "wrk")
	forEachDriver(t, false, func(t *testing.T, cfg srvConfig) {
		cfg.Handler = httpServer()
		srv := startServer(t, cfg)
		before := fdCount(t)
		wrkRate(t, wrk, "-t1", "-c16", "-d1s", "-H", "Connection: close", "http://"+srv.Addr().String()+"/plaintext")
		waitConns(t, srv, 0)
		if n := fdCount(t); n > before {
			t.Errorf("%d fds open after the churn, %d before", n, before)
		}
	})
}
