//go:build unix

package server

import (
	"crypto/tls"
	"errors"
	"fmt"
	"time"

	"github.com/ringev/ringev"
)

// Option configures Listen, Serve and ListenPacket.
type Option func(*options)

// options is what the Options set; the zero value is the defaults.
type options struct {
	loops       int
	backend     string
	api         string
	recv        string
	balance     string
	idle        time.Duration
	request     time.Duration
	writeLimit  int
	maxPending  int
	maxBuffered int
	halfOpen    bool
	bp          uint8 // a connection's Conn.bp at first: bpRead for WithPauseOnOutput(false)
	readIdle    time.Duration
	drain       time.Duration
	dialTimeout time.Duration
	logf        func(format string, args ...any)
	loopOptions []ringev.Option
	tls         *tls.Config
	tlsNil      bool // WithTLS(nil): an error, not plaintext
	handshakes  int
	// noMsgRing makes the loops hand off and wake each other with Post alone (tests).
	noMsgRing bool
}

// The balancing modes of WithBalance: how the connections of a listening address are spread
// over the loops.
const (
	// BalanceReusePort: each loop listens on the address with its own socket (SO_REUSEPORT) and
	// the kernel spreads the connections by a hash of their addresses. The default. A Unix
	// socket cannot be shared so: there it is BalanceRoundRobin. The port is shared by the
	// engine's loops only: an address another socket holds, even another process's
	// SO_REUSEPORT one, is an error wrapping unix.EADDRINUSE, as with net.Listen.
	BalanceReusePort = "reuseport"
	// BalanceRoundRobin: the first loop accepts every connection and hands them to the loops
	// in turn (itself included).
	BalanceRoundRobin = "round-robin"
	// BalanceLeastConns: the first loop accepts every connection and hands each to the loop
	// with the fewest connections open.
	BalanceLeastConns = "least-conns"
)

// DefaultDrainTimeout bounds the graceful shutdown that follows the cancellation of Listen's
// context (WithDrainTimeout).
const DefaultDrainTimeout = 5 * time.Second

// DefaultWriteLimit is the pending output of a connection, in bytes, past which it is no longer
// read (WithWriteLimit): 256 KiB.
const DefaultWriteLimit = 256 << 10

// DefaultMaxPending is a connection's output cap, in bytes (WithMaxPending): 4 MiB, as
// MaxInput is its input's. It is 16 times DefaultWriteLimit: a handler that stops writing past
// the write limit (RESP and HTTP do) stays far below it, and a peer that reads takes that much
// within milliseconds. Only a connection whose peer does not read, written to by a broadcast
// or another goroutine, reaches it, or one write larger than it (a handler that sends a large
// file in one Write: it raises the cap, or writes in pieces as the output drains): closing
// it bounds what a server holds for one peer.
const DefaultMaxPending = 4 << 20

// WithLoops sets the number of loops, each on its own OS thread; 0 (the default) means one per
// CPU the process may run on (its affinity mask, sched_getaffinity(2)).
func WithLoops(n int) Option { return func(o *options) { o.loops = n } }

// WithBackend chooses the loops' backend by name (ringev.WithBackend): "auto" (the default),
// "uring", "epoll", "poll", or "uring-poll" (not close-safe: auto never picks it; see
// ringev.WithBackend).
func WithBackend(name string) Option { return func(o *options) { o.backend = name } }

// WithAPI chooses the driver that does the connections' I/O: APIRequests (the default:
// completion requests, on every backend) or APIReadiness (fd events and non-blocking
// read(2)/write(2)). Both serve every Handler the same way.
func WithAPI(name string) Option { return func(o *options) { o.api = name } }

// WithRecv chooses how the requests driver receives: RecvMultishot or RecvPerConn; "" (the
// default) is DefaultRecv, or RecvPerConn where the kernel lacks the multishot recv.
func WithRecv(mode string) Option { return func(o *options) { o.recv = mode } }

// WithBalance chooses how connections are spread over the loops: BalanceReusePort (the
// default), BalanceRoundRobin or BalanceLeastConns.
func WithBalance(mode string) Option { return func(o *options) { o.balance = mode } }

// WithIdleTimeout closes a connection on which nothing was received or sent for d (OnClose's
// err is ErrIdleTimeout); 0, the default, never. Conn.SetIdleTimeout changes it for one
// connection.
func WithIdleTimeout(d time.Duration) Option { return func(o *options) { o.idle = d } }

// WithReadIdleTimeout closes a connection on which nothing was received for d (OnClose's err is
// ErrIdleTimeout), whatever the server sends it: unlike WithIdleTimeout, whose clock the
// server's own writes reset too, it cuts off a client that only listens (a chat or broadcast
// subscriber gone silent; netty's readerIdleTime). 0, the default, never. Both may be set.
// Conn.SetReadIdleTimeout changes it for one connection.
func WithReadIdleTimeout(d time.Duration) Option { return func(o *options) { o.readIdle = d } }

// WithRequestTimeout closes a connection whose request is not complete within d of its first
// byte (OnClose's err is ErrRequestTimeout); 0, the default, never. A request starts when bytes
// arrive while none are buffered, or remain after OnData consumed some; it ends when OnData
// leaves nothing buffered. Bytes arriving meanwhile do not move the deadline, so a client
// that sends a byte now and then (slowloris) is cut off. Conn.SetRequestTimeout changes it
// for one connection.
func WithRequestTimeout(d time.Duration) Option { return func(o *options) { o.request = d } }

// WithHalfOpen sets what the peer's EOF (its shutdown(SHUT_WR), as `nc -N` and batch clients
// send) does to a connection. false, the default (gnet's and redis-server's): the output
// written is sent, then the connection closes (OnClose's err io.EOF). true (net.Conn's way,
// Node's allowHalfOpen): it ends the input alone; OnData is called once more with Conn.EOF
// true, and the connection stays open for writes, from the loop or any goroutine, until the
// handler calls Close (or CloseWrite: then it closes with io.EOF once the output is sent).
// After the EOF the connection is not read: a reset is heard at the next write. The timeouts
// still apply. Conn.SetHalfOpen changes it for one connection.
func WithHalfOpen(on bool) Option { return func(o *options) { o.halfOpen = on } }

// WithWriteLimit sets the pending output, in bytes, past which a connection is no longer read
// until it drains to half of it (BackpressureHandler is told); 0 means DefaultWriteLimit. A
// connection whose output does not answer its input is made not to pause
// (WithPauseOnOutput, Conn.SetPauseOnOutput): see Conn.WriteLimit.
func WithWriteLimit(bytes int) Option { return func(o *options) { o.writeLimit = bytes } }

// WithPauseOnOutput sets whether a connection's output past the write limit pauses its reading:
// true, the default, or false, for servers whose output does not answer their input (see
// Conn.SetPauseOnOutput, which changes it for one connection, and WriteLimit).
func WithPauseOnOutput(on bool) Option {
	return func(o *options) {
		o.bp = 0
		if !on {
			o.bp = bpRead
		}
	}
}

// WithMaxPending sets a connection's output cap, in bytes: a write (on the loop or from another
// goroutine) that would take Conn.Pending past it is refused with ErrOutputFull, and the
// connection is closed at once, its output dropped (OnClose's err is ErrOutputFull). 0 means
// DefaultMaxPending. A handler that writes more at once than the cap raises it, or writes in
// pieces as the output drains (BackpressureHandler).
func WithMaxPending(bytes int) Option { return func(o *options) { o.maxPending = bytes } }

// WithMaxBuffered sets the engine's budget, in bytes, for what its connections hold: their
// unconsumed input and their output not yet sent (Engine.Buffered: a send Forward lends from the
// loop's receive buffers is not counted). Past it, each loop closes
// its connections that hold the most, largest first, until the engine is back within it
// (OnClose's err is ErrEngineFull); a connection that holds no more than an even share of the
// budget is never closed for it. 0 means the default: an eighth of the memory the process may
// use, the least of the machine's RAM (sysinfo(2)), the cgroup's memory limit and GOMEMLIMIT
// (an eighth: Go's collector lets the heap grow to twice what is live before it runs, and a
// buffer grown by append may have twice the room it uses).
func WithMaxBuffered(bytes int) Option { return func(o *options) { o.maxBuffered = bytes } }

// WithDialTimeout bounds each dial of the engine (Engine.Dial, Loop.Dial, Conn.Dial, their
// TLS forms) to d, from the call to the open connection (the name's lookup included), as
// net.Dialer's Timeout does: past it, the dial's error names the address and wraps
// context.DeadlineExceeded. The dial's own ctx may end it sooner. 0, the default: ctx alone.
func WithDialTimeout(d time.Duration) Option { return func(o *options) { o.dialTimeout = d } }

// WithDrainTimeout bounds the graceful shutdown that the cancellation of Listen's context
// starts: connections still open after d are closed at once. 0 means DefaultDrainTimeout.
// Engine.Shutdown is bounded by its own context instead.
func WithDrainTimeout(d time.Duration) Option { return func(o *options) { o.drain = d } }

// WithLogf gives a function that is told of what the engine handles by itself (accept failing
// for lack of fds, a receive mode unavailable, ...). It is called from the loops' goroutines,
// and once from Listen or NewEngine when the backend "auto" (WithBackend's default) fell back
// from io_uring: the line is Engine.BackendReason's, naming the errno ("server: auto: chose
// epoll because uring: io_uring_setup(...): operation not permitted (...)").
func WithLogf(f func(format string, args ...any)) Option { return func(o *options) { o.logf = f } }

// WithLoopOptions adds options to every loop's ringev.New (after the backend and
// ringev.WithDispatchAll, which the engine sets so that one turn serves every ready
// connection and their writes go out together).
func WithLoopOptions(opts ...ringev.Option) Option {
	return func(o *options) { o.loopOptions = append(o.loopOptions, opts...) }
}

// resolve applies opts over the defaults and checks the names; network is Listen's.
func resolve(network string, opts []Option) (options, error) {
	var o options
	for _, opt := range opts {
		opt(&o)
	}
	if o.loops < 0 {
		return o, fmt.Errorf("server: WithLoops(%d): a negative number of loops (0: one per CPU)", o.loops)
	}
	if o.loops == 0 {
		o.loops = usableCPUs()
	}
	if o.backend == "" {
		o.backend = "auto"
	}
	api, err := checkAPI(o.api, o.recv)
	if err != nil {
		return o, err
	}
	o.api = api
	switch o.balance {
	case "":
		o.balance = BalanceReusePort
	case BalanceReusePort, BalanceRoundRobin, BalanceLeastConns:
	default:
		return o, fmt.Errorf("server: unknown balancing %q (known: %s, %s, %s)", o.balance, BalanceReusePort, BalanceRoundRobin, BalanceLeastConns)
	}
	if network == "unix" && o.balance == BalanceReusePort {
		o.balance = BalanceRoundRobin
	}
	for _, neg := range []struct {
		name string
		v    int64
		s    string
	}{
		{"WithIdleTimeout", int64(o.idle), o.idle.String()},
		{"WithReadIdleTimeout", int64(o.readIdle), o.readIdle.String()},
		{"WithRequestTimeout", int64(o.request), o.request.String()},
		{"WithWriteLimit", int64(o.writeLimit), fmt.Sprint(o.writeLimit)},
		{"WithMaxPending", int64(o.maxPending), fmt.Sprint(o.maxPending)},
		{"WithMaxBuffered", int64(o.maxBuffered), fmt.Sprint(o.maxBuffered)},
		{"WithDrainTimeout", int64(o.drain), o.drain.String()},
		{"WithDialTimeout", int64(o.dialTimeout), o.dialTimeout.String()},
		{"WithMaxTLSHandshakes", int64(o.handshakes), fmt.Sprint(o.handshakes)},
	} {
		if neg.v < 0 {
			return o, fmt.Errorf("server: %s(%s): negative (0: the default)", neg.name, neg.s)
		}
	}
	if o.tlsNil {
		return o, errors.New("server: WithTLS(nil): no tls.Config (a nil one would serve plaintext)")
	}
	if err := checkTLS(o.tls); err != nil {
		return o, err
	}
	if o.writeLimit == 0 {
		o.writeLimit = DefaultWriteLimit
	}
	if o.maxPending == 0 {
		o.maxPending = DefaultMaxPending
	}
	if o.maxBuffered == 0 {
		o.maxBuffered = int(memoryLimit() / 8)
	}
	if o.drain == 0 {
		o.drain = DefaultDrainTimeout
	}
	if o.handshakes == 0 {
		o.handshakes = DefaultMaxTLSHandshakes
	}
	return o, nil
}

// The I/O APIs of WithAPI: the drivers that do the connections' I/O.
const (
	// APIReadiness: fd events and the loop's non-blocking read(2)/write(2) (conn_readiness.go).
	APIReadiness = "readiness"
	// APIRequests: completion requests: multishot accept, recv (see WithRecv), send and close
	// as requests (conn_requests.go); on every backend (SQEs on uring, emulated with readiness
	// and non-blocking syscalls on epoll and poll).
	APIRequests = "requests"
	// DefaultAPI is WithAPI's default: APIRequests. On uring it makes ~0.2-0.3 syscalls per
	// request where the readiness API makes ~2.1 (a read and a write each; redis-benchmark
	// -P 1, 50 connections), for no more CPU per request; on epoll and poll the emulation
	// makes the syscalls the readiness API makes (recvfrom/sendto for read/write) at about
	// the same cost. See docs/serve.md.
	DefaultAPI = APIRequests
)

// checkAPI returns the API api names ("" is DefaultAPI), or an error naming an unknown API or
// receive mode.
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
		return "", fmt.Errorf("server: unknown receive mode %q (known: %s, %s)", recv, RecvMultishot, RecvPerConn)
	}
	return api, nil
}
