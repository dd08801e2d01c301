//go:build unix

package server

import (
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/ringev/ringev"
	"golang.org/x/sys/unix"
)

// The I/O APIs a server can be driven with (Config.API).
const (
	// APIReadiness: fd events and the loop's non-blocking read(2)/write(2) (readiness.go).
	APIReadiness = "readiness"
	// APIRequests: completion requests (ringev issue 12): multishot accept, recv (see
	// Config.Recv), send and close as requests (requests.go); on every backend (SQEs on
	// uring, emulated with readiness and non-blocking syscalls on epoll and poll).
	APIRequests = "requests"
	// DefaultAPI is Config.API's default: APIRequests. On uring it makes ~0.2 syscalls per
	// request where the readiness API makes ~2.1 (a read and a write each; redis-benchmark
	// -P 1, 50 connections), for no more CPU per request; on epoll and poll the emulation
	// makes the syscalls the readiness API makes (recvfrom/sendto for read/write) at about
	// the same cost. See docs/serve.md.
	DefaultAPI = APIRequests
)

// connDriver is what Server asks of a loop's driver (readiness.go, requests.go).
type connDriver interface {
	// shutdown stops accepting and drains the connections (see Server.Shutdown); called on
	// the loop's goroutine.
	shutdown(timeout time.Duration)
	// closeAll closes every connection at once (see Server.Close); called on the loop's
	// goroutine after shutdown.
	closeAll()
}

// DefaultShutdownTimeout is Config.ShutdownTimeout's default.
const DefaultShutdownTimeout = 5 * time.Second

// Config describes a server for Start.
type Config struct {
	// Addr is the TCP address to listen on, "host:port"; port 0 picks a free port (Server.Addr
	// tells which). Every loop listens on it with its own socket (SO_REUSEPORT).
	Addr string
	// Backend is the loops' backend (ringev.WithBackend); "" is "auto".
	Backend string
	// API is APIRequests or APIReadiness; "" means DefaultAPI.
	API string
	// Recv is how the requests API receives: RecvMultishot, RecvPerConn, or "" for DefaultRecv
	// (RecvMultishot, or RecvPerConn where the kernel lacks the multishot recv: see
	// DefaultRecv; Server.Recv says which). Ignored by the readiness API.
	Recv string
	// Loops is the number of loops, each on its own OS thread; 0 means 1.
	Loops int
	// NewProtocol makes the Protocol of one loop; it is called once per loop, on that loop's
	// goroutine.
	NewProtocol func() Protocol
	// ShutdownTimeout bounds Shutdown's drain: connections still open after it are closed.
	// 0 means DefaultShutdownTimeout.
	ShutdownTimeout time.Duration
	// Logf, if not nil, is told of conditions the server handles by itself (accept failing for
	// lack of fds, ...). It is called from the loops' goroutines.
	Logf func(format string, args ...any)
	// LoopOptions are added to each loop's options (after WithBackend). The server adds no
	// batching wait by itself: `ringev serve` adds ringev.WithBatchWait(16, 50 µs) on uring
	// where ringev.CheckBatchWait is nil and gives the runtime a spare P (GOMAXPROCS Loops+1),
	// which the batching wait needs (its doc says why); a program does the same here.
	LoopOptions []ringev.Option
}

// Server is a running server: Start's loops, each serving its own listening socket.
type Server struct {
	cfg      Config
	recvAuto bool // Config.Recv was "": DefaultRecv, or RecvPerConn where it is unavailable
	recv     string
	addr     string
	backend  string
	reason   string // the first loop's BackendReason
	loops    []*ringev.Loop
	drivers  []connDriver
	conns    atomic.Int64
	done     sync.WaitGroup
	errMu    sync.Mutex
	err      error // the first loop's error
}

// Start opens the listening sockets and starts the loops; it returns once every loop is serving.
// Errors: one naming an unknown API or Recv mode; one naming the address when it cannot be listened on (wrapping the
// errno, e.g. unix.EADDRINUSE); the backend's error from ringev.New (e.g. wrapping
// ringev.ErrUnknownBackend); with Recv RecvMultishot named (not "") on a kernel without the
// multishot recv, the loop's error naming the feature (wrapping unix.EOPNOTSUPP), or the error
// that made the provided buffer ring fail (e.g. ENOMEM). On error
// nothing is left running or open.
func Start(cfg Config) (*Server, error) {
	api, err := checkAPI(cfg.API, cfg.Recv)
	if err != nil {
		return nil, err
	}
	cfg.API = api
	recvAuto := cfg.Recv == ""
	if recvAuto {
		cfg.Recv = DefaultRecv
	}
	if cfg.NewProtocol == nil {
		return nil, errors.New("server: Config.NewProtocol is nil")
	}
	if cfg.Loops <= 0 {
		cfg.Loops = 1
	}
	if cfg.ShutdownTimeout <= 0 {
		cfg.ShutdownTimeout = DefaultShutdownTimeout
	}
	if cfg.Backend == "" {
		cfg.Backend = "auto"
	}
	s := &Server{cfg: cfg, recvAuto: recvAuto, loops: make([]*ringev.Loop, cfg.Loops), drivers: make([]connDriver, cfg.Loops)}
	fds := make([]int, 0, cfg.Loops)
	addr := cfg.Addr
	for range cfg.Loops {
		fd, bound, err := listenTCP(addr)
		if err != nil {
			for _, fd := range fds {
				unix.Close(fd)
			}
			return nil, err
		}
		fds, addr = append(fds, fd), bound // the others bind to the port the first one got
	}
	s.addr = addr
	started := make(chan error, cfg.Loops)
	for i, fd := range fds {
		s.done.Add(1)
		go s.runLoop(i, fd, started)
	}
	for range cfg.Loops {
		if e := <-started; e != nil && err == nil {
			err = e
		}
	}
	if err != nil {
		s.Shutdown()
		s.done.Wait()
		return nil, err
	}
	s.backend, s.reason = s.loops[0].Backend(), s.loops[0].BackendReason()
	if d, ok := s.drivers[0].(*reqDriver); ok {
		s.recv = d.recvMode()
	}
	return s, nil
}

// runLoop is the goroutine of loop i: it makes the loop (which locks it to its OS thread), starts
// the driver on the listening socket lfd, reports to started, and runs the loop until Shutdown.
func (s *Server) runLoop(i, lfd int, started chan<- error) {
	defer s.done.Done()
	loop, err := ringev.New(append([]ringev.Option{ringev.WithBackend(s.cfg.Backend)}, s.cfg.LoopOptions...)...)
	if err != nil {
		unix.Close(lfd)
		started <- err
		return
	}
	defer loop.Close()
	var d connDriver
	if s.cfg.API == APIRequests {
		d, err = newReqDriver(s, loop, lfd, s.cfg.NewProtocol())
	} else {
		d, err = newDriver(s, loop, lfd, s.cfg.NewProtocol())
	}
	if err != nil {
		started <- err
		return
	}
	s.errMu.Lock()
	s.loops[i], s.drivers[i] = loop, d
	s.errMu.Unlock()
	started <- nil
	if err := loop.Run(); err != nil {
		s.errMu.Lock()
		if s.err == nil {
			s.err = fmt.Errorf("server: loop %d: %w", i, err)
		}
		s.errMu.Unlock()
	}
}

// Addr is the address the server listens on, with the port it got.
func (s *Server) Addr() string { return s.addr }

// Backend is the name of the loops' backend ("uring", "epoll", ...).
func (s *Server) Backend() string { return s.backend }

// BackendReason says why Config.Backend "" or "auto" chose the loops' backend (ringev's
// Loop.BackendReason of the first loop: for example that io_uring_setup failed with EPERM
// because of sysctl kernel.io_uring_disabled); "" when the backend was named.
func (s *Server) BackendReason() string { return s.reason }

// Recv is the receive mode of the requests API's first loop (RecvMultishot or RecvPerConn: see
// Config.Recv); "" with the readiness API.
func (s *Server) Recv() string { return s.recv }

// Conns is the number of connections open, over every loop.
func (s *Server) Conns() int { return int(s.conns.Load()) }

// Shutdown asks every loop to stop: it stops accepting (serving the connections already waiting
// in the backlog), serves what each connection has sent, writes the replies and closes it;
// connections still open after Config.ShutdownTimeout are closed. It returns at once (Wait waits)
// and may be called from any goroutine, more than once.
func (s *Server) Shutdown() {
	s.errMu.Lock()
	defer s.errMu.Unlock()
	for i, loop := range s.loops {
		if loop != nil {
			d := s.drivers[i]
			loop.Post(func() { d.shutdown(s.cfg.ShutdownTimeout) }) // ErrClosed: that loop is done
		}
	}
}

// Close is Shutdown without the drain: it stops accepting and closes every connection at once,
// replies not yet written included (a peer may see a reset), and the loops end. It returns at
// once (Wait waits) and may be called from any goroutine, more than once, and after Shutdown (to
// cut a drain short: `ringev serve` does it on a second SIGINT or SIGTERM).
func (s *Server) Close() {
	s.errMu.Lock()
	defer s.errMu.Unlock()
	for i, loop := range s.loops {
		if loop != nil {
			d := s.drivers[i]
			loop.Post(func() { d.shutdown(s.cfg.ShutdownTimeout); d.closeAll() }) // ErrClosed: that loop is done
		}
	}
}

// Wait waits until every loop has ended, and returns the first loop's error (nil after a
// Shutdown that went well).
func (s *Server) Wait() error {
	s.done.Wait()
	s.errMu.Lock()
	defer s.errMu.Unlock()
	return s.err
}

// logf reports through Config.Logf.
func (s *Server) logf(format string, args ...any) {
	if s.cfg.Logf != nil {
		s.cfg.Logf(format, args...)
	}
}

// timers are a driver's timers: its protocol's tick and its drain's deadline.
type timers struct {
	tick     *ringev.Timer // a Ticker's: calls Tick every TickInterval
	deadline *ringev.Timer // ends a drain that takes too long
}

// startTick calls proto's Tick now and then every TickInterval, when proto is a Ticker.
func (ts *timers) startTick(loop *ringev.Loop, proto Protocol) {
	t, ok := proto.(Ticker)
	if !ok {
		return
	}
	var tick func(*ringev.Timer)
	tick = func(*ringev.Timer) {
		t.Tick(time.Now())
		ts.tick = loop.AddTimer(TickInterval, tick)
	}
	tick(nil)
}

// stopTimers stops the tick and the deadline.
func (ts *timers) stopTimers() {
	if ts.tick != nil {
		ts.tick.Stop()
	}
	if ts.deadline != nil {
		ts.deadline.Stop()
	}
}

// checkAPI returns the API api names ("" is DefaultAPI), or an error naming an unknown API or
// Recv mode.
func checkAPI(api, recv string) (string, error) {
	switch api {
	case "":
		api = DefaultAPI
	case APIReadiness, APIRequests:
	default:
		return "", fmt.Errorf("server: unknown API %q (known: %s, %s)", api, APIRequests, APIReadiness)
	}
	switch recv {
	case "", RecvMultishot, RecvPerConn:
	default:
		return "", fmt.Errorf("server: unknown Recv mode %q (known: %s, %s)", recv, RecvMultishot, RecvPerConn)
	}
	return api, nil
}
