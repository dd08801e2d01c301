//go:build linux

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
		r, w := testutil.Pipe(t)
		testutil.Write(t, w, []byte("ab"))
		dup, err := unix.Dup(r)
		if err != nil {
			t.Fatal(err)
		}
		testutil.Own(t, dup)
		l := newLoop(t, backend)
		var rec, cls recorder
		must(t)(l.Read(r, make([]byte, 1), -1, rec.cb, 0))
		must(t)(l.CloseFd(r, cls.cb, 0))
		testutil.HandOver(t, r)
		until(t, l, func() bool { return rec.n() > 0 && cls.n() > 0 })
		if c := rec.last(t); rec.n() != 1 || !errors.Is(c.Err, unix.ECANCELED) {
			t.Fatalf("the Read: %d callbacks, last N %d err %v, want one with ECANCELED", rec.n(), c.N, c.Err)
		}
		if c := cls.last(t); c.Err != nil {
			t.Fatalf("CloseFd: %v", c.Err)
		}
		testutil.ExpectHeld(t, dup, "ab")
	})
}

// TestRequestCloseFdWithAPreparedReadThenTheNumberReused: CloseFd on a pipe with a Read
// prepared but not submitted closes it at once (the Read's SQE a NOP); a new pipe takes the
// number and a Read on it, made before the enter, gets the new pipe's byte, which the old
// Read's SQE (had it gone to the kernel on the number) would have taken.
func TestRequestCloseFdWithAPreparedReadThenTheNumberReused(t *testing.T) {
	num, w := testutil.Pipe(t)
	l := newLoop(t, "uring")
	var old, cls, fresh recorder
	must(t)(l.Read(num, make([]byte, 1), -1, old.cb, 0))
	must(t)(l.CloseFd(num, cls.cb, 0))
	testutil.HandOver(t, num)
	if !testutil.IsClosed(num) {
		t.Fatal("CloseFd with only an unsubmitted Read did not close the fd at once")
	}
	testutil.Close(t, w)
	r2, w2 := testutil.Pipe(t)
	if r2 != num {
		testutil.Renumber(t, r2, num) // the number is the new pipe's read end, closed at cleanup
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

// TestRequestCloseFdWithMultishotAndSendInFlightWhilePeerWrites: CloseFd on a socket with a
// multishot recv and a large send in flight, while the peer keeps writing and does not read:
// every callback runs once (the recv's last with More unset, the send's with ECANCELED or a
// count, CloseFd's with nil), and the peer then gets EPIPE.
func TestRequestCloseFdWithMultishotAndSendInFlightWhilePeerWrites(t *testing.T) {
	eachBackend(t, ringev.Backends(), func(t *testing.T, backend string) {
		a, b := testutil.Socketpair(t)
		l := newLoop(t, backend)
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
		untilFor(t, l, deadline, "three receives (one buffer held)", func() bool { return recvRuns >= 3 })
		if _, err := l.CloseFd(a, func(c *ringev.Completion) {
			closeRuns++
			if c.Err != nil {
				t.Errorf("CloseFd: %v", c.Err)
			}
		}, 0); err != nil {
			t.Fatal(err)
		}
		testutil.HandOver(t, a) // the loop closes it now
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
		case <-time.After(deadline):
			t.Fatalf("the peer's writes did not fail within %v of CloseFd's callback: the socket is still open", deadline)
		}
	})
}

// TestRequestCloseFdCancelledStillCloses: Cancel and SetTimeout on CloseFd's own handle, while
// its fd has a request in flight, do not keep the fd open nor run a callback twice: CloseFd's
// callback runs once and the fd is closed.
func TestRequestCloseFdCancelledStillCloses(t *testing.T) {
	eachBackend(t, ringev.Backends(), func(t *testing.T, backend string) {
		a, _ := testutil.Socketpair(t)
		l := newLoop(t, backend)
		recvRuns, closeRuns := 0, 0
		if _, err := l.Recv(a, make([]byte, 4), 0, func(*ringev.Completion) { recvRuns++ }, 0); err != nil {
			t.Fatal(err)
		}
		untilWaited(t, l) // the Recv is in flight
		h, err := l.CloseFd(a, func(*ringev.Completion) { closeRuns++ }, 0)
		if err != nil {
			t.Fatal(err)
		}
		testutil.HandOver(t, a)
		h.SetTimeout(time.Millisecond)
		h.Cancel()
		untilFor(t, l, deadline, "CloseFd", func() bool { return closeRuns > 0 && recvRuns > 0 })
		runTimer(t, l, 20*time.Millisecond, 0) // a second callback would come meanwhile
		if closeRuns != 1 || recvRuns != 1 {
			t.Fatalf("callbacks: CloseFd %d, Recv %d; want 1 each", closeRuns, recvRuns)
		}
		if !testutil.IsClosed(a) {
			t.Fatal("the fd is still open")
		}
	})
}

// TestRequestCloseFdPendingRefusesAddFd: AddFd on an fd whose CloseFd waits for a request in
// flight is refused with ErrFdClosing (the fd is about to be closed under the event), on every
// backend (the readiness backends close it at once, and AddFd then fails with EBADF).
func TestRequestCloseFdPendingRefusesAddFd(t *testing.T) {
	eachBackend(t, ringev.Backends(), func(t *testing.T, backend string) {
		a, _ := testutil.Socketpair(t)
		l := newLoop(t, backend)
		if _, err := l.Recv(a, make([]byte, 4), 0, func(*ringev.Completion) {}, 0); err != nil {
			t.Fatal(err)
		}
		untilWaited(t, l) // the Recv is in flight
		closed := false
		if _, err := l.CloseFd(a, func(*ringev.Completion) { closed = true }, 0); err != nil {
			t.Fatal(err)
		}
		testutil.HandOver(t, a) // the loop closes it now
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

// TestRequestCloseFdThenAddFdOnTheReusedNumber: an fd event left open on an fd that CloseFd
// closed does not keep a new file that takes the number from being watched: AddFd on the new
// file's number (the old event still open) runs its handler when the new pipe has data, and the
// old handler never runs.
func TestRequestCloseFdThenAddFdOnTheReusedNumber(t *testing.T) {
	eachBackend(t, ringev.Backends(), func(t *testing.T, backend string) {
		r, _ := testutil.Pipe(t)
		l := newLoop(t, backend)
		oldRuns := 0
		old, err := l.AddFd(r, ringev.Read, func(*ringev.FdEvent, ringev.Flags) { oldRuns++ })
		if err != nil {
			t.Fatal(err)
		}
		closed := false
		if _, err := l.CloseFd(r, func(*ringev.Completion) { closed = true }, 0); err != nil {
			t.Fatal(err)
		}
		testutil.HandOver(t, r) // the loop closes it now
		untilFor(t, l, deadline, "CloseFd", func() bool { return closed })
		_, nw, _ := testutil.PipeAt(t, r)
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
		testutil.Write(t, nw, []byte("x"))
		untilFor(t, l, deadline, "the new file's handler", func() bool { return newRuns > 0 })
		if oldRuns != 0 {
			t.Errorf("the handler of the fd event of the closed file ran %d times", oldRuns)
		}
		old.Close()
		// the new event still works after the old one is closed
		newRuns = 0
		testutil.Write(t, nw, []byte("y"))
		untilFor(t, l, deadline, "the new file's handler after the old event closed", func() bool { return newRuns > 0 })
	})
}

// TestRequestCloseFdThenAutoCloseEventDoesNotCloseReusedNumber: CloseFd on an fd whose fd event
// has auto-close set closes it once: the event's Close (and the loop's Close) afterwards do not
// close the new file that took the number.
func TestRequestCloseFdThenAutoCloseEventDoesNotCloseReusedNumber(t *testing.T) {
	for _, via := range []string{"event", "loop"} {
		t.Run(via, func(t *testing.T) {
			eachBackend(t, ringev.Backends(), func(t *testing.T, backend string) {
				r, _ := testutil.Pipe(t)
				l := newLoop(t, backend)
				ev, err := l.AddFd(r, ringev.Read, func(*ringev.FdEvent, ringev.Flags) {})
				if err != nil {
					t.Fatal(err)
				}
				ev.SetAutoClose(true)
				closed := false
				if _, err := l.CloseFd(r, func(*ringev.Completion) { closed = true }, 0); err != nil {
					t.Fatal(err)
				}
				testutil.HandOver(t, r)
				untilFor(t, l, deadline, "CloseFd", func() bool { return closed })
				testutil.PipeAt(t, r) // a new file takes the number
				if via == "event" {
					ev.Close()
				} else if err := l.Close(); err != nil {
					t.Fatal(err)
				}
				if testutil.IsClosed(r) {
					t.Fatalf("the %s's Close closed fd %d again, now another file's", via, r)
				}
			})
		})
	}
}

// TestRequestCloseFdOnLoopsOwnFdIsRefused: CloseFd, requests (Read) and AddFd on one of the
// loop's own fds (its epoll set, ring, wake-up eventfd) are refused with EBADF, as AddFd refuses
// them: a wrong number must not close the loop's insides. The loop still wakes for Post
// afterwards.
func TestRequestCloseFdOnLoopsOwnFdIsRefused(t *testing.T) {
	eachBackend(t, ringev.Backends(), func(t *testing.T, backend string) {
		before := testutil.OpenFds(t)
		l := newLoop(t, backend)
		for _, fd := range testutil.FdsSince(t, before) {
			if ev, err := l.AddFd(fd, ringev.Read, func(*ringev.FdEvent, ringev.Flags) {}); err == nil {
				ev.Close()
				t.Errorf("AddFd(%d), one of the loop's own fds, was accepted", fd)
			}
			if _, err := l.Read(fd, make([]byte, 8), -1, func(*ringev.Completion) {}, 0); err == nil {
				t.Errorf("Read(%d), one of the loop's own fds, was accepted", fd)
			}
			if _, err := l.CloseFd(fd, func(*ringev.Completion) {}, 0); err == nil {
				if testutil.IsClosed(fd) {
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

// TestCloseFdCompletesAfterEveryCompletionOfAFloodedMultishot: CloseFd, called in the first
// callback of a RecvMultishot that has more completions queued than the 8 of one request that
// run per Once (on uring, 16 receives of 16 bytes and ENOBUFS come in one wait), completes after
// the recv's last completion: none of the recv's completions, put behind the others' for a later
// Once, comes after CloseFd's.
func TestCloseFdCompletesAfterEveryCompletionOfAFloodedMultishot(t *testing.T) {
	eachBackend(t, ringev.Backends(), func(t *testing.T, backend string) {
		a, b := testutil.Socketpair(t)
		l := newLoop(t, backend)
		requireOp(t, ringev.OpRecvMultishot)
		g, err := l.NewBufferGroup(16, 16)
		if err != nil {
			t.Fatal(err)
		}
		testutil.Write(t, b, make([]byte, 64*16)) // 64 receives of 16 bytes
		recvs, recvLast, closed, late := 0, 0, 0, 0
		onClose := func(c *ringev.Completion) {
			closed++
			if c.Err != nil {
				t.Errorf("CloseFd: %v", c.Err)
			}
		}
		if _, err := l.RecvMultishot(a, g, 0, func(c *ringev.Completion) {
			recvs++
			if closed > 0 {
				late++
			}
			if !c.More {
				recvLast++
			}
			if recvs == 1 {
				if _, err := l.CloseFd(a, onClose, 0); err != nil {
					t.Errorf("CloseFd: %v", err)
				}
				testutil.HandOver(t, a) // the loop closes it now
			}
			c.ReleaseBuffer()
		}, 0); err != nil {
			t.Fatal(err)
		}
		untilFor(t, l, deadline, "the recv's last completion and CloseFd's", func() bool {
			return recvLast > 0 && closed > 0
		})
		quiet(t, l)
		if late > 0 || recvLast != 1 || closed != 1 {
			t.Fatalf("%d of the recv's %d completions came after CloseFd's; last completions: recv %d, close %d (want 0 late, 1 each)",
				late, recvs, recvLast, closed)
		}
	})
}

// TestCloseFdOfARecvMultishotWhoseTurnFoundNoDataEndsItWithECANCELED: CloseFd of a RecvMultishot
// whose turn (one receive, after its group ran dry) is in the kernel and finds the socket empty
// ends the request with ECANCELED, not with the turn's EAGAIN, which is never a multishot's own
// result. The turn reaches the kernel before CloseFd through UnregisterFile, which submits the
// SQEs prepared on the fd; its CQE is read after CloseFd's cancel.
func TestCloseFdOfARecvMultishotWhoseTurnFoundNoDataEndsItWithECANCELED(t *testing.T) {
	a, b := testutil.Socketpair(t)
	l := newLoop(t, "uring")
	requireOp(t, ringev.OpRecvMultishot)
	register(t, l, a)
	g, err := l.NewBufferGroup(1, 16)
	if err != nil {
		t.Fatal(err)
	}
	held, dry, last := -1, false, false
	var lastErr error
	must(t)(l.RecvMultishot(a, g, 0, func(c *ringev.Completion) {
		switch {
		case !c.More:
			last, lastErr = true, c.Err
		case errors.Is(c.Err, unix.ENOBUFS):
			dry = true
		case c.Err == nil:
			held = c.BufferID()
		}
	}, 0))
	testutil.Write(t, b, make([]byte, 16))
	until(t, l, func() bool { return held >= 0 })
	testutil.Write(t, b, make([]byte, 16))
	until(t, l, func() bool { return dry })
	if n, err := unix.Read(a, make([]byte, 64)); n != 16 || err != nil {
		t.Fatalf("draining the socket: %d, %v; want the 16 bytes the group had no buffer for", n, err)
	}
	g.Release(held) // the turn is prepared now, on an empty socket
	if err := l.UnregisterFile(a); err != nil {
		t.Fatal(err)
	}
	must(t)(l.CloseFd(a, func(*ringev.Completion) {}, 0))
	testutil.HandOver(t, a)
	until(t, l, func() bool { return last })
	if !errors.Is(lastErr, unix.ECANCELED) {
		t.Fatalf("the RecvMultishot's last completion: %v, want ECANCELED", lastErr)
	}
}
