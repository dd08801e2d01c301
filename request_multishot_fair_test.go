//go:build linux

package ringev_test

// Multishot recv fairness under buffer exhaustion: connections that share one small buffer
// group, all sending as fast as they can, each get their turn on every backend.

import (
	"errors"
	"fmt"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/ringev/ringev"
	"github.com/ringev/ringev/internal/testutil"
)

// fairRun is the shape of a sink run: early clients send from the start, late ones join at
// join, and the shares are taken over the window that ends the run at total.
type fairRun struct {
	early, late         int
	join, window, total time.Duration
	bufs, bufSize       int
}

// fairCase is the case: 3 clients, 5 more after 1 s, 5 s in all, shares over the last
// 3 s, one group of 16 buffers of 4 KiB. fairShort is the same at a fifth of the times, which
// the suite runs (a test of this shape costs both CPUs of a CI machine for its whole length);
// RINGEV_FAIR_FULL=1 runs fairCase instead.
var (
	fairCase  = fairRun{early: 3, late: 5, join: time.Second, window: 3 * time.Second, total: 5 * time.Second, bufs: 16, bufSize: 4096}
	fairShort = fairRun{early: 3, late: 5, join: 200 * time.Millisecond, window: 600 * time.Millisecond, total: time.Second, bufs: 16, bufSize: 4096}
)

// minShare is the least share of the fair share (the window's bytes over the clients) that
// every client must get.
const minShare = 0.25

// TestRequestMultishotFairUnderENOBUFS: a sink server on the loop (AcceptMultishot, one
// RecvMultishot per connection into one BufferGroup of 16 × 4 KiB, each buffer released in its
// callback) gives every client at least a quarter of the fair share while 8 clients flood it.
func TestRequestMultishotFairUnderENOBUFS(t *testing.T) {
	r := fairShort
	if os.Getenv("RINGEV_FAIR_FULL") == "1" {
		r = fairCase
	}
	eachBackend(t, ringev.Backends(), func(t *testing.T, backend string) {
		sinkFairness(t, backend, r)
	})
}

// sink is the server side of a fairness run: the loop's accepted connections and what each
// received.
type sink struct {
	t       *testing.T
	l       *ringev.Loop
	g       *ringev.BufferGroup
	conns   []int
	got     []int64 // bytes received, per connection (token)
	enobufs int
	ended   []bool // a connection's RecvMultishot had its last completion
	stop    bool   // the run is over: last completions are expected
}

func (s *sink) onAccept(c *ringev.Completion) {
	if c.Err != nil {
		if !s.stop {
			s.t.Errorf("AcceptMultishot: %v", c.Err)
		}
		return
	}
	tok := uint64(len(s.conns))
	s.conns = append(s.conns, c.N)
	s.got = append(s.got, 0)
	s.ended = append(s.ended, false)
	if _, err := s.l.RecvMultishot(c.N, s.g, 0, s.onRecv, tok); err != nil {
		s.t.Errorf("RecvMultishot on fd %d: %v", c.N, err)
	}
}

func (s *sink) onRecv(c *ringev.Completion) {
	switch {
	case c.Err == nil:
		s.got[c.Token] += int64(c.N)
	case errors.Is(c.Err, unix.ENOBUFS) && c.More:
		s.enobufs++
	case !s.stop:
		s.t.Errorf("connection %d: completion %+v", c.Token, *c)
	}
	c.ReleaseBuffer()
	if !c.More {
		s.ended[c.Token] = true
		if !s.stop {
			s.t.Errorf("connection %d: RecvMultishot ended during the run (N %d, err %v)", c.Token, c.N, c.Err)
		}
	}
}

// sinkFairness runs r on backend and checks that every client got at least minShare of the
// fair share over the window.
func sinkFairness(t *testing.T, backend string, r fairRun) {
	lfd, sa := testutil.Listener(t)
	l := newLoop(t, backend)
	for _, op := range []ringev.Op{ringev.OpAcceptMultishot, ringev.OpRecvMultishot} {
		if err := l.CheckOp(op); err != nil {
			requireOp(t, op) // skips where the kernel lacks the feature
			t.Fatalf("CheckOp(%v): %v", op, err)
		}
	}
	g, err := l.NewBufferGroup(r.bufs, r.bufSize)
	if err != nil {
		t.Fatal(err)
	}
	s := &sink{t: t, l: l, g: g}
	defer func() { // the loop first: it cancels the requests on the connections
		l.Close()
		for _, fd := range s.conns {
			unix.Close(fd)
		}
	}()
	if _, err := l.AcceptMultishot(lfd, unix.SOCK_NONBLOCK|unix.SOCK_CLOEXEC, s.onAccept, 0); err != nil {
		t.Fatal(err)
	}

	// The clients: blocking sockets, each sending zeros from its own goroutine until shut down.
	var wg sync.WaitGroup
	var clients []int
	var sent []*atomic.Int64
	start := func(n int) {
		for range n {
			fd := testutil.Dial(t, sa)
			clients = append(clients, fd)
			c := new(atomic.Int64)
			sent = append(sent, c)
			wg.Go(func() {
				buf := make([]byte, 64<<10)
				for {
					n, err := unix.SendmsgN(fd, buf, nil, nil, unix.MSG_NOSIGNAL)
					if err != nil {
						return
					}
					c.Add(int64(n))
				}
			})
		}
	}
	stopped := false
	stopClients := func() {
		if stopped {
			return
		}
		stopped = true
		for _, fd := range clients {
			unix.Shutdown(fd, unix.SHUT_RDWR) // a blocked send returns EPIPE
		}
		ended := make(chan struct{})
		go func() { wg.Wait(); close(ended) }()
		select {
		case <-ended:
		case <-time.After(deadline):
			t.Errorf("the clients' goroutines did not end within %v of shutdown(2)", deadline)
		}
	}
	defer stopClients()

	start(r.early)
	n := r.early + r.late
	began := time.Now()
	tick := func(*ringev.Timer) {} // wakes the loop at a boundary when it has nothing to do
	l.AddTimer(r.join, func(*ringev.Timer) { start(r.late) })
	l.AddTimer(r.total-r.window, tick)
	// The window begins at total-window, or later if a client is not yet accepted and receiving
	// then (a busy machine): every client must have had the whole window.
	untilFor(t, l, r.total+deadline, "every client accepted and receiving", func() bool {
		if time.Since(began) < r.total-r.window || len(s.got) < n {
			return false
		}
		for _, b := range s.got {
			if b == 0 {
				return false
			}
		}
		return true
	})
	late := time.Since(began) - (r.total - r.window)
	atFrom := append([]int64(nil), s.got...)
	from := time.Now()
	l.AddTimer(r.window, tick)
	untilFor(t, l, r.window+deadline, "the window's end", func() bool { return time.Since(from) >= r.window })
	s.stop = true
	stopClients()

	if len(s.got) != n {
		t.Fatalf("%d connections accepted, want %d", len(s.got), n)
	}
	var total int64
	win := make([]int64, n)
	for i := range win {
		win[i] = s.got[i] - atFrom[i]
		total += win[i]
	}
	if total == 0 {
		t.Fatal("no bytes received in the window")
	}
	fair := float64(total) / float64(n)
	var b strings.Builder
	worst := -1.0
	for i, w := range win {
		share := float64(w) / fair
		fmt.Fprintf(&b, " c%d %.2f", i, share)
		if worst < 0 || share < worst {
			worst = share
		}
	}
	t.Logf("%s: %d clients, %.1f MB/s in the last %v (begun %v late; %d ENOBUFS completions in all); share of fair per client:%s",
		backend, n, float64(total)/r.window.Seconds()/1e6, r.window, late.Round(time.Millisecond), s.enobufs, b.String())
	if worst < minShare {
		t.Errorf("a client got %.2f of the fair share over the last %v, want at least %.2f", worst, r.window, minShare)
	}
}

// TestRequestMultishotGoesOnAfterATurnFindsNoData: two RecvMultishots whose group (one buffer)
// ran dry take turns as buffers come back; a turn that finds its socket empty leaves its request
// waiting for data (it is not ended), and later data still arrives, in order, on every backend.
func TestRequestMultishotGoesOnAfterATurnFindsNoData(t *testing.T) {
	eachBackend(t, ringev.Backends(), func(t *testing.T, backend string) {
		a, aPeer := testutil.Socketpair(t)
		c, cPeer := testutil.Socketpair(t)
		l := newLoop(t, backend)
		if err := l.CheckOp(ringev.OpRecvMultishot); err != nil {
			requireOp(t, ringev.OpRecvMultishot) // skips where the kernel lacks the feature
			t.Fatalf("CheckOp: %v", err)
		}
		g, err := l.NewBufferGroup(1, 4)
		if err != nil {
			t.Fatal(err)
		}
		got := make([][]byte, 2)
		enobufs := make([]int, 2)
		var held []int
		ended := false
		cb := func(x *ringev.Completion) {
			switch {
			case !x.More:
				ended = true
				t.Errorf("request %d ended: %+v", x.Token, *x)
			case errors.Is(x.Err, unix.ENOBUFS):
				enobufs[x.Token]++
			case x.Err != nil:
				t.Errorf("completion %+v", *x)
			default:
				got[x.Token] = append(got[x.Token], x.Buf...)
				held = append(held, x.BufferID())
			}
		}
		n := func() int { return len(got[0]) + len(got[1]) }
		release := func() {
			for _, id := range held {
				g.Release(id)
			}
			held = held[:0]
		}
		must(t)(l.RecvMultishot(a, g, 0, cb, 0))
		must(t)(l.RecvMultishot(c, g, 0, cb, 1))
		testutil.Write(t, aPeer, []byte("abcd"))
		until(t, l, func() bool { return n() == 4 || ended }) // a holds the only buffer
		testutil.Write(t, aPeer, []byte("efgh"))
		testutil.Write(t, cPeer, []byte("1234"))
		until(t, l, func() bool { return enobufs[0] > 0 && enobufs[1] > 0 || ended }) // both wait
		// The first in the queue takes its 4 bytes and goes behind the other.
		release()
		until(t, l, func() bool { return n() == 8 || ended })
		release() // the other takes its 4 bytes: both sockets are empty now
		until(t, l, func() bool { return n() == 12 || ended })
		release()         // each turn finds its socket empty:
		untilWaited(t, l) // the wait's enter issues the turns (MSG_DONTWAIT) before the data below
		testutil.Write(t, aPeer, []byte("ij"))
		testutil.Write(t, cPeer, []byte("56"))
		until(t, l, func() bool { release(); return n() == 16 || ended })
		if string(got[0]) != "abcdefghij" || string(got[1]) != "123456" {
			t.Fatalf("received %q and %q, want %q and %q", got[0], got[1], "abcdefghij", "123456")
		}
	})
}
