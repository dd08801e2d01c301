//go:build linux

package nethttp

import (
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
		select {
		case <-cancelled:
		case <-time.After(waitFor):
			t.Fatal("r.Context() was not cancelled when the client closed")
		}
	})
}
