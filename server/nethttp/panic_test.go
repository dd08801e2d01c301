//go:build linux

package nethttp

import (
	"io"
	"net/http"
	"strings"
	"testing"
	"time"
)

// TestServerRecoversHandlerPanic: a handler's panic is logged as net/http logs it
// ("http: panic serving ADDR: VALUE" and the stack), its connection is closed, and the server
// goes on serving.
func TestServerRecoversHandlerPanic(t *testing.T) {
	eachBackend(t, func(t *testing.T, backend string) {
		lg, logged := quietLogger()
		h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if r.URL.Path == "/panic" {
				panic("boom")
			}
			io.WriteString(w, "fine")
		})
		addr := serveRingev(t, backend, &http.Server{Handler: h, ErrorLog: lg})
		got, closed, err := exchangeRaw(addr, "GET /panic HTTP/1.1\r\nHost: x\r\n\r\n", waitFor)
		if err != nil || got != "" || !closed {
			t.Fatalf("after a panic: got %q, closed %v, %v; want nothing and a close", got, closed, err)
		}
		if s := logged.String(); !strings.Contains(s, "http: panic serving 127.0.0.1:") || !strings.Contains(s, ": boom\ngoroutine ") {
			t.Fatalf("logged %q", s)
		}
		got, _, err = exchangeRaw(addr, "GET / HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n", waitFor)
		if err != nil || !strings.HasSuffix(got, "fine") {
			t.Fatalf("after the panic: %q, %v", got, err)
		}
	})

}

// TestServerRecoversHandlerPanicWhileItsGoroutineWrites: a handler that panics while a
// goroutine of its own writes to its ResponseWriter has its connection closed; the goroutine's
// writes end with an error, and the server goes on serving (under -race: nothing the loop
// reuses is written by the goroutine, which is not waited for).
func TestServerRecoversHandlerPanicWhileItsGoroutineWrites(t *testing.T) {
	eachBackend(t, func(t *testing.T, backend string) {
		lg, _ := quietLogger()
		lateErr := make(chan error, 1)
		h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if r.URL.Path != "/panic" {
				io.WriteString(w, "fine")
				return
			}
			writing := make(chan struct{})
			go func() {
				late := strings.Repeat("late", 1<<10)
				io.WriteString(w, late)
				close(writing)
				for {
					if _, err := io.WriteString(w, late); err != nil {
						lateErr <- err
						return
					}
				}
			}()
			<-writing
			panic("boom")
		})
		addr := serveRingev(t, backend, &http.Server{Handler: h, ErrorLog: lg})
		_, closed, err := exchangeRaw(addr, "GET /panic HTTP/1.1\r\nHost: x\r\n\r\n", waitFor)
		if err != nil || !closed {
			t.Fatalf("after a panic: closed %v, %v; want a close", closed, err)
		}
		select {
		case err := <-lateErr:
			if err == nil {
				t.Fatal("the goroutine's writes after the panic ended without an error")
			}
		case <-time.After(waitFor):
			t.Fatal("the goroutine's writes after the panic did not end")
		}
		got, _, err := exchangeRaw(addr, "GET / HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n", waitFor)
		if err != nil || !strings.HasSuffix(got, "fine") {
			t.Fatalf("after the panic: %q, %v", got, err)
		}
	})
}
