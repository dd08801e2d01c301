//go:build linux

package ringev_test

// Tests of Loop.ReadNonblocking and Loop.WriteNonblocking (io.go; once.go: rideIO, reapRide,
// adoptNews, dropNews). On the "uring" backend a handler's read or write goes to the kernel as an
// SQE, with, when the readiness cache is used up, an IORING_OP_EPOLL_WAIT on the loop's epoll set
// behind it in the same io_uring_enter(2); what that look finds ("news") serves the next Once as
// a wait's would. Everywhere else (other backends, the uring fallback for kernels without
// IORING_OP_EPOLL_WAIT, another goroutine, after Close, before the ring's first EPOLL_WAIT
// completed) the methods are read(2) and write(2).
//
// Each behaviour runs on every backend (and the uring fallback), in every dispatch mode where
// the mode matters. A non-blocking read or write never waits, so a handler's I/O that does is a
// failure: the guards below (noBlock, watch) make such a call end, by putting a byte into
// the pipe or making room in it, and fail the test instead of letting it hang.

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"

	"github.com/ringev/ringev"
	"github.com/ringev/ringev/internal/testutil"
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

// TestLoopReadNonblockingReturnsWhatReadReturns: called from a handler, Loop.ReadNonblocking
// returns the bytes (content checked), unix.EAGAIN itself on an empty non-blocking pipe and
// socket, 0 at end of file, and an error wrapping unix.EBADF for a closed fd number, in the
// handler's first run and in a later one (on uring, one that runs on what the first one's look
// found).
func TestLoopReadNonblockingReturnsWhatReadReturns(t *testing.T) {
	eachBackend(t, withFallback(), func(t *testing.T, backend string) {
		tr, tw := testutil.Pipe(t)       // the handler's own fd
		dr, dw := testutil.Pipe(t)       // data
		er, ew := testutil.Pipe(t)       // empty
		sa, sb := testutil.Socketpair(t) // empty socket
		fr, fw := ownedPipe(t)           // end of file
		fw.Close()
		bad := closedFdNumber(t)
		l := newLoop(t, backend)
		testutil.Write(t, tw, []byte("12"))
		buf := new([16]byte)
		calls := 0
		addFd(t, l, tr, ringev.Read, func(ev *ringev.FdEvent, f ringev.Flags) {
			calls++
			testutil.Write(t, dw, []byte("hello"))
			if n, err := l.ReadNonblocking(dr, buf[:3]); n != 3 || err != nil || string(buf[:n]) != "hel" {
				t.Errorf("run %d: data: ReadNonblocking = %d %q, %v; want 3 \"hel\", nil", calls, n, buf[:n], err)
			}
			if n, err := l.ReadNonblocking(dr, buf[:]); n != 2 || err != nil || string(buf[:n]) != "lo" {
				t.Errorf("run %d: data: ReadNonblocking = %d %q, %v; want 2 \"lo\", nil", calls, n, buf[:n], err)
			}
			for _, c := range []struct {
				name     string
				fd, peer int
			}{{"empty pipe", er, ew}, {"empty socket", sa, sb}} {
				var n int
				var err error
				rescued := noBlock(unblockRead(c.peer), func() { n, err = l.ReadNonblocking(c.fd, buf[:]) })
				switch {
				case n == 0 && err == unix.EAGAIN && errors.Is(err, unix.EAGAIN):
				case rescued:
					t.Errorf("run %d: %s: ReadNonblocking blocked until the test wrote to the fd (then returned %d, %v); want unix.EAGAIN at once", calls, c.name, n, err)
				default:
					t.Errorf("run %d: %s: ReadNonblocking = %d, %v (%T); want 0, unix.EAGAIN itself", calls, c.name, n, err, err)
				}
				if rescued {
					testutil.Drain(t, c.fd)
				}
			}
			if n, err := l.ReadNonblocking(fr.fd, buf[:]); n != 0 || err != nil {
				t.Errorf("run %d: end of file: ReadNonblocking = %d, %v; want 0, nil", calls, n, err)
			}
			if n, err := l.ReadNonblocking(bad, buf[:]); n != 0 || !errors.Is(err, unix.EBADF) {
				t.Errorf("run %d: closed fd %d: ReadNonblocking = %d, %v; want 0 and an error wrapping EBADF", calls, bad, n, err)
			}
			if n, err := l.ReadNonblocking(tr, buf[:1]); n != 1 || err != nil || buf[0] != "12"[calls-1] {
				t.Errorf("run %d: own fd: ReadNonblocking = %d %q, %v; want 1 %q, nil", calls, n, buf[:n], err, "12"[calls-1])
			}
		})
		until(t, l, func() bool { return calls == 2 })
		quiet(t, l)
	})
}

// TestLoopWriteNonblockingReturnsWhatWriteReturns: called from a handler,
// Loop.WriteNonblocking returns the bytes written (which arrive), unix.EAGAIN itself when the pipe
// is full, and unix.EPIPE itself when its reader is closed (the process survives: Go ignores
// SIGPIPE for fds other than stdout and stderr).
func TestLoopWriteNonblockingReturnsWhatWriteReturns(t *testing.T) {
	eachBackend(t, withFallback(), func(t *testing.T, backend string) {
		tr, tw := testutil.Pipe(t)
		dr, dw := testutil.Pipe(t)
		fr, fw := testutil.Pipe(t)
		held := fill(t, fw)
		xr, xw := ownedPipe(t)
		xr.Close()
		l := newLoop(t, backend)
		testutil.Write(t, tw, []byte("12"))
		buf := new([8]byte)
		calls := 0
		addFd(t, l, tr, ringev.Read, func(ev *ringev.FdEvent, f ringev.Flags) {
			calls++
			copy(buf[:], "abc")
			if n, err := l.WriteNonblocking(dw, buf[:3]); n != 3 || err != nil {
				t.Errorf("run %d: WriteNonblocking = %d, %v; want 3, nil", calls, n, err)
			}
			var got [8]byte
			if n, err := unix.Read(dr, got[:]); n != 3 || err != nil || string(got[:n]) != "abc" {
				t.Errorf("run %d: read back %d %q, %v; want \"abc\"", calls, n, got[:max(n, 0)], err)
			}
			var n int
			var err error
			rescued := noBlock(unblockWrite(fr), func() { n, err = l.WriteNonblocking(fw, buf[:1]) })
			switch {
			case n == 0 && err == unix.EAGAIN && errors.Is(err, unix.EAGAIN):
			case rescued:
				t.Errorf("run %d: full pipe: WriteNonblocking blocked until the test read from the pipe (then returned %d, %v); want unix.EAGAIN at once", calls, n, err)
			default:
				t.Errorf("run %d: full pipe: WriteNonblocking = %d, %v; want 0, unix.EAGAIN itself", calls, n, err)
			}
			if rescued { // the test read from the pipe: fill it again
				testutil.Drain(t, fr)
				held = fill(t, fw)
			}
			if n, err := l.WriteNonblocking(xw.fd, buf[:1]); n != 0 || err != unix.EPIPE || !errors.Is(err, unix.EPIPE) {
				t.Errorf("run %d: pipe without reader: WriteNonblocking = %d, %v; want 0, unix.EPIPE itself", calls, n, err)
			}
			if n, err := l.ReadNonblocking(tr, buf[:1]); n != 1 || err != nil {
				t.Errorf("run %d: own fd: ReadNonblocking = %d, %v", calls, n, err)
			}
		})
		until(t, l, func() bool { return calls == 2 })
		quiet(t, l)
		if t.Failed() {
			return
		}
		if got := testutil.Drain(t, fr); got != held {
			t.Fatalf("the full pipe holds %d bytes, want the %d written before (a write that should have failed went through)", got, held)
		}
	})
}

// TestLoopReadNonblockingUntilEAGAINReturns: the usual drain loop of a handler (read through the
// loop until unix.EAGAIN) ends, and the loop goes on (a timer runs).
func TestLoopReadNonblockingUntilEAGAINReturns(t *testing.T) {
	eachBackend(t, withFallback(), func(t *testing.T, backend string) {
		r, w := testutil.Pipe(t)
		l := newLoop(t, backend)
		buf := new([4]byte)
		got := ""
		calls := 0
		addFd(t, l, r, ringev.Read, func(ev *ringev.FdEvent, f ringev.Flags) {
			calls++
			for range 10 {
				var n int
				var err error
				rescued := noBlock(unblockRead(w), func() { n, err = l.ReadNonblocking(r, buf[:]) })
				if rescued {
					testutil.Drain(t, r) // what the test wrote
				}
				if err == unix.EAGAIN {
					return
				}
				if rescued {
					t.Errorf("run %d: ReadNonblocking on the drained pipe blocked until the test wrote to it (then returned %d, %v); want unix.EAGAIN at once", calls, n, err)
					return
				}
				if err != nil || n == 0 {
					t.Errorf("run %d: ReadNonblocking = %d, %v", calls, n, err)
					return
				}
				got += string(buf[:n])
			}
			t.Errorf("run %d: no EAGAIN after 10 reads", calls)
		})
		testutil.Write(t, w, []byte("0123456789"))
		until(t, l, func() bool { return calls > 0 })
		if got != "0123456789" {
			t.Fatalf("read %q, want \"0123456789\"", got)
		}
		quiet(t, l)
	})
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

// TestLoopIOSteadyStateDoesNotAllocate: once warmed up, a read event of fd_speed2 with the loop
// methods (buffers in a heap struct) allocates nothing, in every mode on every backend.
func TestLoopIOSteadyStateDoesNotAllocate(t *testing.T) {
	eachMode(t, withFallback(), allModes, func(t *testing.T, backend string, m mode) {
		s := newSpeed(t, backend, true, 1, m.opts()...)
		watch(t, s.l, 2*deadline, unblockRead(s.w))
		s.run(t, 1000)
		if a := testing.AllocsPerRun(1000, func() { s.run(t, 1) }); a != 0 {
			t.Fatalf("%.2f allocations per read event, want 0", a)
		}
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
			testutil.Once(t, l, deadline)
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
			testutil.Once(t, l, deadline)
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

// TestLoopIOClosedEventNeverRuns: a handler makes another fd readable, reads its own fd through
// the loop (on uring the look behind that read finds the other fd ready), and then closes the
// other fd's event (plainly, with auto-close, or while a second event on that fd stays): the
// closed event's handler never runs; the second event runs.
func TestLoopIOClosedEventNeverRuns(t *testing.T) {
	for _, variant := range []string{"Plain", "AutoClose", "OtherEventOnFdStays"} {
		t.Run(variant, func(t *testing.T) {
			eachMode(t, withFallback(), allModes, func(t *testing.T, backend string, m mode) {
				a, aw := testutil.Pipe(t)
				b, bw := ownedPipe(t)
				l := newLoop(t, backend, m.opts()...)
				watch(t, l, deadline, unblockRead(aw))
				testutil.Write(t, aw, []byte("12"))
				buf := new([1]byte)
				var eb *ringev.FdEvent
				ranA, ranB2 := 0, 0
				addFd(t, l, a, ringev.Read, func(ev *ringev.FdEvent, f ringev.Flags) {
					readAFeedB(t, l, a, bw.fd, buf, &ranA)
					if ranA == 1 {
						if err := eb.Close(); err != nil {
							t.Errorf("FdEvent.Close: %v", err)
						}
					}
				})
				eb = addFd(t, l, b.fd, ringev.Read, never(t, "closed event"))
				if variant == "AutoClose" {
					eb.SetAutoClose(true)
					b.HandOver()
				}
				if variant == "OtherEventOnFdStays" {
					addFd(t, l, b.fd, ringev.Read, func(ev *ringev.FdEvent, f ringev.Flags) {
						ranB2++
						if n, err := l.ReadNonblocking(b.fd, buf[:]); n != 1 || err != nil {
							t.Errorf("B2, call %d: ReadNonblocking = %d, %v", ranB2, n, err)
						}
					})
				}
				// A first, alone: B is empty until A's first call.
				testutil.Once(t, l, deadline)
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
					testutil.Once(t, l, deadline)
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
		testutil.Once(t, l, deadline)
		testutil.Once(t, l, deadline)
		if len(log) < 2 || log[1] != "N" {
			t.Fatalf("handler calls in the first two Onces: %v; want the new event N right after A", log)
		}
		for i := 0; len(log) < 4; i++ {
			if i == 4 {
				t.Fatalf("handler calls: %v; want A to read its other two bytes", log)
			}
			testutil.Once(t, l, deadline)
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
		b, bw := ownedPipe(t)
		l := newLoop(t, backend, m.opts()...)
		watch(t, l, deadline, unblockRead(aw))
		testutil.Write(t, aw, []byte("12"))
		buf := new([1]byte)
		num := b.fd
		eb := addFd(t, l, num, ringev.Read, never(t, "closed event on the old file"))
		eb.SetAutoClose(true)
		b.HandOver()
		var newW *ownedFd
		calls, newCalls := 0, 0
		addFd(t, l, a, ringev.Read, func(ev *ringev.FdEvent, f ringev.Flags) {
			readAFeedB(t, l, a, bw.fd, buf, &calls)
			if calls != 1 {
				return
			}
			if err := eb.Close(); err != nil {
				t.Errorf("FdEvent.Close: %v", err)
			}
			nr, nw, _ := pipeAt(t, num)
			newW = nw
			ev2 := addFd(t, l, num, ringev.Read, func(ev *ringev.FdEvent, f ringev.Flags) {
				newCalls++
				if n, err := ringev.ReadNonblocking(num, buf[:]); n != 1 || err != nil {
					t.Errorf("new event, call %d (flags %v): ReadNonblocking = %d, %v: it ran for readiness its file never had", newCalls, f, n, err)
				}
			})
			ev2.SetAutoClose(true)
			nr.HandOver() // closed by ev2's auto-close, at the latest by Loop.Close
		})
		for i := 0; calls < 2; i++ {
			if i == 6 {
				t.Fatalf("A ran %d times in 6 Onces, want 2", calls)
			}
			testutil.Once(t, l, deadline)
		}
		quiet(t, l)
		if newCalls != 0 || newW == nil {
			t.Fatalf("the new event ran %d times before its pipe had data", newCalls)
		}
		testutil.Write(t, newW.fd, []byte{'n'})
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
		testutil.Once(t, l, deadline)
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
		once := 0
		var log []string
		spurious := 0
		addFd(t, l, x, ringev.Read, func(*ringev.FdEvent, ringev.Flags) {
			log = append(log, fmt.Sprintf("%d:X", once))
			if n, err := l.ReadNonblocking(x, buf[:]); n != 1 || err != nil {
				t.Errorf("X: ReadNonblocking = %d, %v", n, err)
			}
		})
		addFd(t, l, a, ringev.Read, func(*ringev.FdEvent, ringev.Flags) {
			log = append(log, fmt.Sprintf("%d:A", once))
			if n, err := l.ReadNonblocking(a, buf[:]); n != 1 || err != nil {
				t.Errorf("A: ReadNonblocking = %d, %v", n, err)
			}
		})
		addFd(t, l, b, ringev.Read, func(*ringev.FdEvent, ringev.Flags) {
			log = append(log, fmt.Sprintf("%d:B", once))
			if n, err := ringev.ReadNonblocking(b, buf[:]); n != 1 || err != nil {
				spurious++
				t.Errorf("B (call %s): ReadNonblocking = %d, %v: called for a pipe it had drained", log[len(log)-1], n, err)
			}
		})
		turn := func() {
			t.Helper()
			testutil.Once(t, l, deadline)
			once++
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

// TestLoopIOFromAnotherGoroutineIsPlainSyscall: a goroutine other than the owner writes 3000
// counting bytes through loop.WriteNonblocking and reads their echo through
// loop.ReadNonblocking while the owner runs Once, whose handler reads them through the loop and
// echoes them: every byte arrives in order both ways and no call fails (through the owner's
// SINGLE_ISSUER ring from another thread, the enter would fail with EEXIST; run with -race).
func TestLoopIOFromAnotherGoroutineIsPlainSyscall(t *testing.T) {
	const total = 3000
	eachBackend(t, withFallback(), func(t *testing.T, backend string) {
		in, inW := testutil.Pipe(t)
		out, outW := testutil.Pipe(t)
		l := newLoop(t, backend)
		watch(t, l, 2*deadline, nil)
		buf := new([64]byte)
		got := 0
		addFd(t, l, in, ringev.Read, func(*ringev.FdEvent, ringev.Flags) {
			n, err := l.ReadNonblocking(in, buf[:])
			if n <= 0 || err != nil {
				t.Errorf("owner: ReadNonblocking = %d, %v", n, err)
				return
			}
			for k, c := range buf[:n] {
				if c != byte(got+k) {
					t.Errorf("owner: byte %d is %d, want %d", got+k, c, byte(got+k))
				}
			}
			got += n
			if m, err := l.WriteNonblocking(outW, buf[:n]); m != n || err != nil {
				t.Errorf("owner: WriteNonblocking = %d, %v; want %d", m, err, n)
			}
		})
		peer := make(chan error, 1)
		var peerDone atomic.Bool
		go func() {
			err := echoPeer(l, inW, out, total)
			peerDone.Store(true)
			peer <- err
			l.Post(func() {}) // the owner may be waiting
		}()
		testutil.OnceUntil(t, l, func() bool { return got >= total || peerDone.Load() }, 2*deadline)
		select {
		case err := <-peer:
			if err != nil {
				t.Fatal(err)
			}
		case <-time.After(2 * deadline):
			t.Fatal("the other goroutine did not finish")
		}
		if got != total {
			t.Fatalf("the owner read %d bytes, want %d", got, total)
		}
	})
}

// echoPeer writes total counting bytes to w in chunks of up to 7 through l's methods and reads
// their echo from r the same way, from a goroutine that does not own l.
func echoPeer(l *ringev.Loop, w, r, total int) error {
	wb := make([]byte, 7)
	rb := make([]byte, 64)
	sent, echoed := 0, 0
	end := time.Now().Add(2 * deadline)
	for echoed < total {
		if time.Now().After(end) {
			return fmt.Errorf("peer: %d of %d bytes sent, %d echoed before the deadline", sent, total, echoed)
		}
		if sent < total {
			k := min(len(wb), total-sent)
			for i := range k {
				wb[i] = byte(sent + i)
			}
			n, err := l.WriteNonblocking(w, wb[:k])
			switch {
			case err == unix.EAGAIN:
			case err != nil || n <= 0:
				return fmt.Errorf("peer: Loop.WriteNonblocking from another goroutine = %d, %v", n, err)
			default:
				sent += n
			}
		}
		n, err := l.ReadNonblocking(r, rb)
		switch {
		case err == unix.EAGAIN:
			runtime.Gosched()
		case err != nil || n <= 0:
			return fmt.Errorf("peer: Loop.ReadNonblocking from another goroutine = %d, %v", n, err)
		default:
			for k, c := range rb[:n] {
				if c != byte(echoed+k) {
					return fmt.Errorf("peer: echoed byte %d is %d, want %d", echoed+k, c, byte(echoed+k))
				}
			}
			echoed += n
		}
	}
	return nil
}

// TestLoopIOFromAnotherGoroutineWhileOwnerCloses: the methods are documented to work from any
// goroutine (as the package functions there); a goroutine that keeps calling them while the
// owner closes the loop gets plain results throughout, without a data race (run with -race: the
// methods must not read Loop.ride, which Close clears, before checking the caller is the owner).
func TestLoopIOFromAnotherGoroutineWhileOwnerCloses(t *testing.T) {
	eachBackend(t, withFallback(), func(t *testing.T, backend string) {
		r, w := testutil.Pipe(t)
		l := newLoop(t, backend) // the test closes it; cleanup's second Close returns nil
		testutil.Write(t, w, []byte{'x'})
		addFd(t, l, r, ringev.Read, func(*ringev.FdEvent, ringev.Flags) {
			var b [1]byte
			ringev.ReadNonblocking(r, b[:])
		})
		testutil.Once(t, l, deadline) // the ring's first EPOLL_WAIT completes
		var calls atomic.Int64
		stop := make(chan struct{})
		peer := make(chan error, 1)
		go func() {
			b := make([]byte, 1)
			for {
				select {
				case <-stop:
					peer <- nil
					return
				default:
				}
				if n, err := l.WriteNonblocking(w, b); n != 1 || err != nil {
					peer <- fmt.Errorf("Loop.WriteNonblocking from another goroutine = %d, %v", n, err)
					return
				}
				if n, err := l.ReadNonblocking(r, b); n != 1 || err != nil {
					peer <- fmt.Errorf("Loop.ReadNonblocking from another goroutine = %d, %v", n, err)
					return
				}
				calls.Add(1)
			}
		}()
		await(t, "100 rounds of calls from the other goroutine", func() bool { return calls.Load() >= 100 })
		if err := l.Close(); err != nil {
			t.Errorf("Close: %v", err)
		}
		at := calls.Load()
		await(t, "100 more rounds of calls after Close", func() bool { return calls.Load() >= at+100 })
		close(stop)
		if err := <-peer; err != nil {
			t.Fatal(err)
		}
	})
}

// TestLoopIOAfterCloseIsPlainSyscall: after Close (of a loop whose ring had served handler
// I/O), the methods still read and write: bytes, unix.EAGAIN, 0 at end of file.
func TestLoopIOAfterCloseIsPlainSyscall(t *testing.T) {
	eachBackend(t, withFallback(), func(t *testing.T, backend string) {
		r, w := ownedPipe(t)
		tr, tw := testutil.Pipe(t)
		l := newLoop(t, backend) // the test closes it; cleanup's second Close returns nil
		testutil.Write(t, tw, []byte("12"))
		buf := new([8]byte)
		addFd(t, l, tr, ringev.Read, func(*ringev.FdEvent, ringev.Flags) { l.ReadNonblocking(tr, buf[:1]) })
		testutil.Once(t, l, deadline)
		testutil.Once(t, l, deadline)
		if err := l.Close(); err != nil {
			t.Fatalf("Close: %v", err)
		}
		copy(buf[:], "xyz")
		if n, err := l.WriteNonblocking(w.fd, buf[:3]); n != 3 || err != nil {
			t.Fatalf("WriteNonblocking after Close = %d, %v; want 3, nil", n, err)
		}
		clear(buf[:])
		if n, err := l.ReadNonblocking(r.fd, buf[:]); n != 3 || err != nil || string(buf[:n]) != "xyz" {
			t.Fatalf("ReadNonblocking after Close = %d %q, %v; want 3 \"xyz\", nil", n, buf[:max(n, 0)], err)
		}
		if n, err := l.ReadNonblocking(r.fd, buf[:]); n != 0 || err != unix.EAGAIN {
			t.Fatalf("ReadNonblocking of an empty pipe after Close = %d, %v; want 0, EAGAIN", n, err)
		}
		w.Close()
		if n, err := l.ReadNonblocking(r.fd, buf[:]); n != 0 || err != nil {
			t.Fatalf("ReadNonblocking at end of file after Close = %d, %v; want 0, nil", n, err)
		}
	})
}

// TestLoopReadNonblockingRegularFile: through the loop, a handler reads a regular file (300 KB,
// opened O_RDONLY) to its end: every byte, then 0. Cached: the file is in the page cache. Cold:
// its pages were dropped first (fsync, then POSIX_FADV_DONTNEED), so the ring cannot complete
// the read at once and the method must wait for it.
func TestLoopReadNonblockingRegularFile(t *testing.T) {
	want := make([]byte, 300000)
	for i := range want {
		want[i] = byte(i*7 + i>>8)
	}
	f, err := os.CreateTemp(t.TempDir(), "loopio")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.Write(want); err != nil {
		t.Fatal(err)
	}
	if err := f.Sync(); err != nil {
		t.Fatal(err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
	for _, cold := range []bool{false, true} {
		name := "Cached"
		if cold {
			name = "Cold"
		}
		t.Run(name, func(t *testing.T) {
			eachBackend(t, withFallback(), func(t *testing.T, backend string) {
				fd, err := unix.Open(f.Name(), unix.O_RDONLY|unix.O_CLOEXEC, 0)
				if err != nil {
					t.Fatal(err)
				}
				t.Cleanup(func() { unix.Close(fd) })
				tr, tw := testutil.Pipe(t)
				l := newLoop(t, backend)
				testutil.Write(t, tw, []byte("12"))
				buf := new([65536]byte)
				var got []byte
				calls := 0
				addFd(t, l, tr, ringev.Read, func(*ringev.FdEvent, ringev.Flags) {
					calls++
					ringev.ReadNonblocking(tr, buf[:1])
					if calls == 1 {
						return // the second run reads: after the ring's first EPOLL_WAIT
					}
					if cold {
						if err := unix.Fadvise(fd, 0, 0, unix.FADV_DONTNEED); err != nil {
							t.Errorf("fadvise(DONTNEED): %v", err)
						}
					}
					for range 20 {
						n, err := l.ReadNonblocking(fd, buf[:])
						if err != nil {
							t.Errorf("ReadNonblocking of the file after %d bytes: %v", len(got), err)
							return
						}
						if n == 0 {
							return
						}
						got = append(got, buf[:n]...)
					}
					t.Errorf("no end of file after 20 reads (%d bytes)", len(got))
				})
				until(t, l, func() bool { return calls == 2 })
				if !bytes.Equal(got, want) {
					t.Fatalf("read %d bytes, want the file's %d (a prefix of it: %v)", len(got), len(want), bytes.Equal(got, want[:min(len(got), len(want))]))
				}
			})
		})
	}
}

// TestLoopIOBusyLoopRunsTimersAndPosts: while fd_speed1's handlers keep the loop busy through
// the loop methods, a 20 ms timer runs, never early, at the first Once that starts after its
// deadline (or the one after, if that one runs the posted function, which comes first), and a
// function posted from another goroutine runs at the first Once that starts after Post
// returned, in every mode.
func TestLoopIOBusyLoopRunsTimersAndPosts(t *testing.T) {
	eachMode(t, withFallback(), allModes, func(t *testing.T, backend string, m mode) {
		s := newSpeed(t, backend, true, 0, m.opts()...)
		watch(t, s.l, 2*deadline, unblockRead(s.w))
		s.run(t, 100)
		start := time.Now()
		var timerAt time.Duration
		tm := s.l.AddTimer(20*time.Millisecond, func(*ringev.Timer) { timerAt = time.Since(start) })
		posted := false
		var postReturned atomic.Bool
		go func() {
			time.Sleep(5 * time.Millisecond)
			if err := s.l.Post(func() { posted = true }); err != nil {
				t.Errorf("Post: %v", err)
			}
			postReturned.Store(true)
		}()
		reads := s.reads
		for timerAt == 0 || !posted {
			timerDue := !time.Now().Before(tm.Deadline())
			postDue, postedBefore := postReturned.Load(), posted
			testutil.Once(t, s.l, deadline)
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
		if s.reads-reads < 10 {
			t.Fatalf("only %d read events while waiting for the timer and the post", s.reads-reads)
		}
		s.check(t)
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
				rs, ws := pipes(t, n, true) // one byte each
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
				testutil.OnceUntil(t, l, func() bool { return total >= n*rounds }, 20*time.Second)
				if lo, hi := slices.Min(calls), slices.Max(calls); lo < rounds/2 {
					t.Fatalf("unfair: a handler ran %d times, another %d, in %d runs over %d always-ready fds", lo, hi, total, n)
				}
			})
		})
	}
}

// TestLoopWriteNonblockingEmptyToEventfdIsEINVAL: a write of 0 bytes to an eventfd through the
// loop fails with EINVAL, as write(2) does (eventfd wants 8 bytes; the ring would not even call
// the file's write for 0), on every backend, from a handler.
func TestLoopWriteNonblockingEmptyToEventfdIsEINVAL(t *testing.T) {
	eachBackend(t, withFallback(), func(t *testing.T, backend string) {
		efd, err := unix.Eventfd(0, unix.EFD_NONBLOCK|unix.EFD_CLOEXEC)
		if err != nil {
			t.Fatal(err)
		}
		defer unix.Close(efd)
		r, w := testutil.Pipe(t)
		l := newLoop(t, backend)
		var errs []error
		addFd(t, l, efd, ringev.Write, func(*ringev.FdEvent, ringev.Flags) {}) // watched: may ride
		addFd(t, l, r, ringev.Read, func(*ringev.FdEvent, ringev.Flags) {
			testutil.Drain(t, r)
			for _, p := range [][]byte{nil, {}} {
				_, err := l.WriteNonblocking(efd, p)
				errs = append(errs, err)
			}
		})
		testutil.Write(t, w, []byte{'x'})
		until(t, l, func() bool { return len(errs) > 0 })
		for _, err := range errs {
			if err != unix.EINVAL {
				t.Fatalf("WriteNonblocking(eventfd, empty) = %v, want unix.EINVAL (as write(2))", err)
			}
		}
	})
}

// TestLoopWriteNonblockingODirectMovesThePosition: 16 consecutive 4 KiB writes through the loop
// to an O_DIRECT file (which the ring would complete later, without moving the file position)
// land one after the other and leave the position at 64 KiB, as write(2)'s do, on every backend.
func TestLoopWriteNonblockingODirectMovesThePosition(t *testing.T) {
	eachBackend(t, withFallback(), func(t *testing.T, backend string) {
		name := filepath.Join(t.TempDir(), "direct")
		if err := os.WriteFile(name, make([]byte, 65536), 0o644); err != nil {
			t.Fatal(err)
		}
		fd, err := unix.Open(name, unix.O_RDWR|unix.O_DIRECT|unix.O_CLOEXEC, 0)
		if errors.Is(err, unix.EINVAL) {
			t.Skipf("O_DIRECT is not supported on %s's file system: %v", name, err)
		}
		if err != nil {
			t.Fatal(err)
		}
		defer unix.Close(fd)
		raw := make([]byte, 2*4096)
		off := (4096 - int(uintptr(unsafe.Pointer(&raw[0]))%4096)) % 4096
		buf := raw[off : off+4096] // O_DIRECT wants an aligned buffer
		r, w := testutil.Pipe(t)
		_, always := testutil.Pipe(t)
		l := newLoop(t, backend)
		done := false
		// An always-writable fd: every look finds something, so on uring every write would
		// carry a look if the file's I/O went through the ring.
		addFd(t, l, always, ringev.Write, func(*ringev.FdEvent, ringev.Flags) {})
		addFd(t, l, r, ringev.Read, func(*ringev.FdEvent, ringev.Flags) {
			testutil.Drain(t, r)
			for k := range 16 {
				for i := range buf {
					buf[i] = byte(k + 1)
				}
				if n, err := l.WriteNonblocking(fd, buf); n != 4096 || err != nil {
					t.Errorf("write %d: %d, %v", k, n, err)
				}
				if pos, _ := unix.Seek(fd, 0, io.SeekCurrent); pos != int64(4096*(k+1)) {
					t.Errorf("after write %d the position is %d, want %d", k, pos, 4096*(k+1))
				}
			}
			done = true
		})
		testutil.Write(t, w, []byte{'x'})
		until(t, l, func() bool { return done })
		got, err := os.ReadFile(name)
		if err != nil {
			t.Fatal(err)
		}
		for k := range 16 {
			if got[k*4096] != byte(k+1) {
				t.Fatalf("block %d holds %d, want %d: writes overwrote each other", k, got[k*4096], k+1)
			}
		}
	})
}
