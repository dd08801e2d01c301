//go:build linux

package nethttp

import (
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"
)

// TestServerClosesSlowHead: a client that sends a request's head slower than
// ReadHeaderTimeout (a byte now and then) is closed without an answer, as net/http does.
func TestServerClosesSlowHead(t *testing.T) {
	eachBackend(t, func(t *testing.T, backend string) {
		addr := serveRingev(t, backend, &http.Server{Handler: testHandler(), ReadHeaderTimeout: 200 * time.Millisecond})
		c, err := net.DialTimeout("tcp", addr, waitFor)
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		start := time.Now()
		head := "GET / HTTP/1.1\r\nHost: x\r\nX-Slow: " // never complete
		closed := make(chan []byte)
		go func() {
			b, _ := io.ReadAll(c)
			closed <- b
		}()
		for i := 0; ; i++ {
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
			c.Write([]byte{head[i%len(head)]})
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
		got, closed, err := exchangeRaw(addr, "POST / HTTP/1.1\r\nHost: x\r\nContent-Length: 10\r\n\r\nabc", waitFor)
		if err != nil || !closed || !strings.Contains(got, "timeout=true read tcp 127.0.0.1:") || !strings.HasSuffix(got, ": i/o timeout") {
			t.Fatalf("got %q, closed %v, %v: want net/http's timeout error and a close", got, closed, err)
		}
	})
}
