//go:build linux

// Package bench holds ringev's measuring tools. This file is `ringev bench pipes`: the shapes of
// tevent's own pipe benchmark (see ../../shared/anchors/tevent_pipe.c), run on every ringev
// backend through Loop.Once, the way tevent_loop_once drives tevent, plus the Go runtime
// netpoller as the baseline a Go programmer gets without an event library.
//
// Shapes:
//
//   - context: one O_NONBLOCK pipe; a Read fd event on the read end whose handler raises SIGUSR1
//     and SIGALRM at its own thread (tgkill, as raise(3) does) and then reads one byte (an
//     event); a Write fd event on the write end writing one byte; signal handlers for SIGALRM
//     and SIGUSR1 counting what they receive (ringev.WithExactSignals on amd64, so every signal
//     raised is counted, as tevent's test asserts); a timer ends the run (2 s by default).
//   - fd_speed1, fd_speed2, fd_speed3: one pipe, a Read handler reading one byte (an event) and a
//     Write handler writing one byte, plus 0, 1 or 2 idle pairs (a Write fd event on the read end
//     and a Read fd event on the write end) that never become ready and count as spurious if they
//     are ever called; the run ends after a given number of read events (1,000,000 by default).
//   - fd_many: fd_speed1's pipe and handlers plus N-1 idle pipes, each watched by a Read handler
//     that counts as spurious if it is ever called; one run per N (Config.Fds, 1, 100 and 10,000
//     by default), named fd_many<N> (fd_many1, fd_many100, fd_many10000) in the results, which
//     also carry N as Fds. It raises RLIMIT_NOFILE as far as the hard limit allows for the run
//     and restores it afterwards (see fdmany.go).
//   - fd_busy: N pipes, every one active with its reader and writer (tevent_pipe.c's busy N);
//     one run per N (Config.Busy, 1, 16 and 256 by default), named fd_busy<N> (see busy.go).
//
// Every fd_speed and fd_many run, on a ringev backend or the netpoller, first turns for 5 % of
// its events (at most 50,000) untimed, so that it measures the steady state, as BenchmarkFdSpeed
// does.
//
// Modes (Options.Mode, Config.Modes): every ringev backend runs with the default readiness cache
// ("default"), the same with handlers that make their own syscalls ("syscall"), with
// ringev.WithFreshReadiness ("fresh") or with ringev.WithDispatchAll ("all"); the uring backend
// also with ringev.WithIOPath("ring") ("ring": the handlers' I/O rides the ring, where by
// default it is read(2)/write(2); Run skips the mode on the other backends, which have no ring);
// and with the handlers' I/O as requests ("completion", "completion-inline"; see completion.go).
// Without Config.Modes, Run measures the default mode and, in fd_speed1 and fd_busy,
// DefaultCompletionMode. The netpoller has no modes: it runs once per shape, as mode "default".
//
// Every ringev result carries the path the handlers' I/O took at the end of the run and why
// (Result.IOPath, IOPathReason: ringev.Loop.IOPath and IOPathReason, or "syscall" in mode
// "syscall", where the handlers make their own read(2)/write(2)).
//
// The handlers read and write one byte with the loop's methods, Loop.ReadNonblocking and
// Loop.WriteNonblocking, as a ringev user's handlers of non-blocking fds should: on the uring
// backend in mode "ring", when the handler has used up the loop's readiness, the byte travels
// through the loop's ring together with the loop's next look at its fds, one syscall where
// read(2) and the next wait make two; otherwise, and on the other backends, they are read(2) and
// write(2). In mode "syscall" the handlers call the package functions ringev.ReadNonblocking and
// ringev.WriteNonblocking instead: plain read(2) and write(2) on every backend, as
// tevent_pipe.c's handlers make (both without the Go runtime's syscall bookkeeping).
//
// Every measurement runs in a goroutine of its own: ringev.New locks its goroutine to an OS
// thread until Close, and the loop belongs to that goroutine.
package bench

import (
	"errors"
	"fmt"
	"io"
	"os"
	"runtime/debug"
	"slices"
	"strings"
	"time"

	"github.com/ringev/ringev"
	"golang.org/x/sys/unix"
)

// Shape names, as in tevent's test suite and tevent_pipe.c.
const (
	ShapeContext  = "context"
	ShapeFdSpeed1 = "fd_speed1"
	ShapeFdSpeed2 = "fd_speed2"
	ShapeFdSpeed3 = "fd_speed3"
)

// Modes of a ringev loop in the pipes benchmark (Options.Mode, Result.Mode), in the order they
// are run and printed.
const (
	PipesModeDefault = "default" // ringev.New's defaults: the readiness cache, one handler per Once
	PipesModeSyscall = "syscall" // the defaults, handlers making their own read(2)/write(2)
	PipesModeFresh   = "fresh"   // ringev.WithFreshReadiness: one wait per fd handler
	PipesModeAll     = "all"     // ringev.WithDispatchAll: every ready handler in one Once
	PipesModeRing    = "ring"    // ringev.WithIOPath("ring"): the handlers' I/O always through the ring (uring only)
)

// PipesModes returns the mode names in the order they are run and printed.
func PipesModes() []string {
	return append([]string{PipesModeDefault, PipesModeSyscall, PipesModeFresh, PipesModeAll, PipesModeRing}, completionModes()...)
}

// loopOptions are the ringev.New options of backend in mode (a name from PipesModes(); ""
// means the default).
func loopOptions(backend, mode string) []ringev.Option {
	opts := []ringev.Option{ringev.WithBackend(backend)}
	switch mode {
	case PipesModeFresh:
		opts = append(opts, ringev.WithFreshReadiness())
	case PipesModeAll:
		opts = append(opts, ringev.WithDispatchAll())
	case PipesModeRing:
		opts = append(opts, ringev.WithIOPath(ringev.IOPathRing))
	}
	return opts
}

// Netpoller is the name of the baseline that uses no ringev loop: two goroutines ping-ponging one
// byte over an os.Pipe through the Go runtime netpoller (../../shared/anchors/gonetpoll). It has
// no context shape: there are no signals or timer in a ping-pong.
const Netpoller = "go-netpoller"

// RatioBase is the backend that the ratio column (Result.RatioToEpoll) divides by, in the same
// shape and mode.
const RatioBase = "epoll"

const (
	// DefaultEvents is the number of read events an fd_speed run counts by default.
	DefaultEvents = 1_000_000
	// DefaultContextDuration is how long a context run lasts by default (tevent's 2 s).
	DefaultContextDuration = 2 * time.Second
)

// ErrUnknownShape, ErrUnknownBackend and ErrUnknownMode are wrapped, with the name, by Run and
// RunPipes for names that are not in Shapes() (or fd_many<N>), Backends() or PipesModes().
var (
	ErrUnknownShape   = errors.New("unknown shape")
	ErrUnknownBackend = errors.New("unknown backend")
	ErrUnknownMode    = errors.New("unknown mode")
)

// Shapes returns the shape names Config.Shapes accepts, in the order they are run and printed.
// ShapeFdMany stands for one run per pipe count (Config.Fds), each named FdManyShape(n).
func Shapes() []string {
	return []string{ShapeContext, ShapeFdSpeed1, ShapeFdSpeed2, ShapeFdSpeed3, ShapeFdMany, ShapeFdBusy}
}

// runnable reports whether RunPipes accepts shape: a name from Shapes() other than ShapeFdMany,
// or fd_many<N> with 1 <= N <= MaxFds.
func runnable(shape string) bool {
	if _, ok := parseFdMany(shape); ok {
		return true
	}
	if _, ok := parseFdBusy(shape); ok {
		return true
	}
	return shape != ShapeFdMany && shape != ShapeFdBusy && slices.Contains(Shapes(), shape)
}

// Backends returns every backend name the pipes benchmark knows: ringev.Backends() (which may
// still fail in ringev.New on this kernel; see CheckBackend) followed by Netpoller.
func Backends() []string {
	return append(ringev.Backends(), Netpoller)
}

// extraPairs is the number of idle fd event pairs of an fd_speed shape (0 for fd_many<N>); ok
// is false for the context shape and unknown names.
func extraPairs(shape string) (n int, ok bool) {
	if _, many := parseFdMany(shape); many {
		return 0, true
	}
	switch shape {
	case ShapeFdSpeed1:
		return 0, true
	case ShapeFdSpeed2:
		return 1, true
	case ShapeFdSpeed3:
		return 2, true
	}
	return 0, false
}

// Options are the parameters of one measurement.
type Options struct {
	// Events is the number of read events an fd_speed run counts before it stops (> 0; 0 means
	// DefaultEvents).
	Events int64
	// ContextDuration is how long a context run lasts (0 means DefaultContextDuration).
	ContextDuration time.Duration
	// Mode is a name from PipesModes() ("" means PipesModeDefault). The netpoller only has the
	// default mode.
	Mode string
	// Stop, when closed, ends the run in progress early (RunPipes returns ErrStopped, after
	// closing what it opened and restoring RLIMIT_NOFILE) and makes Run skip the runs left.
	// nil: never.
	Stop <-chan struct{}
	// UnregisteredFiles: in the completion modes, leave the pipes out of the ring's
	// registered-file table (Loop.RegisterFile), so that every request makes the kernel look
	// its fd up, as uring_proactor_pipe does. The zero value registers them (uring only); where
	// the loop refuses that (a kernel before 5.19), the run goes on unregistered and says so
	// (Result.RegisterFileError, and a line in Config.Notes).
	UnregisteredFiles bool
}

func (o Options) withDefaults() Options {
	if o.Events == 0 {
		o.Events = DefaultEvents
	}
	if o.ContextDuration == 0 {
		o.ContextDuration = DefaultContextDuration
	}
	if o.Mode == "" {
		o.Mode = PipesModeDefault
	}
	return o
}

// CheckBackend reports whether backend can be measured here: nil for Netpoller, else the error of
// ringev.New(ringev.WithBackend(backend)) (for example io_uring_setup's EPERM), or nil after
// closing the loop it made. It runs New in a goroutine of its own.
func CheckBackend(backend string) error {
	if backend == Netpoller {
		return nil
	}
	if !slices.Contains(ringev.Backends(), backend) {
		return fmt.Errorf("%w %q", ErrUnknownBackend, backend)
	}
	return inGoroutine(func() error {
		l, err := ringev.New(ringev.WithBackend(backend))
		if err != nil {
			return err
		}
		return l.Close()
	})
}

// inGoroutine runs f in a new goroutine and returns its error; a panic becomes an error with the
// stack.
func inGoroutine(f func() error) error {
	done := make(chan error, 1)
	go func() {
		var err error
		defer func() {
			if p := recover(); p != nil {
				err = fmt.Errorf("panic: %v\n%s", p, debug.Stack())
			}
			done <- err
		}()
		err = f()
	}()
	return <-done
}

// RunPipes measures one shape (a name from Shapes() other than ShapeFdMany, or fd_many<N>) on
// one backend (a name from Backends()) in opt.Mode, in a goroutine of its own, and returns the
// result without RatioToEpoll. The error names the backend and shape; it wraps
// ErrUnknownBackend, ErrUnknownShape or ErrUnknownMode for bad names, ringev.New's error when the
// backend cannot be set up, ErrTooManyFds when RLIMIT_NOFILE cannot be raised far enough for
// fd_many<N>, and the loop's error when Once fails. The context shape on Netpoller, and the
// Netpoller in a mode other than the default, are errors.
func RunPipes(backend, shape string, opt Options) (Result, error) {
	opt = opt.withDefaults()
	if opt.Events < 0 {
		return Result{}, fmt.Errorf("%s %s: events must be > 0, got %d", backend, shape, opt.Events)
	}
	if !runnable(shape) {
		return Result{}, fmt.Errorf("%w %q", ErrUnknownShape, shape)
	}
	if !slices.Contains(Backends(), backend) {
		return Result{}, fmt.Errorf("%w %q", ErrUnknownBackend, backend)
	}
	if !slices.Contains(PipesModes(), opt.Mode) {
		return Result{}, fmt.Errorf("%w %q", ErrUnknownMode, opt.Mode)
	}
	if backend == Netpoller && opt.Mode != PipesModeDefault {
		return Result{}, fmt.Errorf("%s has no mode %q, only %q", Netpoller, opt.Mode, PipesModeDefault)
	}
	var res Result
	err := inGoroutine(func() error {
		var err error
		if run := otherRunner(backend, shape, opt.Mode); run != nil {
			res, err = run(backend, shape, opt) // fd_busy, completion modes: busy.go, completion.go
		} else if backend == Netpoller {
			res, err = runNetpoller(shape, opt)
		} else {
			res, err = runLoop(backend, shape, opt)
		}
		return err
	})
	if err != nil {
		return Result{}, fmt.Errorf("%s %s: %w", Label(backend, opt.Mode), shape, err)
	}
	return res, nil
}

// newResult is the result of a run of events read events in seconds.
func newResult(backend, mode, shape string, events int64, seconds float64) Result {
	r := Result{Backend: backend, Mode: mode, Shape: shape, Events: events, Seconds: seconds}
	r.Fds, _ = parseFdMany(shape)
	if seconds > 0 {
		r.EventsPerSec = float64(events) / seconds
	}
	if events > 0 {
		r.NsPerEvent = seconds * 1e9 / float64(events)
	}
	return r
}

// pipeRun is the state of one loop measurement: what the handlers count.
type pipeRun struct {
	rfd, wfd int
	pid, tid int // the process, and the loop's thread (New locked the goroutine to it)
	loop     *ringev.Loop
	syscalls bool // mode "syscall": the package functions instead of the loop's methods
	rbuf     [1]byte
	wbuf     [1]byte
	signals  bool // context shape: the read handler raises SIGUSR1 and SIGALRM first
	runCount
}

// onRead is tevent_pipe.c's rd: raise the two signals (context only), read one byte. It raises
// them at its own thread, as kill(getpid()) does in tevent_pipe.c's single-threaded process
// (raise(3) is tgkill to the calling thread): each is delivered before tgkill returns.
func (s *pipeRun) onRead(*ringev.FdEvent, ringev.Flags) {
	if s.signals {
		if unix.Tgkill(s.pid, s.tid, unix.SIGUSR1) == nil {
			s.raised++
		}
		if unix.Tgkill(s.pid, s.tid, unix.SIGALRM) == nil {
			s.raised++
		}
	}
	var n int
	var err error
	if s.syscalls {
		n, err = ringev.ReadNonblocking(s.rfd, s.rbuf[:])
	} else {
		n, err = s.loop.ReadNonblocking(s.rfd, s.rbuf[:])
	}
	if n != 1 || err != nil {
		s.spurious++
		return
	}
	s.events++
	if s.target > 0 && s.events >= s.target {
		s.finished = true
	}
}

// onWrite is tevent_pipe.c's wr: write one byte.
func (s *pipeRun) onWrite(*ringev.FdEvent, ringev.Flags) {
	var n int
	var err error
	if s.syscalls {
		n, err = ringev.WriteNonblocking(s.wfd, s.wbuf[:])
	} else {
		n, err = s.loop.WriteNonblocking(s.wfd, s.wbuf[:])
	}
	if n != 1 || err != nil {
		s.spurious++
	}
}

// handlers returns onRead and onWrite as closures, and turn is the measuring loop: the compiler
// emits closures right after the function that makes them, so these sit on the same code page
// as onRead and onWrite, where method values' wrappers (s.onRead) and runLoop's own loop land
// elsewhere in the binary. Each code page touched between two syscalls costs time
// (docs/design.md, "Where the time goes"). Not inlined, so that its closures are emitted here.
//
//go:noinline
func (s *pipeRun) handlers() (rd, wr ringev.FdHandler) {
	return func(ev *ringev.FdEvent, f ringev.Flags) { s.onRead(ev, f) },
		func(ev *ringev.FdEvent, f ringev.Flags) { s.onWrite(ev, f) }
}

// warmupEvents is how many events a run of events turns untimed first (as testing.B warms up):
// 5 %, at most 50,000; none for fewer than 20.
func warmupEvents(events int64) int64 { return min(events/20, 50_000) }

// turn runs loop.Once until the run is finished (what is being measured).
func (s *pipeRun) turn(loop *ringev.Loop) error {
	for !s.finished {
		if err := loop.Once(); err != nil {
			return fmt.Errorf("loop.Once after %d events: %w", s.events, err)
		}
	}
	return nil
}

// runLoop measures one shape on a ringev backend. It must run in a goroutine of its own (New
// locks it to its thread). Every fd event, signal, the loop and every pipe fd are closed, and
// RLIMIT_NOFILE is restored, before it returns, also on error.
func runLoop(backend, shape string, opt Options) (res Result, err error) {
	if nfds, many := parseFdMany(shape); many {
		restore, rerr := reserveFds(nfds + 1) // the active pipe's two fds and nfds-1 idle ones
		if rerr != nil {
			return res, rerr
		}
		defer keepFirst(&err, restore)
	}
	loop, err := ringev.New(runLoopOptions(backend, opt.Mode, shape)...)
	if err != nil {
		return res, err
	}
	var p [2]int
	if err := unix.Pipe2(p[:], unix.O_NONBLOCK|unix.O_CLOEXEC); err != nil {
		loop.Close()
		return res, fmt.Errorf("pipe2: %w", err)
	}
	r := &runParts{loop: loop, pairs: []pipePair{{rfd: p[0], wfd: p[1]}}}
	defer keepFirst(&err, r.close)
	s := &pipeRun{loop: loop, syscalls: opt.Mode == PipesModeSyscall, rfd: p[0], wfd: p[1], pid: unix.Getpid(), tid: unix.Gettid(),
		signals: shape == ShapeContext}
	onRead, onWrite := s.handlers()
	if _, err := r.addFd(s.rfd, ringev.Read, onRead); err != nil {
		return res, err
	}
	if _, err := r.addFd(s.wfd, ringev.Write, onWrite); err != nil {
		return res, err
	}
	if err := r.addShape(&s.runCount, shape, s.rfd, s.wfd, opt.Events, opt.ContextDuration); err != nil {
		return res, err
	}
	// A stop is posted into the loop, which ends the run at its next turn.
	defer postStop(loop, opt.Stop, func() { s.finished, s.stopped = true, true })()
	turn := func() error { return s.turn(loop) }
	if err := s.warmUp(opt.Events, turn); err != nil {
		return res, err
	}
	if res, err = s.timed(backend, opt.Mode, shape, turn); err != nil {
		return res, err
	}
	res.IOPath, res.IOPathReason = loop.IOPath(), loop.IOPathReason()
	if s.syscalls {
		res.IOPath, res.IOPathReason = ringev.IOPathSyscall, "mode syscall: the handlers make their own read(2)/write(2)"
	}
	return res, nil
}

// ownThreadCPU is the calling thread's CPU time in ns (CLOCK_THREAD_CPUTIME_ID: no time asleep or
// waiting to run), or -1 if the clock fails. A loop's goroutine is locked to its thread.
func ownThreadCPU() int64 {
	var ts unix.Timespec
	if unix.ClockGettime(unix.CLOCK_THREAD_CPUTIME_ID, &ts) != nil {
		return -1
	}
	return ts.Nano()
}

// runNetpoller is ../../shared/anchors/gonetpoll/main.go: a writer goroutine writes one byte per
// token, a reader goroutine reads it, counts an event and hands the token back, until
// opt.Events events. The same measurement serves every fd_speed shape; fd_many<N> adds N-1 idle
// pipes registered with the netpoller (os.NewFile of a non-blocking fd) that nobody reads. Every
// pipe is closed, RLIMIT_NOFILE restored, and both goroutines have ended when it returns.
func runNetpoller(shape string, opt Options) (res Result, err error) {
	if _, ok := extraPairs(shape); !ok {
		return Result{}, fmt.Errorf("%s has no %s shape (no signals or timer in a goroutine ping-pong)", Netpoller, shape)
	}
	if nfds, many := parseFdMany(shape); many {
		restore, rerr := reserveFds(nfds + 1)
		if rerr != nil {
			return res, rerr
		}
		defer keepFirst(&err, restore)
		fds, err := idlePipes(nfds - 1)
		if err != nil {
			return res, err
		}
		files := make([]*os.File, len(fds))
		for i, fd := range fds {
			files[i] = os.NewFile(uintptr(fd), "idle pipe")
		}
		defer func() {
			for _, f := range files {
				if cerr := f.Close(); cerr != nil && err == nil {
					err = fmt.Errorf("closing an idle pipe: %w", cerr)
				}
			}
		}()
	}
	r, w, err := os.Pipe()
	if err != nil {
		return Result{}, err
	}
	defer r.Close()
	token := make(chan struct{}, 1)
	writerDone := make(chan error, 1)
	go func() { // writer: one byte per turn
		b := []byte{0}
		var err error
		for range token {
			if err == nil {
				if _, err = w.Write(b); err != nil {
					w.Close() // the reader sees EOF instead of waiting forever
				}
			}
		}
		writerDone <- err
	}()
	type readResult struct {
		n   int64
		t0  time.Time // when the warm-up (as runLoop's) ended
		err error
	}
	warm := warmupEvents(opt.Events)
	readerDone := make(chan readResult, 1)
	go func() { // reader: counts read events
		b := make([]byte, 1)
		var n int64
		var t0 time.Time
		for n < warm+opt.Events {
			if n == warm {
				t0 = time.Now()
			}
			if n&1023 == 0 && stopped(opt.Stop) {
				readerDone <- readResult{n, time.Time{}, ErrStopped}
				return
			}
			if _, err := r.Read(b); err != nil {
				readerDone <- readResult{n, time.Time{}, err}
				return
			}
			n++
			token <- struct{}{}
		}
		readerDone <- readResult{n - warm, t0, nil}
	}()
	token <- struct{}{}
	rr := <-readerDone
	el := time.Since(rr.t0).Seconds()
	close(token)
	werr := <-writerDone
	w.Close()
	if werr != nil {
		return Result{}, fmt.Errorf("writer: %w", werr)
	}
	if rr.err != nil {
		if errors.Is(rr.err, io.EOF) {
			return Result{}, fmt.Errorf("reader after %d events: unexpected EOF", rr.n)
		}
		return Result{}, fmt.Errorf("reader after %d events: %w", rr.n, rr.err)
	}
	return newResult(Netpoller, PipesModeDefault, shape, rr.n, el), nil
}

// ringBackend is the backend whose loops can send a handler's I/O through a ring, the only one
// mode ring runs on.
const ringBackend = "uring"

// pollScanLimit is the largest fd_many pipe count measured on the poll backend when the backends
// are not named: poll(2) is O(fds) per wait, so fd_many10000 on poll takes minutes.
const pollScanLimit = 1000

// Config says what Run measures.
type Config struct {
	// Backends to measure, names from Backends(); nil or empty means all of them. Backends that
	// ringev.New rejects here are skipped with a note.
	Backends []string
	// Shapes to run, names from Shapes(); nil or empty means all of them.
	Shapes []string
	// Fds are the pipe counts of the fd_many shape, one run each, in this order (duplicates
	// dropped); nil or empty means DefaultFds. Each is in [1, MaxFds].
	Fds []int
	// Busy are the pipe counts of the fd_busy shape, one run each, in this order (duplicates
	// dropped); nil or empty means DefaultBusy. Each is in [1, MaxBusy].
	Busy []int
	// Modes of the ringev backends, names from PipesModes(); nil or empty means the default
	// (readiness) mode, plus DefaultCompletionMode in the fd_speed1 and fd_busy shapes, those
	// of the C proactor (uring_proactor_pipe), so that the table shows both models side by
	// side. Options.Mode is ignored.
	Modes []string
	Options
	// Notes receives one line per skipped backend or shape (with the reason), and one per
	// completion run that could not register its pipes (Result.RegisterFileError); nil discards
	// them.
	Notes io.Writer
	// Progress receives a progress line (runs done of all, the one running); nil for none.
	// Give it a terminal only.
	Progress io.Writer
}

// pipesJob is one run of Run: a backend, a shape and the options with the mode.
type pipesJob struct {
	backend, shape string
	opt            Options
}

// Run measures every selected shape on every selected backend in every selected mode: shape by
// shape in the order of Shapes() (fd_many once per Config.Fds entry), then mode by mode in the
// order of PipesModes(), then backend by backend in the order of Backends() (the netpoller, which
// has no modes, once per shape, after the backends of the first mode); each run in a goroutine
// of its own. It sets RatioToEpoll. A backend that ringev.New rejects is skipped with a note
// naming the reason, as is the context shape on Netpoller, and, unless Config.Backends names
// backends, fd_many with more than pollScanLimit pipes on poll. Unknown names and bad counts are an
// error before anything runs (wrapping ErrUnknownBackend, ErrUnknownShape or ErrUnknownMode). A
// failing measurement does not stop the others: Run returns what was measured and the failures
// joined (errors.Join).
func Run(cfg Config) ([]Result, error) {
	notes := cfg.Notes
	if notes == nil {
		notes = io.Discard
	}
	backends, err := selectNames(cfg.Backends, Backends(), ErrUnknownBackend)
	if err != nil {
		return nil, err
	}
	shapes, err := selectNames(cfg.Shapes, Shapes(), ErrUnknownShape)
	if err != nil {
		return nil, err
	}
	modes, err := selectNames(cfg.Modes, PipesModes(), ErrUnknownMode)
	if err != nil {
		return nil, err
	}
	if len(cfg.Modes) == 0 {
		modes = []string{PipesModeDefault, DefaultCompletionMode}
	}
	if cfg.Events < 0 {
		return nil, fmt.Errorf("events must be > 0, got %d", cfg.Events)
	}
	fds := cfg.Fds
	if len(fds) == 0 {
		fds = DefaultFds
	}
	var runs []string // shapes with fd_many expanded
	for _, shape := range shapes {
		if shape == ShapeFdBusy {
			if runs, err = expandBusy(runs, cfg.Busy); err != nil {
				return nil, err
			}
			continue
		}
		if shape != ShapeFdMany {
			runs = append(runs, shape)
			continue
		}
		for _, n := range fds {
			if n < 1 || n > MaxFds {
				return nil, fmt.Errorf("fd_many: pipe count %d is not in [1, %d]", n, MaxFds)
			}
			if name := FdManyShape(n); !slices.Contains(runs, name) {
				runs = append(runs, name)
			}
		}
	}
	var usable []string
	for _, b := range backends {
		if err := CheckBackend(b); err != nil {
			fmt.Fprintf(notes, "skipping backend %s: %v\n", b, err)
			continue
		}
		usable = append(usable, b)
	}
	if slices.Contains(usable, Netpoller) && slices.Contains(shapes, ShapeContext) {
		fmt.Fprintf(notes, "skipping %s on %s: a goroutine ping-pong has no signals or timer\n", ShapeContext, Netpoller)
	}
	var results []Result
	var errs []error
	var ringSkipped []string // backends skipped in mode ring, noted once
	var jobs []pipesJob
	for _, shape := range runs {
		for i, mode := range modes {
			for _, b := range usable {
				if b == Netpoller && (shape == ShapeContext || i > 0) {
					continue
				}
				if len(cfg.Modes) == 0 && mode == DefaultCompletionMode && !completionRowShape(shape) {
					continue
				}
				if mode == PipesModeRing && b != ringBackend && b != Netpoller {
					if !slices.Contains(ringSkipped, b) {
						ringSkipped = append(ringSkipped, b)
						fmt.Fprintf(notes, "skipping mode %s on %s: only the %s backend has a ring (handler I/O is read(2)/write(2) there, as in mode %s)\n",
							PipesModeRing, b, ringBackend, PipesModeDefault)
					}
					continue
				}
				if n, ok := parseFdMany(shape); ok && n > pollScanLimit && b == "poll" && len(cfg.Backends) == 0 {
					if i == 0 {
						fmt.Fprintf(notes, "skipping %s on poll: poll(2) scans every fd per wait (about 0.4 ms per event at 10,000 fds); ask for --backend poll to run it\n", shape)
					}
					continue
				}
				opt := cfg.Options
				opt.Mode = mode
				if b == Netpoller {
					opt.Mode = PipesModeDefault
				}
				jobs = append(jobs, pipesJob{b, shape, opt})
			}
		}
	}
	bar := newCountBar(cfg.Progress, len(jobs))
	for _, j := range jobs {
		if stopped(cfg.Stop) {
			bar.end()
			return results, errors.Join(append(errs, ErrStopped)...)
		}
		bar.describe(j.shape + " " + j.backend + " " + j.opt.Mode)
		r, err := RunPipes(j.backend, j.shape, j.opt)
		bar.add()
		if err != nil {
			errs = append(errs, err)
			continue
		}
		if r.RegisterFileError != "" {
			fmt.Fprintf(notes, "%s %s ran with its pipes unregistered: %s\n", r.Label(), j.shape, r.RegisterFileError)
		}
		results = append(results, r)
	}
	bar.end()
	SetRatios(results)
	if len(results) == 0 && len(errs) == 0 {
		var combos []string
		for _, shape := range runs {
			for _, b := range backends {
				combos = append(combos, shape+" on "+b)
			}
		}
		if len(combos) > 8 {
			combos = append(combos[:8], fmt.Sprintf("and %d more", len(combos)-8))
		}
		errs = append(errs, fmt.Errorf("nothing was measured: every selected backend/shape combination was skipped (%s); see the notes above",
			strings.Join(combos, ", ")))
	}
	return results, errors.Join(errs...)
}

// DefaultCompletionMode is the completion mode Run adds to the default mode when Config.Modes
// is empty: the handlers' I/O as requests, each write before its read, the best case of
// completion I/O and the shape of the C proactor the targets compare with
// (uring_proactor_pipe inline).
const DefaultCompletionMode = PipesModeCompletionInline

// completionRowShape reports whether Run adds a DefaultCompletionMode row to shape's when
// Config.Modes is empty: fd_speed1 and fd_busy<N>.
func completionRowShape(shape string) bool {
	_, busy := parseFdBusy(shape)
	return busy || shape == ShapeFdSpeed1
}

// selectNames returns the names of known that are in want (all of known when want is empty), in
// the order of known, or an error wrapping unknown for the first name not in known.
func selectNames(want, known []string, unknown error) ([]string, error) {
	if len(want) == 0 {
		return known, nil
	}
	for _, w := range want {
		if !slices.Contains(known, w) {
			return nil, fmt.Errorf("%w %q (known: %s)", unknown, w, strings.Join(known, ", "))
		}
	}
	var out []string
	for _, k := range known {
		if slices.Contains(want, k) {
			out = append(out, k)
		}
	}
	return out, nil
}
