//go:build linux

package ringev_test

import (
	"errors"
	"testing"
	"time"

	"github.com/ringev/ringev"
	"github.com/ringev/ringev/internal/testutil"
	"golang.org/x/sys/unix"
)

// An eventfd closed behind the loop's back whose number goes to a new eventfd (same anonymous
// inode, so fstat cannot tell them apart) is watched afresh, and the old handler never runs, on
// the backends that keep registrations by file (uring, epoll).
func TestAddFdAfterRawCloseReuseOfAnonymousInode(t *testing.T) {
	eachBackend(t, []string{"uring", "epoll"}, func(t *testing.T, backend string) {
		l := newLoop(t, backend)
		a, err := unix.Eventfd(0, unix.EFD_NONBLOCK|unix.EFD_CLOEXEC)
		if err != nil {
			t.Fatal(err)
		}
		old := addFd(t, l, a, ringev.Read, func(*ringev.FdEvent, ringev.Flags) { t.Error("the old handler ran") })
		defer old.Close()
		quiet(t, l)
		unix.Close(a)
		b, err := unix.Eventfd(1, unix.EFD_NONBLOCK|unix.EFD_CLOEXEC) // readable at once
		if err != nil {
			t.Fatal(err)
		}
		defer unix.Close(b)
		if b != a {
			t.Skipf("the new eventfd got fd %d, not the reused %d", b, a)
		}
		ran := 0
		addFd(t, l, b, ringev.Read, func(ev *ringev.FdEvent, _ ringev.Flags) { ran++; ev.Close() })
		l.AddTimer(2*time.Second, func(*ringev.Timer) {})
		testutil.Once(t, l, deadline)
		if ran != 1 {
			t.Fatalf("the new eventfd's handler ran %d times, want 1", ran)
		}
	})
}

// Timers, immediates and posts with a nil function are refused at once, not on the loop later.
func TestNilFunctionsAreRefused(t *testing.T) {
	l := newLoop(t, "epoll")
	if l.AddTimer(0, nil) != nil || l.AddTimerAt(time.Now(), nil) != nil || l.AddImmediate(nil) != nil {
		t.Fatal("a nil timer or immediate handler was accepted")
	}
	if err := l.Post(nil); !errors.Is(err, ringev.ErrNilFunc) {
		t.Fatalf("Post(nil) = %v, want ErrNilFunc", err)
	}
	if err := l.Once(); !errors.Is(err, ringev.ErrNothingToDo) {
		t.Fatalf("Once after refused nil functions: %v, want ErrNothingToDo", err)
	}
}

// Stop is for Run: a Stop while Run is not running does not make Once return without running a
// handler (it would spin a loop driven by Once); the next Run returns at once.
func TestStopOutsideRunDoesNotShortCutOnce(t *testing.T) {
	l := newLoop(t, "epoll")
	l.Stop()
	fired := false
	l.AddTimer(20*time.Millisecond, func(*ringev.Timer) { fired = true })
	testutil.Once(t, l, deadline)
	if !fired {
		t.Fatal("Once after Stop returned without running the timer")
	}
	l.AddTimer(time.Hour, func(*ringev.Timer) {})
	testutil.Run(t, l, deadline) // fails the test if Run does not return before the deadline
}
