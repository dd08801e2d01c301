//go:build linux

package nethttp

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"testing"
	"time"
)

// TestServerCancelsContextWhenClientGoesAway: a handler waiting on r.Context() is released
// when its client closes the connection.
func TestServerCancelsContextWhenClientGoesAway(t *testing.T) {
	eachBackend(t, func(t *testing.T, backend string) {
		started, cancelled := make(chan struct{}), make(chan struct{})
		h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			close(started)
			select {
			case <-r.Context().Done():
				close(cancelled)
			case <-time.After(waitFor):
			}
		})
		addr := serveRingev(t, backend, &http.Server{Handler: h})
		requestThenLeave(t, addr, started)
		select {
		case <-cancelled:
		case <-time.After(waitFor):
			t.Fatal("r.Context() was not cancelled when the client closed")
		}
	})
}

// TestServerCancelsDerivedContextsWithTheRequest: contexts derived from r.Context() (WithCancel,
// WithTimeout, AfterFunc) are cancelled when the client goes away, as r.Context() is; one
// whose cancel was called before is not touched (its AfterFunc stopped).
func TestServerCancelsDerivedContextsWithTheRequest(t *testing.T) {
	eachBackend(t, func(t *testing.T, backend string) {
		started, result := make(chan struct{}), make(chan string, 1)
		h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			child, cancel := context.WithCancel(r.Context())
			defer cancel()
			timed, cancelT := context.WithTimeout(r.Context(), time.Hour)
			defer cancelT()
			ran := make(chan struct{})
			context.AfterFunc(r.Context(), func() { close(ran) })
			early, cancelE := context.WithCancel(r.Context())
			cancelE()
			stopped := context.AfterFunc(r.Context(), func() { t.Error("a stopped AfterFunc ran") })
			if !stopped() {
				t.Error("stopping an AfterFunc before the cancel reported false")
			}
			close(started)
			for _, d := range []<-chan struct{}{child.Done(), timed.Done(), ran} {
				select {
				case <-d:
				case <-time.After(waitFor):
					result <- "a derived context was not cancelled with r.Context()"
					return
				}
			}
			result <- fmt.Sprintf("%v %v %v", child.Err(), timed.Err(), early.Err())
		})
		addr := serveRingev(t, backend, &http.Server{Handler: h})
		requestThenLeave(t, addr, started)
		if got, want := <-result, "context canceled context canceled context canceled"; got != want {
			t.Fatalf("got %q, want %q", got, want)
		}
	})
}

// requestThenLeave sends a GET to addr and closes the connection once the handler has started
// (started closed): a client that goes away during its request.
func requestThenLeave(t *testing.T, addr string, started <-chan struct{}) {
	t.Helper()
	c, err := net.DialTimeout("tcp", addr, waitFor)
	if err != nil {
		t.Fatal(err)
	}
	io.WriteString(c, "GET / HTTP/1.1\r\nHost: x\r\n\r\n")
	select {
	case <-started:
	case <-time.After(waitFor):
		t.Fatal("the handler did not start")
	}
	c.Close()
}
