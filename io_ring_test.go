//go:build linux

package ringev_test

// Tests of handler I/O through the ring (Loop.ReadNonblocking and WriteNonblocking on uring):
// the look behind a handler's read or write serves the next Once, and dispatch stays exact.

import (
	"fmt"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/ringev/ringev"
	"github.com/ringev/ringev/internal/testutil"
	"golang.org/x/sys/unix"
)

// readAFeedB is the start of handler A in the tests where B becomes ready during A's
// first call: it counts the call, puts a byte into B's pipe (bw) on the first one, and reads one
// byte from a through the loop.
func readAFeedB(t *testing.T, l *ringev.Loop, a, bw int, buf *[1]byte, calls *int) {
	t.Helper()
	*calls++
	if *calls == 1 {
		testutil.Write(t, bw, []byte{'b'})
	}
	if n, err := l.ReadNonblocking(a, buf[:]); n != 1 || err != nil {
		t.Errorf("A, call %d: ReadNonblocking = %d, %v", *calls, n, err)
	}
}

// TestLoopIOOnRingSparesTheNextWait: on uring, with fd_speed1 handlers that use the loop
// methods, the look that follows each handler's I/O in the ring serves the next Once: after a
// warm-up, 1000 read events take fewer than 100 waits. With the package functions, and on every
// other backend (and the uring fallback), each read event takes about one wait (at least 500).
func TestLoopIOOnRingSparesTheNextWait(t *testing.T) {
	const n = 1000
	for _, backend := range withFallback() {
		for _, via := range []struct {
			name string
			loop bool
		}{{"LoopMethods", true}, {"PackageFunctions", false}} {
			t.Run(backend+"/"+via.name, func(t *testing.T) {
				rides := via.loop && backend == "uring"
				if rides {
					requireRide(t)
				}
				s := newSpeed(t, backend, via.loop, 0)
				watch(t, s.l, 2*deadline, unblockRead(s.w))
				s.run(t, 100)
				w0 := ringev.Waits(s.l)
				s.run(t, n)
				waits := ringev.Waits(s.l) - w0
				s.check(t)
				if rides && waits >= n/10 {
					t.Fatalf("%d read events through the ring took %d waits, want fewer than %d", n, waits, n/10)
				}
				if !rides && waits < n/2 {
					t.Fatalf("%d read events took %d waits, want about one each (at least %d)", n, waits, n/2)
				}
			})
		}
	}
}

// TestLoopIOWithFreshReadinessWaitsInEveryOnce: WithFreshReadiness ignores what a handler's
// look found: every Once that runs an fd handler waits first, on every backend.
func TestLoopIOWithFreshReadinessWaitsInEveryOnce(t *testing.T) {
	eachMode(t, withFallback(), []mode{modeFresh, modeFreshAll}, func(t *testing.T, backend string, m mode) {
		s := newSpeed(t, backend, true, 0, m.opts()...)
		watch(t, s.l, 2*deadline, unblockRead(s.w))
		s.run(t, 100)
		w0, o0 := ringev.Waits(s.l), s.onces
		s.run(t, 500)
		s.check(t)
		if waits, onces := ringev.Waits(s.l)-w0, uint64(s.onces-o0); waits < onces {
			t.Fatalf("%d Onces ran fd handlers with only %d waits: readiness from a handler's look was used", onces, waits)
		}
	})
}

// TestLoopIOFdSpeedDeliversEveryEventInEveryMode: fd_speed2 (a read and a write handler using
// the loop methods, and an idle pair that must never run) delivers 2000 read events in every
// dispatch mode on every backend: each handler call moves exactly its byte, in order, with the
// right flags, and what was written and not read is in the pipe.
func TestLoopIOFdSpeedDeliversEveryEventInEveryMode(t *testing.T) {
	eachMode(t, withFallback(), allModes, func(t *testing.T, backend string, m mode) {
		s := newSpeed(t, backend, true, 1, m.opts()...)
		watch(t, s.l, 2*deadline, unblockRead(s.w))
		s.run(t, 2000)
		s.check(t)
	})
}

// TestLoopIOLevelTriggeredUntilDrained: a handler that reads one of three bytes per call through
// the loop is called again until all three are read (in order), and not after; a byte written
// later wakes the loop and runs it once more; in every mode.
func TestLoopIOLevelTriggeredUntilDrained(t *testing.T) {
	eachMode(t, withFallback(), allModes, func(t *testing.T, backend string, m mode) {
		r, w := testutil.Pipe(t)
		l := newLoop(t, backend, m.opts()...)
		watch(t, l, deadline, unblockRead(w))
		testutil.Write(t, w, []byte("abc"))
		buf := new([1]byte)
		got := ""
		calls := 0
		addFd(t, l, r, ringev.Read, func(ev *ringev.FdEvent, f ringev.Flags) {
			calls++
			n, err := l.ReadNonblocking(r, buf[:])
			if f != ringev.Read || n != 1 || err != nil {
				t.Errorf("call %d: flags %v, ReadNonblocking = %d, %v", calls, f, n, err)
				return
			}
			got += string(buf[:n])
		})
		for i := 0; calls < 3; i++ {
			if i == 6 {
				t.Fatalf("%d handler calls in 6 Onces, want 3 (one per byte)", calls)
			}
			once(t, l)
		}
		quiet(t, l)
		if got != "abc" {
			t.Fatalf("read %q, want \"abc\"", got)
		}
		// The loop now blocks in a wait; a new byte wakes it and runs the handler.
		testutil.Write(t, w, []byte("d"))
		until(t, l, func() bool { return calls == 4 })
		quiet(t, l)
		if got != "abcd" {
			t.Fatalf("read %q, want \"abcd\"", got)
		}
	})
}

// TestLoopIOFairnessAlternates: two always-readable pipes (64 bytes each), whose handlers read
// one byte per call through the loop, alternate: neither runs twice in a row, and each reads its
// bytes in order, in every mode.
func TestLoopIOFairnessAlternates(t *testing.T) {
	const runs = 40
	eachMode(t, withFallback(), allModes, func(t *testing.T, backend string, m mode) {
		var rs, ws [2]int
		for i := range 2 {
			rs[i], ws[i] = testutil.Pipe(t)
			data := make([]byte, 64)
			for k := range data {
				data[k] = byte(k)
			}
			testutil.Write(t, ws[i], data)
		}
		l := newLoop(t, backend, m.opts()...)
		watch(t, l, deadline, func() {})
		buf := new([1]byte)
		var who []int
		var next [2]byte
		for i := range 2 {
			addFd(t, l, rs[i], ringev.Read, func(ev *ringev.FdEvent, f ringev.Flags) {
				who = append(who, i)
				if n, err := l.ReadNonblocking(rs[i], buf[:]); n != 1 || err != nil || buf[0] != next[i] {
					t.Errorf("handler %d, call %d: ReadNonblocking = %d %v, %v; want byte %d", i, len(who), n, buf[:max(n, 0)], err, next[i])
				}
				next[i]++
			})
		}
		for o := 0; len(who) < runs; o++ {
			if o == runs {
				t.Fatalf("%d handler calls in %d Onces", len(who), o)
			}
			before := len(who)
			once(t, l)
			if !m.all && len(who) != before+1 {
				t.Fatalf("one Once ran %d handlers", len(who)-before)
			}
		}
		for k := 1; k < len(who); k++ {
			if who[k] == who[k-1] {
				t.Fatalf("handler %d ran twice in a row (calls %d and %d): %v", who[k], k, k+1, who)
			}
		}
	})
}

// TestLoopIOFairWithMoreReadyFdsThanOneLookReports: 128 always-readable pipes (more than one
// look reports: 64); every handler reads a byte through the loop and writes it back through
// the loop (an echo), and, in the AddClose variant, then adds and closes an fd event (a server
// accepting or dropping a connection). In 20 rounds' worth of runs every handler runs at least
// 10 times: a handler's look is not thrown away (which would leave half the fds unserved).
func TestLoopIOFairWithMoreReadyFdsThanOneLookReports(t *testing.T) {
	const n, rounds = 128, 20
	for _, variant := range []string{"Echo", "AddClose"} {
		t.Run(variant, func(t *testing.T) {
			eachMode(t, withFallback(), allModes, func(t *testing.T, backend string, m mode) {
				rs, ws := testutil.Pipes(t, n, true) // one byte each
				dr, _ := testutil.Pipe(t)
				l := newLoop(t, backend, m.opts()...)
				calls := make([]int, n)
				buf := new([1]byte)
				total := 0
				for i := range n {
					addFd(t, l, rs[i], ringev.Read, func(*ringev.FdEvent, ringev.Flags) {
						calls[i]++
						total++
						if n, err := l.ReadNonblocking(rs[i], buf[:]); n != 1 || err != nil {
							t.Errorf("handler %d: ReadNonblocking = %d, %v", i, n, err)
						}
						if n, err := l.WriteNonblocking(ws[i], buf[:]); n != 1 || err != nil {
							t.Errorf("handler %d: WriteNonblocking = %d, %v", i, n, err)
						}
						if variant == "AddClose" {
							if err := addFd(t, l, dr, ringev.Read, never(t, "added and closed at once")).Close(); err != nil {
								t.Errorf("FdEvent.Close: %v", err)
							}
						}
					})
				}
				untilFor(t, l, 20*time.Second, "20 rounds of handler runs", func() bool { return total >= n*rounds })
				if lo, hi := slices.Min(calls), slices.Max(calls); lo < rounds/2 {
					t.Fatalf("unfair: a handler ran %d times, another %d, in %d runs over %d always-ready fds", lo, hi, total, n)
				}
			})
		})
	}
}

// TestLoopIOClosedEventNeverRuns: a handler makes another fd readable, reads its own fd through
// the loop (on uring the look behind that read finds the other fd ready), and then closes the
// other fd's event (plainly, with auto-close, or while a second event on that fd stays): the
// closed event's handler never runs; the second event runs.
func TestLoopIOClosedEventNeverRuns(t *testing.T) {
	for _, variant := range []string{"Plain", "AutoClose", "OtherEventOnFdStays"} {
		t.Run(variant, func(t *testing.T) {
			eachMode(t, withFallback(), allModes, func(t *testing.T, backend string, m mode) {
				a, aw := testutil.Pipe(t)
				b, bw := testutil.Pipe(t)
				l := newLoop(t, backend, m.opts()...)
				watch(t, l, deadline, unblockRead(aw))
				testutil.Write(t, aw, []byte("12"))
				buf := new([1]byte)
				var eb *ringev.FdEvent
				ranA, ranB2 := 0, 0
				addFd(t, l, a, ringev.Read, func(ev *ringev.FdEvent, f ringev.Flags) {
					readAFeedB(t, l, a, bw, buf, &ranA)
					if ranA == 1 {
						if err := eb.Close(); err != nil {
							t.Errorf("FdEvent.Close: %v", err)
						}
					}
				})
				eb = addFd(t, l, b, ringev.Read, never(t, "closed event"))
				if variant == "AutoClose" {
					eb.SetAutoClose(true)
					testutil.HandOver(t, b)
				}
				if variant == "OtherEventOnFdStays" {
					addFd(t, l, b, ringev.Read, func(ev *ringev.FdEvent, f ringev.Flags) {
						ranB2++
						if n, err := l.ReadNonblocking(b, buf[:]); n != 1 || err != nil {
							t.Errorf("B2, call %d: ReadNonblocking = %d, %v", ranB2, n, err)
						}
					})
				}
				// A first, alone: B is empty until A's first call.
				once(t, l)
				if ranA != 1 {
					t.Fatalf("first Once ran A %d times, want 1", ranA)
				}
				wantB2 := 0
				if variant == "OtherEventOnFdStays" {
					wantB2 = 1
				}
				for i := 0; ranA < 2 || ranB2 < wantB2; i++ {
					if i == 6 {
						t.Fatalf("after 6 more Onces A ran %d times (want 2), B2 %d (want %d)", ranA, ranB2, wantB2)
					}
					once(t, l)
				}
				quiet(t, l)
			})
		})
	}
}

// TestLoopIOAddFdInHandlerRunsNewEvent: a handler reads through the loop and then adds an event
// for an fd that is ready: that event runs at the next Once (it is the least recently run of the
// ready ones, and the handler used up its own readiness), before the first handler runs again.
func TestLoopIOAddFdInHandlerRunsNewEvent(t *testing.T) {
	eachMode(t, withFallback(), allModes, func(t *testing.T, backend string, m mode) {
		a, aw := testutil.Pipe(t)
		nr, nw := testutil.Pipe(t)
		l := newLoop(t, backend, m.opts()...)
		watch(t, l, deadline, unblockRead(aw))
		testutil.Write(t, aw, []byte("123"))
		testutil.Write(t, nw, []byte("n"))
		buf := new([1]byte)
		var log []string
		addFd(t, l, a, ringev.Read, func(ev *ringev.FdEvent, f ringev.Flags) {
			log = append(log, "A")
			if n, err := l.ReadNonblocking(a, buf[:]); n != 1 || err != nil {
				t.Errorf("A: ReadNonblocking = %d, %v", n, err)
			}
			if len(log) == 1 {
				addFd(t, l, nr, ringev.Read, func(ev *ringev.FdEvent, f ringev.Flags) {
					log = append(log, "N")
					if n, err := l.ReadNonblocking(nr, buf[:]); n != 1 || err != nil {
						t.Errorf("N: ReadNonblocking = %d, %v", n, err)
					}
				})
			}
		})
		once(t, l)
		once(t, l)
		if len(log) < 2 || log[1] != "N" {
			t.Fatalf("handler calls in the first two Onces: %v; want the new event N right after A", log)
		}
		for i := 0; len(log) < 4; i++ {
			if i == 4 {
				t.Fatalf("handler calls: %v; want A to read its other two bytes", log)
			}
			once(t, l)
		}
		quiet(t, l)
		if strings.Join(log, "") != "ANAA" {
			t.Fatalf("handler calls %v, want [A N A A]", log)
		}
	})
}

// TestLoopIOAddFdOnReusedNumberNotRunFromEarlierLook: a handler makes fd B readable, reads its
// own fd through the loop (on uring the look behind that read finds B ready), closes B's event
// with auto-close, puts an empty pipe on B's fd number and adds an event for it: that event does
// not run from the earlier look (its pipe is empty), only once its pipe gets a byte.
func TestLoopIOAddFdOnReusedNumberNotRunFromEarlierLook(t *testing.T) {
	eachMode(t, withFallback(), allModes, func(t *testing.T, backend string, m mode) {
		a, aw := testutil.Pipe(t)
		b, bw := testutil.Pipe(t)
		l := newLoop(t, backend, m.opts()...)
		watch(t, l, deadline, unblockRead(aw))
		testutil.Write(t, aw, []byte("12"))
		buf := new([1]byte)
		num := b
		eb := addFd(t, l, num, ringev.Read, never(t, "closed event on the old file"))
		eb.SetAutoClose(true)
		testutil.HandOver(t, b)
		newW := -1
		calls, newCalls := 0, 0
		addFd(t, l, a, ringev.Read, func(ev *ringev.FdEvent, f ringev.Flags) {
			readAFeedB(t, l, a, bw, buf, &calls)
			if calls != 1 {
				return
			}
			if err := eb.Close(); err != nil {
				t.Errorf("FdEvent.Close: %v", err)
			}
			nr, nw, _ := testutil.PipeAt(t, num)
			newW = nw
			ev2 := addFd(t, l, num, ringev.Read, func(ev *ringev.FdEvent, f ringev.Flags) {
				newCalls++
				if n, err := ringev.ReadNonblocking(num, buf[:]); n != 1 || err != nil {
					t.Errorf("new event, call %d (flags %v): ReadNonblocking = %d, %v: it ran for readiness its file never had", newCalls, f, n, err)
				}
			})
			ev2.SetAutoClose(true)
			testutil.HandOver(t, nr) // closed by ev2's auto-close, at the latest by Loop.Close
		})
		for i := 0; calls < 2; i++ {
			if i == 6 {
				t.Fatalf("A ran %d times in 6 Onces, want 2", calls)
			}
			once(t, l)
		}
		quiet(t, l)
		if newCalls != 0 || newW < 0 {
			t.Fatalf("the new event ran %d times before its pipe had data", newCalls)
		}
		testutil.Write(t, newW, []byte{'n'})
		until(t, l, func() bool { return newCalls == 1 })
		quiet(t, l)
	})
}

// TestLoopIOOwnFdDrainedOtherwiseIsCalledAtMostOnceMore: a handler reads one byte of two
// through the loop and then the other with the package function, so its fd is empty when it
// returns. Loop.ReadNonblocking's doc: the look behind the read is made after it, so such a
// handler "can be called once more for readiness it used up (it then reads EAGAIN)": it is
// called at most once more, reads EAGAIN then, and never again.
func TestLoopIOOwnFdDrainedOtherwiseIsCalledAtMostOnceMore(t *testing.T) {
	eachMode(t, withFallback(), allModes, func(t *testing.T, backend string, m mode) {
		r, w := testutil.Pipe(t)
		l := newLoop(t, backend, m.opts()...)
		watch(t, l, deadline, unblockRead(w))
		testutil.Write(t, w, []byte("ab"))
		buf := new([1]byte)
		calls := 0
		addFd(t, l, r, ringev.Read, func(ev *ringev.FdEvent, f ringev.Flags) {
			calls++
			if calls > 1 { // the package function: EAGAIN at once, whatever the backend
				if n, err := ringev.ReadNonblocking(r, buf[:]); n != 0 || err != unix.EAGAIN {
					t.Errorf("call %d (flags %v) on a pipe its handler drained: read %d, %v; want EAGAIN", calls, f, n, err)
				}
				return
			}
			if n, err := l.ReadNonblocking(r, buf[:]); n != 1 || err != nil || buf[0] != 'a' {
				t.Errorf("Loop.ReadNonblocking = %d %q, %v", n, buf[:max(n, 0)], err)
			}
			if n, err := ringev.ReadNonblocking(r, buf[:]); n != 1 || err != nil || buf[0] != 'b' {
				t.Errorf("ReadNonblocking = %d %q, %v", n, buf[:max(n, 0)], err)
			}
		})
		once(t, l)
		// At most one more call, then nothing is ready: a quiet-period timer runs by the
		// second Once.
		if errs := settle(t, l, quietFor, 2); len(errs) > 0 {
			t.Fatalf("Once: %v", errs[0])
		}
		if calls > 2 {
			t.Fatalf("the handler of the drained pipe was called %d times more, want at most once", calls-1)
		}
		quiet(t, l)
	})
}

// TestLoopIODispatchAllBatchRunsOnItsWait: with WithDispatchAll, a handler's I/O through the
// loop made while the batch still has readiness to serve carries no look (it is read(2)), even
// with an EPOLL_WAIT left in flight by an earlier handler, so the batch runs every handler its
// wait found ready; a handler of the batch that drained its fd with the package function is not
// called again for it. Set-up: X's handler leaves an EPOLL_WAIT in
// flight (nothing else is ready); then A and B become ready together; A runs first (B ran
// before) and reads through the loop, B reads with the package function.
func TestLoopIODispatchAllBatchRunsOnItsWait(t *testing.T) {
	eachMode(t, withFallback(), []mode{modeAll, modeFreshAll}, func(t *testing.T, backend string, m mode) {
		x, xw := testutil.Pipe(t)
		a, aw := testutil.Pipe(t)
		b, bw := testutil.Pipe(t)
		l := newLoop(t, backend, m.opts()...)
		watch(t, l, deadline, func() { unix.Write(xw, []byte{'!'}); unix.Write(aw, []byte{'!'}) })
		buf := new([8]byte)
		nth := 0
		var log []string
		spurious := 0
		addFd(t, l, x, ringev.Read, func(*ringev.FdEvent, ringev.Flags) {
			log = append(log, fmt.Sprintf("%d:X", nth))
			if n, err := l.ReadNonblocking(x, buf[:]); n != 1 || err != nil {
				t.Errorf("X: ReadNonblocking = %d, %v", n, err)
			}
		})
		addFd(t, l, a, ringev.Read, func(*ringev.FdEvent, ringev.Flags) {
			log = append(log, fmt.Sprintf("%d:A", nth))
			if n, err := l.ReadNonblocking(a, buf[:]); n != 1 || err != nil {
				t.Errorf("A: ReadNonblocking = %d, %v", n, err)
			}
		})
		addFd(t, l, b, ringev.Read, func(*ringev.FdEvent, ringev.Flags) {
			log = append(log, fmt.Sprintf("%d:B", nth))
			if n, err := ringev.ReadNonblocking(b, buf[:]); n != 1 || err != nil {
				spurious++
				t.Errorf("B (call %s): ReadNonblocking = %d, %v: called for a pipe it had drained", log[len(log)-1], n, err)
			}
		})
		turn := func() {
			t.Helper()
			once(t, l)
			nth++
		}
		testutil.Write(t, bw, []byte{'b'})
		turn() // 0: B
		testutil.Write(t, xw, []byte{'x'})
		turn() // 1: X, whose look stays in flight
		testutil.Write(t, aw, []byte{'a'})
		testutil.Write(t, bw, []byte{'b'})
		for i := 0; len(log) < 4; i++ {
			if i == 4 {
				t.Fatalf("handler calls %v: A and B did not both run", log)
			}
			turn()
		}
		quiet(t, l)
		// A's I/O, made while the batch still has B to serve, carries no look (it is
		// read(2)), so no news cuts the batch: B runs in it, on every backend.
		want := "0:B 1:X 2:A 2:B"
		if got := strings.Join(log, " "); got != want || spurious > 0 {
			t.Fatalf("handler calls %q, want %q", got, want)
		}
	})
}

// TestLoopIOBusyLoopRunsTimersAndPosts: while fd_speed1's handlers keep the loop busy through
// the loop methods, a 20 ms timer runs, never early, at the first Once that starts after its
// deadline (or the one after, if that one runs the posted function, which comes first), and a
// function posted from another goroutine runs at the first Once that starts after Post
// returned, in every mode. The loop is busy meanwhile: at least 10 read events, asserted in a
// round where the loop made 30 Once calls before the timer was due (the loop's own progress,
// not a time: a busy machine may give its thread little of the 20 ms, and a GC assist or the
// race detector may take the CPU it gets); a round with fewer is run again, up to 5 rounds.
func TestLoopIOBusyLoopRunsTimersAndPosts(t *testing.T) {
	eachMode(t, withFallback(), allModes, func(t *testing.T, backend string, m mode) {
		s := newSpeed(t, backend, true, 0, m.opts()...)
		watch(t, s.l, 2*deadline, unblockRead(s.w))
		s.run(t, 100)
		var rounds []string
		for round := 1; ; round++ {
			start := time.Now()
			var timerAt time.Duration
			tm := s.l.AddTimer(20*time.Millisecond, func(*ringev.Timer) { timerAt = time.Since(start) })
			posted := false
			var postReturned atomic.Bool
			go func() {
				time.Sleep(5 * time.Millisecond) // some time into the busy spell: any moment will do
				if err := s.l.Post(func() { posted = true }); err != nil {
					t.Errorf("Post: %v", err)
				}
				postReturned.Store(true)
			}()
			reads, early := s.reads, 0
			for timerAt == 0 || !posted {
				timerDue := !time.Now().Before(tm.Deadline())
				if !timerDue {
					early++
				}
				postDue, postedBefore := postReturned.Load(), posted
				once(t, s.l)
				ranPost := posted && !postedBefore
				if postDue && !posted {
					t.Fatalf("a Once that started after Post returned did not run the posted function (%d read events meanwhile)", s.reads-reads)
				}
				if timerDue && timerAt == 0 && !ranPost {
					t.Fatalf("a Once that started after the timer's deadline ran neither the timer nor the posted function (%d read events meanwhile)", s.reads-reads)
				}
			}
			if timerAt < 20*time.Millisecond {
				t.Fatalf("the 20 ms timer ran after %v", timerAt)
			}
			n := s.reads - reads
			if early >= 30 {
				if n < 10 {
					t.Fatalf("only %d read events while waiting for the timer and the post (%d Once calls before the timer was due)", n, early)
				}
				break
			}
			rounds = append(rounds, fmt.Sprintf("%d read events, %d Once calls before the timer was due", n, early))
			if round == 5 {
				t.Fatalf("in 5 rounds the loop never made 30 Once calls before the 20 ms timer was due: %s", strings.Join(rounds, "; "))
			}
		}
		s.check(t)
	})
}
