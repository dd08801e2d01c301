//go:build linux

package main

// TestHTTPDServesEachPathOnBothServers: the application answers its five paths the same on
// ringev (each backend) and on net/http.

import (
	"bytes"
	"context"
	"crypto/sha256"
	"crypto/tls"
	"fmt"
	"io"
	"log"
	"net/http"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/coder/websocket"
	"github.com/ringev/ringev/internal/testutil"
	"go.uber.org/goleak"
	"golang.org/x/sys/unix"
)

// startHTTPD runs the application (run) on one loop of backend, over TLS with cfg when it is
// not nil, until the test's end, and returns its context and address; a kernel without
// io_uring skips the test.
func startHTTPD(t *testing.T, which, backend string, cfg *tls.Config) (context.Context, string) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	ready, done := make(chan string, 1), make(chan error, 1)
	go func() { done <- run(ctx, which, "127.0.0.1:0", backend, 1, cfg, ready) }()
	select {
	case addr := <-ready:
		t.Cleanup(func() {
			cancel()
			select {
			case err := <-done:
				if err != nil {
					t.Error(err)
				}
			case <-time.After(waitFor):
				t.Errorf("httpd did not end within %v of its context's cancel", waitFor)
			}
		})
		return ctx, addr
	case err := <-done:
		cancel()
		if strings.Contains(fmt.Sprint(err), "io_uring") {
			t.Skip(err)
		}
		t.Fatal(err)
	case <-time.After(waitFor):
		cancel()
		t.Fatalf("httpd did not listen within %v", waitFor)
	}
	return nil, ""
}

// waitFor bounds every wait of these tests.
const waitFor = 10 * time.Second

// TestHTTPDServesHTTPSWithTLSFlags: with --tls-cert and --tls-key (tlsConfig) both servers
// answer over TLS in HTTP/1.1, also to a client that offers HTTP/2; one flag alone is refused.
func TestHTTPDServesHTTPSWithTLSFlags(t *testing.T) {
	defer goleak.VerifyNone(t, goleak.IgnoreCurrent())
	certFile, keyFile, roots := testutil.CertFiles(t)
	if _, err := tlsConfig(certFile, ""); err == nil || !strings.Contains(err.Error(), "go together") {
		t.Errorf("--tls-cert alone: %v, want an error", err)
	}
	for _, v := range []struct{ server, backend string }{{"ringev", "uring"}, {"ringev", "epoll"}, {"ringev", "poll"}, {"net", ""}} {
		t.Run(v.server+"/"+v.backend, func(t *testing.T) {
			cfg, err := tlsConfig(certFile, keyFile)
			if err != nil {
				t.Fatal(err)
			}
			_, addr := startHTTPD(t, v.server, v.backend, cfg)
			tr := &http.Transport{TLSClientConfig: &tls.Config{RootCAs: roots}, ForceAttemptHTTP2: true}
			defer tr.CloseIdleConnections()
			client := &http.Client{Transport: tr, Timeout: waitFor}
			resp, err := client.Get("https://" + addr + "/plaintext")
			if err != nil {
				t.Fatal(err)
			}
			b, err := io.ReadAll(resp.Body)
			resp.Body.Close()
			if string(b) != "Hello, World!" || err != nil {
				t.Fatalf("/plaintext over TLS: %q, %v", b, err)
			}
			if resp.TLS == nil || resp.Proto != "HTTP/1.1" || resp.TLS.NegotiatedProtocol != "http/1.1" {
				t.Errorf("over TLS: %s, TLS %v; want HTTP/1.1 with ALPN http/1.1", resp.Proto, resp.TLS != nil)
			}
		})
	}
}

func TestHTTPDServesEachPathOnBothServers(t *testing.T) {
	defer goleak.VerifyNone(t, goleak.IgnoreCurrent())
	for _, v := range []struct{ server, backend string }{{"ringev", "uring"}, {"ringev", "epoll"}, {"ringev", "poll"}, {"net", ""}} {
		t.Run(v.server+"/"+v.backend, func(t *testing.T) {
			ctx, addr := startHTTPD(t, v.server, v.backend, nil)
			tr := &http.Transport{}
			defer tr.CloseIdleConnections()
			client := &http.Client{Transport: tr, Timeout: waitFor}
			get := func(path string) string {
				resp, err := client.Get("http://" + addr + path)
				if err != nil {
					t.Fatal(err)
				}
				defer resp.Body.Close()
				b, _ := io.ReadAll(resp.Body)
				return string(b)
			}
			if got := get("/plaintext"); got != "Hello, World!" {
				t.Fatalf("/plaintext: %q", got)
			}
			if got := get("/json"); got != "{\"message\":\"Hello, World!\"}\n" {
				t.Fatalf("/json: %q", got)
			}
			if got := get("/stream?n=3"); got != "line 0\nline 1\nline 2\n" {
				t.Fatalf("/stream: %q", got)
			}
			body := bytes.Repeat([]byte("0123456789"), 100000)
			resp, err := client.Post("http://"+addr+"/upload", "application/octet-stream", bytes.NewReader(body))
			if err != nil {
				t.Fatal(err)
			}
			b, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if want := fmt.Sprintf("%d bytes, sha256 %x\n", len(body), sha256.Sum256(body)); string(b) != want {
				t.Fatalf("/upload: %q, want %q", b, want)
			}
			wctx, wcancel := context.WithTimeout(ctx, waitFor)
			defer wcancel()
			c, _, err := websocket.Dial(wctx, "ws://"+addr+"/ws", nil)
			if err != nil {
				t.Fatal(err)
			}
			defer c.CloseNow()
			c.Write(wctx, websocket.MessageText, []byte("ping"))
			if _, m, err := c.Read(wctx); err != nil || string(m) != "ping" {
				t.Fatalf("/ws: %q, %v", m, err)
			}
			c.Close(websocket.StatusNormalClosure, "")
		})
	}
}

// TestHTTPDFlagsNameTheBadFlag: a bad --server, --backend or --loops is refused before
// anything starts, with an error that names the flag (main then exits 2, as for an unknown
// flag); good values pass.
func TestHTTPDFlagsNameTheBadFlag(t *testing.T) {
	for _, v := range []struct {
		which, backend string
		loops          int
		flag           string
	}{{"nginx", "auto", 0, "--server"}, {"ringev", "foo", 0, "--backend"}, {"ringev", "auto", -1, "--loops"}} {
		err := checkFlags(v.which, v.backend, v.loops)
		if err == nil || !strings.Contains(err.Error(), "flag "+v.flag+":") {
			t.Errorf("checkFlags(%q, %q, %d) = %v, want an error naming %s", v.which, v.backend, v.loops, err, v.flag)
		}
	}
	for _, b := range []string{"auto", "uring", "epoll", "poll", "uring-poll"} {
		if err := checkFlags("ringev", b, 2); err != nil {
			t.Errorf("--backend %s: %v", b, err)
		}
	}
	if err := checkFlags("net", "auto", 0); err != nil {
		t.Errorf("--server net: %v", err)
	}
}

// TestMain runs the command itself (main) when the test binary is started with HTTPD_MAIN=1: the
// SIGTERM test runs it so.
func TestMain(m *testing.M) { testutil.MainOrTests(m, "HTTPD_MAIN", main) }

// TestHTTPDSIGTERMShutsDownAndFreesThePort: SIGTERM (kill, systemd, docker stop) shuts the
// server down as Ctrl-C does, on each backend: it exits 0 and its port is free at once for a
// restart.
func TestHTTPDSIGTERMShutsDownAndFreesThePort(t *testing.T) {
	testutil.TermFreesThePortOnEachBackend(t, "HTTPD_MAIN", "--addr", 30*time.Second)
}

// httpdDeniedEnv asks a re-executed test binary to deny a system call (testutil.RunDenied).
const httpdDeniedEnv = "HTTPD_TEST_DENIED_CHILD"

// TestHTTPDSaysWhenAutoFellBackFromIOUring: with io_uring_setup denied (EPERM, as Docker's
// seccomp profile or sysctl kernel.io_uring_disabled=2 make it), httpd on --backend auto
// serves on epoll and says so on stderr (the log package), naming the errno.
func TestHTTPDSaysWhenAutoFellBackFromIOUring(t *testing.T) {
	testutil.ChildDenied(t, httpdDeniedEnv, func(syscall.Errno) { httpdFallbackChild() })
	res := testutil.RunDenied(t, "TestHTTPDSaysWhenAutoFellBackFromIOUring", httpdDeniedEnv, unix.SYS_IO_URING_SETUP, unix.EPERM)
	if res["err"] != "<nil>" {
		t.Fatalf("httpd on auto with io_uring denied: %s", res["err"])
	}
	if l := res["log"]; !strings.Contains(l, "chose epoll") || !strings.Contains(l, syscall.EPERM.Error()) {
		t.Errorf("httpd logged %q, want the choice of epoll and %q", l, syscall.EPERM.Error())
	}
}

// httpdFallbackChild is the child's side: httpd (run) on "auto" with io_uring_setup denied,
// until it listens, and what it logged.
func httpdFallbackChild() {
	var buf bytes.Buffer
	log.SetOutput(&buf) // (run logs from Listen's goroutine, before ready is told)
	ctx, cancel := context.WithCancel(context.Background())
	ready, done := make(chan string, 1), make(chan error, 1)
	go func() { done <- run(ctx, "ringev", "127.0.0.1:0", "auto", 1, nil, ready) }()
	var err error
	select {
	case <-ready:
		cancel()
		select {
		case err = <-done:
		case <-time.After(waitFor):
			err = fmt.Errorf("run did not end within %v of its context's cancel", waitFor)
		}
	case err = <-done:
		cancel()
	case <-time.After(waitFor):
		cancel()
		err = fmt.Errorf("httpd did not listen within %v", waitFor)
	}
	fmt.Printf("DENIED err=%v\nDENIED log=%s\n", err, strings.ReplaceAll(buf.String(), "\n", " | "))
}
