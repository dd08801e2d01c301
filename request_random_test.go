//go:build linux

package ringev_test

// Tests with random mixes of requests, cancels, deadlines, CloseFds and registration changes:
// every request ends once, and no byte is lost.

import (
	"errors"
	"math/rand"
	"os"
	"runtime"
	"strconv"
	"testing"
	"time"

	"github.com/ringev/ringev"
	"go.uber.org/goleak"
	"golang.org/x/sys/unix"
)

// TestRequestRandomOps makes many random requests, cancels and closes on random sockets and
// checks that every request's last callback runs exactly once, that no callback follows it,
// and that no fd or goroutine is left.
func TestRequestRandomOps(t *testing.T) {
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

// randomRequests is TestRequestRandomOps's body.
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
				once(t, l)
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
	if err := onceErr(t, l); !errors.Is(err, ringev.ErrNothingToDo) {
		t.Fatalf("Once after the last completion: %v, want ErrNothingToDo", err)
	}
}

// TestRequestRandomOpsInCallbacksConserveBytes: 100,000 random operations on uring (fewer with
// -short), half of them made inside callbacks (so many SQEs are prepared at the call and
// cancelled, re-timed or closed before the enter): Sends on one end of socketpairs, Recvs and
// RecvMultishots (provided buffers) on the other, Cancels, SetTimeouts right after the call,
// later, removed and set again, and CloseFd with a fresh pair. Every request gets exactly one
// last callback (More only on a multishot's earlier ones), and on every pair still open at the
// end the bytes sent equal the bytes received plus those left in the socket: no SQE turned
// into a NOP moved data, and no cancelled request lost what it read. No fd or goroutine leaks.
func TestRequestRandomOpsInCallbacksConserveBytes(t *testing.T) {
	defer goleak.VerifyNone(t, goleak.IgnoreCurrent())
	fds0 := len(openFds(t))
	n := 100000
	if testing.Short() {
		n = 10000
	}
	func() {
		l := newLoop(t, "uring")
		defer l.Close()
		g, err := l.NewBufferGroup(16, 64)
		if err != nil {
			t.Fatalf("NewBufferGroup: %v", err)
		}
		randomOpsInCallbacks(t, l, g, n, randSeed(t))
	}()
	runtime.GC()
	if got := len(openFds(t)); got != fds0 {
		t.Fatalf("%d fds open after the test, %d before", got, fds0)
	}
}

// TestRequestRandomOpsWithBatchWait: TestRequestRandomOpsInCallbacksConserveBytes's 20,000
// operations on a loop with WithBatchWait(8, 1 ms): the same guarantees hold when the blocking
// waits batch completions.
func TestRequestRandomOpsWithBatchWait(t *testing.T) {
	defer goleak.VerifyNone(t, goleak.IgnoreCurrent())
	fds0 := len(openFds(t))
	func() {
		l, err := ringev.New(ringev.WithBackend("uring"), ringev.WithBatchWait(8, time.Millisecond))
		if errors.Is(err, unix.EOPNOTSUPP) {
			t.Skipf("the kernel lacks IORING_FEAT_MIN_TIMEOUT (Linux 6.12): %v", err)
		}
		requireNew(t, "uring", err)
		defer l.Close()
		g, err := l.NewBufferGroup(16, 64)
		if err != nil {
			t.Fatalf("NewBufferGroup: %v", err)
		}
		randomOpsInCallbacks(t, l, g, 20000, randSeed(t)+1)
	}()
	runtime.GC()
	if got := len(openFds(t)); got != fds0 {
		t.Fatalf("%d fds open after the test, %d before", got, fds0)
	}
}

// TestRequestRandomOpsWithRegistrationConserveBytes: random Recvs, RecvMultishots, Sends, cancels,
// deadlines and CloseFds (with new socket pairs taking the numbers) on 8 socket pairs, made
// from callbacks and between Onces, with RegisterFile and UnregisterFile of random ends mixed
// in: every request ends once, every byte sent is received or left in its socket, and no fd or
// goroutine is left, on every backend (on epoll, poll and uring-poll the registration does
// nothing).
func TestRequestRandomOpsWithRegistrationConserveBytes(t *testing.T) {
	eachBackend(t, ringev.Backends(), func(t *testing.T, backend string) {
		if backend == "uring" {
			requireRegisteredFiles(t)
		}
		defer goleak.VerifyNone(t, goleak.IgnoreCurrent())
		fds0 := len(openFds(t))
		n := 20000
		if testing.Short() || backend != "uring" {
			n = 4000
		}
		func() {
			l := newLoop(t, backend)
			defer l.Close()
			g, err := l.NewBufferGroup(16, 64)
			if err != nil {
				t.Fatalf("NewBufferGroup: %v", err)
			}
			randomOps(t, l, g, n, randSeed(t), true)
		}()
		runtime.GC()
		if got := len(openFds(t)); got != fds0 {
			t.Fatalf("%d fds open after the test, %d before", got, fds0)
		}
	})
}

func randomOpsInCallbacks(t *testing.T, l *ringev.Loop, g *ringev.BufferGroup, n int, seed int64) {
	randomOps(t, l, g, n, seed, false)
}

// randomOps is randomOpsInCallbacks; with reg, registration changes (RegisterFile,
// UnregisterFile of either end of a pair) are among the ops, at least one is made, and the
// pairs are unregistered before their close(2) at the end.
func randomOps(t *testing.T, l *ringev.Loop, g *ringev.BufferGroup, n int, seed int64, reg bool) {
	rng := rand.New(rand.NewSource(seed))
	type pair struct {
		a, b           int
		sent, received int
		closed         bool
	}
	newPair := func() *pair {
		fds, err := unix.Socketpair(unix.AF_UNIX, unix.SOCK_STREAM|unix.SOCK_NONBLOCK|unix.SOCK_CLOEXEC, 0)
		if err != nil {
			t.Fatal(err)
		}
		return &pair{a: fds[0], b: fds[1]}
	}
	socks := make([]*pair, 8)
	for i := range socks {
		socks[i] = newPair()
	}
	type state struct {
		h     ringev.Request
		p     *pair
		send  bool
		last  bool
		calls int
	}
	var reqs []state
	bad, made, closing, flips := 0, 0, 0, 0
	kinds := 20
	if reg {
		kinds = 24 // 20-21: a registration change; 22-23: as the default
	}
	payload := []byte("0123456789abcdef0123456789abcdef")
	var step func(inCallback bool)
	cb := func(c *ringev.Completion) {
		s := &reqs[c.Token]
		s.calls++
		if s.last {
			bad++
			t.Errorf("request %d: a callback after its last", c.Token)
		}
		if c.More && c.Op != ringev.OpRecvMultishot {
			bad++
			t.Errorf("request %d (%v): More on a one-shot request", c.Token, c.Op)
		}
		if !c.More {
			s.last = true
		}
		switch {
		case s.send:
			s.p.sent += c.N
		case c.Err == nil && c.N > 0:
			s.p.received += c.N
		}
		c.ReleaseBuffer()
		if made < n && rng.Intn(2) == 0 {
			for k := rng.Intn(4); k >= 0; k-- {
				step(true)
			}
		}
	}
	onClose := func(c *ringev.Completion) {
		closing--
		if c.Err != nil {
			t.Errorf("CloseFd: %v", c.Err)
		}
	}
	bufs := make([][]byte, 64)
	for i := range bufs {
		bufs[i] = make([]byte, 1+i)
	}
	step = func(inCallback bool) {
		if made >= n || bad > 0 {
			return
		}
		i := rng.Intn(len(socks))
		p := socks[i]
		tok := uint64(len(reqs))
		var h ringev.Request
		var err error
		send := false
		switch k := rng.Intn(kinds); {
		case k < 6:
			h, err = l.Recv(p.b, bufs[rng.Intn(len(bufs))], 0, cb, tok)
		case k < 7:
			h, err = l.RecvMultishot(p.b, g, 0, cb, tok)
		case k < 12:
			h, err = l.Send(p.a, payload[:1+rng.Intn(len(payload))], 0, cb, tok)
			send = true
		case k < 15 && len(reqs) > 0:
			reqs[len(reqs)-1-rng.Intn(min(len(reqs), 8))].h.Cancel()
			return
		case k < 18 && len(reqs) > 0:
			h := reqs[len(reqs)-1-rng.Intn(min(len(reqs), 8))].h
			switch rng.Intn(3) {
			case 0:
				h.SetTimeout(0)
			default:
				h.SetTimeout(time.Duration(rng.Intn(2000)) * time.Microsecond)
			}
			return
		case k >= 20 && k < 22:
			fd := p.a
			if rng.Intn(2) == 0 {
				fd = p.b
			}
			if rng.Intn(2) == 0 {
				err = l.RegisterFile(fd)
			} else {
				err = l.UnregisterFile(fd)
			}
			if err != nil {
				bad++
				t.Errorf("registration change of fd %d: %v", fd, err)
			}
			flips++
			return
		default:
			if rng.Intn(8) == 0 {
				closing += 2
				if _, err := l.CloseFd(p.a, onClose, 0); err != nil {
					t.Fatal(err)
				}
				if _, err := l.CloseFd(p.b, onClose, 0); err != nil {
					t.Fatal(err)
				}
				p.closed = true
				socks[i] = newPair()
			}
			return
		}
		if err != nil {
			t.Fatalf("request %d: %v", tok, err)
		}
		reqs = append(reqs, state{h: h, p: p, send: send})
		made++
		if rng.Intn(3) == 0 {
			h.SetTimeout(time.Duration(rng.Intn(3000)) * time.Microsecond)
		}
		_ = inCallback
	}
	for made < n && bad == 0 {
		step(false)
		if rng.Intn(4) == 0 {
			for j := rng.Intn(3); j >= 0; j-- {
				l.AddTimer(0, func(*ringev.Timer) {}) // so that no Once waits for long
				once(t, l)
			}
		}
	}
	// End: cancel every request still pending, then count what is left in the sockets.
	for i := range reqs {
		reqs[i].h.Cancel()
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
		if s.calls == 0 || !s.last {
			t.Fatalf("request %d: %d callbacks, last %v", i, s.calls, s.last)
		}
	}
	buf := make([]byte, 1<<16)
	for _, p := range socks {
		rest := 0
		for {
			m, err := unix.Read(p.b, buf)
			if m <= 0 || err != nil {
				break
			}
			rest += m
		}
		if p.sent != p.received+rest {
			t.Errorf("pair %d/%d: %d bytes sent, %d received + %d left in the socket", p.a, p.b, p.sent, p.received, rest)
		}
		for _, fd := range []int{p.a, p.b} {
			if err := l.UnregisterFile(fd); err != nil {
				t.Errorf("UnregisterFile(%d): %v", fd, err)
			}
		}
		unix.Close(p.a)
		unix.Close(p.b)
	}
	if reg && flips == 0 {
		t.Fatal("no registration change was made")
	}
}

// randSeed is RINGEV_SEED when set, else 7.
func randSeed(t *testing.T) int64 {
	if v := os.Getenv("RINGEV_SEED"); v != "" {
		s, err := strconv.ParseInt(v, 10, 64)
		if err != nil {
			t.Fatalf("RINGEV_SEED: %v", err)
		}
		return s
	}
	return 7
}
