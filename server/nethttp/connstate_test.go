//go:build linux

package nethttp

import (
	"io"
	"net"
	"net/http"
	"slices"
	"sync"
	"testing"
	"time"
)

// TestServerCallsConnState: ConnState is told of a connection's states as net/http tells it:
// new, active and idle for each request, closed at the end; hijacked for a hijacked one.
func TestServerCallsConnState(t *testing.T) {
	eachBackend(t, func(t *testing.T, backend string) {
		var mu sync.Mutex
		var states []http.ConnState
		closed := make(chan struct{}, 2)
		hook := func(c net.Conn, st http.ConnState) {
			mu.Lock()
			states = append(states, st)
			mu.Unlock()
			if st == http.StateClosed || st == http.StateHijacked {
				closed <- struct{}{}
			}
		}
		h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if r.URL.Path == "/hijack" {
				nc, _, err := w.(http.Hijacker).Hijack()
				if err == nil {
					nc.Close()
				}
				return
			}
			io.WriteString(w, "ok")
		})
		addr := serveRingev(t, backend, &http.Server{Handler: h, ConnState: hook})
		for _, tc := range []struct {
			raw  string
			want []http.ConnState
		}{
			{"GET / HTTP/1.1\r\nHost: x\r\n\r\nGET / HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n",
				[]http.ConnState{http.StateNew, http.StateActive, http.StateIdle, http.StateActive, http.StateClosed}},
			{"GET /hijack HTTP/1.1\r\nHost: x\r\n\r\n",
				[]http.ConnState{http.StateNew, http.StateActive, http.StateHijacked}},
		} {
			mu.Lock()
			states = nil
			mu.Unlock()
			if _, _, err := exchangeRaw(addr, tc.raw, waitFor); err != nil {
				t.Fatal(err)
			}
			select {
			case <-closed:
			case <-time.After(waitFor):
				t.Fatal("no StateClosed or StateHijacked")
			}
			mu.Lock()
			got := slices.Clone(states)
			mu.Unlock()
			if !slices.Equal(got, tc.want) {
				t.Errorf("%q: states %v, want %v", tc.raw, got, tc.want)
			}
		}
	})
}
