//go:build linux

package ringev_test

// Calls from a goroutine that does not own the loop: each exported method either works
// (queued to the loop, as Post is) or returns an error wrapping ErrNotOwner; none is a silent
// no-op.

import (
	"bytes"
	"errors"
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/ringev/ringev"
	"github.com/ringev/ringev/internal/testutil"
	"github.com/ringev/ringev/uring"
	"golang.org/x/sys/unix"
)

// onLoopInHandler reports whether the caller runs inside a handler of l on its owner
// goroutine: Once then returns ErrNested (from any other goroutine, ErrNotOwner).
func onLoopInHandler(l *ringev.Loop) bool { return errors.Is(l.Once(), ringev.ErrNested) }

// TestNotOwnerAddTimerRunsOnTheLoop: AddTimer from another goroutine returns a handle at once,
// whose Deadline counts from the call, and its handler runs on the loop's goroutine.
func TestNotOwnerAddTimerRunsOnTheLoop(t *testing.T) {
	eachBackend(t, ringev.Backends(), func(t *testing.T, backend string) {
		l := newLoop(t, backend)
		keepAlive(t, l)
		const d = 5 * time.Millisecond
		var ran, onLoop atomic.Bool
		var tm *ringev.Timer
		var before, after time.Time
		onOtherGoroutine(t, func() {
			before = time.Now()
			tm = l.AddTimer(d, func(*ringev.Timer) { onLoop.Store(onLoopInHandler(l)); ran.Store(true) })
			after = time.Now()
		})
		if tm == nil {
			t.Fatal("AddTimer from another goroutine returned nil")
		}
		if dl := tm.Deadline(); dl.Before(before.Add(d)) || dl.After(after.Add(d)) {
			t.Errorf("Deadline %v, want %v from the call (%v to %v)", dl, d, before.Add(d), after.Add(d))
		}
		until(t, l, ran.Load)
		if !onLoop.Load() {
			t.Error("the timer's handler did not run inside a handler on the loop's goroutine")
		}
	})
}

// TestNotOwnerAddTimerAtRunsOnTheLoop: AddTimerAt from another goroutine returns a handle at
// once, with the deadline given, and its handler runs on the loop's goroutine.
func TestNotOwnerAddTimerAtRunsOnTheLoop(t *testing.T) {
	l := newLoop(t, "epoll")
	keepAlive(t, l)
	at := time.Now().Add(5 * time.Millisecond)
	var ran, onLoop atomic.Bool
	var tm *ringev.Timer
	onOtherGoroutine(t, func() {
		tm = l.AddTimerAt(at, func(*ringev.Timer) { onLoop.Store(onLoopInHandler(l)); ran.Store(true) })
	})
	if tm == nil {
		t.Fatal("AddTimerAt from another goroutine returned nil")
	}
	if !tm.Deadline().Equal(at) {
		t.Errorf("Deadline %v, want %v", tm.Deadline(), at)
	}
	until(t, l, ran.Load)
	if !onLoop.Load() {
		t.Error("the timer's handler did not run inside a handler on the loop's goroutine")
	}
}

// TestNotOwnerAddImmediateRunsOnTheLoop: AddImmediate from another goroutine returns a handle
// at once, and its handler runs on the loop's goroutine, waking a loop blocked in its wait.
func TestNotOwnerAddImmediateRunsOnTheLoop(t *testing.T) {
	eachBackend(t, ringev.Backends(), func(t *testing.T, backend string) {
		l := newLoop(t, backend)
		keepAlive(t, l)
		var ran, onLoop atomic.Bool
		var im *ringev.Immediate
		onOtherGoroutine(t, func() {
			im = l.AddImmediate(func() { onLoop.Store(onLoopInHandler(l)); ran.Store(true) })
		})
		if im == nil {
			t.Fatal("AddImmediate from another goroutine returned nil")
		}
		until(t, l, ran.Load)
		if !onLoop.Load() {
			t.Error("the immediate's handler did not run inside a handler on the loop's goroutine")
		}
	})
}

// TestNotOwnerAddsAfterCloseReturnNil: after Close, AddTimer, AddTimerAt and AddImmediate from
// another goroutine return nil, as on the owner.
func TestNotOwnerAddsAfterCloseReturnNil(t *testing.T) {
	l := newLoop(t, "epoll")
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	onOtherGoroutine(t, func() {
		if l.AddTimer(0, func(*ringev.Timer) {}) != nil {
			t.Error("AddTimer after Close returned a timer")
		}
		if l.AddTimerAt(time.Now(), func(*ringev.Timer) {}) != nil {
			t.Error("AddTimerAt after Close returned a timer")
		}
		if l.AddImmediate(func() {}) != nil {
			t.Error("AddImmediate after Close returned an immediate")
		}
	})
}

// stopsBeforeTheRun makes a handler on the owner and one from another goroutine with add (each
// adds to ran when it runs, and add returns the call that stops it); from another goroutine each
// stop returns true, then false. Then the loop runs until later (made by the caller's
// then, from the owner, after the stops) has run: neither stopped handler ran.
func stopsBeforeTheRun(t *testing.T, l *ringev.Loop, what string, add func(ran *atomic.Int32) (stop func() bool), then func(later *atomic.Bool)) {
	t.Helper()
	var ran atomic.Int32
	own := add(&ran)
	onOtherGoroutine(t, func() {
		for _, stop := range []func() bool{own, add(&ran)} {
			if !stop() {
				t.Errorf("stopping, from another goroutine, a %s that has not run returned false", what)
			}
			if stop() {
				t.Errorf("stopping a %s a second time returned true", what)
			}
		}
	})
	var later atomic.Bool
	then(&later)
	until(t, l, later.Load)
	if n := ran.Load(); n != 0 {
		t.Fatalf("%d stopped %ss ran", n, what)
	}
}

// TestNotOwnerTimerStopPreventsTheRun: Stop from another goroutine, on a timer the owner added
// and on one another goroutine added, returns true, then false; neither handler runs, while a
// later timer does.
func TestNotOwnerTimerStopPreventsTheRun(t *testing.T) {
	l := newLoop(t, "epoll")
	keepAlive(t, l)
	stopsBeforeTheRun(t, l, "timer", func(ran *atomic.Int32) func() bool {
		return l.AddTimer(time.Millisecond, func(*ringev.Timer) { ran.Add(1) }).Stop
	}, func(later *atomic.Bool) {
		l.AddTimer(5*time.Millisecond, func(*ringev.Timer) { later.Store(true) })
	})
}

// TestNotOwnerImmediateCancelPreventsTheRun: Cancel from another goroutine, on an immediate
// the owner added and on one another goroutine added, returns true, then false; neither runs,
// while one added after them (once the foreign one is in the queue) does.
func TestNotOwnerImmediateCancelPreventsTheRun(t *testing.T) {
	l := newLoop(t, "epoll")
	keepAlive(t, l)
	stopsBeforeTheRun(t, l, "immediate", func(ran *atomic.Int32) func() bool {
		return l.AddImmediate(func() { ran.Add(1) }).Cancel
	}, func(later *atomic.Bool) {
		if err := l.Post(func() { l.AddImmediate(func() { later.Store(true) }) }); err != nil {
			t.Fatal(err)
		}
	})
}

// exactAgainstTheRun makes n handlers on l with add (each sets its ran flag when it runs, and
// add returns the call that stops it), stops them from another goroutine, last first, while
// the loop runs them, and checks that each either ran or was stopped (the stop returned true),
// never both and never neither.
func exactAgainstTheRun(t *testing.T, l *ringev.Loop, n int, what string, add func(ran *atomic.Bool) (stop func() bool)) {
	t.Helper()
	ran, stopped := make([]atomic.Bool, n), make([]atomic.Bool, n)
	stops := make([]func() bool, n)
	for i := range n {
		stops[i] = add(&ran[i])
	}
	var done atomic.Bool
	go func() {
		defer l.Post(func() {}) // wakes the loop to see done
		defer done.Store(true)
		for i := n - 1; i >= 0; i-- { // from the end: the loop runs them from the start
			stopped[i].Store(stops[i]())
		}
	}()
	until(t, l, func() bool {
		if !done.Load() {
			return false
		}
		for i := range n {
			if !ran[i].Load() && !stopped[i].Load() {
				return false
			}
		}
		return true
	})
	runs := 0
	for i := range n {
		if ran[i].Load() && stopped[i].Load() {
			t.Errorf("%s %d ran although its stop returned true", what, i)
		}
		if ran[i].Load() {
			runs++
		}
	}
	t.Logf("%d of %d %ss ran before their stop", runs, n, what)
}

// TestNotOwnerTimerStopIsExactAgainstTheRun: 200 timers due at once, stopped from another
// goroutine while the loop runs them: each either ran or was stopped (Stop returned true),
// never both and never neither.
func TestNotOwnerTimerStopIsExactAgainstTheRun(t *testing.T) {
	l := newLoop(t, "epoll")
	keepAlive(t, l)
	exactAgainstTheRun(t, l, 200, "timer", func(ran *atomic.Bool) func() bool {
		return l.AddTimer(0, func(*ringev.Timer) { ran.Store(true) }).Stop
	})
}

// TestNotOwnerImmediateCancelIsExactAgainstTheRun: 200 immediates, cancelled from another
// goroutine while the loop runs them: each either ran or was cancelled (Cancel returned true),
// never both and never neither.
func TestNotOwnerImmediateCancelIsExactAgainstTheRun(t *testing.T) {
	l := newLoop(t, "epoll")
	keepAlive(t, l)
	exactAgainstTheRun(t, l, 200, "immediate", func(ran *atomic.Bool) func() bool {
		return l.AddImmediate(func() { ran.Store(true) }).Cancel
	})
}

// TestNotOwnerImmediateScheduleRunsItAgain: after an immediate ran, Schedule from another
// goroutine returns true and the immediate runs once more; a second Schedule while it is
// queued returns false and adds no run.
func TestNotOwnerImmediateScheduleRunsItAgain(t *testing.T) {
	l := newLoop(t, "epoll")
	keepAlive(t, l)
	var runs atomic.Int32
	im := l.AddImmediate(func() { runs.Add(1) })
	until(t, l, func() bool { return runs.Load() == 1 })
	onOtherGoroutine(t, func() {
		if !im.Schedule() {
			t.Error("Schedule from another goroutine of an immediate that ran returned false")
		}
		if im.Schedule() {
			t.Error("a second Schedule while queued returned true")
		}
	})
	until(t, l, func() bool { return runs.Load() == 2 })
	var later atomic.Bool
	l.AddImmediate(func() { later.Store(true) }) // runs after anything queued before it
	until(t, l, later.Load)
	if n := runs.Load(); n != 2 {
		t.Fatalf("the immediate ran %d times, want 2", n)
	}
}

// TestNotOwnerFdEventSetAutoCloseClosesTheFd: SetAutoClose(true) from another goroutine takes
// effect before a function that goroutine posts next: the owner's FdEvent.Close then closes
// the fd.
func TestNotOwnerFdEventSetAutoCloseClosesTheFd(t *testing.T) {
	eachBackend(t, ringev.Backends(), func(t *testing.T, backend string) {
		a, _ := testutil.Socketpair(t)
		l := newLoop(t, backend)
		keepAlive(t, l)
		ev := addFd(t, l, a, ringev.Read, never(t, "fd event"))
		var set atomic.Bool
		onOtherGoroutine(t, func() {
			ev.SetAutoClose(true)
			if err := l.Post(func() { set.Store(true) }); err != nil {
				t.Error(err)
			}
		})
		until(t, l, set.Load)
		testutil.HandOver(t, a)
		if err := ev.Close(); err != nil {
			t.Fatal(err)
		}
		if !testutil.IsClosed(a) {
			t.Fatal("FdEvent.Close after SetAutoClose(true) from another goroutine left the fd open")
		}
	})
}

// TestNotOwnerSignalCloseStopsItsHandler: a Signal closed from another goroutine never runs
// again: a delivery after Close reaches a second handler of the same signal, not it.
func TestNotOwnerSignalCloseStopsItsHandler(t *testing.T) {
	guard := sigGuard(t, syscall.SIGUSR2)
	l := newLoop(t, "epoll")
	var closedRan, otherRan atomic.Int32
	closed, err := l.AddSignal(syscall.SIGUSR2, func(*ringev.Signal, int) { closedRan.Add(1) })
	if err != nil {
		t.Fatal(err)
	}
	other, err := l.AddSignal(syscall.SIGUSR2, func(*ringev.Signal, int) { otherRan.Add(1) })
	if err != nil {
		t.Fatal(err)
	}
	defer other.Close()
	onOtherGoroutine(t, closed.Close)
	raise(t, guard, syscall.SIGUSR2)
	until(t, l, func() bool { return otherRan.Load() > 0 })
	if n := closedRan.Load(); n != 0 {
		t.Fatalf("the handler closed from another goroutine ran %d times", n)
	}
}

// bufferGroupDry makes a RecvMultishot on a socketpair into a group of 2 buffers of 16 bytes,
// sends it 100 bytes and runs l until the group is dry (ENOBUFS). It returns the group, the
// held completions and a function that runs l until more bytes arrive.
func bufferGroupDry(t *testing.T, l *ringev.Loop, a, b int) (g *ringev.BufferGroup, held []ringev.Completion, more func()) {
	t.Helper()
	g, err := l.NewBufferGroup(2, 16)
	if err != nil {
		t.Fatal(err)
	}
	var recv []byte
	enobufs := false
	cb := func(c *ringev.Completion) {
		switch {
		case errors.Is(c.Err, unix.ENOBUFS):
			enobufs = true
		case c.Err != nil:
			t.Errorf("completion %+v", c)
		default:
			recv = append(recv, c.Buf...)
			held = append(held, *c) // kept: the group runs dry
		}
	}
	must(t)(l.RecvMultishot(a, g, 0, cb, 0))
	testutil.Write(t, b, bytes.Repeat([]byte("0123456789"), 10))
	until(t, l, func() bool { return enobufs })
	n := len(recv)
	return g, held, func() { until(t, l, func() bool { return len(recv) > n }) }
}

// TestNotOwnerBufferGroupReleaseRearmsTheRecv: BufferGroup.Release from another goroutine gives
// the buffers back: the RecvMultishot that ran dry gets the bytes that waited.
func TestNotOwnerBufferGroupReleaseRearmsTheRecv(t *testing.T) {
	eachBackend(t, ringev.Backends(), func(t *testing.T, backend string) {
		a, b := testutil.Socketpair(t)
		l := newLoop(t, backend)
		g, held, more := bufferGroupDry(t, l, a, b)
		onOtherGoroutine(t, func() {
			for _, c := range held {
				g.Release(c.BufferID())
			}
		})
		more()
	})
}

// TestNotOwnerCompletionReleaseBufferRearmsTheRecv: Completion.ReleaseBuffer from another
// goroutine gives the buffer back: the RecvMultishot that ran dry gets the bytes that waited.
func TestNotOwnerCompletionReleaseBufferRearmsTheRecv(t *testing.T) {
	eachBackend(t, ringev.Backends(), func(t *testing.T, backend string) {
		a, b := testutil.Socketpair(t)
		l := newLoop(t, backend)
		_, held, more := bufferGroupDry(t, l, a, b)
		onOtherGoroutine(t, func() {
			for i := range held {
				held[i].ReleaseBuffer()
			}
		})
		more()
	})
}

// TestNotOwnerCallsReturnErrNotOwner: every method that only the owner may call returns an
// error wrapping ErrNotOwner from another goroutine and changes nothing: the owner's fd event
// (armed in the backend before the calls) runs once, for READ, and keeps its flags, and its
// request and buffer group work afterwards; a Post from that goroutine runs.
func TestNotOwnerCallsReturnErrNotOwner(t *testing.T) {
	eachBackend(t, ringev.Backends(), func(t *testing.T, backend string) {
		a, peer := testutil.Socketpair(t)
		x, _ := testutil.Socketpair(t)
		r, w := testutil.Pipe(t)
		l := newLoop(t, backend)
		var evGot []ringev.Flags
		ev := addFd(t, l, a, ringev.Read, func(ev *ringev.FdEvent, f ringev.Flags) {
			testutil.Drain(t, ev.Fd())
			evGot = append(evGot, f)
		})
		untilWaited(t, l) // the backend is armed
		var rec recorder
		req := must(t)(l.Read(r, make([]byte, 8), -1, rec.cb, 0))
		g, err := l.NewBufferGroup(2, 16)
		if err != nil {
			t.Fatal(err)
		}
		cb := func(*ringev.Completion) { t.Error("a request made from another goroutine completed") }
		buf := make([]byte, 8)
		var nop uring.SQE
		nop.PrepNop()
		calls := []struct {
			name string
			call func() error
		}{
			{"Once", l.Once},
			{"Run", l.Run},
			{"Close", l.Close},
			{"AddFd", func() error { _, err := l.AddFd(x, ringev.Read, never(t, "foreign fd event")); return err }},
			{"FdEvent.SetFlags", func() error { return ev.SetFlags(ringev.Write) }},
			{"FdEvent.Close", ev.Close},
			{"AddSignal", func() error { _, err := l.AddSignal(syscall.SIGUSR1, func(*ringev.Signal, int) {}); return err }},
			{"AddSignalOnce", func() error {
				_, err := l.AddSignalOnce(syscall.SIGUSR1, func(*ringev.Signal, int) {})
				return err
			}},
			{"CheckOp", func() error { return l.CheckOp(ringev.OpRead) }},
			{"Read", func() error { _, err := l.Read(x, buf, -1, cb, 0); return err }},
			{"Write", func() error { _, err := l.Write(x, buf, -1, cb, 0); return err }},
			{"Recv", func() error { _, err := l.Recv(x, buf, 0, cb, 0); return err }},
			{"Send", func() error { _, err := l.Send(x, buf, 0, cb, 0); return err }},
			{"Accept", func() error { _, err := l.Accept(x, 0, cb, 0); return err }},
			{"AcceptMultishot", func() error { _, err := l.AcceptMultishot(x, 0, cb, 0); return err }},
			{"Connect", func() error {
				_, err := l.Connect(x, &unix.SockaddrInet4{Port: 1, Addr: [4]byte{127, 0, 0, 1}}, cb, 0)
				return err
			}},
			{"Fsync", func() error { _, err := l.Fsync(x, false, cb, 0); return err }},
			{"CloseFd", func() error { _, err := l.CloseFd(x, cb, 0); return err }},
			{"RecvMultishot", func() error { _, err := l.RecvMultishot(x, g, 0, cb, 0); return err }},
			{"SubmitSQE", func() error { _, err := l.SubmitSQE(&nop, nil, cb, 0); return err }},
			{"RegisterFile", func() error { return l.RegisterFile(x) }},
			{"UnregisterFile", func() error { return l.UnregisterFile(x) }},
			{"NewBufferGroup", func() error { _, err := l.NewBufferGroup(2, 16); return err }},
			{"BufferGroup.Close", g.Close},
			{"Request.Cancel", req.Cancel},
			{"Request.SetTimeout", func() error { return req.SetTimeout(time.Nanosecond) }},
			{"PostTo", func() error { return l.PostTo(l, func() {}) }},
		}
		var posted atomic.Bool
		onOtherGoroutine(t, func() {
			for _, c := range calls {
				if err := c.call(); !errors.Is(err, ringev.ErrNotOwner) {
					t.Errorf("%s from another goroutine: %v, want ErrNotOwner", c.name, err)
				}
			}
			if err := l.Post(func() { posted.Store(true) }); err != nil {
				t.Errorf("Post from another goroutine: %v", err)
			}
		})
		until(t, l, posted.Load)
		// Nothing changed: the fd event reads, the request completes, the group serves.
		testutil.Write(t, peer, []byte("x"))
		testutil.Write(t, w, []byte("y"))
		until(t, l, func() bool { return len(evGot) > 0 && rec.n() > 0 })
		settle(t, l, 20*time.Millisecond, 3)
		if len(evGot) != 1 || evGot[0] != ringev.Read {
			t.Errorf("the fd event after the foreign calls got %v, want one READ", evGot)
		}
		if c := rec.last(t); c.Err != nil || c.N != 1 {
			t.Errorf("the owner's Read after the foreign Cancel and SetTimeout: %+v", c)
		}
		if f := ev.Flags(); f != ringev.Read {
			t.Errorf("event flags %v after a foreign SetFlags, want READ", f)
		}
		if _, err := l.RecvMultishot(x, g, 0, func(*ringev.Completion) {}, 0); err != nil {
			t.Errorf("RecvMultishot into the group after a foreign BufferGroup.Close: %v", err)
		}
	})
}

// TestNotOwnerOwnedIsFalse: Owned from another goroutine returns false, on the owner true.
func TestNotOwnerOwnedIsFalse(t *testing.T) {
	l := newLoop(t, "epoll")
	if !l.Owned() {
		t.Fatal("Owned on the owner goroutine returned false")
	}
	onOtherGoroutine(t, func() {
		if l.Owned() {
			t.Error("Owned from another goroutine returned true")
		}
	})
}

// TestNotOwnerGettersOfFixedStateWork: Backend, BackendReason, FdEvent.Fd, Timer.Deadline,
// BufferGroup.Len, Size and Incremental, and Completion.BufferID, read from another goroutine
// while the loop runs, give what the owner reads (no data race under -race).
func TestNotOwnerGettersOfFixedStateWork(t *testing.T) {
	eachBackend(t, ringev.Backends(), func(t *testing.T, backend string) {
		a, b := testutil.Socketpair(t)
		l := newLoop(t, backend)
		keepAlive(t, l)
		ev := addFd(t, l, a, 0, never(t, "disarmed event"))
		tm := l.AddTimer(time.Hour, func(*ringev.Timer) {})
		defer tm.Stop()
		g, err := l.NewBufferGroup(2, 16)
		if err != nil {
			t.Fatal(err)
		}
		var c ringev.Completion
		must(t)(l.RecvMultishot(a, g, 0, func(got *ringev.Completion) { c = *got }, 0))
		testutil.Write(t, b, []byte("x"))
		until(t, l, func() bool { return c.BufferID() >= 0 && c.N == 1 })
		want := []any{l.Backend(), l.BackendReason(), ev.Fd(), tm.Deadline(), g.Len(), g.Size(), g.Incremental(), c.BufferID()}
		var rounds atomic.Int32
		go func() {
			defer l.Stop()
			for range 100 {
				got := []any{l.Backend(), l.BackendReason(), ev.Fd(), tm.Deadline(), g.Len(), g.Size(), g.Incremental(), c.BufferID()}
				for i := range got {
					if got[i] != want[i] {
						t.Errorf("getter %d from another goroutine: %v, want %v", i, got[i], want[i])
					}
				}
				l.Post(func() {}) // keep the loop turning meanwhile
				rounds.Add(1)
			}
		}()
		if err := run(t, l, deadline); err != nil {
			t.Fatal(err)
		}
		await(t, "100 rounds of getters", func() bool { return rounds.Load() == 100 })
		c.ReleaseBuffer()
	})
}

// TestNotOwnerGettersOfLoopStateThroughPost: FdEvent.Flags, Request.Pending, IOPath and
// IOPathReason read what the loop changes; from another goroutine they are read through Post,
// and give what the owner reads.
func TestNotOwnerGettersOfLoopStateThroughPost(t *testing.T) {
	eachBackend(t, ringev.Backends(), func(t *testing.T, backend string) {
		a, _ := testutil.Socketpair(t)
		r, _ := testutil.Pipe(t)
		l := newLoop(t, backend)
		keepAlive(t, l)
		ev := addFd(t, l, a, ringev.Write, func(*ringev.FdEvent, ringev.Flags) {})
		req := must(t)(l.Read(r, make([]byte, 1), -1, func(*ringev.Completion) {}, 0))
		want := []any{ev.Flags(), req.Pending(), l.IOPath(), l.IOPathReason()}
		var got []any
		var done atomic.Bool
		go func() {
			if err := l.Post(func() {
				got = []any{ev.Flags(), req.Pending(), l.IOPath(), l.IOPathReason()}
				done.Store(true)
			}); err != nil {
				t.Error(err)
			}
		}()
		until(t, l, done.Load)
		for i := range want {
			if got[i] != want[i] {
				t.Errorf("getter %d through Post: %v, want %v", i, got[i], want[i])
			}
		}
	})
}

// TestNotOwnerCallsWhileOwnerClosesDoNotRace: calls from another goroutine, made over and over
// while the owner runs the loop, closes an fd event and then closes the loop, read nothing the
// owner writes (no data race under -race): the calls only the owner may make (AddFd, Loop.Close,
// FdEvent.Close and SetFlags, AddSignal) return ErrNotOwner throughout; ReadNonblocking is
// read(2) (nothing was written: EAGAIN); AddTimer, AddTimerAt, AddImmediate, Timer.Stop,
// Immediate.Schedule and Cancel, FdEvent.SetAutoClose, Signal.Close and BufferGroup.Release
// work, and after Close the additions return nil.
func TestNotOwnerCallsWhileOwnerClosesDoNotRace(t *testing.T) {
	eachBackend(t, ringev.Backends(), func(t *testing.T, backend string) {
		a, _ := testutil.Socketpair(t)
		l := newLoop(t, backend) // the test closes it; cleanup's second Close returns nil
		keepAlive(t, l)
		ev := addFd(t, l, a, ringev.Read, never(t, "fd event"))
		sig, err := l.AddSignal(syscall.SIGUSR1, func(*ringev.Signal, int) {})
		if err != nil {
			t.Fatal(err)
		}
		g, err := l.NewBufferGroup(2, 16)
		if err != nil {
			t.Fatal(err)
		}
		im := l.AddImmediate(func() {})
		var calls atomic.Int64
		var afterClose atomic.Bool
		buf := make([]byte, 1)
		callsFromAnotherGoroutine(t, func() bool {
			_, err := l.AddFd(a, ringev.Read, never(t, "fd added from another goroutine"))
			_, serr := l.AddSignal(syscall.SIGUSR1, func(*ringev.Signal, int) {})
			for _, e := range []error{err, serr, l.Close(), ev.Close(), ev.SetFlags(ringev.Write)} {
				if !errors.Is(e, ringev.ErrNotOwner) {
					t.Errorf("call from another goroutine: %v, want ErrNotOwner", e)
				}
			}
			if n, err := l.ReadNonblocking(a, buf); n != 0 || err != unix.EAGAIN {
				t.Errorf("ReadNonblocking from another goroutine = %d, %v; want 0, EAGAIN (nothing was written)", n, err)
			}
			closed := afterClose.Load()
			tm := l.AddTimer(time.Hour, func(*ringev.Timer) {})
			at := l.AddTimerAt(time.Now().Add(time.Hour), func(*ringev.Timer) {})
			im2 := l.AddImmediate(func() {})
			if closed && (tm != nil || at != nil || im2 != nil) {
				t.Error("an addition from another goroutine after Close returned a handle")
				return false
			}
			tm.Stop()
			at.Stop()
			im.Schedule()
			im.Cancel()
			ev.SetAutoClose(false)
			g.Release(0)
			if calls.Load() == 20 {
				sig.Close()
			}
			calls.Add(1)
			return true
		})
		until(t, l, func() bool { return calls.Load() >= 50 })
		if err := ev.Close(); err != nil {
			t.Errorf("FdEvent.Close on the owner: %v", err)
		}
		at := calls.Load()
		until(t, l, func() bool { return calls.Load() >= at+50 })
		if err := l.Close(); err != nil {
			t.Fatal(err)
		}
		afterClose.Store(true)
		at = calls.Load()
		await(t, "50 more rounds after Loop.Close", func() bool { return calls.Load() >= at+50 })
	})
}

// TestNotOwnerRequestCallsWhileOwnerMakesRequestsDoNotRace: a request call (Loop.Read) from
// another goroutine returns ErrNotOwner without reading the request state the owner is making
// at the same time (its first request, fds of growing numbers): the race detector sees no race.
func TestNotOwnerRequestCallsWhileOwnerMakesRequestsDoNotRace(t *testing.T) {
	eachBackend(t, ringev.Backends(), func(t *testing.T, backend string) {
		rs, _ := testutil.Pipes(t, 16, false)
		l := newLoop(t, backend)
		var calls atomic.Int64
		buf := make([]byte, 1)
		callsFromAnotherGoroutine(t, func() bool {
			for _, fd := range rs {
				if _, err := l.Read(fd, buf, -1, func(*ringev.Completion) {}, 0); !errors.Is(err, ringev.ErrNotOwner) {
					t.Errorf("Loop.Read on fd %d from another goroutine: %v, want ErrNotOwner", fd, err)
				}
			}
			calls.Add(1)
			return true
		})
		await(t, "the other goroutine's first calls", func() bool { return calls.Load() > 0 })
		for _, fd := range rs { // the loop's first requests, on fds it has not seen
			must(t)(l.Read(fd, make([]byte, 1), -1, func(*ringev.Completion) {}, 0))
		}
		at := calls.Load()
		await(t, "more calls after the owner's requests", func() bool { return calls.Load() > at+10 })
	})
}

// TestNotOwnerSendOnAnFdTheOwnerSentOnReturnsErrNotOwner: Send from another goroutine, on an fd
// the owner has sent on (the loop's fast path knows it), checks its caller: ErrNotOwner, and no
// send is made.
func TestNotOwnerSendOnAnFdTheOwnerSentOnReturnsErrNotOwner(t *testing.T) {
	requireOwnerCheck(t)
	eachBackend(t, ringev.Backends(), func(t *testing.T, backend string) {
		a, b := testutil.Socketpair(t)
		l := newLoop(t, backend)
		sent := false // the owner's send first: the fd is known to the loop's fast path
		must(t)(l.Send(a, []byte("y"), 0, func(*ringev.Completion) { sent = true }, 0))
		until(t, l, func() bool { return sent })
		cb := func(*ringev.Completion) { t.Error("a send made from another goroutine completed") }
		var err error
		onOtherGoroutine(t, func() {
			_, err = l.Send(a, []byte("x"), 0, cb, 0)
		})
		if !errors.Is(err, ringev.ErrNotOwner) {
			t.Fatalf("Send from another goroutine: %v, want ErrNotOwner", err)
		}
		got := make([]byte, 8)
		if n, _ := unix.Read(b, got); string(got[:n]) != "y" {
			t.Fatalf("the peer read %q, want the owner's send alone (\"y\")", got[:n])
		}
	})
}

// TestNotOwnerBufferGroupReleaseIsPosted: BufferGroup.Release from another goroutine is posted
// to the loop (the buffer is still held when it returns), and the RecvMultishot that ran dry
// gets the bytes that waited once the loop runs.
func TestNotOwnerBufferGroupReleaseIsPosted(t *testing.T) {
	requireOwnerCheck(t)
	eachBackend(t, ringev.Backends(), func(t *testing.T, backend string) {
		a, b := testutil.Socketpair(t)
		l := newLoop(t, backend)
		g, held, more := bufferGroupDry(t, l, a, b)
		id := held[0].BufferID()
		onOtherGoroutine(t, func() { g.Release(id) })
		if n := ringev.BufferRefs(g, id); n != 1 {
			t.Fatalf("after Release from another goroutine, buffer %d has %d holds, want 1 (the release posted to the loop)", id, n)
		}
		more()
	})
}

// internalParams returns "Func" or "Type.Method" for each exported function, and exported
// method of an exported type, declared in dir's Go files (tests left out), that has a
// parameter or result of a type from an internal package: a call that the package's
// documentation shows and code outside the module cannot make, or can make only with a zero
// value it cannot name.
func internalParams(t *testing.T, dir string) []string {
	t.Helper()
	ents, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	fset := token.NewFileSet()
	var found []string
	for _, e := range ents {
		if n := e.Name(); strings.HasSuffix(n, ".go") && !strings.HasSuffix(n, "_test.go") {
			f, err := parser.ParseFile(fset, filepath.Join(dir, n), nil, parser.SkipObjectResolution)
			if err != nil {
				t.Fatal(err)
			}
			internal := map[string]bool{} // the file's names of internal packages
			for _, im := range f.Imports {
				path := strings.Trim(im.Path.Value, `"`)
				if !strings.Contains("/"+path+"/", "/internal/") {
					continue
				}
				name := path[strings.LastIndex(path, "/")+1:]
				if im.Name != nil {
					name = im.Name.Name
				}
				internal[name] = true
			}
			for _, d := range f.Decls {
				fn, ok := d.(*ast.FuncDecl)
				if !ok || !fn.Name.IsExported() {
					continue
				}
				name := fn.Name.Name
				if fn.Recv != nil {
					rt := fn.Recv.List[0].Type
					if st, ok := rt.(*ast.StarExpr); ok {
						rt = st.X
					}
					id, ok := rt.(*ast.Ident)
					if !ok || !id.IsExported() {
						continue
					}
					name = id.Name + "." + name
				}
				uses := false
				ast.Inspect(fn.Type, func(n ast.Node) bool {
					if sel, ok := n.(*ast.SelectorExpr); ok {
						if x, ok := sel.X.(*ast.Ident); ok && internal[x.Name] {
							uses = true
						}
					}
					return !uses
				})
				if uses {
					found = append(found, name)
				}
			}
		}
	}
	slices.Sort(found)
	return found
}

// TestNotOwnerUncheckedCallsAreNotExported: no exported function or method of the package takes
// or returns a type of an internal package, as the calls without the owner check that package
// server makes (internal/onloop) once did: code outside the module reaches only the checked
// calls.
func TestNotOwnerUncheckedCallsAreNotExported(t *testing.T) {
	if got := internalParams(t, "."); len(got) > 0 {
		t.Errorf("exported calls with a parameter or result of an internal package's type: %q", got)
	}
}

// TestNotOwnerInternalParamsSeesAnInternalParameter makes sure the check above can fail: an
// exported method with an internal package's parameter, and an exported function with one as
// its result, are reported; an unexported method, a method of an unexported type and a
// function with a type of a package that is not internal are not.
func TestNotOwnerInternalParamsSeesAnInternalParameter(t *testing.T) {
	dir := t.TempDir()
	src := `package ringev

import (
	"github.com/ringev/ringev/internal/onloop"
	"github.com/ringev/ringev/uring"
)

type Loop struct{}
type loop struct{}

func (l *Loop) SendX(p onloop.Proof, fd int) {}
func (l *Loop) sendX(p onloop.Proof)        {}
func (l *loop) SendX(p onloop.Proof)        {}
func Given() onloop.Proof                  { return onloop.Proof{} }
func Ring() *uring.Ring                    { return nil }
`
	if err := os.WriteFile(filepath.Join(dir, "x.go"), []byte(src), 0o644); err != nil {
		t.Fatal(err)
	}
	if got, want := internalParams(t, dir), []string{"Given", "Loop.SendX"}; !slices.Equal(got, want) {
		t.Errorf("reported %q, want %q", got, want)
	}
}
