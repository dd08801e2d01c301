//go:build linux

package ringev_test

// Tests of ownership: a loop's calls from a goroutine that does not own it get ErrNotOwner and
// change nothing, and the owner check follows the owner's stack.

import (
	"errors"
	"runtime"
	"sync/atomic"
	"syscall"
	"testing"
	"time"
	"unsafe"

	"github.com/ringev/ringev"
	"github.com/ringev/ringev/internal/testutil"
	"golang.org/x/sys/unix"
)

// TestOwnerOtherGoroutineGetsErrNotOwner: Once, Run, AddFd, SetFlags, FdEvent.Close, AddSignal
// and Loop.Close from a goroutine that is not the loop's owner return ErrNotOwner and change
// nothing: the loop, its fd event and its flags keep working on the owner goroutine, and Post
// from the other goroutine works.
func TestOwnerOtherGoroutineGetsErrNotOwner(t *testing.T) {
	eachBackend(t, ringev.Backends(), func(t *testing.T, backend string) {
		a, peer := testutil.Socketpair(t)
		x, _ := testutil.Socketpair(t)
		l := newLoop(t, backend)
		var got []ringev.Flags
		ev := addFd(t, l, a, ringev.Read, func(ev *ringev.FdEvent, f ringev.Flags) {
			got = append(got, f)
			testutil.Drain(t, ev.Fd())
		})
		untilWaited(t, l) // the backend is armed
		settle(t, l, 5*time.Millisecond, 3)
		posted := false
		onOtherGoroutine(t, func() {
			check := func(what string, err error) {
				if !errors.Is(err, ringev.ErrNotOwner) {
					t.Errorf("%s from another goroutine: %v, want ErrNotOwner", what, err)
				}
			}
			check("Once", l.Once())
			check("Run", l.Run())
			_, err := l.AddFd(x, ringev.Read, never(t, "fd added from another goroutine"))
			check("AddFd", err)
			check("SetFlags", ev.SetFlags(ringev.Write))
			check("FdEvent.Close", ev.Close())
			_, err = l.AddSignal(syscall.SIGUSR1, func(*ringev.Signal, int) {})
			check("AddSignal", err)
			check("Loop.Close", l.Close())
			if err := l.Post(func() { posted = true }); err != nil {
				t.Errorf("Post from another goroutine: %v", err)
			}
		})
		if f := ev.Flags(); f != ringev.Read {
			t.Fatalf("after a SetFlags from another goroutine, Flags() = %v, want READ (unchanged)", f)
		}
		until(t, l, func() bool { return posted })
		testutil.Write(t, peer, []byte{'x'})
		until(t, l, func() bool { return len(got) > 0 })
		if got[0] != ringev.Read {
			t.Fatalf("the fd event after the foreign calls got %v, want READ", got)
		}
		settle(t, l, 20*time.Millisecond, 3)
		if len(got) != 1 {
			t.Fatalf("fd handler ran %d times, want 1", len(got))
		}
		// The loop still closes normally on its owner (cleanup checks Close's error).
	})
}

// TestOwnerRequestCallsFromAGoroutineTheOwnerStartedGetErrNotOwner: every request call, Cancel,
// SetTimeout and Once from a goroutine that the owner started (while the owner's stack is deep
// and after it shrank back) return ErrNotOwner and change nothing; the owner's own calls work
// from deep in its stack and afterwards.
func TestOwnerRequestCallsFromAGoroutineTheOwnerStartedGetErrNotOwner(t *testing.T) {
	requireOwnerCheck(t)
	eachBackend(t, ringev.Backends(), func(t *testing.T, backend string) {
		r, w := testutil.Pipe(t)
		a, _ := testutil.Socketpair(t)
		lfd, sa := testutil.Listener(t)
		l := newLoop(t, backend)
		var rec recorder
		h := must(t)(l.Read(r, make([]byte, 1), -1, rec.cb, 0))
		cb := func(*ringev.Completion) { t.Error("a foreign call's request completed") }
		buf := make([]byte, 1)
		foreign := func(where string) {
			calls := map[string]func() error{
				"Read":  func() error { _, err := l.Read(r, buf, -1, cb, 0); return err },
				"Write": func() error { _, err := l.Write(w, buf, -1, cb, 0); return err },
				"Recv":  func() error { _, err := l.Recv(a, buf, 0, cb, 0); return err },
				"Send":  func() error { _, err := l.Send(a, buf, 0, cb, 0); return err },
				"Accept": func() error {
					_, err := l.Accept(lfd, 0, cb, 0)
					return err
				},
				"AcceptMultishot": func() error { _, err := l.AcceptMultishot(lfd, 0, cb, 0); return err },
				"Connect":         func() error { _, err := l.Connect(a, sa, cb, 0); return err },
				"Fsync":           func() error { _, err := l.Fsync(w, false, cb, 0); return err },
				"CloseFd":         func() error { _, err := l.CloseFd(a, cb, 0); return err },
				"Cancel":          h.Cancel,
				"SetTimeout":      func() error { return h.SetTimeout(time.Nanosecond) },
				"Once":            l.Once,
			}
			done := make(chan struct{})
			go func() {
				defer close(done)
				for name, call := range calls {
					if err := call(); !errors.Is(err, ringev.ErrNotOwner) {
						t.Errorf("%s from a goroutine the owner started (%s): %v, want ErrNotOwner", name, where, err)
					}
				}
			}()
			select {
			case <-done:
			case <-time.After(deadline):
				t.Fatal("the foreign calls did not return")
			}
		}
		var deepErr error
		growStack(1500, func() {
			foreign("owner deep in its stack")
			_, deepErr = l.Write(w, []byte("y"), -1, func(*ringev.Completion) {}, 0)
		})
		if deepErr != nil {
			t.Fatalf("the owner's Write from deep in its stack: %v", deepErr)
		}
		runtime.GC() // may shrink the owner's stack
		runtime.GC()
		foreign("after the owner's stack shrank")
		until(t, l, func() bool { return rec.n() > 0 })
		quiet(t, l)
		wantOne(t, &rec, 1)
	})
}

// TestOwnerForeignCallsWhileOwnerClosesDoNotRace: calls from another goroutine (Loop.Close,
// AddFd, AddSignal, FdEvent.Close, SetFlags, Loop.ReadNonblocking)
// made over and over while the owner closes the fd event and then the loop return ErrNotOwner
// (or, for the I/O method, the read's own result) and read nothing the owner writes: the race
// detector finds no data race (run with -race).
func TestOwnerForeignCallsWhileOwnerClosesDoNotRace(t *testing.T) {
	eachBackend(t, ringev.Backends(), func(t *testing.T, backend string) {
		a, _ := testutil.Socketpair(t)
		l := newLoop(t, backend) // the test closes it; cleanup's second Close returns nil
		ev := addFd(t, l, a, ringev.Read, never(t, "fd event"))
		var calls atomic.Int64
		stop := make(chan struct{})
		done := make(chan struct{})
		t.Cleanup(func() { // also after a failure: the goroutine must not outlive the test
			close(stop)
			select {
			case <-done:
			case <-time.After(deadline):
				t.Errorf("the other goroutine's calls did not return within %v", deadline)
			}
		})
		go func() {
			defer close(done)
			buf := make([]byte, 1)
			for {
				select {
				case <-stop:
					return
				default:
				}
				_, err := l.AddFd(a, ringev.Read, never(t, "fd added from another goroutine"))
				for _, e := range []error{err, l.Close(), ev.Close(), ev.SetFlags(ringev.Write)} {
					if !errors.Is(e, ringev.ErrNotOwner) {
						t.Errorf("call from another goroutine: %v, want ErrNotOwner", e)
					}
				}
				if _, err := l.AddSignal(syscall.SIGUSR1, func(*ringev.Signal, int) {}); !errors.Is(err, ringev.ErrNotOwner) {
					t.Errorf("AddSignal from another goroutine: %v, want ErrNotOwner", err)
				}
				if n, err := l.ReadNonblocking(a, buf); n != 0 || err != unix.EAGAIN {
					t.Errorf("ReadNonblocking from another goroutine = %d, %v; want 0, EAGAIN (nothing was written)", n, err)
				}
				calls.Add(1)
			}
		}()
		await(t, "50 rounds of foreign calls", func() bool { return calls.Load() >= 50 })
		if err := ev.Close(); err != nil {
			t.Errorf("FdEvent.Close on the owner: %v", err)
		}
		at := calls.Load()
		await(t, "50 more rounds after FdEvent.Close", func() bool { return calls.Load() >= at+50 })
		if err := l.Close(); err != nil {
			t.Errorf("Loop.Close on the owner: %v", err)
		}
		at = calls.Load()
		await(t, "50 more rounds after Loop.Close", func() bool { return calls.Load() >= at+50 })
	})
}

// TestOwnerCheckKnowsTheOwnersStack: where rawsys reads the runtime's g (amd64, arm64), New
// finds the owner's stack bounds at the start of its g, so the owner check is on (it compares
// the caller's stack with the owner's; without the bounds it would be off).
func TestOwnerCheckKnowsTheOwnersStack(t *testing.T) {
	requireOwnerCheck(t)
	l := newLoop(t, "epoll")
	if !ringev.OwnerStackKnown(l) {
		t.Fatal("New did not find the owner's stack bounds in its runtime g: has runtime.g's first field (stack) moved?")
	}
}

// TestOwnerCheckFollowsTheOwnersStackWhenItMoves: after the owner's stack has grown and moved,
// the owner's calls are still its own (a request is taken) and another goroutine's still get
// ErrNotOwner.
func TestOwnerCheckFollowsTheOwnersStackWhenItMoves(t *testing.T) {
	eachBackend(t, ringev.Backends(), func(t *testing.T, backend string) {
		r, _ := testutil.Pipe(t)
		l := newLoop(t, backend)
		var here byte
		before := uintptr(unsafe.Pointer(&here))
		var ownErr, foreignErr error
		growStack(2000, func() {
			_, ownErr = l.Read(r, make([]byte, 1), -1, func(*ringev.Completion) {}, 0)
			onOtherGoroutine(t, func() {
				_, foreignErr = l.Read(r, make([]byte, 1), -1, func(*ringev.Completion) {}, 0)
			})
		})
		if uintptr(unsafe.Pointer(&here)) == before {
			t.Fatal("the owner's stack did not move: the test shows nothing")
		}
		if ownErr != nil {
			t.Fatalf("the owner's Read after its stack moved: %v", ownErr)
		}
		if !errors.Is(foreignErr, ringev.ErrNotOwner) {
			t.Fatalf("another goroutine's Read: %v, want ErrNotOwner", foreignErr)
		}
	})
}

// TestOwnedTellsTheOwner: Owned is true on the loop's goroutine only.
func TestOwnedTellsTheOwner(t *testing.T) {
	l := newLoop(t, "poll")
	if !l.Owned() {
		t.Error("Owned() = false on the owner's goroutine")
	}
	got := make(chan bool)
	go func() { got <- l.Owned() }()
	if <-got {
		t.Error("Owned() = true on another goroutine")
	}
}
