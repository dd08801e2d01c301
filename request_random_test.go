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
	"github.com/ringev/ringev/internal/testutil"
	"go.uber.org/goleak"
	"golang.org/x/sys/unix"
)

// TestRequestRandomOps: 100,000 random operations (fewer with -short) on every backend, made
// between Onces: Recvs, RecvMultishots (provided buffers) and Sends both ways on 8 socket
// pairs, Cancels of recent and long-finished requests, SetTimeouts right after the call,
// later, removed and set again, and CloseFd of a pair with a fresh one taking the numbers.
// Every request gets exactly one last callback (More only on a multishot's earlier ones) and
// none after it; the bytes of every pair still open add up; at the end CloseFd of every pair
// leaves the loop with nothing to wait for; no fd or goroutine is left.
func TestRequestRandomOps(t *testing.T) {
	n := 100000
	if testing.Short() {
		n = 10000
	}
	eachBackend(t, ringev.Backends(), func(t *testing.T, backend string) {
		runRandomOps(t, backend, opMix{n: n, seed: 1})
	})
}

// TestRequestRandomOpsInCallbacksConserveBytes: TestRequestRandomOps's mix on uring, half of it
// made inside callbacks (so many SQEs are prepared at the call and cancelled, re-timed or
// closed before the enter): no SQE turned into a NOP moved data, and no cancelled request lost
// what it read.
func TestRequestRandomOpsInCallbacksConserveBytes(t *testing.T) {
	n := 100000
	if testing.Short() {
		n = 10000
	}
	runRandomOps(t, "uring", opMix{n: n, seed: randSeed(t), inCallbacks: true})
}

// TestRequestRandomOpsWithBatchWait: 20,000 operations of
// TestRequestRandomOpsInCallbacksConserveBytes's mix on a loop with WithBatchWait(8, 1 ms): the
// same guarantees hold when the blocking waits batch completions.
func TestRequestRandomOpsWithBatchWait(t *testing.T) {
	requireBatchWait(t)
	runRandomOps(t, "uring", opMix{n: 20000, seed: randSeed(t) + 1, inCallbacks: true},
		ringev.WithBatchWait(8, time.Millisecond))
}

// TestRequestRandomOpsWithRegistrationConserveBytes: TestRequestRandomOpsInCallbacksConserveBytes's
// mix with RegisterFile and UnregisterFile of random ends among the operations, on every
// backend (20,000 operations on uring, 4,000 elsewhere, where the registration does nothing).
func TestRequestRandomOpsWithRegistrationConserveBytes(t *testing.T) {
	eachBackend(t, ringev.Backends(), func(t *testing.T, backend string) {
		if backend == "uring" {
			requireRegisteredFiles(t)
		}
		n := 20000
		if testing.Short() || backend != "uring" {
			n = 4000
		}
		runRandomOps(t, backend, opMix{n: n, seed: randSeed(t), inCallbacks: true, register: true})
	})
}

// opMix is what randomOps draws.
type opMix struct {
	n           int   // requests to make
	seed        int64 // of the random source
	inCallbacks bool  // after half the completions, the callback makes up to 4 more operations
	register    bool  // RegisterFile and UnregisterFile of random ends are among the operations
}

// runRandomOps runs randomOps on a new loop on backend with opts and a buffer group of 16
// buffers of 64 bytes, and fails the test if an fd or a goroutine is left afterwards.
func runRandomOps(t *testing.T, backend string, mix opMix, opts ...ringev.Option) {
	t.Helper()
	defer goleak.VerifyNone(t, goleak.IgnoreCurrent())
	fds0 := len(testutil.OpenFds(t))
	func() {
		l := newLoop(t, backend, opts...)
		defer l.Close()
		g, err := l.NewBufferGroup(16, 64)
		if err != nil {
			t.Fatalf("NewBufferGroup: %v", err)
		}
		randomOps(t, l, g, mix)
	}()
	runtime.GC()
	if got := len(testutil.OpenFds(t)); got != fds0 {
		t.Fatalf("%d fds open after the test, %d before", got, fds0)
	}
}

// randomOps makes mix.n random requests on l (RecvMultishots into g) and the operations around
// them, then checks every request's callbacks and the bytes of every pair still open, and
// closes every pair with CloseFd.
func randomOps(t *testing.T, l *ringev.Loop, g *ringev.BufferGroup, mix opMix) {
	rng := rand.New(rand.NewSource(mix.seed))
	// A pair's bytes, each way: what its Sends moved, and what Recvs took at the other end.
	type pair struct {
		a, b          int
		sentAB, recvB int
		sentBA, recvA int
		closed        bool
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
	// A request's state; count is the pair's counter its bytes count in.
	type state struct {
		h     ringev.Request
		count *int
		multi bool // a RecvMultishot: more than one callback
		last  bool
		calls int
	}
	var reqs []state
	bad, made, closing, flips := 0, 0, 0, 0
	payload := []byte("0123456789abcdef0123456789abcdef")
	var step func()
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
		if c.Op == ringev.OpSend || c.Err == nil {
			*s.count += c.N // a Send's N counts what it moved before an error, too
		}
		c.ReleaseBuffer()
		if mix.inCallbacks && made < mix.n && rng.Intn(2) == 0 {
			for k := rng.Intn(4); k >= 0; k-- {
				step()
			}
		}
	}
	onClose := func(c *ringev.Completion) {
		closing--
		if c.Err != nil {
			t.Errorf("CloseFd: %v", c.Err)
		}
	}
	closePair := func(p *pair) {
		closing += 2
		if _, err := l.CloseFd(p.a, onClose, 0); err != nil {
			t.Fatal(err)
		}
		if _, err := l.CloseFd(p.b, onClose, 0); err != nil {
			t.Fatal(err)
		}
		p.closed = true
	}
	// recent is a request made lately, or now and then any request made so far.
	recent := func() ringev.Request {
		if rng.Intn(4) == 0 {
			return reqs[rng.Intn(len(reqs))].h
		}
		return reqs[len(reqs)-1-rng.Intn(min(len(reqs), 8))].h
	}
	bufs := make([][]byte, 64)
	for i := range bufs {
		bufs[i] = make([]byte, 1+i)
	}
	kinds := 24
	if mix.register {
		kinds = 26 // 24-25: a registration change
	}
	step = func() {
		if made >= mix.n || bad > 0 {
			return
		}
		i := rng.Intn(len(socks))
		p := socks[i]
		tok := uint64(len(reqs))
		var h ringev.Request
		var count *int
		multi := false
		var err error
		switch k := rng.Intn(kinds); {
		case k < 5:
			h, err = l.Recv(p.b, bufs[rng.Intn(len(bufs))], 0, cb, tok)
			count = &p.recvB
		case k < 7:
			h, err = l.Recv(p.a, bufs[rng.Intn(len(bufs))], 0, cb, tok)
			count = &p.recvA
		case k < 8:
			h, err = l.RecvMultishot(p.b, g, 0, cb, tok)
			count, multi = &p.recvB, true
		case k < 12:
			h, err = l.Send(p.a, payload[:1+rng.Intn(len(payload))], 0, cb, tok)
			count = &p.sentAB
		case k < 14:
			h, err = l.Send(p.b, payload[:1+rng.Intn(len(payload))], 0, cb, tok)
			count = &p.sentBA
		case k < 17 && len(reqs) > 0:
			recent().Cancel()
			return
		case k < 20 && len(reqs) > 0:
			if rng.Intn(3) == 0 {
				recent().SetTimeout(0)
			} else {
				recent().SetTimeout(time.Duration(rng.Intn(2000)) * time.Microsecond)
			}
			return
		case k >= 24:
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
				closePair(p)
				socks[i] = newPair()
			}
			return
		}
		if err != nil {
			t.Fatalf("request %d: %v", tok, err)
		}
		reqs = append(reqs, state{h: h, count: count, multi: multi})
		made++
		if rng.Intn(3) == 0 {
			h.SetTimeout(time.Duration(rng.Intn(3000)) * time.Microsecond)
		}
	}
	for made < mix.n && bad == 0 {
		step()
		if rng.Intn(4) == 0 {
			for j := rng.Intn(4); j >= 0; j-- {
				l.AddTimer(0, func(*ringev.Timer) {}) // so that no Once waits for long
				once(t, l)
			}
		}
	}
	// End: cancel every request still pending, then count what is left in the sockets.
	for i := range reqs {
		reqs[i].h.Cancel()
	}
	ended := func() bool {
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
	until(t, l, ended)
	for i, s := range reqs {
		if s.calls == 0 || !s.last || s.calls != 1 && !s.multi {
			t.Fatalf("request %d: %d callbacks, last %v", i, s.calls, s.last)
		}
		if s.h.Pending() {
			t.Fatalf("request %d: Pending after its last callback", i)
		}
	}
	buf := make([]byte, 1<<16)
	leftIn := func(fd int) int {
		rest := 0
		for {
			m, err := unix.Read(fd, buf)
			if m <= 0 || err != nil {
				return rest
			}
			rest += m
		}
	}
	for _, p := range socks {
		if restB := leftIn(p.b); p.sentAB != p.recvB+restB {
			t.Errorf("pair %d/%d: %d bytes sent a to b, %d received + %d left in the socket", p.a, p.b, p.sentAB, p.recvB, restB)
		}
		if restA := leftIn(p.a); p.sentBA != p.recvA+restA {
			t.Errorf("pair %d/%d: %d bytes sent b to a, %d received + %d left in the socket", p.a, p.b, p.sentBA, p.recvA, restA)
		}
		closePair(p)
	}
	until(t, l, func() bool { return closing == 0 })
	if mix.register && flips == 0 {
		t.Fatal("no registration change was made")
	}
	// Nothing more comes: once the group is closed the loop has nothing left to wait for.
	if err := g.Close(); err != nil {
		t.Fatalf("BufferGroup.Close: %v", err)
	}
	if err := onceErr(t, l); !errors.Is(err, ringev.ErrNothingToDo) {
		t.Fatalf("Once after the last completion: %v, want ErrNothingToDo", err)
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
