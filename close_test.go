//go:build linux

package ringev_test

// Close safety (DESIGN.md point 5, issue 4 item 1), on every backend: closing an fd event;
// auto-close; a plain close(2) behind the loop's back; a second, idle loop watching the same fd;
// fd-number reuse right after a close. In each case the handler never runs again and the file is
// really released: the socket's peer reads EOF within 100 ms.
//
// "uring-poll" is documented as not close-safe (WithBackend): where a case needs a raw close(2) or
// an idle second loop to release the file, the test asserts that uring-poll does pin the file (the
// documented behaviour) instead of expecting EOF.

import (
	"errors"
	"fmt"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/ringev/ringev"
	"github.com/ringev/ringev/internal/testutil"
)

// TestCloseFdEventDropsReadinessReportedInSameWait: two fds are reported ready by one wait; the
// handler that runs first closes the other's fd event; the other handler never runs, although
// its readiness was already reported (and, on io_uring, its completion already queued).
func TestCloseFdEventDropsReadinessReportedInSameWait(t *testing.T) {
	eachBackend(t, ringev.Backends(), func(t *testing.T, backend string) {
		for _, m := range allModes {
			t.Run(m.name, func(t *testing.T) {
				a, pa := ownedSocketpair(t)
				b, pb := ownedSocketpair(t)
				l := newLoop(t, backend, m.opts()...)
				var evs [2]*ringev.FdEvent
				ran := [2]int{}
				for i, fd := range []int{a.fd, b.fd} {
					evs[i] = addFd(t, l, fd, ringev.Read, func(ev *ringev.FdEvent, f ringev.Flags) {
						ran[i]++
						if ran[1-i] > 0 {
							t.Errorf("handler %d ran after handler %d had closed its event", i, 1-i)
						}
						testutil.Drain(t, ev.Fd())
						if err := evs[1-i].Close(); err != nil {
							t.Errorf("closing the other fd event from a handler: %v", err)
						}
						if err := ev.Close(); err != nil {
							t.Errorf("closing the own fd event from a handler: %v", err)
						}
					})
				}
				testutil.Write(t, pa.fd, []byte{'a'})
				testutil.Write(t, pb.fd, []byte{'b'})
				testutil.Once(t, l, deadline)
				if ran[0]+ran[1] != 1 {
					t.Fatalf("first Once ran %d fd handlers, want 1", ran[0]+ran[1])
				}
				settle(t, l, 30*time.Millisecond, 5)
				if ran[0]+ran[1] != 1 {
					t.Fatalf("handlers ran %v times; the one whose event was closed must not run", ran)
				}
			})
		}
	})
}

// TestCloseAutoCloseReleasesFile: with SetAutoClose(true), closing the fd event (from the loop's
// goroutine, from inside the event's own handler, or by closing the loop) closes the fd, and the
// socket's peer reads EOF within 100 ms although the loop had been waiting on the fd.
func TestCloseAutoCloseReleasesFile(t *testing.T) {
	eachBackend(t, ringev.Backends(), func(t *testing.T, backend string) {
		t.Run("FdEventClose", func(t *testing.T) {
			a, peer := ownedSocketpair(t)
			l := newLoop(t, backend)
			ev := addFd(t, l, a.fd, ringev.Read, never(t, "idle socket"))
			ev.SetAutoClose(true)
			a.HandOver()
			settle(t, l, 10*time.Millisecond, 3) // the loop has waited on a
			if err := ev.Close(); err != nil {
				t.Fatalf("FdEvent.Close with auto-close: %v", err)
			}
			if !isClosed(a.fd) {
				t.Fatalf("fd %d is still open after FdEvent.Close with auto-close", a.fd)
			}
			expectEOF(t, peer.fd, releaseWithin, "auto-close by FdEvent.Close")
			settle(t, l, 10*time.Millisecond, 3)
		})
		t.Run("FromOwnHandler", func(t *testing.T) {
			a, peer := ownedSocketpair(t)
			l := newLoop(t, backend)
			runs := 0
			ev := addFd(t, l, a.fd, ringev.Read, func(ev *ringev.FdEvent, f ringev.Flags) {
				runs++
				testutil.Drain(t, ev.Fd())
				if err := ev.Close(); err != nil {
					t.Errorf("FdEvent.Close from its own handler: %v", err)
				}
			})
			ev.SetAutoClose(true)
			a.HandOver()
			settle(t, l, 10*time.Millisecond, 3)
			testutil.Write(t, peer.fd, []byte{'x'})
			testutil.Once(t, l, deadline)
			if runs != 1 {
				t.Fatalf("handler ran %d times, want 1", runs)
			}
			if !isClosed(a.fd) {
				t.Fatalf("fd %d is still open after auto-close from its handler", a.fd)
			}
			expectEOF(t, peer.fd, releaseWithin, "auto-close from the event's own handler")
			settle(t, l, 20*time.Millisecond, 3)
			if runs != 1 {
				t.Fatalf("handler ran %d times after its event was closed, want 1 in all", runs)
			}
		})
		t.Run("LoopClose", func(t *testing.T) {
			a, peer := ownedSocketpair(t)
			l := newLoop(t, backend) // closed by the test; cleanup's second Close returns nil
			ev := addFd(t, l, a.fd, ringev.Read, never(t, "idle socket"))
			ev.SetAutoClose(true)
			a.HandOver()
			settle(t, l, 10*time.Millisecond, 3)
			if err := l.Close(); err != nil {
				t.Fatalf("Loop.Close: %v", err)
			}
			if !isClosed(a.fd) {
				t.Fatalf("fd %d is still open after Loop.Close with an auto-close event", a.fd)
			}
			expectEOF(t, peer.fd, releaseWithin, "auto-close by Loop.Close")
		})
	})
}

// TestClosePlainCloseBehindLoopsBackReleasesFile: the fd of a watched (and waited-on) socket is
// closed with a plain close(2), not through the loop. Its peer reads EOF within 100 ms, the
// handler never runs, and the loop neither spins nor fails afterwards (on poll, one Once reports
// the invalid fd with an error wrapping EBADF). uring-poll pins the file until the loop is closed,
// as documented.
func TestClosePlainCloseBehindLoopsBackReleasesFile(t *testing.T) {
	eachBackend(t, ringev.Backends(), func(t *testing.T, backend string) {
		a, peer := ownedSocketpair(t)
		l := newLoop(t, backend)
		addFd(t, l, a.fd, ringev.Read, never(t, "socket closed behind the loop's back"))
		settle(t, l, 10*time.Millisecond, 3) // the loop has waited on a
		if err := a.Close(); err != nil {
			t.Fatalf("close(2): %v", err)
		}
		if backend == notCloseSafe {
			expectPinned(t, peer.fd, "plain close(2) of an fd uring-poll watches")
			settle(t, l, 50*time.Millisecond, 5)
			if err := l.Close(); err != nil {
				t.Fatalf("Loop.Close: %v", err)
			}
			if ok, took, last := peerEOF(peer.fd, time.Second); !ok {
				t.Fatalf("uring-poll: the file is still pinned 1 s after Loop.Close (last read: %s)", last)
			} else {
				t.Logf("uring-poll: file released %v after Loop.Close", took)
			}
			return
		}
		expectEOF(t, peer.fd, releaseWithin, "plain close(2) behind the loop's back")
		errs := settle(t, l, 100*time.Millisecond, 5)
		for _, err := range errs {
			if !errors.Is(err, unix.EBADF) {
				t.Errorf("Once after a plain close: %v, want nil or an error wrapping EBADF", err)
			}
		}
		// And afterwards the loop still works.
		c, pc := ownedSocketpair(t)
		got := ringev.Flags(0)
		addFd(t, l, c.fd, ringev.Read, func(ev *ringev.FdEvent, f ringev.Flags) { got = f; testutil.Drain(t, ev.Fd()) })
		testutil.Write(t, pc.fd, []byte{'y'})
		until(t, l, func() bool { return got != 0 })
		if got != ringev.Read {
			t.Fatalf("a new fd event after the plain close got %v, want READ", got)
		}
	})
}

// idleLoop is a second loop on its own goroutine that watches one fd for Read and then stays
// idle (never calls Once again) until told to close.
type idleLoop struct {
	quit chan struct{}
	done chan error // Close's result
	ran  chan error // the idle loop's handler ran (it must not)
}

// startIdleLoop starts the second loop; with onceFirst it runs one Once (a 1 ms timer) after
// adding the fd, so that the backend has really armed its watch, before going idle.
func startIdleLoop(t *testing.T, backend string, fd int, onceFirst bool) *idleLoop {
	t.Helper()
	il := &idleLoop{quit: make(chan struct{}), done: make(chan error, 1), ran: make(chan error, 1)}
	ready := make(chan error, 1)
	go func() {
		l, err := ringev.New(ringev.WithBackend(backend))
		if err != nil {
			ready <- err
			return
		}
		_, err = l.AddFd(fd, ringev.Read, func(ev *ringev.FdEvent, f ringev.Flags) {
			select {
			case il.ran <- fmt.Errorf("the idle loop's handler ran with %v", f):
			default:
			}
		})
		if err == nil && onceFirst {
			fired := false
			l.AddTimer(time.Millisecond, func(*ringev.Timer) { fired = true })
			for !fired && err == nil {
				err = l.Once()
			}
		}
		ready <- err
		<-il.quit
		il.done <- l.Close()
	}()
	select {
	case err := <-ready:
		if err != nil {
			t.Fatalf("second loop: %v", err)
		}
	case <-time.After(deadline):
		t.Fatal("second loop did not start within the deadline")
	}
	t.Cleanup(func() {
		if err := il.stop(); err != nil {
			t.Error(err)
		}
	})
	return il
}

// stop closes the idle loop (on its goroutine) and returns the first problem seen.
func (il *idleLoop) stop() error {
	select {
	case <-il.quit:
		return nil
	default:
	}
	close(il.quit)
	var err error
	select {
	case err = <-il.done:
	case <-time.After(deadline):
		return fmt.Errorf("the idle loop's Close did not return within %v", deadline)
	}
	select {
	case rerr := <-il.ran:
		return rerr
	default:
	}
	if err != nil {
		return fmt.Errorf("closing the idle loop: %w", err)
	}
	return nil
}

// TestCloseSecondIdleLoopDoesNotPinFile: a second loop, on another goroutine that stays alive,
// watches the same socket and never runs Once (or ran one Once and then went idle). The first
// loop closes the fd (auto-close, or a plain close(2) while it still watches). The peer reads EOF
// within 100 ms: an idle loop pins no file it does not own. uring-poll, once it has armed its
// poll, pins the file as documented.
func TestCloseSecondIdleLoopDoesNotPinFile(t *testing.T) {
	eachBackend(t, ringev.Backends(), func(t *testing.T, backend string) {
		for _, idle := range []struct {
			name      string
			onceFirst bool
		}{{"SecondNeverRunsOnce", false}, {"SecondIdleAfterOneOnce", true}} {
			for _, how := range []string{"AutoClose", "PlainClose"} {
				t.Run(idle.name+"/"+how, func(t *testing.T) {
					a, peer := ownedSocketpair(t)
					l := newLoop(t, backend)
					ev := addFd(t, l, a.fd, ringev.Read, never(t, "first loop"))
					il := startIdleLoop(t, backend, a.fd, idle.onceFirst)
					settle(t, l, 10*time.Millisecond, 3)
					if how == "AutoClose" {
						ev.SetAutoClose(true)
						a.HandOver()
						if err := ev.Close(); err != nil {
							t.Fatalf("FdEvent.Close with auto-close: %v", err)
						}
					} else if err := a.Close(); err != nil {
						t.Fatalf("close(2): %v", err)
					}
					if backend == notCloseSafe && (idle.onceFirst || how == "PlainClose") {
						// Pinned by the idle loop's armed poll, or by the first loop's own
						// poll after a plain close(2).
						expectPinned(t, peer.fd, "uring-poll: fd closed while a poll is armed on it")
						if err := il.stop(); err != nil {
							t.Error(err)
						}
						if err := l.Close(); err != nil {
							t.Fatalf("Loop.Close: %v", err)
						}
						if ok, _, last := peerEOF(peer.fd, time.Second); !ok {
							t.Fatalf("uring-poll: the file is still pinned 1 s after both loops were closed (last read: %s)", last)
						}
						return
					}
					expectEOF(t, peer.fd, releaseWithin, "fd closed while a second, idle loop watches it")
					if err := il.stop(); err != nil {
						t.Fatal(err)
					}
				})
			}
		}
	})
}

// TestCloseFdNumberReuseIsWatchedCorrectly: right after a watched fd is closed, a new socket gets
// the same fd number and is watched; the new handler sees the new socket's data, the old handler
// never runs. Three ways: FdEvent.Close with auto-close; a plain close(2) followed by AddFd of the
// new socket; and the close and reuse happening inside another handler of the same round, while
// the old fd's readiness is already reported.
func TestCloseFdNumberReuseIsWatchedCorrectly(t *testing.T) {
	eachBackend(t, ringev.Backends(), func(t *testing.T, backend string) {
		t.Run("AutoClose", func(t *testing.T) {
			old, oldPeer := ownedSocketpair(t)
			l := newLoop(t, backend)
			ev := addFd(t, l, old.fd, ringev.Read, never(t, "old socket"))
			ev.SetAutoClose(true)
			old.HandOver()
			settle(t, l, 10*time.Millisecond, 3)
			testutil.Write(t, oldPeer.fd, []byte{'o'}) // the old file becomes readable...
			if err := ev.Close(); err != nil {         // ...and is closed before the loop looks
				t.Fatalf("FdEvent.Close with auto-close: %v", err)
			}
			checkReuse(t, l, old.fd)
		})
		t.Run("PlainCloseThenAddFd", func(t *testing.T) {
			old, oldPeer := ownedSocketpair(t)
			l := newLoop(t, backend)
			oldEv := addFd(t, l, old.fd, ringev.Read, never(t, "old socket"))
			settle(t, l, 10*time.Millisecond, 3)
			testutil.Write(t, oldPeer.fd, []byte{'o'})
			if err := old.Close(); err != nil {
				t.Fatalf("close(2): %v", err)
			}
			checkReuse(t, l, old.fd)
			if f := oldEv.Flags(); f != 0 {
				t.Errorf("the old fd event still has flags %v after its number was reused; want it disarmed (0)", f)
			}
		})
		for _, m := range allModes {
			t.Run("InsideHandlerOfSameRound/"+m.name, func(t *testing.T) {
				x, px := ownedSocketpair(t)
				old, oldPeer := ownedSocketpair(t)
				l := newLoop(t, backend, m.opts()...)
				var oldEv *ringev.FdEvent
				var newFd, newPeer *ownedFd
				var newGot []byte
				var newFlags []ringev.Flags
				addFd(t, l, x.fd, ringev.Read, func(ev *ringev.FdEvent, f ringev.Flags) {
					testutil.Drain(t, ev.Fd())
					if newFd != nil {
						return
					}
					if err := oldEv.Close(); err != nil { // auto-close: old.fd is free now
						t.Errorf("closing the old event: %v", err)
					}
					// The new socket has no data yet: readiness reported for the old file
					// must not reach its handler.
					newFd, newPeer, _ = socketpairAt(t, old.fd)
					addFd(t, l, newFd.fd, ringev.Read, func(ev *ringev.FdEvent, f ringev.Flags) {
						newFlags = append(newFlags, f)
						var buf [16]byte
						n, err := unix.Read(ev.Fd(), buf[:])
						if n > 0 {
							newGot = append(newGot, buf[:n]...)
						} else {
							t.Errorf("new socket's handler called with %v but read n=%d err=%v: it was handed the old file's readiness", f, n, err)
						}
					})
				})
				oldRuns := 0
				oldEv = addFd(t, l, old.fd, ringev.Read, func(ev *ringev.FdEvent, f ringev.Flags) {
					oldRuns++
					if newFd != nil {
						t.Errorf("old socket's handler ran with %v after its event was closed and its number reused", f)
						return
					}
					if oldRuns > 1 {
						t.Errorf("round 2: the old socket's handler ran before x's, which ran less recently (fairness); the case is not exercised")
					}
					testutil.Drain(t, ev.Fd())
				})
				oldEv.SetAutoClose(true)
				old.HandOver()
				// Round 1: only the old socket is ready; its handler runs, so that by
				// fairness x's handler (never run) comes first in round 2.
				testutil.Write(t, oldPeer.fd, []byte{'o'})
				testutil.Once(t, l, deadline)
				if oldRuns != 1 {
					t.Fatalf("round 1: old socket's handler ran %d times, want 1", oldRuns)
				}
				// Round 2: x and the old socket are ready in one wait; x's handler closes the
				// old event (auto-close) and reuses its number for a new, empty socket.
				testutil.Write(t, px.fd, []byte{'x'})
				testutil.Write(t, oldPeer.fd, []byte{'o'})
				until(t, l, func() bool { return newFd != nil })
				settle(t, l, 20*time.Millisecond, 5)
				if len(newFlags) != 0 {
					t.Fatalf("new (empty) socket's handler ran %v before it had data", newFlags)
				}
				testutil.Write(t, newPeer.fd, []byte{'n'})
				until(t, l, func() bool { return len(newGot) > 0 })
				settle(t, l, 20*time.Millisecond, 5)
				if string(newGot) != "n" || len(newFlags) != 1 || newFlags[0] != ringev.Read {
					t.Fatalf("new socket's handler calls %v read %q, want one READ call reading %q", newFlags, newGot, "n")
				}
			})
		}
	})
}

// checkReuse makes a new socketpair whose first end gets fd number num (just closed), watches it
// with a new handler, and checks that the new handler sees its data once.
func checkReuse(t *testing.T, l *ringev.Loop, num int) {
	t.Helper()
	nw, peer, natural := socketpairAt(t, num)
	if !natural {
		t.Logf("fd number %d was taken by something else; moved the new socket there with dup3", num)
	}
	var got []byte
	var flags []ringev.Flags
	addFd(t, l, nw.fd, ringev.Read, func(ev *ringev.FdEvent, f ringev.Flags) {
		flags = append(flags, f)
		var buf [16]byte
		n, _ := unix.Read(ev.Fd(), buf[:])
		if n > 0 {
			got = append(got, buf[:n]...)
		}
	})
	testutil.Write(t, peer.fd, []byte{'n'})
	until(t, l, func() bool { return len(got) > 0 })
	settle(t, l, 30*time.Millisecond, 5)
	if string(got) != "n" || len(flags) != 1 || flags[0] != ringev.Read {
		t.Fatalf("new socket on reused fd %d: handler calls %v read %q, want one READ call reading %q", num, flags, got, "n")
	}
}
