//go:build linux

package ringev_test

// The loop helpers of the root package's tests: loops and their backends and modes, fd events,
// waits on a loop (once, until, untilWaited) and quiet periods, request recorders, signals, the
// fd_speed harness, and one skip helper per kernel feature. The fd, socket and thread helpers
// that every package's tests share (owned pipes and sockets, a file's release, a thread asleep
// in its wait) are internal/testutil's; a helper that only one test file needs stays next to its
// tests.
//
// Every wait has a deadline (deadline) that only turns a hang into a failure. Behaviour is
// asserted with counts (handler runs, Once calls, waits) and conditions, never with how long
// something took, except where the contract states the bound itself (a file released within
// 100 ms), and then without the time the loop waited for a CPU (testutil.RunWait).

import (
	"errors"
	"fmt"
	"os"
	"os/signal"
	"runtime"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/ringev/ringev"
	"github.com/ringev/ringev/internal/testutil"
	"github.com/ringev/ringev/uring"
	"golang.org/x/sys/unix"
)

// deadline bounds every wait in the suite. It is generous on purpose: it only turns a hang into
// a failure, it is not a performance bound.
const deadline = testutil.Deadline

// quietFor is the length of quiet's quiet period: the due time of the timer it waits for.
const quietFor = 10 * time.Millisecond

// notCloseSafe is the backend that WithBackend documents as not close-safe: a pending
// IORING_OP_POLL_ADD pins the file.
const notCloseSafe = "uring-poll"

// uringFallback names, as a backend of this suite, the uring backend forced onto its fallback
// for kernels without IORING_OP_EPOLL_WAIT (Linux < 6.15): a one-shot POLL_ADD on the epoll fd,
// then epoll_wait. newLoop knows it.
const uringFallback = "uring-fallback"

// uringFixed names, for newLoop, the uring backend; TestRequestConformanceRegisteredFiles sets
// SetRegisterEveryFd around its cases.
const uringFixed = "uring-fixed"

// oneByte is the byte the tests write to make an fd readable.
var oneByte = []byte{'x'}

// mode is a dispatch mode a test runs in: how the readiness one wait reported is used.
type mode struct {
	name  string
	fresh bool // WithFreshReadiness: no Once runs on readiness from an earlier Once
	all   bool // WithDispatchAll: one Once runs every handler its wait found ready
}

// opts is ringev.New's options for m.
func (m mode) opts() []ringev.Option {
	var o []ringev.Option
	if m.fresh {
		o = append(o, ringev.WithFreshReadiness())
	}
	if m.all {
		o = append(o, ringev.WithDispatchAll())
	}
	return o
}

var (
	modeDefault  = mode{name: "Default"}
	modeFresh    = mode{name: "FreshReadiness", fresh: true}
	modeAll      = mode{name: "DispatchAll", all: true}
	modeFreshAll = mode{name: "FreshAll", fresh: true, all: true}
	// allModes is every dispatch mode.
	allModes = []mode{modeDefault, modeFresh, modeAll, modeFreshAll}
)

// withFallback is every registered backend and uringFallback.
func withFallback() []string { return append(ringev.Backends(), uringFallback) }

// backendsBut returns ringev.Backends() without the one named.
func backendsBut(name string) []string {
	var out []string
	for _, b := range ringev.Backends() {
		if b != name {
			out = append(out, b)
		}
	}
	return out
}

// eachBackend runs fn as one subtest per backend, named after it.
func eachBackend(t *testing.T, backends []string, fn func(t *testing.T, backend string)) {
	t.Helper()
	if len(backends) == 0 {
		t.Fatal("no backends (ringev.Backends() is empty)")
	}
	for _, b := range backends {
		t.Run(b, func(t *testing.T) { fn(t, b) })
	}
}

// eachSocketpair runs fn as one subtest per backend of ringev.Backends(), with a connected
// Unix socket pair (a, b) and a loop (newLoop) on that backend; the sockets are made first, so
// that cleanup closes the loop before them.
func eachSocketpair(t *testing.T, fn func(t *testing.T, l *ringev.Loop, a, b int)) {
	t.Helper()
	eachBackend(t, ringev.Backends(), func(t *testing.T, backend string) {
		a, b := testutil.Socketpair(t)
		fn(t, newLoop(t, backend), a, b)
	})
}

// eachMode runs fn as one subtest per backend and mode, named "backend/mode".
func eachMode(t *testing.T, backends []string, modes []mode, fn func(t *testing.T, backend string, m mode)) {
	t.Helper()
	eachBackend(t, backends, func(t *testing.T, backend string) {
		for _, m := range modes {
			t.Run(m.name, func(t *testing.T) { fn(t, backend, m) })
		}
	})
}

// newLoop creates a loop on backend (uringFallback included) with opts, owned by the calling
// (sub)test goroutine, checks that it runs that backend, and closes it at cleanup (a test that
// closes it itself gets nil from that second Close). A backend that cannot be set up here skips
// the test (requireNew). Create the test's fds before the loop, so that cleanup closes the loop
// first. Its loops send the handlers' loop I/O through the ring whenever a look can ride
// (WithIOPath(IOPathRing), first, so that opts can say otherwise), so that the tests of that
// path test it on every machine: by default the loop's methods are read(2)/write(2)
// (iopath_test.go tests the default).
func newLoop(tb testing.TB, backend string, opts ...ringev.Option) *ringev.Loop {
	tb.Helper()
	name := backend
	if backend == uringFallback {
		name = "uring"
		defer ringev.SetUringFallback(true)()
	}
	if backend == uringFixed {
		name = "uring"
	}
	l, err := ringev.New(append([]ringev.Option{ringev.WithBackend(name), ringev.WithIOPath(ringev.IOPathRing)}, opts...)...)
	requireNew(tb, backend, err)
	tb.Cleanup(func() {
		if err := l.Close(); err != nil {
			tb.Errorf("Loop.Close: %v", err)
		}
	})
	if got := l.Backend(); got != name {
		tb.Fatalf("New(WithBackend(%q)).Backend() = %q", name, got)
	}
	return l
}

// requireNew fails the test if ringev.New for backend returned err, except where io_uring is
// switched off (EPERM: kernel.io_uring_disabled, seccomp) or missing (ENOSYS): then it skips,
// naming the reason. Every other error of New is a failure, never a skip.
func requireNew(tb testing.TB, backend string, err error) {
	tb.Helper()
	if err == nil {
		return
	}
	testutil.SkipIfIOUringUnavailable(tb, err, "backend "+backend)
	tb.Fatalf("New(WithBackend(%q)): %v", backend, err)
}

// addFd is Loop.AddFd that fails the test on error.
func addFd(t testing.TB, l *ringev.Loop, fd int, flags ringev.Flags, h ringev.FdHandler) *ringev.FdEvent {
	t.Helper()
	ev, err := l.AddFd(fd, flags, h)
	if err != nil {
		t.Fatalf("AddFd(%d, %v): %v", fd, flags, err)
	}
	return ev
}

// setFlags is FdEvent.SetFlags that fails the test on error or if Flags() is not f afterwards.
func setFlags(t *testing.T, ev *ringev.FdEvent, f ringev.Flags) {
	t.Helper()
	if err := ev.SetFlags(f); err != nil {
		t.Fatalf("SetFlags(%v) on fd %d: %v", f, ev.Fd(), err)
	}
	if got := ev.Flags(); got != f {
		t.Fatalf("after SetFlags(%v), Flags() = %v", f, got)
	}
}

// never is a handler that must never run: it fails the test if it does.
func never(t *testing.T, what string) ringev.FdHandler {
	return func(ev *ringev.FdEvent, f ringev.Flags) {
		t.Errorf("%s: handler of fd %d ran with %v; it must never run", what, ev.Fd(), f)
	}
}

// always makes an fd that stays readable for the rest of the test (an eventfd whose count is
// never read), watches it with a handler that counts its runs in runs, and hands it to the
// loop's auto-close.
func always(t testing.TB, l *ringev.Loop, runs *atomic.Int64) {
	t.Helper()
	efd, err := unix.Eventfd(1, unix.EFD_NONBLOCK|unix.EFD_CLOEXEC)
	if err != nil {
		t.Fatalf("eventfd: %v", err)
	}
	ev := addFd(t, l, efd, ringev.Read, func(*ringev.FdEvent, ringev.Flags) { runs.Add(1) })
	ev.SetAutoClose(true)
}

// turns is what runTimer saw: the Once calls it made, the errors they returned, and the CPU
// time and wall time they took.
type turns struct {
	onces     int
	errs      []error
	cpu, wall time.Duration
}

// asleep reports whether the loop slept through a run until a timer due in d: at most maxOnces
// Once calls, and less than a tenth of d in CPU time (a loop spinning inside one Once uses all
// of d that the machine gives it; a sleeping one a few µs).
func (r turns) asleep(d time.Duration, maxOnces int) bool {
	return r.onces <= maxOnces && r.cpu < d/10
}

// runTimer adds a timer due in d and calls Once (each call guarded by deadline) until it has run,
// recording the errors Once returned on the way (the loop goes on), and the loop thread's CPU time
// (the loop's goroutine is locked to its thread). It fails the test if that takes more than
// maxOnces Once calls (0: no bound but deadline), more than deadline, or if more than 100 Once
// calls fail.
func runTimer(t testing.TB, l *ringev.Loop, d time.Duration, maxOnces int) turns {
	t.Helper()
	fired := false
	tm := l.AddTimer(d, func(*ringev.Timer) { fired = true })
	if tm == nil {
		t.Fatal("AddTimer returned nil")
	}
	cpu0, wall0 := testutil.ThreadCPU(t), time.Now()
	var r turns
	for !fired {
		if maxOnces > 0 && r.onces >= maxOnces {
			tm.Stop()
			t.Fatalf("%d Once calls ran something other than the %v quiet-period timer (errors: %v): a handler that should not be ready ran, or the loop spins", r.onces, d, r.errs)
		}
		if time.Since(wall0) > deadline {
			t.Fatalf("a %v timer has not run after %v (%d Once calls)", d, deadline, r.onces)
		}
		if err := onceErr(t, l); err != nil {
			r.errs = append(r.errs, err)
			if len(r.errs) > 100 {
				t.Fatalf("Once keeps failing: %v", err)
			}
		}
		r.onces++
	}
	r.cpu, r.wall = testutil.ThreadCPU(t)-cpu0, time.Since(wall0)
	return r
}

// settle is runTimer with a bound of maxOnces Once calls that also fails the test if the loop's
// thread burns more than half of the time in CPU meanwhile (a loop that spins inside one Once
// shows up there, not in the count). It returns the errors Once returned on the way.
func settle(t testing.TB, l *ringev.Loop, d time.Duration, maxOnces int) []error {
	t.Helper()
	r := runTimer(t, l, d, maxOnces)
	if r.cpu > r.wall/2 && r.cpu > 20*time.Millisecond {
		t.Fatalf("the loop spins: its thread used %v of CPU in a %v quiet period (%d Once calls)", r.cpu, r.wall, r.onces)
	}
	return r.errs
}

// quiet shows that nothing is ready on l: the first Once runs a timer due in quietFor, without
// an error. Any handler that runs instead fails the test.
func quiet(t testing.TB, l *ringev.Loop) {
	t.Helper()
	if errs := settle(t, l, quietFor, 1); len(errs) > 0 {
		t.Fatalf("Once in a quiet period: %v", errs[0])
	}
}

// drainUntil runs l (as until does) while reading and dropping what the non-blocking fd has
// (a peer that reads, so that a writer waiting for room gets it), until cond holds.
func drainUntil(t testing.TB, l *ringev.Loop, fd int, cond func() bool) {
	t.Helper()
	buf := make([]byte, 256<<10)
	until(t, l, func() bool {
		for {
			if n, err := unix.Read(fd, buf); n <= 0 || err != nil {
				break
			}
		}
		return cond()
	})
}

// await polls cond (every 100 µs) until it holds, or fails the test at deadline.
func await(t testing.TB, what string, cond func() bool) {
	t.Helper()
	end := time.Now().Add(deadline)
	for !cond() {
		if time.Now().After(end) {
			t.Fatalf("%s: not within %v", what, deadline)
		}
		time.Sleep(100 * time.Microsecond)
	}
}

// recorder is a Callback that records every completion (a copy of each).
type recorder struct {
	got  []ringev.Completion
	bufs [][]byte // copies of Buf
}

func (r *recorder) cb(c *ringev.Completion) {
	r.got = append(r.got, *c)
	r.bufs = append(r.bufs, append([]byte(nil), c.Buf...))
	c.ReleaseBuffer()
}

func (r *recorder) n() int { return len(r.got) }

// last returns the last completion, failing if there is none.
func (r *recorder) last(t *testing.T) ringev.Completion {
	t.Helper()
	if len(r.got) == 0 {
		t.Fatal("no completion")
	}
	return r.got[len(r.got)-1]
}

// untilWaited runs l until its backend has waited once more (ringev.Waits advanced). Then the
// requests made before it are in the kernel (on uring that wait's io_uring_enter(2) submitted
// them) or wait for readiness (the emulation), and the fd events added before it are armed.
func untilWaited(t testing.TB, l *ringev.Loop) {
	t.Helper()
	w0 := ringev.Waits(l)
	untilBounded(t, l, "the loop's next wait", func() bool { return ringev.Waits(l) > w0 })
}

// untilBounded is until for a condition that no handler's run follows (what the backend saw in
// a wait): a timer bounds each wait that would block (1 ms, doubling while a Once runs the
// timer instead of waiting), so that Once returns and cond is checked; it only ends a wait, it
// never stands in for one.
func untilBounded(t testing.TB, l *ringev.Loop, what string, cond func() bool) {
	t.Helper()
	d := time.Millisecond
	var tm *ringev.Timer
	armed := false
	untilFor(t, l, deadline, what, func() bool {
		if cond() {
			return true
		}
		if !armed {
			armed = true
			tm = l.AddTimer(d, func(*ringev.Timer) { armed = false })
			d *= 2
		}
		return false
	})
	if tm != nil {
		tm.Stop()
	}
}

// hangGrace is how long a guarded call may stay blocked after its deadline and the wake-up that
// follows it before the test binary panics: a loop that neither returns nor can be woken hangs.
const hangGrace = 10 * time.Second

// watchdog ends a guarded call that runs past its deadline: it calls wake once at the deadline
// and panics hangGrace later if the call has still not returned.
type watchdog struct {
	done    chan struct{}
	expired atomic.Bool
}

func startWatchdog(what string, d time.Duration, wake func()) *watchdog {
	w := &watchdog{done: make(chan struct{})}
	go func() {
		tm := time.NewTimer(d)
		defer tm.Stop()
		select {
		case <-w.done:
			return
		case <-tm.C:
		}
		w.expired.Store(true)
		wake()
		g := time.NewTimer(hangGrace)
		defer g.Stop()
		select {
		case <-w.done:
		case <-g.C:
			panic(fmt.Sprintf("%s: still blocked %v after its %v deadline and after the loop was woken: the loop hangs", what, hangGrace, d))
		}
	}()
	return w
}

func (w *watchdog) stop() { close(w.done) }

// onceErr calls l.Once one time and returns its error. If Once has not returned by the
// deadline, the loop is woken with a posted no-op and the test fails (Fatal) once Once returns.
func onceErr(t testing.TB, l *ringev.Loop) error {
	t.Helper()
	wd := startWatchdog(t.Name()+": Loop.Once", deadline, func() { _ = l.Post(func() {}) })
	var err error
	func() {
		defer wd.stop() // also when a handler panics through Once
		err = l.Once()
	}()
	if wd.expired.Load() {
		t.Fatalf("Loop.Once did not return within %v (returned %v only after a posted wake-up)", deadline, err)
	}
	return err
}

// onceRecovering calls l.Once one time (onceErr) and recovers a panic of boom, a handler's,
// counting it in panics; any other panic goes on. It fails the test (Fatal) if Once returns an
// error.
func onceRecovering(t testing.TB, l *ringev.Loop, boom any, panics *int) {
	t.Helper()
	defer func() {
		if p := recover(); p != nil {
			if p != boom {
				panic(p)
			}
			*panics++
		}
	}()
	if err := onceErr(t, l); err != nil {
		t.Fatalf("Once (after %d panics): %v", *panics, err)
	}
}

// once calls l.Once one time and fails the test (Fatal) if it returns an error or does not
// return within the deadline.
func once(t testing.TB, l *ringev.Loop) {
	t.Helper()
	if err := onceErr(t, l); err != nil {
		t.Fatalf("Loop.Once: %v", err)
	}
}

// onceWithin calls Once once, with a timer due in d so that it waits at most about that long:
// requests made before it reach the kernel (or the emulation's wait) before the test goes on.
func onceWithin(t testing.TB, l *ringev.Loop, d time.Duration) {
	t.Helper()
	l.AddTimer(d, func(*ringev.Timer) {})
	once(t, l)
}

// until calls Once until cond holds (cond is checked before each call, so no call is made if
// it already holds) and returns how many Once calls it made. It fails the test (Fatal) if Once
// returns an error or cond does not hold within the deadline.
func until(t testing.TB, l *ringev.Loop, cond func() bool) int {
	t.Helper()
	return untilFor(t, l, deadline, "the condition", cond)
}

// untilFor is until with its own deadline d (a longer one where a wait needs it) and what it
// waits for, which the failure names. A Once blocked at the deadline is woken with a posted
// no-op first.
func untilFor(t testing.TB, l *ringev.Loop, d time.Duration, what string, cond func() bool) int {
	t.Helper()
	wd := startWatchdog(t.Name()+": waiting for "+what, d, func() { _ = l.Post(func() {}) })
	defer wd.stop()
	n := 0
	for !cond() {
		if wd.expired.Load() {
			t.Fatalf("%s: not within %v (%d Once calls)", what, d, n)
		}
		if err := l.Once(); err != nil {
			t.Fatalf("waiting for %s: Loop.Once (call %d): %v", what, n+1, err)
		}
		n++
	}
	return n
}

// run calls l.Run and returns its error. If Run has not returned by d it is stopped with
// l.Stop and the test is marked failed (Error, so the caller still sees Run's result).
func run(t testing.TB, l *ringev.Loop, d time.Duration) error {
	t.Helper()
	wd := startWatchdog(t.Name()+": Loop.Run", d, l.Stop)
	var err error
	func() {
		defer wd.stop() // also when a handler panics through Run
		err = l.Run()
	}()
	if wd.expired.Load() {
		t.Errorf("Loop.Run did not return within %v; it returned %v only after Stop", d, err)
	}
	return err
}

// wantOne checks that exactly one completion arrived, with err nil and N n.
func wantOne(t *testing.T, r *recorder, n int) ringev.Completion {
	t.Helper()
	if len(r.got) != 1 {
		t.Fatalf("%d completions, want 1: %+v", len(r.got), r.got)
	}
	c := r.got[0]
	if c.Err != nil || c.N != n {
		t.Fatalf("completion: N %d err %v, want N %d, no error", c.N, c.Err, n)
	}
	return c
}

// wantOneErr checks that exactly one completion arrived, with an error wrapping errno.
func wantOneErr(t *testing.T, r *recorder, errno unix.Errno) ringev.Completion {
	t.Helper()
	if len(r.got) != 1 {
		t.Fatalf("%d completions, want 1 with %v: %+v", len(r.got), errno, r.got)
	}
	c := r.got[0]
	if !errors.Is(c.Err, errno) {
		t.Fatalf("completion: N %#x err %v, want %v", c.N, c.Err, errno)
	}
	return c
}

// must fails the test if a request call failed: must(t)(l.Recv(...)).
func must(t *testing.T) func(ringev.Request, error) ringev.Request {
	return func(h ringev.Request, err error) ringev.Request {
		t.Helper()
		if err != nil {
			t.Fatalf("request: %v", err)
		}
		return h
	}
}

// stopped reports whether t has ended (t.Context is done): a goroutine that spins until the
// loop gets somewhere checks it, so that it stops when the test failed first.
func stopped(t testing.TB) bool { return t.Context().Err() != nil }

// sigGuard subscribes to sigs through os/signal for the rest of the test and returns the
// channel: a raise then never falls through to the default action (ending the test binary),
// and the test can see that a delivery reached the process.
func sigGuard(t testing.TB, sigs ...os.Signal) chan os.Signal {
	t.Helper()
	ch := make(chan os.Signal, 1024)
	signal.Notify(ch, sigs...)
	t.Cleanup(func() { signal.Stop(ch) })
	return ch
}

// raise sends sig to this process and waits (deadline) until the guard channel has it.
func raise(t testing.TB, guard chan os.Signal, sig syscall.Signal) {
	t.Helper()
	if err := unix.Kill(os.Getpid(), sig); err != nil {
		t.Fatalf("kill(%v): %v", sig, err)
	}
	timeout := time.After(deadline)
	for {
		select {
		case got := <-guard:
			if got == sig {
				return
			}
		case <-timeout:
			t.Fatalf("%v raised but not delivered to the process within %v", sig, deadline)
		}
	}
}

// speed is tevent's fd_speed1 (fd_speed2, 3 with idle handler pairs) on one loop: a pipe, a
// Read handler reading one byte and a Write handler writing one, through the loop methods
// (viaLoop) or the package functions (read(2), write(2)). The bytes written count up; the
// reader checks each. Nothing it does allocates. Benchmarks use it as it is.
type speed struct {
	l       *ringev.Loop
	r, w    int
	viaLoop bool
	rbuf    [1]byte
	wbuf    [1]byte
	next    byte // the next byte to write
	want    byte // the next byte the reader must see
	reads   int  // bytes read
	writes  int  // bytes written
	onces   int  // Once calls by run
	idle    int  // calls of handlers that must never run
	bad     int  // handler calls that did not move exactly one (right) byte, or got wrong flags
	badWhat string
	badN    int
	badErr  error
	badF    ringev.Flags
}

// newSpeed makes a speed loop on backend with idle idle-handler pairs (a Write handler on the
// read end, a Read handler on the write end).
func newSpeed(tb testing.TB, backend string, viaLoop bool, idle int, opts ...ringev.Option) *speed {
	tb.Helper()
	r, w := testutil.Pipe(tb)
	s := &speed{l: newLoop(tb, backend, opts...), r: r, w: w, viaLoop: viaLoop}
	addFd(tb, s.l, r, ringev.Read, s.onRead)
	addFd(tb, s.l, w, ringev.Write, s.onWrite)
	for range idle {
		addFd(tb, s.l, r, ringev.Write, s.onIdle)
		addFd(tb, s.l, w, ringev.Read, s.onIdle)
	}
	return s
}

func (s *speed) fail(what string, f ringev.Flags, n int, err error) {
	if s.bad == 0 {
		s.badWhat, s.badF, s.badN, s.badErr = what, f, n, err
	}
	s.bad++
}

func (s *speed) onRead(_ *ringev.FdEvent, f ringev.Flags) {
	var n int
	var err error
	if s.viaLoop {
		n, err = s.l.ReadNonblocking(s.r, s.rbuf[:])
	} else {
		n, err = ringev.ReadNonblocking(s.r, s.rbuf[:])
	}
	switch {
	case f != ringev.Read || n != 1 || err != nil:
		s.fail("read", f, n, err)
		return
	case s.rbuf[0] != s.want:
		s.fail("read a wrong byte", f, int(s.rbuf[0]), nil)
	}
	s.want = s.rbuf[0] + 1
	s.reads++
}

func (s *speed) onWrite(_ *ringev.FdEvent, f ringev.Flags) {
	s.wbuf[0] = s.next
	var n int
	var err error
	if s.viaLoop {
		n, err = s.l.WriteNonblocking(s.w, s.wbuf[:])
	} else {
		n, err = ringev.WriteNonblocking(s.w, s.wbuf[:])
	}
	if f != ringev.Write || n != 1 || err != nil {
		s.fail("write", f, n, err)
		return
	}
	s.next++
	s.writes++
}

func (s *speed) onIdle(*ringev.FdEvent, ringev.Flags) { s.idle++ }

// run turns the loop until n more bytes were read (at most 4n+64 Onces), failing on a bad or
// idle handler call.
func (s *speed) run(tb testing.TB, n int) {
	target := s.reads + n
	for i := 0; s.reads < target; i++ {
		if s.bad > 0 || s.idle > 0 || i > 4*n+64 {
			tb.Fatalf("after %d Onces: %d of %d bytes read; %d idle handler calls; %d bad handler calls, the first: %s: flags %v, n %d, err %v",
				i, n-(target-s.reads), n, s.idle, s.bad, s.badWhat, s.badF, s.badN, s.badErr)
		}
		if err := s.l.Once(); err != nil {
			tb.Fatalf("Once: %v", err)
		}
		s.onces++
	}
}

// check fails unless every handler call moved its byte, no idle handler ran, and the bytes
// written and not read are still in the pipe.
func (s *speed) check(t *testing.T) {
	t.Helper()
	if s.bad > 0 || s.idle > 0 {
		t.Fatalf("%d idle handler calls; %d bad handler calls, the first: %s: flags %v, n %d, err %v",
			s.idle, s.bad, s.badWhat, s.badF, s.badN, s.badErr)
	}
	if left := testutil.Drain(t, s.r); s.writes-s.reads != left {
		t.Fatalf("%d bytes written, %d read, %d left in the pipe", s.writes, s.reads, left)
	}
}

// keepAlive gives l a timer far in the future, so that Once blocks (and a Post wakes it)
// instead of returning ErrNothingToDo.
func keepAlive(tb testing.TB, l *ringev.Loop) {
	tb.Helper()
	tm := l.AddTimer(time.Hour, func(*ringev.Timer) {})
	if tm == nil {
		tb.Fatal("AddTimer returned nil")
	}
	tb.Cleanup(func() { tm.Stop() })
}

// onOtherGoroutine runs f on a new goroutine and waits for it (with a deadline).
func onOtherGoroutine(t *testing.T, f func()) {
	t.Helper()
	done := make(chan struct{})
	go func() { defer close(done); f() }()
	select {
	case <-done:
	case <-time.After(deadline):
		t.Fatal("call from another goroutine did not return within the deadline")
	}
}

// growStack recurses n frames of 1 KiB each: a goroutine stack that small moves (the runtime
// copies it to a larger one) on the way down.
//
//go:noinline
func growStack(n int, at func()) byte {
	var pad [1024]byte
	pad[n%len(pad)] = byte(n)
	if n == 0 {
		at()
		return pad[0]
	}
	return growStack(n-1, at) + pad[n%len(pad)]
}

// requireOwnerCheck skips the test where the owner check is off: it compares the caller's stack
// with the owner's, found by assembly that reads the runtime's g (amd64 and arm64 only). The
// nesting guard's check of a request turn's frame needs the same (and the frame pointers Go
// keeps there): elsewhere it takes any turn on the stack for the loop's.
func requireOwnerCheck(t testing.TB) {
	t.Helper()
	if runtime.GOARCH != "amd64" && runtime.GOARCH != "arm64" {
		t.Skip("the owner check is off on " + runtime.GOARCH + ": no assembly reads the runtime's g there")
	}
}

// requireExactSignals skips the test where WithExactSignals has no signal handler for the
// architecture (it has one for amd64).
func requireExactSignals(t testing.TB) {
	t.Helper()
	if runtime.GOARCH != "amd64" {
		t.Skip("WithExactSignals: no exact-signal handler for " + runtime.GOARCH)
	}
}

// requireBatchWait skips the test where the uring backend cannot batch its waits
// (WithBatchWait needs IORING_FEAT_MIN_TIMEOUT, Linux 6.12: CheckBatchWait's error names it),
// or io_uring cannot be used at all; any other error fails it.
func requireBatchWait(t *testing.T) {
	t.Helper()
	err := ringev.CheckBatchWait()
	testutil.SkipIfIOUringUnavailable(t, err, "WithBatchWait")
	testutil.SkipIfFeatureMissing(t, err)
	if err != nil {
		t.Fatalf("CheckBatchWait: %v", err)
	}
}

// registeredFiles is what requireRegisteredFiles found, once per process: why the uring
// backend cannot make a registered-file table here ("" when it can), or the error of the probe.
var registeredFiles struct {
	once sync.Once
	skip string
	err  error
}

// requireRegisteredFiles skips the test where the uring backend cannot make a registered-file
// table (IORING_RSRC_REGISTER_SPARSE, Linux 5.19), refuses one (a kernel that releases the
// file of an emptied slot a second late, before 6.4), or cannot be created at all; it fails the
// test if the probe failed for another reason. It leaves no fd open.
func requireRegisteredFiles(t *testing.T) {
	t.Helper()
	registeredFiles.once.Do(func() {
		l, err := ringev.New(ringev.WithBackend("uring"))
		if errors.Is(err, unix.EPERM) || errors.Is(err, unix.ENOSYS) {
			registeredFiles.skip = fmt.Sprintf("io_uring is not available here: %v", err)
			return
		}
		if err != nil {
			registeredFiles.err = err
			return
		}
		defer l.Close()
		var p [2]int
		if err := unix.Pipe2(p[:], unix.O_NONBLOCK|unix.O_CLOEXEC); err != nil {
			registeredFiles.err = err
			return
		}
		err = l.RegisterFile(p[0])
		unix.Close(p[0])
		unix.Close(p[1])
		switch {
		case errors.Is(err, unix.EINVAL):
			registeredFiles.skip = fmt.Sprintf("IORING_RSRC_REGISTER_SPARSE (Linux 5.19): %v", err)
		case errors.Is(err, unix.EOPNOTSUPP):
			registeredFiles.skip = err.Error() // a kernel that releases an emptied slot's file late
		case err != nil:
			registeredFiles.err = fmt.Errorf("RegisterFile: %w", err)
		}
	})
	if registeredFiles.err != nil {
		t.Fatalf("probing for registered files: %v", registeredFiles.err)
	}
	if registeredFiles.skip != "" {
		t.Skip(registeredFiles.skip)
	}
}

// register puts fds in l's registered-file table (RegisterFile), failing the test on an error;
// on uring it first skips the test where the kernel has no sparse table (requireRegisteredFiles).
func register(t *testing.T, l *ringev.Loop, fds ...int) {
	t.Helper()
	if l.Backend() == "uring" {
		requireRegisteredFiles(t)
	}
	for _, fd := range fds {
		if err := l.RegisterFile(fd); err != nil {
			t.Fatalf("RegisterFile(%d): %v", fd, err)
		}
	}
}

// registerBuffers is Loop.RegisterBuffers that fails the test on error, or skips it where the
// kernel refuses to pin the memory (testutil.SkipIfFixedBuffersRefused).
func registerBuffers(t *testing.T, l *ringev.Loop, n, size int) []ringev.FixedBuffer {
	t.Helper()
	bufs, err := l.RegisterBuffers(n, size)
	testutil.SkipIfFixedBuffersRefused(t, err)
	if err != nil {
		t.Fatalf("RegisterBuffers: %v", err)
	}
	return bufs
}

// requireOp skips the test where the uring backend cannot run requests of op on this kernel
// (CheckOp's error wraps EOPNOTSUPP and names the feature); any other error fails it.
func requireOp(t *testing.T, op ringev.Op) {
	t.Helper()
	l := newLoop(t, "uring") // skips where io_uring is not available
	err := l.CheckOp(op)
	testutil.SkipIfFeatureMissing(t, err)
	if err != nil {
		t.Fatalf("CheckOp(%v): %v", op, err)
	}
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
}

// requireMsgRing skips the test when the kernel lacks IORING_OP_MSG_RING (Linux 5.18).
func requireMsgRing(t *testing.T) {
	t.Helper()
	runtime.LockOSThread() // a SINGLE_ISSUER ring's io_uring_register(2) is its thread's (EEXIST on 6.1)
	defer runtime.UnlockOSThread()
	r, err := uring.New(uring.WithEntries(2))
	testutil.SkipIfIOUringUnavailable(t, err, "IORING_OP_MSG_RING")
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	p, err := r.Probe()
	if err != nil {
		t.Skipf("IORING_REGISTER_PROBE (5.6) unavailable: %v", err)
	}
	if err := p.RequireOp(uring.OpMsgRing); err != nil {
		t.Skip(err)
	}
}

// requirePollFirst skips the test on a kernel without IORING_RECVSEND_POLL_FIRST (Linux 5.19;
// its witness, as the loop's, is IORING_OP_SOCKET).
func requirePollFirst(t *testing.T) {
	t.Helper()
	newLoop(t, "uring").Close() // skips where io_uring is not available
	r, err := uring.New(uring.WithEntries(4))
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	p, err := r.Probe()
	if err != nil || !p.OpSupported(uring.OpSocket) {
		t.Skipf("IORING_RECVSEND_POLL_FIRST (Linux 5.19): no IORING_OP_SOCKET in the probe (err %v)", err)
	}
}

// blockAfter is how long the guards let a handler's non-blocking read or write run before they
// call it blocked and unblock it: the suite's deadline, a hang guard, not a speed bound (the call
// should take microseconds; a slow one that still returns EAGAIN is not blocked).
const blockAfter = deadline

var (
	rideProbeOnce sync.Once
	noRide        string // why handler I/O cannot go through the ring here; "" when it can
	rideProbeErr  error  // the probe failed for another reason than a missing feature
)

// rideMissing probes (once) whether this kernel has IORING_OP_EPOLL_WAIT, which the ring path
// of the loop methods needs, and returns why not ("" when it has). io_uring switched off or
// missing (EPERM, ENOSYS) and the op missing are reasons; any other failure is rideProbeErr.
func rideMissing() string {
	rideProbeOnce.Do(func() {
		runtime.LockOSThread() // a SINGLE_ISSUER ring belongs to its thread
		defer runtime.UnlockOSThread()
		r, err := uring.New(uring.WithEntries(4))
		if errors.Is(err, unix.EPERM) || errors.Is(err, unix.ENOSYS) {
			noRide = fmt.Sprintf("io_uring is not available: %v", err)
			return
		}
		if err != nil {
			rideProbeErr = err
			return
		}
		defer r.Close()
		p, err := r.Probe()
		if err != nil {
			rideProbeErr = err
			return
		}
		if err := p.RequireOp(uring.OpEpollWait); errors.Is(err, uring.ErrOpNotSupported) {
			noRide = err.Error()
		} else if err != nil {
			rideProbeErr = err
		}
	})
	return noRide
}

// requireRide skips the test when handler I/O cannot go through the ring here, and fails it
// when the probe itself failed.
func requireRide(t *testing.T) {
	t.Helper()
	why := rideMissing()
	if rideProbeErr != nil {
		t.Fatalf("probing for IORING_OP_EPOLL_WAIT: %v", rideProbeErr)
	}
	if why != "" {
		t.Skipf("handler I/O through the ring needs IORING_OP_EPOLL_WAIT (Linux 6.15): %s", why)
	}
}

// rescue calls unblock every 20 ms, from d on, until stop is closed; it reports whether it
// had to. unblock makes a blocked read or write end (a byte into the pipe, or room in it).
func rescue(d time.Duration, unblock func(), stop <-chan struct{}) (fired bool) {
	tm := time.NewTimer(d)
	defer tm.Stop()
	select {
	case <-stop:
		return false
	case <-tm.C:
	}
	tick := time.NewTicker(20 * time.Millisecond)
	defer tick.Stop()
	for {
		unblock()
		select {
		case <-stop:
			return true
		case <-tick.C:
		}
	}
}

// noBlock runs call, a handler's non-blocking read or write; if it has not returned after
// blockAfter, unblock is called (every 20 ms until it returns) so that it ends. It reports
// whether unblock was called: then the call blocked, unless it still returned EAGAIN (it was
// only slow).
func noBlock(unblock func(), call func()) (blocked bool) {
	stop := make(chan struct{})
	res := make(chan bool, 1)
	go func() { res <- rescue(blockAfter, unblock, stop) }()
	call()
	close(stop)
	return <-res
}

// watch guards a test's turns of l: if the test has not ended after d, it wakes the loop (a
// posted no-op) and calls unblock every 20 ms, so that a handler's read or write that blocks (or
// a wait that hangs) ends; the test then fails, at cleanup, saying so. Call it after creating l
// (its cleanup runs before l's).
func watch(t *testing.T, l *ringev.Loop, d time.Duration, unblock func()) {
	t.Helper()
	stop := make(chan struct{})
	res := make(chan bool, 1)
	go func() {
		res <- rescue(d, func() {
			_ = l.Post(func() {})
			if unblock != nil {
				unblock()
			}
		}, stop)
	}()
	t.Cleanup(func() {
		close(stop)
		if <-res {
			t.Errorf("the loop did not finish within %v: a handler's Loop.ReadNonblocking or WriteNonblocking (or a wait) blocked, and the test had to unblock it", d)
		}
	})
}

// unblockRead returns a function that writes one byte to w (which lets a read blocked on its
// pipe end).
func unblockRead(w int) func() { return func() { unix.Write(w, []byte{'!'}) } }

// unblockWrite returns a function that reads from r (which makes room for a write blocked on
// its pipe).
func unblockWrite(r int) func() {
	return func() {
		var b [4096]byte
		unix.Read(r, b[:])
	}
}

// echoConn is a request user as the docs advise: one Callback (a method value) made per
// connection, reused for every request.
type echoConn struct {
	l          *ringev.Loop
	a, b       int
	buf        []byte
	msg        []byte
	cb         ringev.Callback
	sent, recv int
	err        error
}

func (c *echoConn) onDone(x *ringev.Completion) {
	if x.Err != nil {
		c.err = x.Err
		return
	}
	switch x.Token {
	case 1:
		c.sent++
	case 2:
		c.recv++
	}
}

// round sends one message from a to b and receives it, through requests.
func (c *echoConn) round() {
	sent, recv := c.sent, c.recv
	if _, err := c.l.Send(c.a, c.msg, 0, c.cb, 1); err != nil {
		c.err = err
		return
	}
	if _, err := c.l.Recv(c.b, c.buf, 0, c.cb, 2); err != nil {
		c.err = err
		return
	}
	for i := 0; i < 1000 && (c.sent == sent || c.recv == recv) && c.err == nil; i++ {
		if err := c.l.Once(); err != nil {
			c.err = err
		}
	}
}

// guard ends a test loop that hangs: after the deadline it posts, every 100 ms, a function
// that sets *errp (on the loop's goroutine), which wakes a blocked Once and stops the round.
// The returned function stops it.
func guard(l *ringev.Loop, errp *error) func() {
	done := make(chan struct{})
	go func() {
		select {
		case <-done:
			return
		case <-time.After(deadline):
		}
		tick := time.NewTicker(100 * time.Millisecond)
		defer tick.Stop()
		for {
			l.Post(func() { *errp = errors.New("the loop made no progress within the deadline") })
			select {
			case <-done:
				return
			case <-tick.C:
			}
		}
	}()
	return func() { close(done) }
}

// callsFromAnotherGoroutine runs round over and over on another goroutine until the test ends
// or round returns false; cleanup fails the test if a round has not returned within the
// deadline then.
func callsFromAnotherGoroutine(t *testing.T, round func() bool) {
	stop, done := make(chan struct{}), make(chan struct{})
	t.Cleanup(func() { // also after a failure: the goroutine must not outlive the test
		close(stop)
		select {
		case <-done:
		case <-time.After(deadline):
			t.Errorf("the other goroutine's calls did not return within %v", deadline)
		}
	})
	go func() {
		defer close(done)
		for {
			select {
			case <-stop:
				return
			default:
			}
			if !round() {
				return
			}
		}
	}()
}
