package ringev

import (
	"errors"
	"fmt"
	"runtime"
	"sync"
	"sync/atomic"
	"time"

	"github.com/ringev/ringev/internal/rawsys"
	"golang.org/x/sys/unix"
)

// The loop contract (tevent's, kept exactly; see DESIGN.md):
//
//  1. Once runs one handler: pending signals, then posted functions, then one immediate, then one
//     expired timer; only when none of those is due does it ask the backend to wait for fds
//     (until the next timer's deadline, once) and then it dispatches one fd handler.
//  2. fd events are level-triggered: an unconsumed condition is reported again on the next Once.
//  3. Fair: the fd handler that ran least recently among the ready ones runs first.
//  4. Any number of handlers may watch one fd, each with its own mask.
//  5. A closed fd event's handler never runs again. A plain close(2) behind the loop's back
//     releases the file on every backend but uring-poll; its handler no longer runs, except
//     once from the readiness cache (see WithFreshReadiness) and, on poll and uring-poll, which
//     watch by fd number, for a new file that took the number before the loop noticed.
//  6. A handler waiting only for Write is not called on error or hang-up; its Write flag is
//     cleared instead. POLLNVAL disarms every handler of the fd and Once returns an error.
//  7. Timers use the monotonic clock and run in deadline order, ties in creation order.
//  8. Post (and Stop) are the only calls safe from any goroutine.
//  9. Run returns when nothing is left to wait for, on Stop, or on error. Once from inside a
//     handler returns ErrNested.
// 10. Signals arrive through os/signal and are delivered as loop events with a count (or, with
//     WithExactSignals, through the loop's own handler, counted exactly).

// Flags is a set of fd event conditions, as in tevent's TEVENT_FD_READ, TEVENT_FD_WRITE and
// TEVENT_FD_ERROR.
type Flags uint16

const (
	// Read: the fd is readable, or at end of file, or has an error or hang-up (so a reader sees
	// EOF or the error from read(2)). poll(2)'s POLLIN.
	Read Flags = 1 << iota
	// Write: the fd is writable. poll(2)'s POLLOUT. Never reported on error or hang-up: a
	// handler that waits only for Write then loses its Write flag (tevent's rule).
	Write
	// Error: the fd has an error or hang-up (POLLERR, POLLHUP).
	Error
)

// String returns the flags as "READ|WRITE|ERROR" (or "0").
func (f Flags) String() string {
	if f == 0 {
		return "0"
	}
	s := ""
	for _, x := range []struct {
		f Flags
		n string
	}{{Read, "READ"}, {Write, "WRITE"}, {Error, "ERROR"}} {
		if f&x.f != 0 {
			if s != "" {
				s += "|"
			}
			s += x.n
		}
	}
	return s
}

var (
	// ErrNested is returned by Once and Run when called from inside a handler of the same loop.
	ErrNested = errors.New("ringev: Once called from inside a handler (nesting)")
	// ErrClosed is returned by every call on a closed loop, and by Post after Close.
	ErrClosed = errors.New("ringev: loop is closed")
	// ErrNilFunc is returned by Post for a nil function (which would otherwise fail later, on
	// the loop's goroutine, far from the mistake).
	ErrNilFunc = errors.New("ringev: Post of a nil function")
	// ErrNothingToDo is returned by Once when the loop has no fd event, timer, immediate, signal
	// or posted function to wait for (Run then returns nil).
	ErrNothingToDo = errors.New("ringev: nothing to wait for")
)

// Option configures New.
type Option func(*options)

type options struct {
	backend      string
	fresh        bool
	dispatchAll  bool
	exactSignals bool
	ioPath       string // WithIOPath
}

// WithExactSignals makes AddSignal count every delivery, as tevent does, instead of going
// through os/signal (which merges a delivery that arrives before the runtime's signal goroutine
// took the previous one of the same signal). The loop installs its own handler for each signal
// it watches (rt_sigaction(2); a few lines of assembly that count the delivery atomically and
// write to an eventfd), and puts the previous action back when the last handler for that signal
// closes or the loop closes, unless something else installed its own action meanwhile
// (signal.Ignore, or signal.Notify for a signal the runtime did not yet handle), which then
// stays. While the loop holds a signal, os/signal does not see it (a signal.Notify for a signal
// the runtime already handles, such as SIGUSR1, does not take it back). One loop per process may
// use it at a time (AddSignal returns ErrExactSignalsInUse for another); it refuses the signals
// the Go runtime needs (SIGSEGV, SIGBUS, SIGFPE, SIGILL, SIGTRAP, SIGURG, SIGPROF, SIGKILL,
// SIGSTOP, and 32 and 33, with which the runtime runs setuid and friends on every thread); it
// exists on amd64 only (elsewhere AddSignal returns an error that says so). The process keeps
// one eventfd for it open once used.
func WithExactSignals() Option {
	return func(o *options) { o.exactSignals = true }
}

// WithDispatchAll makes Once run every fd handler that one wait found ready, each once, in the
// fair order, instead of one handler per Once (tevent's rule, the default). Signals, posted
// functions, immediates and timers still come first and are not run between the handlers of
// one batch, so a timer that falls due during a batch runs after it. The other rules hold
// within a batch: a handler closed by an earlier handler of the batch does not run, flags
// changed by an earlier handler apply, and a handler whose fd another handler of the same fd
// already served waits for the next wait (its condition may be consumed). Use it when
// handlers are short and throughput matters more than timer precision.
func WithDispatchAll() Option {
	return func(o *options) { o.dispatchAll = true }
}

// WithFreshReadiness makes every fd handler run on readiness found by a wait in the same Once,
// as tevent's poll backend does: one wait per fd handler. By default a wait that reports several
// fds ready serves the following Onces too, one handler each, as long as no handler of that fd
// has run and its fd events have not changed since; a handler can then, rarely, be called for a
// condition that a handler of another fd consumed in between (it reads EAGAIN, as a handler of
// a non-blocking fd must allow anyway). Likewise, when a handler closes another watched fd with
// a plain close(2) (not FdEvent.Close) and a new file takes its number before the next wait,
// that fd's old handler can run once more from the cache; WithFreshReadiness rules this out on
// the epoll-based backends (uring, epoll). What a handler's Loop.ReadNonblocking or
// WriteNonblocking found ready through the uring backend's ring is such readiness too: with
// WithFreshReadiness it is not used, and the next Once waits. Fairness and the
// one-handler-per-Once order are the same either way.
func WithFreshReadiness() Option {
	return func(o *options) { o.fresh = true }
}

// WithBackend selects the backend by name: "auto" (the default: the first of "uring", "epoll",
// "poll" that works here, with BackendReason saying why), "uring" (close-safe io_uring: an epoll
// set waited on through the ring), "epoll", "poll", or "uring-poll" (one-shot IORING_OP_POLL_ADD
// per fd: the seed's design, fast, but NOT close-safe: a close(2) behind the loop's back does not
// release a file it watches, and an idle loop pins the files it watches; auto never picks it). New returns an error
// wrapping ErrUnknownBackend for any other name, and the backend's own error (for example one
// wrapping unix.EPERM or unix.ENOSYS from io_uring_setup) when the named backend cannot be used.
func WithBackend(name string) Option {
	return func(o *options) { o.backend = name }
}

// Loop is an event loop. It belongs to the goroutine that called New: every method other than
// Post and Stop must be called from that goroutine.
type Loop struct {
	// The fields Once reads on every turn come first, with the first entries of the readiness
	// buffer, so that a turn touches few memory pages (once.go).
	owner    uintptr // the owner goroutine (see owned)
	closed   bool
	inside   bool // a handler is running (nesting guard)
	running  bool // Run is running: Once returns early on Stop
	busy     bool // the last wait found something: look without blocking first (see wait)
	fresh    bool // WithFreshReadiness: never use readiness from an earlier Once
	all      bool // WithDispatchAll: one Once runs every ready fd handler
	exactSig bool // WithExactSignals
	epfd     int  // the backend's epoll set, which the busy path reads directly; -1: none
	// ride is the uring backend (nil on the others and after Close): Loop.ReadNonblocking and
	// WriteNonblocking send the I/O through its ring with a look at the epoll set behind it.
	ride *uringBackend
	// news: such a look found fds ready; l.cache holds what it found, not yet marked (once.go).
	news     bool
	newsFull bool // that look filled its buffer: more fds may be ready than it says
	// lookInFlight: that look found nothing and is still in the kernel (the blocking wait
	// collects it); the busy path reads this instead of the backend's state.
	lookInFlight bool
	newsDrop     []*fdSlot // slots whose fd events changed after a full look (dropNews)
	sig          *signalState
	posted       atomic.Bool // postQ is non-empty
	stopReq      atomic.Bool
	sleeping     atomic.Bool // the loop is in (or about to enter) a blocking wait
	slots        []*fdSlot   // indexed by fd number
	nfd          int         // live fd events (all flags)
	dispatch     uint64      // fairness clock: incremented per fd handler run
	waits        uint64      // calls of wait (tests: a handler's I/O through the ring spares them)
	waitSeq      uint64      // number of waits; fdSlot.mark == waitSeq: the slot's cache entry is usable
	cache        []readyFd   // what the last wait reported: cacheBuf, or a larger buffer
	// cacheLeft bounds the usable cache entries from above: markReady sets it, each handler run
	// uses one up; 0 means none, so Once waits without looking at the cache.
	cacheLeft int
	slotsBuf  [32]*fdSlot // the first slots array, inside the loop for the same reason
	timers    timerHeap
	imm       immList
	cacheBuf  [64]readyFd

	be       backend
	beName   string
	beReason string
	epoch    time.Time
	timerSeq uint64

	// cross-goroutine state
	wakeFd   int
	postMu   sync.Mutex
	postQ    []func()
	postRun  []func() // the loop's copy being run
	postHead int
}

// New creates a loop on the chosen backend. It locks the calling goroutine to its OS thread
// (runtime.LockOSThread) until Close, because io_uring's SINGLE_ISSUER and DEFER_TASKRUN bind the
// ring to the thread that created it; the loop then belongs to this goroutine.
//
// On the uring backend with WithIOPath("auto") (the default) New also times a few dozen
// one-byte reads with a look at a scratch epoll set on each path of a handler's I/O (about
// 0.1 ms with ~170 ns syscalls, 0.2 ms with ~1 µs ones) to choose the first path (IOPath).
//
// Errors: one wrapping ErrUnknownBackend for a bad name, or ErrUnknownIOPath for a bad
// WithIOPath name; the backend's error when a backend named explicitly cannot be set up (its
// text says why: io_uring_disabled sysctl, EPERM, ENOSYS, ...); for "auto", an error only when
// no backend works. A failed calibration is no error: IOPathReason says why there is none.
func New(opts ...Option) (*Loop, error) {
	o := options{backend: "auto", ioPath: IOPathAuto}
	for _, fn := range opts {
		fn(&o)
	}
	switch o.ioPath {
	case IOPathAuto, IOPathRing, IOPathSyscall:
	default:
		return nil, fmt.Errorf("%w %q (known: %s, %s, %s)", ErrUnknownIOPath, o.ioPath, IOPathAuto, IOPathRing, IOPathSyscall)
	}
	runtime.LockOSThread()
	be, name, reason, err := openBackend(o.backend)
	if err != nil {
		runtime.UnlockOSThread()
		return nil, err
	}
	l := &Loop{owner: rawsys.Getg(), be: be, beName: name, beReason: reason, epoch: time.Now(), fresh: o.fresh, all: o.dispatchAll, exactSig: o.exactSignals}
	l.cache = l.cacheBuf[:0]
	l.slots = l.slotsBuf[:]
	l.epfd = -1
	if e, ok := be.(epollSetBackend); ok {
		l.epfd = e.epollSet()
	}
	l.ride, _ = be.(*uringBackend)
	if l.ride != nil {
		setupIOPath(l.ride, o.ioPath, o.fresh)
	}
	l.wakeFd, err = unix.Eventfd(0, unix.EFD_CLOEXEC|unix.EFD_NONBLOCK)
	if err != nil {
		be.close()
		runtime.UnlockOSThread()
		return nil, fmt.Errorf("ringev: eventfd: %w", err)
	}
	if err := be.setInterest(int32(l.wakeFd), 0, unix.POLLIN); err != nil {
		unix.Close(l.wakeFd)
		be.close()
		runtime.UnlockOSThread()
		return nil, fmt.Errorf("ringev: watching the wake-up eventfd: %w", err)
	}
	l.slot(int32(l.wakeFd)).internal = true
	return l, nil
}

// Backend returns the name of the backend in use: "uring", "epoll", "poll" or "uring-poll".
func (l *Loop) Backend() string { return l.beName }

// BackendReason says why "auto" chose the backend in use (for example that io_uring_setup
// failed with EPERM); it is "" when the backend was asked for by name.
func (l *Loop) BackendReason() string { return l.beReason }

// Close releases the loop: its backend, its wake-up eventfd and its signal subscriptions, and
// closes the fds of fd events that have auto-close set. Handlers never run after Close. It
// unlocks the goroutine from its OS thread. Calling Close again returns nil. Like every method
// but Post and Stop it belongs to the owner goroutine: from another goroutine it returns
// ErrNotOwner and closes nothing (to shut a loop down from elsewhere, Post a function that
// stops it, or call Stop, and Close after Run returns).
func (l *Loop) Close() error {
	if !l.owned() { // first: the closed flag belongs to the owner (no data race)
		return ErrNotOwner
	}
	if l.closed {
		return nil
	}
	if l.inside {
		return fmt.Errorf("ringev: Close called from inside a handler: %w", ErrNested)
	}
	// Under postMu: a Post or Stop that saw the loop open has finished writing to the wake-up
	// eventfd before it is closed below, and none writes after.
	l.postMu.Lock()
	l.closed = true
	l.postQ = nil
	l.postMu.Unlock()
	for _, s := range l.slots {
		if s == nil {
			continue
		}
		auto := false
		for _, ev := range s.events {
			ev.closed = true
			auto = auto || ev.autoClose
		}
		if auto {
			// Stop watching first: a pending poll (uring-poll) holds the file, which must
			// be released when the fd is closed.
			l.unwatch(s)
			unix.Close(int(s.fd))
		}
		s.events = nil
	}
	l.slots = nil
	l.ride = nil
	if l.sig != nil {
		l.sig.stop()
	}
	err := l.be.close()
	unix.Close(l.wakeFd)
	runtime.UnlockOSThread()
	return err
}

// Stop makes Run return after the handler that is running (if any); a Stop while Run is not
// running makes the next Run return at once. It is safe from any goroutine, including
// handlers; it wakes a loop blocked in its wait. After Close it does nothing.
func (l *Loop) Stop() {
	l.postMu.Lock()
	if !l.closed {
		l.stopReq.Store(true)
		l.wake()
	}
	l.postMu.Unlock()
}

// Post queues f to run on the loop's goroutine and wakes the loop. It is the one call safe from
// any goroutine. Functions posted from one goroutine run in the order posted; each Once runs
// one of them. It returns ErrClosed after Close and ErrNilFunc for a nil f.
func (l *Loop) Post(f func()) error {
	if f == nil {
		return ErrNilFunc
	}
	l.postMu.Lock()
	if l.closed {
		l.postMu.Unlock()
		return ErrClosed
	}
	l.postQ = append(l.postQ, f)
	l.posted.Store(true)
	l.wake() // under postMu, so Close cannot close the eventfd meanwhile
	l.postMu.Unlock()
	return nil
}

// wake interrupts a blocking wait. Wake-ups are merged: only the caller that sees the loop
// sleeping writes to the eventfd (the Go netpoller's pattern).
func (l *Loop) wake() {
	if l.sleeping.CompareAndSwap(true, false) {
		var one = [8]byte{1}
		unix.Write(l.wakeFd, one[:])
	}
}

// Run calls Once until Stop is called (it returns nil), nothing is left to wait for (nil), or
// Once returns an error (that error).
func (l *Loop) Run() error {
	if !l.owned() {
		return ErrNotOwner
	}
	if l.inside {
		return ErrNested
	}
	l.running = true
	defer func() { l.running = false }()
	for !l.stopReq.Load() {
		if err := l.Once(); err != nil {
			if errors.Is(err, ErrNothingToDo) {
				return nil
			}
			return err
		}
	}
	l.stopReq.Store(false)
	return nil
}

// timerTimeout runs the first timer if it is due and returns -1, or returns the ns until it is
// due. Out of Once's line, which has no timer on the busy path.
//
//go:noinline
func (l *Loop) timerTimeout() int64 {
	now := l.now()
	if l.timers[0].deadline <= now {
		l.runTimer()
		return -1
	}
	return l.timers[0].deadline - now
}

// nothingToDo reports, for a loop with no fd events, no timer and no Stop pending, whether
// nothing else can make a wait end: no signal handler and nothing posted.
//
//go:noinline
func (l *Loop) nothingToDo() bool {
	if l.hasSignals() {
		return false
	}
	l.postMu.Lock()
	empty := len(l.postQ) == 0
	l.postMu.Unlock()
	return empty
}

// dispatchRest runs, with WithDispatchAll, the other handlers the last wait found ready.
func (l *Loop) dispatchRest() {
	if !l.all {
		return
	}
	for !l.stopReq.Load() && l.dispatchFd() {
	}
}

// now is the monotonic time in ns since the loop was created.
func (l *Loop) now() int64 { return int64(time.Since(l.epoch)) }

// call runs h with the nesting guard set.
func (l *Loop) call(h func()) {
	l.inside = true
	defer func() { l.inside = false }()
	h()
}

// runPosted runs one posted function; false if the queue was empty.
func (l *Loop) runPosted() bool {
	if l.postHead >= len(l.postRun) {
		l.postMu.Lock()
		l.postRun, l.postQ = l.postQ, l.postRun[:0]
		l.posted.Store(false)
		l.postMu.Unlock()
		l.postHead = 0
		if len(l.postRun) == 0 {
			return false
		}
	}
	f := l.postRun[l.postHead]
	l.postRun[l.postHead] = nil
	l.postHead++
	if l.postHead < len(l.postRun) {
		l.posted.Store(true) // more to run from our copy
	} else {
		l.postRun = l.postRun[:0]
		l.postHead = 0
		l.postMu.Lock()
		if len(l.postQ) > 0 {
			l.posted.Store(true)
		}
		l.postMu.Unlock()
	}
	l.call(f)
	return true
}

// drainEventfd empties one of the loop's own eventfds.
func drainEventfd(fd int) {
	var buf [8]byte
	unix.Read(fd, buf[:])
}
