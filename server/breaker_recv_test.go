//go:build linux

package server

// The breaker's tests of the requests driver's receive modes: long streams through the default
// multishot recv on every backend (in order, with backpressure cancelling and re-arming it),
// several loops, a fallback on some loops only, and a Start that fails on one of four loops.

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"net"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/ringev/ringev"
	"github.com/ringev/ringev/internal/testutil"
)

// numbered returns n bytes of little-endian uint32 counters starting at from: no 4-byte-aligned
// chunk repeats, so a stream whose buffers come back out of order, doubled or missing differs
// (a periodic pattern, such as TestEchoOverTCP's 16-byte one, hides a reordering of whole
// receive buffers).
func numbered(n int, from uint32) []byte {
	b := make([]byte, n+3)
	for i := 0; i < n; i += 4 {
		binary.LittleEndian.PutUint32(b[i:], from+uint32(i/4))
	}
	return b[:n]
}

// firstDiff describes where got first differs from want.
func firstDiff(got, want []byte) string {
	for i := range min(len(got), len(want)) {
		if got[i] != want[i] {
			return fmt.Sprintf("first difference at byte %d of %d", i, len(want))
		}
	}
	return fmt.Sprintf("got %d bytes, want %d", len(got), len(want))
}

// echoStream writes msg on c from another goroutine, with full first waits until c's receive
// window is zero (the server's output fills and it stops receiving), reads len(msg) bytes back
// and checks them.
func echoStream(t *testing.T, c net.Conn, msg []byte, full bool) error {
	werr := make(chan error, 1)
	go func() { werr <- writeAll(c, msg) }()
	if full {
		if err := testutil.AwaitZeroWindow(c.(*net.TCPConn), 10*time.Second); err != nil {
			return err
		}
	}
	got := make([]byte, len(msg))
	if err := readFull(c, got); err != nil {
		return fmt.Errorf("reading the echo of %d bytes: %w", len(msg), err)
	}
	if err := <-werr; err != nil {
		return fmt.Errorf("writing %d bytes: %w", len(msg), err)
	}
	if !bytes.Equal(got, msg) {
		return fmt.Errorf("echo of %d numbered bytes garbled: %s", len(msg), firstDiff(got, msg))
	}
	return nil
}

// TestEchoOfALongStreamThroughASlowReaderKeepsItsOrder: 4 MiB of numbered bytes sent at once to
// the echo server by a client that reads only after 200 ms (the output reaches OutputLimit, the
// multishot recv is cancelled and re-armed, many times) come back in order, on every backend,
// with each driver and the default Recv.
func TestEchoOfALongStreamThroughASlowReaderKeepsItsOrder(t *testing.T) {
	forEachBackend(t, func(t *testing.T, backend string) {
		for _, cfg := range append(drivers, srvConfig{API: APIRequests}) {
			t.Run(driverName(cfg), func(t *testing.T) {
				cfg.Backend, cfg.Handler = backend, echoServer()
				srv := startServer(t, cfg)
				c := dial(t, srv)
				if err := echoStream(t, c, numbered(4<<20, 1), true); err != nil {
					t.Fatal(err)
				}
			})
		}
	})
}

// TestFourLoopsEchoManyStreamsInOrder: 32 clients at once, each echoing 512 KiB of its own
// numbered bytes, through a server of four loops in the default Recv mode, all get their
// streams back in order, on every backend.
func TestFourLoopsEchoManyStreamsInOrder(t *testing.T) {
	forEachBackend(t, func(t *testing.T, backend string) {
		srv := startServer(t, srvConfig{Backend: backend, API: APIRequests, Loops: 4, Handler: echoServer()})
		var wg sync.WaitGroup
		errs := make(chan error, 32)
		for i := range 32 {
			c := dial(t, srv)
			wg.Go(func() {
				if err := echoStream(t, c, numbered(512<<10, uint32(i)<<24), i%4 != 0); err != nil {
					errs <- fmt.Errorf("client %d: %w", i, err)
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

// recvCheckFailing makes recvMultishotCheck fail with err on the calls (counted from 0, over
// every loop) for which fail says so, and succeed as the loop's own check otherwise, until the
// test ends. It returns the number of calls made.
func recvCheckFailing(t *testing.T, err error, fail func(call int64) bool) *atomic.Int64 {
	old := recvMultishotCheck
	var calls atomic.Int64
	recvMultishotCheck = func(l *ringev.Loop) error {
		if fail(calls.Add(1) - 1) {
			return err
		}
		return old(l)
	}
	t.Cleanup(func() { recvMultishotCheck = old })
	return &calls
}

// errNoRecvMultishot is the error of a kernel without the multishot recv, as the loop words it.
var errNoRecvMultishot = fmt.Errorf("ringev: recv-multishot: needs IORING_RECV_MULTISHOT with provided buffer rings (Linux 6.0), which this kernel lacks: %w", unix.EOPNOTSUPP)

// TestFallbackOnSomeLoopsOnlyServesEveryConnection: with no receive mode named and four loops of
// which two lack the multishot recv, Listen succeeds, logs one line per loop that fell back, and
// 64 connections (spread over the loops by SO_REUSEPORT) each get their numbered stream back.
func TestFallbackOnSomeLoopsOnlyServesEveryConnection(t *testing.T) {
	calls := recvCheckFailing(t, errNoRecvMultishot, func(call int64) bool { return call%2 == 1 })
	var mu sync.Mutex
	var logs []string
	cfg := srvConfig{Handler: echoServer(), API: APIRequests, Loops: 4,
		Opts: []Option{WithLogf(func(format string, args ...any) {
			mu.Lock()
			logs = append(logs, fmt.Sprintf(format, args...))
			mu.Unlock()
		})}}
	srv, err := listenServer(t, cfg)
	if err != nil {
		t.Fatalf("Listen with two of four loops lacking the multishot recv: %v", err)
	}
	t.Cleanup(func() { stopServer(t, srv) })
	if n := calls.Load(); n != 4 {
		t.Fatalf("recvMultishotCheck called %d times, want once per loop (4)", n)
	}
	mu.Lock()
	said := strings.Join(logs, "\n")
	mu.Unlock()
	if n := strings.Count(said, "receiving "+RecvPerConn+" instead"); n != 2 {
		t.Errorf("logs %q: %d fallback lines, want 2 (one per loop that fell back)", said, n)
	}
	if r := srv.Recv(); r != RecvMultishot && r != RecvPerConn {
		t.Errorf("Recv() = %q, want one of the two modes", r)
	}
	var wg sync.WaitGroup
	errs := make(chan error, 64)
	for i := range 64 {
		c := dial(t, srv)
		wg.Go(func() {
			if err := echoStream(t, c, numbered(64<<10, uint32(i)<<24), false); err != nil {
				errs <- fmt.Errorf("client %d: %w", i, err)
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
}

// TestListenFailingOnOneOfFourLoopsLeavesNothingBehind: when one loop of four cannot start its
// driver (the multishot recv's check failing, with WithRecv(RecvMultishot)), Listen returns
// that error, and no fd (listening sockets, rings, eventfds) and no goroutine of the engine is
// left, the loops that had started included.
func TestListenFailingOnOneOfFourLoopsLeavesNothingBehind(t *testing.T) {
	errOdd := fmt.Errorf("a loop's own trouble: %w", unix.EPERM)
	for _, backend := range []string{"auto", "epoll"} {
		t.Run(backend, func(t *testing.T) {
			recvCheckFailing(t, errOdd, func(call int64) bool { return call == 2 })
			runtime.GC()
			before, goroutines := fdCount(t), runtime.NumGoroutine()
			// Recv named: the default would fall back to per-conn on any error instead
			srv, err := listenServer(t, srvConfig{Backend: backend, Handler: echoServer(), API: APIRequests, Recv: RecvMultishot, Loops: 4})
			if err == nil {
				stopServer(t, srv)
				t.Fatal("Listen succeeded with one loop's driver failing")
			}
			if !errors.Is(err, unix.EPERM) {
				t.Errorf("Listen: %v, want the failing loop's error (EPERM)", err)
			}
			if n := fdCount(t); n != before {
				t.Errorf("%d fds open after the failed Listen, %d before", n, before)
			}
			deadline := time.Now().Add(5 * time.Second)
			for runtime.NumGoroutine() > goroutines && time.Now().Before(deadline) {
				time.Sleep(time.Millisecond)
			}
			if n := runtime.NumGoroutine(); n > goroutines {
				t.Errorf("%d goroutines after the failed Listen, %d before", n, goroutines)
			}
		})
	}
}

// TestMultishotRecvUnderResetsMidStreamLeavesNoConnection: clients that send half of a long
// stream and reset while the server's output is full (its multishot recv cancelled for
// backpressure, sends in flight) leave no connection, and a client after them is served; on
// every backend with the default Recv.
func TestMultishotRecvUnderResetsMidStreamLeavesNoConnection(t *testing.T) {
	forEachBackend(t, func(t *testing.T, backend string) {
		srv := startServer(t, srvConfig{Backend: backend, API: APIRequests, Handler: echoServer()})
		for i := range 20 {
			c := dial(t, srv)
			tc := c.(*net.TCPConn)
			tc.SetWriteDeadline(time.Now().Add(300 * time.Millisecond))
			tc.Write(numbered(2<<20, uint32(i))) // times out once the server stops reading
			tc.SetLinger(0)
			tc.Close()
		}
		waitConns(t, srv, 0)
		c := dial(t, srv)
		if err := echoStream(t, c, numbered(1<<20, 7), false); err != nil {
			t.Fatal(err)
		}
	})
}
