//go:build linux

package ringev_test

// Tests of requests as a whole: more than the SQ and CQ hold, SQEs of package uring, requests
// beside fd events and handler I/O, chains, and the loop's own fds.

import (
	"errors"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/ringev/ringev"
	"github.com/ringev/ringev/internal/testutil"
	"github.com/ringev/ringev/uring"
	"golang.org/x/sys/unix"
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

// TestRequestCQOverflowLosesNothing: more completions at once than the CQ has entries (1024),
// from more requests than the SQ holds (256), all arrive, each once: 3000 one-byte Reads of a
// pipe in the kernel completed together by one write, and 3000 one-byte Writes to a regular
// file (which complete at once), whose bytes all land.
func TestRequestCQOverflowLosesNothing(t *testing.T) {
	const n = 3000
	t.Run("PipeReads", func(t *testing.T) {
		eachBackend(t, ringev.Backends(), func(t *testing.T, backend string) {
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
			untilWaited(t, l) // all reads are in the kernel: complete them together
			testutil.Write(t, w, make([]byte, n))
			until(t, l, func() bool { return count >= n })
			for i, k := range seen {
				if k != 1 {
					t.Fatalf("request %d: %d callbacks", i, k)
				}
			}
		})
	})
	t.Run("FileWrites", func(t *testing.T) {
		eachBackend(t, ringev.Backends(), func(t *testing.T, backend string) {
			f := testutil.TempFile(t)
			l := newLoop(t, backend)
			fd := int(f.Fd())
			runs := make([]int, n)
			done := 0
			bufs := make([][]byte, n)
			for i := range n {
				bufs[i] = []byte{byte(i)}
				must(t)(l.Write(fd, bufs[i], int64(i), func(c *ringev.Completion) {
					if c.Err != nil || c.N != 1 {
						t.Errorf("Write %d: N %d err %v", c.Token, c.N, c.Err)
					}
					runs[c.Token]++
					done++
				}, uint64(i)))
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
	})
}

// TestRequestCompletingAtOnceNeedsNoWaitingEnter: on uring, a loop whose requests complete in
// the enter that submits them (a write, then the read it feeds) collects them with an enter
// that does not wait, so the runtime's syscall bookkeeping (and the monitor's taking the P away
// from a syscall) stays out of its busy path: almost none of its waits block.
func TestRequestCompletingAtOnceNeedsNoWaitingEnter(t *testing.T) {
	r, w := testutil.Pipe(t)
	l := newLoop(t, "uring", ringev.WithIOPath(ringev.IOPathAuto))
	const rounds = 1000
	wbuf, rbuf := []byte{'x'}, make([]byte, 1)
	done, failed := 0, error(nil)
	var cb ringev.Callback
	cb = func(c *ringev.Completion) {
		if c.Err != nil && failed == nil {
			failed = c.Err
		}
		if c.Op != ringev.OpRead {
			return
		}
		if done++; done < rounds {
			enterRound(t, l, w, r, wbuf, rbuf, cb)
		}
	}
	enterRound(t, l, w, r, wbuf, rbuf, cb)
	untilFor(t, l, 10*time.Second, "1000 rounds", func() bool { return done >= rounds || failed != nil })
	if failed != nil {
		t.Fatal(failed)
	}
	waits, blocked := ringev.Waits(l), ringev.BlockingEnters(l)
	t.Logf("%d rounds: %d waits, %d waiting enters", rounds, waits, blocked)
	if blocked > rounds/10 {
		t.Fatalf("%d of %d waits blocked in a waiting io_uring_enter, want at most %d", blocked, waits, rounds/10)
	}
}

// enterRound queues a write of wbuf to w and then a read of r into rbuf, both completing with cb.
func enterRound(t *testing.T, l *ringev.Loop, w, r int, wbuf, rbuf []byte, cb ringev.Callback) {
	if _, err := l.Write(w, wbuf, -1, cb, 0); err != nil {
		t.Error(err)
	}
	if _, err := l.Read(r, rbuf, -1, cb, 0); err != nil {
		t.Error(err)
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
				once(t, l)
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

// TestRequestAndFdEventShareOneFd: an fd event and requests on the same socket both progress: a
// handler watching Read runs for what the peer writes while a large Send request on the socket
// waits for room, and the Send completes once the peer reads; then a Recv request and a handler
// watching Write share it.
func TestRequestAndFdEventShareOneFd(t *testing.T) {
	eachBackend(t, ringev.Backends(), func(t *testing.T, backend string) {
		a, b := testutil.Socketpair(t)
		l := newLoop(t, backend)
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
		testutil.Write(t, b, []byte("ping"))
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
		testutil.Write(t, b, []byte("pong"))
		untilFor(t, l, deadline, "the Recv", func() bool { return recvd >= 0 })
		if recvd != 4 || string(rbuf[:4]) != "pong" {
			t.Fatalf("Recv got %d %q", recvd, rbuf[:max(recvd, 0)])
		}
	})
}

// TestRequestChainStarvesNeitherFdsNorTimers: a request whose callback makes the next one, each
// completing at once (a write to a regular file), starves neither fd handlers nor timers: both
// run within 2 s while the chain goes on.
func TestRequestChainStarvesNeitherFdsNorTimers(t *testing.T) {
	eachBackend(t, ringev.Backends(), func(t *testing.T, backend string) {
		r, w := testutil.Pipe(t)
		f := testutil.TempFile(t)
		l := newLoop(t, backend)
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
		testutil.Write(t, w, []byte("x"))
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

// TestRequestOnAnFdThatBecameTheLoopsOwnIsRefused: a number that the loop took requests on
// and then made one of its own fds (the exact-signal eventfd, watched from the first
// AddSignal of a WithExactSignals loop) is refused with EBADF from then on: the requests'
// fast check, which remembers that a number is not the loop's, asks again.
func TestRequestOnAnFdThatBecameTheLoopsOwnIsRefused(t *testing.T) {
	if ringev.ExactSignalFd() < 0 { // make the process's eventfd first (it stays open)
		requireExactSignals(t)
		l0 := newLoop(t, "epoll", ringev.WithExactSignals())
		if _, err := l0.AddSignal(unix.SIGUSR1, func(*ringev.Signal, int) {}); err != nil {
			t.Fatal(err)
		}
		l0.Close()
	}
	fd := ringev.ExactSignalFd()
	if fd < 0 {
		t.Fatal("no exact-signal eventfd after AddSignal on a WithExactSignals loop")
	}
	eachBackend(t, ringev.Backends(), func(t *testing.T, backend string) {
		requireExactSignals(t)
		l := newLoop(t, backend, ringev.WithExactSignals())
		nop := func(*ringev.Completion) {}
		if _, err := l.Fsync(fd, false, nop, 0); err != nil {
			t.Fatalf("Fsync on fd %d before the loop watches it: %v", fd, err)
		}
		if _, err := l.AddSignal(unix.SIGUSR1, func(*ringev.Signal, int) {}); err != nil {
			t.Fatal(err)
		}
		if _, err := l.Fsync(fd, false, nop, 0); !errors.Is(err, unix.EBADF) {
			t.Fatalf("Fsync on fd %d, the loop's exact-signal eventfd now: %v, want EBADF", fd, err)
		}
	})
}

// TestRequestEmulatedReadCompletesInTheOnceThatFindsItsFdReady: on the emulation (every
// backend but uring) a Read of a pipe that holds data runs its callback in one Once: the Once
// whose wait finds the fd ready makes the read(2) and runs the callback, as uring's runs the
// callbacks of the CQEs its wait found (not in a second Once after the next one's checks).
func TestRequestEmulatedReadCompletesInTheOnceThatFindsItsFdReady(t *testing.T) {
	eachBackend(t, backendsBut("uring"), func(t *testing.T, backend string) {
		r, _ := testutil.PipeHolding(t, "ab")
		l := newLoop(t, backend)
		got := -1
		if _, err := l.Read(r, make([]byte, 8), -1, func(c *ringev.Completion) { got = c.N }, 0); err != nil {
			t.Fatal(err)
		}
		if err := l.Once(); err != nil {
			t.Fatal(err)
		}
		if got != 2 {
			t.Fatalf("after one Once the callback got %d bytes, want 2 (-1: it had not run)", got)
		}
	})
}

// TestRequestOffsetOnAPipeIsIgnored: Read and Write at an offset on a pipe, which cannot seek,
// read and write the stream on every backend, as io_uring's IORING_OP_READ and WRITE do (the
// emulation's pread(2) and pwrite(2) fail with ESPIPE there), so that code written on uring
// runs where io_uring is denied.
func TestRequestOffsetOnAPipeIsIgnored(t *testing.T) {
	eachBackend(t, ringev.Backends(), func(t *testing.T, backend string) {
		r, w := testutil.Pipe(t)
		testutil.Write(t, w, []byte("abc"))
		l := newLoop(t, backend)
		readAtWant(t, l, r, 5, "abc")
		var wr recorder
		must(t)(l.Write(w, []byte("xy"), 7, wr.cb, 0))
		until(t, l, func() bool { return wr.n() > 0 })
		wantOne(t, &wr, 2)
		var got [8]byte
		if n, _ := unix.Read(r, got[:]); string(got[:n]) != "xy" {
			t.Fatalf("the pipe holds %q, want xy", got[:n])
		}
	})
}

// TestRequestReadOnASocketTakesOffsetZeroAlone: Read on a socket at offset 0 reads the stream,
// and at another offset fails with ESPIPE, on every backend, as io_uring's IORING_OP_READ does
// (a socket's read refuses a position other than 0; the emulation's pread(2) refuses any).
func TestRequestReadOnASocketTakesOffsetZeroAlone(t *testing.T) {
	eachBackend(t, ringev.Backends(), func(t *testing.T, backend string) {
		a, b := testutil.Socketpair(t)
		testutil.Write(t, b, []byte("abc"))
		l := newLoop(t, backend)
		var at3 recorder
		must(t)(l.Read(a, make([]byte, 8), 3, at3.cb, 0))
		until(t, l, func() bool { return at3.n() > 0 })
		if c := at3.last(t); !errors.Is(c.Err, unix.ESPIPE) {
			t.Fatalf("Read at offset 3: N %d err %v, want ESPIPE", c.N, c.Err)
		}
		readAtWant(t, l, a, 0, "abc")
	})
}

// readAtWant makes a Read of fd at off on l and fails unless it completes with want.
func readAtWant(t *testing.T, l *ringev.Loop, fd int, off int64, want string) {
	t.Helper()
	var rd recorder
	must(t)(l.Read(fd, make([]byte, len(want)+8), off, rd.cb, 0))
	until(t, l, func() bool { return rd.n() > 0 })
	wantOne(t, &rd, len(want))
	if string(rd.bufs[0]) != want {
		t.Fatalf("Read at %d: %q, want %q", off, rd.bufs[0], want)
	}
}
