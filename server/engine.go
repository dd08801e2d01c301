//go:build unix

package server

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"strings"
	"sync"

	"golang.org/x/sys/unix"
)

// Engine is a running server: its loops, each on its own OS thread, serving one listening
// address with a Handler (Listen), one datagram address with a PacketHandler (ListenPacket),
// or none (NewEngine); the connections dialed on it (Dial, Loop.Dial) are served beside.
type Engine struct {
	network string
	addr    net.Addr
	o       options
	hs      handlers // the accepted connections' Handler
	ph      PacketHandler
	onTick  TickHandler
	tls     *tlsServer // the TLS handshake pool (nil for datagrams)

	loops   []*Loop
	backend string
	reason  string
	recv    string

	done chan struct{} // closed when every loop has ended
	wg   sync.WaitGroup
	mu   sync.Mutex
	err  error // the first loop's error
}

// ErrFromLoop is returned by Engine.Shutdown and Engine.Dial when they are called on one of the
// engine's own loops (from a handler): they would block it. Post the call to another goroutine
// (or dial with Loop.Dial).
var ErrFromLoop = errors.New("server: a blocking Engine call from one of its loops")

// Listen starts serving h on a listening socket for network ("tcp", "tcp4", "tcp6" or "unix")
// and addr ("host:port", port 0 for any free one; a path for "unix"), and returns once every
// loop is serving. As with net.Listen, "tcp" on a host that is empty or unspecified (":8080",
// "0.0.0.0:8080", "[::]:8080") listens on [::] for IPv6 and IPv4 clients alike (IPV6_V6ONLY
// off; on 0.0.0.0 where the system has no IPv6); "tcp4" and "tcp6" take one. The engine
// shuts down gracefully when ctx is done (see Shutdown; bounded by WithDrainTimeout), or when
// Shutdown or Close is called; Wait waits for the end.
//
// Errors: one naming an unknown network, API, receive mode or balancing; one naming the address
// when it cannot be listened on (wrapping the errno, e.g. unix.EADDRINUSE); the loops' errors
// from ringev.New (e.g. wrapping ringev.ErrUnknownBackend), and with WithRecv(RecvMultishot)
// on a kernel without the multishot recv, one naming the feature (wrapping unix.EOPNOTSUPP).
// On error nothing is left running or open.
func Listen(ctx context.Context, network, addr string, h Handler, opts ...Option) (*Engine, error) {
	if h == nil {
		return nil, errors.New("server: Listen with a nil Handler")
	}
	switch network {
	case "tcp", "tcp4", "tcp6", "unix":
	default:
		return nil, fmt.Errorf("server: Listen: unknown stream network %q (known: tcp, tcp4, tcp6, unix; ListenPacket serves udp)", network)
	}
	e := &Engine{network: network, hs: newHandlers(h)}
	e.onTick, _ = h.(TickHandler)
	return e.start(ctx, addr, opts)
}

// ListenPacket starts serving h on a datagram socket for network ("udp", "udp4" or "udp6") and
// addr ("udp" on an unspecified host takes IPv6 and IPv4 alike, as Listen's "tcp"; an IPv4
// sender's address then comes as ::ffff:a.b.c.d, as from net's ReadFromUDPAddrPort: Unmap it
// to compare it with an IPv4 one), on each loop (SO_REUSEPORT: the kernel spreads the senders
// over the loops' sockets), and returns once every loop is serving. With the requests API the
// datagrams are received and sent with the loop's RecvMsg and SendMsg requests, several in
// flight (on uring IORING_OP_RECVMSG and IORING_OP_SENDMSG, Linux 5.3, every send of a turn in
// one io_uring_enter(2); on epoll and poll the loop's emulation); with the readiness API with
// fd events and recvfrom(2)/sendto(2). Shutdown sends what was queued and closes. Errors as
// Listen's, and one for WithTLS (there is no DTLS: the datagrams would go in plaintext).
func ListenPacket(ctx context.Context, network, addr string, h PacketHandler, opts ...Option) (*Engine, error) {
	if h == nil {
		return nil, errors.New("server: ListenPacket with a nil PacketHandler")
	}
	switch network {
	case "udp", "udp4", "udp6":
	default:
		return nil, fmt.Errorf("server: ListenPacket: unknown datagram network %q (known: udp, udp4, udp6)", network)
	}
	e := &Engine{network: network, ph: h}
	if t, ok := h.(TickHandler); ok {
		e.onTick = t
	}
	return e.start(ctx, addr, opts)
}

// Serve is Listen followed by Wait: it serves h until ctx is done and the graceful shutdown
// that follows has ended. It returns nil then, or Listen's error, or the first loop's error.
// A process that exits without that shutdown (SIGTERM's default action, SIGKILL, os.Exit)
// leaves its io_uring rings to the kernel, which tears them down after the exit: on uring the
// listening sockets stay bound until then, and a restart at once can fail with EADDRINUSE. So
// end ctx on SIGTERM as well as on Ctrl-C: signal.NotifyContext(ctx, os.Interrupt,
// syscall.SIGTERM).
func Serve(ctx context.Context, network, addr string, h Handler, opts ...Option) error {
	e, err := Listen(ctx, network, addr, h, opts...)
	if err != nil {
		return err
	}
	return e.Wait()
}

// start opens the sockets and the loops.
func (e *Engine) start(ctx context.Context, addr string, opts []Option) (*Engine, error) {
	o, err := resolve(e.network, opts)
	if err != nil {
		return nil, err
	}
	if e.ph != nil {
		if o.tls != nil {
			return nil, fmt.Errorf("server: ListenPacket %s %s with WithTLS: TLS is for streams (Listen); datagrams would go in plaintext", e.network, addr)
		}
		o.balance = BalanceReusePort
	}
	if _, ok := e.hs.h.(HTTPSHandler); ok {
		o.tls = http1ALPN(o.tls)
	}
	e.o = o
	if e.ph == nil {
		e.tls = newTLSServer(e) // the handshake pool: WithTLS's and DialTLS's
		e.o.tls = e.tls.keyLogConfig(e.o.tls)
	}
	e.done = make(chan struct{})
	// The sockets: one per loop with SO_REUSEPORT, else one for the first loop.
	n := o.loops
	lfds := make([]int, n)
	for i := range lfds {
		lfds[i] = -1
	}
	closeAll := func() {
		for _, fd := range lfds {
			if fd >= 0 {
				unix.Close(fd)
			}
		}
		if e.network == "unix" && e.addr != nil {
			os.Remove(addr)
		}
	}
	bind := addr
	for i := range n {
		if e.network == "" || i > 0 && o.balance != BalanceReusePort { // NewEngine: no listener
			break
		}
		reuse := reuseNone
		if o.balance == BalanceReusePort {
			reuse = reuseFirst
			if i > 0 {
				reuse = reuseJoin
			}
		}
		fd, bound, err := listenSocket(e.network, bind, reuse)
		if err != nil {
			closeAll()
			return nil, err
		}
		lfds[i] = fd
		if i == 0 {
			e.addr, bind = bound, bound.String() // the others bind to the port the first one got
		}
	}
	e.loops = make([]*Loop, n)
	for i := range e.loops {
		e.loops[i] = newLoop(e, i)
	}
	// Every ringev loop is made before any starts serving: a loop that hands a connection to
	// another, or wakes it, finds it made.
	made, start, started := make(chan error, n), make(chan bool, n), make(chan error, n)
	for i, l := range e.loops {
		e.wg.Add(1)
		go l.run(lfds[i], made, start, started)
	}
	ok := 0
	for range n {
		if e2 := <-made; e2 != nil {
			err = cmp.Or(err, e2)
		} else {
			ok++
		}
	}
	for range ok {
		start <- err == nil
	}
	if err == nil {
		for range n {
			if e2 := <-started; e2 != nil && err == nil {
				err = e2
			}
		}
	}
	go func() {
		e.wg.Wait()
		if e.network == "unix" {
			os.Remove(e.addr.String())
		}
		close(e.done)
	}()
	if err != nil {
		e.Close()
		<-e.done
		return nil, err
	}
	first := e.loops[0]
	e.backend, e.reason, e.recv = first.ev.Backend(), first.ev.BackendReason(), first.recvMode
	if strings.HasPrefix(e.reason, "auto: chose ") {
		// "auto" passed over a backend that failed here (io_uring denied by sysctl or seccomp):
		// a service asked for the best one, so it is told which it got and why.
		e.logf("server: %s", e.reason)
	}
	go func() {
		select {
		case <-ctx.Done():
			sctx, cancel := context.WithTimeout(context.Background(), e.o.drain)
			defer cancel()
			e.Shutdown(sctx)
		case <-e.done:
		}
	}()
	return e, nil
}

// Addr is the address the engine serves, with the port it got (a *net.TCPAddr,
// *net.UnixAddr or *net.UDPAddr).
func (e *Engine) Addr() net.Addr { return e.addr }

// Backend is the name of the loops' backend ("uring", "epoll", "poll").
func (e *Engine) Backend() string { return e.backend }

// BackendReason says why "auto" chose the backend (ringev's Loop.BackendReason of the first
// loop); "" when it was named.
func (e *Engine) BackendReason() string { return e.reason }

// Recv is the requests driver's receive mode on the first loop (RecvMultishot or RecvPerConn);
// "" with the readiness API and for datagrams.
func (e *Engine) Recv() string { return e.recv }

// Loops returns the engine's loops, in order (the first accepts for BalanceRoundRobin and
// BalanceLeastConns).
func (e *Engine) Loops() []*Loop { return e.loops }

// Conns is the number of connections open, over every loop (for BalanceLeastConns, those
// handed to a loop and not yet opened there included). Safe from any goroutine.
func (e *Engine) Conns() int {
	n := 0
	for _, l := range e.loops {
		n += int(l.load.Load())
	}
	return n
}

// Buffered is the number of bytes the engine's connections hold: their unconsumed input and
// their output not yet sent (Conn.Pending), but for the bytes Forward sends from the loop's
// receive buffers (which the loop holds anyway: see Conn.Forward). Each loop shows the engine its count when it has
// moved by 64 KiB, so the figure may be off by that much per loop. Safe from any goroutine.
// Past WithMaxBuffered the engine sheds connections (ErrEngineFull).
func (e *Engine) Buffered() int { return int(e.buffered()) }

// buffered is Buffered.
func (e *Engine) buffered() int64 {
	var n int64
	for _, l := range e.loops {
		n += l.bufShown.Load() + l.bufAsync.Load()
	}
	return n
}

// overBudget queues a shed (Loop.shed) on every loop that has none queued: the engine holds
// more than WithMaxBuffered.
func (e *Engine) overBudget() {
	for _, l := range e.loops {
		if l.shedQueued.CompareAndSwap(false, true) {
			if l.Post(l.shedFn) != nil {
				l.shedQueued.Store(false)
			}
		}
	}
}

// Shutdown stops the engine gracefully: every loop stops accepting (taking the connections
// already in the backlog), lets what the connections have sent be served for a moment (10 ms),
// then closes each connection once what was written to it is sent (OnClose's err is
// ErrShutdown), with a lingering close (the peer reads every reply, then EOF); a handler that
// is a ShutdownHandler may keep a connection open until its request is served. It waits until
// every loop has ended and returns nil, or the first loop's error; when ctx is done first, it
// closes what is left at once (Close) and returns ctx.Err(). Safe from any goroutine but the
// engine's loops (ErrFromLoop), and more than once.
func (e *Engine) Shutdown(ctx context.Context) error {
	for _, l := range e.loops {
		if l.ev != nil && l.ev.Owned() {
			return ErrFromLoop
		}
	}
	e.post(func(l *Loop) func() { return l.shutdownFn })
	select {
	case <-e.done:
		return e.Wait()
	case <-ctx.Done():
		e.Close()
		<-e.done
		return ctx.Err()
	}
}

// Close stops the engine at once: it stops accepting and closes every connection, output not
// yet sent included (OnClose's err is ErrShutdown; a peer may see a reset). It returns at once
// (Wait waits), from any goroutine (a handler included), more than once, and after Shutdown to
// cut its drain short.
func (e *Engine) Close() error {
	e.post(func(l *Loop) func() { return l.closeFn })
	return nil
}

// post queues, on every loop, the function fn returns for it (ErrClosed: that loop has ended).
func (e *Engine) post(fn func(l *Loop) func()) {
	for _, l := range e.loops {
		l.Post(fn(l))
	}
}

// Wait waits until every loop has ended and returns the first loop's error (nil after a
// shutdown that went well).
func (e *Engine) Wait() error {
	<-e.done
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.err
}

// Done returns a channel that is closed when every loop has ended.
func (e *Engine) Done() <-chan struct{} { return e.done }

// loopErr records loop i's error (the first one wins).
func (e *Engine) loopErr(i int, err error) {
	e.mu.Lock()
	if e.err == nil {
		e.err = fmt.Errorf("server: loop %d: %w", i, err)
	}
	e.mu.Unlock()
}

// logf reports through WithLogf.
func (e *Engine) logf(format string, args ...any) {
	if e.o.logf != nil {
		e.o.logf(format, args...)
	}
}

// current returns the engine's loop the caller runs on, or nil.
func (e *Engine) current() *Loop {
	for _, l := range e.loops {
		if l.ev != nil && l.ev.Owned() {
			return l
		}
	}
	return nil
}

// pick returns the loop a connection accepted by the first loop goes to (BalanceRoundRobin,
// BalanceLeastConns), and counts it there.
func (e *Engine) pick(acceptor *Loop) *Loop {
	var to *Loop
	if e.o.balance == BalanceLeastConns {
		to = e.loops[0]
		for _, l := range e.loops[1:] {
			if l.load.Load() < to.load.Load() {
				to = l
			}
		}
	} else {
		to = e.loops[acceptor.rr%len(e.loops)]
		acceptor.rr++
	}
	to.load.Add(1)
	return to
}
