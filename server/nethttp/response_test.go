//go:build linux

package nethttp

import (
	"io"
	"net/http"
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
