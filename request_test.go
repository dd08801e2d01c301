//go:build linux

package ringev_test

import (
	"errors"
	"math/rand"
	"runtime"
	"strings"
	"testing"
	"time"

	"go.uber.org/goleak"
	"golang.org/x/sys/unix"

	"github.com/ringev/ringev"
	"github.com/ringev/ringev/internal/testutil"
	"github.com/ringev/ringev/uring"
)

// TestRequestSubmitSQE: an SQE prepared with package uring runs as a request on uring; the
// other backends refuse it with ErrNeedsUring, naming themselves.
func TestRequestSubmitSQE(t *testing.T) {
	eachBackend(t, ringev.Backends(), func(t *testing.T, backend string) {
		l := newLoop(t, backend)
		var rec recorder
		var sqe uring.SQE
		sqe.PrepNop()
		_, err := l.SubmitSQE(&sqe, nil, rec.cb, 9)
		if backend != "uring" {
			if !errors.Is(err, ringev.ErrNeedsUring) || !strings.Contains(err.Error(), backend) {
				t.Fatalf("SubmitSQE on %s: %v, want ErrNeedsUring naming the backend", backend, err)
			}
			return
		}
		if err != nil {
			t.Fatal(err)
		}
		until(t, l, func() bool { return rec.n() > 0 })
		if c := rec.last(t); rec.n() != 1 || c.Err != nil || c.N != 0 || c.Token != 9 || c.Op != ringev.OpSQE {
			t.Fatalf("%d completions, last %+v", rec.n(), c)
		}
	})
}

// TestRequestFullSQIsSubmittedNotRefused: more requests in one Once than the SQ has entries
// (256) all reach the kernel and complete.
func TestRequestFullSQIsSubmittedNotRefused(t *testing.T) {
	eachBackend(t, ringev.Backends(), func(t *testing.T, backend string) {
		r, w := testutil.Pipe(t)
		l := newLoop(t, backend)
		var rec recorder
		const n = 600 // the SQ has 256 entries
		for i := 0; i < n; i++ {
			must(t)(l.Write(w, []byte("x"), -1, rec.cb, uint64(i)))
		}
		until(t, l, func() bool { return rec.n() == n })
		for i, c := range rec.got {
			if c.Err != nil || c.N != 1 || c.Token != uint64(i) {
				t.Fatalf("completion %d: %+v", i, c)
			}
		}
		if got := testutil.Drain(t, r); got != n {
			t.Fatalf("pipe holds %d bytes, want %d", got, n)
		}
	})
}

// TestRequestCQOverflowLosesNothing: more completions at once than the CQ has entries (1024)
// all arrive, each once.
func TestRequestCQOverflowLosesNothing(t *testing.T) {
	eachBackend(t, ringev.Backends(), func(t *testing.T, backend string) {
		const n = 3000
		r, w := testutil.Pipe(t)
		if _, err := unix.FcntlInt(uintptr(w), unix.F_SETPIPE_SZ, 1<<20); err != nil {
			t.Fatal(err)
		}
		l := newLoop(t, backend)
		seen := make([]int, n)
		count := 0
		cb := func(c *ringev.Completion) {
			if c.Err != nil {
				t.Errorf("completion %d: %v", c.Token, c.Err)
			}
			seen[c.Token]++
			count++
		}
		buf := make([]byte, n)
		for i := 0; i < n; i++ {
			must(t)(l.Read(r, buf[i:i+1], -1, cb, uint64(i)))
		}
		// Let all reads reach the kernel, then complete them together.
		onceWithin(t, l, 5*time.Millisecond)
		testutil.Write(t, w, make([]byte, n))
		until(t, l, func() bool { return count >= n })
		for i, k := range seen {
			if k != 1 {
				t.Fatalf("request %d: %d callbacks", i, k)
			}
		}
	})
}

// TestRequestRandomized makes many random requests, cancels and closes on random sockets and
// checks that every request's last callback runs exactly once, that no callback follows it,
// and that no fd or goroutine is left.
func TestRequestRandomized(t *testing.T) {
	defer goleak.VerifyNone(t, goleak.IgnoreCurrent())
	eachBackend(t, ringev.Backends(), func(t *testing.T, backend string) {
		fds0 := len(openFds(t))
		func() {
			l := newLoop(t, backend)
			defer l.Close()
			n := 100000 // issue 12's figure
			if testing.Short() {
				n = 10000
			}
			randomRequests(t, l, n)
		}()
		runtime.GC()
		if n := len(openFds(t)); n != fds0 {
			t.Fatalf("%d fds open after the test, %d before", n, fds0)
		}
	})
}

// randomRequests is TestRequestRandomized's body.
func randomRequests(t *testing.T, l *ringev.Loop, n int) {
	rng := rand.New(rand.NewSource(1))
	type pair struct{ a, b int }
	var socks []pair
	newPair := func() pair {
		fds, err := unix.Socketpair(unix.AF_UNIX, unix.SOCK_STREAM|unix.SOCK_NONBLOCK|unix.SOCK_CLOEXEC, 0)
		if err != nil {
			t.Fatal(err)
		}
		return pair{fds[0], fds[1]}
	}
	for i := 0; i < 8; i++ {
		socks = append(socks, newPair())
	}
	type state struct {
		h     ringev.Request
		last  bool // the last callback ran
		calls int
	}
	reqs := make([]state, 0, n)
	bad := 0
	cb := func(c *ringev.Completion) {
		s := &reqs[c.Token]
		s.calls++
		if s.last {
			bad++
			t.Errorf("request %d: a callback after its last", c.Token)
		}
		if !c.More {
			s.last = true
		}
	}
	closing := 0
	onClose := func(c *ringev.Completion) {
		closing--
		if c.Err != nil {
			t.Errorf("CloseFd: %v", c.Err)
		}
	}
	bufs := make([][]byte, 64)
	for i := range bufs {
		bufs[i] = make([]byte, 32)
	}
	made := 0
	for made < n && bad == 0 {
		p := &socks[rng.Intn(len(socks))]
		tok := uint64(len(reqs))
		var h ringev.Request
		var err error
		switch k := rng.Intn(10); {
		case k < 4:
			h, err = l.Recv(p.a, bufs[rng.Intn(len(bufs))], 0, cb, tok)
		case k < 6:
			h, err = l.Send(p.b, []byte("hello"), 0, cb, tok)
		case k < 7:
			h, err = l.Send(p.a, []byte("back"), 0, cb, tok)
		case k < 8 && len(reqs) > 0:
			reqs[rng.Intn(len(reqs))].h.Cancel()
			continue
		case k < 9:
			h, err = l.Recv(p.b, bufs[rng.Intn(len(bufs))], 0, cb, tok)
			if err == nil && rng.Intn(2) == 0 {
				h.SetTimeout(time.Duration(rng.Intn(3)) * time.Millisecond)
			}
		default:
			if rng.Intn(4) == 0 {
				closing += 2
				if _, err := l.CloseFd(p.a, onClose, 0); err != nil {
					t.Fatal(err)
				}
				if _, err := l.CloseFd(p.b, onClose, 0); err != nil {
					t.Fatal(err)
				}
				*p = newPair()
			}
			continue
		}
		if err != nil {
			t.Fatalf("request %d: %v", tok, err)
		}
		reqs = append(reqs, state{h: h})
		made++
		if rng.Intn(4) == 0 {
			for j := rng.Intn(4); j >= 0; j-- {
				l.AddTimer(0, func(*ringev.Timer) {}) // so that no Once waits for long
				testutil.Once(t, l, deadline)
			}
		}
	}
	// End: cancel what is left by closing every socket through the loop.
	for _, p := range socks {
		closing += 2
		l.CloseFd(p.a, onClose, 0)
		l.CloseFd(p.b, onClose, 0)
	}
	left := func() bool {
		if closing > 0 {
			return false
		}
		for i := range reqs {
			if !reqs[i].last {
				return false
			}
		}
		return true
	}
	until(t, l, left)
	for i, s := range reqs {
		if s.calls != 1 {
			t.Fatalf("request %d: %d callbacks", i, s.calls)
		}
	}
	// Nothing more comes: the loop has nothing left to wait for.
	if err := testutil.OnceErr(t, l, deadline); !errors.Is(err, ringev.ErrNothingToDo) {
		t.Fatalf("Once after the last completion: %v, want ErrNothingToDo", err)
	}
}

// TestRequestCompletesWhileHandlersRideTheRing: a handler's Loop.ReadNonblocking, which on
// uring reaps the ring's CQEs itself (rideIO), hands the requests' CQEs over: every request
// still completes, once.
func TestRequestCompletesWhileHandlersRideTheRing(t *testing.T) {
	eachBackend(t, ringev.Backends(), func(t *testing.T, backend string) {
		pr, pw := testutil.Pipe(t)
		r, w := testutil.Pipe(t)
		l := newLoop(t, backend)
		var rbuf [1]byte
		reads := 0
		addFd(t, l, pr, ringev.Read, func(ev *ringev.FdEvent, _ ringev.Flags) {
			if n, _ := l.ReadNonblocking(pr, rbuf[:]); n == 1 {
				reads++
				l.WriteNonblocking(pw, rbuf[:]) // keep the fd event busy
			}
		})
		addFd(t, l, pw, ringev.Write, func(ev *ringev.FdEvent, _ ringev.Flags) {
			l.WriteNonblocking(pw, []byte{1})
			ev.SetFlags(0)
		})
		const n = 200
		done := make([]int, n)
		count := 0
		buf := make([]byte, n)
		cb := func(c *ringev.Completion) {
			if c.Err != nil || c.N != 1 {
				t.Errorf("request %d: %+v", c.Token, c)
			}
			done[c.Token]++
			count++
		}
		for i := 0; i < n; i++ {
			must(t)(l.Read(r, buf[i:i+1], -1, cb, uint64(i)))
		}
		for i := 0; i < n; i++ {
			testutil.Write(t, w, []byte{byte(i)})
			if i%20 == 0 {
				testutil.Once(t, l, deadline)
			}
		}
		until(t, l, func() bool { return count == n })
		for i, k := range done {
			if k != 1 {
				t.Fatalf("request %d: %d callbacks", i, k)
			}
		}
		if reads == 0 {
			t.Fatal("the riding handler never ran")
		}
	})
}
