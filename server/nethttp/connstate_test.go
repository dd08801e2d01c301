//go:build linux

package nethttp

import (
	"errors"
	"io"
	"net"
	"net/http"
	"slices"
	"strings"
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

// stateLog keeps the ConnState calls of a server's connections, by the client's address.
type stateLog struct {
	mu     sync.Mutex
	states map[string][]http.ConnState
	ended  map[string]chan struct{}
}

func newStateLog() *stateLog {
	return &stateLog{states: map[string][]http.ConnState{}, ended: map[string]chan struct{}{}}
}

// endOf returns the channel closed at the connection's last state (closed or hijacked).
func (l *stateLog) endOf(client string) chan struct{} {
	ch := l.ended[client]
	if ch == nil {
		ch = make(chan struct{})
		l.ended[client] = ch
	}
	return ch
}

// hook is the servers' ConnState.
func (l *stateLog) hook(c net.Conn, st http.ConnState) {
	client := c.RemoteAddr().String()
	l.mu.Lock()
	defer l.mu.Unlock()
	l.states[client] = append(l.states[client], st)
	if st == http.StateClosed || st == http.StateHijacked {
		close(l.endOf(client))
	}
}

// of waits for the last state of the client's connection and returns its states.
func (l *stateLog) of(client string) ([]http.ConnState, error) {
	l.mu.Lock()
	ch := l.endOf(client)
	l.mu.Unlock()
	select {
	case <-ch:
	case <-time.After(waitFor):
		return nil, errors.New("no StateClosed")
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	return slices.Clone(l.states[client]), nil
}

// statesOf sends raw to addr (then the client's EOF, if eof), reads until the server closes,
// and returns the ConnState calls the server's log saw for the connection.
func statesOf(addr string, log *stateLog, raw string, eof bool) ([]http.ConnState, error) {
	c, err := net.DialTimeout("tcp", addr, waitFor)
	if err != nil {
		return nil, err
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(waitFor))
	if _, err := io.WriteString(c, raw); err != nil {
		return nil, err
	}
	if eof {
		c.(*net.TCPConn).CloseWrite()
	}
	if _, err := io.Copy(io.Discard, c); err != nil && !strings.Contains(err.Error(), "reset") {
		return nil, err
	}
	return log.of(c.LocalAddr().String())
}

// TestServerCallsConnStateAsNetHTTP: a connection whose request head cannot be read (cut by
// ReadHeaderTimeout or by the client's EOF, too large, malformed) goes through net/http's
// ConnState states: active once bytes of the head were read (on a kept-alive connection, once
// more were read after the 4 bytes it waits for), then closed.
func TestServerCallsConnStateAsNetHTTP(t *testing.T) {
	const d = 200 * time.Millisecond
	type input struct {
		name, raw string
		eof       bool
	}
	var inputs []input
	for _, cut := range cutHeads {
		if !cut.waits {
			inputs = append(inputs, input{"cut " + cut.name, cut.raw, false})
		}
	}
	big := "GET / HTTP/1.1\r\nHost: x\r\nX-Big: " + strings.Repeat("a", 5000) + "\r\n\r\n"
	inputs = append(inputs,
		input{"a head cut by the EOF", "GET / HTTP/1.1\r\nHost: x\r\nX-Sl", true},
		input{"a second head cut by the EOF", "GET / HTTP/1.1\r\nHost: x\r\n\r\nGET / HTTP/1.1\r\nX-Sl", true},
		input{"3 bytes of a second head and the EOF", "GET / HTTP/1.1\r\nHost: x\r\n\r\nGET", true},
		input{"only the EOF", "", true},
		input{"a head too large", big, false},
		input{"a malformed head", "GARBAGE\r\n\r\n", false},
		input{"a malformed second head", "GET / HTTP/1.1\r\nHost: x\r\n\r\nGARBAGE\r\n\r\n", false},
	)
	eachBackend(t, func(t *testing.T, backend string) {
		refLog, gotLog := newStateLog(), newStateLog()
		cfg := func(l *stateLog) *http.Server {
			return &http.Server{Handler: testHandler(), ReadHeaderTimeout: d, MaxHeaderBytes: 1, ConnState: l.hook}
		}
		ref, got := serveNetHTTP(t, cfg(refLog)), serveRingev(t, backend, cfg(gotLog))
		var wg sync.WaitGroup
		for _, in := range inputs {
			wg.Add(1)
			go func() {
				defer wg.Done()
				want, err := statesOf(ref, refLog, in.raw, in.eof)
				if err != nil {
					t.Errorf("%s: net/http: %v", in.name, err)
					return
				}
				have, err := statesOf(got, gotLog, in.raw, in.eof)
				if err != nil {
					t.Errorf("%s: ringev: %v", in.name, err)
					return
				}
				if !slices.Equal(want, have) {
					t.Errorf("%s (%.80q): states %v, net/http's %v", in.name, in.raw, have, want)
				}
			}()
		}
		wg.Wait()
	})
}
