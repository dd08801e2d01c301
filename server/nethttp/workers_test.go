//go:build linux

package nethttp

import (
	"net/http"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/ringev/ringev/internal/testutil"
)

// TestWorkersEndWhenIdle: the goroutines kept for handlers end on their own once no request
// has come for them for a while (at most twice workerIdle), while the server still serves.
func TestWorkersEndWhenIdle(t *testing.T) {
	eachBackend(t, func(t *testing.T, backend string) {
		addr := serveRingev(t, backend, &http.Server{Handler: testHandler()})
		for range 3 {
			if _, _, err := exchangeRaw(addr, "GET /req HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n", waitFor); err != nil {
				t.Fatal(err)
			}
		}
		if workerGoroutines() == 0 {
			t.Fatal("no goroutine kept for handlers after the requests")
		}
		deadline := time.Now().Add(2*workerIdle + 5*time.Second)
		for workerGoroutines() > 0 {
			if time.Now().After(deadline) {
				t.Fatalf("%d goroutines kept for handlers still wait %v after the last request", workerGoroutines(), 2*workerIdle+5*time.Second)
			}
			time.Sleep(20 * time.Millisecond)
		}
	})
}

// workerGoroutines counts the goroutines in workers.work.
func workerGoroutines() int {
	buf := make([]byte, 1<<20)
	buf = buf[:runtime.Stack(buf, true)]
	n := 0
	for g := range strings.SplitSeq(string(buf), "\n\n") {
		if strings.Contains(g, "nethttp.(*workers).work(") {
			n++
		}
	}
	return n
}

// TestWorkersServeBehindABlockedHandler: of two requests queued at once, the second is served
// while the first one's handler waits for it (a goroutine is woken for what is left in the
// queue before a handler runs).
func TestWorkersServeBehindABlockedHandler(t *testing.T) {
	testutil.NoLeaks(t)
	a, b := &exchange{}, &exchange{}
	release := make(chan struct{})
	served := make(chan *exchange, 2)
	p := &workers{serve: func(x *exchange) {
		if x == a {
			select {
			case <-release:
			case <-time.After(waitFor):
			}
		} else {
			close(release)
		}
		served <- x
	}}
	defer p.stop()
	p.mu.Lock()
	p.queue = append(p.queue, a, b)
	p.serving += 2
	p.wakeLocked()
	for _, want := range []*exchange{b, a} {
		select {
		case x := <-served:
			if x != want {
				t.Fatal("the request behind the blocked handler was not served first")
			}
		case <-time.After(2 * waitFor):
			t.Fatal("the requests were not served")
		}
	}
}
