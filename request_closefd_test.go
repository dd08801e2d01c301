package ringev_test

// Tests of Loop.CloseFd: it cancels the fd's requests, closes the fd after their last callbacks,
// and refuses what would touch the fd meanwhile.

import (
	"errors"
	"testing"
	"time"

	"github.com/ringev/ringev"
	"github.com/ringev/ringev/internal/testutil"
	"golang.org/x/sys/unix"
)

// TestRequestCloseFdBeforeTheWaitNeverReachesTheKernel: CloseFd in the handler that made a Read
// on the fd cancels it without it reaching the kernel: ECANCELED, and the pipe (read through a
// dup) keeps its bytes.
func TestRequestCloseFdBeforeTheWaitNeverReachesTheKernel(t *testing.T) {
	eachBackend(t, ringev.Backends(), func(t *testing.T, backend string) {
		rp, wp := testutil.Pipe(t)
		testutil.Write(t, wp, []byte("ab"))
		dup, err := unix.Dup(rp)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { unix.Close(dup) })
		l := newLoop(t, backend)
		var rec, cls recorder
		if _, err := l.Read(rp, make([]byte, 1), -1, rec.cb, 0); err != nil {
			t.Fatal(err)
		}
		if _, err := l.CloseFd(rp, cls.cb, 0); err != nil {
			t.Fatal(err)
		}
		testutil.HandOver(t, rp)
		until(t, l, func() bool { return rec.n() > 0 && cls.n() > 0 })
		if c := rec.last(t); rec.n() != 1 || !errors.Is(c.Err, unix.ECANCELED) {
			t.Fatalf("the Read: %d callbacks, last N %d err %v, want one with ECANCELED", rec.n(), c.N, c.Err)
		}
		if c := cls.last(t); c.Err != nil {
			t.Fatalf("CloseFd: %v", c.Err)
		}
		expectHeld(t, dup, "ab")
	})
}

// TestRequestCloseFdWithAPreparedReadThenTheNumberReused: CloseFd on a pipe with a Read
// prepared but not submitted closes it at once (the Read's SQE a NOP); a new pipe takes the
// number and a Read on it, made before the enter, gets the new pipe's byte, which the old
// Read's SQE (had it gone to the kernel on the number) would have taken.
func TestRequestCloseFdWithAPreparedReadThenTheNumberReused(t *testing.T) {
	rp, wp := testutil.Pipe(t)
	l := newLoop(t, "uring")
	var old, cls, fresh recorder
	num := rp
	must(t)(l.Read(num, make([]byte, 1), -1, old.cb, 0))
	must(t)(l.CloseFd(num, cls.cb, 0))
	testutil.HandOver(t, rp)
	if !isClosed(num) {
		t.Fatal("CloseFd with only an unsubmitted Read did not close the fd at once")
	}
	testutil.Close(t, wp)
	r2, w2 := testutil.Pipe(t)
	if r2 != num {
		renumber(t, r2, num) // the number is the new pipe's read end, closed at cleanup
	}
	testutil.Write(t, w2, []byte("n"))
	buf := make([]byte, 1)
	must(t)(l.Read(num, buf, -1, fresh.cb, 0))
	until(t, l, func() bool { return old.n() > 0 && cls.n() > 0 && fresh.n() > 0 })
	quiet(t, l)
	if c := old.last(t); old.n() != 1 || !errors.Is(c.Err, unix.ECANCELED) {
		t.Fatalf("old Read: %d callbacks, last err %v; want one with ECANCELED", old.n(), c.Err)
	}
	if c := cls.last(t); cls.n() != 1 || c.Err != nil {
		t.Fatalf("CloseFd: %d callbacks, last err %v", cls.n(), c.Err)
	}
	wantOne(t, &fresh, 1)
	if buf[0] != 'n' {
		t.Fatalf("the new Read got %q", buf)
	}
}

// CloseFd on a socket with a multishot recv and a large send in flight, while the peer keeps
// writing and does not read: every callback runs once (the recv's last with More unset, the
// send's with ECANCELED or a count, CloseFd's with nil), and the peer then gets EPIPE.
func TestRequestCloseFdWithMultishotAndSendInFlightWhilePeerWrites(t *testing.T) {
	eachBackend(t, ringev.Backends(), func(t *testing.T, backend string) {
		l := newLoop(t, backend)
		ap, bp := testutil.Socketpair(t)
		a, b := ap, bp
		g, err := l.NewBufferGroup(4, 256)
		if err != nil {
			t.Fatal(err)
		}
		stop := make(chan struct{})
		peerErr := make(chan error, 1)
		go func() {
			chunk := make([]byte, 512)
			for {
				select {
				case <-stop:
					peerErr <- nil
					return
				default:
				}
				_, err := unix.Write(b, chunk)
				if err == unix.EAGAIN {
					time.Sleep(100 * time.Microsecond)
					continue
				}
				if err != nil {
					peerErr <- err
					return
				}
			}
		}()
		defer func() {
			close(stop)
			<-peerErr
		}()
		recvLast, recvRuns, sendRuns, closeRuns := 0, 0, 0, 0
		if _, err := l.RecvMultishot(a, g, 0, func(c *ringev.Completion) {
			recvRuns++
			if !c.More {
				recvLast++
			}
			if recvRuns%3 == 0 {
				c.ReleaseBuffer() // hold some, so the group runs dry now and then
			}
			c.ReleaseBuffer()
		}, 0); err != nil {
			t.Fatal(err)
		}
		big := make([]byte, 8<<20)
		if _, err := l.Send(a, big, 0, func(c *ringev.Completion) {
			sendRuns++
			if c.Err == nil {
				t.Errorf("Send of 8 MiB to a peer that does not read: N %d, no error", c.N)
			}
		}, 0); err != nil {
			t.Fatal(err)
		}
		n := 0
		tm := l.AddTimer(50*time.Millisecond, func(*ringev.Timer) {})
		untilFor(t, l, deadline, "50 ms of receiving", func() bool { n++; return !tm.Stop() && n > 1 })
		if _, err := l.CloseFd(a, func(c *ringev.Completion) {
			closeRuns++
			if c.Err != nil {
				t.Errorf("CloseFd: %v", c.Err)
			}
		}, 0); err != nil {
			t.Fatal(err)
		}
		testutil.HandOver(t, ap) // the loop closes it now
		untilFor(t, l, deadline, "every callback after CloseFd", func() bool {
			return recvLast > 0 && sendRuns > 0 && closeRuns > 0
		})
		if recvLast != 1 || sendRuns != 1 || closeRuns != 1 {
			t.Fatalf("last callbacks: recv %d, send %d, close %d; want 1 each", recvLast, sendRuns, closeRuns)
		}
		select {
		case err := <-peerErr:
			if !errors.Is(err, unix.EPIPE) && !errors.Is(err, unix.ECONNRESET) {
				t.Fatalf("peer's write: %v, want EPIPE", err)
			}
			peerErr <- nil // for the deferred receive
		case <-time.After(5 * time.Second):
			t.Fatal("the peer's writes did not fail within 5 s of CloseFd's callback: the socket is still open")
		}
	})
}

// Cancel and SetTimeout on CloseFd's own handle, while its fd has a request in flight, do not
// keep the fd open nor run a callback twice: CloseFd's callback runs once and the fd is closed.
func TestRequestCloseFdCancelledStillCloses(t *testing.T) {
	eachBackend(t, ringev.Backends(), func(t *testing.T, backend string) {
		l := newLoop(t, backend)
		p, err := unix.Socketpair(unix.AF_UNIX, unix.SOCK_STREAM|unix.SOCK_NONBLOCK|unix.SOCK_CLOEXEC, 0)
		if err != nil {
			t.Fatal(err)
		}
		a := p[0]
		defer unix.Close(p[1])
		recvRuns, closeRuns := 0, 0
		if _, err := l.Recv(a, make([]byte, 4), 0, func(*ringev.Completion) { recvRuns++ }, 0); err != nil {
			t.Fatal(err)
		}
		fired := false
		l.AddTimer(time.Millisecond, func(*ringev.Timer) { fired = true })
		untilFor(t, l, deadline, "1 ms", func() bool { return fired })
		h, err := l.CloseFd(a, func(*ringev.Completion) { closeRuns++ }, 0)
		if err != nil {
			t.Fatal(err)
		}
		h.SetTimeout(time.Millisecond)
		h.Cancel()
		untilFor(t, l, deadline, "CloseFd", func() bool { return closeRuns > 0 && recvRuns > 0 })
		fired = false
		l.AddTimer(20*time.Millisecond, func(*ringev.Timer) { fired = true })
		untilFor(t, l, deadline, "20 ms", func() bool { return fired })
		if closeRuns != 1 || recvRuns != 1 {
			t.Fatalf("callbacks: CloseFd %d, Recv %d; want 1 each", closeRuns, recvRuns)
		}
		if _, err := unix.FcntlInt(uintptr(a), unix.F_GETFD, 0); err == nil {
			unix.Close(a)
			t.Fatal("the fd is still open")
		}
	})
}

// AddFd on an fd whose CloseFd waits for a request in flight is refused with ErrFdClosing (the
// fd is about to be closed under the event), on every backend (the readiness backends close it
// at once, and AddFd then fails with EBADF).
func TestRequestCloseFdPendingRefusesAddFd(t *testing.T) {
	eachBackend(t, ringev.Backends(), func(t *testing.T, backend string) {
		l := newLoop(t, backend)
		ap, _ := testutil.Socketpair(t)
		a := ap
		if _, err := l.Recv(a, make([]byte, 4), 0, func(*ringev.Completion) {}, 0); err != nil {
			t.Fatal(err)
		}
		fired := false
		l.AddTimer(time.Millisecond, func(*ringev.Timer) { fired = true })
		untilFor(t, l, deadline, "1 ms", func() bool { return fired })
		closed := false
		if _, err := l.CloseFd(a, func(*ringev.Completion) { closed = true }, 0); err != nil {
			t.Fatal(err)
		}
		testutil.HandOver(t, ap) // the loop closes it now
		ev, err := l.AddFd(a, ringev.Read, func(*ringev.FdEvent, ringev.Flags) {})
		if err == nil {
			ev.Close()
			t.Fatal("AddFd on an fd that CloseFd is closing succeeded")
		}
		if !errors.Is(err, ringev.ErrFdClosing) && !errors.Is(err, unix.EBADF) {
			t.Fatalf("AddFd: %v, want ErrFdClosing or EBADF", err)
		}
		untilFor(t, l, deadline, "CloseFd", func() bool { return closed })
	})
}

// An fd event left open on an fd that CloseFd closed does not keep a new file that takes the
// number from being watched: AddFd on the new file's number (the old event still open) runs its
// handler when the new pipe has data, and the old handler never runs.
func TestRequestCloseFdThenAddFdOnTheReusedNumber(t *testing.T) {
	eachBackend(t, ringev.Backends(), func(t *testing.T, backend string) {
		l := newLoop(t, backend)
		rp, wp := testutil.Pipe(t)
		r, w := rp, wp
		oldRuns := 0
		old, err := l.AddFd(r, ringev.Read, func(*ringev.FdEvent, ringev.Flags) { oldRuns++ })
		if err != nil {
			t.Fatal(err)
		}
		closed := false
		if _, err := l.CloseFd(r, func(*ringev.Completion) { closed = true }, 0); err != nil {
			t.Fatal(err)
		}
		testutil.HandOver(t, rp) // the loop closes it now
		untilFor(t, l, deadline, "CloseFd", func() bool { return closed })
		var p [2]int
		if err := unix.Pipe2(p[:], unix.O_NONBLOCK|unix.O_CLOEXEC); err != nil {
			t.Fatal(err)
		}
		defer unix.Close(p[0])
		defer unix.Close(p[1])
		if p[0] != r {
			if err := unix.Dup3(p[0], r, unix.O_CLOEXEC); err != nil {
				t.Fatal(err)
			}
			unix.Close(p[0])
			p[0] = r
		}
		_ = w
		newRuns := 0
		ev, err := l.AddFd(r, ringev.Read, func(ev *ringev.FdEvent, _ ringev.Flags) {
			newRuns++
			var b [8]byte
			l.ReadNonblocking(r, b[:])
		})
		if err != nil {
			t.Fatalf("AddFd on the reused number: %v", err)
		}
		defer ev.Close()
		unix.Write(p[1], []byte("x"))
		untilFor(t, l, 2*time.Second, "the new file's handler", func() bool { return newRuns > 0 })
		if oldRuns != 0 {
			t.Errorf("the handler of the fd event of the closed file ran %d times", oldRuns)
		}
		old.Close()
		// the new event still works after the old one is closed
		newRuns = 0
		unix.Write(p[1], []byte("y"))
		untilFor(t, l, 2*time.Second, "the new file's handler after the old event closed", func() bool { return newRuns > 0 })
	})
}

// CloseFd on an fd whose fd event has auto-close set closes it once: the event's Close (and the
// loop's Close) afterwards do not close the new file that took the number.
func TestRequestCloseFdThenAutoCloseEventDoesNotCloseReusedNumber(t *testing.T) {
	for _, via := range []string{"event", "loop"} {
		t.Run(via, func(t *testing.T) {
			eachBackend(t, ringev.Backends(), func(t *testing.T, backend string) {
				l, err := ringev.New(ringev.WithBackend(backend))
				if err != nil {
					if errors.Is(err, unix.EPERM) || errors.Is(err, unix.ENOSYS) {
						t.Skip(err)
					}
					t.Fatal(err)
				}
				defer l.Close()
				var p [2]int
				if err := unix.Pipe2(p[:], unix.O_NONBLOCK|unix.O_CLOEXEC); err != nil {
					t.Fatal(err)
				}
				r := p[0]
				defer unix.Close(p[1])
				ev, err := l.AddFd(r, ringev.Read, func(*ringev.FdEvent, ringev.Flags) {})
				if err != nil {
					t.Fatal(err)
				}
				ev.SetAutoClose(true)
				closed := false
				if _, err := l.CloseFd(r, func(*ringev.Completion) { closed = true }, 0); err != nil {
					t.Fatal(err)
				}
				untilFor(t, l, deadline, "CloseFd", func() bool { return closed })
				// a new file takes the number
				nf, err := unix.Eventfd(0, unix.EFD_CLOEXEC)
				if err != nil {
					t.Fatal(err)
				}
				if nf != r {
					if err := unix.Dup3(nf, r, unix.O_CLOEXEC); err != nil {
						t.Fatal(err)
					}
					unix.Close(nf)
				}
				defer unix.Close(r)
				if via == "event" {
					ev.Close()
				} else if err := l.Close(); err != nil {
					t.Fatal(err)
				}
				if _, err := unix.FcntlInt(uintptr(r), unix.F_GETFD, 0); err != nil {
					t.Fatalf("the %s's Close closed fd %d again, now another file's: %v", via, r, err)
				}
			})
		})
	}
}

// CloseFd, requests (Read) and AddFd on one of the loop's own fds (its epoll set, ring, wake-up eventfd)
// are refused with EBADF, as AddFd refuses them: a wrong number must not close the loop's
// insides. The loop still wakes for Post afterwards.
func TestRequestCloseFdOnLoopsOwnFdIsRefused(t *testing.T) {
	eachBackend(t, ringev.Backends(), func(t *testing.T, backend string) {
		before := map[int]bool{}
		for _, name := range openFds(t) {
			var n int
			fmtSscan(name, &n)
			before[n] = true
		}
		l := newLoop(t, backend)
		var own []int
		for _, name := range openFds(t) {
			var n int
			fmtSscan(name, &n)
			if !before[n] {
				own = append(own, n)
			}
		}
		for _, fd := range own {
			if _, err := unix.FcntlInt(uintptr(fd), unix.F_GETFD, 0); err != nil {
				continue // the ReadDir's own fd
			}
			if ev, err := l.AddFd(fd, ringev.Read, func(*ringev.FdEvent, ringev.Flags) {}); err == nil {
				ev.Close()
				t.Errorf("AddFd(%d), one of the loop's own fds, was accepted", fd)
			}
			if _, err := l.Read(fd, make([]byte, 8), -1, func(*ringev.Completion) {}, 0); err == nil {
				t.Errorf("Read(%d), one of the loop's own fds, was accepted", fd)
			}
			h, err := l.CloseFd(fd, func(*ringev.Completion) {}, 0)
			if err == nil {
				_ = h
				if _, e := unix.FcntlInt(uintptr(fd), unix.F_GETFD, 0); e != nil {
					t.Errorf("CloseFd(%d), one of the loop's own fds, closed it", fd)
				} else {
					t.Errorf("CloseFd(%d), one of the loop's own fds, was accepted", fd)
				}
			}
		}
		ran := false
		// a timer gives Once something to wait for (with nothing registered it returns
		// ErrNothingToDo), so that the Post must wake the loop
		tm := l.AddTimer(deadline, func(*ringev.Timer) {})
		defer tm.Stop()
		go l.Post(func() { ran = true })
		untilFor(t, l, deadline, "a Post after CloseFd on the loop's fds", func() bool { return ran })
	})
}
