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
