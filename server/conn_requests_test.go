//go:build linux

package server

// Tests of the requests driver's receive buffers: a loop's group of large buffers where the
// kernel consumes them incrementally (IOU_PBUF_RING_INC, Linux 6.12), of small ones elsewhere
// (the emulation on epoll and poll, an older kernel), and input larger than a buffer or in
// many small pieces arriving whole and in order either way.

import (
	"fmt"
	"io"
	"strings"
	"sync"
	"testing"

	"github.com/ringev/ringev"
	"github.com/ringev/ringev/internal/testutil"
)

// withoutIncrementalBuffers makes the requests driver find buffer groups that are not
// consumed incrementally on every loop, as on a kernel before Linux 6.12, until the test ends.
func withoutIncrementalBuffers(t *testing.T) {
	old := groupIncremental
	groupIncremental = func(*ringev.Loop) bool { return false }
	t.Cleanup(func() { groupIncremental = old })
}

// recvGroup returns the receive group of srv's first loop (nil with RecvPerConn).
func recvGroup(srv *Engine) *ringev.BufferGroup {
	return srv.Loops()[0].drv.(*connReqs).group
}

// echoPattern sends n numbered bytes through the echo server srv (written from another
// goroutine while it reads) and checks they come back whole and in order.
func echoPattern(t *testing.T, srv *Engine, n int) {
	t.Helper()
	if err := echoStream(t, dial(t, srv), numbered(n, 1), false); err != nil {
		t.Fatal(err)
	}
}

// TestRecvGroupIsLargeWhereConsumedIncrementally: a loop's receive group has
// RecvLargeGroupBuffers buffers of RecvLargeBufferSize where the kernel consumes them
// incrementally, RecvGroupBuffers of RecvBufferSize where it does not (the emulation).
func TestRecvGroupIsLargeWhereConsumedIncrementally(t *testing.T) {
	eachBackendRequests(t, func(t *testing.T, s setup) {
		srv := startServer(t, srvConfig{Handler: echoServer(), Backend: s.backend, API: APIRequests})
		g := recvGroup(srv)
		if g == nil {
			t.Skipf("receiving %s: no buffer group", srv.Recv())
		}
		n, size := RecvGroupBuffers, RecvBufferSize
		if g.Incremental() {
			n, size = RecvLargeGroupBuffers, RecvLargeBufferSize
		} else if s.backend == "uring" {
			testutil.SkipUnlessKernel(t, 6, 12, "IOU_PBUF_RING_INC (incremental buffer consumption)")
		}
		if g.Len() != n || g.Size() != size {
			t.Errorf("group of %d buffers of %d bytes (incremental %v), want %d of %d", g.Len(), g.Size(), g.Incremental(), n, size)
		}
	})
}

// TestRecvMessageLargerThanABufferArrivesWhole: 3 large buffers and a byte more, echoed,
// come back whole and in order, on every backend and driver.
func TestRecvMessageLargerThanABufferArrivesWhole(t *testing.T) {
	eachSetup(t, func(t *testing.T, s setup) {
		srv := startServer(t, srvConfig{Handler: echoServer(), Backend: s.backend, API: s.api, Recv: s.recv})
		echoPattern(t, srv, 3*RecvLargeBufferSize+1)
	})
}

// TestRecvManySmallMessagesAreServedInOrder: 8 connections each send 500 short lines one at a
// time, answered one by one: with incremental consumption they share the group's large
// buffers, each completion its slice; every line comes back in order, on every backend and
// driver.
func TestRecvManySmallMessagesAreServedInOrder(t *testing.T) {
	eachSetup(t, func(t *testing.T, s setup) {
		srv := startServer(t, srvConfig{Handler: echoServer(), Backend: s.backend, API: s.api, Recv: s.recv})
		const conns, lines = 8, 500
		var wg sync.WaitGroup
		errs := make(chan error, conns)
		for k := range conns {
			c := dial(t, srv)
			wg.Go(func() {
				got := make([]byte, 64)
				for i := range lines {
					line := fmt.Sprintf("conn %d line %d\n", k, i)
					if _, err := io.WriteString(c, line); err != nil {
						errs <- fmt.Errorf("conn %d line %d: write %v", k, i, err)
						return
					}
					if _, err := io.ReadFull(c, got[:len(line)]); err != nil || string(got[:len(line)]) != line {
						errs <- fmt.Errorf("conn %d: got %q, %v; want %q", k, got[:len(line)], err, line)
						return
					}
				}
			})
		}
		wg.Wait()
		close(errs)
		for err := range errs {
			t.Error(err)
		}
	})
}

// TestRecvGroupFallsBackWithoutIncrementalBuffers: where the group's buffers are not consumed
// incrementally (a kernel before 6.12, played here), the loop receives into RecvGroupBuffers
// of RecvBufferSize, says so on uring with a log line naming IOU_PBUF_RING_INC, and a message
// larger than a buffer still arrives whole.
func TestRecvGroupFallsBackWithoutIncrementalBuffers(t *testing.T) {
	eachBackendRequests(t, func(t *testing.T, s setup) {
		withoutIncrementalBuffers(t)
		var mu sync.Mutex
		var logs []string
		srv := startServer(t, srvConfig{Handler: echoServer(), Backend: s.backend, API: APIRequests,
			Opts: []Option{WithLogf(func(format string, args ...any) {
				mu.Lock()
				logs = append(logs, fmt.Sprintf(format, args...))
				mu.Unlock()
			})}})
		g := recvGroup(srv)
		if g == nil {
			t.Skipf("receiving %s: no buffer group", srv.Recv())
		}
		if g.Len() != RecvGroupBuffers || g.Size() != RecvBufferSize {
			t.Errorf("group of %d buffers of %d bytes, want %d of %d", g.Len(), g.Size(), RecvGroupBuffers, RecvBufferSize)
		}
		mu.Lock()
		said := strings.Join(logs, "\n")
		mu.Unlock()
		if named := strings.Contains(said, "IOU_PBUF_RING_INC"); named != (s.backend == "uring") {
			t.Errorf("logs %q: a line naming IOU_PBUF_RING_INC: %v, want %v (only uring has the feature to miss)", said, named, s.backend == "uring")
		}
		echoPattern(t, srv, 3*RecvLargeBufferSize+1)
	})
}

// TestConnSendLongerThanARequestTakesGoesInParts: with the requests driver, output longer than one
// send request takes (maxSend, the kernel's MAX_RW_COUNT; made 64 KiB here) goes in sends of at
// most that, whole and in order: one Write of 1 MiB makes at least 16 sends. A single send of
// more than 0x7ffff000 bytes would overflow the 32 bits that count the send in flight.
func TestConnSendLongerThanARequestTakesGoesInParts(t *testing.T) {
	old := maxSend
	maxSend = 64 << 10
	t.Cleanup(func() { maxSend = old })
	eachBackendRequests(t, func(t *testing.T, s setup) {
		want := numbered(1<<20, 1)
		r := newRecorder()
		r.line = func(c *Conn, line string) {
			if _, err := c.Write(want); err != nil {
				panic(err)
			}
		}
		e := startEngine(t, r, s.opts()...)
		c := dialEngine(t, e)
		r.next(t)
		before := sendsMade(t, e)
		c.Write([]byte("go\n"))
		if got := readN(t, c, len(want)); got != string(want) {
			t.Fatalf("the 1 MiB written came back different (%d bytes)", len(got))
		}
		if n := sendsMade(t, e) - before; n < uint64(len(want)/maxSend) {
			t.Errorf("%d sends for one Write of %d bytes, want at least %d (sends of at most %d bytes)", n, len(want), len(want)/maxSend, maxSend)
		}
	})
}
