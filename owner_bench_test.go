//go:build linux

package ringev

import (
	"testing"
	"time"
)

// The owner's cost of the calls that are safe from any goroutine: an immediate scheduled and
// run, a timer added and run, a timer added and stopped, each on the loop's own goroutine.

// benchLoop is a poll loop with a timer an hour away, so that Once never finds nothing to do.
func benchLoop(b *testing.B) *Loop {
	l, err := New(WithBackend("poll"))
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { l.Close() })
	l.AddTimer(time.Hour, func(*Timer) {})
	b.ReportAllocs()
	return l
}

// BenchmarkImmediateScheduleAndRun: one Schedule of a made immediate and the Once that runs it.
func BenchmarkImmediateScheduleAndRun(b *testing.B) {
	l := benchLoop(b)
	runs := 0
	im := l.AddImmediate(func() { runs++ })
	if err := l.Once(); err != nil {
		b.Fatal(err)
	}
	b.ResetTimer()
	for range b.N {
		im.Schedule()
		if err := l.Once(); err != nil {
			b.Fatal(err)
		}
	}
	if runs != b.N+1 {
		b.Fatalf("%d runs, want %d", runs, b.N+1)
	}
}

// BenchmarkTimerAddAndRun: AddTimer(0) and the Once that runs it.
func BenchmarkTimerAddAndRun(b *testing.B) {
	l := benchLoop(b)
	runs := 0
	h := func(*Timer) { runs++ }
	for range b.N {
		l.AddTimer(0, h)
		if err := l.Once(); err != nil {
			b.Fatal(err)
		}
	}
	if runs != b.N {
		b.Fatalf("%d runs, want %d", runs, b.N)
	}
}

// BenchmarkTimerAddAndStop: AddTimer and Stop before it is due.
func BenchmarkTimerAddAndStop(b *testing.B) {
	l := benchLoop(b)
	h := func(*Timer) {}
	for range b.N {
		if !l.AddTimer(time.Minute, h).Stop() {
			b.Fatal("Stop returned false")
		}
	}
}
