//go:build linux

package ringev_test

// The helpers of the root package's tests, in one family: loops and their backends and modes,
// fds the test owns, waits on a loop, quiet periods, request recorders, sockets, signals, and
// one skip helper per kernel feature. Lower-level fd helpers that other packages share
// (testutil.Pipe, Socketpair, Write, Drain) come from internal/testutil; a helper that only one
// test file needs stays next to its tests.
//
// Every wait has a deadline (deadline) that only turns a hang into a failure. Behaviour is
// asserted with counts (handler runs, Once calls, waits), never with how long something took,
// except where the contract states the bound itself (a file released within 100 ms).

import (
	"errors"
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
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
const deadline = 5 * time.Second

// releaseWithin is how soon a socket's peer must read EOF after the last close of the other end
// (loop contract item 5: the file is really released).
const releaseWithin = 100 * time.Millisecond

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

// renumber moves fd, which the test owns, to fd number num with dup3(2) (closing whatever had
// num) and closes fd's old number; the result is owned by the test.
func renumber(t testing.TB, fd, num int) int {
	t.Helper()
	if err := unix.Dup3(fd, num, unix.O_CLOEXEC); err != nil {
		t.Fatalf("dup3(%d, %d): %v", fd, num, err)
	}
	testutil.Close(t, fd)
	return testutil.Own(t, num)
}

// socketpairAt is testutil.Socketpair whose first end has fd number num (just freed): the
// kernel hands out the lowest free number, and if something else took it meanwhile the end is
// moved there with dup3(2). It reports whether the number was reused without dup3.
func socketpairAt(t testing.TB, num int) (a, b int, natural bool) {
	t.Helper()
	a, b = testutil.Socketpair(t)
	switch num {
	case a:
		return a, b, true
	case b: // the kernel gave the free number to the other end: swap roles
		return b, a, true
	}
	return renumber(t, a, num), b, false
}

// pipeAt is testutil.Pipe whose read end has fd number num (just freed), as socketpairAt. The
// returned ends are the test's: the caller hands r over if the loop auto-closes it.
func pipeAt(t testing.TB, num int) (r, w int, natural bool) {
	t.Helper()
	r, w = testutil.Pipe(t)
	if r == num {
		return r, w, true
	}
	if w == num { // move the write end out of the way first
		fd, err := unix.FcntlInt(uintptr(w), unix.F_DUPFD_CLOEXEC, 0)
		if err != nil {
			t.Fatalf("F_DUPFD_CLOEXEC: %v", err)
		}
		testutil.Close(t, w)
		w = testutil.Own(t, fd)
	}
	return renumber(t, r, num), w, false
}

// pipes makes n nonblocking pipes (testutil.Pipe), each with one unread byte when filled.
func pipes(t testing.TB, n int, filled bool) (rs, ws []int) {
	t.Helper()
	for range n {
		r, w := testutil.Pipe(t)
		if filled {
			testutil.Write(t, w, oneByte)
		}
		rs = append(rs, r)
		ws = append(ws, w)
	}
	return rs, ws
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

// fill writes to the nonblocking pipe or socket fd until even a one-byte write gets EAGAIN, and
// returns how many bytes it holds.
func fill(t testing.TB, fd int) int {
	t.Helper()
	chunk := make([]byte, 4096)
	total := 0
	for len(chunk) > 0 {
		n, err := unix.Write(fd, chunk)
		switch {
		case err == unix.EAGAIN:
			chunk = chunk[:len(chunk)/2]
		case err != nil:
			t.Fatalf("filling fd %d: %v", fd, err)
		case total > 64<<20:
			t.Fatalf("fd %d took %d bytes and does not fill up", fd, total)
		default:
			total += n
		}
	}
	return total
}

// openFds lists the process's open fd numbers (/proc/self/fd, without the fd of the listing).
func openFds(t *testing.T) []string {
	t.Helper()
	d, err := os.Open("/proc/self/fd")
	if err != nil {
		t.Skipf("cannot list open fds: %v", err)
	}
	defer d.Close()
	names, err := d.Readdirnames(-1)
	if err != nil {
		t.Fatalf("reading /proc/self/fd: %v", err)
	}
	self := strconv.Itoa(int(d.Fd()))
	names = slices.DeleteFunc(names, func(n string) bool { return n == self })
	slices.Sort(names)
	return names
}

// fdsSince returns the fds open now that were not in before (a list of openFds), leaving out
// those closed meanwhile.
func fdsSince(t *testing.T, before []string) []int {
	t.Helper()
	var fds []int
	for _, name := range openFds(t) {
		fd, err := strconv.Atoi(name)
		if err != nil {
			t.Fatalf("/proc/self/fd lists %q", name)
		}
		if !slices.Contains(before, name) && !isClosed(fd) {
			fds = append(fds, fd)
		}
	}
	return fds
}

// isClosed reports whether fd is not open (fcntl F_GETFD fails with EBADF).
func isClosed(fd int) bool {
	_, err := unix.FcntlInt(uintptr(fd), unix.F_GETFD, 0)
	return err == unix.EBADF
}

// closedFdNumber returns an fd number that is not open.
func closedFdNumber(t testing.TB) int {
	t.Helper()
	for fd := 4000; fd < 5000; fd++ {
		if isClosed(fd) {
			return fd
		}
	}
	t.Fatal("no closed fd number between 4000 and 5000")
	return -1
}

// peerEOF waits up to within (0: one look) for a nonblocking read on peer to report that the
// other end's file is released (EOF, or ECONNRESET when it was closed with unread data),
// discarding data. It returns whether it was, how long that took, and what the last read
// returned.
func peerEOF(peer int, within time.Duration) (bool, time.Duration, string) {
	start := time.Now()
	end := start.Add(within)
	var buf [4096]byte
	for {
		n, err := unix.Read(peer, buf[:])
		switch {
		case err == nil && n == 0:
			return true, time.Since(start), "EOF"
		case err == unix.ECONNRESET:
			return true, time.Since(start), "ECONNRESET"
		case err == nil, err == unix.EINTR:
			continue // data the other end had written: read on to EOF
		case err != unix.EAGAIN:
			return false, time.Since(start), fmt.Sprintf("read error %v", err)
		}
		rem := time.Until(end)
		if rem <= 0 {
			return false, time.Since(start), "EAGAIN (the other end's file is still open)"
		}
		ms := int((rem + time.Millisecond - 1) / time.Millisecond)
		_, _ = unix.Poll([]unix.PollFd{{Fd: int32(peer), Events: unix.POLLIN}}, ms)
	}
}

// expectEOF fails the test unless peer reads EOF within the given time (0: at once): the other
// end's file was really released.
func expectEOF(t *testing.T, peer int, within time.Duration, what string) {
	t.Helper()
	if ok, _, last := peerEOF(peer, within); !ok {
		when := "at once"
		if within > 0 {
			when = "within " + within.String()
		}
		t.Fatalf("%s: the peer did not read EOF %s (last read: %s): the file was not released", what, when, last)
	}
}

// expectPinned asserts a documented pin: the file stays open (the peer reads no EOF within
// releaseWithin) because the kernel holds a reference to it (uring-poll's pending
// IORING_OP_POLL_ADD, or a request in flight on uring).
func expectPinned(t *testing.T, peer int, what string) {
	t.Helper()
	if ok, took, _ := peerEOF(peer, releaseWithin); ok {
		t.Fatalf("%s: the peer read EOF after %v, but the file is documented to stay open here (the kernel holds it); the doc or the test is out of date", what, took)
	}
}

// runWait returns how long the thread tid of this process has waited for a CPU so far: the
// second field of /proc/self/task/TID/schedstat (ns on a run queue). A timing a test asserts on
// a loaded machine subtracts it, so that it measures the loop, not the machine's other load.
// Safe from any goroutine: a failure to read it fails the test (Error) and counts as 0.
func runWait(t testing.TB, tid int) time.Duration {
	b, err := os.ReadFile(fmt.Sprintf("/proc/self/task/%d/schedstat", tid))
	var f []string
	var ns int64
	if err == nil {
		if f = strings.Fields(string(b)); len(f) < 2 {
			err = fmt.Errorf("%q has no second field", b)
		} else {
			ns, err = strconv.ParseInt(f[1], 10, 64)
		}
	}
	if err != nil {
		t.Errorf("reading the run-queue wait of thread %d: %v", tid, err)
		return 0
	}
	return time.Duration(ns)
}

// threadCPU is the CPU time (user+system) used so far by the calling OS thread. The loop's
// goroutine is locked to its thread, so this is the loop's own CPU time.
func threadCPU(t testing.TB) time.Duration {
	t.Helper()
	var ru unix.Rusage
	if err := unix.Getrusage(unix.RUSAGE_THREAD, &ru); err != nil {
		t.Fatalf("getrusage(RUSAGE_THREAD): %v", err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
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
	cpu0, wall0 := threadCPU(t), time.Now()
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
	r.cpu, r.wall = threadCPU(t)-cpu0, time.Since(wall0)
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

// tempFile creates an empty regular file in the test's temporary directory; it is closed at
// cleanup (after a loop created before it is closed).
func tempFile(t testing.TB) *os.File {
	t.Helper()
	f, err := os.Create(filepath.Join(t.TempDir(), "f"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { f.Close() })
	return f
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
// them) or wait for readiness (the emulation), and the fd events added before it are armed. A
// timer bounds each wait that would block (1 ms, doubling while a Once runs the timer instead
// of waiting): it only ends a wait, it never stands in for one.
func untilWaited(t testing.TB, l *ringev.Loop) {
	t.Helper()
	w0 := ringev.Waits(l)
	d := time.Millisecond
	var tm *ringev.Timer
	armed := false
	untilFor(t, l, deadline, "the loop's next wait", func() bool {
		if ringev.Waits(l) > w0 {
			return true
		}
		if !armed {
			armed = true
			tm = l.AddTimer(d, func(*ringev.Timer) { armed = false })
			d *= 2
		}
		return false
	})
	tm.Stop()
}

// awaitWoken waits for done after a Post or a Stop, which must wake the loop whose thread is
// tid (the Post's function runs, or Run returns, before the loop blocks again), and returns ""
// when done comes. If the loop's thread is seen asleep in its wait (blockedIn) while done has
// still not come, the wake-up was lost: it returns that. If done does not come within the
// deadline (a loop that neither serves nor sleeps), it returns that.
func awaitWoken(tid int, done <-chan struct{}) (problem string) {
	end := time.Now().Add(deadline)
	for {
		select {
		case <-done:
			return ""
		default:
		}
		if in := blockedIn(tid); in != "" {
			select {
			case <-done: // served, and asleep again since
				return ""
			default:
			}
			return fmt.Sprintf("the loop's thread sleeps in %s without having served it: the wake-up was lost", in)
		}
		if time.Now().After(end) {
			return fmt.Sprintf("not served within %v, and the loop's thread never seen asleep", deadline)
		}
		time.Sleep(50 * time.Microsecond)
	}
}

// whenBlocked calls f on a new goroutine once the thread tid (a loop's: New locks its caller to
// its thread) sleeps in its wait system call (blockedIn), looked at every 100 µs, and returns a
// channel closed when f has returned. If the thread has not slept within the deadline, the test
// fails and f is called all the same, so that the loop ends.
func whenBlocked(t testing.TB, tid int, f func()) <-chan struct{} {
	done := make(chan struct{})
	go func() {
		defer close(done)
		end := time.Now().Add(deadline)
		for blockedIn(tid) == "" {
			if time.Now().After(end) {
				t.Errorf("thread %d did not sleep in its wait within %v", tid, deadline)
				break
			}
			time.Sleep(100 * time.Microsecond)
		}
		f()
	}()
	return done
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

// once calls l.Once one time and fails the test (Fatal) if it returns an error or does not
// return within the deadline.
func once(t testing.TB, l *ringev.Loop) {
	t.Helper()
	if err := onceErr(t, l); err != nil {
		t.Fatalf("Loop.Once: %v", err)
	}
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

// listener returns a non-blocking TCP listener on 127.0.0.1 and its address.
func listener(t *testing.T) (int, *unix.SockaddrInet4) {
	t.Helper()
	fd := tcpSocket(t)
	if err := unix.Bind(fd, &unix.SockaddrInet4{Addr: [4]byte{127, 0, 0, 1}}); err != nil {
		t.Fatal(err)
	}
	if err := unix.Listen(fd, 64); err != nil {
		t.Fatal(err)
	}
	sa, err := unix.Getsockname(fd)
	if err != nil {
		t.Fatal(err)
	}
	return fd, sa.(*unix.SockaddrInet4)
}

// tcpSocket is a non-blocking, close-on-exec IPv4 TCP socket owned by the test.
func tcpSocket(t *testing.T) int {
	t.Helper()
	fd, err := unix.Socket(unix.AF_INET, unix.SOCK_STREAM|unix.SOCK_NONBLOCK|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		t.Fatal(err)
	}
	return testutil.Own(t, fd)
}

// dial connects a blocking client socket, owned by the test, to sa (the listener's backlog
// completes it).
func dial(t *testing.T, sa *unix.SockaddrInet4) int {
	t.Helper()
	fd, err := unix.Socket(unix.AF_INET, unix.SOCK_STREAM|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		t.Fatal(err)
	}
	testutil.Own(t, fd)
	if err := unix.Connect(fd, sa); err != nil {
		t.Fatal(err)
	}
	return fd
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

// pipeHolding returns a pipe whose read end holds data.
func pipeHolding(t *testing.T, data string) (r, w int) {
	t.Helper()
	r, w = testutil.Pipe(t)
	testutil.Write(t, w, []byte(data))
	return r, w
}

// expectHeld reads the pipe's read end r and fails unless it holds exactly data.
func expectHeld(t *testing.T, r int, data string) {
	t.Helper()
	buf := make([]byte, 64)
	n, err := unix.Read(r, buf)
	if err != nil || string(buf[:n]) != data {
		t.Fatalf("the pipe holds %q (err %v), want %q: the cancelled request read from it", buf[:max(n, 0)], err, data)
	}
}

// halfClosedFull returns a socketpair whose first end's send queue is full and whose peer has
// shut down its writing side: a Write event on a waits (on uring-poll with a multishot poll).
func halfClosedFull(t *testing.T) (a, peer int) {
	t.Helper()
	a, peer = testutil.Socketpair(t)
	fill(t, a)
	if err := unix.Shutdown(peer, unix.SHUT_WR); err != nil {
		t.Fatalf("shutdown(SHUT_WR): %v", err)
	}
	return a, peer
}

// tcpPair returns the two ends of a TCP connection over loopback, both nonblocking and owned
// by the test: the dialled client and the accepted server. With buf > 0 the client's receive
// buffer and the server's send buffer are fixed at buf bytes (no autotuning), so that a full
// send queue on the server stays full until the client reads.
func tcpPair(t *testing.T, buf int) (client, server int) {
	t.Helper()
	lfd, sa := listener(t)
	c, err := unix.Socket(unix.AF_INET, unix.SOCK_STREAM|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		t.Fatal(err)
	}
	client = testutil.Own(t, c)
	if buf > 0 {
		if err := unix.SetsockoptInt(c, unix.SOL_SOCKET, unix.SO_RCVBUF, buf); err != nil {
			t.Fatal(err)
		}
	}
	if err := unix.Connect(c, sa); err != nil {
		t.Fatalf("connect: %v", err)
	}
	if err := unix.SetNonblock(c, true); err != nil {
		t.Fatal(err)
	}
	pfd := []unix.PollFd{{Fd: int32(lfd), Events: unix.POLLIN}}
	if n, err := unix.Poll(pfd, int(deadline/time.Millisecond)); n != 1 {
		t.Fatalf("the listener has no connection to accept within %v (poll: %d, %v)", deadline, n, err)
	}
	s, _, err := unix.Accept4(lfd, unix.SOCK_NONBLOCK|unix.SOCK_CLOEXEC)
	if err != nil {
		t.Fatalf("accept4: %v", err)
	}
	server = testutil.Own(t, s)
	if buf > 0 {
		if err := unix.SetsockoptInt(s, unix.SOL_SOCKET, unix.SO_SNDBUF, buf); err != nil {
			t.Fatal(err)
		}
	}
	return client, server
}

// waitSyscalls are the system calls a loop blocks in: ppoll (poll), epoll_pwait2 or
// epoll_pwait (epoll), io_uring_enter (uring, uring-poll).
var waitSyscalls = map[int]string{unix.SYS_PPOLL: "ppoll", unix.SYS_EPOLL_PWAIT2: "epoll_pwait2",
	unix.SYS_EPOLL_PWAIT: "epoll_pwait", unix.SYS_IO_URING_ENTER: "io_uring_enter"}

// blockedIn returns the wait system call thread tid is blocked in ("" if it is not), from
// /proc/self/task/TID/syscall (the number of the call a sleeping thread is in) and .../stat
// (state S).
func blockedIn(tid int) string {
	b, err := os.ReadFile(fmt.Sprintf("/proc/self/task/%d/syscall", tid))
	if err != nil {
		return ""
	}
	f := strings.Fields(string(b))
	if len(f) == 0 {
		return ""
	}
	nr, err := strconv.Atoi(f[0])
	if err != nil {
		return ""
	}
	st, err := os.ReadFile(fmt.Sprintf("/proc/self/task/%d/stat", tid))
	if err != nil {
		return ""
	}
	// The state follows the command name, which is in parentheses.
	if i := strings.LastIndexByte(string(st), ')'); i < 0 || !strings.HasPrefix(string(st[i:]), ") S") {
		return ""
	}
	return waitSyscalls[nr]
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
// with the owner's, found by assembly that reads the runtime's g (amd64 and arm64 only).
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
// table (IORING_RSRC_REGISTER_SPARSE, Linux 5.19), or cannot be created at all; it fails the
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
		case errors.Is(err, unix.EINVAL) || errors.Is(err, unix.EOPNOTSUPP):
			registeredFiles.skip = fmt.Sprintf("IORING_RSRC_REGISTER_SPARSE (Linux 5.19): %v", err)
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
