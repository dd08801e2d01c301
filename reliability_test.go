//go:build linux

package ringev_test

// Reliability (issue 11): the shapes of public bug reports against event loops, each a whole
// class. A dup'd fd closed with close(2) behind the loop (items 1), a raw close while the poll
// backend sleeps in ppoll (2), io_uring_enter denied while io_uring_setup works (4), handlers
// that re-queue themselves starving the fds (6), half-close and the flags a handler sees (6b).

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/ringev/ringev"
	"github.com/ringev/ringev/internal/testutil"
)

// TestAutoFallsBackWhenIoUringEnterDenied (issue 11 item 4): io_uring_setup works but
// io_uring_enter fails with EPERM (a seccomp filter that denies it alone, installed by a child
// process: the test re-executes its own binary). "auto" must not accept a backend whose first
// wait would fail: it chooses epoll, and BackendReason names io_uring_enter; WithBackend("uring")
// and ("uring-poll") fail in New with an error that names io_uring_enter and wraps EPERM.
func TestAutoFallsBackWhenIoUringEnterDenied(t *testing.T) {
	if deniedChildIfAsked() {
		return
	}
	if l, err := ringev.New(ringev.WithBackend("uring")); err != nil {
		t.Skipf("the uring backend does not work here even without the filter: %v", err)
	} else {
		l.Close()
	}
	res := runDenied(t, "TestAutoFallsBackWhenIoUringEnterDenied", unix.SYS_IO_URING_ENTER, unix.EPERM)
	t.Logf("child: %v", res)
	if res["auto"] != "epoll" {
		t.Errorf("auto chose %q with io_uring_enter denied, want epoll", res["auto"])
	}
	if r := res["auto-reason"]; !strings.Contains(r, "io_uring_enter") || !strings.Contains(r, unix.EPERM.Error()) {
		t.Errorf("BackendReason %q does not name io_uring_enter and its error (%s)", r, unix.EPERM.Error())
	}
	for _, name := range []string{"uring", "uring-poll"} {
		if e := res[name+"-err"]; !strings.Contains(e, "io_uring_enter") {
			t.Errorf("New(WithBackend(%q)) with io_uring_enter denied: error %q, want one naming io_uring_enter", name, e)
		}
		if res[name+"-wraps"] != "true" {
			t.Errorf("New(WithBackend(%q)): the error does not wrap EPERM (errors.Is)", name)
		}
	}
	if res["epoll"] != "ok" {
		t.Errorf("New(WithBackend(\"epoll\")) in the child: %s", res["epoll"])
	}
}

// requeuer is a handler kind that re-queues itself from its own run: a zero-delay timer, an
// immediate, a posted function.
type requeuer struct {
	name  string
	start func(l *ringev.Loop, ran *int)
}

var requeuers = []requeuer{
	{"timer", func(l *ringev.Loop, ran *int) {
		var h func(*ringev.Timer)
		h = func(*ringev.Timer) { *ran++; l.AddTimer(0, h) }
		l.AddTimer(0, h)
	}},
	{"immediate", func(l *ringev.Loop, ran *int) {
		var h func()
		h = func() { *ran++; l.AddImmediate(h) }
		l.AddImmediate(h)
	}},
	{"posted", func(l *ringev.Loop, ran *int) {
		var h func()
		h = func() { *ran++; l.Post(h) }
		l.Post(h)
	}},
}

// TestRequeuingHandlerDoesNotStarveFds (issue 11 item 6): a zero-delay timer re-added from its
// own handler (or an immediate, or a posted function, that re-queues itself) and a pipe that
// stays readable; 1,000 Onces. The first Once keeps tevent's order (the timer, immediate or
// posted function runs before the fd handler), but at most FdStarvationLimit Onces in a row run
// it while the fd is ready: the fd handler runs at least 1,000/(FdStarvationLimit+1) times, and
// every Once runs one handler. Every backend and dispatch mode.
func TestRequeuingHandlerDoesNotStarveFds(t *testing.T) {
	const onces = 1000
	k := ringev.FdStarvationLimit
	eachMode(t, ringev.Backends(), allModes, func(t *testing.T, b string, m mode) {
		for _, q := range requeuers {
			t.Run(q.name, func(t *testing.T) {
				r, w := ownedPipe(t)
				l := newLoop(t, b, m.opts()...)
				fdRuns, otherRuns := 0, 0
				addFd(t, l, r.fd, ringev.Read, func(*ringev.FdEvent, ringev.Flags) { fdRuns++ }) // never drained
				testutil.Write(t, w.fd, []byte{'x'})
				q.start(l, &otherRuns)
				gap, maxGap, firstFd := 0, 0, -1
				for i := 0; i < onces; i++ {
					before := fdRuns
					testutil.Once(t, l, deadline)
					if fdRuns > before {
						if firstFd < 0 {
							firstFd = i
						}
						gap = 0
					} else {
						gap++
						maxGap = max(maxGap, gap)
					}
				}
				t.Logf("%d Onces: %d fd handler runs (the first in Once %d), %d %s runs, at most %d Onces in a row without the fd", onces, fdRuns, firstFd, otherRuns, q.name, maxGap)
				if firstFd == 0 {
					t.Errorf("the first Once ran the fd handler; tevent's order runs the %s first", q.name)
				}
				if want := onces / (k + 1); fdRuns < want {
					t.Errorf("the fd handler ran %d times in %d Onces, want at least %d (FdStarvationLimit %d)", fdRuns, onces, want, k)
				}
				if maxGap > k {
					t.Errorf("%d Onces in a row ran no fd handler while the fd was readable, want at most FdStarvationLimit (%d)", maxGap, k)
				}
				if fdRuns+otherRuns != onces {
					t.Errorf("%d Onces ran %d handlers, want one each", onces, fdRuns+otherRuns)
				}
			})
		}
	})
}

// flagsSeen watches fd with flags on l and returns a pointer to the flags of the handler's
// last call and to its call count; the handler disarms itself (flags 0), so it runs once per
// SetFlags.
func flagsSeen(t *testing.T, l *ringev.Loop, fd int, flags ringev.Flags) (*ringev.FdEvent, *ringev.Flags, *int) {
	t.Helper()
	var got ringev.Flags
	calls := 0
	ev := addFd(t, l, fd, flags, func(ev *ringev.FdEvent, f ringev.Flags) {
		got = f
		calls++
		if err := ev.SetFlags(0); err != nil {
			t.Errorf("SetFlags(0): %v", err)
		}
	})
	return ev, &got, &calls
}

// calledInQuietPeriod runs the loop through a quiet period (until a timer due in quietFor has
// run) and reports whether the handler has been called (*calls > 0).
func calledInQuietPeriod(t *testing.T, l *ringev.Loop, calls *int) bool {
	t.Helper()
	runTimer(t, l, quietFor, 0)
	return *calls > 0
}

// awaitCalled runs the loop until the handler has been called (*calls > 0), failing the test,
// named by what, if it has not been by the deadline (a timer: the bound only turns a hang into
// a failure).
func awaitCalled(t *testing.T, l *ringev.Loop, calls *int, what string) {
	t.Helper()
	late := false
	tm := l.AddTimer(deadline, func(*ringev.Timer) { late = true })
	n := testutil.OnceUntil(t, l, func() bool { return *calls > 0 || late }, 2*deadline)
	tm.Stop()
	if *calls == 0 {
		t.Fatalf("%s: the handler was not called within %v (%d Once calls)", what, deadline, n)
	}
}

// TestHalfCloseReportsError (issue 11 item 6b): the peer of a TCP connection over loopback
// shuts down its writing side (shutdown(SHUT_WR), a half-close). As in tevent (which asks for
// POLLRDHUP with TEVENT_FD_READ and TEVENT_FD_ERROR and reports TEVENT_FD_ERROR on it), a
// handler that watches only Error wakes with Error, one that watches Read|Error gets Read|Error,
// one that watches Read gets Read; a handler that watches Write alone keeps its Write flag (the
// socket is still writable) and is still told so, also beside a Read|Error handler of the same
// fd (the fd is then watched for POLLRDHUP). None of them is called before the shutdown. Every
// backend.
func TestHalfCloseReportsError(t *testing.T) {
	eachBackend(t, ringev.Backends(), func(t *testing.T, b string) {
		for _, c := range []struct {
			watch, want ringev.Flags
			beside      ringev.Flags // another handler on the same fd (0: none)
		}{
			{ringev.Error, ringev.Error, 0},
			{ringev.Read | ringev.Error, ringev.Read | ringev.Error, 0},
			{ringev.Read, ringev.Read, 0},
			{ringev.Write, ringev.Write, 0},
			{ringev.Write, ringev.Write, ringev.Read | ringev.Error}, // the fd is watched for POLLRDHUP
		} {
			name := c.watch.String()
			if c.beside != 0 {
				name += "/beside-" + c.beside.String()
			}
			t.Run(name, func(t *testing.T) {
				client, server := tcpPair(t)
				l := newLoop(t, b)
				if c.beside != 0 {
					addFd(t, l, server, c.beside, func(*ringev.FdEvent, ringev.Flags) {})
				}
				ev, got, calls := flagsSeen(t, l, server, c.watch)
				if c.watch != ringev.Write {
					if calledInQuietPeriod(t, l, calls) {
						t.Fatalf("the handler was called with %v before the peer's shutdown", *got)
					}
				}
				if err := unix.Shutdown(client, unix.SHUT_WR); err != nil {
					t.Fatalf("shutdown(SHUT_WR): %v", err)
				}
				*calls = 0
				if c.watch == ringev.Write {
					// It ran before the shutdown (writable) and disarmed itself: re-arm it.
					if err := ev.SetFlags(ringev.Write); err != nil {
						t.Fatalf("SetFlags(Write): %v", err)
					}
				}
				awaitCalled(t, l, calls, fmt.Sprintf("a %v handler, after the peer's shutdown(SHUT_WR)", c.watch))
				if *got != c.want {
					t.Errorf("a %v handler got %v after the peer's shutdown(SHUT_WR), want %v", c.watch, *got, c.want)
				}
				if c.watch == ringev.Write && *got == ringev.Write {
					// The handler disarmed itself; it kept Write until then (the error rule would
					// have cleared it before the call). Once more, to see that it still comes.
					if err := ev.SetFlags(ringev.Write); err != nil {
						t.Fatalf("SetFlags(Write): %v", err)
					}
					*calls = 0
					awaitCalled(t, l, calls, "a Write handler, again on the half-closed (still writable) socket")
				}
			})
		}
	})
}

// TestPeerCloseFlags (issue 11 item 6b): the peer of an AF_UNIX socketpair closes. Each handler
// gets the flags it watches among Read, Error, and Write when the kernel reports the socket
// writable too (POLLOUT, as poll(2) on it says here) — tevent's poll backend does the same —
// except a handler that watches Write alone: it is not called and loses its Write flag. Every
// backend.
func TestPeerCloseFlags(t *testing.T) {
	masks := []ringev.Flags{ringev.Read, ringev.Write, ringev.Error, ringev.Read | ringev.Write,
		ringev.Write | ringev.Error, ringev.Read | ringev.Error, ringev.Read | ringev.Write | ringev.Error}
	eachBackend(t, ringev.Backends(), func(t *testing.T, b string) {
		for _, m := range masks {
			t.Run(m.String(), func(t *testing.T) {
				a, peer := ownedSocketpair(t)
				l := newLoop(t, b)
				ev, got, calls := flagsSeen(t, l, a.fd, m)
				if m&ringev.Write != 0 {
					// Writable from the start: let it run once, then re-arm it.
					awaitCalled(t, l, calls, fmt.Sprintf("a %v handler, on a writable socket", m))
					*calls, *got = 0, 0
					if err := ev.SetFlags(m); err != nil {
						t.Fatalf("SetFlags: %v", err)
					}
				}
				if err := peer.Close(); err != nil {
					t.Fatalf("close: %v", err)
				}
				pfd := []unix.PollFd{{Fd: int32(a.fd), Events: unix.POLLIN | unix.POLLOUT}}
				if _, err := unix.Poll(pfd, 0); err != nil {
					t.Fatalf("poll: %v", err)
				}
				want := m & (ringev.Read | ringev.Error)
				if pfd[0].Revents&unix.POLLOUT != 0 && want != 0 {
					want |= m & ringev.Write
				}
				// A handler due to run is called (the hang-up is there already); one that is
				// not stays silent through a quiet period.
				called := true
				if want == 0 {
					called = calledInQuietPeriod(t, l, calls)
				} else {
					awaitCalled(t, l, calls, fmt.Sprintf("a %v handler, on hang-up", m))
				}
				t.Logf("revents %#x: a %v handler got %v (called %v), flags now %v", pfd[0].Revents, m, *got, called, ev.Flags())
				if want == 0 {
					if called {
						t.Errorf("a Write-only handler was called with %v on hang-up, want not called", *got)
					}
					if ev.Flags() != 0 {
						t.Errorf("a Write-only handler kept flags %v on hang-up, want Write cleared", ev.Flags())
					}
					return
				}
				if !called || *got != want {
					t.Errorf("a %v handler got %v (called %v) on hang-up, want %v", m, *got, called, want)
				}
			})
		}
	})
}

// TestWriteEventOnHalfClosedFullSocketWaitsAsleep: an fd event watching Write alone on a socket
// whose send queue is full and whose peer has shut down its writing side is not run, and the
// loop sleeps, until the peer reads; then it runs with Write. On uring-poll a one-shot
// IORING_OP_POLL_ADD for POLLOUT completed at once with POLLRDHUP (io_uring adds it to every
// poll) and was re-armed at once: the loop spun inside Once.
func TestWriteEventOnHalfClosedFullSocketWaitsAsleep(t *testing.T) {
	eachBackend(t, ringev.Backends(), func(t *testing.T, b string) {
		a, peer := ownedSocketpair(t)
		chunk := make([]byte, 64<<10)
		for {
			if _, err := unix.Write(a.fd, chunk); err != nil {
				break // EAGAIN: full
			}
		}
		if err := unix.Shutdown(peer.fd, unix.SHUT_WR); err != nil {
			t.Fatalf("shutdown(SHUT_WR): %v", err)
		}
		l := newLoop(t, b)
		var got ringev.Flags
		calls := 0
		addFd(t, l, a.fd, ringev.Write, func(ev *ringev.FdEvent, f ringev.Flags) {
			calls++
			got = f
			ev.SetFlags(0)
		})
		settle(t, l, 100*time.Millisecond, 1) // fails if the handler runs, or the loop spins
		if calls != 0 {
			t.Fatalf("the Write handler ran %d times before the peer read (flags %v)", calls, got)
		}
		drainUntil(t, l, peer.fd, func() bool { return calls > 0 })
		if got != ringev.Write {
			t.Fatalf("the Write handler got %v once the peer read, want %v", got, ringev.Write)
		}
	})
}
