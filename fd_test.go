//go:build linux

package ringev_test

// Tests of fd events (Loop.AddFd, FdEvent): many ready fds, slot growth, handles and their storage.

import (
	"errors"
	"runtime"
	"sync/atomic"
	"testing"
	"time"

	"github.com/ringev/ringev"
	"github.com/ringev/ringev/internal/testutil"
	"golang.org/x/sys/unix"
)

// TestFdManyReadyRunInFairRotation: 150 pipes stay readable (handlers do not drain);
// over 3*150 handler runs every handler runs exactly 3 times: more fds are ready than the
// readiness buffer holds (64), and fairness holds across waits.
func TestFdManyReadyRunInFairRotation(t *testing.T) {
	const n = 150
	eachMode(t, withFallback(), allModes, func(t *testing.T, backend string, m mode) {
		rs, _ := testutil.Pipes(t, n, true)
		l := newLoop(t, backend, m.opts()...)
		counts := make([]int, n)
		total := 0
		for i, r := range rs {
			addFd(t, l, r, ringev.Read, func(ev *ringev.FdEvent, f ringev.Flags) {
				if f != ringev.Read {
					t.Errorf("fd %d: flags %v", ev.Fd(), f)
				}
				counts[i]++
				total++
			})
		}
		for i := 0; total < 3*n; i++ {
			if i > 6*n {
				t.Fatalf("%d Onces ran only %d handlers, want %d", i, total, 3*n)
			}
			before := total
			once(t, l)
			if !m.all && total != before+1 {
				t.Fatalf("one Once ran %d handlers", total-before)
			}
		}
		lo, hi := counts[0], counts[0]
		for _, c := range counts {
			lo, hi = min(lo, c), max(hi, c)
		}
		if !m.all && (lo != 3 || hi != 3) {
			t.Fatalf("after %d runs: counts between %d and %d, want all 3: %v", total, lo, hi, counts)
		}
		if m.all && hi-lo > 1 {
			t.Fatalf("after %d runs: counts between %d and %d: %v", total, lo, hi, counts)
		}
	})
}

// TestFdManyReadyDrainingHandlersEachRunOnce: 200 pipes readable once; each handler drains
// its pipe; every handler runs exactly once and then nothing is ready.
func TestFdManyReadyDrainingHandlersEachRunOnce(t *testing.T) {
	const n = 200
	eachMode(t, withFallback(), allModes, func(t *testing.T, backend string, m mode) {
		rs, _ := testutil.Pipes(t, n, true)
		l := newLoop(t, backend, m.opts()...)
		counts := make([]int, n)
		total := 0
		for i, r := range rs {
			addFd(t, l, r, ringev.Read, func(ev *ringev.FdEvent, f ringev.Flags) {
				counts[i]++
				total++
				var b [8]byte
				if _, err := ringev.ReadNonblocking(ev.Fd(), b[:]); err != nil {
					t.Errorf("fd %d: read: %v (handler %d, run %d)", ev.Fd(), err, i, counts[i])
				}
			})
		}
		until(t, l, func() bool { return total >= n })
		for i, c := range counts {
			if c != 1 {
				t.Fatalf("handler %d ran %d times", i, c)
			}
		}
		quiet(t, l)
	})
}

// TestFdSlotsGrowWhileHandlersRun: 40 readable pipes; the first handler to run adds fd
// events on fds numbered above 32 and far above (dup'd to 700+), growing the slot table, and
// closes nothing. Every original handler still runs exactly once from that wait's readiness, and
// the new events run when their fds become readable, not before.
func TestFdSlotsGrowWhileHandlersRun(t *testing.T) {
	const n = 40
	eachMode(t, withFallback(), allModes, func(t *testing.T, backend string, m mode) {
		rs, _ := testutil.Pipes(t, n, true)
		nr, nw := testutil.Pipes(t, 3, false)
		var high []int
		for k, r := range nr {
			want := 700 + 97*k + int(time.Now().UnixNano()%7)
			if err := unix.Dup3(r, want, unix.O_CLOEXEC); err != nil {
				t.Fatalf("dup3: %v", err)
			}
			t.Cleanup(func() { unix.Close(want) })
			high = append(high, want)
		}
		l := newLoop(t, backend, m.opts()...)
		counts := make([]int, n)
		newCounts := make([]int, len(high))
		total := 0
		added := false
		for i, r := range rs {
			addFd(t, l, r, ringev.Read, func(ev *ringev.FdEvent, f ringev.Flags) {
				counts[i]++
				total++
				var b [8]byte
				ringev.ReadNonblocking(ev.Fd(), b[:])
				if added {
					return
				}
				added = true
				for k, h := range high {
					if _, err := l.AddFd(h, ringev.Read, func(ev *ringev.FdEvent, f ringev.Flags) {
						newCounts[k]++
						total++
						var b [8]byte
						ringev.ReadNonblocking(ev.Fd(), b[:])
					}); err != nil {
						t.Errorf("AddFd(%d) in a handler: %v", h, err)
					}
				}
			})
		}
		until(t, l, func() bool { return total >= n })
		for i, c := range counts {
			if c != 1 {
				t.Fatalf("handler %d ran %d times", i, c)
			}
		}
		for k, c := range newCounts {
			if c != 0 {
				t.Fatalf("new handler %d on an empty pipe ran %d times", k, c)
			}
		}
		quiet(t, l)
		for _, w := range nw {
			testutil.Write(t, w, oneByte)
		}
		until(t, l, func() bool { return total >= n+len(high) })
		for k, c := range newCounts {
			if c != 1 {
				t.Fatalf("new handler %d (fd %d) ran %d times", k, high[k], c)
			}
		}
		quiet(t, l)
	})
}

// TestFdHandlerClosesAllOtherReadyEvents: 100 readable pipes reported by one wait; the
// first handler that runs closes every other fd event; none of them ever runs.
func TestFdHandlerClosesAllOtherReadyEvents(t *testing.T) {
	const n = 100
	eachMode(t, withFallback(), allModes, func(t *testing.T, backend string, m mode) {
		rs, _ := testutil.Pipes(t, n, true)
		l := newLoop(t, backend, m.opts()...)
		evs := make([]*ringev.FdEvent, n)
		ran := 0
		for i, r := range rs {
			evs[i] = addFd(t, l, r, ringev.Read, func(ev *ringev.FdEvent, f ringev.Flags) {
				ran++
				if ran > 1 {
					t.Errorf("handler %d ran after the first handler closed it", i)
					return
				}
				for j, o := range evs {
					if j != i {
						if err := o.Close(); err != nil {
							t.Errorf("Close: %v", err)
						}
					}
				}
				ev.SetFlags(0)
			})
		}
		once(t, l)
		if ran != 1 {
			t.Fatalf("%d handlers ran", ran)
		}
		quiet(t, l)
	})
}

// TestFdHandlerDisarmsOthersThenRearmsOne: 80 readable pipes; the first handler sets every
// other event's flags to 0 and one of them back to Read; only that one runs afterwards (once per
// Once, level-triggered), none of the disarmed ones.
func TestFdHandlerDisarmsOthersThenRearmsOne(t *testing.T) {
	const n = 80
	eachMode(t, withFallback(), allModes, func(t *testing.T, backend string, m mode) {
		rs, _ := testutil.Pipes(t, n, true)
		l := newLoop(t, backend, m.opts()...)
		evs := make([]*ringev.FdEvent, n)
		counts := make([]int, n)
		first := -1
		keep := -1
		for i, r := range rs {
			evs[i] = addFd(t, l, r, ringev.Read, func(ev *ringev.FdEvent, f ringev.Flags) {
				counts[i]++
				if first >= 0 {
					return
				}
				first = i
				keep = (i + n/2) % n
				for j, o := range evs {
					if err := o.SetFlags(0); err != nil {
						t.Errorf("SetFlags(0): %v", err)
					}
					if j == keep {
						o.SetFlags(ringev.Read)
					}
				}
			})
		}
		for range 6 {
			once(t, l)
		}
		for j, c := range counts {
			switch {
			case j == first && c != 1:
				t.Fatalf("first handler ran %d times", c)
			case j == keep && !m.all && c != 5:
				t.Fatalf("re-armed handler ran %d times in 5 Onces, want 5", c)
			case j == keep && m.all && c != 6: // it also runs in the first Once's batch
				t.Fatalf("re-armed handler ran %d times in 6 batches, want 6", c)
			case j != first && j != keep && c != 0:
				t.Fatalf("disarmed handler %d ran %d times", j, c)
			}
		}
	})
}

// TestFdClosedHandleDoesNotAliasLaterEvents: on one fd, events A and B (stored inside the
// slot) are closed, then C, D and E are added (heap). Using the closed handles (Close, SetFlags,
// Data) never touches the live ones, and only the live ones run.
func TestFdClosedHandleDoesNotAliasLaterEvents(t *testing.T) {
	eachMode(t, withFallback(), allModes, func(t *testing.T, backend string, m mode) {
		r, w := testutil.Pipe(t)
		l := newLoop(t, backend, m.opts()...)
		testutil.Write(t, w, oneByte)
		a := addFd(t, l, r, ringev.Read, never(t, "A (closed)"))
		b := addFd(t, l, r, ringev.Read, never(t, "B (closed)"))
		a.Data, b.Data = "A", "B"
		if err := a.Close(); err != nil {
			t.Fatal(err)
		}
		if err := b.Close(); err != nil {
			t.Fatal(err)
		}
		counts := map[string]int{}
		h := func(name string) ringev.FdHandler {
			return func(ev *ringev.FdEvent, f ringev.Flags) {
				counts[name]++
				if ev.Data != name {
					t.Errorf("handler %s got an event whose Data is %v", name, ev.Data)
				}
			}
		}
		c := addFd(t, l, r, ringev.Read, h("C"))
		d := addFd(t, l, r, ringev.Read, h("D"))
		e := addFd(t, l, r, ringev.Read, h("E"))
		c.Data, d.Data, e.Data = "C", "D", "E"
		for _, x := range []*ringev.FdEvent{a, b} {
			if err := x.SetFlags(ringev.Read | ringev.Write); !errors.Is(err, ringev.ErrClosed) {
				t.Fatalf("SetFlags on a closed handle: %v, want ErrClosed", err)
			}
			if err := x.Close(); err != nil {
				t.Fatalf("second Close: %v", err)
			}
			x.Data = "clobbered"
		}
		for _, x := range []*ringev.FdEvent{c, d, e} {
			if x.Flags() != ringev.Read || x.Data == "clobbered" {
				t.Fatalf("live event changed through a closed handle: flags %v data %v", x.Flags(), x.Data)
			}
		}
		// Close D (heap) and add F: F must not reuse A's or B's storage.
		if err := d.Close(); err != nil {
			t.Fatal(err)
		}
		f := addFd(t, l, r, ringev.Read, h("F"))
		f.Data = "F"
		for range 9 {
			once(t, l)
		}
		if counts["C"] != 3 || counts["E"] != 3 || counts["F"] != 3 || counts["D"] != 0 {
			t.Fatalf("runs over 9 Onces: %v, want C, E, F 3 each, D 0", counts)
		}
	})
}

// TestFdClosedEventReleasesHandlerAndData: after FdEvent.Close and once the caller drops
// its handle, the event's Data and what its handler captured can be collected, for the first
// two events ever added on an fd number (stored inside the loop's slot) as for later ones.
func TestFdClosedEventReleasesHandlerAndData(t *testing.T) {
	eachBackend(t, ringev.Backends(), func(t *testing.T, backend string) {
		r, _ := testutil.Pipe(t)
		l := newLoop(t, backend)
		var dataFreed, handlerFreed [4]atomic.Bool
		for i := range 4 { // events 0 and 1 are stored in the slot, 2 and 3 on the heap
			func() {
				data := &[1 << 16]byte{}
				captured := &[1 << 16]byte{}
				runtime.AddCleanup(data, func(int) { dataFreed[i].Store(true) }, 0)
				runtime.AddCleanup(captured, func(int) { handlerFreed[i].Store(true) }, 0)
				ev := addFd(t, l, r, ringev.Read, func(*ringev.FdEvent, ringev.Flags) { _ = captured[0] })
				ev.Data = data
				if err := ev.Close(); err != nil {
					t.Fatal(err)
				}
			}()
		}
		all := func(b *[4]atomic.Bool) bool { return b[0].Load() && b[1].Load() && b[2].Load() && b[3].Load() }
		for end := time.Now().Add(deadline); time.Now().Before(end); {
			runtime.GC()
			if all(&dataFreed) && all(&handlerFreed) {
				return
			}
			time.Sleep(5 * time.Millisecond)
		}
		t.Fatalf("collected after Close (events 0, 1 live inside the fd's slot): Data %v %v %v %v, handler's captures %v %v %v %v",
			dataFreed[0].Load(), dataFreed[1].Load(), dataFreed[2].Load(), dataFreed[3].Load(),
			handlerFreed[0].Load(), handlerFreed[1].Load(), handlerFreed[2].Load(), handlerFreed[3].Load())
	})
}

// TestFdReplacedNumberNotRunFromStaleCache: two readable pipes reported by one wait; the
// handler that runs first auto-closes the other's event (closing its fd), opens a new empty pipe
// that takes the number and watches it. The new event does not run until its pipe has data.
// Every fd is handed over explicitly: the auto-closed read end to the loop, the new read end to
// the new event's auto-close, the new write end to the test's cleanup.
func TestFdReplacedNumberNotRunFromStaleCache(t *testing.T) {
	eachMode(t, withFallback(), allModes, func(t *testing.T, backend string, m mode) {
		var rs [2]int
		for i := range rs {
			r, w := testutil.Pipe(t)
			testutil.Write(t, w, oneByte)
			rs[i] = r
		}
		l := newLoop(t, backend, m.opts()...)
		evs := make([]*ringev.FdEvent, 2)
		ran := 0
		newW := -1
		newRuns := 0
		for i, r := range rs {
			evs[i] = addFd(t, l, r, ringev.Read, func(ev *ringev.FdEvent, f ringev.Flags) {
				ran++
				if ran > 1 {
					t.Errorf("handler %d ran after it was closed", i)
					return
				}
				other := evs[1-i]
				num := other.Fd()
				other.SetAutoClose(true)
				if err := other.Close(); err != nil {
					t.Errorf("Close: %v", err)
				}
				testutil.HandOver(t, rs[1-i]) // closed by the auto-close; its number is free
				newR, w, _ := testutil.PipeAt(t, num)
				newW = w
				ev2 := addFd(t, l, num, ringev.Read, func(*ringev.FdEvent, ringev.Flags) { newRuns++ })
				ev2.SetAutoClose(true)
				testutil.HandOver(t, newR) // closed by ev2's auto-close, at the latest by Loop.Close
				ev.SetFlags(0)
			})
		}
		once(t, l)
		if newW < 0 {
			t.Fatal("the first handler did not set up the new pipe")
		}
		quiet(t, l)
		if newRuns != 0 {
			t.Fatalf("new event on an empty pipe ran %d times", newRuns)
		}
		testutil.Write(t, newW, oneByte)
		until(t, l, func() bool { return newRuns > 0 })
	})
}

// TestFdAddHugeUnopenedFdReturnsEBADFWithoutGrowing: AddFd of a huge fd number that is not open
// returns EBADF without growing the loop's fd table.
func TestFdAddHugeUnopenedFdReturnsEBADFWithoutGrowing(t *testing.T) {
	l := newLoop(t, "epoll")
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	_, err := l.AddFd(1<<30, ringev.Read, func(*ringev.FdEvent, ringev.Flags) {})
	if !errors.Is(err, unix.EBADF) {
		t.Fatalf("AddFd(1<<30): %v, want EBADF", err)
	}
	runtime.ReadMemStats(&after)
	if grown := int64(after.HeapSys) - int64(before.HeapSys); grown > 64<<20 {
		t.Fatalf("heap grew by %d MiB for a refused fd", grown>>20)
	}
}
