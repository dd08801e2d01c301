//go:build linux

package bench

// The completion modes of `ringev bench pipes`: the handlers' I/O as requests
// (ringev.Loop.Read and Loop.Write, one Callback each for every pipe's reads and writes), as the
// C proactor does (../../shared/anchors/uring_proactor_pipe.c). Each pipe has one read request
// at a time; its completion counts the event and submits the pipe's next write and next read.
// On the uring backend they are SQEs that go to the kernel with the loop's next
// io_uring_enter(2); on epoll, poll and uring-poll the loop emulates them with readiness and
// non-blocking read(2)/write(2).
//
// The order of those two requests is the whole difference between the proactor's two shapes,
// and both are modes here because they are the two cases a server meets:
//
//   - completion (the C proactor's `armed`): the next read first, then the write. The read
//     finds the pipe empty and waits in the kernel (on uring: armed in the pipe's poll); the
//     write wakes it. This is a server's recv waiting for its client, and the default.
//     Its figures are compared with the better of the two C shapes.
//   - completion-inline (the proactor's `inline`): the write first, then the read, which
//     finds the byte at once (on uring both complete inside the enter that submits them, with
//     no poll armed): I/O that completes at once, the best case of completion I/O.
//
// On the emulation the two orders cost the same (a write is tried at once, a read waits for
// readiness in both).
//
// Every shape runs in the completion modes: fd_speedN's idle pairs and fd_many's idle pipes stay
// fd events (never ready), fd_busy's N pipes are N chains of requests, and context's read
// completion raises the two signals before it counts.

import (
	"errors"
	"fmt"
	"runtime"

	"github.com/ringev/ringev"
	"golang.org/x/sys/unix"
)

// The completion modes (Options.Mode, Result.Mode).
const (
	// PipesModeCompletion: the handlers' I/O as requests, each read submitted before the write
	// that feeds it, so it waits in the kernel (uring_proactor_pipe armed).
	PipesModeCompletion = "completion"
	// PipesModeCompletionInline: the same with each write submitted before its read, which
	// then completes at once (uring_proactor_pipe inline).
	PipesModeCompletionInline = "completion-inline"
)

// completionModes are the completion modes, in the order they are run and printed (after the
// readiness modes).
func completionModes() []string {
	return []string{PipesModeCompletion, PipesModeCompletionInline}
}

// isCompletionMode reports whether mode is one of completionModes().
func isCompletionMode(mode string) bool {
	return mode == PipesModeCompletion || mode == PipesModeCompletionInline
}

// reqRun is the state of a run in a completion mode. Each pipe's read and write are IOs
// (ringev.Loop.NewRead, NewWrite), made once with a callback each and submitted again for
// every event, as a user of the loop writes a connection's I/O.
type reqRun struct {
	loop     *ringev.Loop
	pairs    []pipePair
	inline   bool // completion-inline: write, then read
	signals  bool // context: the read completion raises SIGUSR1 and SIGALRM first
	pid, tid int
	runCount
	err  error // the first failed request
	held []int // pipes whose read completed once the run was finished: resumed by resume
}

// fail records the first failure and ends the run.
func (s *reqRun) fail(err error) {
	if s.err == nil {
		s.err = err
	}
	s.finished = true
}

// makeIOs makes p's read and write IOs. The read's callback is tevent_pipe.c's rd, then the
// pipe's next submissions; a read that completes once the run is finished (a completion batch
// runs several) is held, uncounted, until resume, so that a run counts exactly its events.
// The write's buffer is the kernel's until its callback, which comes before that of the read
// it feeds: a write still pending when the next is due is an error. The read's callback
// submits the pipe's next two IOs in the mode's order: first, then second.
func (s *reqRun) makeIOs(p *pipePair) error {
	rd, err := s.loop.NewRead(p.rfd, p.rbuf[:], -1, func(_ *ringev.IO, n int, err error) {
		if err != nil || n != 1 {
			s.fail(fmt.Errorf("read request on pipe %d (fd %d): %d bytes, error %v", p.i, p.rfd, n, err))
			return
		}
		if s.finished {
			s.held = append(s.held, p.i)
			return
		}
		if s.signals {
			if unix.Tgkill(s.pid, s.tid, unix.SIGUSR1) == nil {
				s.raised++
			}
			if unix.Tgkill(s.pid, s.tid, unix.SIGALRM) == nil {
				s.raised++
			}
		}
		s.events++
		if s.target > 0 && s.events >= s.target {
			s.finished = true
		}
		if p.wpending {
			s.fail(fmt.Errorf("pipe %d: the write request on fd %d has not completed when the next is due", p.i, p.wfd))
			return
		}
		p.wpending = true
		if err := p.first.Submit(); err != nil {
			s.fail(fmt.Errorf("pipe %d: IO.Submit: %w", p.i, err))
		} else if err := p.second.Submit(); err != nil {
			s.fail(fmt.Errorf("pipe %d: IO.Submit: %w", p.i, err))
		}
	})
	if err != nil {
		return fmt.Errorf("Loop.NewRead on fd %d: %w", p.rfd, err)
	}
	wr, err := s.loop.NewWrite(p.wfd, p.wbuf[:], -1, func(_ *ringev.IO, n int, err error) {
		p.wpending = false
		if err != nil || n != 1 {
			s.fail(fmt.Errorf("write request on pipe %d (fd %d): %d bytes, error %v", p.i, p.wfd, n, err))
		}
	})
	if err != nil {
		return fmt.Errorf("Loop.NewWrite on fd %d: %w", p.wfd, err)
	}
	p.first, p.second = rd, wr
	if s.inline {
		p.first, p.second = wr, rd
	}
	return nil
}

// next submits p's next read and write, in the mode's order, as the read's callback does: the
// pipe's first ones, and those of a held pipe (resume).
func (s *reqRun) next(p *pipePair) {
	p.wpending = true
	if err := p.first.Submit(); err != nil {
		s.fail(fmt.Errorf("pipe %d: IO.Submit: %w", p.i, err))
	} else if err := p.second.Submit(); err != nil {
		s.fail(fmt.Errorf("pipe %d: IO.Submit: %w", p.i, err))
	}
}

// resume restarts the held pipes after a finished phase (the warm-up).
func (s *reqRun) resume() {
	for _, i := range s.held {
		s.next(&s.pairs[i])
	}
	s.held = s.held[:0]
}

// turn runs loop.Once until the run is finished.
func (s *reqRun) turn() error {
	for !s.finished {
		if err := s.loop.Once(); err != nil {
			return fmt.Errorf("loop.Once after %d events: %w", s.events, err)
		}
	}
	return s.err
}

// heapAllocs is the number of heap objects the process has allocated so far
// (runtime.MemStats.Mallocs, exact: ReadMemStats flushes every P's counts, stopping the world
// for a moment, once before and once after a timed run).
func heapAllocs() uint64 {
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return m.Mallocs
}

// lastRunAllocs is the number of heap objects allocated during the timed part of the last
// completion or fd_busy run (by any goroutine: the loop's, and the runtime's own), for the
// benchmarks' allocs/event; written by the run's goroutine before RunPipes returns.
var lastRunAllocs uint64

// runCompletion measures shape on a ringev backend in a completion mode. It must run in a
// goroutine of its own. The loop (which cancels the requests still pending), every fd event,
// signal, timer and pipe are closed, and RLIMIT_NOFILE restored, before it returns, also on
// error.
func runCompletion(backend, shape string, opt Options) (res Result, err error) {
	npairs := 1
	nidle := 0
	if n, ok := parseFdBusy(shape); ok {
		npairs = n
	} else if n, ok := parseFdMany(shape); ok {
		nidle = n - 1
	} else if _, ok := extraPairs(shape); !ok && shape != ShapeContext {
		return res, fmt.Errorf("%w %q", ErrUnknownShape, shape)
	}
	r, err := openRun(backend, opt.Mode, shape, npairs, nidle)
	if err != nil {
		return res, err
	}
	defer keepFirst(&err, r.close)
	loop, ps := r.loop, r.pairs
	s := &reqRun{loop: loop, pairs: ps, inline: opt.Mode == PipesModeCompletionInline, signals: shape == ShapeContext,
		pid: unix.Getpid(), tid: unix.Gettid(), held: make([]int, 0, npairs)}
	for i := range ps {
		if err := s.makeIOs(&ps[i]); err != nil {
			return res, err
		}
	}
	if err := r.addShape(&s.runCount, shape, ps[0].rfd, ps[0].wfd, opt.Events, opt.ContextDuration); err != nil {
		return res, err
	}
	defer postStop(loop, opt.Stop, func() { s.finished, s.stopped = true, true })()
	registered, regErr := false, error(nil)
	if !opt.UnregisteredFiles && backend == ringBackend {
		if registered, regErr = registerPipes(loop, ps); regErr != nil && registered {
			return res, regErr // registered and could not be undone
		}
	}
	for i := range ps {
		s.next(&ps[i])
	}
	if err := s.warmUp(opt.Events, s.turn); err != nil {
		return res, err
	}
	s.resume()
	a0 := heapAllocs()
	res, err = s.timed(backend, opt.Mode, shape, s.turn)
	lastRunAllocs = heapAllocs() - a0
	res.RegisteredFiles = registered
	if regErr != nil {
		res.RegisterFileError = regErr.Error()
	}
	return res, err
}

// registerFile and unregisterFile are ringev.Loop.RegisterFile and UnregisterFile; tests
// replace them to play a kernel that refuses RegisterFile and to see what is undone.
var (
	registerFile   = (*ringev.Loop).RegisterFile
	unregisterFile = (*ringev.Loop).UnregisterFile
)

// registerPipes puts both ends of every pipe in loop's registered-file table and reports true.
// When the loop refuses one (a kernel before 5.19 has no sparse table, for example) it empties
// the slots it filled, so that the run goes on with every pipe unregistered, and reports false
// with the refusal; true with an error only when a slot could not be emptied either.
func registerPipes(loop *ringev.Loop, ps []pipePair) (bool, error) {
	done := make([]int, 0, 2*len(ps)) // the fds registered so far
	for _, p := range ps {
		for _, fd := range [2]int{p.rfd, p.wfd} {
			err := registerFile(loop, fd)
			if err == nil {
				done = append(done, fd)
				continue
			}
			err = fmt.Errorf("Loop.RegisterFile on pipe %d: %w", p.i, err)
			for _, fd := range done {
				if uerr := unregisterFile(loop, fd); uerr != nil {
					return true, errors.Join(err, fmt.Errorf("undoing it: Loop.UnregisterFile(%d): %w", fd, uerr))
				}
			}
			return false, err
		}
	}
	return true, nil
}
