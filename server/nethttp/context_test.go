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

// TestReqCtxAfterFuncStopRemovesOnlyItsOwn: of three AfterFuncs, the first and the second
// stopped (the list's tail and middle), only the third runs at the cancel; the stops report
// true, and a stop after the cancel reports false.
func TestReqCtxAfterFuncStopRemovesOnlyItsOwn(t *testing.T) {
	c := &reqCtx{parent: context.Background()}
	ran := make(chan int, 3)
	var stops [3]func() bool
	for i := range stops {
		stops[i] = c.AfterFunc(func() { ran <- i })
	}
	if !stops[1]() || !stops[0]() {
		t.Fatal("stopping an AfterFunc before the cancel reported false")
	}
	c.cancel()
	select {
	case i := <-ran:
		if i != 2 {
			t.Fatalf("AfterFunc %d ran; want 2", i)
		}
	case <-time.After(waitFor):
		t.Fatal("the AfterFunc not stopped did not run")
	}
	if stops[2]() {
		t.Fatal("stopping an AfterFunc that ran reported true")
	}
	if c.Err() != context.Canceled {
		t.Fatalf("Err after cancel: %v", c.Err())
	}
	select {
	case i := <-ran:
		t.Fatalf("stopped AfterFunc %d ran", i)
	default:
	}
}
