//go:build unix

package server

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"os"
	"strconv"

	"github.com/ringev/ringev"
	"golang.org/x/sys/unix"
)

// maxSpurious bounds the connect's completions without a peer (a spurious wake-up: the socket
// is still connecting) that a dial waits past, and maxSelfConnect the TCP self-connects (the
// kernel picked the destination's own port as the local one, and the socket connected to
// itself) it tries again after.
const (
	maxSpurious    = 3
	maxSelfConnect = 2
)

// NewEngine starts an engine that listens on nothing: its loops, each on its own OS thread,
// serve the connections dialed on it (Engine.Dial, Loop.Dial). It returns once every loop is
// serving, and shuts down as Listen's engine does (when ctx is done, or by Shutdown or Close;
// Wait waits). Options as Listen's (WithLoops, WithBackend, WithAPI, timeouts, ...). Errors
// as Listen's, but none about an address.
func NewEngine(ctx context.Context, opts ...Option) (*Engine, error) {
	e := &Engine{}
	return e.start(ctx, "", opts)
}

// Dial connects to addr on network ("tcp", "tcp4", "tcp6" or "unix") from one of the engine's
// loops (the one with the fewest connections), and returns the connection once it is open:
// served by h (its OnOpen runs on the loop, concurrently with the caller), its Write, Close
// and Abort usable at once from any goroutine, and its LocalAddr and RemoteAddr set (asked on
// the loop before Dial returns: getsockname(2) and getpeername(2)). ctx bounds the connect:
// when it is done first, the socket is closed and the error wraps ctx.Err(). Dial blocks the
// calling goroutine, never a loop: from one of the engine's loops it returns ErrFromLoop at
// once (Loop.Dial dials from a handler without blocking).
//
// Errors: those of Loop.Dial (a nil ctx is one) and its done (a *net.OpError that names the
// address and wraps the errno, e.g. unix.ECONNREFUSED, or ctx.Err()); ErrFromLoop; one
// wrapping ErrShutdown once the engine is shutting down or has ended; one for an engine of
// datagrams (ListenPacket).
func (e *Engine) Dial(ctx context.Context, network, addr string, h Handler) (*Conn, error) {
	return e.dial(ctx, network, addr, nil, h)
}

// DialTLS is Dial with TLS over the connection, cfg the client's (crypto/tls, unmodified): the
// handler reads and writes plaintext, what it writes before the handshake ends is sent after
// it, and Conn.TLS gives the state once it has ended. A cfg without ServerName and without
// InsecureSkipVerify gets the host of addr; over a Unix socket ("unix"), whose path names no
// host, such a cfg is refused (crypto/tls's Dial would send the path as the server's name, and
// verify the certificate against it): it must name the server. The handshake runs as an accepted connection's
// does (WithTLS): on the engine's pool, within the connection's request timeout (else
// DefaultTLSHandshakeTimeout); the connection is returned once it is open, before the
// handshake, whose failure closes it with an error wrapping crypto/tls's (OnClose). Errors as
// Dial's, and one for a nil cfg or a Unix socket's cfg that names no server.
func (e *Engine) DialTLS(ctx context.Context, network, addr string, cfg *tls.Config, h Handler) (*Conn, error) {
	tc, err := clientConfig("Engine.DialTLS", network, addr, cfg)
	if err != nil {
		return nil, err
	}
	return e.dial(ctx, network, addr, tc, h)
}

// dial is Dial and DialTLS (tc nil: no TLS).
func (e *Engine) dial(ctx context.Context, network, addr string, tc *tls.Config, h Handler) (*Conn, error) {
	if e.current() != nil {
		return nil, fmt.Errorf("server: Engine.Dial %s %s: %w (Loop.Dial does not block)", network, addr, ErrFromLoop)
	}
	l := e.loops[0]
	for _, o := range e.loops[1:] {
		if o.load.Load() < l.load.Load() {
			l = o
		}
	}
	type result struct {
		c   *Conn
		err error
	}
	res := make(chan result, 1)
	done := func(c *Conn, err error) {
		if c != nil { // asked on the loop, so that the caller's goroutine has them (addr)
			c.LocalAddr()
			c.RemoteAddr()
		}
		res <- result{c, err}
	}
	err := l.Post(func() {
		if err := l.dial(ctx, network, addr, tc, h, done, nil); err != nil {
			done(nil, err)
		}
	})
	if err != nil {
		return nil, fmt.Errorf("server: dial %s %s: %w", network, addr, ErrShutdown)
	}
	select {
	case r := <-res:
		return r.c, r.err
	case <-e.done:
		select {
		case r := <-res:
			return r.c, r.err
		default:
		}
		return nil, fmt.Errorf("server: dial %s %s: %w", network, addr, ErrShutdown)
	}
}

// Dial starts connecting to addr on network ("tcp", "tcp4", "tcp6" or "unix": "host:port",
// "[::1]:port", a path) from the loop, and returns at once. done is called on the loop exactly
// once, never inside Dial: with the open connection, served by h, before h's OnOpen and any
// OnData (the place to tie it to other state, e.g. a proxy's client Conn, with SetContext); or
// with the error, and then h is told of nothing. The connection has the engine's settings, as
// an accepted one has: its idle and request timeouts (Conn.SetIdleTimeout and
// SetRequestTimeout change them for it), WithHalfOpen, the write limit and the output cap. A
// handler dials so to keep both sides of a proxy on one loop. It belongs to the loop's goroutine (a handler, or a function given to
// Post); Engine.Dial dials from any other.
//
// The connect is a request (Loop.Connect: IORING_OP_CONNECT, Linux 5.5, on uring; a
// non-blocking connect(2), write readiness and SO_ERROR on epoll and poll), so nothing
// blocks the loop: an IP literal needs no lookup, and a name is resolved on a goroutine of its
// own (net.DefaultResolver, under ctx), its addresses then tried in turn. ctx bounds the whole
// dial: when it is done first, the socket is closed (which cancels the connect) and done gets an
// error wrapping ctx.Err().
//
// Errors given to done: a *net.OpError ("dial tcp 127.0.0.1:1: connect: connection refused")
// that names the address and wraps the errno (errors.Is(err, unix.ECONNREFUSED),
// unix.ETIMEDOUT, unix.ECONNRESET for a peer that reset the connection as it accepted it,
// unix.ENOENT for a missing Unix socket, ...), the lookup's error, or ctx.Err();
// ErrShutdown (wrapped) when the engine shuts down first. Errors returned: one for a nil ctx, h
// or done, an unknown network or a malformed address; one wrapping ringev.ErrNotOwner from
// another goroutine; one wrapping ErrShutdown once the engine is shutting down; one for an
// engine of datagrams (ListenPacket).
func (l *Loop) Dial(ctx context.Context, network, addr string, h Handler, done func(*Conn, error)) error {
	return l.dial(ctx, network, addr, nil, h, done, nil)
}

// DialTLS is Loop.Dial with TLS over the connection, as Engine.DialTLS.
func (l *Loop) DialTLS(ctx context.Context, network, addr string, cfg *tls.Config, h Handler, done func(*Conn, error)) error {
	tc, err := clientConfig("Loop.DialTLS", network, addr, cfg)
	if err != nil {
		return err
	}
	return l.dial(ctx, network, addr, tc, h, done, nil)
}

// clientConfig is cfg, with the host of addr as its ServerName when it has none (and
// verifies). Errors: a nil cfg; a cfg for a Unix socket that names no server and verifies.
func clientConfig(op, network, addr string, cfg *tls.Config) (*tls.Config, error) {
	if cfg == nil {
		return nil, fmt.Errorf("server: %s %s %s with a nil tls.Config", op, network, addr)
	}
	if cfg.ServerName != "" || cfg.InsecureSkipVerify {
		return cfg, nil
	}
	if network == "unix" {
		return nil, fmt.Errorf("server: %s %s %s: a socket path names no server: the tls.Config needs a ServerName to verify the certificate against", op, network, addr)
	}
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		host = addr
	}
	c := cfg.Clone()
	c.ServerName = host
	return c, nil
}

// Dial is Loop.Dial for c, on c's loop: the connection dialed is one c needs (a proxy's
// upstream, for its client), and its Context is c from the start (done or its OnOpen may set
// another). c is not read while the dial is under way (as PauseRead), so its input waits for
// the other side, and is read again just before done is called (unless PauseRead was called
// for it meanwhile, or before). When c closes first (its peer's reset,
// which a connection that does not read still learns of; a timeout; Close), the dial ends:
// done gets an error that names the address and wraps context.Canceled, so a client that
// leaves ends the connect to its upstream. ctx and WithDialTimeout bound the dial as they
// bound Loop.Dial's. Errors: those of Loop.Dial, net.ErrClosed when c is closed, and one when
// a dial for c is under way already.
func (c *Conn) Dial(ctx context.Context, network, addr string, h Handler, done func(*Conn, error)) error {
	if err := c.usable("Dial"); err != nil {
		return err
	}
	if c.rare != nil && c.rare.dialing != nil {
		return fmt.Errorf("server: Conn.Dial %s %s: fd %d has a dial under way", network, addr, c.fd)
	}
	return c.l.dial(ctx, network, addr, nil, h, done, c)
}

// errForGone is the error a dial for a connection (Conn.Dial) ends with when that connection
// closes first.
var errForGone = fmt.Errorf("the connection dialed for has closed: %w", context.Canceled)

// dial is Dial and DialTLS (tc nil: no TLS), for the connection forC (Conn.Dial) or nil.
func (l *Loop) dial(ctx context.Context, network, addr string, tc *tls.Config, h Handler, done func(*Conn, error), forC *Conn) error {
	if h == nil || done == nil {
		return fmt.Errorf("server: Loop.Dial %s %s with a nil Handler or done", network, addr)
	}
	if ctx == nil {
		return fmt.Errorf("server: dial %s %s with a nil Context", network, addr)
	}
	if !l.ev.Owned() {
		return fmt.Errorf("server: Loop.Dial %s %s from a goroutine other than the loop's (Engine.Dial blocks from any): %w", network, addr, ringev.ErrNotOwner)
	}
	if l.drv == nil {
		return fmt.Errorf("server: Loop.Dial %s %s on an engine of datagrams (ListenPacket)", network, addr)
	}
	if l.draining || l.isStopped() {
		return fmt.Errorf("server: dial %s %s: %w", network, addr, ErrShutdown)
	}
	d := &dialer{l: l, network: network, addr: addr, ctx: ctx, done: done, fd: -1, tls: tc}
	if err := d.parse(); err != nil {
		return err
	}
	if t := l.e.o.dialTimeout; t > 0 {
		if ctx.Done() == nil && d.host == "" {
			// Nothing else to watch (no lookup, a context that never ends): the loop's timer
			// bounds the connect, as WithTimeout's context would, without its timer and watch.
			d.timer = l.ev.AddTimer(t, d.timedOut)
		} else {
			d.ctx, d.untime = context.WithTimeout(ctx, t)
		}
	}
	hs := newHandlers(h)
	d.hs = &hs
	if l.dials == nil {
		l.dials = map[*dialer]struct{}{}
	}
	l.dials[d] = struct{}{}
	if d.ctx.Done() != nil {
		d.stopCtx = context.AfterFunc(d.ctx, func() { l.Post(d.ctxDone) })
	}
	if err := l.Post(d.begin); err != nil {
		delete(l.dials, d)
		d.stopWatch()
		return fmt.Errorf("server: dial %s %s: %w", network, addr, ErrShutdown)
	}
	if forC != nil {
		d.forC = forC
		x := forC.x()
		x.dialing = d
		if x.fwdOn == nil {
			x.userHeld = forC.fl&cfHeld != 0
			forC.hold(true)
		}
	}
	return nil
}

// forGone ends the dial for a connection (Conn.Dial) that has closed (Conn.end: posted, so
// that done does not run inside it).
func (d *dialer) forGone() { d.cancel(errForGone) }

// isStopped reports whether the loop's inbox has ended (Loop.stop).
func (l *Loop) isStopped() bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.stopped.Load()
}

// dialer is a Loop.Dial under way, on the loop's goroutine.
type dialer struct {
	l             *Loop
	hs            *handlers
	tls           *tls.Config // DialTLS's, or nil
	network, addr string
	ctx           context.Context // the caller's, bounded by WithDialTimeout
	done          func(*Conn, error)
	forC          *Conn // Conn.Dial's connection, not read until the dial ends; or nil

	family int
	host   string          // a name to resolve ("": addrs holds the literal's address)
	port   string          // the port to resolve with host (a number or a service name)
	addrs  []unix.Sockaddr // the addresses left to try
	sa     unix.Sockaddr   // the address being tried

	fd       int // the socket being connected, or -1
	req      ringev.Request
	live     bool // the connect request is pending
	spurious int  // completions without a peer so far
	selfs    int  // self-connects so far

	stopCtx   func() bool        // context.AfterFunc's stop
	untime    context.CancelFunc // WithDialTimeout's, or nil
	timer     *ringev.Timer      // WithDialTimeout's on the loop (see dial), or nil
	unresolve context.CancelFunc // cancels the lookup under way
	cancelled error              // why the dial was cancelled (ctx, shutdown)
	lastErr   error              // the last address's error
	ended     bool               // done was called (or is queued)
}

// parse checks the network and address, and makes the addresses of an IP literal or a path.
func (d *dialer) parse() error {
	switch d.network {
	case "unix":
		if d.addr == "" {
			return fmt.Errorf("server: dial unix: an empty path")
		}
		d.family, d.addrs = unix.AF_UNIX, []unix.Sockaddr{&unix.SockaddrUnix{Name: d.addr}}
		return nil
	case "tcp", "tcp4", "tcp6":
	default:
		return fmt.Errorf("server: dial %s %s: unknown stream network %q (known: tcp, tcp4, tcp6, unix)", d.network, d.addr, d.network)
	}
	host, port, err := net.SplitHostPort(d.addr)
	if err != nil {
		return fmt.Errorf("server: dial %s %q: %w", d.network, d.addr, err)
	}
	if host == "" { // as net.Dial: the local system
		host = "127.0.0.1"
		if d.network == "tcp6" {
			host = "::1"
		}
	}
	ip, err := netip.ParseAddr(host)
	if err != nil {
		d.host, d.port = host, port // a name: resolved off the loop
		return nil
	}
	p, err := strconv.ParseUint(port, 10, 16)
	if err != nil {
		d.host, d.port = host, port // a service name: looked up off the loop
		return nil
	}
	sa, err := d.sockaddr(ip, int(p))
	if err != nil {
		return err
	}
	d.addrs = []unix.Sockaddr{sa}
	return nil
}

// sockaddr is ip:port as the socket address of d's network (an IPv4-mapped IPv6 address as
// IPv4); an address of the wrong family for "tcp4" or "tcp6" is an error naming it. It only
// reads d: the lookup's goroutine calls it too.
func (d *dialer) sockaddr(ip netip.Addr, port int) (unix.Sockaddr, error) {
	ip = ip.Unmap()
	switch {
	case ip.Is4() && d.network != "tcp6":
		return &unix.SockaddrInet4{Port: port, Addr: ip.As4()}, nil
	case ip.Is6() && d.network != "tcp4":
		sa := &unix.SockaddrInet6{Port: port, Addr: ip.As16()}
		if z := ip.Zone(); z != "" {
			if ifi, err := net.InterfaceByName(z); err == nil {
				sa.ZoneId = uint32(ifi.Index)
			}
		}
		return sa, nil
	}
	return nil, fmt.Errorf("server: dial %s %s: %s is not an address of that network", d.network, d.addr, ip)
}

// begin starts the dial on the loop (posted by Dial, so that done never runs inside it).
func (d *dialer) begin() {
	if d.ended {
		return
	}
	if d.host == "" {
		d.next()
		return
	}
	ctx, cancel := context.WithCancel(d.ctx)
	d.unresolve = cancel
	go d.resolve(ctx)
}

// resolve looks the name and port up (a goroutine of its own: a lookup may block) and posts
// what it found to the loop.
func (d *dialer) resolve(ctx context.Context) {
	var sas []unix.Sockaddr
	ipnet := map[string]string{"tcp": "ip", "tcp4": "ip4", "tcp6": "ip6"}[d.network]
	port, err := net.DefaultResolver.LookupPort(ctx, d.network, d.port)
	var ips []netip.Addr
	if err == nil {
		ips, err = net.DefaultResolver.LookupNetIP(ctx, ipnet, d.host)
	}
	if err == nil {
		for _, ip := range ips {
			if sa, e := d.sockaddr(ip, port); e == nil {
				sas = append(sas, sa)
			}
		}
		if len(sas) == 0 {
			err = &net.AddrError{Err: "no suitable address found", Addr: d.host}
		}
	}
	d.l.Post(func() { d.resolved(sas, err) }) // ErrClosed: the loop has ended, and failed the dial
}

// resolved continues the dial with the lookup's addresses, or fails it.
func (d *dialer) resolved(sas []unix.Sockaddr, err error) {
	if d.ended {
		return
	}
	d.unresolve()
	d.unresolve = nil
	if err != nil {
		d.fail(&net.OpError{Op: "dial", Net: d.network, Err: err})
		return
	}
	d.addrs = sas
	d.next()
}

// next connects to the next address, or fails the dial with the last address's error.
func (d *dialer) next() {
	for len(d.addrs) > 0 {
		d.sa, d.addrs = d.addrs[0], d.addrs[1:]
		d.family = sockFamily(d.sa)
		fd, err := unix.Socket(d.family, unix.SOCK_STREAM|sockFlags, 0)
		if err != nil {
			d.lastErr = d.opErr(os.NewSyscallError("socket", err))
			continue
		}
		d.fd, d.spurious, d.selfs = fd, 0, 0
		if err := d.connect(); err != nil {
			d.closeFd()
			d.lastErr = d.opErr(err)
			continue
		}
		return
	}
	d.fail(d.lastErr)
}

// connect submits the connect request.
func (d *dialer) connect() error {
	r, err := d.l.ev.Connect(d.fd, d.sa, d.connected, 0)
	if err != nil {
		return err
	}
	d.req, d.live = r, true
	return nil
}

// connected is the connect's completion: the open connection, a spurious wake-up or a
// self-connect (connect again), or the address's error (the next address, or the dial's end).
func (d *dialer) connected(x *ringev.Completion) {
	d.live = false
	if d.cancelled != nil {
		d.closeFd()
		d.fail(d.opErr(d.cancelled))
		return
	}
	err := x.Err
	if errors.Is(err, unix.EISCONN) { // connected by an earlier connect(2) of this socket
		err = nil
	}
	if err == nil {
		if beforeDialCheck != nil {
			beforeDialCheck(d.fd)
		}
		err = d.check()
		if err == errAgain {
			if err = d.connect(); err == nil {
				return
			}
		}
	}
	if err != nil {
		d.closeFd()
		var errno unix.Errno
		if errors.As(err, &errno) {
			err = os.NewSyscallError("connect", errno)
		}
		d.lastErr = d.opErr(err)
		d.next()
		return
	}
	d.opened()
}

// beforeDialCheck, when set (tests), is called on the loop with the socket of a connect that
// completed without an error, before the dial checks it (check).
var beforeDialCheck func(fd int)

// errAgain is check's: the socket must connect again.
var errAgain = errors.New("connect again")

// check tells a connected socket from a spurious wake-up (no peer yet: getpeername(2) fails
// with ENOTCONN), from one the peer reset once connected (ENOTCONN too, but the socket's error
// is ECONNRESET: the dial's error, naming the address as any other) and from a TCP self-connect
// (local address = peer's: closed, a new socket connects again); errAgain asks for a new
// connect. Past maxSpurious or maxSelfConnect, an error.
func (d *dialer) check() error {
	peer, err := unix.Getpeername(d.fd)
	if errors.Is(err, unix.ENOTCONN) {
		// A connection the peer reset (or that failed) since the connect completed has no peer
		// either: its socket's error (SO_ERROR) says so, and a spurious wake-up has none.
		if v, e := unix.GetsockoptInt(d.fd, unix.SOL_SOCKET, unix.SO_ERROR); e == nil && v != 0 {
			return unix.Errno(v)
		}
		if d.spurious++; d.spurious > maxSpurious {
			return unix.ENOTCONN
		}
		return errAgain
	}
	if err != nil {
		return os.NewSyscallError("getpeername", err)
	}
	if d.family == unix.AF_UNIX {
		return nil
	}
	local, err := unix.Getsockname(d.fd)
	if err != nil {
		return os.NewSyscallError("getsockname", err)
	}
	if !sameSockaddr(local, peer) {
		return nil
	}
	if d.selfs++; d.selfs > maxSelfConnect {
		return errors.New("connected to itself")
	}
	fd, err := unix.Socket(d.family, unix.SOCK_STREAM|sockFlags, 0)
	if err != nil {
		return os.NewSyscallError("socket", err)
	}
	d.closeFd()
	d.fd = fd
	return errAgain
}

// sameSockaddr reports whether a and b are the same TCP address.
func sameSockaddr(a, b unix.Sockaddr) bool {
	switch a := a.(type) {
	case *unix.SockaddrInet4:
		b, ok := b.(*unix.SockaddrInet4)
		return ok && a.Port == b.Port && a.Addr == b.Addr
	case *unix.SockaddrInet6:
		b, ok := b.(*unix.SockaddrInet6)
		return ok && a.Port == b.Port && a.Addr == b.Addr
	}
	return false
}

// sockFamily is sa's address family.
func sockFamily(sa unix.Sockaddr) int {
	switch sa.(type) {
	case *unix.SockaddrInet4:
		return unix.AF_INET
	case *unix.SockaddrInet6:
		return unix.AF_INET6
	}
	return unix.AF_UNIX
}

// opened serves the connected socket as a Conn: done, then OnOpen.
func (d *dialer) opened() {
	d.end()
	fd := d.fd
	d.fd = -1
	l := d.l
	l.load.Add(1)
	c := l.newConn(fd, d.hs)
	if d.forC != nil {
		c.ctx = d.forC // Conn.Dial's: the connection it was dialed for
	}
	if d.tls != nil {
		c.x().tls = newTLSConn(c, true, d.tls)
	}
	l.open(c, d.done)
}

// ctxDone is the dial's context's end (posted by context.AfterFunc).
func (d *dialer) ctxDone() { d.cancel(context.Cause(d.ctx)) }

// timedOut is the end of WithDialTimeout's bound when the loop's timer keeps it (d.timer): what
// ctxDone gives for a context past its deadline.
func (d *dialer) timedOut(*ringev.Timer) { d.cancel(context.DeadlineExceeded) }

// cancel ends the dial with err: at once while resolving, else once the connect request has
// been cancelled (its completion closes the socket).
func (d *dialer) cancel(err error) {
	if d.ended || d.cancelled != nil {
		return
	}
	d.cancelled = err
	if d.live {
		d.req.Cancel()
		return
	}
	d.fail(d.opErr(err))
}

// fail ends the dial with err (the socket is closed by then).
func (d *dialer) fail(err error) {
	if d.ended {
		return
	}
	d.end()
	d.done(nil, err)
	d.l.maybeDone()
}

// end takes the dial off the loop's list and stops watching its context and lookup; the
// connection it was for (Conn.Dial) is read again, unless it was paused for itself.
func (d *dialer) end() {
	d.ended = true
	delete(d.l.dials, d)
	d.stopWatch()
	if d.unresolve != nil {
		d.unresolve()
		d.unresolve = nil
	}
	if d.untime != nil {
		d.untime()
	}
	if d.timer != nil {
		d.timer.Stop()
		d.timer = nil
	}
	if c := d.forC; c != nil && c.rare.dialing == d {
		c.rare.dialing = nil
		if !c.closed && c.rare.fwdOn == nil {
			c.hold(c.rare.userHeld)
		}
	}
}

// stopWatch stops watching the dial's context.
func (d *dialer) stopWatch() {
	if d.stopCtx != nil {
		d.stopCtx()
		d.stopCtx = nil
	}
}

// closeFd closes the socket being connected (no request of it is left) through the loop
// (CloseFd), which forgets what it watched of it (the poll backend's emulated connect).
func (d *dialer) closeFd() {
	if d.fd < 0 {
		return
	}
	if _, err := d.l.ev.CloseFd(d.fd, ignoreCompletion, 0); err != nil {
		unix.Close(d.fd)
	}
	d.fd = -1
}

// ignoreCompletion is the callback of a request whose outcome does not matter.
func ignoreCompletion(*ringev.Completion) {}

// opErr is err as net.Dial gives it: naming the operation, the network and the address
// being tried ("dial tcp 127.0.0.1:1: connect: connection refused").
func (d *dialer) opErr(err error) error {
	var a net.Addr
	if d.sa != nil {
		a = sockaddrToNet(d.sa, unix.SOCK_STREAM)
	} else if d.host == "" && len(d.addrs) > 0 {
		a = sockaddrToNet(d.addrs[0], unix.SOCK_STREAM)
	}
	if a == nil {
		return &net.OpError{Op: "dial", Net: d.network, Err: fmt.Errorf("%s: %w", d.addr, err)}
	}
	return &net.OpError{Op: "dial", Net: d.network, Addr: a, Err: err}
}

// cancelDials fails every dial under way (a shutdown).
func (l *Loop) cancelDials() {
	for d := range l.dials {
		d.cancel(ErrShutdown)
	}
}
