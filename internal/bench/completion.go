package bench

// This file adds to `ringev bench pipes` the completion mode (issue 12) and the fd_busy shape.
//
//   - Mode "completion" (PipesModeCompletion): the handlers' I/O as requests (Loop.Read and
//     Loop.Write): a read's completion counts an event and makes the write of the next byte and
//     the next read, so on the uring backend both go to the kernel in the loop's next enter
//     (where the write completes at once and the read finds its byte: the C peer
//     uring_proactor_pipe's "inline" shape). On the other backends the requests are emulated
//     with readiness and non-blocking syscalls. fd_speed2/3's idle pairs and fd_many's idle
//     pipes are fd events, as in the other modes; the context shape has no completion mode.
//   - Shape fd_busy<N> (ShapeFdBusy, Config.Busy, --busy): N pipes, all active, each with its
//     own reader and writer: in the readiness modes a Read fd event reading one byte (an
//     event) and a Write fd event writing one byte on each pipe (tevent_pipe's "busy N"), in
//     completion mode a read request and a write request per pipe as above.

import (
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/ringev/ringev"
	"golang.org/x/sys/unix"
)

// PipesModeCompletion is the mode whose handlers' I/O are requests (see the file comment).
const PipesModeCompletion = "completion"

// ShapeFdBusy stands for one run per active pipe count (Config.Busy), each named
// FdBusyShape(n): fd_busy1, fd_busy16, fd_busy256.
const ShapeFdBusy = "fd_busy"

// DefaultBusy are fd_busy's pipe counts when Config.Busy is empty.
var DefaultBusy = []int{1, 16, 256}

// MaxBusy is the largest fd_busy pipe count.
const MaxBusy = 4096

// FdBusyShape is the name of the fd_busy run with n active pipes.
func FdBusyShape(n int) string { return ShapeFdBusy + strconv.Itoa(n) }

// parseFdBusy returns N for "fd_busy<N>" with 1 <= N <= MaxBusy.
func parseFdBusy(shape string) (int, bool) {
	s, ok := strings.CutPrefix(shape, ShapeFdBusy)
	if !ok {
		return 0, false
	}
	n, err := strconv.Atoi(s)
	if err != nil || n < 1 || n > MaxBusy || strconv.Itoa(n) != s {
		return 0, false
	}
	return n, true
}

// busyShapes expands fd_busy into its runs (counts: Config.Busy, or DefaultBusy).
func busyShapes(counts []int) ([]string, error) {
	if len(counts) == 0 {
		counts = DefaultBusy
	}
	var out []string
	for _, n := range counts {
		if n < 1 || n > MaxBusy {
			return nil, fmt.Errorf("fd_busy: pipe count %d is not in [1, %d]", n, MaxBusy)
		}
		out = append(out, FdBusyShape(n))
	}
	return out, nil
}

// skipRun reports whether Run leaves out shape on backend in mode: the netpoller has no
// fd_busy, the context shape no completion mode.
func skipRun(backend, shape, mode string) bool {
	_, busy := parseFdBusy(shape)
	return busy && backend == Netpoller || shape == ShapeContext && mode == PipesModeCompletion
}

// busyPipe is one active pipe of a requests or fd_busy run.
type busyPipe struct {
	run      *busyRun
	rfd, wfd int
	rbuf     []byte
	wbuf     []byte
}

// busyRun is the state of a completion-mode or fd_busy measurement.
type busyRun struct {
	loop     *ringev.Loop
	pipes    []busyPipe
	cb       ringev.Callback // one callback for every request (token: pipe index << 1 | write)
	syscalls bool
	target   int64
	events   int64
	spurious int64
	finished bool
	err      error
}

// onDone is every request's callback: a read's completion makes the next write and read.
func (s *busyRun) onDone(c *ringev.Completion) {
	if c.Err != nil || c.N != 1 {
		if s.err == nil && !s.finished {
			s.err = fmt.Errorf("%v on fd %d: N %d, %v", c.Op, c.Fd, c.N, c.Err)
		}
		s.finished = true
		return
	}
	if c.Token&1 == 1 {
		return // a write
	}
	s.events++
	if s.events >= s.target {
		s.finished = true
	}
	p := &s.pipes[c.Token>>1]
	if _, err := s.loop.Write(p.wfd, p.wbuf, -1, s.cb, c.Token|1); err != nil {
		s.err, s.finished = err, true
	}
	if _, err := s.loop.Read(p.rfd, p.rbuf, -1, s.cb, c.Token); err != nil {
		s.err, s.finished = err, true
	}
}

// onRead and onWrite are the readiness modes' fd_busy handlers (tevent_pipe's rd and wr).
func (p *busyPipe) onRead(*ringev.FdEvent, ringev.Flags) {
	s := p.run
	var n int
	var err error
	if s.syscalls {
		n, err = ringev.ReadNonblocking(p.rfd, p.rbuf)
	} else {
		n, err = s.loop.ReadNonblocking(p.rfd, p.rbuf)
	}
	if n != 1 || err != nil {
		s.spurious++
		return
	}
	if s.events++; s.events >= s.target {
		s.finished = true
	}
}

func (p *busyPipe) onWrite(*ringev.FdEvent, ringev.Flags) {
	s := p.run
	var n int
	var err error
	if s.syscalls {
		n, err = ringev.WriteNonblocking(p.wfd, p.wbuf)
	} else {
		n, err = s.loop.WriteNonblocking(p.wfd, p.wbuf)
	}
	if n != 1 || err != nil {
		s.spurious++
	}
}

func (s *busyRun) turn() error {
	for !s.finished {
		if err := s.loop.Once(); err != nil {
			return fmt.Errorf("loop.Once after %d events: %w", s.events, err)
		}
	}
	return s.err
}

// onIdle counts a call of an idle fd event (never expected).
func (s *busyRun) onIdle(*ringev.FdEvent, ringev.Flags) { s.spurious++ }

// runRequests measures shape in completion mode, or fd_busy<N> in any mode, on a ringev
// backend. It must run in a goroutine of its own. Everything it opens is closed before it
// returns, also on error.
func runRequests(backend, shape string, opt Options) (res Result, err error) {
	if shape == ShapeContext {
		return res, fmt.Errorf("%s has no %s mode", ShapeContext, PipesModeCompletion)
	}
	completion := opt.Mode == PipesModeCompletion
	active := 1
	if n, ok := parseFdBusy(shape); ok {
		active = n
	}
	nidle, many := parseFdMany(shape)
	if many {
		nidle--
		restore, err := reserveFds(nidle + 1)
		if err != nil {
			return res, err
		}
		defer func() {
			if rerr := restore(); rerr != nil && err == nil {
				err = rerr
			}
		}()
	} else if active > 1 {
		restore, err := reserveFds(2*active + 1)
		if err != nil {
			return res, err
		}
		defer func() {
			if rerr := restore(); rerr != nil && err == nil {
				err = rerr
			}
		}()
	}
	opts := loopOptions(backend, opt.Mode)
	if completion {
		opts = loopOptions(backend, PipesModeDefault)
	}
	loop, err := ringev.New(opts...)
	if err != nil {
		return res, err
	}
	s := &busyRun{loop: loop, target: opt.Events, syscalls: opt.Mode == PipesModeSyscall}
	s.cb = s.onDone
	var fds, idle []int
	var fdes []*ringev.FdEvent
	defer func() {
		for _, e := range fdes {
			e.Close()
		}
		if cerr := loop.Close(); cerr != nil && err == nil {
			err = fmt.Errorf("closing the loop: %w", cerr)
		}
		if cerr := closeFds(fds); cerr != nil && err == nil {
			err = cerr
		}
		if cerr := closeFds(idle); cerr != nil && err == nil {
			err = cerr
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
	s.pipes = make([]busyPipe, active)
	for i := range s.pipes {
		var p [2]int
		if err := unix.Pipe2(p[:], unix.O_NONBLOCK|unix.O_CLOEXEC); err != nil {
			return res, fmt.Errorf("pipe2: %w", err)
		}
		fds = append(fds, p[0], p[1])
		s.pipes[i] = busyPipe{run: s, rfd: p[0], wfd: p[1], rbuf: make([]byte, 1), wbuf: []byte{'x'}}
	}
	if extra, ok := extraPairs(shape); ok && !many {
		for range extra {
			if err := addFd(s.pipes[0].rfd, ringev.Write, s.onIdle); err != nil {
				return res, err
			}
			if err := addFd(s.pipes[0].wfd, ringev.Read, s.onIdle); err != nil {
				return res, err
			}
		}
	}
	if many {
		if idle, err = idlePipes(nidle); err != nil {
			return res, err
		}
		for _, fd := range idle {
			if err := addFd(fd, ringev.Read, s.onIdle); err != nil {
				return res, err
			}
		}
	}
	for i := range s.pipes {
		p := &s.pipes[i]
		if completion {
			if _, err := loop.Write(p.wfd, p.wbuf, -1, s.cb, uint64(i)<<1|1); err != nil {
				return res, err
			}
			if _, err := loop.Read(p.rfd, p.rbuf, -1, s.cb, uint64(i)<<1); err != nil {
				return res, err
			}
			continue
		}
		if err := addFd(p.rfd, ringev.Read, p.onRead); err != nil {
			return res, err
		}
		if err := addFd(p.wfd, ringev.Write, p.onWrite); err != nil {
			return res, err
		}
	}
	if opt.Stop != nil {
		done, exited := make(chan struct{}), make(chan struct{})
		defer func() { close(done); <-exited }()
		go func() {
			defer close(exited)
			select {
			case <-opt.Stop:
				loop.Post(func() { s.finished, s.err = true, ErrStopped })
			case <-done:
			}
		}()
	}
	if warm := warmupEvents(opt.Events); warm > 0 {
		s.target = warm
		if err := s.turn(); err != nil {
			return res, fmt.Errorf("warm-up: %w", err)
		}
		s.finished, s.events, s.target = false, 0, opt.Events
	}
	t0 := time.Now()
	if err := s.turn(); err != nil {
		return res, err
	}
	res = newResult(backend, opt.Mode, shape, s.events, time.Since(t0).Seconds())
	res.Spurious = s.spurious
	if completion {
		// Let the requests still in flight end before the loop closes.
		closing := 0
		closed := func(*ringev.Completion) { closing-- }
		for _, fd := range fds {
			if _, err := loop.CloseFd(fd, closed, 0); err == nil {
				closing++
			}
		}
		for closing > 0 {
			if err := loop.Once(); err != nil {
				return res, fmt.Errorf("closing the pipes: %w", err)
			}
		}
		fds = nil // closed by CloseFd
	}
	return res, nil
}
