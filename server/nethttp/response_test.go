//go:build linux

package nethttp

import (
	"io"
	"net/http"
	"reflect"
	"slices"
	"strings"
	"testing"

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
// it (CR and LF made spaces, then trimmed), for each byte in each place of a long value's
// first two words (its scan takes 8 bytes at a time).
func TestHeaderValueIsHeaderWrites(t *testing.T) {
	for c := range 0x100 {
		for i := range 16 {
			b := []byte(strings.Repeat("v", 20))
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
