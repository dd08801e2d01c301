//go:build linux

package nethttp

// Helpers of the package's tests: the same handler served by ringev (on each backend) and by
// net/http, raw clients with deadlines, and checks that nothing is left behind.

import (
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"io"
	"log"
	"net"
	"net/http"
	"net/http/httptest"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/ringev/ringev/internal/testutil"
	"github.com/ringev/ringev/internal/testutil/backends"
	"github.com/ringev/ringev/server"
)

// waitFor bounds every wait of these tests.
const waitFor = 10 * time.Second

// eachBackend runs test once per backend, as subtests, each checking that no goroutine and
// no fd is left when it ends.
func eachBackend(t *testing.T, test func(t *testing.T, backend string)) {
	for _, b := range backends.All {
		t.Run(b, func(t *testing.T) {
			backends.Require(t, b)
			testutil.NoLeaks(t)
			test(t, b)
		})
	}
}

// eachSetup runs test once per backend and driver (server.APIRequests, server.APIReadiness),
// as subtests "backend/api", each checking that nothing is left behind.
func eachSetup(t *testing.T, test func(t *testing.T, backend string, opts ...server.Option)) {
	for _, b := range backends.All {
		for _, api := range []string{server.APIRequests, server.APIReadiness} {
			t.Run(b+"/"+api, func(t *testing.T) {
				backends.Require(t, b)
				testutil.NoLeaks(t)
				test(t, b, server.WithAPI(api))
			})
		}
	}
}

// quietLog is an ErrorLog that keeps what is logged, for the tests that look at it.
type quietLog struct {
	mu sync.Mutex
	b  strings.Builder
}

func (q *quietLog) Write(p []byte) (int, error) {
	q.mu.Lock()
	defer q.mu.Unlock()
	return q.b.Write(p)
}

func (q *quietLog) String() string {
	q.mu.Lock()
	defer q.mu.Unlock()
	return q.b.String()
}

// serveRingev serves srv's handler with ringev on backend (one loop) until the test ends and
// returns its address.
func serveRingev(t *testing.T, backend string, srv *http.Server, opts ...server.Option) string {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	s := New(srv)
	opts = append([]server.Option{server.WithBackend(backend), server.WithLoops(1)}, opts...)
	e, err := server.Listen(ctx, "tcp", "127.0.0.1:0", s, opts...)
	if err != nil {
		cancel()
		t.Fatal(err)
	}
	t.Cleanup(func() {
		cancel()
		if err := e.Wait(); err != nil {
			t.Error(err)
		}
		s.Wait()
	})
	return e.Addr().String()
}

// dialRaw connects to addr with a deadline of waitFor on every read and write; cleanup closes
// the connection.
func dialRaw(t *testing.T, addr string) net.Conn {
	t.Helper()
	c, err := net.DialTimeout("tcp", addr, waitFor)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	c.SetDeadline(time.Now().Add(waitFor))
	return c
}

// serveNetHTTP serves srv's handler with net/http until the test ends and returns its address.
func serveNetHTTP(t *testing.T, srv *http.Server) string {
	t.Helper()
	ts := httptest.NewUnstartedServer(srv.Handler)
	ts.Config.ReadTimeout = srv.ReadTimeout
	ts.Config.ReadHeaderTimeout = srv.ReadHeaderTimeout
	ts.Config.WriteTimeout = srv.WriteTimeout
	ts.Config.IdleTimeout = srv.IdleTimeout
	ts.Config.MaxHeaderBytes = srv.MaxHeaderBytes
	ts.Config.ErrorLog = srv.ErrorLog
	ts.Config.ConnState = srv.ConnState
	ts.Start()
	t.Cleanup(ts.Close)
	return ts.Listener.Addr().String()
}

// exchangeRaw sends raw to addr and reads until the server closes the connection or quiet
// passes without it (closed false): what a client sees.
func exchangeRaw(addr, raw string, quiet time.Duration) (got string, closed bool, err error) {
	return exchangeRawUntil(addr, raw, "", quiet)
}

// exchangeRawUntil is exchangeRaw for an input the server answers, or not, and then waits on:
// it reads until it has until ("": at once), the server closes, or waitFor passes, and then
// for quiet more. The wait for the answer is for its bytes, not for a time.
func exchangeRawUntil(addr, raw, until string, quiet time.Duration) (got string, closed bool, err error) {
	c, err := net.DialTimeout("tcp", addr, waitFor)
	if err != nil {
		return "", false, err
	}
	defer c.Close()
	if _, err := c.Write([]byte(raw)); err != nil {
		return "", false, err
	}
	var b []byte
	if until != "" {
		c.SetReadDeadline(time.Now().Add(waitFor))
		buf := make([]byte, 4096)
		for !strings.Contains(string(b), until) {
			n, err := c.Read(buf)
			b = append(b, buf[:n]...)
			if err != nil {
				break // readToClose meets it again: a close, or the deadline's
			}
		}
	}
	return readToClose(c, b, quiet)
}

// readToClose reads c after got until the server closes the connection (an EOF or a reset:
// closed true) or quiet passes without it (closed false), and returns got and what it read.
// Any other read error is err.
func readToClose(c net.Conn, got []byte, quiet time.Duration) (string, bool, error) {
	c.SetReadDeadline(time.Now().Add(quiet))
	rest, err := io.ReadAll(c)
	b := append(got, rest...)
	var ne net.Error
	switch {
	case err == nil:
		return string(b), true, nil
	case errors.As(err, &ne) && ne.Timeout():
		return string(b), false, nil
	case errors.Is(err, net.ErrClosed), errors.Is(err, io.ErrUnexpectedEOF), strings.Contains(err.Error(), "connection reset"):
		return string(b), true, nil
	}
	return string(b), false, err
}

var dateRE = regexp.MustCompile(`\r\nDate: [A-Za-z]{3}, \d\d [A-Za-z]{3} \d{4} \d\d:\d\d:\d\d GMT\r\n`)

// normalize replaces the Date headers' values: the one part of a response that may differ.
func normalize(s string) string { return dateRE.ReplaceAllString(s, "\r\nDate: (date)\r\n") }

// testHandler is the handler the differential tests serve on both servers: each path does
// one thing a handler may do.
func testHandler() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		io.WriteString(w, "hello\n")
	})
	mux.HandleFunc("/plain", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/plain")
		io.WriteString(w, "Hello, World!")
	})
	mux.HandleFunc("/json", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, `{"message":"Hello, World!"}`)
	})
	mux.HandleFunc("/sniff", func(w http.ResponseWriter, r *http.Request) {
		q := r.URL.Query()
		if ct, ok := q["ct"]; ok {
			w.Header()["Content-Type"] = ct
		}
		io.WriteString(w, q.Get("b"))
	})
	mux.HandleFunc("/echo", func(w http.ResponseWriter, r *http.Request) {
		b, err := io.ReadAll(r.Body)
		fmt.Fprintf(w, "n=%d sha=%x err=%v trailer=%v\n", len(b), sha256.Sum256(b), err, r.Trailer)
	})
	mux.HandleFunc("/req", func(w http.ResponseWriter, r *http.Request) {
		keys := make([]string, 0, len(r.Header))
		for k := range r.Header {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		fmt.Fprintf(w, "%s %q %s host=%q cl=%d te=%v close=%v\n", r.Method, r.RequestURI, r.Proto, r.Host, r.ContentLength, r.TransferEncoding, r.Close)
		fmt.Fprintf(w, "url=%#v\n", *r.URL)
		for _, k := range keys {
			fmt.Fprintf(w, "%s: %q\n", k, r.Header[k])
		}
	})
	mux.HandleFunc("/big", func(w http.ResponseWriter, r *http.Request) {
		n := 5000
		if v, err := strconv.Atoi(r.URL.Query().Get("n")); err == nil {
			n = v
		}
		w.Write([]byte(strings.Repeat("abcdefghij", n/10)))
	})
	mux.HandleFunc("/writes", func(w http.ResponseWriter, r *http.Request) {
		for i := range 40 {
			fmt.Fprintf(w, "line %d %s\n", i, strings.Repeat("x", i*7))
		}
	})
	mux.HandleFunc("/flush", func(w http.ResponseWriter, r *http.Request) {
		io.WriteString(w, "first\n")
		w.(http.Flusher).Flush()
		io.WriteString(w, "second\n")
	})
	mux.HandleFunc("/flush-empty", func(w http.ResponseWriter, r *http.Request) {
		w.(http.Flusher).Flush()
	})
	mux.HandleFunc("/status/", func(w http.ResponseWriter, r *http.Request) {
		code, _ := strconv.Atoi(strings.TrimPrefix(r.URL.Path, "/status/"))
		w.WriteHeader(code)
		io.WriteString(w, "body after status\n")
	})
	mux.HandleFunc("/cl", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Length", "5")
		io.WriteString(w, "hello")
	})
	mux.HandleFunc("/short-cl", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Length", "10")
		io.WriteString(w, "hello")
	})
	mux.HandleFunc("/long-cl", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Length", "3")
		_, err := io.WriteString(w, "hello")
		fmt.Fprint(w, err)
	})
	mux.HandleFunc("/bad-cl", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Length", "x")
		io.WriteString(w, "hello")
	})
	mux.HandleFunc("/trailer", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Trailer", "X-Sum, X-Bad-Content-Length")
		io.WriteString(w, "body\n")
		w.Header().Set("X-Sum", "42")
		w.Header().Set(http.TrailerPrefix+"X-Late", "late")
	})
	mux.HandleFunc("/1xx", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Link", "</style.css>; rel=preload")
		w.WriteHeader(http.StatusEarlyHints)
		w.WriteHeader(http.StatusOK)
		io.WriteString(w, "after hints\n")
	})
	mux.HandleFunc("/connclose", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Connection", "close")
		io.WriteString(w, "bye\n")
	})
	mux.HandleFunc("/keepalive", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Connection", "keep-alive")
		w.Header().Set("Content-Length", "3")
		io.WriteString(w, "ka\n")
	})
	mux.HandleFunc("/te-identity", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Transfer-Encoding", "identity")
		io.WriteString(w, "identity\n")
	})
	mux.HandleFunc("/te-chunked", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Transfer-Encoding", "chunked")
		io.WriteString(w, "chunked\n")
	})
	mux.HandleFunc("/html", func(w http.ResponseWriter, r *http.Request) {
		io.WriteString(w, "<!DOCTYPE html><html><body>hi</body></html>")
	})
	mux.HandleFunc("/typed", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.Header().Add("X-Multi", "a")
		w.Header().Add("X-Multi", "b")
		io.WriteString(w, `{"ok":true}`)
	})
	mux.HandleFunc("/encoded", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Encoding", "gzip")
		io.WriteString(w, "not really gzip")
	})
	mux.HandleFunc("/empty", func(w http.ResponseWriter, r *http.Request) {})
	mux.HandleFunc("/header-after", func(w http.ResponseWriter, r *http.Request) {
		w.WriteHeader(202)
		w.Header().Set("X-Too-Late", "1")
		w.WriteHeader(203)
		io.WriteString(w, "accepted\n")
	})
	mux.HandleFunc("/odd-header", func(w http.ResponseWriter, r *http.Request) {
		h := w.Header()
		for i := range 10 { // more fields than a header snapshot sorts in place
			h.Set(fmt.Sprintf("X-Field-%c", 'j'-i), strconv.Itoa(i))
		}
		h.Set("X-Newlines", "a\r\nb\nc\rd")
		h.Set("X-Padded", " \t padded \t ")
		h.Set("X-Empty", "")
		h["X-Nil"] = nil
		h["Bad Name"] = []string{"dropped"}
		h["lower-case"] = []string{"as set"}
		h.Add("X-Multi", "1")
		h.Add("X-Multi", "2")
		io.WriteString(w, "odd\n")
	})
	mux.HandleFunc("/header-mutate", func(w http.ResponseWriter, r *http.Request) {
		h := w.Header()
		h.Set("X-A", "before")
		h.Add("X-B", "1")
		w.WriteHeader(http.StatusOK)
		h["X-A"][0] = "after" // changes after WriteHeader do not show
		h.Add("X-B", "2")
		h.Del("X-B")
		h.Set("X-C", "late")
		io.WriteString(w, "mutated\n")
	})
	mux.HandleFunc("/panic", func(w http.ResponseWriter, r *http.Request) {
		io.WriteString(w, "partial")
		panic("test panic")
	})
	mux.HandleFunc("/panic-flushed", func(w http.ResponseWriter, r *http.Request) {
		io.WriteString(w, "partial")
		w.(http.Flusher).Flush()
		panic("test panic")
	})
	mux.HandleFunc("/abort", func(w http.ResponseWriter, r *http.Request) {
		panic(http.ErrAbortHandler)
	})
	mux.HandleFunc("/noread", func(w http.ResponseWriter, r *http.Request) {
		io.WriteString(w, "did not read the body\n")
	})
	mux.HandleFunc("/readsome", func(w http.ResponseWriter, r *http.Request) {
		b := make([]byte, 3)
		n, err := io.ReadFull(r.Body, b)
		fmt.Fprintf(w, "read %q %v\n", b[:n], err)
	})
	mux.HandleFunc("/closebody", func(w http.ResponseWriter, r *http.Request) {
		err := r.Body.Close()
		_, err2 := r.Body.Read(make([]byte, 1))
		fmt.Fprintf(w, "close=%v read=%v\n", err, err2)
	})
	mux.HandleFunc("/maxbytes", func(w http.ResponseWriter, r *http.Request) {
		r.Body = http.MaxBytesReader(w, r.Body, 10)
		b, err := io.ReadAll(r.Body)
		fmt.Fprintf(w, "n=%d err=%v\n", len(b), err)
	})
	mux.HandleFunc("/maxbytes-error", func(w http.ResponseWriter, r *http.Request) {
		r.Body = http.MaxBytesReader(w, r.Body, 10)
		if _, err := io.ReadAll(r.Body); err != nil {
			http.Error(w, err.Error(), http.StatusRequestEntityTooLarge)
			return
		}
		io.WriteString(w, "within the limit\n")
	})
	mux.HandleFunc("/maxbytes-after-header", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("X-Before", "1")
		w.WriteHeader(http.StatusAccepted)
		r.Body = http.MaxBytesReader(w, r.Body, 10)
		b, err := io.ReadAll(r.Body)
		fmt.Fprintf(w, "n=%d err=%v\n", len(b), err)
	})
	mux.HandleFunc("/maxbytes-big", func(w http.ResponseWriter, r *http.Request) {
		r.Body = http.MaxBytesReader(w, r.Body, 10)
		_, err := io.ReadAll(r.Body)
		fmt.Fprintf(w, "err=%v\n", err)
		io.WriteString(w, strings.Repeat("m", 8<<10)) // more than the response's buffer: the header goes out
	})
	mux.HandleFunc("/maxbytes-local", func(w http.ResponseWriter, r *http.Request) {
		b, err := io.ReadAll(http.MaxBytesReader(w, r.Body, 10))
		fmt.Fprintf(w, "n=%d err=%v\n", len(b), err)
	})
	mux.HandleFunc("/form", func(w http.ResponseWriter, r *http.Request) {
		err := r.ParseForm()
		fmt.Fprintf(w, "form=%v err=%v\n", r.Form, err)
	})
	mux.HandleFunc("/redirect", func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, "/target?x=1", http.StatusFound)
	})
	mux.HandleFunc("/error", func(w http.ResponseWriter, r *http.Request) {
		http.Error(w, "custom failure", http.StatusTeapot)
	})
	mux.HandleFunc("/readfrom", func(w http.ResponseWriter, r *http.Request) {
		io.Copy(w, io.LimitReader(strings.NewReader(strings.Repeat("0123456789", 1000)), 9000))
	})
	mux.HandleFunc("/readfrom-small", func(w http.ResponseWriter, r *http.Request) {
		io.Copy(w, strings.NewReader("tiny"))
	})
	mux.HandleFunc("/serve-content", func(w http.ResponseWriter, r *http.Request) {
		http.ServeContent(w, r, "x.txt", time.Unix(1700000000, 0), strings.NewReader(strings.Repeat("content ", 100)))
	})
	return mux
}

// quietLogger returns an ErrorLog for a server under test.
func quietLogger() (*log.Logger, *quietLog) {
	q := &quietLog{}
	return log.New(q, "", 0), q
}
