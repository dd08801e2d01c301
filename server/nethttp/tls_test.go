//go:build linux

package nethttp

import (
	"bytes"
	"context"
	"crypto/sha256"
	"crypto/tls"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os/exec"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/ringev/ringev/internal/testutil"
	"github.com/ringev/ringev/server"
)

// TestServerRequestHasTLSState: over a connection served with server.WithTLS, a request's
// r.TLS is the connection's TLS state (handshake complete, ALPN "http/1.1"), as net/http's
// TLS server gives it.
func TestServerRequestHasTLSState(t *testing.T) {
	cert, roots := testutil.Cert(t)
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.TLS == nil {
			io.WriteString(w, "r.TLS nil")
			return
		}
		fmt.Fprintf(w, "complete=%v alpn=%s", r.TLS.HandshakeComplete, r.TLS.NegotiatedProtocol)
	})
	eachSetup(t, func(t *testing.T, backend string, opts ...server.Option) {
		cfg := &tls.Config{Certificates: []tls.Certificate{cert}, NextProtos: []string{"http/1.1"}}
		addr := serveRingev(t, backend, &http.Server{Handler: h}, append(opts, server.WithTLS(cfg))...)
		tr := &http.Transport{TLSClientConfig: &tls.Config{RootCAs: roots}, ForceAttemptHTTP2: true}
		defer tr.CloseIdleConnections()
		client := &http.Client{Transport: tr, Timeout: waitFor}
		resp, err := client.Get("https://" + addr + "/")
		if err != nil {
			t.Fatal(err)
		}
		b, err := io.ReadAll(resp.Body)
		resp.Body.Close()
		if want := "complete=true alpn=http/1.1"; string(b) != want || err != nil {
			t.Errorf("GET over TLS: %q, %v; want %q", b, err, want)
		}
	})
}

// onlyDataOpenClose is a handler that wraps a Server and passes on OnOpen, OnData and OnClose
// alone, as a wrapper written for server.Handler's usual methods does.
type onlyDataOpenClose struct{ s *Server }

func (w onlyDataOpenClose) OnOpen(c *server.Conn)             { w.s.OnOpen(c) }
func (w onlyDataOpenClose) OnData(c *server.Conn)             { w.s.OnData(c) }
func (w onlyDataOpenClose) OnClose(c *server.Conn, err error) { w.s.OnClose(c, err) }

// TestServerWrappedWithoutOnHandshakeKnowsItsTLS: a Server behind a handler that does not pass
// on OnHandshake still knows its connections are TLS's: r.TLS is set, and a long body (read
// from the socket itself on a plain connection) is the plaintext the client sent.
func TestServerWrappedWithoutOnHandshakeKnowsItsTLS(t *testing.T) {
	cert, roots := testutil.Cert(t)
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		sum := sha256.New()
		n, err := io.Copy(sum, r.Body)
		fmt.Fprintf(w, "tls=%v n=%d err=%v sum=%x", r.TLS != nil, n, err, sum.Sum(nil))
	})
	body := bytes.Repeat([]byte("0123456789abcdef"), 1<<16) // 1 MiB: past directMin
	want := fmt.Sprintf("tls=true n=%d err=<nil> sum=%x", len(body), sha256.Sum256(body))
	eachSetup(t, func(t *testing.T, backend string, opts ...server.Option) {
		ctx, cancel := context.WithCancel(context.Background())
		s := New(&http.Server{Handler: h})
		cfg := &tls.Config{Certificates: []tls.Certificate{cert}, NextProtos: []string{"http/1.1"}}
		opts = append([]server.Option{server.WithBackend(backend), server.WithLoops(1), server.WithTLS(cfg)}, opts...)
		e, err := server.Listen(ctx, "tcp", "127.0.0.1:0", onlyDataOpenClose{s}, opts...)
		if err != nil {
			cancel()
			t.Fatal(err)
		}
		defer func() {
			cancel()
			if err := e.Wait(); err != nil {
				t.Error(err)
			}
			s.Wait()
		}()
		tr := &http.Transport{TLSClientConfig: &tls.Config{RootCAs: roots}}
		defer tr.CloseIdleConnections()
		client := &http.Client{Transport: tr, Timeout: waitFor}
		resp, err := client.Post("https://"+e.Addr().String()+"/", "application/octet-stream", bytes.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		b, err := io.ReadAll(resp.Body)
		resp.Body.Close()
		if string(b) != want || err != nil {
			t.Errorf("POST of 1 MiB over TLS: %q, %v; want %q", b, err, want)
		}
	})
}

// TestServerAnswersPlainHTTPOnTLSPort: a client that sends a plaintext HTTP request to the
// TLS port gets net/http's answer, byte for byte ("HTTP/1.0 400 Bad Request" and "Client sent
// an HTTP request to an HTTPS server."), then the connection closes, on both servers.
func TestServerAnswersPlainHTTPOnTLSPort(t *testing.T) {
	cert, _ := testutil.Cert(t)
	const raw = "GET / HTTP/1.1\r\nHost: x\r\n\r\n"
	const want = "HTTP/1.0 400 Bad Request\r\n\r\nClient sent an HTTP request to an HTTPS server.\n"
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, "served") })
	t.Run("net-http", func(t *testing.T) {
		testutil.NoLeaks(t)
		logger, _ := quietLogger()
		ts := httptest.NewUnstartedServer(h)
		ts.Config.ErrorLog = logger
		ts.TLS = &tls.Config{Certificates: []tls.Certificate{cert}}
		ts.StartTLS()
		defer ts.Close()
		got, closed, err := exchangeRaw(ts.Listener.Addr().String(), raw, waitFor)
		if got != want || !closed || err != nil {
			t.Errorf("net/http: %q (closed %v), %v; want %q, closed", got, closed, err, want)
		}
	})
	eachSetup(t, func(t *testing.T, backend string, opts ...server.Option) {
		cfg := &tls.Config{Certificates: []tls.Certificate{cert}, NextProtos: []string{"http/1.1"}}
		lg, _ := quietLogger()
		addr := serveRingev(t, backend, &http.Server{Handler: h, ErrorLog: lg}, append(opts, server.WithTLS(cfg))...)
		got, closed, err := exchangeRaw(addr, raw, waitFor)
		if got != want || !closed || err != nil {
			t.Errorf("ringev: %q (closed %v), %v; want %q, closed", got, closed, err, want)
		}
	})
}

// TestServerLogsTLSHandshakeError: a client that sends garbage in place of a ClientHello is
// logged to ErrorLog as net/http logs it ("http: TLS handshake error from ADDR: ...").
func TestServerLogsTLSHandshakeError(t *testing.T) {
	cert, _ := testutil.Cert(t)
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, "served") })
	eachSetup(t, func(t *testing.T, backend string, opts ...server.Option) {
		lg, logged := quietLogger()
		cfg := &tls.Config{Certificates: []tls.Certificate{cert}}
		addr := serveRingev(t, backend, &http.Server{Handler: h, ErrorLog: lg}, append(opts, server.WithTLS(cfg))...)
		if _, closed, err := exchangeRaw(addr, "\x16\x03\x01\x00\x05hello", waitFor); !closed || err != nil {
			t.Fatalf("garbage ClientHello: closed %v, %v; want closed", closed, err)
		}
		want := "http: TLS handshake error from 127.0.0.1:"
		deadline := time.Now().Add(waitFor)
		for !strings.Contains(logged.String(), want) {
			if time.Now().After(deadline) {
				t.Fatalf("ErrorLog %q; want a line with %q", logged.String(), want)
			}
			time.Sleep(time.Millisecond)
		}
		if s := logged.String(); strings.Contains(s, "server: TLS handshake") {
			t.Errorf("ErrorLog %q names package server's error; want crypto/tls's reason", s)
		}
	})
}

// TestServerLogsPlainHTTPOnTLSPort: a plaintext HTTP request to the TLS port is logged as
// net/http logs it ("http: TLS handshake error from ADDR: client sent an HTTP request to an
// HTTPS server"), not with crypto/tls's reason.
func TestServerLogsPlainHTTPOnTLSPort(t *testing.T) {
	cert, _ := testutil.Cert(t)
	const raw = "GET / HTTP/1.1\r\nHost: x\r\n\r\n"
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, "served") })
	reason := handshakeLogged
	logger, netLogged := quietLogger()
	ts := httptest.NewUnstartedServer(h)
	ts.Config.ErrorLog = logger
	ts.TLS = &tls.Config{Certificates: []tls.Certificate{cert}}
	ts.StartTLS()
	defer ts.Close()
	if _, _, err := exchangeRaw(ts.Listener.Addr().String(), raw, waitFor); err != nil {
		t.Fatal(err)
	}
	want := reason(t, netLogged)
	eachSetup(t, func(t *testing.T, backend string, opts ...server.Option) {
		cfg := &tls.Config{Certificates: []tls.Certificate{cert}, NextProtos: []string{"http/1.1"}}
		lg, logged := quietLogger()
		addr := serveRingev(t, backend, &http.Server{Handler: h, ErrorLog: lg}, append(opts, server.WithTLS(cfg))...)
		if _, _, err := exchangeRaw(addr, raw, waitFor); err != nil {
			t.Fatal(err)
		}
		if got := reason(t, logged); got != want {
			t.Errorf("logged %q; net/http logs %q", got, want)
		}
	})
}

// TestServerLogsAClientThatLeavesInTheTLSHandshakeAsNetHTTPDoes: a client that connects and
// closes having sent nothing, or part of a record header, is logged with net/http's reason
// ("EOF", "unexpected EOF": crypto/tls's).
func TestServerLogsAClientThatLeavesInTheTLSHandshakeAsNetHTTPDoes(t *testing.T) {
	cert, _ := testutil.Cert(t)
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, "served") })
	sent := []string{"", "\x16\x03"}
	// leave connects to addr, sends in and closes; then the reason logged.
	leave := func(t *testing.T, addr, in string, logged *quietLog) string {
		t.Helper()
		c, err := net.DialTimeout("tcp", addr, waitFor)
		if err != nil {
			t.Fatal(err)
		}
		c.Write([]byte(in))
		c.Close()
		return handshakeLogged(t, logged)
	}
	var want []string
	for _, in := range sent {
		logger, logged := quietLogger()
		ts := httptest.NewUnstartedServer(h)
		ts.Config.ErrorLog = logger
		ts.TLS = &tls.Config{Certificates: []tls.Certificate{cert}}
		ts.StartTLS()
		want = append(want, leave(t, ts.Listener.Addr().String(), in, logged))
		ts.Close()
	}
	eachSetup(t, func(t *testing.T, backend string, opts ...server.Option) {
		for i, in := range sent {
			lg, logged := quietLogger()
			cfg := &tls.Config{Certificates: []tls.Certificate{cert}}
			addr := serveRingev(t, backend, &http.Server{Handler: h, ErrorLog: lg}, append(opts, server.WithTLS(cfg))...)
			if got := leave(t, addr, in, logged); got != want[i] {
				t.Errorf("after %q: logged %q; net/http logs %q", in, got, want[i])
			}
		}
	})
}

// handshakeLogged is the reason the log gives of a failed TLS handshake (what follows the
// client's address in "http: TLS handshake error from ADDR: REASON"), once it gives it.
func handshakeLogged(t *testing.T, logged *quietLog) string {
	t.Helper()
	re := regexp.MustCompile(`http: TLS handshake error from 127\.0\.0\.1:\d+: (.*)\n`)
	deadline := time.Now().Add(waitFor)
	for {
		if m := re.FindStringSubmatch(logged.String()); m != nil {
			return m[1]
		}
		if time.Now().After(deadline) {
			t.Fatalf("ErrorLog %q; want a TLS handshake error", logged.String())
		}
		time.Sleep(time.Millisecond)
	}
}

// TestServerOverTLSServesCurlAndOpenSSL: real TLS 1.3 clients, curl (a GET and a POST on one
// keep-alive connection) and openssl s_client, get the handler's answers over server.WithTLS.
func TestServerOverTLSServesCurlAndOpenSSL(t *testing.T) {
	certFile, keyFile, _ := testutil.CertFiles(t)
	cert, err := tls.LoadX509KeyPair(certFile, keyFile)
	if err != nil {
		t.Fatal(err)
	}
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		fmt.Fprintf(w, "%s %s %d body=%q tls=%v\n", r.Method, r.URL.Path, r.ProtoMajor, b, r.TLS != nil)
	})
	eachSetup(t, func(t *testing.T, backend string, opts ...server.Option) {
		cfg := &tls.Config{Certificates: []tls.Certificate{cert}, MinVersion: tls.VersionTLS13}
		addr := serveRingev(t, backend, &http.Server{Handler: h}, append(opts, server.WithTLS(cfg))...)
		ran := false
		if curl, err := exec.LookPath("curl"); err == nil {
			ran = true
			ctx, cancel := context.WithTimeout(context.Background(), waitFor)
			out, err := exec.CommandContext(ctx, curl, "-sS", "--cacert", certFile, "https://"+addr+"/a",
				"--next", "--cacert", certFile, "--data-binary", "up", "https://"+addr+"/b").CombinedOutput()
			cancel()
			if want := "GET /a 1 body=\"\" tls=true\nPOST /b 1 body=\"up\" tls=true\n"; string(out) != want || err != nil {
				t.Errorf("curl: %q, %v; want %q", out, err, want)
			}
		}
		if openssl, err := exec.LookPath("openssl"); err == nil {
			ran = true
			ctx, cancel := context.WithTimeout(context.Background(), waitFor)
			cmd := exec.CommandContext(ctx, openssl, "s_client", "-connect", addr, "-tls1_3", "-quiet", "-ign_eof")
			cmd.Stdin = strings.NewReader("GET /c HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
			out, err := cmd.CombinedOutput()
			cancel()
			if want := "GET /c 1 body=\"\" tls=true\n"; !strings.HasSuffix(string(out), want) {
				t.Errorf("openssl s_client: %v\n%s\nwant it to end with %q", err, out, want)
			}
		}
		if !ran {
			t.Skip("neither curl nor openssl is installed")
		}
	})
}
