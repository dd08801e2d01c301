//go:build linux

package bench

// The fd_busy shape: N pipes, all active, each with its own reader and writer, as
// tevent_pipe.c's `busy N` and epoll_busy.c (../../shared/anchors): on a ringev backend in a
// readiness mode, a Read fd event on each pipe's read end whose handler reads one byte (an
// event) and a Write fd event on its write end whose handler writes one byte; in a completion
// mode (completion.go) each pipe's read and write are requests; on the netpoller, a reader and a
// writer goroutine per pipe ping-ponging one byte. fd_busy1 is fd_speed1's pipe; fd_busy16 and
// fd_busy256 are the shapes compared with the C peers, where one wait can find many handlers ready and one
// io_uring_enter(2) can carry many requests. A run counts read events over every pipe until
// Options.Events.

import (
	"errors"
	"fmt"
	"io"
	"os"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/ringev/ringev"
	"golang.org/x/sys/unix"
)

// ShapeFdBusy is the family name of the fd_busy shape; a run is named FdBusyShape(n), for
// example "fd_busy16": n pipes, every one active.
const ShapeFdBusy = "fd_busy"

// DefaultBusy are the pipe counts of the fd_busy shape when Config.Busy is empty.
var DefaultBusy = []int{1, 16, 256}

// MaxBusy is the largest pipe count of fd_busy (two fds a pipe).
const MaxBusy = 100_000

// FdBusyShape returns the name of the fd_busy run with n pipes: "fd_busy<n>".
func FdBusyShape(n int) string { return ShapeFdBusy + strconv.Itoa(n) }

// parseFdBusy returns n for a shape named "fd_busy<n>" with 1 <= n <= MaxBusy (no sign, no
// leading zero); ok is false for any other name.
func parseFdBusy(shape string) (n int, ok bool) { return parseCounted(shape, ShapeFdBusy, MaxBusy) }

// expandBusy appends to runs fd_busy<n> for every count of counts (DefaultBusy when empty),
// without duplicates; a count outside [1, MaxBusy] is an error naming it.
func expandBusy(runs []string, counts []int) ([]string, error) {
	if len(counts) == 0 {
		counts = DefaultBusy
	}
	for _, n := range counts {
		if n < 1 || n > MaxBusy {
			return runs, fmt.Errorf("fd_busy: pipe count %d is not in [1, %d]", n, MaxBusy)
		}
		if name := FdBusyShape(n); !containsString(runs, name) {
			runs = append(runs, name)
		}
	}
	return runs, nil
}

func containsString(ss []string, s string) bool {
	for _, x := range ss {
		if x == s {
			return true
		}
	}
	return false
}

// otherRunner returns the runner of the fd_busy and completion shapes and modes (fd_busy<N> in any
// mode and on the netpoller, any shape in a completion mode), or nil for those runLoop and
// runNetpoller measure.
func otherRunner(backend, shape, mode string) func(backend, shape string, opt Options) (Result, error) {
	_, busy := parseFdBusy(shape)
	switch {
	case backend == Netpoller && busy:
		return func(_, shape string, opt Options) (Result, error) { return runNetpollerBusy(shape, opt) }
	case backend == Netpoller:
		return nil
	case isCompletionMode(mode):
		return runCompletion
	case busy:
		return runBusy
	}
	return nil
}

// pipePair is one active pipe of a run: its fds (O_NONBLOCK, O_CLOEXEC) and one-byte buffers,
// which live as long as the run (a request's buffer belongs to the kernel until its callback).
type pipePair struct {
	i        int
	rfd, wfd int
	rbuf     [1]byte
	wbuf     [1]byte
	wpending bool // completion modes: its write request has not completed yet
	// completion modes: its read and write IOs, submitted in the mode's order (first, second)
	first, second *ringev.IO
}

// openPairs opens n non-blocking pipes.
func openPairs(n int) ([]pipePair, error) {
	ps := make([]pipePair, n)
	for i := range ps {
		var p [2]int
		if err := unix.Pipe2(p[:], unix.O_NONBLOCK|unix.O_CLOEXEC); err != nil {
			closePairs(ps[:i])
			return nil, fmt.Errorf("pipe2 (pipe %d of %d): %w", i+1, n, err)
		}
		ps[i] = pipePair{i: i, rfd: p[0], wfd: p[1]}
	}
	return ps, nil
}

// closePairs closes every pipe's fds (those still >= 0) and returns the first error.
func closePairs(ps []pipePair) error {
	var first error
	for i := range ps {
		for _, fd := range []*int{&ps[i].rfd, &ps[i].wfd} {
			if *fd < 0 {
				continue
			}
			if err := unix.Close(*fd); err != nil && first == nil {
				first = fmt.Errorf("closing pipe fd %d: %w", *fd, err)
			}
			*fd = -1
		}
	}
	return first
}

// busyRun is the state of an fd_busy run in a readiness mode.
type busyRun struct {
	loop     *ringev.Loop
	syscalls bool
	runCount
}

// onRead is tevent_pipe.c's brd for the pipe in ev.Data. Once the run has its events it
// leaves the byte where it is (level-triggered, nothing is lost), so that the count is exact in
// mode all too, where one Once runs every ready handler.
func (s *busyRun) onRead(ev *ringev.FdEvent, _ ringev.Flags) {
	if s.finished {
		return
	}
	p := ev.Data.(*pipePair)
	var n int
	var err error
	if s.syscalls {
		n, err = ringev.ReadNonblocking(p.rfd, p.rbuf[:])
	} else {
		n, err = s.loop.ReadNonblocking(p.rfd, p.rbuf[:])
	}
	if n != 1 || err != nil {
		s.spurious++
		return
	}
	s.events++
	if s.events >= s.target {
		s.finished = true
	}
}

// onWrite is tevent_pipe.c's wr for the pipe in ev.Data.
func (s *busyRun) onWrite(ev *ringev.FdEvent, _ ringev.Flags) {
	if s.finished {
		return
	}
	p := ev.Data.(*pipePair)
	var n int
	var err error
	if s.syscalls {
		n, err = ringev.WriteNonblocking(p.wfd, p.wbuf[:])
	} else {
		n, err = s.loop.WriteNonblocking(p.wfd, p.wbuf[:])
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
	return nil
}

// postStop ends the run at the loop's next turn when stop is closed; the returned function
// must be called before the loop closes.
func postStop(loop *ringev.Loop, stop <-chan struct{}, set func()) (cancel func()) {
	if stop == nil {
		return func() {}
	}
	done, exited := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(exited)
		select {
		case <-stop:
			loop.Post(set)
		case <-done:
		}
	}()
	return func() { close(done); <-exited }
}

// runBusy measures fd_busy<N> on a ringev backend in a readiness mode. It must run in a
// goroutine of its own. Every fd event, the loop and every pipe are closed, and RLIMIT_NOFILE
// restored, before it returns, also on error.
func runBusy(backend, shape string, opt Options) (res Result, err error) {
	n, ok := parseFdBusy(shape)
	if !ok {
		return res, fmt.Errorf("%w %q", ErrUnknownShape, shape)
	}
	r, err := openRun(backend, opt.Mode, shape, n, 0)
	if err != nil {
		return res, err
	}
	defer keepFirst(&err, r.close)
	loop, ps := r.loop, r.pairs
	s := &busyRun{loop: loop, syscalls: opt.Mode == PipesModeSyscall}
	for i := range ps {
		p := &ps[i]
		for _, w := range []struct {
			fd int
			f  ringev.Flags
			h  ringev.FdHandler
		}{{p.rfd, ringev.Read, s.onRead}, {p.wfd, ringev.Write, s.onWrite}} {
			e, err := r.addFd(w.fd, w.f, w.h)
			if err != nil {
				return res, err
			}
			e.Data = p
		}
	}
	defer postStop(loop, opt.Stop, func() { s.finished, s.stopped = true, true })()
	s.target = opt.Events
	if err := s.warmUp(opt.Events, s.turn); err != nil {
		return res, err
	}
	a0 := heapAllocs()
	res, err = s.timed(backend, opt.Mode, shape, s.turn)
	lastRunAllocs = heapAllocs() - a0
	return res, err
}

// runNetpollerBusy is fd_busy<N> through the Go runtime netpoller: per pipe, a writer goroutine
// writes one byte per token and a reader goroutine reads it, counts an event and hands the token
// back (runNetpoller's ping-pong, N times over). The clock runs from the warm-up's last event to
// the run's last, counted over all pipes. Every pipe is closed and every goroutine has ended
// when it returns.
func runNetpollerBusy(shape string, opt Options) (res Result, err error) {
	n, ok := parseFdBusy(shape)
	if !ok {
		return res, fmt.Errorf("%w %q", ErrUnknownShape, shape)
	}
	restore, err := reserveFds(2 * n)
	if err != nil {
		return res, err
	}
	defer keepFirst(&err, restore)
	warm := warmupEvents(opt.Events)
	end := warm + opt.Events
	var (
		total  atomic.Int64
		stop   atomic.Bool
		mu     sync.Mutex
		t0, t1 time.Time
		errs   []error
		wg     sync.WaitGroup
	)
	if warm == 0 {
		t0 = time.Now()
	}
	fail := func(err error) {
		mu.Lock()
		errs = append(errs, err)
		mu.Unlock()
		stop.Store(true)
	}
	var files []*os.File
	defer func() {
		for _, f := range files {
			f.Close() // the readers' ends (the writers close their own)
		}
	}()
	for i := 0; i < n; i++ {
		r, w, err := os.Pipe()
		if err != nil {
			stop.Store(true)
			wg.Wait()
			return res, fmt.Errorf("pipe %d of %d: %w", i+1, n, err)
		}
		files = append(files, r)
		token := make(chan struct{}, 1)
		wg.Add(2)
		go func() { // writer: one byte per token; closing w tells the reader to stop
			defer wg.Done()
			defer w.Close()
			b := []byte{0}
			for range token {
				if _, err := w.Write(b); err != nil {
					fail(fmt.Errorf("writer %d: %w", i, err))
					return
				}
			}
		}()
		go func() { // reader: counts events; it owns token and closes it when it stops
			defer wg.Done()
			defer close(token)
			b := make([]byte, 1)
			for {
				if _, err := r.Read(b); err != nil {
					if !errors.Is(err, io.EOF) || !stop.Load() {
						fail(fmt.Errorf("reader %d after %d events: %w", i, total.Load(), err))
					}
					return
				}
				switch k := total.Add(1); {
				case k == warm:
					mu.Lock()
					t0 = time.Now()
					mu.Unlock()
				case k == end:
					mu.Lock()
					t1 = time.Now()
					mu.Unlock()
					stop.Store(true)
				}
				if stop.Load() {
					return
				}
				token <- struct{}{}
			}
		}()
		token <- struct{}{}
	}
	if opt.Stop != nil {
		done := make(chan struct{})
		defer close(done)
		go func() {
			select {
			case <-opt.Stop:
				stop.Store(true)
			case <-done:
			}
		}()
	}
	wg.Wait()
	if len(errs) > 0 {
		return res, errors.Join(errs...)
	}
	if t1.IsZero() {
		return res, ErrStopped
	}
	return newResult(Netpoller, PipesModeDefault, shape, opt.Events, t1.Sub(t0).Seconds()), nil
}
