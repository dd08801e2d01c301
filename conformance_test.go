//go:build linux

package ringev_test

// The behaviour suite of the loop contract (doc.go, items 1-10), run on every backend in every
// dispatch mode.

import (
	"errors"
	"slices"
	"sync/atomic"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/ringev/ringev"
	"github.com/ringev/ringev/internal/testutil"
)

// conformanceCases is the behaviour suite of the loop contract (doc.go, items 1-10), run
// against every backend by TestConformance. Each case creates, uses and closes its own loops on
// its own goroutine (New locks the goroutine to its OS thread; the loop belongs to it).
var conformanceCases = []struct {
	name string
	fn   func(t *testing.T, backend string, m mode)
}{
	{"ReadReadiness", testReadReadiness},
	{"WriteReadiness", testWriteReadiness},
	{"LevelTriggeredRereport", testLevelTriggeredRereport},
	{"MaskChangesTakeEffectExactly", testMaskChangesTakeEffectExactly},
	{"ReadAndWriteHandlersOnOneFd", testReadAndWriteHandlersOnOneFd},
	{"ThreeHandlersOnOneFd", testThreeHandlersOnOneFd},
	{"FairnessAlternatesReadyFds", testFairnessAlternatesReadyFds},
	{"ClosedFdEventNeverFires", testClosedFdEventNeverFires},
	{"TimersRunInDeadlineOrder", testTimersRunInDeadlineOrder},
	{"OneHandlerPerOnce", testOneHandlerPerOnce},
	{"PostWakesBlockedLoop", testPostWakesBlockedLoop},
	{"RunReturnsWhenNothingLeft", testRunReturnsWhenNothingLeft},
	{"OnceWithNothingLeftReturnsErrNothingToDo", testOnceWithNothingLeftReturnsErrNothingToDo},
	{"StopEndsRun", testStopEndsRun},
	{"NestedOnceReturnsErrNested", testNestedOnceReturnsErrNested},
	{"PostAfterCloseReturnsErrClosed", testPostAfterCloseReturnsErrClosed},
	{"PostConcurrentWithClose", testPostConcurrentWithClose},
	{"AutoCloseClosesFd", testAutoCloseClosesFd},
	{"ClosedFileIsReleased", testClosedFileIsReleased},
}

// TestConformance runs the behaviour suite against every registered backend, with the default
// readiness cache and with WithFreshReadiness. A backend that cannot be created here (New
// fails) is skipped with New's error, which names what is missing.
func TestConformance(t *testing.T) {
	eachMode(t, ringev.Backends(), []mode{modeDefault, modeFresh}, func(t *testing.T, backend string, m mode) {
		for _, c := range conformanceCases {
			t.Run(c.name, func(t *testing.T) { c.fn(t, backend, m) })
		}
	})
}

// A byte written to a pipe makes its Read handler run, with flags == Read; before that, the
// handler does not run.
func testReadReadiness(t *testing.T, backend string, m mode) {
	r, w := testutil.Pipe(t)
	l := newLoop(t, backend, m.opts()...)
	var got []ringev.Flags
	addFd(t, l, r, ringev.Read, func(ev *ringev.FdEvent, f ringev.Flags) {
		got = append(got, f)
		testutil.Drain(t, ev.Fd())
	})
	quiet(t, l)
	if len(got) != 0 {
		t.Fatalf("Read handler ran %d times on an empty pipe (flags %v)", len(got), got)
	}
	testutil.Write(t, w, oneByte)
	once(t, l)
	if !slices.Equal(got, []ringev.Flags{ringev.Read}) {
		t.Fatalf("after one byte and one Once: handler calls = %v, want [%v]", got, ringev.Read)
	}
}

// The Write handler on an empty pipe's write end runs, with flags == Write.
func testWriteReadiness(t *testing.T, backend string, m mode) {
	_, w := testutil.Pipe(t)
	l := newLoop(t, backend, m.opts()...)
	var got []ringev.Flags
	addFd(t, l, w, ringev.Write, func(_ *ringev.FdEvent, f ringev.Flags) { got = append(got, f) })
	once(t, l)
	if !slices.Equal(got, []ringev.Flags{ringev.Write}) {
		t.Fatalf("after one Once: handler calls = %v, want [%v]", got, ringev.Write)
	}
}

// Level-triggered: a byte the handler does not read is reported again on each following Once
// (3 times); once the handler consumes it, the handler is not called again.
func testLevelTriggeredRereport(t *testing.T, backend string, m mode) {
	r, w := testutil.Pipe(t)
	l := newLoop(t, backend, m.opts()...)
	var got []ringev.Flags
	addFd(t, l, r, ringev.Read, func(ev *ringev.FdEvent, f ringev.Flags) {
		got = append(got, f)
		if len(got) == 3 {
			testutil.Drain(t, ev.Fd())
		}
	})
	testutil.Write(t, w, oneByte)
	for i := 1; i <= 3; i++ {
		once(t, l)
		if len(got) != i {
			t.Fatalf("after Once %d with an unread byte: handler ran %d times, want %d", i, len(got), i)
		}
	}
	want := []ringev.Flags{ringev.Read, ringev.Read, ringev.Read}
	if !slices.Equal(got, want) {
		t.Fatalf("handler flags = %v, want %v", got, want)
	}
	quiet(t, l)
	if len(got) != 3 {
		t.Fatalf("handler ran again after it consumed the byte: %d calls, want 3", len(got))
	}
}

// Mask changes take effect exactly: after SetFlags(0) the handler of a readable fd is not called
// (a timer runs instead); after SetFlags(Read) it is called again; SetFlags(0) from inside the
// handler also takes effect at once.
func testMaskChangesTakeEffectExactly(t *testing.T, backend string, m mode) {
	r, w := testutil.Pipe(t)
	l := newLoop(t, backend, m.opts()...)
	calls := 0
	disarmInside := false
	ev := addFd(t, l, r, ringev.Read, func(e *ringev.FdEvent, f ringev.Flags) {
		calls++
		if f != ringev.Read {
			t.Errorf("handler call %d: flags = %v, want %v", calls, f, ringev.Read)
		}
		if disarmInside {
			if err := e.SetFlags(0); err != nil {
				t.Errorf("SetFlags(0) inside the handler: %v", err)
			}
		}
	})
	testutil.Write(t, w, oneByte) // never read: the fd stays readable throughout
	once(t, l)
	if calls != 1 {
		t.Fatalf("readable fd, one Once: handler ran %d times, want 1", calls)
	}

	setFlags(t, ev, 0)
	quiet(t, l)
	quiet(t, l)
	if calls != 1 {
		t.Fatalf("after SetFlags(0): handler ran %d more times while timers fired, want 0", calls-1)
	}

	setFlags(t, ev, ringev.Read)
	once(t, l)
	if calls != 2 {
		t.Fatalf("after SetFlags(Read) again, one Once: handler ran %d times in all, want 2", calls)
	}

	disarmInside = true
	once(t, l)
	if calls != 3 {
		t.Fatalf("one more Once: handler ran %d times in all, want 3", calls)
	}
	if got := ev.Flags(); got != 0 {
		t.Fatalf("after SetFlags(0) inside the handler, Flags() = %v, want 0", got)
	}
	quiet(t, l)
	if calls != 3 {
		t.Fatalf("after SetFlags(0) inside the handler: handler ran again (%d calls, want 3)", calls)
	}
}

// flagLog records the flags of each call of the fd handlers made by handler(i), in call order.
type flagLog struct {
	who   []int
	flags [][]ringev.Flags
}

func newFlagLog(n int) *flagLog { return &flagLog{flags: make([][]ringev.Flags, n)} }

func (g *flagLog) handler(i int) ringev.FdHandler {
	return func(_ *ringev.FdEvent, f ringev.Flags) {
		g.who = append(g.who, i)
		g.flags[i] = append(g.flags[i], f)
	}
}

// check fails the test unless handler i ran exactly calls times, each time with flags want[i].
func (g *flagLog) check(t *testing.T, calls int, want []ringev.Flags) {
	t.Helper()
	for i, w := range want {
		if len(g.flags[i]) != calls {
			t.Errorf("handler %d (%v) ran %d times, want %d (call order %v)", i, w, len(g.flags[i]), calls, g.who)
			continue
		}
		for k, f := range g.flags[i] {
			if f != w {
				t.Errorf("handler %d (%v), call %d: flags = %v, want %v", i, w, k+1, f, w)
			}
		}
	}
}

// A Read and a Write handler on one socket end that is both readable and writable: over 4 Onces
// each runs twice, each with only its own flag.
func testReadAndWriteHandlersOnOneFd(t *testing.T, backend string, m mode) {
	a, b := testutil.Socketpair(t)
	l := newLoop(t, backend, m.opts()...)
	testutil.Write(t, b, oneByte) // a is readable (never read) and writable
	g := newFlagLog(2)
	addFd(t, l, a, ringev.Read, g.handler(0))
	addFd(t, l, a, ringev.Write, g.handler(1))
	for range 4 {
		once(t, l)
	}
	g.check(t, 2, []ringev.Flags{ringev.Read, ringev.Write})
}

// Three handlers on one fd (Read, Write, Read|Write; tevent 0.14's epoll backend aborts here):
// over 6 Onces each runs twice, each with its own flags.
func testThreeHandlersOnOneFd(t *testing.T, backend string, m mode) {
	a, b := testutil.Socketpair(t)
	l := newLoop(t, backend, m.opts()...)
	testutil.Write(t, b, oneByte) // a is readable (never read) and writable
	g := newFlagLog(3)
	addFd(t, l, a, ringev.Read, g.handler(0))
	addFd(t, l, a, ringev.Write, g.handler(1))
	addFd(t, l, a, ringev.Read|ringev.Write, g.handler(2))
	for range 6 {
		once(t, l)
	}
	g.check(t, 2, []ringev.Flags{ringev.Read, ringev.Write, ringev.Read | ringev.Write})
}

// Fairness: two always-ready fds (two pipes, each with an unread byte): over 10 Onces each handler
// runs 5 times, alternating.
func testFairnessAlternatesReadyFds(t *testing.T, backend string, m mode) {
	r1, w1 := testutil.Pipe(t)
	r2, w2 := testutil.Pipe(t)
	l := newLoop(t, backend, m.opts()...)
	testutil.Write(t, w1, oneByte)
	testutil.Write(t, w2, oneByte)
	g := newFlagLog(2)
	addFd(t, l, r1, ringev.Read, g.handler(0))
	addFd(t, l, r2, ringev.Read, g.handler(1))
	for range 10 {
		once(t, l)
	}
	g.check(t, 5, []ringev.Flags{ringev.Read, ringev.Read})
	for k := 1; k < len(g.who); k++ {
		if g.who[k] == g.who[k-1] {
			t.Fatalf("handlers did not alternate: call order %v", g.who)
		}
	}
}

// A closed fd event's handler never runs again: closed by another handler in the same round
// (both ready in the same wait; on another fd or on the same fd), closed by its own handler, and
// closed while data is pending (before and after it first ran).
func testClosedFdEventNeverFires(t *testing.T, backend string, m mode) {
	t.Run("ByOtherHandlerInSameRound/OtherFd", func(t *testing.T) {
		r1, w1 := testutil.Pipe(t)
		r2, w2 := testutil.Pipe(t)
		closeOtherInSameRound(t, backend, m, [2]int{r1, r2}, [2]int{w1, w2})
	})
	t.Run("ByOtherHandlerInSameRound/SameFd", func(t *testing.T) {
		r, w := testutil.Pipe(t)
		closeOtherInSameRound(t, backend, m, [2]int{r, r}, [2]int{w, w})
	})
	t.Run("ByItsOwnHandler", func(t *testing.T) {
		r, w := testutil.Pipe(t)
		l := newLoop(t, backend, m.opts()...)
		testutil.Write(t, w, oneByte) // never read
		calls := 0
		addFd(t, l, r, ringev.Read, func(ev *ringev.FdEvent, _ ringev.Flags) {
			calls++
			if err := ev.Close(); err != nil {
				t.Errorf("FdEvent.Close inside its handler: %v", err)
			}
		})
		once(t, l)
		quiet(t, l)
		quiet(t, l)
		if calls != 1 {
			t.Fatalf("handler that closed its own event ran %d times, want 1", calls)
		}
	})
	t.Run("WithDataPending", func(t *testing.T) {
		r, w := testutil.Pipe(t)
		l := newLoop(t, backend, m.opts()...)
		testutil.Write(t, w, oneByte) // never read
		calls := [2]int{}
		ran := addFd(t, l, r, ringev.Read, func(*ringev.FdEvent, ringev.Flags) { calls[0]++ })
		once(t, l)
		if calls[0] != 1 {
			t.Fatalf("readable fd, one Once: handler ran %d times, want 1", calls[0])
		}
		testutil.Write(t, w, oneByte)
		if err := ran.Close(); err != nil {
			t.Fatalf("FdEvent.Close after it ran, data pending: %v", err)
		}
		fresh := addFd(t, l, r, ringev.Read, func(*ringev.FdEvent, ringev.Flags) { calls[1]++ })
		if err := fresh.Close(); err != nil {
			t.Fatalf("FdEvent.Close before it ran, data pending: %v", err)
		}
		if err := ran.Close(); err != nil {
			t.Fatalf("second FdEvent.Close: %v (Close is idempotent)", err)
		}
		quiet(t, l)
		quiet(t, l)
		if calls != [2]int{1, 0} {
			t.Fatalf("closed events with data pending: calls (closed after running, closed before) = %v, want [1 0]", calls)
		}
	})
}

// closeOtherInSameRound watches rs[0] and rs[1] (distinct or equal fds) with one event each, makes
// both readable, and lets whichever handler runs first close the other event: over 3 Onces the
// first runs 3 times and the other never.
func closeOtherInSameRound(t *testing.T, backend string, m mode, rs, ws [2]int) {
	l := newLoop(t, backend, m.opts()...)
	testutil.Write(t, ws[0], oneByte) // never read
	if ws[1] != ws[0] {
		testutil.Write(t, ws[1], oneByte)
	}
	var evs [2]*ringev.FdEvent
	calls := [2]int{}
	for i := range 2 {
		evs[i] = addFd(t, l, rs[i], ringev.Read, func(*ringev.FdEvent, ringev.Flags) {
			calls[i]++
			if calls[0]+calls[1] == 1 {
				if err := evs[1-i].Close(); err != nil {
					t.Errorf("FdEvent.Close of the other event inside a handler: %v", err)
				}
			}
		})
	}
	for range 3 {
		once(t, l)
	}
	if calls != [2]int{3, 0} && calls != [2]int{0, 3} {
		t.Fatalf("handler calls = %v, want [3 0] or [0 3]: the event closed by the first handler ran", calls)
	}
}

// Timers run in deadline order (added at 30, 10, 20 ms: run 10, 20, 30), one per Once, and timers
// with the same deadline run in creation order.
func testTimersRunInDeadlineOrder(t *testing.T, backend string, m mode) {
	l := newLoop(t, backend, m.opts()...)
	var order []int
	for _, ms := range []int{30, 10, 20} {
		l.AddTimer(time.Duration(ms)*time.Millisecond, func(*ringev.Timer) { order = append(order, ms) })
	}
	n := until(t, l, func() bool { return len(order) == 3 })
	if want := []int{10, 20, 30}; !slices.Equal(order, want) {
		t.Fatalf("timers ran in order %v (ms), want %v", order, want)
	}
	if n != 3 {
		t.Fatalf("3 timers took %d Once calls, want 3 (one handler per Once)", n)
	}

	order = nil
	at := time.Now().Add(10 * time.Millisecond)
	for id := 1; id <= 4; id++ {
		l.AddTimerAt(at, func(*ringev.Timer) { order = append(order, id) })
	}
	until(t, l, func() bool { return len(order) == 4 })
	if want := []int{1, 2, 3, 4}; !slices.Equal(order, want) {
		t.Fatalf("timers with one deadline ran in order %v, want creation order %v", order, want)
	}
}

// One handler per Once, in the contract's order: with an immediate, an expired timer and a ready
// fd (added in the opposite order), the first Once runs the immediate, the second the timer, the
// third the fd handler.
func testOneHandlerPerOnce(t *testing.T, backend string, m mode) {
	r, w := testutil.Pipe(t)
	l := newLoop(t, backend, m.opts()...)
	testutil.Write(t, w, oneByte) // never read
	var ran []string
	addFd(t, l, r, ringev.Read, func(*ringev.FdEvent, ringev.Flags) { ran = append(ran, "fd") })
	l.AddTimerAt(time.Now().Add(-time.Millisecond), func(*ringev.Timer) { ran = append(ran, "timer") })
	l.AddImmediate(func() { ran = append(ran, "immediate") })
	want := []string{"immediate", "timer", "fd"}
	for i := 1; i <= 3; i++ {
		once(t, l)
		if !slices.Equal(ran, want[:i]) {
			t.Fatalf("after Once %d: ran %v, want %v", i, ran, want[:i])
		}
	}
}

// Post from another goroutine wakes a loop blocked in its wait: the loop has only a timer 10 s
// away; a goroutine Posts once the loop's thread sleeps in its wait; Once returns within 2 s
// having run the posted function. A
// safety timer at 2 s ends the wait if the Post did not wake the loop, so Once returning at or
// after 2 s means the wake-up was lost (timers never fire early: this is not a timing bound).
func testPostWakesBlockedLoop(t *testing.T, backend string, m mode) {
	l := newLoop(t, backend, m.opts()...)
	far := l.AddTimer(10*time.Second, func(*ringev.Timer) { t.Errorf("the 10 s timer ran") })
	safetyFired := false
	safety := l.AddTimer(2*time.Second, func(*ringev.Timer) { safetyFired = true })
	posted := false
	errc := make(chan error, 1)
	testutil.WhenBlocked(t, unix.Gettid(), func() { errc <- l.Post(func() { posted = true }) })
	start := time.Now()
	once(t, l)
	elapsed := time.Since(start)
	select {
	case err := <-errc:
		if err != nil {
			t.Fatalf("Post from another goroutine: %v", err)
		}
	case <-time.After(deadline):
		t.Fatal("the posting goroutine did not return from Post")
	}
	if safetyFired || elapsed >= 2*time.Second {
		t.Fatalf("Post did not wake the loop: Once returned after %v, when the 2 s safety timer ended the wait (safety timer ran: %v)",
			elapsed.Round(time.Millisecond), safetyFired)
	}
	if !posted {
		t.Fatal("Once returned without running the posted function")
	}
	far.Stop()
	safety.Stop()
}

// Run returns nil when nothing is left to wait for: at once on an empty loop, and after running
// the one timer of a loop that has nothing else.
func testRunReturnsWhenNothingLeft(t *testing.T, backend string, m mode) {
	l := newLoop(t, backend, m.opts()...)
	if err := run(t, l, deadline); err != nil {
		t.Fatalf("Run on an empty loop: %v, want nil", err)
	}
	fired := 0
	l.AddTimer(10*time.Millisecond, func(*ringev.Timer) { fired++ })
	if err := run(t, l, deadline); err != nil {
		t.Fatalf("Run on a loop with one timer: %v, want nil", err)
	}
	if fired != 1 {
		t.Fatalf("Run returned having run the timer %d times, want 1", fired)
	}
}

// Once returns ErrNothingToDo on a loop with nothing to wait for: empty, and after its only timer
// ran and its only fd event was closed.
func testOnceWithNothingLeftReturnsErrNothingToDo(t *testing.T, backend string, m mode) {
	r, _ := testutil.Pipe(t)
	l := newLoop(t, backend, m.opts()...)
	if err := onceErr(t, l); !errors.Is(err, ringev.ErrNothingToDo) {
		t.Fatalf("Once on an empty loop: %v, want ErrNothingToDo", err)
	}
	ev := addFd(t, l, r, ringev.Read, func(*ringev.FdEvent, ringev.Flags) { t.Error("fd handler of an empty pipe ran") })
	quiet(t, l)
	if err := ev.Close(); err != nil {
		t.Fatalf("FdEvent.Close: %v", err)
	}
	if err := onceErr(t, l); !errors.Is(err, ringev.ErrNothingToDo) {
		t.Fatalf("Once after the timer ran and the fd event closed: %v, want ErrNothingToDo", err)
	}
}

// Stop ends Run: a ready fd handler that calls Stop on its 5th call makes Run return nil after
// exactly 5 calls; Stop from another goroutine (once the loop's thread sleeps in its wait) ends
// a Run blocked on a timer 10 s away within 2 s (a safety timer at 2 s ends the wait if the
// Stop did not wake the loop).
func testStopEndsRun(t *testing.T, backend string, m mode) {
	t.Run("FromHandler", func(t *testing.T) {
		r, w := testutil.Pipe(t)
		l := newLoop(t, backend, m.opts()...)
		testutil.Write(t, w, oneByte) // never read: always ready
		calls := 0
		addFd(t, l, r, ringev.Read, func(*ringev.FdEvent, ringev.Flags) {
			calls++
			if calls == 5 {
				l.Stop()
			}
		})
		if err := run(t, l, deadline); err != nil {
			t.Fatalf("Run stopped from a handler: %v, want nil", err)
		}
		if calls != 5 {
			t.Fatalf("Run stopped on the 5th call returned after %d calls, want 5", calls)
		}
	})
	t.Run("FromOtherGoroutine", func(t *testing.T) {
		l := newLoop(t, backend, m.opts()...)
		far := l.AddTimer(10*time.Second, func(*ringev.Timer) { t.Errorf("the 10 s timer ran") })
		safety := l.AddTimer(2*time.Second, func(*ringev.Timer) {
			t.Errorf("Stop from another goroutine did not end Run: the 2 s safety timer ran")
			l.Stop()
		})
		done := testutil.WhenBlocked(t, unix.Gettid(), l.Stop)
		start := time.Now()
		if err := run(t, l, deadline); err != nil {
			t.Fatalf("Run stopped from another goroutine: %v, want nil", err)
		}
		if elapsed := time.Since(start); elapsed >= 2*time.Second {
			t.Errorf("Stop from another goroutine did not wake the loop: Run returned after %v, when the 2 s safety timer ended the wait",
				elapsed.Round(time.Millisecond))
		}
		<-done
		far.Stop()
		safety.Stop()
	})
}

// Once (and Run) from inside a handler return ErrNested.
func testNestedOnceReturnsErrNested(t *testing.T, backend string, m mode) {
	l := newLoop(t, backend, m.opts()...)
	safety := l.AddTimer(2*time.Second, func(*ringev.Timer) {}) // a nested Once that waits returns by then
	var onceErr, runErr error
	ran := false
	l.AddImmediate(func() {
		ran = true
		onceErr = l.Once()
		runErr = l.Run()
	})
	once(t, l)
	if !ran {
		t.Fatal("Once did not run the immediate")
	}
	if !errors.Is(onceErr, ringev.ErrNested) {
		t.Errorf("Once inside a handler: %v, want ErrNested", onceErr)
	}
	if !errors.Is(runErr, ringev.ErrNested) {
		t.Errorf("Run inside a handler: %v, want ErrNested", runErr)
	}
	if !safety.Stop() {
		t.Error("the nested call ran the 2 s safety timer")
	}
}

// Post after Close returns ErrClosed (and Close twice is fine).
func testPostAfterCloseReturnsErrClosed(t *testing.T, backend string, m mode) {
	l := newLoop(t, backend, m.opts()...)
	if err := l.Close(); err != nil {
		t.Fatalf("Loop.Close: %v", err)
	}
	if err := l.Post(func() { t.Error("a function posted after Close ran") }); !errors.Is(err, ringev.ErrClosed) {
		t.Fatalf("Post after Close: %v, want ErrClosed", err)
	}
}

// Post is safe from any goroutine, also while the loop is being closed: a goroutine that posts
// without pause while the loop runs Once and then Close gets nil until Close and ErrClosed after
// it (run with -race: Close and Post must not race on the loop's state).
func testPostConcurrentWithClose(t *testing.T, backend string, m mode) {
	l := newLoop(t, backend, m.opts()...)
	// A loop whose only source is Post has nothing to wait for between two Posts (Once then
	// returns ErrNothingToDo): a far timer keeps it waiting for them.
	l.AddTimer(time.Hour, func(*ringev.Timer) {})
	errc := make(chan error, 1)
	posted := make(chan struct{})
	var posts atomic.Int64
	go func() {
		for n := 0; ; n++ {
			if err := l.Post(func() {}); err != nil {
				errc <- err
				return
			}
			posts.Add(1)
			if n == 0 {
				close(posted)
			}
		}
	}()
	select {
	case <-posted:
	case err := <-errc:
		t.Fatalf("the first Post: %v", err)
	case <-time.After(deadline):
		t.Fatalf("no Post within %v", deadline)
	}
	for range 3 {
		once(t, l) // each runs one posted function
	}
	// More Posts, unsynchronised with the loop, right before Close.
	at := posts.Load()
	await(t, "100 more Posts", func() bool { return posts.Load() >= at+100 })
	if err := l.Close(); err != nil {
		t.Fatalf("Loop.Close while another goroutine posts: %v", err)
	}
	select {
	case err := <-errc:
		if !errors.Is(err, ringev.ErrClosed) {
			t.Fatalf("Post during and after Close: %v, want nil and then ErrClosed", err)
		}
	case <-time.After(deadline):
		t.Fatal("the posting goroutine still gets no ErrClosed after Close")
	}
}

// Auto-close: SetAutoClose(true) then Close closes the fd (fcntl F_GETFD fails with EBADF), and
// the file is really released after the loop has waited on it: the socket's peer reads EOF at
// once (loop contract item 5: a pending poll must not pin the file).
func testAutoCloseClosesFd(t *testing.T, backend string, m mode) {
	a, peer := testutil.Socketpair(t) // a is closed by the loop (or, if that fails, at cleanup)
	l := newLoop(t, backend, m.opts()...)
	ev := addFd(t, l, a, ringev.Read, never(t, "Read handler of an idle socket"))
	untilWaited(t, l) // the loop has waited on a
	quiet(t, l)
	ev.SetAutoClose(true)
	if err := ev.Close(); err != nil {
		t.Fatalf("FdEvent.Close with auto-close: %v", err)
	}
	_, err := unix.FcntlInt(uintptr(a), unix.F_GETFD, 0)
	if err != unix.EBADF {
		t.Fatalf("fcntl(F_GETFD) on the auto-closed fd: err = %v, want EBADF", err)
	}
	testutil.HandOver(t, a)
	testutil.ExpectEOF(t, peer, 0, "after the auto-close")
}

// A closed file is really released even while a loop watches it (loop contract item 5; a
// pending IORING_OP_POLL_ADD would pin the file): after the loop has waited on a socket,
// close(2) of the fd behind the loop's back lets the peer read EOF at once; and an auto-close by
// one loop does too while a second, idle loop (which has also waited on it) still watches the
// fd. uring-poll, not close-safe by design (WithBackend), pins the file until its loops close.
func testClosedFileIsReleased(t *testing.T, backend string, m mode) {
	t.Run("PlainCloseBehindLoopsBack", func(t *testing.T) {
		a, peer := testutil.Socketpair(t)
		l := newLoop(t, backend, m.opts()...)
		ev := addFd(t, l, a, ringev.Read, never(t, "Read handler of an idle socket"))
		untilWaited(t, l) // the loop has waited on a
		quiet(t, l)
		if err := testutil.Close(t, a); err != nil {
			t.Fatalf("close(2): %v", err)
		}
		if backend == notCloseSafe {
			testutil.ExpectPinned(t, peer, "uring-poll: close(2) of a watched fd")
			if err := l.Close(); err != nil {
				t.Fatalf("Loop.Close: %v", err)
			}
			testutil.ExpectEOF(t, peer, time.Second, "uring-poll: after Loop.Close") // the ring's teardown is the kernel's, later
			return
		}
		testutil.ExpectEOF(t, peer, 0, "after close(2) of a watched fd")
		if err := ev.Close(); err != nil { // before the fd number can be reused
			t.Logf("FdEvent.Close after its fd was closed behind the loop's back: %v", err)
		}
	})
	t.Run("AutoCloseWhileSecondLoopWatches", func(t *testing.T) {
		a, peer := testutil.Socketpair(t)
		l1 := newLoop(t, backend, m.opts()...)
		l2 := newLoop(t, backend, m.opts()...)
		idle := never(t, "Read handler of an idle socket")
		ev1 := addFd(t, l1, a, ringev.Read, idle)
		ev2 := addFd(t, l2, a, ringev.Read, idle)
		untilWaited(t, l1) // both loops have waited on a
		untilWaited(t, l2)
		quiet(t, l1)
		quiet(t, l2)
		ev1.SetAutoClose(true)
		if err := ev1.Close(); err != nil {
			t.Fatalf("FdEvent.Close with auto-close: %v", err)
		}
		testutil.HandOver(t, a)
		if backend == notCloseSafe {
			testutil.ExpectPinned(t, peer, "uring-poll: auto-close in one loop while a second loop watches")
			if err := l2.Close(); err != nil {
				t.Fatalf("Loop.Close of the second loop: %v", err)
			}
			testutil.ExpectEOF(t, peer, time.Second, "uring-poll: after the second loop's Close")
			return
		}
		testutil.ExpectEOF(t, peer, 0, "after auto-close in one loop while a second loop watches")
		if err := ev2.Close(); err != nil { // before the fd number can be reused
			t.Logf("FdEvent.Close in the second loop after the fd was closed: %v", err)
		}
	})
}

// TestConformanceUringFallback runs the behaviour suite on the uring backend's fallback for
// kernels without IORING_OP_EPOLL_WAIT (Linux < 6.15): a one-shot POLL_ADD on the epoll fd, then
// epoll_wait.
func TestConformanceUringFallback(t *testing.T) {
	for _, c := range conformanceCases {
		t.Run(c.name, func(t *testing.T) { c.fn(t, uringFallback, modeDefault) })
	}
}
