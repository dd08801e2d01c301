//go:build linux

package nethttp

import (
	"bufio"
	"context"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/ringev/ringev/server"
)

// shutdownScene is a Server with two clients when its engine's context is cancelled: busy,
// whose request's handler runs until release is closed, and idle, a kept-alive connection
// that was answered once.
type shutdownScene struct {
	e            *server.Engine
	cancel       context.CancelFunc
	busy, idle   net.Conn
	busyR, idleR *bufio.Reader
	release      chan struct{}
	ctxDone      chan bool // what the handler saw of r.Context() when released
}

// newShutdownScene serves on backend with opts, the drain bound far above waitFor: what the
// tests see is the graceful shutdown's, not its bound's.
func newShutdownScene(t *testing.T, backend string, opts ...server.Option) *shutdownScene {
	t.Helper()
	sc := &shutdownScene{release: make(chan struct{}), ctxDone: make(chan bool, 1)}
	started := make(chan struct{})
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/slow" {
			io.WriteString(w, "quick")
			return
		}
		close(started)
		select {
		case <-sc.release:
		case <-r.Context().Done():
		case <-time.After(3 * waitFor):
		}
		sc.ctxDone <- r.Context().Err() != nil
		io.WriteString(w, "slow done")
	})
	ctx, cancel := context.WithCancel(context.Background())
	sc.cancel = cancel
	s := New(&http.Server{Handler: h})
	opts = append([]server.Option{server.WithBackend(backend), server.WithLoops(1), server.WithDrainTimeout(6 * waitFor)}, opts...)
	e, err := server.Listen(ctx, "tcp", "127.0.0.1:0", s, opts...)
	if err != nil {
		cancel()
		t.Fatal(err)
	}
	sc.e = e
	t.Cleanup(func() {
		cancel()
		select {
		case <-sc.release:
		default:
			close(sc.release)
		}
		e.Close()
		if err := e.Wait(); err != nil {
			t.Error(err)
		}
		s.Wait()
	})
	dial := func() (net.Conn, *bufio.Reader) {
		c, err := net.DialTimeout("tcp", e.Addr().String(), waitFor)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { c.Close() })
		c.SetDeadline(time.Now().Add(waitFor))
		return c, bufio.NewReader(c)
	}
	sc.idle, sc.idleR = dial()
	io.WriteString(sc.idle, "GET / HTTP/1.1\r\nHost: x\r\n\r\n")
	if resp, err := http.ReadResponse(sc.idleR, nil); err != nil {
		t.Fatal(err)
	} else {
		b, err := io.ReadAll(resp.Body)
		if string(b) != "quick" || err != nil {
			t.Fatalf("the idle connection's first response: %q, %v", b, err)
		}
	}
	sc.busy, sc.busyR = dial()
	io.WriteString(sc.busy, "GET /slow HTTP/1.1\r\nHost: x\r\n\r\n")
	select {
	case <-started:
	case <-time.After(waitFor):
		t.Fatal("the slow handler did not start")
	}
	return sc
}

// idleClosed waits until the idle connection reads EOF (the shutdown has reached the loop),
// and closes it.
func (sc *shutdownScene) idleClosed(t *testing.T) {
	t.Helper()
	b, err := io.ReadAll(sc.idleR)
	if len(b) != 0 || err != nil {
		t.Fatalf("the idle connection at shutdown: read %q, %v; want EOF", b, err)
	}
	sc.idle.Close() // the server's lingering close ends with it
}

// TestServeShutdownServesRequestInFlight: a request whose handler runs when the engine's
// context is cancelled is served to its end, as by net/http's Server.Shutdown: its
// r.Context() is not cancelled, its client gets the whole 200 (with "Connection: close", the
// shutdown having begun before the header), then EOF, and the engine ends.
func TestServeShutdownServesRequestInFlight(t *testing.T) {
	eachSetup(t, func(t *testing.T, backend string, opts ...server.Option) {
		sc := newShutdownScene(t, backend, opts...)
		sc.cancel()
		sc.idleClosed(t)
		close(sc.release)
		if <-sc.ctxDone {
			t.Error("r.Context() of the request in flight was cancelled by the shutdown")
		}
		resp, err := http.ReadResponse(sc.busyR, nil)
		if err != nil {
			t.Fatalf("the request in flight at shutdown got no response: %v", err)
		}
		b, err := io.ReadAll(resp.Body)
		if resp.StatusCode != 200 || string(b) != "slow done" || err != nil || !resp.Close {
			t.Errorf("the request in flight at shutdown: %d %q, %v, close %v; want 200 %q, close", resp.StatusCode, b, err, resp.Close, "slow done")
		}
		if rest, err := io.ReadAll(sc.busyR); len(rest) != 0 || err != nil {
			t.Errorf("after the response: %q, %v; want EOF", rest, err)
		}
		sc.busy.Close() // the server's lingering close ends with it
		select {
		case <-sc.e.Done():
		case <-time.After(waitFor):
			t.Error("the engine did not end once its last request was served")
		}
	})
}

// TestServeShutdownClosesIdleConnection: at the engine's graceful shutdown, a kept-alive
// connection with no request is closed while another's request is still in service, as
// net/http's Server.Shutdown closes its idle connections at once.
func TestServeShutdownClosesIdleConnection(t *testing.T) {
	eachSetup(t, func(t *testing.T, backend string, opts ...server.Option) {
		sc := newShutdownScene(t, backend, opts...)
		sc.cancel()
		sc.idleClosed(t)
		select {
		case <-sc.e.Done():
			t.Error("the engine ended with a request in service")
		default:
		}
		close(sc.release)
		<-sc.ctxDone
	})
}

// TestServeShutdownBoundCancelsHandlers: past the drain bound (server.WithDrainTimeout), a
// connection still serving a request is closed and its handler's r.Context() cancelled.
func TestServeShutdownBoundCancelsHandlers(t *testing.T) {
	eachBackend(t, func(t *testing.T, backend string) {
		sc := newShutdownScene(t, backend, server.WithDrainTimeout(50*time.Millisecond))
		sc.cancel()
		select {
		case done := <-sc.ctxDone:
			if !done {
				t.Error("the handler ended without its r.Context() cancelled")
			}
		case <-time.After(waitFor):
			t.Fatal("the drain bound did not cancel the handler's r.Context()")
		}
		b, _ := io.ReadAll(sc.busyR)
		if strings.Contains(string(b), "slow done") {
			t.Errorf("a response after the drain bound: %q", b)
		}
	})
}
