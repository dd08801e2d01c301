//go:build linux

package nethttp

import (
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/ringev/ringev/internal/testutil"
	"github.com/ringev/ringev/server"
)

// cutHeads are request heads that a timeout cuts short, one for each way net/http's server
// answers the cut: it takes the last line, not complete, as a whole one, so a request line or
// a header line without a colon yet gets a 400, and a head valid so far gets a silent close.
// waits: net/http waits for more without a deadline unless an idle timeout is set (it reads a
// kept-alive connection's next head once 4 bytes of it have come, stray CRLFs after a POST
// counted: it skips them only as it reads the head).
var cutHeads = []struct {
	name, raw string
	waits     bool
}{
	{"nothing", "", false},
	{"in the method", "G", false},
	{"after the method", "GET ", false},
	{"in the target", "GET /%zz", false},
	{"in the version", "GET / HTTP/1.", false},
	{"at the request line's CR", "GET / HTTP/1.1", false},
	{"in the request line's CRLF", "GET / HTTP/1.1\r", false},
	{"after the request line", "GET / HTTP/1.1\r\n", false},
	{"in a field name", "GET / HTTP/1.1\r\nHost: x\r\nX-Sl", false},
	{"at a field's colon", "GET / HTTP/1.1\r\nHost: x\r\nX-Slow:", false},
	{"in a field value", "GET / HTTP/1.1\r\nHost: x\r\nX-Slow: ab", false},
	{"in a field's CRLF", "GET / HTTP/1.1\r\nHost: x\r\nX-Slow: ab\r", false},
	{"in a continuation line", "GET / HTTP/1.1\r\nHost: x\r\nX-Slow: ab\r\n c", false},
	{"in the blank line's CRLF", "GET / HTTP/1.1\r\nHost: x\r\n\r", false},
	{"3 bytes of a second request", "GET / HTTP/1.1\r\nHost: x\r\n\r\nGET", true},
	{"4 bytes of a second request", "GET / HTTP/1.1\r\nHost: x\r\n\r\nGET ", false},
	{"a second request's field name", "GET / HTTP/1.1\r\nHost: x\r\n\r\nGET / HTTP/1.1\r\nX-Sl", false},
	{"a second request's field value", "GET / HTTP/1.1\r\nHost: x\r\n\r\nGET / HTTP/1.1\r\nX-Slow: ab", false},
	{"a CRLF and a byte after a POST", postAB + "\r\nG", true},
	{"a CRLF and 2 bytes after a POST", postAB + "\r\nGE", false},
	{"2 CRLFs and 3 bytes after a POST", postAB + "\r\n\r\nGET", false},
	{"a CRLF and a field name after a POST", postAB + "\r\nGET / HTTP/1.1\r\nX-Sl", false},
}

// postAB is a POST with its body, after which net/http skips up to 4 bytes of CR and LF.
const postAB = "POST /echo HTTP/1.1\r\nHost: x\r\nContent-Length: 2\r\n\r\nab"

// TestServerAnswersCutHeadAsNetHTTP: a request head that the head's timeout (ReadHeaderTimeout,
// else ReadTimeout) or the idle timeout cuts short gets net/http's answer to the same bytes,
// a 400 or none, then the close, for each place a cut may fall.
//
// The bytes are sent at the dial: each server must have read them before the timeout (d, 1 s)
// passes, or it cuts nothing and answers nothing, so d is each server's margin on a busy
// machine. Where neither server has a deadline, the client hears no close for 2d: a server
// that cuts there anyway, up to d late, is seen. The two servers are tried at once.
func TestServerAnswersCutHeadAsNetHTTP(t *testing.T) {
	const d = time.Second
	configs := []struct {
		name                  string
		header, idle, request time.Duration // ReadHeaderTimeout, IdleTimeout, ReadTimeout
	}{
		{"ReadHeaderTimeout", d, 0, 0},
		{"ReadHeaderTimeout+IdleTimeout", d, d, 0},
		{"ReadTimeout", 0, 0, d},
	}
	eachSetup(t, func(t *testing.T, backend string, opts ...server.Option) {
		var wg sync.WaitGroup
		for _, cf := range configs {
			name := cf.name
			cfg := &http.Server{Handler: testHandler(), ReadHeaderTimeout: cf.header, IdleTimeout: cf.idle, ReadTimeout: cf.request}
			ref, got := serveNetHTTP(t, cfg), serveRingev(t, backend, cfg, opts...)
			for _, cut := range cutHeads {
				quiet := waitFor
				if cut.waits && cfg.IdleTimeout == 0 && cfg.ReadTimeout == 0 {
					quiet = 2 * d // no deadline on either: the client hears the first answer, no close
				}
				wg.Add(1)
				go func() {
					defer wg.Done()
					sameSteps(t, fmt.Sprintf("%s, cut %s (%q)", name, cut.name, cut.raw), ref, got, []step{{"", 0, cut.raw, nil}}, quiet)
				}()
			}
		}
		wg.Wait()
	})
}

// TestServerClosesSlowHead: a client that sends a request's head slower than
// ReadHeaderTimeout (a byte of a field's value now and then) is cut off at the timeout from
// the connection's start, without an answer, as net/http does for a cut in a field's value.
// The client's clock starts before its dial: the server's accept may come before the dial
// returns.
func TestServerClosesSlowHead(t *testing.T) {
	eachBackend(t, func(t *testing.T, backend string) {
		addr := serveRingev(t, backend, &http.Server{Handler: testHandler(), ReadHeaderTimeout: 200 * time.Millisecond})
		start := time.Now()
		c, err := net.DialTimeout("tcp", addr, waitFor)
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		closed := make(chan []byte)
		go func() {
			b, _ := io.ReadAll(c)
			closed <- b
		}()
		c.Write([]byte("GET / HTTP/1.1\r\nHost: x\r\nX-Slow: ")) // never complete
		for {
			select {
			case b := <-closed:
				if len(b) != 0 {
					t.Fatalf("answered %q", b)
				}
				if d := time.Since(start); d < 200*time.Millisecond {
					t.Fatalf("closed after %v, before ReadHeaderTimeout", d)
				}
				return
			case <-time.After(50 * time.Millisecond):
			}
			if time.Since(start) > waitFor {
				t.Fatal("a head trickled for 10 s was not cut off")
			}
			c.Write([]byte("a"))
		}
	})
}

// TestServerClosesIdleConnection: a kept-alive connection without a next request is closed
// after IdleTimeout.
func TestServerClosesIdleConnection(t *testing.T) {
	eachBackend(t, func(t *testing.T, backend string) {
		addr := serveRingev(t, backend, &http.Server{Handler: testHandler(), IdleTimeout: 200 * time.Millisecond})
		got, closed, err := exchangeRaw(addr, "GET / HTTP/1.1\r\nHost: x\r\n\r\n", waitFor)
		if err != nil || !closed || len(got) == 0 {
			t.Fatalf("got %q, closed %v, %v: want the answer, then a close at the idle timeout", got, closed, err)
		}
	})
}

// TestServerEndsSlowBodyAtReadTimeout: a body that has not all come within ReadTimeout of the
// request fails its reader with a timeout (a net.Error whose Timeout is true), as on net/http,
// and the connection closes after the answer.
func TestServerEndsSlowBodyAtReadTimeout(t *testing.T) {
	eachBackend(t, func(t *testing.T, backend string) {
		h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			_, err := io.ReadAll(r.Body)
			var ne net.Error
			fmt.Fprintf(w, "timeout=%v %v", errors.As(err, &ne) && ne.Timeout(), err)
		})
		addr := serveRingev(t, backend, &http.Server{Handler: h, ReadTimeout: 200 * time.Millisecond})
		for _, length := range []int{10, 4 * directMin} { // the loop's feed; the reader's own reads
			got, closed, err := exchangeRaw(addr, fmt.Sprintf("POST / HTTP/1.1\r\nHost: x\r\nContent-Length: %d\r\n\r\nabc", length), waitFor)
			if err != nil || !closed || !strings.Contains(got, "timeout=true read tcp 127.0.0.1:") || !strings.HasSuffix(got, ": i/o timeout") {
				t.Fatalf("Content-Length %d: got %q, closed %v, %v: want net/http's timeout error and a close", length, got, closed, err)
			}
		}
	})
}

// writeTimeoutServers serves h with WriteTimeout d on net/http and on ringev (backend): the
// servers a write timeout's test compares, by name.
func writeTimeoutServers(t *testing.T, backend string, h http.Handler, d time.Duration) map[string]string {
	srv := func() *http.Server { return &http.Server{Handler: h, WriteTimeout: d} }
	return map[string]string{"net/http": serveNetHTTP(t, srv()), "ringev": serveRingev(t, backend, srv())}
}

var writeTimeoutRE = regexp.MustCompile(`^write tcp 127\.0\.0\.1:\d+->127\.0\.0\.1:\d+: i/o timeout$`)

// TestServerWriteTimeoutSendsWhatWasWritten: a response write that passes WriteTimeout (a
// client that does not read) fails with net/http's error, naming both addresses; every byte
// written before it still reaches the client, and the connection then closes cleanly (EOF,
// not a reset), as on net/http.
//
// The handler first flushes the header: that the flush succeeds is the premise (the deadline
// passes during the write, not before the handler ran; net/http would report as written the
// bytes its buffer took, which never reach the client). The handler has the whole WriteTimeout
// to get there, a second; past it the test fails, saying so. The two servers are tried at
// once, each with its own handler.
func TestServerWriteTimeoutSendsWhatWasWritten(t *testing.T) {
	const size = 32 << 20 // past what the kernel's socket buffers hold
	eachBackend(t, func(t *testing.T, backend string) {
		var wg sync.WaitGroup
		for _, name := range []string{"net/http", "ringev"} {
			results := make(chan writeResult, 1)
			h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				w.Header().Set("Content-Length", strconv.Itoa(size))
				if err := http.NewResponseController(w).Flush(); err != nil {
					results <- writeResult{flushErr: err}
					return
				}
				n, err := w.Write(make([]byte, size))
				results <- writeResult{n: n, err: err}
			})
			srv := &http.Server{Handler: h, WriteTimeout: time.Second}
			addr := ""
			if name == "ringev" {
				addr = serveRingev(t, backend, srv)
			} else {
				addr = serveNetHTTP(t, srv)
			}
			wg.Add(1)
			go func() {
				defer wg.Done()
				if err := writeTimeoutExchange(addr, results); err != nil {
					t.Errorf("%s: %v", name, err)
				}
			}()
		}
		wg.Wait()
	})
}

// writeResult is what the handler of TestServerWriteTimeoutSendsWhatWasWritten saw: its
// header's flush failed (flushErr), or its write returned n, err.
type writeResult struct {
	flushErr error
	n        int
	err      error
}

// writeTimeoutExchange is one exchange of TestServerWriteTimeoutSendsWhatWasWritten: a
// request whose answer the client reads only once the handler's write has ended (results).
func writeTimeoutExchange(addr string, results <-chan writeResult) error {
	c, err := net.DialTimeout("tcp", addr, waitFor)
	if err != nil {
		return err
	}
	defer c.Close()
	if _, err := io.WriteString(c, "GET / HTTP/1.1\r\nHost: x\r\n\r\n"); err != nil {
		return err
	}
	var res writeResult
	select {
	case res = <-results:
	case <-time.After(waitFor):
		return errors.New("the handler's write did not end")
	}
	if res.flushErr != nil {
		return fmt.Errorf("the header's flush: %w: the handler did not flush it within WriteTimeout of the request", res.flushErr)
	}
	if res.err == nil || !errors.Is(res.err, os.ErrDeadlineExceeded) || !writeTimeoutRE.MatchString(res.err.Error()) {
		return fmt.Errorf("the write returned %d, %v: want net/http's timeout error naming both addresses", res.n, res.err)
	}
	c.SetReadDeadline(time.Now().Add(waitFor))
	got, err := io.ReadAll(c)
	if err != nil {
		return fmt.Errorf("reading after %d bytes: %v: want every byte written, then EOF", len(got), err)
	}
	if _, body, _ := strings.Cut(string(got), "\r\n\r\n"); len(body) != res.n {
		return fmt.Errorf("the client read %d bytes of the body, the handler wrote %d before the timeout", len(body), res.n)
	}
	return nil
}

// TestServerWriteTimeoutDropsLateResponse: a response its handler ends after WriteTimeout has
// passed is not sent: the connection closes without it, as on net/http.
func TestServerWriteTimeoutDropsLateResponse(t *testing.T) {
	const d = 200 * time.Millisecond
	eachBackend(t, func(t *testing.T, backend string) {
		h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			time.Sleep(2 * d) // the write deadline passes
			io.WriteString(w, "late\n")
		})
		for name, addr := range writeTimeoutServers(t, backend, h, d) {
			got, closed, err := exchangeRaw(addr, "GET / HTTP/1.1\r\nHost: x\r\n\r\n", waitFor)
			if err != nil || !closed || got != "" {
				t.Fatalf("%s: got %q, closed %v, %v: want no answer and a close", name, got, closed, err)
			}
		}
	})
}

// step is a part of a request sent on its own: once the client has read until (when not ""),
// it waits pause, then (with tls) makes the connection TLS's, and sends raw.
type step struct {
	until string
	pause time.Duration
	raw   string
	tls   *tls.Config
}

// exchangeSteps sends steps on one connection and then reads until the server closes it or
// quiet passes without it (closed false): what a client sees of a request sent in parts.
func exchangeSteps(addr string, steps []step, quiet time.Duration) (got string, closed bool, err error) {
	c, err := net.DialTimeout("tcp", addr, waitFor)
	if err != nil {
		return "", false, err
	}
	defer func() { c.Close() }()
	var b []byte
	buf := make([]byte, 4096)
	c.SetDeadline(time.Now().Add(waitFor))
	for _, s := range steps {
		for !strings.Contains(string(b), s.until) {
			n, err := c.Read(buf)
			b = append(b, buf[:n]...)
			if err != nil {
				return string(b), false, fmt.Errorf("reading until %q: %w", s.until, err)
			}
		}
		time.Sleep(s.pause)
		if s.tls != nil {
			tc := tls.Client(c, s.tls)
			if err := tc.Handshake(); err != nil {
				return string(b), false, err
			}
			c = tc
		}
		if _, err := io.WriteString(c, s.raw); err != nil {
			return string(b), true, nil // the server has closed
		}
	}
	return readToClose(c, b, quiet)
}

// sameSteps sends steps to net/http (ref) and to ringev (got), both at once, and fails the
// test where the clients saw different things.
func sameSteps(t *testing.T, name, ref, got string, steps []step, quiet time.Duration) {
	var want string
	var wantClosed bool
	var refErr error
	done := make(chan struct{})
	go func() {
		defer close(done)
		want, wantClosed, refErr = exchangeSteps(ref, steps, quiet)
	}()
	have, haveClosed, err := exchangeSteps(got, steps, quiet)
	<-done
	if refErr != nil {
		t.Errorf("%s: net/http: %v", name, refErr)
		return
	}
	if err != nil {
		t.Errorf("%s: ringev: %v", name, err)
		return
	}
	if normalize(want) != normalize(have) || wantClosed != haveClosed {
		t.Errorf("%s:\nnet/http (closed %v): %q\nringev (closed %v): %q", name, wantClosed, normalize(want), haveClosed, normalize(have))
	}
}

// TestServerTimesNextHeadFromItsFourthByte: on a kept-alive connection, ReadHeaderTimeout
// bounds the next head from its fourth byte, as on net/http, which reads a head once 4 bytes
// of it have come: fewer wait without a deadline (or until IdleTimeout), however long.
//
// A slow machine only delays the servers: each must read the first request, sent at the
// dial, within its ReadHeaderTimeout (d, 1 s); each pause is at least half a ReadHeaderTimeout
// away from the deadline it must pass (3d/2 after the first byte, against d) and from the one
// it must not reach (IdleTimeout, 10d), and the pause after the fourth byte is 3d, so a cut
// late by up to 2d is still seen; a head never timed from its fourth byte is never cut.
func TestServerTimesNextHeadFromItsFourthByte(t *testing.T) {
	const d = time.Second
	first := "GET / HTTP/1.1\r\nHost: x\r\n\r\n"
	eachBackend(t, func(t *testing.T, backend string) {
		var wg sync.WaitGroup
		for _, idle := range []time.Duration{0, 10 * d} {
			cfg := &http.Server{Handler: testHandler(), ReadHeaderTimeout: d, IdleTimeout: idle}
			ref, got := serveNetHTTP(t, cfg), serveRingev(t, backend, cfg)
			for _, tc := range []struct {
				name  string
				steps []step
			}{
				{"1 byte, then the rest past ReadHeaderTimeout", []step{
					{"", 0, first + "G", nil},
					{"hello\n", 3 * d / 2, "ET / HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n", nil}}},
				{"3 bytes, then 1 past ReadHeaderTimeout, then the rest past it again", []step{
					{"", 0, first + "GET", nil},
					{"hello\n", 3 * d / 2, " / HTTP/1.1\r\n", nil},
					{"", 3 * d, "Host: x\r\n\r\n", nil}}},
				{"a CRLF and a byte after a POST, then the rest past ReadHeaderTimeout", []step{
					{"", 0, postAB + "\r\nG", nil},
					{"trailer=map[]\n", 3 * d / 2, "ET / HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n", nil}}},
			} {
				wg.Add(1)
				go func() {
					defer wg.Done()
					sameSteps(t, fmt.Sprintf("IdleTimeout %v, %s", idle, tc.name), ref, got, tc.steps, waitFor)
				}()
			}
		}
		wg.Wait()
	})
}

// TestServerTimesFirstHeadFromAccept: ReadHeaderTimeout bounds a new connection's first head
// from the connection's start, as on net/http: a head whose first byte comes late has only
// what is left of it.
//
// The head ends at 11/8 of ReadHeaderTimeout from the dial: 3/8 of it past the deadline from
// the accept, and 3/8 of it before the one a head timed from its first byte (at 3/4) would
// have, so either server may be late by up to 3/8 (750 ms) in either direction.
func TestServerTimesFirstHeadFromAccept(t *testing.T) {
	const d = 2 * time.Second
	eachBackend(t, func(t *testing.T, backend string) {
		cfg := &http.Server{Handler: testHandler(), ReadHeaderTimeout: d}
		ref, got := serveNetHTTP(t, cfg), serveRingev(t, backend, cfg)
		sameSteps(t, "a request line at 3/4 of ReadHeaderTimeout, the rest at 11/8", ref, got, []step{
			{"", 3 * d / 4, "GET / HTTP/1.1\r\n", nil},
			{"", 5 * d / 8, "Host: x\r\n\r\n", nil}}, waitFor)
	})
}

// TestServerTimesRequestFromItsStart: ReadTimeout bounds a request from where net/http starts
// reading it, not from its head's end: a new connection's first request from the connection's
// start, a kept-alive connection's next one from its fourth byte. A body that ends past that
// fails its reader with a timeout.
//
// The body ends 11/8 of ReadTimeout after the request's start: 3/8 of it past the deadline
// from the start, and 3/8 of it before the one from the head's end (at 3/4) would be, so
// either server may be late by up to 3/8 (750 ms) in either direction.
func TestServerTimesRequestFromItsStart(t *testing.T) {
	const d = 2 * time.Second
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, err := io.ReadAll(r.Body)
		var ne net.Error
		fmt.Fprintf(w, "timeout=%v\n", errors.As(err, &ne) && ne.Timeout())
	})
	const head = "Host: x\r\nContent-Length: 4\r\n\r\nab"
	eachBackend(t, func(t *testing.T, backend string) {
		cfg := &http.Server{Handler: h, ReadTimeout: d, ReadHeaderTimeout: 4 * d}
		ref, got := serveNetHTTP(t, cfg), serveRingev(t, backend, cfg)
		var wg sync.WaitGroup
		for _, tc := range []struct {
			name  string
			steps []step
		}{
			{"a first request whose head comes late", []step{
				{"", 3 * d / 4, "POST / HTTP/1.1\r\n" + head, nil},
				{"", 5 * d / 8, "cd", nil}}},
			{"a next request whose head ends late", []step{
				{"", 0, "POST / HTTP/1.1\r\n" + head + "cdPOST / HTTP/1.1\r\n", nil},
				{"timeout=false\n", 3 * d / 4, head, nil},
				{"", 5 * d / 8, "cd", nil}}},
		} {
			wg.Add(1)
			go func() {
				defer wg.Done()
				sameSteps(t, tc.name, ref, got, tc.steps, waitFor)
			}()
		}
		wg.Wait()
	})
}

// TestServerTimesFirstHeadFromHandshake: over TLS, ReadHeaderTimeout bounds the first head
// from the handshake's end, as on net/http, which reads the head once the handshake is done.
//
// The handshake starts at 1/2 of ReadHeaderTimeout, which also bounds it (net/http's
// tlsHandshakeTimeout): it has the other half (1 s). The head ends 3/4 of it after the
// handshake: 1/4 (500 ms) before its deadline, and at least 1/4 past the one from the accept.
func TestServerTimesFirstHeadFromHandshake(t *testing.T) {
	const d = 2 * time.Second
	cert, roots := testutil.Cert(t)
	srvTLS := &tls.Config{Certificates: []tls.Certificate{cert}, NextProtos: []string{"http/1.1"}}
	eachBackend(t, func(t *testing.T, backend string) {
		ts := httptest.NewUnstartedServer(testHandler())
		ts.Config.ReadHeaderTimeout = d
		ts.TLS = srvTLS
		ts.StartTLS()
		defer ts.Close()
		got := serveRingev(t, backend, &http.Server{Handler: testHandler(), ReadHeaderTimeout: d}, server.WithTLS(srvTLS))
		sameSteps(t, "a handshake at 1/2 of ReadHeaderTimeout, a head in two parts, ending 3/4 of it later", ts.Listener.Addr().String(), got, []step{
			{"", d / 2, "GET / HTTP/1.1\r\n", &tls.Config{RootCAs: roots, ServerName: "localhost"}},
			{"", 3 * d / 4, "Host: x\r\nConnection: close\r\n\r\n", nil}}, waitFor)
	})
}
