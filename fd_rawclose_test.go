//go:build linux

package ringev_test

// Tests of a watched fd closed with close(2) behind the loop's back: the handler stops, the file
// is released (or, where the kernel holds it, as documented), and a new file on the number is
// watched afresh.

import (
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/ringev/ringev"
	"github.com/ringev/ringev/internal/testutil"
	"golang.org/x/sys/unix"
)

// TestFdRawCloseReleasesFile: the fd of a watched (and waited-on) socket is closed with a plain
// close(2), not through the loop. Its peer reads EOF within 100 ms, the handler never runs, and
// the loop neither spins nor fails afterwards (on poll, one Once reports the invalid fd with an
// error wrapping EBADF). uring-poll pins the file until the loop is closed, as documented.
func TestFdRawCloseReleasesFile(t *testing.T) {
	eachBackend(t, ringev.Backends(), func(t *testing.T, backend string) {
		a, peer := testutil.Socketpair(t)
		l := newLoop(t, backend)
		addFd(t, l, a, ringev.Read, never(t, "socket closed behind the loop's back"))
		untilWaited(t, l) // the loop watches a
		settle(t, l, 10*time.Millisecond, 3)
		if err := testutil.Close(t, a); err != nil {
			t.Fatalf("close(2): %v", err)
		}
		if backend == notCloseSafe {
			testutil.ExpectPinned(t, peer, "plain close(2) of an fd uring-poll watches")
			settle(t, l, 50*time.Millisecond, 5)
			if err := l.Close(); err != nil {
				t.Fatalf("Loop.Close: %v", err)
			}
			if ok, took, last := testutil.PeerEOF(peer, time.Second); !ok {
				t.Fatalf("uring-poll: the file is still pinned 1 s after Loop.Close (last read: %s)", last)
			} else {
				t.Logf("uring-poll: file released %v after Loop.Close", took)
			}
			return
		}
		testutil.ExpectEOF(t, peer, testutil.ReleaseWithin, "plain close(2) behind the loop's back")
		errs := settle(t, l, 100*time.Millisecond, 5)
		for _, err := range errs {
			if !errors.Is(err, unix.EBADF) {
				t.Errorf("Once after a plain close: %v, want nil or an error wrapping EBADF", err)
			}
		}
		// And afterwards the loop still works.
		c, pc := testutil.Socketpair(t)
		got := ringev.Flags(0)
		addFd(t, l, c, ringev.Read, func(ev *ringev.FdEvent, f ringev.Flags) { got = f; testutil.Drain(t, ev.Fd()) })
		testutil.Write(t, pc, []byte{'y'})
		until(t, l, func() bool { return got != 0 })
		if got != ringev.Read {
			t.Fatalf("a new fd event after the plain close got %v, want READ", got)
		}
	})
}

// TestFdRawCloseSecondIdleLoopDoesNotPinFile: a second loop, on another goroutine that stays
// alive, watches the same socket and never runs Once (or ran Once until it waited, and then went
// idle). The first loop closes the fd (auto-close, or a plain close(2) while it still watches).
// The peer reads EOF within 100 ms: an idle loop pins no file it does not own. uring-poll, once
// it has armed its poll, pins the file as documented.
func TestFdRawCloseSecondIdleLoopDoesNotPinFile(t *testing.T) {
	eachBackend(t, ringev.Backends(), func(t *testing.T, backend string) {
		for _, idle := range []struct {
			name      string
			onceFirst bool
		}{{"SecondNeverRunsOnce", false}, {"SecondIdleAfterOneOnce", true}} {
			for _, how := range []string{"AutoClose", "PlainClose"} {
				t.Run(idle.name+"/"+how, func(t *testing.T) {
					a, peer := testutil.Socketpair(t)
					l := newLoop(t, backend)
					ev := addFd(t, l, a, ringev.Read, never(t, "first loop"))
					il := startIdleLoop(t, backend, a, idle.onceFirst)
					untilWaited(t, l) // the first loop watches a
					settle(t, l, 10*time.Millisecond, 3)
					if how == "AutoClose" {
						ev.SetAutoClose(true)
						testutil.HandOver(t, a)
						if err := ev.Close(); err != nil {
							t.Fatalf("FdEvent.Close with auto-close: %v", err)
						}
					} else if err := testutil.Close(t, a); err != nil {
						t.Fatalf("close(2): %v", err)
					}
					if backend == notCloseSafe && (idle.onceFirst || how == "PlainClose") {
						// Pinned by the idle loop's armed poll, or by the first loop's own
						// poll after a plain close(2).
						testutil.ExpectPinned(t, peer, "uring-poll: fd closed while a poll is armed on it")
						if err := il.stop(); err != nil {
							t.Error(err)
						}
						if err := l.Close(); err != nil {
							t.Fatalf("Loop.Close: %v", err)
						}
						if ok, _, last := testutil.PeerEOF(peer, time.Second); !ok {
							t.Fatalf("uring-poll: the file is still pinned 1 s after both loops were closed (last read: %s)", last)
						}
						return
					}
					testutil.ExpectEOF(t, peer, testutil.ReleaseWithin, "fd closed while a second, idle loop watches it")
					if err := il.stop(); err != nil {
						t.Fatal(err)
					}
				})
			}
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

// startIdleLoop starts the second loop; with onceFirst it runs Once after adding the fd until
// its backend has waited once (ringev.Waits: the watch is armed), before going idle.
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
			// A timer ends each wait, so that Once returns; a timer that runs instead of a
			// wait is made again, twice as long.
			w0, d := ringev.Waits(l), time.Millisecond
			for ringev.Waits(l) == w0 && err == nil {
				tm := l.AddTimer(d, func(*ringev.Timer) {})
				err = l.Once()
				tm.Stop()
				d *= 2
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

// dupCase is one shape of TestFdRawCloseWhileDupKeepsFileOpen.
type dupCase struct {
	name    string
	write   bool // watch the pipe's write end for Write (else its read end for Read)
	syscall bool // the handler makes its own read(2)/write(2) instead of the loop's methods
	reuse   bool // the number is reused and watched again while the first event is still open
}

// dupCases: the first in every dispatch mode, the others in the default one.
var dupCases = []dupCase{
	{name: "read/loopIO/Close"},
	{name: "write/loopIO/Close", write: true},
	{name: "read/loopIO/reuse", reuse: true},
	{name: "read/syscall/Close", syscall: true},
	{name: "read/syscall/reuse", syscall: true, reuse: true},
}

// TestFdRawCloseWhileDupKeepsFileOpen: a pipe end n is watched, a dup of it
// keeps the file open, and n is closed with close(2) behind the loop's back; then the pipe is
// written (or, for the write end, stays writable). A handler that does its I/O with the loop's
// methods (Loop.ReadNonblocking, WriteNonblocking) runs at most once more: its I/O fails with
// EBADF, the loop disarms the fd's events, and that Once returns an error wrapping EBADF that
// names the fd; the loop then sleeps until its 100 ms timer. Then the event is closed (Close
// returns nil; or, "reuse", left open), a new empty pipe takes the number n and is watched for
// Read: its handler never runs, the old one never again, and the loop sleeps until the next 100
// ms timer. A handler that makes its own read(2) cannot be told from one that leaves its data
// unread, so it keeps running until its event is closed (the documented limit, loop contract
// item 5); what follows holds for it too. Every backend, every dispatch mode.
func TestFdRawCloseWhileDupKeepsFileOpen(t *testing.T) {
	eachMode(t, ringev.Backends(), allModes, func(t *testing.T, b string, m mode) {
		for i, c := range dupCases {
			if i > 0 && m != modeDefault {
				continue
			}
			t.Run(c.name, func(t *testing.T) { rawCloseWithDup(t, b, m, c) })
		}
	})
}

func rawCloseWithDup(t *testing.T, b string, m mode, c dupCase) {
	r, w := testutil.Pipe(t)
	l := newLoop(t, b, m.opts()...)
	watched, flags := r, ringev.Read
	if c.write {
		watched, flags = w, ringev.Write
	}
	d, err := unix.Dup(watched)
	if err != nil {
		t.Fatalf("dup: %v", err)
	}
	testutil.Own(t, d)
	h1, closedRuns := 0, 0
	var ioErrs []error
	buf := make([]byte, 64)
	closed := false
	io := l.ReadNonblocking
	if c.write {
		io = l.WriteNonblocking
	}
	if c.syscall {
		io = unix.Read
		if c.write {
			io = unix.Write
		}
	}
	ev := addFd(t, l, watched, flags, func(ev *ringev.FdEvent, f ringev.Flags) {
		h1++
		if closed {
			closedRuns++
		}
		if _, err := io(ev.Fd(), buf[:1]); err != nil && !errors.Is(err, unix.EAGAIN) {
			ioErrs = append(ioErrs, err)
		}
	})
	if !c.write {
		testutil.Write(t, w, []byte{'a'})
	}
	until(t, l, func() bool { return h1 > 0 })
	n := watched
	if err := testutil.Close(t, watched); err != nil {
		t.Fatalf("close(2): %v", err)
	}
	closed = true
	if !c.write {
		// Through the dup: w may be the number just closed for the write case.
		testutil.Write(t, w, []byte{'b'})
	}
	const period = 100 * time.Millisecond
	run := runTimer(t, l, period, 0)
	t.Logf("after the raw close of fd %d: h1 ran %d times in %d Onces (%v CPU), Once errors %v, I/O errors %d", n, closedRuns, run.onces, run.cpu, run.errs, len(ioErrs))
	if !c.syscall {
		if closedRuns > 1 {
			t.Errorf("h1 ran %d times after its fd was closed with close(2), want at most 1", closedRuns)
		}
		if !run.asleep(period, 5) {
			t.Errorf("the loop ran %d Onces using %v of CPU before its %v timer, want it asleep (at most 5 Onces, under %v)", run.onces, run.cpu, period, period/10)
		}
		for _, err := range run.errs {
			if !errors.Is(err, unix.EBADF) || !strings.Contains(err.Error(), fmt.Sprint("fd ", n, " ")) {
				t.Errorf("Once: %v, want an error wrapping EBADF naming fd %d", err, n)
			}
		}
	}
	if !c.reuse {
		if err := ev.Close(); err != nil {
			t.Errorf("FdEvent.Close after the raw close: %v", err)
		}
	}
	before := h1
	r2, _, _ := testutil.PipeAt(t, n)
	h2 := 0
	addFd(t, l, r2, ringev.Read, func(*ringev.FdEvent, ringev.Flags) { h2++ })
	run = runTimer(t, l, period, 0)
	t.Logf("new pipe on fd %d: h2 ran %d times, h1 %d times, in %d Onces (%v CPU), Once errors %v", n, h2, h1-before, run.onces, run.cpu, run.errs)
	if h2 != 0 {
		t.Errorf("the handler of a new, empty pipe on fd %d ran %d times, want never", n, h2)
	}
	if h1 != before {
		t.Errorf("the first handler ran %d times after the new file on fd %d was watched, want never", h1-before, n)
	}
	if !run.asleep(period, 3) || len(run.errs) > 0 {
		t.Errorf("the loop ran %d Onces using %v of CPU (errors %v) before its %v timer, want it asleep (at most 3 Onces, under %v, no error)", run.onces, run.cpu, run.errs, period, period/10)
	}
}

// blockedClose is one run of TestFdRawCloseWhileBlockedReleasesFile.
type blockedClose struct {
	blockedIn string        // the wait the loop slept in when the socket was closed
	stillIn   string        // the wait it slept in after the EOF check ("": it had woken)
	eof       bool          // the peer read EOF during the check
	took      time.Duration // how long the check took
	runErr    error         // what Run returned after Stop
	peer      int
	loop      *ringev.Loop // closed at cleanup unless the caller closed it
}

// closeWhileBlocked makes a socketpair, watches one end for Read on a new loop on backend,
// and runs the loop (a 5 s timer would stop it); another goroutine waits until the loop's
// thread sleeps in its wait system call, closes the watched end with close(2), reads the peer
// for EOF for up to within, looks whether the loop still sleeps, and calls Stop.
func closeWhileBlocked(t *testing.T, backend string, within time.Duration) blockedClose {
	t.Helper()
	a, peer := testutil.Socketpair(t)
	l := newLoop(t, backend)
	addFd(t, l, a, ringev.Read, func(*ringev.FdEvent, ringev.Flags) { t.Error("the handler of the closed socket ran") })
	l.AddTimer(5*time.Second, func(*ringev.Timer) { l.Stop() })
	tid := unix.Gettid() // New locked this goroutine to its thread
	res := make(chan blockedClose, 1)
	go func() {
		r := blockedClose{peer: peer, loop: l}
		for start := time.Now(); r.blockedIn == "" && time.Since(start) < deadline; time.Sleep(time.Millisecond) {
			r.blockedIn = testutil.BlockedIn(tid)
		}
		if r.blockedIn != "" {
			testutil.Close(t, a) // close(2) behind the loop's back, while it sleeps
			r.eof, r.took, _ = testutil.PeerEOF(peer, within)
			r.stillIn = testutil.BlockedIn(tid)
		}
		res <- r
		l.Stop() // wakes the loop (poll: its ppoll returns)
	}()
	runErr := l.Run()
	r := <-res
	r.runErr = runErr
	t.Logf("%s: the loop slept in %q; peer EOF %v after %v; then the loop slept in %q; Run returned %v", backend, r.blockedIn, r.eof, r.took.Round(time.Microsecond), r.stillIn, r.runErr)
	if r.blockedIn == "" {
		t.Fatalf("the loop's thread never slept in its wait within %v", deadline)
	}
	return r
}

// TestFdRawCloseWhileBlockedReleasesFile: the loop is blocked in Run watching a
// socket for Read; another goroutine, once the loop's thread sleeps in its wait system call,
// closes the socket with close(2). On uring and epoll the peer reads EOF at once (within 1 s,
// while the loop still sleeps). On poll it does not while the loop sleeps: a sleeping ppoll
// holds a reference to every file it polls (the documented behaviour); the peer reads EOF as
// soon as something wakes the loop (here Stop), whose Once then reports the invalid fd (an
// error wrapping EBADF). On uring-poll, which is not close-safe, the pending POLL_ADD keeps the
// file even then, until the loop is closed. A run in which something else woke the loop
// before the check was over (the Go runtime's preemption signal can end a ppoll with EINTR)
// shows nothing and is repeated, up to 5 times.
func TestFdRawCloseWhileBlockedReleasesFile(t *testing.T) {
	for _, b := range ringev.Backends() {
		t.Run(b, func(t *testing.T) {
			within := time.Second
			if b == "poll" || b == "uring-poll" {
				within = 300 * time.Millisecond // long enough to show that EOF does not come
			}
			var r blockedClose
			for try := 0; ; try++ {
				r = closeWhileBlocked(t, b, within)
				if r.stillIn != "" || r.eof && (b == "uring" || b == "epoll") {
					break
				}
				if try == 4 {
					t.Fatalf("in 5 runs something woke the loop before the check was over")
				}
			}
			switch b {
			case "uring", "epoll":
				if !r.eof {
					t.Errorf("the peer read no EOF within %v of the close(2) while the loop slept in %s", r.took, r.blockedIn)
				}
				if r.runErr != nil {
					t.Errorf("Run: %v", r.runErr)
				}
				return
			}
			if r.eof {
				t.Errorf("the peer read EOF %v after the close(2) while the loop slept in %s; %s is documented to hold the file until its wait returns: the doc or the test is out of date", r.took, r.blockedIn, b)
			}
			if b == "poll" {
				if !errors.Is(r.runErr, unix.EBADF) {
					t.Errorf("Run after the wake-up: %v, want an error wrapping EBADF (POLLNVAL)", r.runErr)
				}
				testutil.ExpectEOF(t, r.peer, time.Second, "poll: after the loop woke")
				return
			}
			// uring-poll
			testutil.ExpectPinned(t, r.peer, "uring-poll: after the wake-up, before Loop.Close")
			if err := r.loop.Close(); err != nil {
				t.Errorf("Loop.Close: %v", err)
			}
			testutil.ExpectEOF(t, r.peer, time.Second, "uring-poll: after Loop.Close")
		})
	}
}

// TestFdRawCloseThenReuseOfAnonymousInodeIsWatchedAfresh: an eventfd closed behind the loop's
// back whose number goes to a new eventfd (same anonymous inode, so fstat cannot tell them
// apart) is watched afresh, and the old handler never runs, on the backends that keep
// registrations by file (uring, epoll).
func TestFdRawCloseThenReuseOfAnonymousInodeIsWatchedAfresh(t *testing.T) {
	eachBackend(t, []string{"uring", "epoll"}, func(t *testing.T, backend string) {
		a, err := unix.Eventfd(0, unix.EFD_NONBLOCK|unix.EFD_CLOEXEC)
		if err != nil {
			t.Fatal(err)
		}
		testutil.Own(t, a)
		l := newLoop(t, backend)
		old := addFd(t, l, a, ringev.Read, func(*ringev.FdEvent, ringev.Flags) { t.Error("the old handler ran") })
		defer old.Close()
		untilWaited(t, l) // the loop watches a
		quiet(t, l)
		testutil.Close(t, a)
		b, err := unix.Eventfd(1, unix.EFD_NONBLOCK|unix.EFD_CLOEXEC) // readable at once
		if err != nil {
			t.Fatal(err)
		}
		testutil.Own(t, b)
		if b != a {
			testutil.Renumber(t, b, a) // something else took the number: move the new eventfd there
		}
		ran := 0
		addFd(t, l, a, ringev.Read, func(ev *ringev.FdEvent, _ ringev.Flags) { ran++; ev.Close() })
		l.AddTimer(2*time.Second, func(*ringev.Timer) {})
		once(t, l)
		if ran != 1 {
			t.Fatalf("the new eventfd's handler ran %d times, want 1", ran)
		}
	})
}
