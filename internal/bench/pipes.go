// Package bench holds ringev's measuring tools. This file is `ringev bench pipes`: the shapes of
// tevent's own pipe benchmark (see ../../shared/anchors/tevent_pipe.c), run on every ringev
// backend through Loop.Once, the way tevent_loop_once drives tevent, plus the Go runtime
// netpoller as the baseline a Go programmer gets without an event library.
//
// Shapes:
//
//   - context: one O_NONBLOCK pipe; a Read fd event on the read end whose handler raises SIGUSR1
//     and SIGALRM at its own process and then reads one byte (an event); a Write fd event on the
//     write end writing one byte; signal handlers for SIGALRM and SIGUSR1 counting what they
//     receive; a timer ends the run (2 s by default).
//   - fd_speed1, fd_speed2, fd_speed3: one pipe, a Read handler reading one byte (an event) and a
//     Write handler writing one byte, plus 0, 1 or 2 idle pairs (a Write fd event on the read end
//     and a Read fd event on the write end) that never become ready and count as spurious if they
//     are ever called; the run ends after a given number of read events (1,000,000 by default).
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

// Netpoller is the name of the baseline that uses no ringev loop: two goroutines ping-ponging one
// byte over an os.Pipe through the Go runtime netpoller (../../shared/anchors/gonetpoll). It has
// no context shape: there are no signals or timer in a ping-pong.
const Netpoller = "go-netpoller"

// RatioBase is the backend that the ratio column (Result.RatioToEpoll) divides by.
const RatioBase = "epoll"

const (
	// DefaultEvents is the number of read events an fd_speed run counts by default.
	DefaultEvents = 1_000_000
	// DefaultContextDuration is how long a context run lasts by default (tevent's 2 s).
	DefaultContextDuration = 2 * time.Second
)

// ErrUnknownShape and ErrUnknownBackend are wrapped, with the name, by Run and RunPipes for names
// that are not in Shapes() or Backends().
var (
	ErrUnknownShape   = errors.New("unknown shape")
	ErrUnknownBackend = errors.New("unknown backend")
)

// Shapes returns the shape names in the order they are run and printed.
func Shapes() []string {
	return []string{ShapeContext, ShapeFdSpeed1, ShapeFdSpeed2, ShapeFdSpeed3}
}

// Backends returns every backend name the pipes benchmark knows: ringev.Backends() (which may
// still fail in ringev.New on this kernel; see CheckBackend) followed by Netpoller.
func Backends() []string {
	return append(ringev.Backends(), Netpoller)
}

// extraPairs is the number of idle fd event pairs of an fd_speed shape; ok is false for the
// context shape and unknown names.
func extraPairs(shape string) (n int, ok bool) {
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
}

func (o Options) withDefaults() Options {
	if o.Events == 0 {
		o.Events = DefaultEvents
	}
	if o.ContextDuration == 0 {
		o.ContextDuration = DefaultContextDuration
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

// RunPipes measures one shape on one backend (a name from Backends()) in a goroutine of its own
// and returns the result without RatioToEpoll. The error names the backend and shape; it wraps
// ErrUnknownBackend or ErrUnknownShape for bad names, ringev.New's error when the backend cannot
// be set up, and the loop's error when Once fails. The context shape on Netpoller is an error.
func RunPipes(backend, shape string, opt Options) (Result, error) {
	opt = opt.withDefaults()
	if opt.Events < 0 {
		return Result{}, fmt.Errorf("%s %s: events must be > 0, got %d", backend, shape, opt.Events)
	}
	if !slices.Contains(Shapes(), shape) {
		return Result{}, fmt.Errorf("%w %q", ErrUnknownShape, shape)
	}
	if !slices.Contains(Backends(), backend) {
		return Result{}, fmt.Errorf("%w %q", ErrUnknownBackend, backend)
	}
	var res Result
	err := inGoroutine(func() error {
		var err error
		if backend == Netpoller {
			res, err = runNetpoller(shape, opt)
		} else {
			res, err = runLoop(backend, shape, opt)
		}
		return err
	})
	if err != nil {
		return Result{}, fmt.Errorf("%s %s: %w", backend, shape, err)
	}
	return res, nil
}

// pipeRun is the state of one loop measurement: what the handlers count.
type pipeRun struct {
	rfd, wfd int
	pid      int
	rbuf     [1]byte
	wbuf     [1]byte
	signals  bool  // context shape: the read handler raises SIGUSR1 and SIGALRM first
	target   int64 // fd_speed: stop after this many read events (0: the timer stops the run)
	events   int64
	spurious int64
	raised   int64
	counted  int64
	finished bool
}

// onRead is tevent_pipe.c's rd: raise the two signals (context only), read one byte.
func (s *pipeRun) onRead(*ringev.FdEvent, ringev.Flags) {
	if s.signals {
		if unix.Kill(s.pid, unix.SIGUSR1) == nil {
			s.raised++
		}
		if unix.Kill(s.pid, unix.SIGALRM) == nil {
			s.raised++
		}
	}
	if n, err := unix.Read(s.rfd, s.rbuf[:]); n != 1 || err != nil {
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
	if n, err := unix.Write(s.wfd, s.wbuf[:]); n != 1 || err != nil {
		s.spurious++
	}
}

// onIdle is tevent_pipe.c's idle: an fd event that must never be called.
func (s *pipeRun) onIdle(*ringev.FdEvent, ringev.Flags) { s.spurious++ }

// onSignal is tevent_pipe.c's cnt.
func (s *pipeRun) onSignal(_ *ringev.Signal, count int) { s.counted += int64(count) }

// runLoop measures one shape on a ringev backend. It must run in a goroutine of its own (New
// locks it to its thread). Every fd event, signal, the loop and both pipe fds are closed before
// it returns, also on error.
func runLoop(backend, shape string, opt Options) (res Result, err error) {
	loop, err := ringev.New(ringev.WithBackend(backend))
	if err != nil {
		return res, err
	}
	var p [2]int
	if err := unix.Pipe2(p[:], unix.O_NONBLOCK|unix.O_CLOEXEC); err != nil {
		loop.Close()
		return res, fmt.Errorf("pipe2: %w", err)
	}
	s := &pipeRun{rfd: p[0], wfd: p[1], pid: unix.Getpid()}
	var fdes []*ringev.FdEvent
	var sigs []*ringev.Signal
	var timer *ringev.Timer
	defer func() {
		for _, e := range fdes {
			if cerr := e.Close(); cerr != nil && err == nil {
				err = fmt.Errorf("closing the fd event on fd %d: %w", e.Fd(), cerr)
			}
		}
		for _, sg := range sigs {
			sg.Close()
		}
		if timer != nil {
			timer.Stop()
		}
		if cerr := loop.Close(); cerr != nil && err == nil {
			err = fmt.Errorf("closing the loop: %w", cerr)
		}
		for _, fd := range p {
			if cerr := unix.Close(fd); cerr != nil && err == nil {
				err = fmt.Errorf("closing pipe fd %d: %w", fd, cerr)
			}
		}
	}()
	addFd := func(fd int, f ringev.Flags, h ringev.FdHandler) error {
		e, err := loop.AddFd(fd, f, h)
		if err != nil {
			return fmt.Errorf("AddFd(%d, %v): %w", fd, f, err)
		}
		fdes = append(fdes, e)
		return nil
	}
	if err := addFd(s.rfd, ringev.Read, s.onRead); err != nil {
		return res, err
	}
	if err := addFd(s.wfd, ringev.Write, s.onWrite); err != nil {
		return res, err
	}
	if shape == ShapeContext {
		s.signals = true
		timer = loop.AddTimer(opt.ContextDuration, func(*ringev.Timer) { s.finished = true })
		for _, sig := range []unix.Signal{unix.SIGALRM, unix.SIGUSR1} {
			sg, err := loop.AddSignal(sig, s.onSignal)
			if err != nil {
				return res, fmt.Errorf("AddSignal(%v): %w", sig, err)
			}
			sigs = append(sigs, sg)
		}
	} else {
		extra, _ := extraPairs(shape)
		s.target = opt.Events
		for range extra {
			if err := addFd(s.rfd, ringev.Write, s.onIdle); err != nil {
				return res, err
			}
			if err := addFd(s.wfd, ringev.Read, s.onIdle); err != nil {
				return res, err
			}
		}
	}
	t0 := time.Now()
	for !s.finished {
		if err := loop.Once(); err != nil {
			return res, fmt.Errorf("loop.Once after %d events: %w", s.events, err)
		}
	}
	el := time.Since(t0).Seconds()
	res = Result{
		Backend:        backend,
		Shape:          shape,
		Events:         s.events,
		Seconds:        el,
		EventsPerSec:   float64(s.events) / el,
		Spurious:       s.spurious,
		SignalsRaised:  s.raised,
		SignalsCounted: s.counted,
	}
	return res, nil
}

// runNetpoller is ../../shared/anchors/gonetpoll/main.go: a writer goroutine writes one byte per
// token, a reader goroutine reads it, counts an event and hands the token back, until
// opt.Events events. The same measurement serves every fd_speed shape. Both pipe ends are
// closed and both goroutines have ended when it returns.
func runNetpoller(shape string, opt Options) (Result, error) {
	if _, ok := extraPairs(shape); !ok {
		return Result{}, fmt.Errorf("%s has no %s shape (no signals or timer in a goroutine ping-pong)", Netpoller, shape)
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
		err error
	}
	readerDone := make(chan readResult, 1)
	go func() { // reader: counts read events
		b := make([]byte, 1)
		var n int64
		for n < opt.Events {
			if _, err := r.Read(b); err != nil {
				readerDone <- readResult{n, err}
				return
			}
			n++
			token <- struct{}{}
		}
		readerDone <- readResult{n, nil}
	}()
	t0 := time.Now()
	token <- struct{}{}
	rr := <-readerDone
	el := time.Since(t0).Seconds()
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
	return Result{
		Backend:      Netpoller,
		Shape:        shape,
		Events:       rr.n,
		Seconds:      el,
		EventsPerSec: float64(rr.n) / el,
	}, nil
}

// Config says what Run measures.
type Config struct {
	// Backends to measure, names from Backends(); nil or empty means all of them. Backends that
	// ringev.New rejects here are skipped with a note.
	Backends []string
	// Shapes to run, names from Shapes(); nil or empty means all of them.
	Shapes []string
	Options
	// Notes receives one line per skipped backend or shape (with the reason); nil discards them.
	Notes io.Writer
}

// Run measures every selected shape on every selected backend, shape by shape in the order of
// Shapes(), backend by backend in the order of Backends(), each in a goroutine of its own, and
// sets RatioToEpoll. A backend that ringev.New rejects is skipped with a note naming the reason,
// as is the context shape on Netpoller. Unknown names are an error before anything runs
// (wrapping ErrUnknownBackend or ErrUnknownShape). A failing measurement does not stop the
// others: Run returns what was measured and the failures joined (errors.Join).
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
	if cfg.Events < 0 {
		return nil, fmt.Errorf("events must be > 0, got %d", cfg.Events)
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
	for _, shape := range shapes {
		for _, b := range usable {
			if b == Netpoller && shape == ShapeContext {
				continue
			}
			r, err := RunPipes(b, shape, cfg.Options)
			if err != nil {
				errs = append(errs, err)
				continue
			}
			results = append(results, r)
		}
	}
	SetRatios(results)
	if len(results) == 0 && len(errs) == 0 {
		errs = append(errs, errors.New("nothing was measured (every selected backend was skipped)"))
	}
	return results, errors.Join(errs...)
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
