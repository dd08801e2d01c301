//go:build linux

package main

import (
	"bufio"
	"crypto/tls"
	"fmt"
	"io"
	"net"
	"os"
	"regexp"
	"runtime"
	"strings"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/ringev/ringev"
	"github.com/ringev/ringev/internal/testutil"
)

// TestParseServeDefaults: each protocol has its default address, the default API, the requests
// API's default receive mode, auto backend, one loop, the default batching wait decided at start
// (the requests API), its default timeouts (http: 10 s per request, 75 s idle; resp: none); the
// protocol may come after the flags.
func TestParseServeDefaults(t *testing.T) {
	for _, args := range [][]string{{"resp"}, {"--loops", "1", "resp"}} {
		o, err := parseServe(args)
		want := serveOptions{proto: "resp", addr: "127.0.0.1:6379", backend: "auto", api: defaultAPI, loops: 1, batchAuto: defaultAPI == "requests"}
		if want.batchAuto {
			want.batch = defaultBatch
		}
		if err != nil || o != want {
			t.Errorf("%q: %+v, %v", args, o, err)
		}
	}
	o, err := parseServe([]string{"http", "--addr", "0.0.0.0:9000", "--backend", "epoll", "--api", "readiness", "--loops", "4"})
	if err != nil || o != (serveOptions{proto: "http", addr: "0.0.0.0:9000", backend: "epoll", api: "readiness", loops: 4,
		request: 10 * time.Second, idle: 75 * time.Second}) {
		t.Errorf("%+v, %v", o, err)
	}
	o, err = parseServe([]string{"http", "--request-timeout", "300ms", "--idle-timeout", "off"})
	if err != nil || o.request != 300*time.Millisecond || o.idle != 0 {
		t.Errorf("http --request-timeout 300ms --idle-timeout off: %+v, %v", o, err)
	}
	o, err = parseServe([]string{"resp", "--idle-timeout", "1m", "--request-timeout", "0"})
	if err != nil || o.idle != time.Minute || o.request != 0 {
		t.Errorf("resp --idle-timeout 1m --request-timeout 0: %+v, %v", o, err)
	}
	o, err = parseServe([]string{"resp", "--api", "requests", "--batch-wait", "50us"})
	if err != nil || o.batchWait != 50*time.Microsecond || o.batch != 16 {
		t.Errorf("--batch-wait 50us: %+v, %v (want a batch of 16 by default)", o, err)
	}
	o, err = parseServe([]string{"resp", "--api", "requests", "--batch", "8"})
	if err != nil || !o.batchAuto || o.batch != 8 {
		t.Errorf("--batch 8 alone: %+v, %v (want the default batching wait, sized 8)", o, err)
	}
	o, err = parseServe([]string{"resp", "--api", "requests", "--batch-wait", "off"})
	if err != nil || o.batchWait != 0 || o.batchAuto {
		t.Errorf("--batch-wait off: %+v, %v (want no batching wait, default or not)", o, err)
	}
	o, err = parseServe([]string{"echo", "--api", "requests", "--recv", "multishot"})
	if err != nil || o.api != "requests" || o.recv != "multishot" {
		t.Errorf("--api requests --recv multishot: %+v, %v", o, err)
	}
}

// TestParseServeBadInput: every bad command line is a usage error (status 2) naming the problem.
func TestParseServeBadInput(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want []string
	}{
		{nil, []string{"which protocol"}},
		{[]string{"ftp"}, []string{`unknown protocol "ftp"`, "resp, http, echo"}},
		{[]string{"resp", "--recv", "telepathy"}, []string{"--recv", `unknown receive mode "telepathy"`, "multishot, per-conn"}},
		{[]string{"resp", "--api", "magic"}, []string{"--api", `unknown API "magic"`}},
		{[]string{"resp", "--backend", "kqueue"}, []string{"--backend", `unknown backend "kqueue"`, "epoll"}},
		{[]string{"resp", "--loops", "0"}, []string{"--loops", "must be > 0"}},
		{[]string{"resp", "--loops", "5000"}, []string{"--loops", "must be <= 1024"}},
		{[]string{"resp", "extra"}, []string{`unexpected argument "extra"`}},
		{[]string{"echo", "--addr", "nonsense"}, []string{"--addr", `"nonsense"`, "HOST:PORT"}},
		{[]string{"echo", "--addr", "127.0.0.1:99999"}, []string{"--addr", "port 99999", "0..65535"}},
		{[]string{"echo", "--addr", "127.0.0.1:"}, []string{"--addr", "no port"}},
		{[]string{"echo", "--addr", "127.0.0.1:nosuchservice"}, []string{"--addr", `port "nosuchservice"`}},
		{[]string{"echo", "--api", "readiness", "--recv", "multishot"}, []string{"--recv multishot", "only the requests API", "--api is readiness"}},
		{[]string{"resp", "--api", "requests", "--batch-wait", "soon"}, []string{"--batch-wait", "not a duration"}},
		{[]string{"resp", "--api", "requests", "--batch-wait", "2s"}, []string{"--batch-wait", "1us..1s"}},
		{[]string{"resp", "--api", "requests", "--batch-wait", "50us", "--batch", "2000"}, []string{"--batch", "<= 1024"}},
		{[]string{"resp", "--api", "requests", "--batch-wait", "1500ns"}, []string{"--batch-wait", "whole microseconds"}},
		{[]string{"resp", "--api", "readiness", "--batch", "8"}, []string{"--batch:", "only the requests API", "--api is readiness"}},
		{[]string{"resp", "--api", "requests", "--backend", "poll", "--batch", "8"}, []string{"--batch:", "only the uring backend", "--backend is poll"}},
		{[]string{"resp", "--batch-wait", "off", "--batch", "8"}, []string{"--batch", "--batch-wait is off"}},
		{[]string{"resp", "--api", "readiness", "--batch-wait", "50us"}, []string{"--batch-wait", "only the requests API", "--api is readiness"}},
		{[]string{"resp", "--api", "requests", "--backend", "epoll", "--batch-wait", "50us"}, []string{"--batch-wait", "only the uring backend", "--backend is epoll"}},
		{[]string{"http", "--request-timeout", "soon"}, []string{"--request-timeout", "not a duration"}},
		{[]string{"http", "--idle-timeout", "-1s"}, []string{"--idle-timeout", "must not be negative"}},
		{[]string{"http", "--tls-cert", "cert.pem"}, []string{"--tls-cert and --tls-key go together"}},
		{[]string{"echo", "--tls-key", "key.pem"}, []string{"--tls-cert and --tls-key go together"}},
	} {
		_, err := parseServe(tc.args)
		if exitStatus(err) != 2 {
			t.Errorf("%q: %v (status %d), want a usage error", tc.args, err, exitStatus(err))
			continue
		}
		for _, w := range tc.want {
			if !strings.Contains(err.Error(), w) {
				t.Errorf("%q: %q does not say %q", tc.args, err, w)
			}
		}
	}
}

// TestServeStopsOnSIGTERM: `ringev serve echo` serves until SIGTERM, then exits 0, with each API
// (and each of the requests API's receive modes).
func TestServeStopsOnSIGTERM(t *testing.T) {
	for _, api := range [][]string{{"--api", "readiness"}, {"--api", "requests", "--recv", "per-conn"}, {"--api", "requests", "--recv", "multishot"}} {
		name := api[1]
		if len(api) > 2 {
			name += "-" + api[3]
		}
		t.Run(name, func(t *testing.T) { testServeSIGTERM(t, api) })
	}
}

// startServeEcho runs `ringev serve echo --addr 127.0.0.1:0 args...` in a goroutine and dials the
// address it prints: the connection (closed when the test ends), the scanner of the rest of
// its stderr (the caller reads it to the end) and the channel of its exit status.
func startServeEcho(t *testing.T, args ...string) (net.Conn, *bufio.Scanner, <-chan int) {
	c, lines, code, _ := startServeEchoBanner(t, args...)
	return c, lines, code
}

// startServeEchoBanner is startServeEcho that also returns serve's first line (the one with
// the address).
func startServeEchoBanner(t *testing.T, args ...string) (net.Conn, *bufio.Scanner, <-chan int, string) {
	t.Helper()
	return startServeBanner(t, "echo", args...)
}

// startServeBanner is startServeEchoBanner for protocol proto.
func startServeBanner(t *testing.T, proto string, args ...string) (net.Conn, *bufio.Scanner, <-chan int, string) {
	t.Helper()
	r, w := io.Pipe()
	code := make(chan int, 1)
	go func() {
		code <- run(append([]string{"serve", proto, "--addr", "127.0.0.1:0"}, args...), io.Discard, w)
		w.Close()
	}()
	lines := bufio.NewScanner(r)
	var addr, banner string
	for addr == "" && lines.Scan() {
		if m := regexp.MustCompile(`listening on (\S+)`).FindStringSubmatch(lines.Text()); m != nil {
			addr, banner = m[1], lines.Text()
		}
	}
	if addr == "" {
		t.Fatal("ringev serve printed no address")
	}
	c, err := net.DialTimeout("tcp", addr, 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c, lines, code, banner
}

// testServeSIGTERM is TestServeStopsOnSIGTERM with one API.
func testServeSIGTERM(t *testing.T, api []string) {
	c, lines, code := startServeEcho(t, api...)
	echoThenSIGTERM(t, c, lines, code)
}

// echoThenSIGTERM checks that c, a connection to a `ringev serve echo` started by
// startServeEcho, echoes, then stops serve with SIGTERM and wants exit status 0 within 10 s.
func echoThenSIGTERM(t *testing.T, c net.Conn, lines *bufio.Scanner, code <-chan int) {
	t.Helper()
	go func() { // the rest of stderr
		for lines.Scan() {
		}
	}()
	c.SetDeadline(time.Now().Add(5 * time.Second))
	c.Write([]byte("ping"))
	got := make([]byte, 4)
	if _, err := io.ReadFull(c, got); err != nil || string(got) != "ping" {
		t.Fatalf("echo: %q, %v", got, err)
	}
	sigterm(t, code)
}

// TestServeSecondSignalClosesAtOnce: a second SIGTERM during the drain (a client that sends and
// never reads holds it up to 5 s) closes the connections at once, says so, and exits 0.
func TestServeSecondSignalClosesAtOnce(t *testing.T) {
	c, lines, code := startServeEcho(t)
	c.SetDeadline(time.Now().Add(20 * time.Second))
	go func() { // never reads: the echo's replies fill both socket buffers
		chunk := make([]byte, 64<<10)
		for {
			if _, err := c.Write(chunk); err != nil {
				return
			}
		}
	}()
	if err := testutil.AwaitZeroWindow(c.(*net.TCPConn), 10*time.Second); err != nil {
		t.Fatal(err)
	}
	syscall.Kill(syscall.Getpid(), syscall.SIGTERM)
	said := make(chan string, 1)
	go func() {
		var all strings.Builder
		for lines.Scan() {
			all.WriteString(lines.Text() + "\n")
			if strings.Contains(lines.Text(), "finishing") {
				syscall.Kill(syscall.Getpid(), syscall.SIGTERM)
			}
		}
		said <- all.String()
	}()
	select {
	case n := <-code:
		if n != 0 {
			t.Errorf("exit status %d after two SIGTERMs, want 0", n)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("ringev serve did not exit within 10 s of two SIGTERMs")
	}
	if out := <-said; !strings.Contains(out, "SIGTERM again: closing 1 connection(s) now") {
		t.Errorf("stderr %q does not say the second SIGTERM closed the connection", out)
	}
}

// serveBanner runs `ringev serve echo args...` with GOMAXPROCS=env in its environment ("":
// unset), checks that it echoes and stops on SIGTERM, and returns its first line. The
// process's GOMAXPROCS, which serve may raise, is restored after.
func serveBanner(t *testing.T, env string, args ...string) string {
	t.Helper()
	t.Setenv("GOMAXPROCS", env)
	if env == "" {
		os.Unsetenv("GOMAXPROCS") // t.Setenv restores it at the end of the test
	}
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(0))
	c, lines, code, banner := startServeEchoBanner(t, args...)
	echoThenSIGTERM(t, c, lines, code)
	return banner
}

// requireBatchWait skips the test where a uring loop cannot have the batching wait
// (IORING_FEAT_MIN_TIMEOUT, Linux 6.12: CheckBatchWait's error names it), or io_uring cannot be
// used at all; any other error fails it.
func requireBatchWait(t *testing.T) {
	t.Helper()
	err := ringev.CheckBatchWait()
	testutil.SkipIfIOUringUnavailable(t, err, "the batching wait")
	testutil.SkipIfFeatureMissing(t, err)
	if err != nil {
		t.Fatalf("CheckBatchWait: %v", err)
	}
}

// TestServeBatchesByDefaultWhereTheKernelHasMinWait: with no --batch-wait, the requests API on
// uring batches (50µs for 16) and gives the runtime a spare P.
func TestServeBatchesByDefaultWhereTheKernelHasMinWait(t *testing.T) {
	requireBatchWait(t)
	for _, args := range [][]string{nil, {"--backend", "uring"}} {
		if b := serveBanner(t, "", args...); !strings.Contains(b, "backend uring") || !strings.Contains(b, "batching wait 50µs for 16, GOMAXPROCS 2") {
			t.Errorf("serve echo %q: %q, want the batching wait of 50µs for 16 with GOMAXPROCS 2", args, b)
		}
	}
}

// TestServeDefaultBatchIsOffWithoutMinWait: on a kernel without IORING_FEAT_MIN_TIMEOUT (the
// check played) serve serves without a batching wait and its first line names the feature.
func TestServeDefaultBatchIsOffWithoutMinWait(t *testing.T) {
	requireBatchWait(t)
	old := checkBatchWait
	checkBatchWait = func() error {
		return fmt.Errorf("ringev: WithBatchWait needs IORING_FEAT_MIN_TIMEOUT (Linux 6.12), which this kernel lacks: %w", unix.EOPNOTSUPP)
	}
	defer func() { checkBatchWait = old }()
	b := serveBanner(t, "", "--backend", "uring")
	if !strings.Contains(b, "no batching wait: ") || !strings.Contains(b, "IORING_FEAT_MIN_TIMEOUT") {
		t.Errorf("first line %q does not say there is no batching wait for lack of IORING_FEAT_MIN_TIMEOUT", b)
	}
}

// TestServeDefaultBatchIsOffWhenGOMAXPROCSLeavesNoSpareP: GOMAXPROCS=1 in the environment with
// one loop turns the default batching wait off, and the first line says why; 2 keeps it.
func TestServeDefaultBatchIsOffWhenGOMAXPROCSLeavesNoSpareP(t *testing.T) {
	requireBatchWait(t)
	if b := serveBanner(t, "1", "--backend", "uring"); !strings.Contains(b, "no batching wait: GOMAXPROCS=1 in the environment leaves no spare P") {
		t.Errorf("GOMAXPROCS=1: %q, want no batching wait for want of a spare P", b)
	}
	if b := serveBanner(t, "2", "--backend", "uring"); !strings.Contains(b, "batching wait 50µs for 16") {
		t.Errorf("GOMAXPROCS=2: %q, want the batching wait", b)
	}
}

// TestServeBatchWaitOffHasNoBatchingWait: --batch-wait off turns the default off, and the
// first line says so.
func TestServeBatchWaitOffHasNoBatchingWait(t *testing.T) {
	requireBatchWait(t)
	if b := serveBanner(t, "", "--backend", "uring", "--batch-wait", "off"); !strings.Contains(b, "no batching wait (--batch-wait off)") || strings.Contains(b, "µs for") {
		t.Errorf("--batch-wait off: %q, want no batching wait, said", b)
	}
}

// TestAutoBatchOffIgnoresAGOMAXPROCSTheRuntimeIgnores: a GOMAXPROCS the Go runtime does not
// take (not a positive number of digits alone) counts as unset: it turns the default batching
// wait off for no one; a positive one below loops+1 does.
func TestAutoBatchOffIgnoresAGOMAXPROCSTheRuntimeIgnores(t *testing.T) {
	ok := func() error { return nil }
	for _, env := range []string{"", "abc", "0", "-1", " 2", "1 ", "2147483648", "99999999999999999999"} {
		if why := autoBatchOff(2, env, ok); why != "" {
			t.Errorf("GOMAXPROCS=%q with 2 loops: off (%s), want on: the runtime ignores it", env, why)
		}
	}
	for _, c := range []struct {
		env   string
		loops int
		off   bool
	}{{"1", 1, true}, {"+1", 1, true}, {"2", 1, false}, {"2", 2, true}, {"3", 2, false}} {
		if why := autoBatchOff(c.loops, c.env, ok); (why != "") != c.off {
			t.Errorf("GOMAXPROCS=%q with %d loop(s): %q, want off %v", c.env, c.loops, why, c.off)
		}
	}
}

// TestServeGivesASparePWhenTheEnvironmentsGOMAXPROCSIsIgnored: with GOMAXPROCS=abc (which the
// runtime ignores) and 2 loops, serve raises GOMAXPROCS to 3 for the batching wait and says so.
func TestServeGivesASparePWhenTheEnvironmentsGOMAXPROCSIsIgnored(t *testing.T) {
	requireBatchWait(t)
	if b := serveBanner(t, "abc", "--backend", "uring", "--loops", "2"); !strings.Contains(b, "batching wait 50µs for 16, GOMAXPROCS 3 (a spare P for 2 loop(s))") {
		t.Errorf("GOMAXPROCS=abc --loops 2: %q, want GOMAXPROCS 3 for a spare P", b)
	}
}

// TestServeWarnsWhenAnExplicitBatchWaitHasNoSpareP: --batch-wait with GOMAXPROCS=1 set in the
// environment batches as asked, and the first line says there is no spare P.
func TestServeWarnsWhenAnExplicitBatchWaitHasNoSpareP(t *testing.T) {
	requireBatchWait(t)
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(1)) // as the runtime would start with GOMAXPROCS=1
	if b := serveBanner(t, "1", "--backend", "uring", "--batch-wait", "50us"); !strings.Contains(b, "batching wait 50µs for 16, GOMAXPROCS 1 (from the environment): no spare P") {
		t.Errorf("GOMAXPROCS=1 --batch-wait 50us: %q, want the batching wait and a note that there is no spare P", b)
	}
}

// TestServeReadinessAPIHasNoDefaultBatchingWait: the readiness API, and the requests API on
// epoll, never batch and never mention it.
func TestServeReadinessAPIHasNoDefaultBatchingWait(t *testing.T) {
	for _, args := range [][]string{{"--api", "readiness"}, {"--backend", "epoll"}} {
		if b := serveBanner(t, "", args...); strings.Contains(b, "batching wait") {
			t.Errorf("serve echo %q: %q, want no batching wait mentioned", args, b)
		}
	}
}

// closedWithin reads from c until it ends (EOF or a reset) and returns how long that took from
// start; the test fails if it has not ended within limit.
func closedWithin(t *testing.T, c net.Conn, start time.Time, limit time.Duration) time.Duration {
	t.Helper()
	c.SetReadDeadline(start.Add(limit))
	buf := make([]byte, 4096)
	for {
		if _, err := c.Read(buf); err != nil {
			if ne, ok := err.(net.Error); ok && ne.Timeout() {
				t.Fatalf("the connection is still open %v after its start", limit)
			}
			return time.Since(start)
		}
	}
}

// TestServeHTTPRequestTimeoutClosesATricklingClient: `serve http --request-timeout 300ms` closes
// a connection whose request comes one byte every 50 ms (a slowloris client) 300 ms after its
// first byte, though the bytes keep coming; then serve stops on SIGTERM.
func TestServeHTTPRequestTimeoutClosesATricklingClient(t *testing.T) {
	c, lines, code, _ := startServeBanner(t, "http", "--request-timeout", "300ms")
	start := time.Now()
	stop := make(chan struct{})
	defer close(stop)
	go func() { // one header byte every 50 ms, never the end of the head
		req := []byte("GET / HTTP/1.1\r\nHost: h\r\nX-Slow: " + strings.Repeat("a", 1000))
		for i := 0; ; i++ {
			if _, err := c.Write(req[i%len(req) : i%len(req)+1]); err != nil {
				return
			}
			select {
			case <-stop:
				return
			case <-time.After(50 * time.Millisecond):
			}
		}
	}()
	took := closedWithin(t, c, start, 5*time.Second)
	if took < 300*time.Millisecond {
		t.Errorf("closed %v after the first byte, before its request timeout (300 ms)", took)
	}
	t.Logf("the trickling client was closed %v after its first byte", took)
	sigtermExits(t, lines, code)
}

// TestServeHTTPIdleTimeoutClosesAnIdleConnection: `serve http --idle-timeout 300ms` answers a
// request, then closes the kept-alive connection once it has been idle for 300 ms.
func TestServeHTTPIdleTimeoutClosesAnIdleConnection(t *testing.T) {
	c, lines, code, _ := startServeBanner(t, "http", "--idle-timeout", "300ms")
	c.SetDeadline(time.Now().Add(5 * time.Second))
	// The server's last activity (its send of the response, stamped with its loop turn's
	// clock) comes after this write, and may come before the client has read the response.
	idle := time.Now()
	if _, err := c.Write([]byte("GET / HTTP/1.1\r\nHost: h\r\n\r\n")); err != nil {
		t.Fatal(err)
	}
	r := bufio.NewReader(c)
	for { // the response's head, then its 13-byte body
		line, err := r.ReadString('\n')
		if err != nil {
			t.Fatalf("reading the response: %v", err)
		}
		if line == "\r\n" {
			break
		}
	}
	if _, err := io.ReadFull(r, make([]byte, len("Hello, World!"))); err != nil {
		t.Fatal(err)
	}
	if _, err := r.ReadByte(); err == nil {
		t.Fatal("more bytes after the response")
	}
	if took := time.Since(idle); took < 300*time.Millisecond || took > 4*time.Second {
		t.Errorf("the idle connection closed %v after the request was sent, want at least 300 ms (and within 4 s)", took)
	}
	sigtermExits(t, lines, code)
}

// TestServeTLSServesEachProtocol: `serve http|resp|echo --tls-cert F --tls-key F` answers over
// TLS with the certificate given, says TLS in its banner, and stops on SIGTERM.
func TestServeTLSServesEachProtocol(t *testing.T) {
	cert, key, pool := testutil.CertFiles(t)
	for _, tc := range []struct{ proto, ask, want string }{
		{"http", "GET / HTTP/1.1\r\nHost: h\r\n\r\n", "HTTP/1.1 200 OK\r\n"},
		{"resp", "PING\r\n", "+PONG\r\n"},
		{"echo", "hello\n", "hello\n"},
	} {
		t.Run(tc.proto, func(t *testing.T) {
			raw, lines, code, banner := startServeBanner(t, tc.proto, "--tls-cert", cert, "--tls-key", key)
			if !strings.Contains(banner, "TLS") {
				t.Errorf("banner %q does not say TLS", banner)
			}
			c := tls.Client(raw, &tls.Config{RootCAs: pool, ServerName: "127.0.0.1"})
			c.SetDeadline(time.Now().Add(5 * time.Second))
			if _, err := io.WriteString(c, tc.ask); err != nil {
				t.Fatalf("TLS: %v", err)
			}
			got := make([]byte, len(tc.want))
			if _, err := io.ReadFull(c, got); err != nil || string(got) != tc.want {
				t.Fatalf("read %q, %v; want %q", got, err, tc.want)
			}
			sigtermExits(t, lines, code)
		})
	}
	if code := run([]string{"serve", "echo", "--addr", "127.0.0.1:0", "--tls-cert", key, "--tls-key", cert}, io.Discard, io.Discard); code != 1 {
		t.Errorf("serve with the certificate and key swapped: exit status %d, want 1", code)
	}
}

// sigtermExits reads the rest of the stderr of a serve started by startServeBanner, stops it
// with SIGTERM and wants exit status 0 within 10 s.
func sigtermExits(t *testing.T, lines *bufio.Scanner, code <-chan int) {
	t.Helper()
	go func() { // the rest of stderr
		for lines.Scan() {
		}
	}()
	sigterm(t, code)
}

// sigterm sends SIGTERM to serve and wants exit status 0 within 10 s.
func sigterm(t *testing.T, code <-chan int) {
	t.Helper()
	syscall.Kill(syscall.Getpid(), syscall.SIGTERM)
	select {
	case n := <-code:
		if n != 0 {
			t.Errorf("exit status %d after SIGTERM, want 0", n)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("ringev serve did not exit within 10 s of SIGTERM")
	}
}
