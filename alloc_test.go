//go:build linux

package ringev_test

// Tests that the steady state allocates nothing: an fd event round, handler I/O through the loop,
// requests (with deadlines, with registered files), and the ride's measuring.

import (
	"testing"
	"time"

	"github.com/ringev/ringev"
	"github.com/ringev/ringev/internal/testutil"
	"golang.org/x/sys/unix"
)

// TestFdSteadyStateDoesNotAllocate: once warmed up, an fd event round (a read and a write handler
// making their own read(2) and write(2)) allocates nothing on any backend. (With the loop's
// methods: TestLoopIOSteadyStateDoesNotAllocate.)
func TestFdSteadyStateDoesNotAllocate(t *testing.T) {
	eachBackend(t, ringev.Backends(), func(t *testing.T, backend string) {
		s := newSpeed(t, backend, false, 2)
		s.run(t, 1000)
		if a := testing.AllocsPerRun(1000, func() { s.run(t, 1) }); a != 0 {
			t.Errorf("%s: %.2f allocations per read event, want 0", backend, a)
		}
		s.check(t)
	})
}

// TestLoopIOSteadyStateDoesNotAllocate: once warmed up, a read event of fd_speed2 with the loop
// methods (buffers in a heap struct) allocates nothing, in every mode on every backend.
func TestLoopIOSteadyStateDoesNotAllocate(t *testing.T) {
	eachMode(t, withFallback(), allModes, func(t *testing.T, backend string, m mode) {
		s := newSpeed(t, backend, true, 1, m.opts()...)
		watch(t, s.l, 2*deadline, unblockRead(s.w))
		s.run(t, 1000)
		if a := testing.AllocsPerRun(1000, func() { s.run(t, 1) }); a != 0 {
			t.Fatalf("%.2f allocations per read event, want 0", a)
		}
		s.check(t)
	})
}

// TestRequestZeroAllocsPerRequest: a send and a recv made, completed and called back, in
// steady state, allocate nothing on any backend.
func TestRequestZeroAllocsPerRequest(t *testing.T) {
	eachBackend(t, ringev.Backends(), testZeroAllocsPerRequest)
}

// TestRequestZeroAllocsWithRegisteredFiles: the same with the sockets in the ring's
// registered-file table (RegisterFile).
func TestRequestZeroAllocsWithRegisteredFiles(t *testing.T) {
	requireRegisteredFiles(t)
	defer ringev.SetRegisterEveryFd(true)()
	testZeroAllocsPerRequest(t, uringFixed)
}

func testZeroAllocsPerRequest(t *testing.T, backend string) {
	{
		a, b := testutil.Socketpair(t)
		l := newLoop(t, backend)
		c := &echoConn{l: l, a: a, b: b, buf: make([]byte, 64), msg: []byte("ping")}
		c.cb = c.onDone
		defer guard(l, &c.err)()
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
	}
}

// TestRequestZeroAllocsWithDeadline: a recv with a deadline (the everyday idle-connection
// recv) allocates nothing either.
func TestRequestZeroAllocsWithDeadline(t *testing.T) {
	eachBackend(t, ringev.Backends(), func(t *testing.T, backend string) {
		a, b := testutil.Socketpair(t)
		l := newLoop(t, backend)
		c := &echoConn{l: l, a: a, b: b, buf: make([]byte, 64), msg: []byte("ping")}
		c.cb = c.onDone
		defer guard(l, &c.err)()
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
