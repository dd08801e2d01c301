//go:build linux

package nethttp

import (
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/ringev/ringev/server"
)

// cutHeads are request heads that a timeout cuts short, one for each way net/http's server
// answers the cut: it takes the last line, not complete, as a whole one, so a request line or
// a header line without a colon yet gets a 400, and a head valid so far gets a silent close.
// waits: net/http waits for more without a deadline unless an idle timeout is set (it reads a
// kept-alive connection's next head once 4 bytes of it have come).
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
}

// TestServerAnswersCutHeadAsNetHTTP: a request head that the head's timeout (ReadHeaderTimeout,
// else ReadTimeout) or the idle timeout cuts short gets net/http's answer to the same bytes,
// a 400 or none, then the close, for each place a cut may fall.
func TestServerAnswersCutHeadAsNetHTTP(t *testing.T) {
	const d = 200 * time.Millisecond
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
		var mu sync.Mutex
		for _, cf := range configs {
			name := cf.name
			cfg := &http.Server{Handler: testHandler(), ReadHeaderTimeout: cf.header, IdleTimeout: cf.idle, ReadTimeout: cf.request}
			ref, got := serveNetHTTP(t, cfg), serveRingev(t, backend, cfg, opts...)
			for _, cut := range cutHeads {
				if cut.waits && cfg.IdleTimeout == 0 && cfg.ReadTimeout == 0 {
					continue
				}
				wg.Add(1)
				go func() {
					defer wg.Done()
					want, wantClosed, err := exchangeRaw(ref, cut.raw, waitFor)
					if err != nil {
						t.Errorf("%s, %s: net/http: %v", name, cut.name, err)
						return
					}
					have, haveClosed, err := exchangeRaw(got, cut.raw, waitFor)
					if err != nil {
						t.Errorf("%s, %s: ringev: %v", name, cut.name, err)
						return
					}
					mu.Lock()
					defer mu.Unlock()
					if normalize(want) != normalize(have) || wantClosed != haveClosed {
						t.Errorf("%s, cut %s (%q):\nnet/http (closed %v): %q\nringev (closed %v): %q", name, cut.name, cut.raw, wantClosed, normalize(want), haveClosed, normalize(have))
					}
				}()
			}
		}
		wg.Wait()
	})
}

// TestServerClosesSlowHead: a client that sends a request's head slower than
// ReadHeaderTimeout (a byte of a field's value now and then) is cut off at the timeout from
// its first byte, without an answer, as net/http does for a cut in a field's value.
func TestServerClosesSlowHead(t *testing.T) {
	eachBackend(t, func(t *testing.T, backend string) {
		addr := serveRingev(t, backend, &http.Server{Handler: testHandler(), ReadHeaderTimeout: 200 * time.Millisecond})
		c, err := net.DialTimeout("tcp", addr, waitFor)
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		start := time.Now()
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
// passes during the write, not before the handler ran). On a busy machine a handler can start
// after the deadline; net/http then reports as written the bytes its buffer took, which never
// reach the client. Such an exchange is tried again on a new connection, a few times.
func TestServerWriteTimeoutSendsWhatWasWritten(t *testing.T) {
	const size = 32 << 20 // past what the kernel's socket buffers hold
	eachBackend(t, func(t *testing.T, backend string) {
		type result struct {
			flushErr error
			n        int
			err      error
		}
		results := make(chan result, 1)
		h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Length", strconv.Itoa(size))
			if err := http.NewResponseController(w).Flush(); err != nil {
				results <- result{flushErr: err}
				return
			}
			n, err := w.Write(make([]byte, size))
			results <- result{n: n, err: err}
		})
		for name, addr := range writeTimeoutServers(t, backend, h, 300*time.Millisecond) {
			for try := 1; ; try++ {
				c, err := net.DialTimeout("tcp", addr, waitFor)
				if err != nil {
					t.Fatal(err)
				}
				defer c.Close()
				if _, err := io.WriteString(c, "GET / HTTP/1.1\r\nHost: x\r\n\r\n"); err != nil {
					t.Fatal(err)
				}
				var res result
				select {
				case res = <-results:
				case <-time.After(waitFor):
					t.Fatalf("%s: the handler's write did not end", name)
				}
				if res.flushErr != nil {
					if !errors.Is(res.flushErr, os.ErrDeadlineExceeded) {
						t.Fatalf("%s: the header's flush: %v", name, res.flushErr)
					}
					if try == 5 {
						t.Fatalf("%s: in %d tries the handler never flushed its header before the write timeout", name, try)
					}
					t.Logf("%s: the handler ran after the write timeout (try %d); trying again", name, try)
					c.Close()
					continue
				}
				if res.err == nil || !errors.Is(res.err, os.ErrDeadlineExceeded) || !writeTimeoutRE.MatchString(res.err.Error()) {
					t.Fatalf("%s: the write returned %d, %v: want net/http's timeout error naming both addresses", name, res.n, res.err)
				}
				c.SetReadDeadline(time.Now().Add(waitFor))
				got, err := io.ReadAll(c)
				if err != nil {
					t.Fatalf("%s: reading after %d bytes: %v: want every byte written, then EOF", name, len(got), err)
				}
				_, body, _ := strings.Cut(string(got), "\r\n\r\n")
				if len(body) != res.n {
					t.Fatalf("%s: the client read %d bytes of the body, the handler wrote %d before the timeout", name, len(body), res.n)
				}
				break
			}
		}
	})
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
