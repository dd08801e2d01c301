//go:build unix

package nethttp

import (
	"bufio"
	"bytes"
	"context"
	"crypto/tls"
	"errors"
	"io"
	"log"
	"net"
	"net/http"
	"os"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/ringev/ringev/server"
	"golang.org/x/sys/unix"
)

// Server serves an http.Handler over HTTP/1.1 on the connections of a server.Engine: it is
// the Engine's server.Handler (with OnOpen, OnHandshake, OnClose, OnTimeout and
// OnBackpressure). Requests are parsed on the connection's loop; each runs its handler on a
// goroutine of its own, which ends with the response. An idle connection has no goroutine and
// no buffer. Once a handler has returned, its ResponseWriter's writes fail (using it after the
// return is not allowed by http.ResponseWriter); the map of its Header, the Request, its URL,
// header and context are its own, and a goroutine that keeps them reaches no later request.
type Server struct {
	cfg     *http.Server
	handler http.Handler
	limit   int // the most bytes a request head may take: MaxHeaderBytes + 4096, as net/http
	base    context.Context

	// hdrTO bounds a request head (ReadHeaderTimeout, else ReadTimeout); idleTO the wait for
	// the next request (IdleTimeout, else ReadTimeout).
	hdrTO, idleTO time.Duration

	workers workers  // the handlers' goroutines, and the count of those being served
	loops   sync.Map // *server.Loop -> *loopState
}

// loopState is what a Server keeps per loop.
type loopState struct {
	// yield: the handlers' goroutines may need the loop's P (GOMAXPROCS is not above the
	// engine's loops): once a turn has started handlers, the loop lets them run before it
	// waits (yieldFn), instead of leaving them until the runtime takes the P from its wait.
	yield   bool
	queued  bool
	yieldFn func()

	// local is the requests' base context with LocalAddrContextKey when every connection of
	// the engine has the same local address (it listens on a specific IP); else nil, and each
	// request gets its own.
	local context.Context
	base  context.Context

	// bufs are responses' buffers for reuse (takeBufs, putBufs), on the loop.
	bufs []respBufs
	// xs are exchanges for reuse (newExchange, recycle), on the loop.
	xs []*exchange
	// fast is fastRequest's scratch (a head's fields, the last head's string), on the loop.
	fast fastScratch

	// shutting is set once the engine's graceful shutdown has reached the loop (OnShutdown):
	// responses are the last of their connections, as net/http's once Shutdown has begun.
	shutting atomic.Bool
}

// localAddr returns c's local address (on the loop), without asking the Conn (which keeps
// it) where every connection has the engine's.
func (ls *loopState) localAddr(c *server.Conn) net.Addr {
	if ls.local != nil {
		return ls.local.Value(http.LocalAddrContextKey).(net.Addr)
	}
	return c.LocalAddr()
}

// localCtx returns the base context of c's requests (on the loop).
func (ls *loopState) localCtx(c *server.Conn) context.Context {
	if ls.local != nil {
		return ls.local
	}
	return context.WithValue(ls.base, http.LocalAddrContextKey, c.LocalAddr())
}

// loopOf returns the state of l (on l's goroutine).
func (s *Server) loopOf(l *server.Loop) *loopState {
	if v, ok := s.loops.Load(l); ok {
		return v.(*loopState)
	}
	ls := &loopState{yield: runtime.GOMAXPROCS(0) <= len(l.Engine().Loops()), base: s.base}
	if a, ok := l.Engine().Addr().(*net.TCPAddr); ok && !a.IP.IsUnspecified() {
		ls.local = context.WithValue(s.base, http.LocalAddrContextKey, net.Addr(a))
	}
	ls.yieldFn = func() {
		ls.queued = false
		runtime.Gosched()
	}
	s.loops.Store(l, ls)
	return ls
}

// New returns a Server that serves srv.Handler (http.DefaultServeMux when nil) with srv's
// settings that apply to HTTP/1.1 on a loop:
//   - ReadHeaderTimeout (else ReadTimeout) bounds a new connection's first head from the
//     connection's start, and a kept-alive connection's next head from its fourth byte, as
//     net/http's, which waits for 4 bytes before it reads a head; ReadTimeout bounds a
//     request from the same start, body included (a Read of r.Body fails after it);
//   - WriteTimeout: a response write fails once it has passed since the request's head, with
//     net/http's error ("write tcp LOCAL->REMOTE: i/o timeout", wrapping
//     os.ErrDeadlineExceeded); what was written before is still sent, and the connection
//     closes once the handler returns;
//   - IdleTimeout (else ReadTimeout) closes a kept-alive connection that sends no request
//     (fewer than 4 bytes of one; without it, they wait without a deadline, as on net/http);
//   - MaxHeaderBytes (http.DefaultMaxHeaderBytes when 0): a longer head gets 431;
//   - ErrorLog, ConnState (called on the connection's loop), DisableGeneralOptionsHandler.
//
// The other fields (TLSConfig, TLSNextProto, BaseContext, ConnContext, Protocols, HTTP2) do
// not apply: there is no HTTP/2, and no net.Listener. In particular TLSConfig does not make the
// Server serve HTTPS (as on net/http, whose Serve of a plain listener ignores it too): pass the
// config to the engine, server.Serve(ctx, "tcp", addr, nethttp.New(srv),
// server.WithTLS(srv.TLSConfig)). srv is read, never started; do not change it while the
// Server serves.
func New(srv *http.Server) *Server {
	h := srv.Handler
	if h == nil {
		h = http.DefaultServeMux
	}
	max := srv.MaxHeaderBytes
	if max <= 0 {
		max = http.DefaultMaxHeaderBytes
	}
	s := &Server{cfg: srv, handler: h, limit: max + 4096}
	s.workers.serve = (*exchange).serve
	s.base = context.WithValue(context.Background(), http.ServerContextKey, srv)
	s.hdrTO = srv.ReadHeaderTimeout
	if s.hdrTO <= 0 {
		s.hdrTO = srv.ReadTimeout
	}
	s.idleTO = srv.IdleTimeout
	if s.idleTO <= 0 {
		s.idleTO = srv.ReadTimeout
	}
	return s
}

// Serve serves h over HTTP/1.1 on the TCP address addr until ctx is done, then shuts down
// gracefully (server.Serve, with opts) and waits for the handlers still running. The shutdown
// is net/http's Server.Shutdown: accepting stops, idle connections close, and a request in
// service when ctx is done is served to its end, its response sent (r.Context() is not
// cancelled), then its connection closes. server.WithDrainTimeout bounds it
// (server.DefaultDrainTimeout, 5 s): past it, the connections still open are closed at once
// and their handlers' r.Context() cancelled; Serve then waits for those handlers to return.
// Settings of
// an http.Server go through New: server.Serve(ctx, "tcp", addr, nethttp.New(srv), opts...).
// Its errors are server.Serve's (an address in use, a bad option, ...). To learn the port of
// an addr such as "127.0.0.1:0" (a test's), use server.Listen with New, then Engine.Addr,
// Engine.Wait and Server.Wait. Where the backend "auto" fell back from io_uring (a container's
// seccomp policy, sysctl kernel.io_uring_disabled), the line that says so goes to
// server.WithLogf alone, not to the log package as the handlers' panics do: pass
// server.WithLogf(log.Printf) to hear of it.
func Serve(ctx context.Context, addr string, h http.Handler, opts ...server.Option) error {
	s := New(&http.Server{Handler: h})
	err := server.Serve(ctx, "tcp", addr, s, opts...)
	s.Wait()
	return err
}

// Wait waits until no handler of s is running (after the Engine has ended, every connection
// is closed and every handler's request context is cancelled), and ends the goroutines kept
// for handlers.
func (s *Server) Wait() {
	s.workers.wait()
	s.workers.stop()
}

func (s *Server) logf(format string, args ...any) {
	if s.cfg.ErrorLog != nil {
		s.cfg.ErrorLog.Printf(format, args...)
	} else {
		log.Printf(format, args...)
	}
}

// conn is a connection's state, on its loop: what an idle connection holds (with backFn's
// closure).
type conn struct {
	s  *Server
	c  *server.Conn
	ls *loopState
	x  *exchange // the request in service (its handler runs), nil while idle
	nc *netConn  // the net.Conn of ConnState and Hijack, made when needed
	hj *netConn  // set once hijacked: its input goes there
	ra string    // RemoteAddr's string, once a request asked for it

	back   *exchange // the exchange whose response handBack ends
	backFn func()    // handBack, made once

	head headScan // the head under way
	// opened is when the connection opened (mono), where ReadHeaderTimeout or ReadTimeout
	// starts for its first request; with ReadTimeout, when a later request's head had its
	// fourth byte, if it was not complete then (timeHead).
	opened int64

	crlf     uint8 // leading CR and LF bytes still to skip (after a POST, as net/http)
	skipped  uint8 // the CR and LF bytes skipped before the head under way
	timed    bool  // the head under way has its deadline (timeHead)
	held     bool  // reading is paused: a body's or hijacked input's reader is behind
	lastPOST bool
	served   bool // a request's head was read: the next one's waits for 4 bytes (OnTimeout)
	halfOpen bool // the Conn stays writable after the client's EOF (it has SetHalfOpen)
	tls      bool // a TLS connection (OnHandshake, else its first request: start)
	// input: the Conn's input may hold bytes past the request in service (they were there
	// after its head, or came while it was served); without it, done need not look for
	// the next request.
	input bool
	eof   bool // the client has shut down its side: no request will come after the input

	// wmu guards the write flow control: out is true while the Conn's output is past its
	// write limit (OnBackpressure); waiter is closed when it drains or the Conn closes. gone is
	// set by OnClose, and why then tells what a later write fails with (goneErr).
	out    bool
	gone   bool
	why    goneWhy
	wmu    sync.Mutex
	waiter chan struct{}
}

// remote is the client's address, as net/http's Request.RemoteAddr: made at the first
// request (on the loop) and kept for the others.
func (h *conn) remote() string {
	if h.ra == "" {
		h.setRemote()
	}
	return h.ra
}

// setRemote makes remote's string.
func (h *conn) setRemote() {
	if ra := h.c.RemoteAddr(); ra != nil {
		h.ra = addrString(ra)
	}
}

// addrString is a.String(), with one allocation for an IPv4 TCP address (String takes
// three).
func addrString(a net.Addr) string {
	ta, ok := a.(*net.TCPAddr)
	if !ok || ta.Zone != "" || ta.Port < 0 || ta.Port > 65535 {
		return a.String()
	}
	ip4 := ta.IP.To4()
	if ip4 == nil {
		return a.String()
	}
	var b [len("255.255.255.255:65535")]byte
	p := b[:0]
	for i, v := range ip4 {
		if i > 0 {
			p = append(p, '.')
		}
		p = strconv.AppendUint(p, uint64(v), 10)
	}
	p = append(p, ':')
	p = strconv.AppendUint(p, uint64(ta.Port), 10)
	return string(p)
}

// OnOpen prepares the connection: its timeouts and ConnState's StateNew.
func (s *Server) OnOpen(c *server.Conn) {
	h := &conn{s: s, c: c, ls: s.loopOf(c.Loop())}
	h.backFn = h.handBack
	c.SetContext(h)
	c.RemoteAddr() // asked while the socket is open; kept by the Conn
	if ho, ok := any(c).(halfOpener); ok {
		// A client that shuts down its side after its request (as nc -N and HTTP/1.0 tools
		// do) still gets its answer, as on net/http.
		h.halfOpen = ho.SetHalfOpen(true) == nil
	}
	if s.hdrTO > 0 {
		// The first head's deadline runs from now, as net/http's from the accept: until its
		// first byte the idle timeout is it; timeHead gives the head what is left. Over TLS the
		// request timeout bounds the handshake, and OnHandshake starts the head's deadline.
		c.SetTimeouts(s.hdrTO, s.hdrTO)
		h.opened = mono()
	}
	h.state(http.StateNew)
}

// OnHandshake starts a TLS connection's first head's deadline at its handshake's end
// (server.HandshakeHandler), as net/http's, which reads the head once the handshake is done.
// It notes that the connection is TLS's, for its requests' r.TLS.
func (s *Server) OnHandshake(c *server.Conn) {
	h, ok := c.Context().(*conn)
	if !ok {
		return
	}
	h.tls = true
	if s.hdrTO > 0 {
		c.SetTimeouts(s.hdrTO, 0)
		h.opened = mono()
	}
}

// epoch is the origin of mono.
var epoch = time.Now()

// mono is the monotonic clock, in nanoseconds since epoch.
func mono() int64 { return int64(time.Since(epoch)) }

// timeHead gives a head not yet complete its deadline, once, as net/http reads a head under
// ReadHeaderTimeout (else ReadTimeout): a new connection's first head within the timeout of
// the connection's start; a kept-alive connection's next head within the timeout of its
// fourth byte (n bytes of it are in the input; CR and LF skipped before it count), since
// net/http waits for 4 bytes under IdleTimeout (else ReadTimeout, else without a deadline)
// before it reads a head.
func (h *conn) timeHead(n int) {
	s := h.s
	n += int(h.skipped)
	if h.timed || n == 0 {
		return
	}
	switch {
	case h.served && n >= 4 && (s.hdrTO > 0 || s.idleTO > 0):
		h.c.SetTimeouts(0, s.hdrTO)
		if s.cfg.ReadTimeout > 0 {
			h.opened = mono() // ReadTimeout's start (start)
		}
	case h.served:
		return
	case s.hdrTO > 0:
		left := s.hdrTO - time.Duration(mono()-h.opened)
		h.c.SetTimeouts(0, max(left, 1))
	}
	h.timed = true
}

// headFailed calls ConnState's StateActive for a head that cannot be read (cut short, too
// large, malformed; n bytes of it and after it came) where net/http does: when its reading of
// the head read bytes from the socket. On a new connection that is any byte. A kept-alive
// connection's next head is read once a first read (of at most 4096 bytes, its buffer) has
// brought 4 bytes: only the bytes that came after that read count. nethttp takes a head of
// 4096 bytes or fewer as come in that first read.
func (h *conn) headFailed(n int) {
	if n > 0 && !h.served || n > 4096 {
		h.state(http.StateActive)
	}
}

// halfOpener is what a Conn offers that can stay open for writing after the peer's EOF
// (package server's WithHalfOpen): Conn.EOF then tells OnData that no more input will come.
type halfOpener interface {
	SetHalfOpen(on bool) error
	EOF() bool
}

// state calls ConnState, if set, for the connection.
func (h *conn) state(st http.ConnState) {
	if hook := h.s.cfg.ConnState; hook != nil {
		h.callState(hook, st)
	}
}

// callState is state's call of hook.
func (h *conn) callState(hook func(net.Conn, http.ConnState), st http.ConnState) {
	if h.nc == nil {
		h.nc = newNetConn(h)
	}
	hook(h.nc, st)
}

// OnData parses the requests in the input, feeds a body's reader, or a hijacked
// connection's.
func (s *Server) OnData(c *server.Conn) {
	h := c.Context().(*conn)
	if h.halfOpen && !h.eof {
		h.eof = c.EOF()
	}
	switch {
	case h.hj != nil:
		h.hj.fill()
		if h.eof {
			h.hj.in.end(nil)
		}
	case h.x != nil:
		h.input = true
		h.x.feed()
		if h.eof {
			h.x.atEOF()
		}
	default:
		h.next()
		if h.eof && h.x == nil {
			h.endAtEOF()
		}
	}
}

// atEOF is the client's EOF while x is in service: a body not yet complete ends there (its
// reader gets io.ErrUnexpectedEOF, as on net/http), and the request's context is cancelled, as
// net/http's is when its connection reader meets the EOF.
func (x *exchange) atEOF() {
	if x.body != nil && !x.bodyEnd {
		x.bodyEnd = true
		x.body.end(nil)
		x.cutShort = true
	}
	x.cancel()
}

// endAtEOF ends an idle connection whose client has shut down its side: what is left of a
// request's head gets net/http's answer (400 for a head cut short), then the connection
// closes.
func (h *conn) endAtEOF() {
	in, _ := h.c.Peek(-1)
	resp := ""
	if n := len(in) + int(h.skipped); h.served && n < 4 {
		// net/http's wait for a next head's 4 bytes ends there, without an answer.
	} else if len(in) > 0 {
		h.headFailed(n)
		x := newExchange(h)
		if _, err := x.parse(in, false); err != nil {
			resp = errorResponse(err)
		} else {
			x.cancel()
		}
		x.release()
		x.recycle()
		h.c.Discard(len(in))
	}
	h.fail(resp)
}

// OnTimeout gives a request head that a timeout cuts short net/http's answer
// (server.TimeoutHandler): the head's timeout (ReadHeaderTimeout, else ReadTimeout) or the
// idle timeout closes the connection after it. On a connection that has served a request,
// fewer than 4 bytes of the next head (CR and LF skipped after a POST counted) get no answer:
// net/http waits for 4 before it reads a head.
func (s *Server) OnTimeout(c *server.Conn, err error) {
	h, _ := c.Context().(*conn)
	if h == nil || h.x != nil || h.hj != nil {
		return
	}
	in, _ := c.Peek(-1)
	n := len(in) + int(h.skipped)
	if n == 0 || h.served && n < 4 {
		return
	}
	h.headFailed(n)
	if resp := cutAnswer(in); resp != "" {
		c.WriteString(resp)
	}
}

// cutAnswer is net/http's answer to the request head in that its read deadline cut short: ""
// (a close without one) or a 400. net/http's reader takes the last line, not complete, as a
// whole one, then meets the deadline: a request line, or a header line without a colon yet,
// is malformed (400); a head whose lines are valid so far fails with the timeout (no answer).
func cutAnswer(in []byte) string {
	err := readPartial(in, os.ErrDeadlineExceeded)
	var ne net.Error
	if err == nil || errors.As(err, &ne) && ne.Timeout() {
		return ""
	}
	return errorResponse(err)
}

// earlyMax is the longest head not yet complete that next reads as net/http's server would
// (earlyError), in bytes: each reading reads it all again, at most twice a line (headScan).
const earlyMax = 1024

// earlyError is the error net/http's server meets in head, not complete, before it waits for
// more bytes (a malformed request line, a header line without a colon, ...): net/http answers
// it at once, not at the head's end. nil: none, as for an empty head (stray CRLFs after a POST
// and nothing else), which net/http's reader waits on without reading it.
func earlyError(head []byte) (err error) {
	if len(head) == 0 {
		return nil
	}
	defer func() {
		if r := recover(); r != nil {
			if _, ok := r.(waitMore); !ok {
				panic(r)
			}
			err = nil
		}
	}()
	return readPartial(head, nil)
}

// readPartial is http.ReadRequest's error (nil: none) for a head of which its reader has b,
// then end; with end nil the reader stops there (partialHead).
func readPartial(b []byte, end error) error {
	br := readers.Get().(*bufio.Reader)
	defer func() {
		br.Reset(nil)
		readers.Put(br)
	}()
	br.Reset(&partialHead{b: b, end: end})
	_, err := http.ReadRequest(br)
	return err
}

// partialHead reads a head's bytes so far, then fails with end: a connection's reader past its
// read deadline, say. With end nil it panics with waitMore, for earlyError to recover: there
// net/http's reader would wait for more (an error would be read as the bytes' end, and the
// last line, not complete, taken as a whole one).
type partialHead struct {
	b   []byte
	end error
}

// waitMore is partialHead's panic where it has no more bytes and no end.
type waitMore struct{}

func (p *partialHead) Read(b []byte) (int, error) {
	if len(p.b) == 0 {
		if p.end == nil {
			panic(waitMore{})
		}
		return 0, p.end
	}
	n := copy(b, p.b)
	p.b = p.b[n:]
	return n, nil
}

// OnClose ends what the connection's request is waiting for: its body's reader and its
// writes fail, its context is cancelled. A failed TLS handshake is logged as net/http logs it
// ("http: TLS handshake error from ADDR: REASON").
func (s *Server) OnClose(c *server.Conn, err error) {
	if errors.Is(err, server.ErrTLSHandshake) {
		s.logf("http: TLS handshake error from %v: %v", c.RemoteAddr(), handshakeReason(err))
	}
	h, _ := c.Context().(*conn)
	if h == nil {
		return
	}
	if err == nil {
		err = net.ErrClosed
	}
	h.wmu.Lock()
	h.gone = true
	h.why = whyOf(err)
	if h.waiter != nil {
		close(h.waiter)
		h.waiter = nil
	}
	h.wmu.Unlock()
	if x := h.x; x != nil {
		x.gone(err)
	}
	if h.hj != nil {
		if errors.Is(err, io.EOF) {
			err = io.EOF
		}
		h.hj.in.end(err)
		return
	}
	h.state(http.StateClosed)
}

// handshakeReason is what net/http logs of a failed TLS handshake: crypto/tls's error (or
// the peer's early close, or the timeout) without package server's prefix, and for plaintext
// HTTP (which got net/http's 400, see ServesHTTPS) net/http's own words.
func handshakeReason(err error) string {
	var rh tls.RecordHeaderError
	if errors.As(err, &rh) && rh.Conn != nil && looksLikeHTTP(rh.RecordHeader) {
		return "client sent an HTTP request to an HTTPS server"
	}
	r := strings.TrimPrefix(err.Error(), server.ErrTLSHandshake.Error()+": ")
	return strings.TrimPrefix(r, "server: ")
}

// looksLikeHTTP reports whether a TLS record's header is the start of a plaintext HTTP
// request, as net/http's server tells it.
func looksLikeHTTP(hdr [5]byte) bool {
	switch string(hdr[:]) {
	case "GET /", "HEAD ", "POST ", "PUT /", "OPTIO":
		return true
	}
	return false
}

// OnShutdown keeps a connection whose request is in service open through the engine's graceful
// shutdown (server.ShutdownHandler): it closes once its response is sent (done). An idle
// connection, or a hijacked one, is closed by the engine.
func (s *Server) OnShutdown(c *server.Conn) bool {
	h := c.Context().(*conn)
	h.ls.shutting.Store(true)
	return h.x != nil && h.hj == nil
}

// ServesHTTPS makes Server a server.HTTPSHandler: over TLS (server.WithTLS), a client that
// sends plaintext HTTP gets net/http's 400 ("Client sent an HTTP request to an HTTPS server.").
func (s *Server) ServesHTTPS() {}

// OnBackpressure follows the output's limit: writers from goroutines wait while it is passed.
func (s *Server) OnBackpressure(c *server.Conn, paused bool) {
	h := c.Context().(*conn)
	h.wmu.Lock()
	h.out = paused
	if !paused && h.waiter != nil {
		close(h.waiter)
		h.waiter = nil
	}
	h.wmu.Unlock()
}

// syncWrites is called from a writer's goroutine after it wrote a good deal: it waits until
// the connection's output is below its write limit, or the connection has closed
// (net.ErrClosed), or deadline has passed (os.ErrDeadlineExceeded itself, for the caller to
// wrap with the addresses).
func (h *conn) syncWrites(deadline time.Time) error {
	ch := make(chan struct{})
	err := h.c.Loop().Post(func() {
		h.wmu.Lock()
		if h.out && !h.gone {
			h.waiter = ch
		} else {
			close(ch)
		}
		h.wmu.Unlock()
	})
	if err != nil {
		return net.ErrClosed
	}
	if deadline.IsZero() {
		<-ch
	} else {
		t := time.NewTimer(time.Until(deadline))
		defer t.Stop()
		select {
		case <-ch:
		case <-t.C:
			return os.ErrDeadlineExceeded
		}
	}
	h.wmu.Lock()
	defer h.wmu.Unlock()
	if h.gone {
		return net.ErrClosed
	}
	return nil
}

// pauseRead and resumeRead stop and restart the reading of the connection while a body's or a
// hijacked connection's reader is behind (Conn.PauseRead): the client is held back by TCP.
func (h *conn) pauseRead() {
	if !h.held {
		h.held = true
		h.c.PauseRead()
	}
}

func (h *conn) resumeRead() {
	if h.held {
		h.held = false
		h.c.ResumeRead()
	}
}

// maxQueued is how much input may wait in the Conn behind a request in service (pipelined
// requests, a body its reader has not taken) before reading pauses.
const maxQueued = 64 << 10

// The answers net/http's server writes itself, without a handler.
const errorHeaders = "\r\nContent-Type: text/plain; charset=utf-8\r\nConnection: close\r\n\r\n"

// next parses the request at the start of the input, if its head is complete, and starts
// its handler.
func (h *conn) next() {
	c := h.c
	in, _ := c.Peek(-1)
	if h.crlf > 0 && len(in) > 0 {
		n := 0
		for n < len(in) && n < int(h.crlf) && (in[n] == '\r' || in[n] == '\n') {
			n++
		}
		if n < len(in) || n == int(h.crlf) {
			h.crlf = 0
		} else {
			h.crlf -= uint8(n)
		}
		h.skipped += uint8(n)
		c.Discard(n)
		in, _ = c.Peek(-1)
	}
	if len(in) < 4 && h.served && len(in)+int(h.skipped) < 4 {
		return // net/http waits for 4 bytes before it reads a kept-alive connection's head
	}
	end, scanned := -1, false
	if h.head.looked == 0 {
		// The usual case: a whole common head in the input, read once (its Request is
		// built from what scan noted).
		end = h.ls.fast.scan(in)
		scanned = end > 0 && end <= h.s.limit
	}
	if !scanned {
		var err error
		end, err = h.head.look(in, h.s.limit)
		if end < 0 || end > h.s.limit {
			if end > h.s.limit || err == errHeadTooLarge {
				h.headFailed(len(in) + int(h.skipped))
				h.fail("HTTP/1.1 431 Request Header Fields Too Large" + errorHeaders + "431 Request Header Fields Too Large")
				return
			}
			if err != nil {
				h.headFailed(len(in) + int(h.skipped))
				h.fail(errorResponse(err))
				return
			}
			h.timeHead(len(in))
			return
		}
	}
	x := newExchange(h)
	req, err := x.parse(in[:end], scanned)
	if err != nil {
		x.release()
		x.recycle()
		h.headFailed(len(in) + int(h.skipped))
		h.fail(errorResponse(err))
		return
	}
	h.state(http.StateActive)
	h.lastPOST = req.Method == "POST"
	c.Discard(end)
	h.input = len(in) > end
	h.start(x)
}

// headScan follows a request's head as its bytes come (next's): where its whole lines end,
// and whether net/http's reader refuses it before its end. Each look goes on where the last
// stopped: it scans only the bytes that came since, and reads the head again (earlyError) only
// where what that reading meets may have changed.
type headScan struct {
	scanned int32 // the head's whole lines: where the line not complete starts
	looked  int32 // the bytes scanned for a line's end
	early   int32 // what earlyError read last: scanned<<1, and 1 where a byte came after it
}

// errHeadTooLarge is look's error for a head not complete with limit bytes or more.
var errHeadTooLarge = errors.New("http: request head too large")

// look returns the end of the head at the start of in (-1: not complete yet), in holding the
// bytes of the last look and those that came since. For a head not complete, err is
// errHeadTooLarge where it has limit bytes or more, else the error net/http's reader meets in
// it already (earlyError, for a head of at most earlyMax bytes). That reader judges whole
// lines, and the byte after the last (a continued line's blank, or the next field's); it waits
// on a line not complete: so earlyError's answer can change only when a line has ended or the
// byte after one has come, and only then is the head read again.
func (s *headScan) look(in []byte, limit int) (end int, err error) {
	if s.looked == 0 {
		if end = headerEnd(in); end >= 0 {
			return end, nil // the usual case: the whole head in one read
		}
	}
	for i := int(s.looked); ; {
		j := bytes.IndexByte(in[i:], '\n')
		if j < 0 {
			s.looked = int32(len(in))
			break
		}
		lf := i + j
		if n := lf - int(s.scanned); n == 0 || n == 1 && in[s.scanned] == '\r' {
			*s = headScan{}
			return lf + 1, nil
		}
		s.scanned = int32(lf + 1)
		i = lf + 1
	}
	if len(in) >= limit {
		return -1, errHeadTooLarge
	}
	if s.scanned > 0 && len(in) <= earlyMax {
		k := s.scanned << 1
		if len(in) > int(s.scanned) {
			k |= 1
		}
		if k != s.early {
			s.early = k
			return -1, earlyError(in)
		}
	}
	return -1, nil
}

// fail writes one of net/http's own error responses and closes the connection.
func (h *conn) fail(resp string) {
	if resp != "" {
		h.c.WriteString(resp)
	}
	h.c.Close()
}

// errorResponse is the response net/http's server writes for a request it could not read
// (err from http.ReadRequest or from the server's own checks), "" for none.
func errorResponse(err error) string {
	var se statusError
	switch {
	case errors.As(err, &se):
		t := http.StatusText(se.code) + ": " + se.text
		return "HTTP/1.1 " + itoa(se.code) + " " + t + errorHeaders + itoa(se.code) + " " + t
	case isUnsupportedTE(err):
		return "HTTP/1.1 501 Not Implemented" + errorHeaders + "Unsupported transfer encoding"
	case err == io.EOF:
		return ""
	}
	return "HTTP/1.1 400 Bad Request" + errorHeaders + "400 Bad Request"
}

// isUnsupportedTE reports whether err is http.ReadRequest's for a Transfer-Encoding it does
// not implement (net/http answers 501 to it).
func isUnsupportedTE(err error) bool {
	s := err.Error()
	return strings.HasPrefix(s, "unsupported transfer encoding: ") || strings.HasPrefix(s, "too many transfer encodings: ")
}

// statusError is a request refused with a status of its own, as net/http's server does.
type statusError struct {
	code int
	text string
}

func (e statusError) Error() string { return http.StatusText(e.code) + ": " + e.text }

func itoa(n int) string {
	var b [20]byte
	i := len(b)
	for {
		i--
		b[i] = byte('0' + n%10)
		n /= 10
		if n == 0 {
			return string(b[i:])
		}
	}
}

// exchange is one request and its response, from the head's arrival to the response's end.
type exchange struct {
	h    *conn
	req  *http.Request
	w    *response // &resp
	resp response

	rs   *reqState     // what the Request holds that lives as long as it does
	src  source        // what the request's bufio.Reader reads: the head, then the body
	br   *bufio.Reader // http.ReadRequest's reader, read by the body
	body *pipe         // the body's bytes, from the loop; nil without a body
	rb   *reqBody

	left     int64     // a body of known length: its bytes still to come; -1 chunked
	cutShort bool      // the client's EOF ended the body before its end
	chunks   chunkScan // a chunked body: where it ends
	bodyEnd  bool      // every byte of the body went to its reader
	wdl      time.Time // WriteTimeout's deadline

	unsynced int // bytes written to the Conn since the last wait for its output (connWriter)

	out   *outBuf       // the response's last bytes, for handBack
	bw    *bufio.Writer // the response's writer, for handBack to keep
	reuse bool          // the connection serves another request after this one (handBack)

	abandoned bool // its handler panicked with a ResponseWriter method inside: not reused

	// A long body by Content-Length is read by its reader from the socket (detach): plain is
	// set when the connection is not TLS's; detaching while the loop waits for its reading to
	// stop (AfterPause), direct while the reader reads (attach ends it); noDirect once that
	// ended before the body's end.
	plain, detaching, direct, noDirect bool
}

// source is the reader under a request's bufio.Reader: the head (on the loop, in
// http.ReadRequest), then the body's pipe (on the handler's goroutine).
type source struct {
	head []byte
	body *pipe
}

func (s *source) Read(p []byte) (int, error) {
	if len(s.head) > 0 {
		n := copy(p, s.head)
		s.head = s.head[n:]
		return n, nil
	}
	if s.body == nil {
		return 0, io.EOF
	}
	return s.body.Read(p)
}

var readers = sync.Pool{New: func() any { return bufio.NewReaderSize(nil, 4096) }}

// reqState is the part of a request's exchange that its Request points to (its context, and
// the Request and its URL when fastRequest reads the head): made for each request, as a
// handler may keep the Request after it returns (http.TimeoutHandler's inner handler does),
// while the exchange is reused. At 512 bytes it takes the allocator's 512-byte size class,
// whose objects have no 8-byte header.
type reqState struct {
	ctx  reqCtx
	room fastRoom // the Request and its URL, when fastRequest reads the head
	w    handle   // the handler's ResponseWriter
}

// maxLoopExchanges bounds the exchanges a loop keeps for reuse (loopState.xs).
const maxLoopExchanges = 64

// newExchange returns an exchange for a request of h (on the loop): one the loop kept, else
// a new one.
func newExchange(h *conn) *exchange {
	ls := h.ls
	rs := new(reqState)
	if n := len(ls.xs); n > 0 {
		x := ls.xs[n-1]
		ls.xs[n-1] = nil
		ls.xs = ls.xs[:n-1]
		x.h, x.left, x.rs = h, -1, rs
		return x
	}
	return &exchange{h: h, left: -1, rs: rs}
}

// recycle keeps x for the next request (on the loop), once nothing refers to it: its handler
// has returned and its response is written, and it had no body (whose reader and the loop's
// posted calls may still refer to it), nor was hijacked. Its handler's header map is not
// kept: a goroutine may still hold it.
func (x *exchange) recycle() {
	ls := x.h.ls
	if x.body != nil || len(ls.xs) >= maxLoopExchanges {
		return
	}
	*x = exchange{}
	ls.xs = append(ls.xs, x)
}

// cancel cancels the request's context.
func (x *exchange) cancel() { x.rs.ctx.cancel() }

// release returns the exchange's reader, once nothing reads it.
func (x *exchange) release() {
	if x.br != nil {
		x.br.Reset(nil)
		readers.Put(x.br)
		x.br = nil
	}
}

// parse reads the request's head (fastRequest, else http.ReadRequest) and checks it as
// net/http's server does; err is what net/http's server answers (errorResponse). The
// Request has its context, which x.cancel cancels. scanned: the loop's fastScratch.scan has
// just read head, a fast one.
func (x *exchange) parse(head []byte, scanned bool) (*http.Request, error) {
	x.rs.ctx.parent = x.h.ls.localCtx(x.h.c)
	req, err := x.parseHead(head, &x.rs.ctx, scanned)
	if err != nil {
		x.cancel()
		return nil, err
	}
	return req, nil
}

// parseHead is parse's work, with the request's context ctx.
func (x *exchange) parseHead(head []byte, ctx context.Context, scanned bool) (*http.Request, error) {
	sc := &x.h.ls.fast
	var req *http.Request
	var hosts int
	if scanned {
		req, hosts = sc.request(head, ctx, &x.rs.room)
	} else {
		req, hosts = fastRequest(head, ctx, &x.rs.room, sc)
	}
	if req != nil {
		// An HTTP/1.x GET or HEAD: the checks below that apply.
		if hosts == 0 && req.ProtoMinor == 1 {
			return nil, statusError{http.StatusBadRequest, "missing required Host header"}
		}
		if hosts == 1 && !sc.hostValid(req.Host, len(head)) {
			return nil, statusError{http.StatusBadRequest, "malformed Host header"}
		}
		x.req = req
		return req, nil
	}
	x.br = readers.Get().(*bufio.Reader)
	x.br.Reset(&x.src)
	x.src.head = head
	req, err := http.ReadRequest(x.br)
	x.src.head = nil
	if err != nil {
		return nil, err
	}
	*req = *req.WithContext(ctx) // in place: the body's reader sets this Request's Trailer
	hosts, host := hostFields(head)
	if req.ProtoMajor != 1 && !(req.ProtoMajor == 2 && req.ProtoMinor == 0 && req.Method == "PRI" && req.RequestURI == "*") {
		return nil, statusError{http.StatusHTTPVersionNotSupported, "unsupported protocol version"}
	}
	isH2Upgrade := req.Method == "PRI" && len(req.Header) == 0 && req.URL.Path == "*" && req.Proto == "HTTP/2.0"
	if req.ProtoAtLeast(1, 1) && hosts == 0 && !isH2Upgrade && req.Method != "CONNECT" {
		return nil, statusError{http.StatusBadRequest, "missing required Host header"}
	}
	if hosts == 1 && !validHost(string(host)) {
		return nil, statusError{http.StatusBadRequest, "malformed Host header"}
	}
	for k, vv := range req.Header {
		if !validFieldName(k) {
			return nil, statusError{http.StatusBadRequest, "invalid header name"}
		}
		for _, v := range vv {
			if !validFieldValue(v) {
				return nil, statusError{http.StatusBadRequest, "invalid header value"}
			}
		}
	}
	x.req = req
	return req, nil
}

// start serves a parsed request: its body's feed, its context, its handler's goroutine.
func (h *conn) start(x *exchange) {
	s, c, req := h.s, h.c, x.req
	h.x = x
	// net/http reads a request from the connection's start for its first, else from its
	// head's fourth byte: timeHead noted when, where that was before this turn.
	began := !h.served || h.timed
	if !h.served && !h.tls {
		// OnHandshake notes a TLS connection; a handler that wraps the Server may not pass
		// it on, and a TLS body must not be read from the socket as plaintext (detach).
		h.tls = c.TLS() != nil
	}
	h.served = true
	h.crlf, h.skipped, h.timed = 0, 0, false
	if h.lastPOST {
		h.crlf = 4
	}
	if s.hdrTO > 0 || s.idleTO > 0 {
		c.SetTimeouts(0, 0) // pipelined requests wait for this one, without a deadline
	}
	var now time.Time // asked for once, by a timeout that needs it
	// A Request of fastRequest's (in the request's state) has no body: http.NoBody.
	if req != &x.rs.room.req && req.Body != http.NoBody {
		x.body = newPipe(x.more)
		x.src.body = x.body
		if len(req.TransferEncoding) == 0 {
			x.left = req.ContentLength
		}
		if d := s.cfg.ReadTimeout; d > 0 {
			// The error of net/http's connection read: "read tcp LOCAL->REMOTE: i/o timeout".
			x.body.timeout = &net.OpError{Op: "read", Net: "tcp", Source: h.ls.localAddr(c), Addr: c.RemoteAddr(), Err: os.ErrDeadlineExceeded}
			now = time.Now()
			from := now
			if began {
				from = epoch.Add(time.Duration(h.opened))
			}
			x.body.setDeadline(from.Add(d)) // ReadTimeout bounds the whole request, head and body
		}
		x.rb = &reqBody{inner: req.Body, chunked: x.left < 0, left: x.left, closing: req.Close}
		req.Body = x.rb
	} else {
		x.release()
		x.bodyEnd = true
	}
	if d := s.cfg.WriteTimeout; d > 0 {
		if now.IsZero() {
			now = time.Now()
		}
		x.wdl = now.Add(d)
		h.ls.localAddr(c) // asked on the loop, kept by the Conn: a write timeout's error names it
	}
	req.RemoteAddr = h.remote()
	if h.tls {
		req.TLS = c.TLS() // the handshake has ended by OnData
	}
	x.plain = req.TLS == nil
	x.w = initResponse(x)
	if x.body != nil {
		x.feed()
	}
	s.workers.run(x)
	if ls := h.ls; ls.yield && !ls.queued {
		ls.queued = true
		c.Loop().Post(ls.yieldFn)
	}
}

// directMin is the least a body's bytes still to come by Content-Length must be for its
// reader to read them from the socket itself (detach), in bytes: the hand-over costs about ten
// syscalls, the copies it saves 2 per byte.
const directMin = 256 << 10

// feed gives the body's reader what the input holds of the body (on the loop), and pauses
// reading while its pipe is full or too much input waits. A long body's rest is left to its
// reader (detach).
func (x *exchange) feed() {
	h := x.h
	full := x.feedBody()
	if x.left >= directMin && x.plain && !x.detaching && !x.direct && !x.noDirect {
		x.detaching = true
		h.pauseRead()
		if h.c.AfterPause(x.detach) != nil {
			x.detaching = false
		}
		return
	}
	if full || h.c.Buffered() > maxQueued {
		h.pauseRead()
	}
}

// detach hands the rest of the body to its reader, which reads it from a dup(2) of the socket,
// once the loop reads the connection no more (AfterPause's): what the input holds of the body
// goes to the pipe first. Where that fails, the loop feeds the body as before.
func (x *exchange) detach() {
	h := x.h
	if h.x != x || !x.detaching {
		return
	}
	x.detaching = false
	x.feedBody()
	if x.bodyEnd || x.left <= 0 {
		x.resume()
		return
	}
	dc, err := dupConn(h.c.Fd())
	if err != nil {
		x.noDirect = true
		x.resume()
		return
	}
	x.direct = true
	x.body.direct(dc, x.left, x.attached)
}

// dupConn returns a net.Conn on a dup(2) of fd, in the runtime's poller.
func dupConn(fd int) (net.Conn, error) {
	nfd, err := unix.FcntlInt(uintptr(fd), unix.F_DUPFD_CLOEXEC, 0)
	if err != nil {
		return nil, err
	}
	f := os.NewFile(uintptr(nfd), "")
	dc, err := net.FileConn(f)
	f.Close()
	return dc, err
}

// attached is the end of the reader's reading of the socket (on its goroutine): left bytes of
// the body were not read (0: all were). The loop reads the connection again.
func (x *exchange) attached(left int64) {
	x.h.c.Loop().Post(func() {
		if x.h.x != x || !x.direct {
			return
		}
		x.direct = false
		x.left = left
		if left == 0 {
			x.bodyEnd = true
		} else {
			x.noDirect = true
		}
		x.h.resumeRead()
	})
}

// resume resumes reading after a detach, unless the pipe or the input holds the reader back.
func (x *exchange) resume() {
	if x.h.c.Buffered() <= maxQueued && (x.body == nil || !x.body.isFull()) {
		x.h.resumeRead()
	}
}

// feedBody gives the body's reader what the input holds of the body and reports whether its
// pipe is full.
func (x *exchange) feedBody() (full bool) {
	h := x.h
	if x.body != nil && !x.bodyEnd && !x.direct {
		in, _ := h.c.Peek(-1)
		var n int
		if x.left >= 0 {
			n = int(min(int64(len(in)), x.left))
		} else {
			n = x.chunks.scan(in)
		}
		if x.chunks.state == chunkDone && x.chunks.peek > 0 {
			full = x.body.put(in[:n+x.chunks.peek]) // the reader peeks past the end, takes n
		} else {
			full = x.body.put(in[:n])
		}
		h.c.Discard(n)
		if x.left >= 0 {
			x.left -= int64(n)
		}
		if x.left == 0 || x.chunks.state == chunkDone {
			x.bodyEnd = true
			x.body.end(nil)
		}
	}
	return full
}

// more is called by the body's reader once its pipe has room again: the loop feeds it and
// resumes reading.
func (x *exchange) more() {
	x.h.c.Loop().Post(func() {
		if x.h.x == x {
			x.feed()
			if !x.h.held || x.detaching || x.direct {
				return
			}
			x.resume()
		}
	})
}

// gone is the connection's end while the request is in service (on the loop).
func (x *exchange) gone(err error) {
	if x.body != nil {
		if errors.Is(err, io.EOF) {
			err = io.ErrUnexpectedEOF
		}
		x.body.end(err)
	}
	x.cancel()
	x.w.closeNotify()
}

// serve runs the handler (on its own goroutine), ends the response as net/http does, and
// hands the connection back to the loop.
func (x *exchange) serve() {
	w, req := x.w, x.req
	hw := &x.rs.w
	hw.w = w
	reuse, ended := false, false
	defer func() {
		abandoned := !ended && hw.abandon() // the handler panicked, a write perhaps inside
		if err := recover(); err != nil && err != http.ErrAbortHandler {
			const size = 64 << 10
			buf := make([]byte, size)
			buf = buf[:runtime.Stack(buf, false)]
			x.h.s.logf("http: panic serving %v: %v\n%s", x.h.ra, err, buf)
		}
		if !ended {
			x.cancel() // the handler panicked: its context was not cancelled below
		}
		if w.hijacked.Load() {
			return
		}
		h := x.h
		if abandoned {
			// The response and its buffers are left to what may still write to them: the
			// exchange is not reused, the connection closes.
			x.abandoned = true
			h.back, x.out, x.bw, x.reuse = x, nil, nil, false
			h.c.Loop().Post(h.backFn)
			return
		}
		if !reuse {
			w.disableWriteContinue()
		}
		out := w.bufw // its bytes are written on the loop, with the connection's hand-back
		w.bufw = nil
		if len(out.b) > 0 && (w.werr != nil || x.pastWriteDeadline()) {
			out.b = out.b[:0] // a write that failed, or would: not sent, as on net/http
			reuse = false
		}
		h.back, x.out, x.bw, x.reuse = x, out, w.w, reuse
		w.w = nil
		h.c.Loop().Post(h.backFn) // (an error: the loop has ended; the buffers go)
	}()
	var handler http.Handler = x.h.s.handler
	if !x.h.s.cfg.DisableGeneralOptionsHandler && req.RequestURI == "*" && req.Method == "OPTIONS" {
		handler = globalOptionsHandler{}
	}
	if len(req.Header) == 0 || x.expect() {
		handler.ServeHTTP(hw, req)
	}
	// The context ends with the handler, as on net/http, before end waits: a goroutine
	// writing to hw until the context ends (context.AfterFunc, <-r.Context().Done()) stops.
	x.cancel()
	hw.end() // no goroutine that kept hw writes past here, into a response the loop reuses
	ended = true
	if w.hijacked.Load() {
		return
	}
	w.finishRequest()
	reuse = w.shouldReuseConnection()
}

// handBack is the end of a response on the loop (posted by serve, through backFn, made once
// per connection): its bytes are written, and the connection is taken back (done).
func (h *conn) handBack() {
	x := h.back
	h.back = nil
	if out := x.out; out != nil {
		x.out = nil
		if len(out.b) > 0 {
			h.c.Write(out.b)
		}
		h.ls.putBufs(x.bw, out)
		x.bw = nil
	}
	h.done(x, x.reuse)
}

// expect handles the request's Expect header as net/http does: 100-continue is sent on the
// body's first read; another expectation gets 417 and no handler (false).
func (x *exchange) expect() bool {
	req, w := x.req, x.w
	e := headerGet(req.Header, "Expect")
	if e == "" {
		return true
	}
	if hasToken(e, "100-continue") {
		if req.ProtoAtLeast(1, 1) && req.ContentLength != 0 {
			req.Body = &expectContinueReader{readCloser: req.Body, resp: w}
			w.canWriteContinue.Store(true)
		}
		return true
	}
	w.Header().Set("Connection", "close")
	w.WriteHeader(http.StatusExpectationFailed)
	return false
}

// done takes the connection back after a response (on the loop): the next request, or the
// close.
func (h *conn) done(x *exchange, reuse bool) {
	if h.x != x {
		return
	}
	h.x = nil
	if x.body != nil {
		x.body.close()
	}
	if x.rb != nil {
		x.release() // the body's reader is done with it
	}
	closing := !reuse || !x.bodyEnd || x.cutShort || h.ls.shutting.Load()
	var werr error
	if !x.abandoned {
		werr = x.w.werr
		x.recycle()
	}
	if closing {
		if errors.Is(werr, os.ErrDeadlineExceeded) {
			// The output queued before the deadline is still sent, as a closed socket's
			// is by the kernel; a client that does not read it is not waited for longer
			// than the deadline's own span.
			d := h.s.cfg.WriteTimeout
			if d <= 0 {
				d = time.Second
			}
			h.c.SetIdleTimeout(d)
		}
		h.c.Close()
		return
	}
	h.state(http.StateIdle)
	if h.s.idleTO > 0 {
		h.c.SetTimeouts(h.s.idleTO, 0) // the next head's deadline starts at its fourth byte (timeHead)
	}
	// Reading resumes unless more than maxQueued waits still (a client pipelining and not
	// reading: each resume would read more than a request takes, to MaxInput and the close).
	// Once the next request has taken its head (and its body what the input held of it), it
	// resumes as after a body's feed: a head not complete, or a body, needs its bytes.
	if h.held && h.c.Buffered() <= maxQueued {
		h.resumeRead()
	}
	if h.input || h.held { // (with no input, next would wait for it: nothing to do)
		h.next()
	}
	if h.held {
		if x := h.x; x == nil {
			h.resumeRead()
		} else if !x.detaching && !x.direct {
			x.resume()
		}
	}
	if h.eof && h.x == nil {
		h.endAtEOF()
	}
}

// hasToken reports whether token appears in v as a comma- or space-separated element,
// case-insensitively (net/http's Connection and Expect rule).
func hasToken(v, token string) bool {
	if len(token) > len(v) || token == "" {
		return false
	}
	if v == token {
		return true
	}
	for sp := 0; sp <= len(v)-len(token); sp++ {
		if b := v[sp]; b != token[0] && b|0x20 != token[0] {
			continue
		}
		if sp > 0 && !isTokenBoundary(v[sp-1]) {
			continue
		}
		if ep := sp + len(token); ep != len(v) && !isTokenBoundary(v[ep]) {
			continue
		}
		if strings.EqualFold(v[sp:sp+len(token)], token) {
			return true
		}
	}
	return false
}

func isTokenBoundary(b byte) bool { return b == ' ' || b == ',' || b == '\t' }

// globalOptionsHandler answers "OPTIONS *" as net/http's server does.
type globalOptionsHandler struct{}

func (globalOptionsHandler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Content-Length", "0")
	if r.ContentLength != 0 {
		// At most 4 KiB of body; past that the connection closes (http.MaxBytesReader's
		// effect on net/http's own writer).
		if n, _ := io.Copy(io.Discard, io.LimitReader(r.Body, 4<<10+1)); n > 4<<10 {
			if hw, ok := w.(*handle); ok {
				hw.w.requestTooLarge()
			}
		}
	}
}
