//go:build linux

package ringev_test

// Tests of fd events on hang-up, half-close and error: which handlers run, with which flags, and
// that the loop sleeps while nothing it watches for is there.

import (
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/ringev/ringev"
	"github.com/ringev/ringev/internal/testutil"
	"golang.org/x/sys/unix"
)

// TestFdHangupMixedHandlersWriteOnlyLosesWrite: one socket, five fd events (Read, Write,
// Read|Write, Error, Write|Error); the peer closes. The Write-only one is never called and loses
// Write (tevent's rule); every other one runs, with flags within its mask and never Write-only
// semantics violated; the others keep their flags.
func TestFdHangupMixedHandlersWriteOnlyLosesWrite(t *testing.T) {
	eachMode(t, withFallback(), allModes, func(t *testing.T, backend string, m mode) {
		a, peer := testutil.Socketpair(t)
		l := newLoop(t, backend, m.opts()...)
		masks := []ringev.Flags{ringev.Read, ringev.Write, ringev.Read | ringev.Write, ringev.Error, ringev.Write | ringev.Error}
		got := make([]ringev.Flags, len(masks))
		counts := make([]int, len(masks))
		evs := make([]*ringev.FdEvent, len(masks))
		hungUp := false
		for i, m := range masks {
			evs[i] = addFd(t, l, a, m, func(ev *ringev.FdEvent, f ringev.Flags) {
				counts[i]++
				got[i] |= f
				if f&^masks[i] != 0 || f == 0 {
					t.Errorf("event %v called with %v", masks[i], f)
				}
				if masks[i] == ringev.Write && hungUp {
					t.Errorf("Write-only event called with %v on a hung-up socket", f)
				}
			})
		}
		// First let the Write handlers see the socket writable, then hang up.
		for range 3 {
			once(t, l)
		}
		testutil.Close(t, peer)
		hungUp = true
		base := append([]int(nil), counts...)
		until(t, l, func() bool {
			return counts[0] > base[0] && counts[2] > base[2] && counts[3] > base[3] && counts[4] > base[4]
		})
		if w := evs[1].Flags(); w != 0 {
			t.Fatalf("Write-only event keeps %v after hang-up, want 0", w)
		}
		for i, m := range masks {
			if i != 1 && evs[i].Flags() != m {
				t.Fatalf("event %v changed to %v", m, evs[i].Flags())
			}
		}
		if got[3] != ringev.Error || got[0]&ringev.Read == 0 || got[2]&ringev.Read == 0 || got[4]&ringev.Error == 0 {
			t.Fatalf("flags seen after hang-up: %v", got)
		}
	})
}

// TestFdPipeWriterErrorWriteOnlyNotCalled: a pipe's write end with two Write-only events and
// one Write|Error event; the read end closes (POLLERR). The Write-only ones are never called and
// both lose Write; the Write|Error one is told Error.
func TestFdPipeWriterErrorWriteOnlyNotCalled(t *testing.T) {
	eachMode(t, withFallback(), allModes, func(t *testing.T, backend string, m mode) {
		pr, pw := testutil.Pipe(t)
		l := newLoop(t, backend, m.opts()...)
		w1 := addFd(t, l, pw, ringev.Write, never(t, "Write-only 1"))
		w2 := addFd(t, l, pw, ringev.Write, never(t, "Write-only 2"))
		var seen ringev.Flags
		errRuns := 0
		addFd(t, l, pw, ringev.Write|ringev.Error, func(ev *ringev.FdEvent, f ringev.Flags) {
			errRuns++
			seen |= f
		})
		// Fill the pipe so that Write is not ready, then close the read end.
		testutil.Fill(t, pw)
		testutil.Close(t, pr)
		until(t, l, func() bool { return errRuns > 0 })
		if seen&ringev.Error == 0 {
			t.Fatalf("Write|Error event saw %v, want Error", seen)
		}
		if w1.Flags() != 0 || w2.Flags() != 0 {
			t.Fatalf("Write-only events keep %v and %v", w1.Flags(), w2.Flags())
		}
	})
}

// TestFdPeerCloseFlags : the peer of an AF_UNIX socketpair closes. Each handler
// gets the flags it watches among Read, Error, and Write when the kernel reports the socket
// writable too (POLLOUT, as poll(2) on it says here) — tevent's poll backend does the same —
// except a handler that watches Write alone: it is not called and loses its Write flag. Every
// backend.
func TestFdPeerCloseFlags(t *testing.T) {
	masks := []ringev.Flags{ringev.Read, ringev.Write, ringev.Error, ringev.Read | ringev.Write,
		ringev.Write | ringev.Error, ringev.Read | ringev.Error, ringev.Read | ringev.Write | ringev.Error}
	eachBackend(t, ringev.Backends(), func(t *testing.T, b string) {
		for _, m := range masks {
			t.Run(m.String(), func(t *testing.T) {
				a, peer := testutil.Socketpair(t)
				l := newLoop(t, b)
				ev, got, calls := flagsSeen(t, l, a, m)
				if m&ringev.Write != 0 {
					// Writable from the start: let it run once, then re-arm it.
					untilFor(t, l, deadline, fmt.Sprintf("a %v handler, on a writable socket", m), func() bool { return *calls > 0 })
					*calls, *got = 0, 0
					if err := ev.SetFlags(m); err != nil {
						t.Fatalf("SetFlags: %v", err)
					}
				}
				if err := testutil.Close(t, peer); err != nil {
					t.Fatalf("close: %v", err)
				}
				pfd := []unix.PollFd{{Fd: int32(a), Events: unix.POLLIN | unix.POLLOUT}}
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
					untilFor(t, l, deadline, fmt.Sprintf("a %v handler, on hang-up", m), func() bool { return *calls > 0 })
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

// TestFdHalfCloseReportsError : the peer of a TCP connection over loopback
// shuts down its writing side (shutdown(SHUT_WR), a half-close). As in tevent (which asks for
// POLLRDHUP with TEVENT_FD_READ and TEVENT_FD_ERROR and reports TEVENT_FD_ERROR on it), a
// handler that watches only Error wakes with Error, one that watches Read|Error gets Read|Error,
// one that watches Read gets Read; a handler that watches Write alone keeps its Write flag (the
// socket is still writable) and is still told so, also beside a Read|Error handler of the same
// fd (the fd is then watched for POLLRDHUP). None of them is called before the shutdown. Every
// backend.
func TestFdHalfCloseReportsError(t *testing.T) {
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
				client, server := testutil.TCPPair(t, 0)
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
				untilFor(t, l, deadline, fmt.Sprintf("a %v handler, after the peer's shutdown(SHUT_WR)", c.watch), func() bool { return *calls > 0 })
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
					untilFor(t, l, deadline, "a Write handler, again on the half-closed (still writable) socket", func() bool { return *calls > 0 })
				}
			})
		}
	})
}

// TestFdHalfClosedReadAndWriteEventsOnOneFd: on a half-closed full socket a Read event and a Write
// event share the fd. The Read event runs (end of file) and disarms itself; then the loop
// sleeps, with the Write event waiting, until the peer reads; then the Write event runs with
// Write, once.
func TestFdHalfClosedReadAndWriteEventsOnOneFd(t *testing.T) {
	eachBackend(t, ringev.Backends(), func(t *testing.T, backend string) {
		a, peer := testutil.HalfClosedFull(t)
		l := newLoop(t, backend)
		var rd, wr int
		var wgot ringev.Flags
		addFd(t, l, a, ringev.Read, func(ev *ringev.FdEvent, f ringev.Flags) {
			rd++
			var b [16]byte
			if n, err := unix.Read(ev.Fd(), b[:]); n != 0 || err != nil {
				t.Errorf("read on the half-closed socket: %d, %v; want end of file", n, err)
			}
			ev.SetFlags(0)
		})
		addFd(t, l, a, ringev.Write, func(ev *ringev.FdEvent, f ringev.Flags) {
			wr++
			wgot = f
			ev.SetFlags(0)
		})
		until(t, l, func() bool { return rd > 0 })
		settle(t, l, 50*time.Millisecond, 3)
		if rd != 1 || wr != 0 {
			t.Fatalf("before the peer read: Read handler ran %d times (want 1), Write handler %d (want 0)", rd, wr)
		}
		drainUntil(t, l, peer, func() bool { return wr > 0 })
		if wgot != ringev.Write {
			t.Fatalf("the Write handler got %v, want %v", wgot, ringev.Write)
		}
		settle(t, l, 20*time.Millisecond, 3)
		if rd != 1 || wr != 1 {
			t.Fatalf("after: Read handler ran %d times, Write handler %d; want 1 and 1", rd, wr)
		}
	})
}

// TestFdWriteOnHalfClosedFullSocketsWaitsAsleep: fd events watching Write alone on sockets whose
// send queue is full and whose peer has shut down its writing side are not run, and the loop
// sleeps (no Once but its timer's, no spinning), until the peers read; then each runs once,
// with Write. One socket, and 64. (On uring-poll a one-shot IORING_OP_POLL_ADD for POLLOUT
// completes at once with POLLRDHUP, which io_uring adds to every poll: re-armed at once, it
// would spin the loop inside Once.)
func TestFdWriteOnHalfClosedFullSocketsWaitsAsleep(t *testing.T) {
	for _, c := range []struct {
		name     string
		n        int
		quiet    time.Duration
		maxOnces int
	}{{"One", 1, 100 * time.Millisecond, 1}, {"Many", 64, 50 * time.Millisecond, 3}} {
		t.Run(c.name, func(t *testing.T) {
			eachBackend(t, ringev.Backends(), func(t *testing.T, backend string) {
				var as, peers []int
				for range c.n {
					a, p := testutil.HalfClosedFull(t)
					as, peers = append(as, a), append(peers, p)
				}
				l := newLoop(t, backend)
				runs := make([]int, c.n)
				got := make([]ringev.Flags, c.n)
				for i, a := range as {
					addFd(t, l, a, ringev.Write, func(ev *ringev.FdEvent, f ringev.Flags) {
						runs[i]++
						got[i] = f
						ev.SetFlags(0)
					})
				}
				settle(t, l, c.quiet, c.maxOnces) // fails if a handler runs, or the loop spins
				for i := range runs {
					if runs[i] != 0 {
						t.Fatalf("fd %d's Write handler ran %d times before its peer read (flags %v)", as[i], runs[i], got[i])
					}
				}
				buf := make([]byte, 256<<10)
				for _, p := range peers {
					for {
						if k, err := unix.Read(p, buf); k <= 0 || err != nil {
							break
						}
					}
				}
				until(t, l, func() bool { return !slices.Contains(runs, 0) })
				settle(t, l, 20*time.Millisecond, 3)
				for i := range runs {
					if runs[i] != 1 || got[i] != ringev.Write {
						t.Fatalf("fd %d's Write handler ran %d times, with %v; want once, with %v", as[i], runs[i], got[i], ringev.Write)
					}
				}
			})
		})
	}
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
