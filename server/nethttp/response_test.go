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
	"reflect"
	"runtime"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/ringev/ringev/server"
)

// TestResponseWriteLargerThanTheOutputCapArrives: a handler's one Write of 4 MB, four times
// the Conn's output cap (server.WithMaxPending), reaches the client whole: the response goes
// to the Conn in pieces, waiting for its output to drain, and no write is refused.
func TestResponseWriteLargerThanTheOutputCapArrives(t *testing.T) {
	eachBackend(t, func(t *testing.T, backend string) {
		addr := serveRingev(t, backend, &http.Server{Handler: testHandler()}, server.WithMaxPending(1<<20))
		tr := &http.Transport{}
		defer tr.CloseIdleConnections()
		client := &http.Client{Transport: tr, Timeout: waitFor}
		resp, err := client.Get("http://" + addr + "/big?n=4000000")
		if err != nil {
			t.Fatal(err)
		}
		b, err := io.ReadAll(resp.Body)
		resp.Body.Close()
		if err != nil || len(b) != 4000000 || string(b[:20]) != strings.Repeat("abcdefghij", 2) {
			t.Fatalf("GET /big?n=4000000: %d bytes, %v", len(b), err)
		}
	})
}

// TestHeaderValueIsHeaderWrites: headerValue gives each value as http.Header's Write writes
// it (CR and LF made spaces, then trimmed), for each byte in each place of values of 1 to 20
// bytes (its scan takes 8 bytes at a time, the last 8 overlapping).
func TestHeaderValueIsHeaderWrites(t *testing.T) {
	for c := range 0x100 {
		for n := 1; n <= 20; n++ {
			for i := range n {
				b := []byte(strings.Repeat("v", n))
				b[i] = byte(c)
				v := string(b)
				var sb strings.Builder
				http.Header{"X": {v}}.Write(&sb)
				want := strings.TrimSuffix(strings.TrimPrefix(sb.String(), "X: "), "\r\n")
				if got := headerValue(v); got != want {
					t.Errorf("headerValue(%q) = %q, http.Header's Write %q", v, got, want)
				}
			}
		}
	}
}

// TestHeaderSnapTakeIsClone: a snapshot holds the fields and values of the header it took,
// sorted by name (one Content-Type field with one value or two, with other fields, or none).
func TestHeaderSnapTakeIsClone(t *testing.T) {
	for _, h := range []http.Header{
		{},
		{"Content-Type": {"text/plain"}},
		{"Content-Type": {"text/plain", "text/html"}},
		{"Content-Type": {}},
		{"Content-Type": {"text/plain"}, "X-A": {"1"}},
		{"X-A": {"1"}},
		{"Content-Length": {"3"}},
	} {
		var s headerSnap
		s.take(h)
		got := http.Header{}
		var names []string
		for _, f := range s.fields {
			got[f.key] = f.vals
			names = append(names, f.key)
		}
		if !reflect.DeepEqual(got, h) || !slices.IsSorted(names) {
			t.Errorf("take(%v): %v, names %v", h, got, names)
		}
		for k, vv := range h {
			if n := knownField(k); n >= 0 && !reflect.DeepEqual(s.values(n), vv) {
				t.Errorf("take(%v): values of %s: %v", h, k, s.values(n))
			}
		}
	}
}

// TestOutBufPlainHeadTakesTheDateOfItsSecond: the plain header a response's buffer keeps is
// made again when the Date line changes, though its fields are the same.
func TestOutBufPlainHeadTakesTheDateOfItsSecond(t *testing.T) {
	defer dateCache.Store(nil)
	var s headerSnap
	s.take(http.Header{"Content-Type": {"text/plain"}})
	o := &outBuf{}
	// write writes the header with the Date line given, and reports whether it was the one
	// taken (the second did not pass meanwhile: the clock's would have taken its place).
	write := func(line string) (string, bool) {
		sec := time.Now().Unix()
		dateCache.Store(&dateValue{sec: sec, line: line, lineCL: line + "Content-Length: "})
		o.b = o.b[:0]
		if !o.plainHead(&s, "", 5) {
			t.Fatal("plainHead wrote nothing")
		}
		return string(o.b), time.Now().Unix() == sec
	}
	const want = "HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nDate: %s\r\nContent-Length: 5\r\n\r\n"
	for {
		first, ok1 := write("Date: first\r\n")
		second, ok2 := write("Date: second\r\n")
		if !ok1 || !ok2 {
			continue
		}
		if first != fmt.Sprintf(want, "first") || second != fmt.Sprintf(want, "second") {
			t.Fatalf("headers %q then %q", first, second)
		}
		return
	}
}

// TestResponseWriteAfterItsHandlerReturnedReachesNoOtherResponse: a ResponseWriter that a
// goroutine kept past its handler's return writes nowhere (its Write fails), not into the
// response of the next request the loop serves, on another connection: the loop reuses the
// memory of a finished response for the next.
func TestResponseWriteAfterItsHandlerReturnedReachesNoOtherResponse(t *testing.T) {
	eachBackend(t, func(t *testing.T, backend string) {
		kept := make(chan http.ResponseWriter, 1)
		lateErr := make(chan error, 1)
		h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if r.URL.Path == "/first" {
				kept <- w
				io.WriteString(w, "first")
				return
			}
			_, err := io.WriteString(<-kept, "written late by the first handler")
			lateErr <- err
			io.WriteString(w, "second")
		})
		addr := serveRingev(t, backend, &http.Server{Handler: h})
		tr := &http.Transport{DisableKeepAlives: true}
		defer tr.CloseIdleConnections()
		client := &http.Client{Transport: tr, Timeout: waitFor}
		for _, path := range []string{"/first", "/second"} {
			resp, err := client.Get("http://" + addr + path)
			if err != nil {
				t.Fatal(err)
			}
			b, err := io.ReadAll(resp.Body)
			resp.Body.Close()
			if want := path[1:]; string(b) != want || err != nil {
				t.Fatalf("GET %s: %q (%v), want %q", path, b, err, want)
			}
		}
		if err := <-lateErr; err == nil {
			t.Fatal("the late Write returned no error")
		}
	})
}

// TestResponseWriteRacingItsHandlersReturnReachesNoOtherResponse: goroutines that write to
// their handler's ResponseWriter while the handler returns either write into that response
// (before the return) or get an error (after it), never into another request's response, which
// the loop builds in the same reused memory, and never race with the response's end.
func TestResponseWriteRacingItsHandlersReturnReachesNoOtherResponse(t *testing.T) {
	eachBackend(t, func(t *testing.T, backend string) {
		var late sync.WaitGroup
		var panics atomic.Int32
		h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			mark := "<" + r.URL.Path[1:] + ">"
			writing := make(chan struct{})
			late.Add(1)
			go func() {
				defer late.Done()
				defer func() {
					if recover() != nil {
						panics.Add(1)
					}
				}()
				io.WriteString(w, mark)
				close(writing)
				for range 1 << 16 { // until the handler has returned
					if _, err := io.WriteString(w, mark); err != nil {
						return
					}
					runtime.Gosched()
				}
			}()
			<-writing // and returns while its goroutine writes
		})
		addr := serveRingev(t, backend, &http.Server{Handler: h})
		const clients, requests = 4, 100
		tr := &http.Transport{MaxIdleConnsPerHost: clients}
		defer tr.CloseIdleConnections()
		client := &http.Client{Transport: tr, Timeout: waitFor}
		errs := make(chan error, clients)
		for c := range clients {
			go func() {
				for i := range requests {
					mark := fmt.Sprintf("<%d-%d>", c, i)
					resp, err := client.Get(fmt.Sprintf("http://%s/%d-%d", addr, c, i))
					if err != nil {
						errs <- err
						return
					}
					b, err := io.ReadAll(resp.Body)
					resp.Body.Close()
					if err != nil || len(b) == 0 || strings.ReplaceAll(string(b), mark, "") != "" {
						errs <- fmt.Errorf("GET /%d-%d: %q (%v), want %s repeated", c, i, b, err, mark)
						return
					}
				}
				errs <- nil
			}()
		}
		for range clients {
			if err := <-errs; err != nil {
				t.Error(err)
			}
		}
		late.Wait()
		if n := panics.Load(); n > 0 {
			t.Errorf("%d late writes panicked", n)
		}
	})
}

// TestResponseCopyFromAGoroutineUntilTheRequestsContextEndsLetsItsHandlerEnd: a handler that
// returns while a goroutine of its own copies into its ResponseWriter from a pipe that the
// request's context closes (context.AfterFunc) gets its response sent: the context is
// canceled when the handler returns, as on net/http, before its end waits for the copy.
func TestResponseCopyFromAGoroutineUntilTheRequestsContextEndsLetsItsHandlerEnd(t *testing.T) {
	eachBackend(t, func(t *testing.T, backend string) {
		copied := make(chan error, 1)
		h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			pr, pw := io.Pipe()
			context.AfterFunc(r.Context(), func() { pw.Close() })
			go func() {
				_, err := io.Copy(w, pr)
				copied <- err
			}()
			io.WriteString(pw, "copied") // taken by the copy, which then waits for more
		})
		addr := serveRingev(t, backend, &http.Server{Handler: h})
		got, closed, err := exchangeRaw(addr, "GET / HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n", waitFor)
		if err != nil || !closed || !strings.HasSuffix(got, "\r\n\r\ncopied") {
			t.Fatalf("response: %q (closed %v, %v); want the copied body, then the close", got, closed, err)
		}
		select {
		case err := <-copied:
			if err != nil {
				t.Errorf("the copy: %v", err)
			}
		case <-time.After(waitFor):
			t.Fatalf("the copy did not end within %v", waitFor)
		}
	})
}

// TestResponseHeaderKeptAfterItsHandlerReachesNoLaterResponse: a handler's header map that a
// goroutine keeps and writes to after the handler returned does not reach the header of a
// later response (the next request on the connection, served on the same loop): as on
// net/http, each response has its own map. The late write is ordered after the next
// handler's start and before that handler sets its header (no data race in either version).
func TestResponseHeaderKeptAfterItsHandlerReachesNoLaterResponse(t *testing.T) {
	eachBackend(t, func(t *testing.T, backend string) {
		kept := make(chan http.Header, 1)
		started, wrote := make(chan struct{}), make(chan struct{})
		h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if r.URL.Path == "/keep" {
				w.Header().Set("Content-Type", "text/plain")
				kept <- w.Header()
				io.WriteString(w, "kept")
				return
			}
			close(started)
			select {
			case <-wrote:
			case <-time.After(waitFor):
			}
			w.Header().Set("Content-Type", "text/plain")
			io.WriteString(w, "next")
		})
		addr := serveRingev(t, backend, &http.Server{Handler: h})
		c := dialRaw(t, addr)
		br := bufio.NewReader(c)
		get := func(path string) (*http.Response, error) {
			if _, err := io.WriteString(c, "GET "+path+" HTTP/1.1\r\nHost: x\r\n\r\n"); err != nil {
				return nil, err
			}
			resp, err := http.ReadResponse(br, nil)
			if err != nil {
				return nil, err
			}
			_, err = io.ReadAll(resp.Body)
			resp.Body.Close()
			return resp, err
		}
		if _, err := get("/keep"); err != nil {
			t.Fatalf("GET /keep: %v", err)
		}
		hh := <-kept
		type result struct {
			resp *http.Response
			err  error
		}
		next := make(chan result, 1)
		go func() {
			resp, err := get("/next")
			next <- result{resp, err}
		}()
		select {
		case <-started:
		case <-time.After(waitFor):
			t.Fatal("the second request's handler did not start")
		}
		hh.Set("X-Leak", "the first handler's")
		close(wrote)
		r := <-next // the connection's deadline bounds it (dialRaw)
		if r.err != nil {
			t.Fatalf("GET /next: %v", r.err)
		}
		if v := r.resp.Header.Values("X-Leak"); len(v) > 0 {
			t.Errorf("GET /next: its header has X-Leak %q, written to the first response's kept map", v)
		}
	})
}

// TestResponseWriteAfterTheClientLeftFailsWithEPIPE: once the client has closed its connection
// (or reset it) during the handler, the handler's writes fail as on net/http: with a
// *net.OpError ("write tcp LOCAL->REMOTE: write: broken pipe") that wraps syscall.EPIPE.
func TestResponseWriteAfterTheClientLeftFailsWithEPIPE(t *testing.T) {
	eachBackend(t, func(t *testing.T, backend string) {
		for _, reset := range []bool{false, true} {
			started := make(chan struct{}, 1)
			failed := make(chan error, 1)
			h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				started <- struct{}{}
				select {
				case <-r.Context().Done(): // the client's EOF or reset
				case <-time.After(waitFor):
				}
				chunk := []byte(strings.Repeat("x", 64<<10))
				for range 1000 { // 64 MB: far more than the socket's buffers take
					if _, err := w.Write(chunk); err != nil {
						failed <- err
						return
					}
				}
				failed <- nil
			})
			addr := serveRingev(t, backend, &http.Server{Handler: h})
			c := dialRaw(t, addr)
			if _, err := io.WriteString(c, "GET / HTTP/1.1\r\nHost: x\r\n\r\n"); err != nil {
				t.Fatal(err)
			}
			select {
			case <-started:
			case <-time.After(waitFor):
				t.Fatal("the handler did not start")
			}
			if reset {
				c.(*net.TCPConn).SetLinger(0)
			}
			c.Close()
			var err error
			select {
			case err = <-failed:
			case <-time.After(waitFor):
				t.Fatal("the handler's writes did not end")
			}
			var oe *net.OpError
			if !errors.Is(err, syscall.EPIPE) || !errors.As(err, &oe) || oe.Op != "write" || !strings.HasSuffix(err.Error(), "write: broken pipe") {
				t.Errorf("reset %v: the write after the client left: %v (%T); want a *net.OpError wrapping syscall.EPIPE, as net/http's", reset, err, err)
			}
		}
	})
}

// TestOutBufPlainHeadOfConcurrentResponsesIsEachOnes: clients served at once on one loop,
// whose response buffers pass from one handler's goroutine to another's, each get their own
// Content-Type (set, sniffed, or empty) and Content-Length, though each buffer keeps the last
// plain header it wrote for the next.
func TestOutBufPlainHeadOfConcurrentResponsesIsEachOnes(t *testing.T) {
	eachBackend(t, func(t *testing.T, backend string) {
		addr := serveRingev(t, backend, &http.Server{Handler: testHandler()})
		const clients, requests = 8, 40
		errs := make(chan error, clients)
		for i := range clients {
			go func() {
				tr := &http.Transport{MaxIdleConnsPerHost: 1}
				defer tr.CloseIdleConnections()
				cl := &http.Client{Transport: tr, Timeout: waitFor}
				for j := range requests {
					body := strings.Repeat("b", 1+(i+j)%5)
					path, wantCT := fmt.Sprintf("/sniff?ct=t/%d&b=%s", i, body), fmt.Sprintf("t/%d", i)
					switch i % 4 {
					case 1:
						path, wantCT = "/sniff?b="+body, "text/plain; charset=utf-8"
					case 2:
						path, wantCT = "/sniff?b=%3Chtml%3E"+body, "text/html; charset=utf-8"
						body = "<html>" + body
					case 3:
						path, wantCT = "/sniff?ct=&b="+body, ""
					}
					resp, err := cl.Get("http://" + addr + path)
					if err != nil {
						errs <- err
						return
					}
					b, err := io.ReadAll(resp.Body)
					resp.Body.Close()
					if err != nil {
						errs <- err
						return
					}
					if ct := resp.Header.Get("Content-Type"); ct != wantCT || string(b) != body || resp.ContentLength != int64(len(body)) {
						errs <- fmt.Errorf("%s: Content-Type %q, Content-Length %d, body %q; want %q, %d, %q",
							path, ct, resp.ContentLength, b, wantCT, len(body), body)
						return
					}
				}
				errs <- nil
			}()
		}
		for range clients {
			select {
			case err := <-errs:
				if err != nil {
					t.Error(err)
				}
			case <-time.After(2 * waitFor):
				t.Fatal("the clients did not end")
			}
		}
	})
}
