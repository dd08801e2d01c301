//go:build linux

package ringev_test

// Tests of immediates (Loop.AddImmediate, Immediate.Schedule).

import (
	"testing"
)

// TestImmediateScheduledAgainRunsAgainWithoutAllocating: an Immediate that ran can be
// scheduled again (tevent_schedule_immediate); it then runs once more on the next Once, while
// queued it is not scheduled twice, and scheduling it and running it allocates nothing.
func TestImmediateScheduledAgainRunsAgainWithoutAllocating(t *testing.T) {
	l := newLoop(t, "poll")
	runs := 0
	im := l.AddImmediate(func() { runs++ })
	once(t, l)
	if !im.Schedule() {
		t.Fatal("Schedule of an immediate that ran: false, want true")
	}
	if im.Schedule() {
		t.Fatal("Schedule of an immediate already queued: true, want false")
	}
	once(t, l)
	if runs != 2 {
		t.Fatalf("the immediate ran %d times, want 2", runs)
	}
	// l.Once directly (once's watchdog allocates): with the immediate queued it
	// returns at once; without it the loop would have nothing to wait for.
	a := testing.AllocsPerRun(100, func() {
		if im.Schedule() {
			l.Once()
		}
	})
	if a != 0 {
		t.Errorf("Schedule and the Once that runs it: %v allocations, want 0", a)
	}
	if runs != 2+101 {
		t.Errorf("the immediate ran %d times, want %d", runs, 2+101)
	}
}
