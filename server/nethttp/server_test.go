//go:build linux

package nethttp

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/ringev/ringev/server"
)

// TestServerAnswersAsNetHTTP: each raw input of the corpus, sent to the same handler on
// net/http and on ringev (each backend, both drivers), gets the same bytes back (apart from the
// Date header's value), and the connection is closed by both servers or by neither.
func TestServerAnswersAsNetHTTP(t *testing.T) {
	cases := corpus()
	if len(cases) < 200 {
		t.Fatalf("the corpus holds %d inputs, fewer than 200", len(cases))
	}
	eachSetup(t, func(t *testing.T, backend string, opts ...server.Option) {
		lg, _ := quietLogger()
		cfg := &http.Server{Handler: testHandler(), MaxHeaderBytes: 4096, ErrorLog: lg}
		ref := serveNetHTTP(t, cfg)
		got := serveRingev(t, backend, cfg, opts...)
		var wg sync.WaitGroup
		diffs := make([]string, len(cases))
		sem := make(chan struct{}, 16)
		for i, c := range cases {
			wg.Add(1)
			go func() {
				defer wg.Done()
				sem <- struct{}{}
				defer func() { <-sem }()
				until, quiet := "", waitFor
				if c.open {
					until, quiet = c.until, 300*time.Millisecond
				}
				want, wantClosed, err := exchangeRawUntil(ref, c.raw, until, quiet)
				if err != nil {
					diffs[i] = c.name + ": net/http: " + err.Error()
					return
				}
				have, haveClosed, err := exchangeRawUntil(got, c.raw, until, quiet)
				if err != nil {
					diffs[i] = c.name + ": ringev: " + err.Error()
					return
				}
				if normalize(want) != normalize(have) || wantClosed != haveClosed {
					if c.known {
						t.Logf("%s: a known difference (see corpusCase.known)", c.name)
						return
					}
					diffs[i] = c.name + ":\nnet/http (closed " + boolString(wantClosed) + "):\n" + quote(normalize(want)) +
						"\nringev (closed " + boolString(haveClosed) + "):\n" + quote(normalize(have))
				}
			}()
		}
		wg.Wait()
		n := 0
		for _, d := range diffs {
			if d != "" {
				n++
				t.Error(d)
			}
		}
		if n > 0 {
			t.Errorf("%d of %d inputs answered differently", n, len(cases))
		}
	})
}

func boolString(b bool) string {
	if b {
		return "yes"
	}
	return "no"
}

func quote(s string) string {
	if len(s) > 1500 {
		s = s[:1500] + "..."
	}
	return strings.ReplaceAll(s, "\r\n", "\\r\\n\n")
}

// TestServerRequestOutlivesItsHandler: a Request kept after its handler returned (as
// http.TimeoutHandler's inner handler keeps it) still holds its own URL, header and cancelled
// context once the connection has served another request.
func TestServerRequestOutlivesItsHandler(t *testing.T) {
	eachBackend(t, func(t *testing.T, backend string) {
		kept := make(chan *http.Request, 1)
		h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if r.URL.Path == "/first" {
				kept <- r
			}
			io.WriteString(w, r.URL.Path)
		})
		addr := serveRingev(t, backend, &http.Server{Handler: h})
		raw := "GET /first?a=1 HTTP/1.1\r\nHost: x\r\nX-N: 1\r\n\r\n" +
			"GET /second?b=2 HTTP/1.1\r\nHost: y\r\nX-N: 2\r\nConnection: close\r\n\r\n"
		got, closed, err := exchangeRaw(addr, raw, waitFor)
		if err != nil || !closed || !strings.HasSuffix(got, "/second") {
			t.Fatalf("the two requests got %q (closed %v, %v)", got, closed, err)
		}
		r := <-kept
		if r.URL.Path != "/first" || r.URL.RawQuery != "a=1" || r.Host != "x" || r.Header.Get("X-N") != "1" {
			t.Errorf("the kept Request changed: %s?%s, Host %q, X-N %q", r.URL.Path, r.URL.RawQuery, r.Host, r.Header.Get("X-N"))
		}
		if err := r.Context().Err(); err != context.Canceled {
			t.Errorf("the kept Request's context: %v, want context.Canceled", err)
		}
	})
}

// TestServerServesAHeadAfterFourCRLFsAfterAPOST: after a POST, a client's 4 stray CRLFs that
// come alone (the most net/http skips) are skipped, and the connection serves the head that
// comes after them, as net/http's does.
func TestServerServesAHeadAfterFourCRLFsAfterAPOST(t *testing.T) {
	eachBackend(t, func(t *testing.T, backend string) {
		cfg := &http.Server{Handler: testHandler()}
		ref, got := serveNetHTTP(t, cfg), serveRingev(t, backend, cfg)
		steps := []step{
			{raw: postAB},
			{until: "trailer=map[]\n", raw: "\r\n\r\n"},
			{pause: 20 * time.Millisecond, raw: "GET /req HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n"},
		}
		sameSteps(t, "4 CRLFs after a POST, then a GET", ref, got, steps, time.Second)
	})
}

// TestServerHoldsBackPipelinedRequestsOfAClientNotReading: a client that pipelines 8 MiB of
// requests before it reads a response is held back by TCP (reading pauses while more than
// maxQueued waits behind the request in service), as net/http's, and gets every answer once it
// reads; the input is never let grow past server.MaxInput, which closes the connection.
func TestServerHoldsBackPipelinedRequestsOfAClientNotReading(t *testing.T) {
	eachSetup(t, func(t *testing.T, backend string, opts ...server.Option) {
		h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, "ok") })
		addr := serveRingev(t, backend, &http.Server{Handler: h}, opts...)
		c := dialRaw(t, addr)
		req := "GET / HTTP/1.1\r\nHost: x\r\nX-Pad: " + strings.Repeat("p", 1000) + "\r\n\r\n"
		const n = 8 << 20 / 1024
		blocked, werr := writeUntilBlocked(c, []byte(strings.Repeat(req, n)))
		select {
		case <-blocked:
		case <-time.After(waitFor):
			t.Fatal("the client's writes went on for 10 s")
		}
		br := bufio.NewReader(c)
		for i := range n {
			c.SetReadDeadline(time.Now().Add(waitFor))
			resp, err := http.ReadResponse(br, nil)
			if err != nil {
				t.Fatalf("response %d of %d: %v (the client's write: %v)", i+1, n, err, <-werr)
			}
			io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
		}
		if err := <-werr; err != nil {
			t.Fatalf("the client's write: %v", err)
		}
	})
}

// TestServerReadsTheBodyOfAPipelinedRequestThatStartsWhileReadingIsHeld: behind a client that
// pipelines without reading, a POST whose head comes while reading is held for the requests
// before it (more than maxQueued waiting) gets its body, the part the input held and the rest
// from the socket, and every request its answer. With reading left held at a request's end
// (not resumed once the next one had taken its head and the body the input held), the POST's
// body waited for bytes nobody read.
func TestServerReadsTheBodyOfAPipelinedRequestThatStartsWhileReadingIsHeld(t *testing.T) {
	eachSetup(t, func(t *testing.T, backend string, opts ...server.Option) {
		const rounds, gets, bodyLen = 12, 200, 300<<10 + 7
		h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			n, err := io.Copy(io.Discard, r.Body)
			fmt.Fprintf(w, "%d %v", n, err)
		})
		addr := serveRingev(t, backend, &http.Server{Handler: h}, opts...)
		c := dialRaw(t, addr)
		var all strings.Builder
		for range rounds {
			fmt.Fprintf(&all, "POST / HTTP/1.1\r\nHost: x\r\nContent-Length: %d\r\n\r\n%s", bodyLen, strings.Repeat("b", bodyLen))
			for range gets {
				all.WriteString("GET / HTTP/1.1\r\nHost: x\r\nX-Pad: " + strings.Repeat("p", 1000) + "\r\n\r\n")
			}
		}
		blocked, werr := writeUntilBlocked(c, []byte(all.String()))
		<-blocked
		br := bufio.NewReader(c)
		for i := range rounds * (gets + 1) {
			c.SetReadDeadline(time.Now().Add(waitFor))
			resp, err := http.ReadResponse(br, nil)
			if err != nil {
				t.Fatalf("answer %d of %d: %v", i+1, rounds*(gets+1), err)
			}
			b, _ := io.ReadAll(resp.Body)
			if want := fmt.Sprintf("%d <nil>", bodyLen); i%(gets+1) == 0 && string(b) != want {
				t.Fatalf("answer %d (a POST's): %q, want %q", i+1, b, want)
			}
		}
		if err := <-werr; err != nil {
			t.Fatalf("the client's write: %v", err)
		}
	})
}

// writeUntilBlocked writes all to c from a goroutine; blocked is closed once a write could not
// go on for 200 ms (the server no longer reads), or all is written; werr gets the write's
// end (nil, or an error other than its deadline).
func writeUntilBlocked(c net.Conn, all []byte) (blocked <-chan struct{}, werr <-chan error) {
	b, e := make(chan struct{}), make(chan error, 1)
	go func() {
		once := sync.OnceFunc(func() { close(b) })
		defer once()
		for len(all) > 0 {
			c.SetWriteDeadline(time.Now().Add(200 * time.Millisecond))
			m, err := c.Write(all)
			all = all[m:]
			if err != nil && !errors.Is(err, os.ErrDeadlineExceeded) {
				e <- err
				return
			}
			if err != nil {
				once()
			}
		}
		e <- nil
	}()
	return b, e
}

// TestServerAnswersARequestThatCameWhileThePreviousWasServed: a request whose bytes come while
// the one before it on the connection is in its handler (here with the end of that one's
// body, which the handler waits for) is answered once that handler returns. A request's end
// looks for the next one only where input may be waiting: without noting the input that came
// while the handler ran, the second request waited for bytes that had come.
func TestServerAnswersARequestThatCameWhileThePreviousWasServed(t *testing.T) {
	eachSetup(t, func(t *testing.T, backend string, opts ...server.Option) {
		started := make(chan struct{}, 1)
		h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			started <- struct{}{}
			b, err := io.ReadAll(r.Body)
			fmt.Fprintf(w, "%s %q %v", r.URL.Path, b, err)
		})
		addr := serveRingev(t, backend, &http.Server{Handler: h}, opts...)
		c := dialRaw(t, addr)
		io.WriteString(c, "POST /first HTTP/1.1\r\nHost: x\r\nContent-Length: 5\r\n\r\n")
		select {
		case <-started:
		case <-time.After(waitFor):
			t.Fatal("the first request's handler did not start")
		}
		io.WriteString(c, "helloGET /second HTTP/1.1\r\nHost: x\r\n\r\n")
		br := bufio.NewReader(c)
		for _, want := range []string{`/first "hello" <nil>`, `/second "" <nil>`} {
			resp, err := http.ReadResponse(br, nil)
			if err != nil {
				t.Fatalf("waiting for %q: %v", want, err)
			}
			b, _ := io.ReadAll(resp.Body)
			if string(b) != want {
				t.Fatalf("answer %q, want %q", b, want)
			}
		}
	})
}
