//go:build linux

package ringev_test

// Tests of the owner check: it knows the owner by its goroutine's stack, wherever that stack
// moves, and a goroutine the owner started is not the owner.

import (
	"errors"
	"fmt"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
	"unsafe"

	"github.com/ringev/ringev"
	"github.com/ringev/ringev/internal/testutil"
)

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

// TestOwnerCheckHoldsWhileTheOwnersStackMoves: calls from other goroutines get ErrNotOwner
// throughout while the owner's stack moves over and over (it grows on a deep recursion and the
// collector shrinks it after). The runtime rewrites the owner's stack bounds, two words, when
// the stack moves, and the other goroutines read them meanwhile: a read that mixes the old
// bounds with the new gives a range that can hold another goroutine's stack, and that
// goroutine would be taken for the owner (here AddFd(-1) then fails with EBADF, not
// ErrNotOwner).
func TestOwnerCheckHoldsWhileTheOwnersStackMoves(t *testing.T) {
	requireOwnerCheck(t)
	l := newLoop(t, "epoll")
	const rounds, callers = 300, 2
	var stop atomic.Bool
	var calls, wrong atomic.Int64
	var firstWrong atomic.Value
	var wg sync.WaitGroup
	for range callers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for !stop.Load() {
				if _, err := l.AddFd(-1, ringev.Read, func(*ringev.FdEvent, ringev.Flags) {}); !errors.Is(err, ringev.ErrNotOwner) {
					firstWrong.CompareAndSwap(nil, fmt.Sprint(err))
					wrong.Add(1)
				}
				calls.Add(1)
			}
		}()
	}
	var here byte
	at := uintptr(unsafe.Pointer(&here))
	moved := 0
	for range rounds {
		growStack(64, func() {}) // the stack grows, moving at each doubling
		runtime.GC()             // and shrinks: it moves again
		if now := uintptr(unsafe.Pointer(&here)); now != at {
			moved++
			at = now
		}
	}
	stop.Store(true)
	wg.Wait()
	if moved == 0 {
		t.Fatal("the owner's stack never moved: the test shows nothing")
	}
	if n := wrong.Load(); n > 0 {
		t.Fatalf("%d of %d calls from other goroutines (while the owner's stack moved %d times) were taken for the owner's; the first returned %s, want ErrNotOwner", n, calls.Load(), moved, firstWrong.Load())
	}
	if _, err := l.AddFd(-1, ringev.Read, func(*ringev.FdEvent, ringev.Flags) {}); errors.Is(err, ringev.ErrNotOwner) {
		t.Fatalf("the owner's AddFd after its stack moved: %v", err)
	}
}

// TestOwnerRunFromAnotherGoroutineSaysWhoOwnsTheLoop: Run from a goroutine other than the one
// that called New fails with ErrNotOwner, whose text says which goroutine owns the loop (Post,
// which it names for work from elsewhere, does not make Run or Close work there).
func TestOwnerRunFromAnotherGoroutineSaysWhoOwnsTheLoop(t *testing.T) {
	eachBackend(t, ringev.Backends(), func(t *testing.T, backend string) {
		l := newLoop(t, backend)
		res := make(chan error, 1)
		go func() { res <- l.Run() }()
		var err error
		select {
		case err = <-res:
		case <-time.After(deadline):
			t.Fatal("Run from another goroutine did not return")
		}
		if !errors.Is(err, ringev.ErrNotOwner) || !strings.Contains(err.Error(), "the goroutine that called New") {
			t.Fatalf("Run from another goroutine: %v; want ErrNotOwner naming the goroutine that called New", err)
		}
	})
}
