//go:build unix

package ringev

import (
	"errors"
	"fmt"
	"runtime"
	"sync"
	"sync/atomic"
	"time"

	"golang.org/x/sys/unix"
)

// The loop contract is stated in doc.go, where go doc shows it.

// Flags is a set of fd event conditions, as in tevent's TEVENT_FD_READ, TEVENT_FD_WRITE and
// TEVENT_FD_ERROR.
//
// On an error, hang-up or half-close every handler that watches Read or Error is called with
// those of Read and Error it watches, plus Write if it watches Write and the kernel reports the
// fd writable too (an AF_UNIX socket whose peer closed reports POLLIN|POLLOUT|POLLHUP, so a
// Read|Write handler gets Read|Write and a Write|Error handler Write|Error, as with tevent's
// poll backend). A handler that watches Write alone is not called on an error or hang-up and
// loses its Write flag instead (tevent's rule); on a half-close alone it keeps it (the fd is
// still writable) and is called with Write as before.
type Flags uint16

const (
	// Read: the fd is readable, or at end of file, or has an error, hang-up or half-close (so a
	// reader sees EOF or the error from read(2)). poll(2)'s POLLIN (and POLLRDHUP).
	Read Flags = 1 << iota
	// Write: the fd is writable. poll(2)'s POLLOUT. See Flags for what happens on an error.
	Write
	// Error: the fd has an error or hang-up (POLLERR, POLLHUP), or its peer shut down its
	// writing side (POLLRDHUP: a half-close, shutdown(2) with SHUT_WR on a stream socket), as
	// tevent's TEVENT_FD_ERROR, which asks for POLLRDHUP with TEVENT_FD_READ and
	// TEVENT_FD_ERROR. A handler that watches Error alone is called on these only.
	Error
)

// hangup is an internal flag of the loop's own fd events (the requests emulation's): the event
// is told of an error or hang-up (POLLERR, POLLHUP) with hangup and Error, but does not ask for
// POLLRDHUP, so a peer's half-close alone does not raise it, and tevent's rule (a Write-only
// handler loses Write on an error) does not apply to it. A send waiting for room on a socket
// whose peer shut down its writing side then sleeps until the peer reads or the socket fails.
// FdEvent.SetFlags masks it off: users cannot set it.
const hangup Flags = 1 << 3

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
	ioPath       string        // WithIOPath
	ioPathSet    bool          // WithIOPath was given
	batchN       int           // WithBatchWait: completions to wait for
	batchWait    time.Duration // WithBatchWait: at most this long (0: no batching wait)
	noPollFirst  bool          // WithRecvPollFirst(false)
}

// WithRecvPollFirst(false) turns off, on the uring backend, the loop's use of
// IORING_RECVSEND_POLL_FIRST (Linux 5.19, io_uring_prep_recv(3)). By default a Recv on an fd whose
// previous Recv took less than its buffer (the socket was empty then, as it is after a request
// and before its reply is answered) asks the kernel to wait for the socket to be readable before
// the first attempt, sparing that attempt (a tcp_recvmsg that would find nothing; docs/design.md,
// "A Recv that polls first"). When data is there after all, the kernel's poll finds it at once and the Recv completes as without the flag.
// Kernels without it, and the epoll and poll backends (whose emulated reads wait for readiness
// anyway), ignore the option.
func WithRecvPollFirst(on bool) Option {
	return func(o *options) { o.noPollFirst = !on }
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
// "poll" that works here, with BackendReason saying why; an io_uring backend works when
// io_uring_setup succeeds and a NOP submitted through the new ring completes, since a seccomp
// filter can allow io_uring_setup and deny io_uring_enter), "uring" (close-safe io_uring: an epoll
// set waited on through the ring), "epoll", "poll" (ppoll(2): a close(2) behind the loop's back
// while it sleeps releases the file when it wakes, see the loop contract, item 5), or
// "uring-poll" (one-shot IORING_OP_POLL_ADD
// per fd: the seed's design, fast, but NOT close-safe: a close(2) behind the loop's back does not
// release a file it watches, and an idle loop pins the files it watches; auto never picks it). New returns an error
// wrapping ErrUnknownBackend for any other name, and the backend's own error (for example one
// wrapping unix.EPERM or unix.ENOSYS from io_uring_setup, or unix.EPERM from io_uring_enter, naming
// the call) when the named backend cannot be used.
func WithBackend(name string) Option {
	return func(o *options) { o.backend = name }
}

// WithBatchWait makes the uring backend's blocking wait, when requests are in the kernel, wait
// for n completions for up to d before it returns with fewer (at least one): the min_wait of
// io_uring_enter(2) (struct io_uring_getevents_arg.min_wait_usec, IORING_FEAT_MIN_TIMEOUT,
// Linux 6.12; liburing's io_uring_submit_and_wait_min_timeout(3)). A server whose requests
// arrive a few at a time then wakes once for several of them instead of once for each: fewer
// sleeps, wake-ups and enters per request, for up to d more latency on the completions that
// wait for the batch. Everything else that would wake the loop meanwhile waits with them, up to
// d: an fd event that becomes ready, a Post or Stop from another goroutine, a signal (to the
// kernel each is one completion of the batch, the loop's own wait on its epoll set). Only a
// timer ends the wait on time (the wait never lasts past the next timer's time). A look without
// blocking, and a loop with no request in the kernel, wait as without the option. d is rounded
// down to µs, the kernel's unit, and is from 1 µs to 1 s; n is at least 1 and at most 1024 (the
// ring's CQ entries); d <= 0 turns batching off (the default).
//
// The batch backs off when the load is too light for it: after a batching wait that gathered
// fewer than 3 completions (fewer than 2 with n 2; a wait a timer ended with none
// changes nothing), the next 1, then 3, 7, ... up to 64 blocking
// waits wait without it, then one tries again; one that gathers 3 or more resets the back-off.
// So a lone client's request waits d at most once every 64 waits (redis-benchmark -c 1, plain:
// p50 0.039 ms with `serve --batch-wait 50us`, 0.079 without the back-off, 0.039 with no
// batch), while 50 clients at -P 1 keep 70-90 % of the waits batched.
//
// Give the program a spare P (GOMAXPROCS at least the number of loops plus one): at GOMAXPROCS
// 1 the runtime's monitor (sysmon) takes the P of a thread that stays in a syscall across its
// tick (20 µs and up) when no other P is idle, and wakes another thread to hold it; the longer
// sleeps of a batching wait meet that more often, which cost more than the batch saved in
// measurements (docs/serve.md, "The batching wait"). The loop does not change GOMAXPROCS.
//
// Errors from New: one wrapping unix.EINVAL for n outside [1, 1024] or d outside [1 µs, 1 s]
// (with d > 0); on the uring
// backend, one wrapping unix.EOPNOTSUPP that names IORING_FEAT_MIN_TIMEOUT when the kernel lacks
// it (CheckBatchWait asks beforehand, without making a loop). The other backends have no
// batching wait and ignore the option (their blocking wait returns at the first completion, as
// without it).
func WithBatchWait(n int, d time.Duration) Option {
	return func(o *options) { o.batchN, o.batchWait = n, d }
}

// Loop is an event loop. It belongs to the goroutine that called New. From any other goroutine
// a method either works, queuing its work to the loop as Post does, or returns an error
// wrapping ErrNotOwner and changes nothing (see the package documentation, "Ownership").
type Loop struct {
	// The fields Once reads on every turn come first, with the first entries of the readiness
	// buffer, so that a turn touches few memory pages (once.go).
	stack  *[2]uintptr // the owner goroutine: its stack bounds in its runtime g, or &anyStack (see owned)
	closed bool
	inside bool // a handler is running (nesting guard)

	noPollFirst bool  // WithRecvPollFirst(false)
	running     bool  // Run is running: Once returns early on Stop
	busy        bool  // the last wait found something: look without blocking first (see wait)
	fresh       bool  // WithFreshReadiness: never use readiness from an earlier Once
	after       uint8 // afterAll, afterErr, afterReq: what dispatchRest has to do (see afterFd)
	// turnAt is the request turn's nesting guard (ringReqs.turn runs callbacks), 0 when off:
	// the offset from the owner's stack top (stack[1]) of a variable in the turn's frame that
	// holds this loop's mark (its address complemented). It is set and cleared without a
	// defer, which would cost the turn its results' registers, so a callback that panics out
	// of Once leaves it set; nested tells that from a real nesting, once, when it is found
	// set. (An offset from the top holds while the runtime moves the stack: it copies it
	// whole, top to top.)
	turnAt uintptr
	// turnFP is where the request turn's frame pointer lies from the variable that holds the
	// mark (their addresses' difference, the same in every turn: the frame's layout), 0 until
	// the first turn that runs callbacks measures it; nested finds the turn's frame by it.
	turnFP   uintptr
	exactSig bool // WithExactSignals
	epfd     int  // the backend's epoll set, which the busy path reads directly; -1: none
	beFd     int  // the backend's own fd beyond the epoll set (its io_uring instance); -1: none
	others   int  // Onces that ran other handlers since the fds last had their turn (FdStarvationLimit)
	rare     bool // markReady met an invalid fd (nvalErr) or a stale event (stale): see markRare
	stale    bool // markReady saw a stale event: rebuild the epoll set (rebuildEpollSet)
	// rider is the backend if it can carry a handler's I/O with its next look (uring; nil on the
	// others and after Close): Loop.ReadNonblocking and WriteNonblocking send the I/O through it
	// (rideIO); ride is its rideState, which the hot path reads without a call.
	rider rider
	ride  *rideState
	// news: such a look found fds ready; l.cache holds what it found, not yet marked (once.go).
	news     bool
	newsFull bool // that look filled its buffer: more fds may be ready than it says
	// lookInFlight: that look found nothing and is still in the kernel (the blocking wait
	// collects it); the busy path reads this instead of the backend's state.
	lookInFlight bool
	newsDrop     []*fdSlot // slots whose fd events changed after a full look (dropNews)
	// The requests layer (reqseam.go), nil until the first request: rs is its state that Once
	// reads, rd its driver, rl its core; turner is rd on uring (else nil), whose request turn
	// is Once's on a loop with no fd event. reqSlots holds the layer's own pointers.
	rs     *reqShared
	rd     reqDriving
	turner reqDriving
	rl     reqLayer
	reqSlots
	sig       *signalState
	posted    atomic.Bool // postQ is non-empty
	stopReq   atomic.Bool
	sleeping  atomic.Bool  // the loop is in (or about to enter) a blocking wait
	slots     []*fdSlot    // indexed by fd number
	nfd       int          // live fd events (all flags)
	dispatch  uint64       // fairness clock: incremented per fd handler run
	waits     uint64       // calls of wait (tests: a handler's I/O through the ring spares them)
	yieldAt   int64        // loop time (ns since epoch) after which a blocking wait first yields (see yieldBeforeBlock)
	yields    uint64       // runtime.Gosched calls of yieldBeforeBlock (tests)
	lateYield bool         // the backend runs yieldBeforeBlock itself, when its wait is about to block (lateYielder)
	sched     schedSamples // yieldBeforeBlock's look at the Go scheduler
	waitSeq   uint64       // number of waits; fdSlot.mark == waitSeq: the slot's cache entry is usable
	cache     []readyFd    // what the last wait reported: cacheBuf, or a larger buffer
	// cacheLeft bounds the usable cache entries from above: markReady sets it, each handler run
	// uses one up; 0 means none, so Once waits without looking at the cache.
	cacheLeft int
	// The round's dispatch order (once.go, markReady): first order, the fd events found ready
	// that did not run in the last round, least recently run first (but while unsorted > 0,
	// see pickOthers); then last, those that ran in the last round, in the order they ran.
	// order[:pos] and last[:lpos] are used up. ran holds the fd events run in this round, in
	// the order they ran; roundAt is the dispatch clock when it began. skipped counts the
	// entries picks looked at without taking them (tests: a pick's cost does not grow with the
	// number of ready fds).
	order    []*FdEvent
	pos      int
	unsorted int  // > 0: order[pos:] is out of order
	scanned  bool // the round's first pick searched order[pos:] without sorting it
	last     []*FdEvent
	lpos     int
	ran      []*FdEvent
	roundAt  uint64
	skipped  uint64

	slotsBuf [32]*fdSlot // the first slots array, inside the loop as the readiness buffer is
	timers   timerHeap
	imm      immList
	cacheBuf [64]readyFd

	genLast uint32 // the last registration generation given out (fdSlot.gen)
	// pendErr is an error for the Once that is running to return after its handler: a watched
	// fd a handler's loop I/O found closed (badFd), or the failure of the fds' turn (fdTurn).
	pendErr  error
	nvalErr  error // what markReady returns after an fd reported invalid (invalidFd)
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
// Errors: one wrapping ErrUnknownBackend for a bad name, or ErrUnknownIOPath for a bad
// WithIOPath name; the backend's error when a backend named explicitly cannot be set up (its
// text says why: io_uring_disabled sysctl, EPERM, ENOSYS, ...); for "auto", an error only when
// no backend works. Off Linux it fails, whatever the options, with an error that names the
// platform and wraps errors.ErrUnsupported: every backend is Linux's.
func New(opts ...Option) (*Loop, error) {
	if err := platformErr(); err != nil {
		return nil, err
	}
	o := options{backend: "auto"}
	for _, fn := range opts {
		fn(&o)
	}
	if o.ioPathSet && o.ioPath != IOPathSyscall && o.ioPath != IOPathRing && o.ioPath != IOPathAuto {
		return nil, fmt.Errorf("%w %q (known: %s, %s, %s, deprecated)", ErrUnknownIOPath, o.ioPath, IOPathSyscall, IOPathRing, IOPathAuto)
	}
	if o.batchWait > 0 && (o.batchN < 1 || o.batchN > maxBatchWait) {
		return nil, fmt.Errorf("ringev: WithBatchWait(%d, %v): the count must be in [1, %d]: %w", o.batchN, o.batchWait, maxBatchWait, unix.EINVAL)
	}
	if o.batchWait > time.Second || o.batchWait > 0 && o.batchWait < time.Microsecond {
		return nil, fmt.Errorf("ringev: WithBatchWait(%d, %v): the wait must be from 1µs (the kernel's unit) to 1s (it delays Post, Stop and fd events): %w", o.batchN, o.batchWait, unix.EINVAL)
	}
	runtime.LockOSThread()
	be, name, reason, err := openBackend(o.backend)
	if err != nil {
		runtime.UnlockOSThread()
		return nil, err
	}
	if o.batchWait > 0 {
		if err := setBatchWait(be, o.batchN, o.batchWait); err != nil {
			be.close()
			runtime.UnlockOSThread()
			return nil, err
		}
	}
	l := &Loop{stack: ownStack(), be: be, beName: name, beReason: reason, epoch: time.Now(), fresh: o.fresh, exactSig: o.exactSignals,
		noPollFirst: o.noPollFirst}
	if o.dispatchAll {
		l.after = afterAll
	}
	l.cache = l.cacheBuf[:0]
	l.slots = l.slotsBuf[:]
	l.epfd = -1
	l.beFd = backendFd(be)
	if e, ok := be.(epollSetBackend); ok {
		l.epfd = e.epollSet()
	}
	if rd, ok := be.(rider); ok {
		l.rider, l.ride = rd, rd.rideShared()
		setupIOPath(rd, o.ioPath)
	}
	if y, ok := be.(lateYielder); ok {
		y.yieldLate(l.yieldBeforeBlock)
		l.lateYield = true
	}
	l.wakeFd, err = newEventfd()
	if err != nil {
		be.close()
		runtime.UnlockOSThread()
		return nil, fmt.Errorf("ringev: eventfd: %w", err)
	}
	ws := l.slot(int32(l.wakeFd))
	l.markInternal(ws)
	if err := l.setInterest(ws, unix.POLLIN); err != nil {
		unix.Close(l.wakeFd)
		be.close()
		runtime.UnlockOSThread()
		return nil, fmt.Errorf("ringev: watching the wake-up eventfd: %w", err)
	}
	return l, nil
}

// Backend returns the name of the backend in use: "uring", "epoll", "poll" or "uring-poll".
func (l *Loop) Backend() string { return l.beName }

// BackendReason says why "auto" chose the backend in use (for example that io_uring_setup, or
// io_uring_enter on the new ring, failed with EPERM); it is "" when the backend was asked for by
// name.
func (l *Loop) BackendReason() string { return l.beReason }

// Close releases the loop: its backend, its wake-up eventfd and its signal subscriptions, and
// closes the fds of fd events that have auto-close set. On uring it empties the registered-file
// table (RegisterFile; one IORING_REGISTER_FILES_UPDATE) before it returns, once the requests
// in the kernel are cancelled, so that a registered fd closed by then, or later, releases its
// file at once (a request still in the kernel holds its file to its CQE). Handlers never run
// after Close. It unlocks the goroutine from its OS thread. Calling Close again returns nil. It
// belongs to the owner goroutine: from another goroutine it returns ErrNotOwner and closes
// nothing (to shut a loop down from elsewhere, call Stop, and Close after Run returns).
func (l *Loop) Close() error {
	if !l.owned() { // first: the closed flag belongs to the owner (no data race)
		return ErrNotOwner
	}
	if l.closed {
		return nil
	}
	if l.inside || l.turnAt != 0 && l.nested() {
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
	if l.rl != nil {
		l.rl.shutdown() // before the backend closes: the kernel may still hold buffers
	}
	l.slots = nil
	l.order, l.last, l.ran = nil, nil, nil
	l.ride, l.rider = nil, nil
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
// handlers; it wakes a loop blocked in its wait (in a batching wait, WithBatchWait, when that
// wait ends: at most its d later). After Close it does nothing.
func (l *Loop) Stop() {
	l.postMu.Lock()
	if !l.closed {
		l.stopReq.Store(true)
		l.wake()
	}
	l.postMu.Unlock()
}

// Post queues f to run on the loop's goroutine and wakes the loop (in a batching wait,
// WithBatchWait, when that wait ends: at most its d later). It is safe from any goroutine (see
// Ownership for the other calls that are). Functions posted from one goroutine run in the order
// posted; each Once runs one of them. Those still queued when the loop closes never run: a
// goroutine that waits for what f sends should also watch for the loop's end. It returns
// ErrClosed after Close and ErrNilFunc for a nil f.
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
	if l.inside || l.turnAt != 0 && l.nested() {
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

// timerTimeout runs the first timer if it is due and returns -1 (when FdStarvationLimit Onces
// ran others since the fds' last turn, the fds' turn comes first, fdTurn, and may take the
// timer's place), or returns the ns until it is due. Out of Once's line, which has no timer on
// the busy path.
//
//go:noinline
func (l *Loop) timerTimeout() int64 {
	now := l.now()
	if l.timers[0].deadline <= now {
		if !(l.others >= FdStarvationLimit && l.fdTurn()) {
			l.runTimer()
		}
		return -1
	}
	return l.timers[0].deadline - now
}

// nothingToDo reports, for a loop with no fd events, no timer and no Stop pending, whether
// nothing else can make a wait end: no signal handler and nothing posted.
//
//go:noinline
func (l *Loop) nothingToDo() bool {
	if l.hasSignals() || l.rs != nil && l.rs.live > 0 {
		return false
	}
	l.postMu.Lock()
	empty := len(l.postQ) == 0
	l.postMu.Unlock()
	return empty
}

// FdStarvationLimit is the most Onces in a row that run signal handlers, posted functions,
// immediates or timers while an fd handler is ready (the K of the loop contract's item 1): the
// Once after FdStarvationLimit such Onces first looks at the fds without blocking and, if one is
// ready, runs an fd handler (with WithDispatchAll, every ready one) instead. tevent's order holds
// for any single Once otherwise, but there a zero-delay timer re-added from its own handler, or an
// immediate or posted function that re-queues itself, keeps every fd waiting for ever (libuv
// bounded it after its users hit it). The busy fd path pays nothing for it: the
// count is kept and looked at only on the paths of the others.
const FdStarvationLimit = 16

// ranOther counts a Once that ran a signal handler, posted function, immediate or timer (see
// FdStarvationLimit), or the fds' turn before one of them (fdTurn, which counts from -1), and
// returns what that Once returns: nil, or the error left in pendErr. Out of line: inlined, it
// made the compiler lay out Once's checks of the others less directly.
//
//go:noinline
func (l *Loop) ranOther() error {
	l.others++
	if l.pendErr != nil {
		return l.takePendErr()
	}
	return nil
}

// turnOrSignal runs the fds' turn if it is due (fdTurn), else one signal handler with
// deliveries; it reports whether it ran something. Out of Once's line, as are turnOrPosted and
// turnOrImmediate, so that the fd path's code is what it was without the bound.
//
//go:noinline
func (l *Loop) turnOrSignal() bool {
	return l.others >= FdStarvationLimit && l.fdTurn() || l.runSignal()
}

// turnOrPosted runs the fds' turn if it is due, else one posted function; it reports whether it
// ran something.
//
//go:noinline
func (l *Loop) turnOrPosted() bool {
	return l.others >= FdStarvationLimit && l.fdTurn() || l.runPosted()
}

// turnOrImmediate runs the fds' turn if it is due (and finds an fd ready), else the first
// immediate.
//
//go:noinline
func (l *Loop) turnOrImmediate() {
	if !(l.others >= FdStarvationLimit && l.fdTurn()) {
		l.runImmediate()
	}
}

// fdTurn is the fds' turn after FdStarvationLimit Onces that ran other handlers: readiness the
// loop still holds, else a look without blocking, and one fd handler (every ready one with
// WithDispatchAll) if something is ready. It reports whether it ran a handler or failed (the
// error is left in pendErr); either way the caller's Once is over (ranOther).
//
//go:noinline
func (l *Loop) fdTurn() bool {
	l.others = 0
	if l.nfd == 0 {
		return false
	}
	if l.news {
		if err := l.adoptNews(); err != nil {
			return l.turnFailed(err)
		}
	}
	if !l.dispatchFd() {
		ready, err := l.wait(0)
		l.cache = ready
		if err != nil {
			return l.turnFailed(err)
		}
		if err := l.markReady(); err != nil {
			return l.turnFailed(err)
		}
		if !l.dispatchFd() {
			return false
		}
	}
	if l.after&afterAll != 0 {
		for !l.stopReq.Load() && l.dispatchFd() {
		}
	}
	l.others = -1 // the caller's ranOther makes it 0
	return true
}

// turnFailed leaves err for Once to return (unless an error is pending already) and ends the
// fds' turn.
func (l *Loop) turnFailed(err error) bool {
	l.setPendErr(err)
	l.others = -1
	return true
}

// dispatchRest returns what Once returns after an fd handler: nil, or (afterFd) the error left in
// pendErr (a watched fd a handler found closed: badFd), after running, with WithDispatchAll, the
// other handlers the last wait found ready. One byte tells whether there is anything to do.
func (l *Loop) dispatchRest() error {
	if l.after == 0 {
		return nil
	}
	return l.afterFd()
}

// Bits of Loop.after: what Once does after an fd handler.
const (
	afterAll = 1 << iota // WithDispatchAll: run the other ready handlers
	afterErr             // pendErr is set: return it
	afterReq             // the handler was the request emulation's: run the completions it queued
)

// afterFd is dispatchRest's work when Loop.after is not 0. After the request emulation's fd
// handler (afterReq), which runs no code of the caller's but makes the syscalls of the
// requests waiting on its fd, the completions it queued run in the same Once, as its one
// handler: the batch the next Once would run (an fd handler ran, so it is the completions'
// turn, see runTurn), without that Once's checks first.
func (l *Loop) afterFd() error {
	if l.after == afterReq { // the emulation's steady case first
		l.after = 0
		if l.rs.pending() {
			l.runTurn()
		}
		return nil
	}
	if l.after&afterAll != 0 {
		for !l.stopReq.Load() && l.dispatchFd() {
		}
	}
	if l.pendErr != nil {
		return l.takePendErr()
	}
	if l.after&afterReq != 0 {
		l.after &^= afterReq
		if l.rs.pending() {
			l.runTurn()
		}
	}
	return nil
}

// setPendErr leaves err for the Once that is running to return after its handler, unless an
// error is left already.
func (l *Loop) setPendErr(err error) {
	if l.pendErr == nil {
		l.pendErr = err
		l.after |= afterErr
	}
}

// takePendErr returns the error left for Once to return, and forgets it.
//
//go:noinline
func (l *Loop) takePendErr() error {
	err := l.pendErr
	l.pendErr = nil
	l.after &^= afterErr
	return err
}

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
