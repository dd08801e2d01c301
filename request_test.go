package ringev_test

import (
	"errors"
	"math/rand"
	"runtime"
	"testing"
	"time"

	"go.uber.org/goleak"
	"golang.org/x/sys/unix"

	"github.com/ringev/ringev"
	"github.com/ringev/ringev/internal/testutil"
	"github.com/ringev/ringev/uring"
)

// forEachBackend runs fn on every backend New can create here (skipping the others with
// New's error, which names what is missing).
func forEachBackend(t *testing.T, fn func(t *testing.T, backend string)) {
	for _, backend := range ringev.Backends() {
		t.Run(backend, func(t *testing.T) {
			l, err := ringev.New(ringev.WithBackend(backend))
			requireNew(t, backend, err)
			l.Close()
			fn(t, backend)
		})
	}
}

// echoConn is a request user as the docs advise: one Callback (a method value) made per
// connection, reused for every request.
type echoConn struct {
	l          *ringev.Loop
	a, b       int
	buf        []byte
	msg        []byte
	cb         ringev.Callback
	sent, recv int
	err        error
}

func (c *echoConn) onDone(x *ringev.Completion) {
	if x.Err != nil {
		c.err = x.Err
		return
	}
	switch x.Token {
	case 1:
		c.sent++
	case 2:
		c.recv++
	}
}

// round sends one message from a to b and receives it, through requests.
func (c *echoConn) round() {
	sent, recv := c.sent, c.recv
	if _, err := c.l.Send(c.a, c.msg, 0, c.cb, 1); err != nil {
		c.err = err
		return
	}
	if _, err := c.l.Recv(c.b, c.buf, 0, c.cb, 2); err != nil {
		c.err = err
		return
	}
	for i := 0; i < 1000 && (c.sent == sent || c.recv == recv) && c.err == nil; i++ {
		if err := c.l.Once(); err != nil {
			c.err = err
		}
	}
}

// TestRequestZeroAllocsPerRequest: a send and a recv made, completed and called back, in
// steady state, allocate nothing on any backend.
func TestRequestZeroAllocsPerRequest(t *testing.T) {
	forEachBackend(t, func(t *testing.T, backend string) {
		a, b := testutil.Socketpair(t)
		l := newLoop(t, backend)
		c := &echoConn{l: l, a: a, b: b, buf: make([]byte, 64), msg: []byte("ping")}
		c.cb = c.onDone
		for i := 0; i < 100; i++ { // warm up: records, queues, the fd event of the emulation
			c.round()
		}
		allocs := testing.AllocsPerRun(1000, c.round)
		if c.err != nil {
			t.Fatal(c.err)
		}
		if c.sent < 1100 || c.recv < 1100 {
			t.Fatalf("%d sends, %d recvs completed", c.sent, c.recv)
		}
		t.Logf("%s: %.2f allocations per send+recv round", backend, allocs)
		if allocs != 0 {
			t.Fatalf("%.2f allocations per send+recv round, want 0", allocs)
		}
	})
}

// TestRequestZeroAllocsWithDeadline: a recv with a deadline (the everyday idle-connection
// recv) allocates nothing either.
func TestRequestZeroAllocsWithDeadline(t *testing.T) {
	forEachBackend(t, func(t *testing.T, backend string) {
		a, b := testutil.Socketpair(t)
		l := newLoop(t, backend)
		c := &echoConn{l: l, a: a, b: b, buf: make([]byte, 64), msg: []byte("ping")}
		c.cb = c.onDone
		round := func() {
			recv := c.recv
			h, err := l.Recv(b, c.buf, 0, c.cb, 2)
			if err == nil {
				err = h.SetTimeout(30 * time.Second)
			}
			if err == nil {
				_, err = unix.Write(a, c.msg)
			}
			for i := 0; i < 1000 && c.recv == recv && err == nil && c.err == nil; i++ {
				err = l.Once()
			}
			if err != nil {
				c.err = err
			}
		}
		for i := 0; i < 100; i++ {
			round()
		}
		allocs := testing.AllocsPerRun(1000, round)
		if c.err != nil {
			t.Fatal(c.err)
		}
		if allocs != 0 {
			t.Fatalf("%.2f allocations per recv with a deadline, want 0", allocs)
		}
	})
}

// TestRequestSubmitSQE: an SQE prepared with package uring runs as a request on uring; the
// other backends refuse it with ErrNeedsUring, naming themselves.
func TestRequestSubmitSQE(t *testing.T) {
	forEachBackend(t, func(t *testing.T, backend string) {
		l := newLoop(t, backend)
		var rec recorder
		var sqe uring.SQE
		sqe.PrepNop()
		_, err := l.SubmitSQE(&sqe, nil, rec.cb, 9)
		if backend != "uring" {
			if !errors.Is(err, ringev.ErrNeedsUring) || !contains(err.Error(), backend) {
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

func contains(s, sub string) bool {
	for i := 0; i+len(sub) <= len(s); i++ {
		if s[i:i+len(sub)] == sub {
			return true
		}
	}
	return false
}

// TestRequestFullSQIsSubmittedNotRefused: more requests in one Once than the SQ has entries
// (64) all reach the kernel and complete.
func TestRequestFullSQIsSubmittedNotRefused(t *testing.T) {
	forEachBackend(t, func(t *testing.T, backend string) {
		r, w := testutil.Pipe(t)
		l := newLoop(t, backend)
		var rec recorder
		const n = 300
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
	forEachBackend(t, func(t *testing.T, backend string) {
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
		l.AddTimer(5*time.Millisecond, func(*ringev.Timer) {})
		testutil.Once(t, l, deadline)
		testutil.Write(t, w, make([]byte, n))
		until(t, l, func() bool { return count >= n })
		for i, k := range seen {
			if k != 1 {
				t.Fatalf("request %d: %d callbacks", i, k)
			}
		}
	})
}

// TestRequestRawCloseWithRequestInFlight shows what a plain close(2) of an fd with a request
// in flight does: on uring the kernel keeps the file (the peer sees no EOF) until the request
// is cancelled; CloseFd is what to do instead (the peer sees EOF at once).
func TestRequestRawCloseWithRequestInFlight(t *testing.T) {
	forEachBackend(t, func(t *testing.T, backend string) {
		a, b := testutil.Socketpair(t)
		conn, err := unix.Dup(a)
		if err != nil {
			t.Fatal(err)
		}
		unix.Close(a)
		l := newLoop(t, backend)
		var rec recorder
		h := must(t)(l.Recv(conn, make([]byte, 8), 0, rec.cb, 0))
		l.AddTimer(time.Millisecond, func(*ringev.Timer) {})
		testutil.Once(t, l, deadline) // in the kernel (uring) or waiting (emulation)
		unix.Close(conn)              // behind the loop's back
		pfd := []unix.PollFd{{Fd: int32(b), Events: unix.POLLIN}}
		n, _ := unix.Poll(pfd, 50)
		switch backend {
		case "uring":
			if n != 0 {
				t.Fatalf("uring: the peer saw EOF after a raw close with a recv in flight; the kernel was expected to hold the file")
			}
		case "uring-poll":
			// Not close-safe by design (WithBackend): its POLL_ADD holds the file too.
		default:
			if n == 0 {
				t.Fatalf("%s: the emulation holds no file reference, yet the peer saw no EOF", backend)
			}
		}
		// The request is still pending (it watches a closed fd). What to do after the fact:
		// cancel it; on uring the file goes with it. (Before the fact: CloseFd.)
		h.Cancel()
		until(t, l, func() bool { return rec.n() > 0 })
		if c := rec.last(t); rec.n() != 1 || !errors.Is(c.Err, unix.ECANCELED) {
			t.Fatalf("after Cancel: %d completions, last %+v", rec.n(), c)
		}
		if backend == "uring" {
			peerSeesEOF(t, b, 100*time.Millisecond)
		}
	})
}

// TestRequestRandomized makes many random requests, cancels and closes on random sockets and
// checks that every request's last callback runs exactly once, that no callback follows it,
// and that no fd or goroutine is left.
func TestRequestRandomized(t *testing.T) {
	defer goleak.VerifyNone(t, goleak.IgnoreCurrent())
	forEachBackend(t, func(t *testing.T, backend string) {
		fds0 := len(openFds(t))
		func() {
			l := newLoopNoCleanup(t, backend)
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

func newLoopNoCleanup(t *testing.T, backend string) *ringev.Loop {
	l, err := ringev.New(ringev.WithBackend(backend))
	requireNew(t, backend, err)
	return l
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
