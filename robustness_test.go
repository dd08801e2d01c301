//go:build linux

package ringev_test

import (
	"errors"
	"testing"
	"time"

	"github.com/ringev/ringev"
	"github.com/ringev/ringev/internal/testutil"
)

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
