//go:build linux

package ringev_test

import (
	"os"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/ringev/ringev"
	"github.com/ringev/ringev/internal/testutil"
)

// Hostile inputs and racy uses of the loop and its requests (the breaker's tests). Each test
// runs on every backend; every wait has a deadline.

// More requests than the SQ (256) and CQ (1024) hold, made in one handler and all completing
// at once (writes to a regular file), each get their callback exactly once.
func TestBreakerRequestsBeyondCQSizeAllComplete(t *testing.T) {
	const n = 3000
	eachBackend(t, ringev.Backends(), func(t *testing.T, backend string) {
		l := newLoop(t, backend)
		f := tempFile(t)
		fd := int(f.Fd())
		runs := make([]int, n)
		done := 0
		bufs := make([][]byte, n)
		for i := range n {
			bufs[i] = []byte{byte(i)}
			if _, err := l.Write(fd, bufs[i], int64(i), func(c *ringev.Completion) {
				if c.Err != nil || c.N != 1 {
					t.Errorf("Write %d: N %d err %v", c.Token, c.N, c.Err)
				}
				runs[c.Token]++
				done++
			}, uint64(i)); err != nil {
				t.Fatalf("Write %d: %v", i, err)
			}
		}
		untilFor(t, l, 10*time.Second, "3000 writes' callbacks", func() bool { return done >= n })
		for i, k := range runs {
			if k != 1 {
				t.Fatalf("Write %d: callback ran %d times", i, k)
			}
		}
		b, err := os.ReadFile(f.Name())
		if err != nil || len(b) != n {
			t.Fatalf("file has %d bytes (%v), want %d", len(b), err, n)
		}
		for i := range n {
			if b[i] != byte(i) {
				t.Fatalf("byte %d is %d, want %d", i, b[i], byte(i))
			}
		}
	})
}

// An fd event and requests on the same socket both progress: a handler watching Read runs for
// what the peer writes while a large Send request on the socket waits for room, and the Send
// completes once the peer reads; then a Recv request and a handler watching Write share it.
func TestBreakerFdEventAndRequestsShareOneFd(t *testing.T) {
	eachBackend(t, ringev.Backends(), func(t *testing.T, backend string) {
		l := newLoop(t, backend)
		a, b := testutil.Socketpair(t)
		readRuns := 0
		ev, err := l.AddFd(a, ringev.Read, func(ev *ringev.FdEvent, _ ringev.Flags) {
			var buf [64]byte
			if n, _ := l.ReadNonblocking(a, buf[:]); n > 0 {
				readRuns++
			}
		})
		if err != nil {
			t.Fatal(err)
		}
		big := make([]byte, 4<<20)
		sent := -1
		if _, err := l.Send(a, big, 0, func(c *ringev.Completion) {
			sent = c.N
			if c.Err != nil {
				t.Errorf("Send: %v", c.Err)
			}
		}, 0); err != nil {
			t.Fatal(err)
		}
		unix.Write(b, []byte("ping"))
		untilFor(t, l, deadline, "the Read handler while a Send waits", func() bool { return readRuns > 0 })
		if sent >= 0 {
			t.Fatalf("a 4 MiB Send to a peer that does not read completed (%d)", sent)
		}
		got := 0
		errc := make(chan error, 1)
		go func() {
			buf := make([]byte, 64<<10)
			deadline := time.Now().Add(10 * time.Second)
			for got < len(big) && time.Now().Before(deadline) {
				n, err := unix.Read(b, buf)
				if err == unix.EAGAIN {
					time.Sleep(50 * time.Microsecond)
					continue
				}
				if err != nil {
					errc <- err
					return
				}
				got += n
			}
			errc <- nil
		}()
		untilFor(t, l, 10*time.Second, "the Send", func() bool { return sent >= 0 })
		if err := <-errc; err != nil || got != len(big) || sent != len(big) {
			t.Fatalf("Send N %d, peer read %d (%v), want %d", sent, got, err, len(big))
		}
		ev.Close()
		writeRuns := 0
		ev2, err := l.AddFd(a, ringev.Write, func(ev *ringev.FdEvent, _ ringev.Flags) {
			writeRuns++
			ev.SetFlags(0)
		})
		if err != nil {
			t.Fatal(err)
		}
		defer ev2.Close()
		rbuf := make([]byte, 16)
		recvd := -1
		if _, err := l.Recv(a, rbuf, 0, func(c *ringev.Completion) { recvd = c.N }, 0); err != nil {
			t.Fatal(err)
		}
		untilFor(t, l, deadline, "the Write handler while a Recv waits", func() bool { return writeRuns > 0 })
		unix.Write(b, []byte("pong"))
		untilFor(t, l, deadline, "the Recv", func() bool { return recvd >= 0 })
		if recvd != 4 || string(rbuf[:4]) != "pong" {
			t.Fatalf("Recv got %d %q", recvd, rbuf[:max(recvd, 0)])
		}
	})
}

// A request whose callback makes the next one, each completing at once (a write to a regular
// file), starves neither fd handlers nor timers: both run within 2 s while the chain goes on.
func TestBreakerRequestChainStarvesNeitherFdsNorTimers(t *testing.T) {
	eachBackend(t, ringev.Backends(), func(t *testing.T, backend string) {
		l := newLoop(t, backend)
		f := tempFile(t)
		fd := int(f.Fd())
		buf := []byte("x")
		chain := 0
		stop := false
		var next ringev.Callback
		next = func(c *ringev.Completion) {
			chain++
			if !stop {
				if _, err := l.Write(fd, buf, 0, next, 0); err != nil {
					t.Errorf("Write: %v", err)
				}
			}
		}
		if _, err := l.Write(fd, buf, 0, next, 0); err != nil {
			t.Fatal(err)
		}
		r, w := testutil.Pipe(t)
		unix.Write(w, []byte("x"))
		fdRan, timerRan := false, false
		ev, err := l.AddFd(r, ringev.Read, func(ev *ringev.FdEvent, _ ringev.Flags) { fdRan = true; ev.SetFlags(0) })
		if err != nil {
			t.Fatal(err)
		}
		defer ev.Close()
		l.AddTimer(10*time.Millisecond, func(*ringev.Timer) { timerRan = true })
		// The chain must have gone on (2 or more) by then too: on a busy machine the first write's
		// completion (io-wq) can come after the 10 ms timer, and a chain of one starves nothing.
		untilFor(t, l, 2*time.Second, "an fd handler and a timer beside a request chain", func() bool { return fdRan && timerRan && chain >= 2 })
		stop = true
		at := chain
		untilFor(t, l, 2*time.Second, "the chain's end", func() bool { return chain > at })
		if chain < 2 {
			t.Fatalf("the chain ran %d times", chain)
		}
	})
}
