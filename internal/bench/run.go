//go:build linux

package bench

// The scaffolding that runLoop (readiness modes), runBusy (fd_busy in a readiness mode) and
// runCompletion (the completion modes) share: what their handlers count, what they open and
// close, and the warm-up and timed turns.

import (
	"fmt"
	"runtime"
	"time"

	"github.com/ringev/ringev"
	"golang.org/x/sys/unix"
)

// runCount is what a loop run's handlers count, and whether the run is over. pipeRun, busyRun
// and reqRun embed it.
type runCount struct {
	target   int64 // stop after this many read events (0: the context timer stops the run)
	events   int64
	spurious int64
	raised   int64
	counted  int64
	finished bool
	stopped  bool // Options.Stop ended the run
}

// onIdle is tevent_pipe.c's idle: an fd event that must never be called.
func (c *runCount) onIdle(*ringev.FdEvent, ringev.Flags) { c.spurious++ }

// onSignal is tevent_pipe.c's cnt.
func (c *runCount) onSignal(_ *ringev.Signal, count int) { c.counted += int64(count) }

// warmUp turns a run that counts to a target (c.target > 0) through its warm-up,
// warmupEvents(events) read events untimed, then sets it up for the timed run of events. It
// returns turn's error, or ErrStopped if Options.Stop ended the run.
func (c *runCount) warmUp(events int64, turn func() error) error {
	warm := warmupEvents(events)
	if c.target == 0 || warm == 0 {
		return nil
	}
	c.target = warm
	if err := turn(); err != nil {
		return fmt.Errorf("warm-up: %w", err)
	}
	if c.stopped {
		return ErrStopped
	}
	c.finished, c.events, c.target = false, 0, events
	return nil
}

// timed turns the timed run and returns its result: events/s, the loop thread's CPU time per
// event, the spurious calls and the signals. It returns turn's error, or ErrStopped if
// Options.Stop ended the run.
func (c *runCount) timed(backend, mode, shape string, turn func() error) (Result, error) {
	t0 := time.Now()
	cpu0 := ownThreadCPU()
	if err := turn(); err != nil {
		return Result{}, err
	}
	cpu1 := ownThreadCPU()
	el := time.Since(t0).Seconds()
	if c.stopped {
		return Result{}, ErrStopped
	}
	res := newResult(backend, mode, shape, c.events, el)
	if cpu0 >= 0 && cpu1 >= cpu0 && c.events > 0 {
		res.CPUNsPerEvent = float64(cpu1-cpu0) / float64(c.events)
	}
	res.Spurious, res.SignalsRaised, res.SignalsCounted = c.spurious, c.raised, c.counted
	return res, nil
}

// runLoopOptions are the ringev.New options of a run of shape on backend in mode: loopOptions,
// and for the context shape exact signals (amd64), to count every signal as tevent does
// (os/signal merges back-to-back deliveries).
func runLoopOptions(backend, mode, shape string) []ringev.Option {
	opts := loopOptions(backend, mode)
	if shape == ShapeContext && runtime.GOARCH == "amd64" {
		opts = append(opts, ringev.WithExactSignals())
	}
	return opts
}

// runParts are what a loop run opened. close closes them in this order: the fd events, the
// signals, the timer, the loop (which cancels the requests still pending), the pipes, the idle
// pipes; then it restores RLIMIT_NOFILE.
type runParts struct {
	loop    *ringev.Loop
	fdes    []*ringev.FdEvent
	sigs    []*ringev.Signal
	timer   *ringev.Timer
	pairs   []pipePair
	idle    []int        // fd_many's idle pipes
	restore func() error // reserveFds's, or nil
}

// openRun makes sure that 2*npairs + extra more fds can be opened (reserveFds), makes the loop
// of shape on backend in mode (runLoopOptions) and opens npairs pipes (openPairs). On error it
// returns that of the step that failed, with nothing left open and RLIMIT_NOFILE restored.
func openRun(backend, mode, shape string, npairs, extra int) (*runParts, error) {
	restore, err := reserveFds(2*npairs + extra)
	if err != nil {
		return nil, err
	}
	loop, err := ringev.New(runLoopOptions(backend, mode, shape)...)
	if err != nil {
		restore()
		return nil, err
	}
	ps, err := openPairs(npairs)
	if err != nil {
		loop.Close()
		restore()
		return nil, err
	}
	return &runParts{loop: loop, pairs: ps, restore: restore}, nil
}

// addFd adds an fd event to the loop; its error names fd and flags.
func (r *runParts) addFd(fd int, f ringev.Flags, h ringev.FdHandler) (*ringev.FdEvent, error) {
	e, err := r.loop.AddFd(fd, f, h)
	if err != nil {
		return nil, fmt.Errorf("AddFd(%d, %v): %w", fd, f, err)
	}
	r.fdes = append(r.fdes, e)
	return e, nil
}

// addShape adds what shape has beside its active pipes, of which (rfd, wfd) is the first: for
// the context shape, a timer that finishes the run after d and SIGALRM and SIGUSR1 counted by
// c.onSignal; for fd_speed2 and fd_speed3, 1 or 2 pairs of idle fd events on rfd (Write) and
// wfd (Read), which are never ready; for fd_many<N>, N-1 idle pipes (opened here) with a Read fd
// event each; the idle fd events call c.onIdle. For every shape but context it sets c.target to
// events.
func (r *runParts) addShape(c *runCount, shape string, rfd, wfd int, events int64, d time.Duration) error {
	if shape == ShapeContext {
		r.timer = r.loop.AddTimer(d, func(*ringev.Timer) { c.finished = true })
		for _, sig := range []unix.Signal{unix.SIGALRM, unix.SIGUSR1} {
			sg, err := r.loop.AddSignal(sig, c.onSignal)
			if err != nil {
				return fmt.Errorf("AddSignal(%v): %w", sig, err)
			}
			r.sigs = append(r.sigs, sg)
		}
		return nil
	}
	c.target = events
	if n, many := parseFdMany(shape); many {
		var err error
		if r.idle, err = idlePipes(n - 1); err != nil {
			return err
		}
		for _, fd := range r.idle {
			if _, err := r.addFd(fd, ringev.Read, c.onIdle); err != nil {
				return err
			}
		}
		return nil
	}
	extra, _ := extraPairs(shape)
	for range extra {
		if _, err := r.addFd(rfd, ringev.Write, c.onIdle); err != nil {
			return err
		}
		if _, err := r.addFd(wfd, ringev.Read, c.onIdle); err != nil {
			return err
		}
	}
	return nil
}

// close closes what the run opened and returns the first error.
func (r *runParts) close() error {
	var first error
	keep := func(err error) {
		if err != nil && first == nil {
			first = err
		}
	}
	for _, e := range r.fdes {
		if err := e.Close(); err != nil {
			keep(fmt.Errorf("closing the fd event on fd %d: %w", e.Fd(), err))
		}
	}
	for _, sg := range r.sigs {
		sg.Close()
	}
	if r.timer != nil {
		r.timer.Stop()
	}
	if err := r.loop.Close(); err != nil {
		keep(fmt.Errorf("closing the loop: %w", err))
	}
	keep(closePairs(r.pairs))
	if err := closeFds(r.idle); err != nil {
		keep(fmt.Errorf("closing an idle pipe: %w", err))
	}
	if r.restore != nil {
		keep(r.restore())
	}
	return first
}

// keepFirst calls f and stores its error in *err unless *err holds one already: a deferred
// clean-up's error, where the run's own comes first.
func keepFirst(err *error, f func() error) {
	if ferr := f(); ferr != nil && *err == nil {
		*err = ferr
	}
}
