//go:build unix

package server

import (
	"bytes"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"net"
	"runtime"
	"slices"
	"sync"
	"time"

	"github.com/ringev/ringev"
)

// TLS on the loop, with crypto/tls unmodified.
//
// The handshake runs on a goroutine of a bounded pool (WithMaxTLSHandshakes per engine), because
// crypto/tls's handshake reads where it needs to and an error in it is permanent: its
// transport's Read blocks until the loop hands it bytes. It starts once the first record (the
// ClientHello) has arrived whole, so a client that sends part of one holds no goroutine;
// connections that wait for a slot keep what they receive (up to maxHandshakeInput). The loop
// bounds it with the handshake timeout.
//
// After the handshake the records are read and written on the loop, without a goroutine: the
// transport's Read returns what the loop received in this turn, a record at most per call, and
// then an error whose Temporary() is true, which crypto/tls survives (its read side keeps the
// bytes of a record not yet complete and goes on at the next call); its Write appends to the
// connection's output and never fails. The handler's writes of a turn are one tls.Conn.Write at the turn's end
// (records of up to 16 KiB), sealed into the output the driver sends. A server's TLS 1.3
// connection goes over to the layer's own records instead (swRecords, tlsrec.go) and drops
// its tls.Conn; either way an idle connection holds no buffer of the layer's.

// DefaultMaxTLSHandshakes is WithMaxTLSHandshakes's default.
const DefaultMaxTLSHandshakes = 1024

// WithMaxTLSHandshakes sets the most TLS handshakes an engine runs at once, each on a goroutine
// of its own (0: DefaultMaxTLSHandshakes); the connections past it wait, holding what they
// received, until one ends. A handshake holds its goroutine until it ends or its timeout
// passes, also while it waits for the client: a client that sends a ClientHello and then
// nothing holds one, so a small n lets that many stalled clients delay every other
// handshake by up to the timeout. The computing is bounded apart from it: at most GOMAXPROCS
// less the engine's loops (at least one) handshakes compute at once. A goroutine that waits
// costs its stack (8-16 KiB after a handshake). Negative: an error from Listen.
func WithMaxTLSHandshakes(n int) Option { return func(o *options) { o.handshakes = n } }

// DefaultTLSHandshakeTimeout bounds a TLS handshake, from the accept, when the connection has
// no request timeout (WithRequestTimeout, Conn.SetRequestTimeout in OnOpen), which bounds it
// otherwise.
const DefaultTLSHandshakeTimeout = 10 * time.Second

// maxHandshakeInput is what a connection may send before its handshake ends, in bytes, past
// which it is not read until the handshake ends.
const maxHandshakeInput = 64 << 10

// Reasons a TLS connection closed, given to CloseHandler.OnClose (the others wrap crypto/tls's
// error in one that names the handshake or the records).
var (
	// ErrTLSHandshake: the handshake failed. Every handshake failure wraps it: crypto/tls's
	// error (a bad ClientHello, an alert, a certificate refused), the peer's close before the
	// handshake's end as crypto/tls says it (io.EOF at a record's boundary, no byte sent say;
	// io.ErrUnexpectedEOF within a record), and ErrTLSHandshakeTimeout.
	ErrTLSHandshake = errors.New("server: TLS handshake")
	// ErrTLSHandshakeTimeout: the handshake did not end within its timeout.
	ErrTLSHandshakeTimeout = fmt.Errorf("%w not complete within its timeout", ErrTLSHandshake)
	// ErrTLSNoCloseNotify: the peer closed its side without a close_notify alert (a truncation
	// attack looks the same). It wraps io.EOF, as most clients do it.
	ErrTLSNoCloseNotify = fmt.Errorf("server: TLS peer closed without close_notify: %w", io.EOF)
)

// WithTLS serves TLS with cfg on every connection of the engine (Listen): the handler reads and
// writes plaintext, as over TCP, and Conn.TLS gives the connection's state once its handshake
// has ended. cfg needs a certificate (Certificates, GetCertificate or GetConfigForClient); it
// must not be changed once given. The engine serves a clone of it whose KeyLogWriter passes
// each line on to cfg's and keeps a TLS 1.3 connection's traffic secrets for the layer's own
// record path. OnOpen runs at the accept, before the handshake (Conn.TLS is nil there): what
// it writes is sent once the handshake has ended; a HandshakeHandler's OnHandshake runs at the
// handshake's end, with Conn.TLS set, and OnData after it. A handshake that fails closes the
// connection with an error wrapping ErrTLSHandshake and crypto/tls's (OnClose); a record that
// fails after it, with one naming the operation, the fd and the record error ("server: TLS
// record read of fd N: REASON", or write; for the layer's own TLS 1.3 records REASON names the
// alert sent, or that none was: nothing follows the connection's close_notify).
// Listen and NewEngine return an error for a cfg without a certificate, and for a nil cfg
// (http.Server's TLSConfig left unset, say), which would otherwise serve plaintext.
func WithTLS(cfg *tls.Config) Option {
	return func(o *options) { o.tls, o.tlsNil = cfg, cfg == nil }
}

// checkTLS returns an error naming what cfg lacks to serve, or nil.
func checkTLS(cfg *tls.Config) error {
	if cfg == nil {
		return nil
	}
	if len(cfg.Certificates) == 0 && cfg.GetCertificate == nil && cfg.GetConfigForClient == nil {
		return errors.New("server: WithTLS: a tls.Config without a certificate (Certificates, GetCertificate or GetConfigForClient)")
	}
	return nil
}

// http1ALPN returns the config an HTTPSHandler is served with, which speaks HTTP/1.1 alone: cfg,
// or, when cfg offers "h2" by ALPN (NextProtos), a clone that offers "http/1.1" in its place, so
// that a client that offers both gets HTTP/1.1, not HTTP/2 answered in HTTP/1.1. The configs a
// GetConfigForClient returns are treated the same way.
func http1ALPN(cfg *tls.Config) *tls.Config {
	if cfg == nil || !slices.Contains(cfg.NextProtos, "h2") && cfg.GetConfigForClient == nil {
		return cfg
	}
	c := cfg.Clone()
	c.NextProtos = withoutH2(cfg.NextProtos)
	if get := cfg.GetConfigForClient; get != nil {
		c.GetConfigForClient = func(hello *tls.ClientHelloInfo) (*tls.Config, error) {
			sc, err := get(hello)
			if sc != nil && slices.Contains(sc.NextProtos, "h2") {
				sc = sc.Clone()
				sc.NextProtos = withoutH2(sc.NextProtos)
			}
			return sc, err
		}
	}
	return c
}

// withoutH2 returns protos with "h2" replaced by "http/1.1", or left out when "http/1.1" is
// there already; protos itself when it has no "h2".
func withoutH2(protos []string) []string {
	if !slices.Contains(protos, "h2") {
		return protos
	}
	out := make([]string, 0, len(protos))
	for _, p := range protos {
		if p == "h2" {
			if slices.Contains(protos, "http/1.1") {
				continue
			}
			p = "http/1.1"
		}
		out = append(out, p)
	}
	return out
}

// tlsServer is an engine's TLS handshake pool, for WithTLS's connections and DialTLS's.
type tlsServer struct {
	e *Engine
	// cpu holds a token per handshake computing (between the transport's reads that wait):
	// GOMAXPROCS less the engine's loops, at least one, so that handshakes leave the loops
	// their Ps. A loop whose goroutine wakes from the kernel to find every P busy waits for
	// the scheduler to take one from a handshake, and every connection of it waits too.
	cpu     chan struct{}
	mu      sync.Mutex
	queue   []*tlsConn // waiting for a slot
	running int        // goroutines of the pool, idle ones included
	idle    int        // goroutines waiting on next for a handshake
	// next hands a handshake to an idle goroutine. A goroutine that waits keeps the stack its
	// handshakes grew (a new one grows it again, a copy each time it doubles), so up to
	// cap(cpu) of them wait, until the engine's loops have ended (quit).
	next  chan *tlsConn
	quit  chan struct{} // closed when the engine's last loop has ended
	ended int           // loops ended (under mu)

	keyMu sync.Mutex
	keys  map[[32]byte]keyEntry // the handshakes under way by ClientHello random (keyLine)
}

// newTLSServer makes e's handshake pool.
func newTLSServer(e *Engine) *tlsServer {
	return &tlsServer{e: e, next: make(chan *tlsConn), quit: make(chan struct{})}
}

// loopEnded is told of the end of each of the engine's loops: after the last, the idle
// goroutines end.
func (s *tlsServer) loopEnded() {
	s.mu.Lock()
	s.ended++
	if s.ended == len(s.e.loops) {
		close(s.quit)
	}
	s.mu.Unlock()
}

// enqueue hands t's handshake to an idle goroutine of the pool, or starts one, or queues it when
// the pool is full. It runs on a loop, so quit is not closed meanwhile.
func (s *tlsServer) enqueue(t *tlsConn) {
	s.mu.Lock()
	if s.cpu == nil {
		s.cpu = make(chan struct{}, max(1, runtime.GOMAXPROCS(0)-len(s.e.loops)))
	}
	switch {
	case s.idle > 0:
		s.idle--
		s.mu.Unlock()
		s.next <- t // an idle goroutine takes only next until quit, which is not closed yet
		return
	case s.running >= s.e.o.handshakes:
		s.queue = append(s.queue, t)
		s.mu.Unlock()
		return
	}
	s.running++
	s.mu.Unlock()
	s.e.wg.Add(1) // the engine's loops are counted: Wait waits for this too
	go s.work(t)
}

// work is a goroutine of the pool: it runs t's handshake, then the queued ones', then waits for
// the next one (up to cap(cpu) goroutines wait; the others end), until the engine's loops have
// ended.
func (s *tlsServer) work(t *tlsConn) {
	defer s.e.wg.Done()
	for {
		t.handshake()
		s.mu.Lock()
		if len(s.queue) > 0 {
			t = s.queue[0]
			s.queue[0] = nil
			s.queue = s.queue[1:]
			s.mu.Unlock()
			continue
		}
		if s.idle >= cap(s.cpu) {
			s.running--
			s.mu.Unlock()
			return
		}
		s.idle++
		s.mu.Unlock()
		select {
		case t = <-s.next: // enqueue took it off idle
		case <-s.quit:
			s.mu.Lock()
			s.idle--
			s.running--
			s.mu.Unlock()
			return
		}
	}
}

// The phases of a TLS connection (tlsConn.phase, on the loop).
const (
	tlsFirst   = iota // waiting for the first record whole
	tlsHandoff        // the handshake is queued or runs on a goroutine
	tlsOpen           // the handshake ended: records on the loop
	tlsFailed         // the handshake failed, or the records did
)

// tlsConn is a connection's TLS.
type tlsConn struct {
	c  *Conn
	tc *tls.Conn // nil once swRecords has the records
	// tr is tc's transport; nil once swRecords has the records (the handshake's goroutine,
	// and any takeOutput it posted, hold their own pointer).
	tr    *tlsTransport
	rec   recordLayer // nil until the handshake has ended
	gor   goRecords   // rec's, without an allocation of its own
	plain []byte      // the handler's output not yet sealed (a free-list buffer)
	phase uint8
	// client: the connection's side of the handshake is the client's (DialTLS), which starts
	// it at once; a server's waits for the ClientHello whole.
	client bool
	// notified: close_notify or a fatal alert was sent, or none may be (the peer's fatal alert
	// came); peerNotified: the peer's close_notify was received.
	notified, peerNotified bool
	held                   bool // not read until the handshake ends (Conn.bp's bpPaused set for it)
	timer                  *ringev.Timer
	hsErr                  error // the handshake's, set before its hand-off
	// sec receives the handshake's traffic secrets (a server's, from the key log), until its
	// end hands them to swRecords.
	sec *tlsSecrets
}

// newTLSConn makes c's TLS, before its driver starts reading it: the client's side (DialTLS)
// or the server's (an accepted connection).
func newTLSConn(c *Conn, client bool, cfg *tls.Config) *tlsConn {
	t := &tlsConn{c: c, client: client}
	t.tr = &tlsTransport{t: t, sync: true}
	if client {
		t.tc = tls.Client(t.tr, cfg)
	} else {
		t.tc = tls.Server(t.tr, cfg)
	}
	return t
}

// start arms the handshake timeout: the connection's request timeout (which OnOpen may have
// set), else DefaultTLSHandshakeTimeout. A connection OnOpen closed gets it too: its close
// waits for the handshake to send what OnOpen wrote (seal).
func (t *tlsConn) start() {
	c := t.c
	if c.closed {
		return
	}
	d := c.timeouts().reqTO
	if d <= 0 {
		d = DefaultTLSHandshakeTimeout
	}
	t.timer = c.l.ev.AddTimer(d, t.timedOut)
	if t.client {
		t.handOff()
	}
}

// handOff queues the handshake on the pool. The connection's addresses are asked first, on
// the loop: the handshake's goroutine could not ask them (Conn.LocalAddr), and the tls.Config
// callbacks that run there (GetConfigForClient, GetCertificate, VerifyConnection) read them
// through ClientHelloInfo.Conn or the transport.
func (t *tlsConn) handOff() {
	t.c.LocalAddr()
	t.c.RemoteAddr()
	if !t.client {
		t.tr.keepFlight = t.c.l.e.tls.register(t, t.tr.in)
	}
	t.phase = tlsHandoff
	t.c.l.e.tls.enqueue(t)
}

// timedOut is the handshake timeout's handler: the connection is closed at once.
func (t *tlsConn) timedOut(*ringev.Timer) {
	t.timer = nil
	c := t.c
	if c.closed || t.phase == tlsOpen {
		return
	}
	c.setGone()
	c.abort(ErrTLSHandshakeTimeout)
}

// recv takes ciphertext the connection received (valid until it returns).
func (t *tlsConn) recv(data []byte) {
	switch t.phase {
	case tlsOpen:
		if err := t.rec.open(data); err != nil {
			t.fail(err)
		}
	case tlsFirst:
		t.tr.in = append(t.tr.in, data...) // no goroutine has it yet
		if firstRecordIn(t.tr.in) {
			t.handOff()
		}
	case tlsHandoff:
		if t.tr.feed(data) > maxHandshakeInput && !t.held {
			// A client may send records after its Finished before the handshake has read
			// it: the connection is not read until the handshake ends.
			t.held = true
			t.c.bp |= bpPaused
			t.c.l.drv.update(t.c)
		}
	}
}

// firstRecordIn reports whether b holds the first record whole, or what is not a handshake
// record's start (crypto/tls answers it at once), or a record header past the size limit.
func firstRecordIn(b []byte) bool {
	if len(b) < 5 {
		return false
	}
	n := int(b[3])<<8 | int(b[4])
	return b[0] != 22 || n > 16384+2048 || len(b) >= 5+n
}

// handshake runs on a goroutine of the pool: crypto/tls's handshake, then the hand-off to the
// loop (handshook).
func (t *tlsConn) handshake() {
	if t.tr.isClosed() {
		return // the connection ended while it waited for a slot
	}
	t.tr.compute(true) // its first flight (a client's key shares) is work too
	t.hsErr = t.tc.Handshake()
	t.tr.compute(false)
	if err := t.c.l.Post(t.handshook); err != nil {
		return // the loop has ended, and the connection with it
	}
}

// handshook is the handshake's end, on the loop.
func (t *tlsConn) handshook() {
	c := t.c
	t.tr.takeOutput()
	if c.closed {
		return
	}
	tr := t.tr
	tr.sync, tr.wake = false, nil // the goroutine is done with the transport
	sec, flight := c.l.e.tls.unregister(t), tr.flight
	tr.flight = nil
	if t.timer != nil {
		t.timer.Stop()
		t.timer = nil
	}
	if err := t.hsErr; err != nil {
		sec.wipe()
		t.phase = tlsFailed
		t.notified = true // crypto/tls sent its alert, if any
		var rh tls.RecordHeaderError
		if errors.As(err, &rh) && rh.Conn != nil && looksLikeHTTP(rh.RecordHeader[:]) {
			if _, ok := c.handlers().h.(HTTPSHandler); ok {
				// net/http's answer to plaintext HTTP on its TLS port.
				t.c.rawWrite([]byte("HTTP/1.0 400 Bad Request\r\n\r\nClient sent an HTTP request to an HTTPS server.\n"))
			}
		}
		c.closeWith(fmt.Errorf("%w: %w", ErrTLSHandshake, err), false)
		if !c.dirty {
			c.l.markDirty(c) // a Close that waited for the handshake goes on (seal drops its output)
		}
		return
	}
	t.phase = tlsOpen
	if sw := newSWRecords(t, sec, flight); sw != nil {
		t.rec = sw
		t.tc, t.tr = nil, nil // its state is sw's snapshot; its buffers and keys go
	} else {
		t.gor.t = t
		t.rec = &t.gor
	}
	if t.held {
		t.held = false
		c.bp &^= bpPaused
		c.l.drv.update(c)
	}
	if hh := c.handlers().hand; hh != nil && !c.closing {
		hh.OnHandshake(c)
		if c.closed {
			return
		}
	}
	if (len(t.plain) > 0 || c.shut != 0 || c.closing) && !c.dirty {
		// What OnOpen wrote is sealed at the turn's end, and a CloseWrite or Close made
		// before the handshake's end goes on there (close_notify, then the FIN).
		c.l.markDirty(c)
	}
	in, eof := tr.in, tr.eof
	tr.in = nil
	if !c.closing && c.fl&cfLingering == 0 {
		// What came with the handshake's end (records after the client's Finished, which
		// the transport kept: recordCut stops crypto/tls's reads at the Finished) goes to
		// the record layer.
		t.recv(in)
	}
	if eof && !c.closed {
		c.peerEOF() // the peer's end of file, which came within the handshake (peerClosed)
	}
}

// looksLikeHTTP reports whether a record header is the start of an HTTP request (net/http's
// test).
func looksLikeHTTP(h []byte) bool {
	switch string(h) {
	case "GET /", "HEAD ", "POST ", "PUT /", "OPTIO":
		return true
	}
	return false
}

// fail ends the connection after an error reading its records ("server: TLS record read of
// fd N: REASON"): its alert is sent before the close. The layer's own records send first the
// replies the handler wrote to the records before the bad one (given to it with the error), as
// they would have gone had those records come in an earlier read; crypto/tls's queued its
// alert at the error, and those replies are dropped.
func (t *tlsConn) fail(err error) {
	if sw, ok := t.rec.(*swRecords); ok {
		if !t.notified && !t.sealPlain() {
			return // the connection is aborted
		}
		sw.sendFatal()
	}
	t.phase, t.notified = tlsFailed, true
	t.c.closeWith(fmt.Errorf("server: TLS record read of fd %d: %w", t.c.fd, err), false)
}

// rawWrite appends p to the connection's output as it goes on the wire.
func (c *Conn) rawWrite(p []byte) {
	if c.closed {
		return
	}
	if c.pend == nil {
		c.pend = c.l.bufs.get()
	}
	c.pend = append(c.pend, p...)
	c.wrote(len(p))
	if !c.dirty {
		c.l.markDirty(c)
	}
}

// dropPlain drops the handler's output not yet sealed (it can no longer be sent).
func (t *tlsConn) dropPlain() {
	if t.plain == nil {
		return
	}
	t.c.wrote(-len(t.plain))
	t.c.l.bufs.put(t.plain)
	t.plain = nil
}

// seal is the turn's end of a TLS connection: the handler's output becomes records (one
// tls.Conn.Write) in the connection's output, and one closing (Close, CloseWrite) gets its
// close_notify.
func (t *tlsConn) seal() {
	c := t.c
	if t.phase != tlsOpen {
		// A Close before the handshake's end waits for it (the output pending holds the
		// close's lingering back), so that what was written before the Close is sent; a failed
		// handshake drops it.
		if t.phase == tlsFailed {
			t.dropPlain() // never sent
		}
		return
	}
	if !t.sealPlain() {
		return
	}
	if (c.closing || c.shut != 0) && !t.notified {
		t.notified = true // Close and CloseWrite: close_notify after the output, then the FIN
		t.rec.closeNotify()
	}
}

// notifyAtEOF queues the connection's close_notify where it closes after the peer's and has
// sent none (RFC 8446 §6.1: each party sends one before it closes its writing side; crypto/tls's
// Close sends it too), and reports whether it did: the connection closes once it is sent.
func (t *tlsConn) notifyAtEOF() bool {
	if t.phase != tlsOpen || t.notified || !t.peerNotified {
		return false
	}
	t.notified = true
	t.rec.closeNotify()
	return len(t.c.pend) > 0
}

// sealPlain makes the handler's plaintext records in the connection's output, and reports
// whether it could: on the layer's error the connection is aborted.
func (t *tlsConn) sealPlain() bool {
	c := t.c
	if len(t.plain) == 0 {
		return true
	}
	// The plaintext counts no more, then its records count as written (rawWrite): in that
	// order, so that Pending never counts both, a peak past the write limit that a goroutine
	// could see and no send would find (passedLimit).
	c.wrote(-len(t.plain))
	err := t.rec.seal(t.plain)
	c.l.bufs.put(t.plain)
	t.plain = nil
	if err != nil {
		t.phase = tlsFailed
		c.setGone()
		c.abort(fmt.Errorf("server: TLS record write of fd %d: %w", c.fd, err))
		return false
	}
	return true
}

// peerClosed is the peer's end of file: the reason names what TLS lost (an unfinished
// handshake, a missing close_notify). A handshake under way takes it and peerClosed returns
// true: the client's Finished, records after it and the FIN can arrive before the handshake's
// goroutine has read the Finished, so the handshake reads end of file after what came before
// it, and its end (handshook) serves those bytes, then the EOF; reading stops meanwhile
// (cfEOF). Before the first record is whole no handshake can end: what OnOpen wrote for
// after it is dropped.
func (t *tlsConn) peerClosed() (handshaking bool) {
	c := t.c
	switch {
	case t.phase == tlsHandoff:
		t.tr.closeRead()
		c.fl |= cfEOF
		c.l.drv.update(c) // no more reading
		return true
	case t.phase == tlsFirst:
		t.dropPlain()
		eof := io.EOF // no byte came: crypto/tls's reading says the same
		if len(t.tr.in) > 0 {
			eof = io.ErrUnexpectedEOF // the first record is cut
		}
		c.setReason(fmt.Errorf("%w: %w", ErrTLSHandshake, eof))
	case t.phase == tlsFailed:
		t.dropPlain()
	case t.phase == tlsOpen && !t.peerNotified:
		c.setReason(ErrTLSNoCloseNotify)
	}
	return false
}

// end releases the connection's TLS when its socket closes: a handshake under way or queued
// ends.
func (t *tlsConn) end() {
	if t.timer != nil {
		t.timer.Stop()
		t.timer = nil
	}
	t.dropPlain()
	if t.phase == tlsHandoff {
		t.tr.close()
		t.c.l.e.tls.unregister(t).wipe()
	} else if t.tr != nil {
		t.tr.in = nil
	}
	if sw, ok := t.rec.(*swRecords); ok {
		sw.end()
	}
}

// state is the connection's TLS state once its handshake has ended, else nil.
func (t *tlsConn) state() *tls.ConnectionState {
	if t.phase != tlsOpen {
		return nil
	}
	st := t.rec.state()
	return &st
}

// tlsHandshaking reports whether the connection's TLS handshake has yet to end: a closing
// connection still reads for it (deliver, the readiness driver), as its close waits for it.
func (c *Conn) tlsHandshaking() bool {
	t := c.tlsOf()
	return t != nil && t.phase < tlsOpen
}

// TLS is the connection's TLS state (version, cipher suite, ALPN, the peer's certificates) once
// its handshake has ended; nil before, on a connection without TLS, and from another goroutine
// than the loop's.
func (c *Conn) TLS() *tls.ConnectionState {
	if !c.l.ev.Owned() {
		return nil
	}
	if t := c.tlsOf(); t != nil {
		return t.state()
	}
	return nil
}

// tlsPlain is the handler's plaintext of a TLS connection: the layer's input path.
func (c *Conn) tlsPlain(data []byte) {
	c.arrived(data)
}

// recordLayer is the record path of a TLS connection whose handshake has ended: what becomes of
// the ciphertext received and of the plaintext to send. goRecords is crypto/tls's, on the
// loop; swRecords the layer's own TLS 1.3 records (a server's). Kernel TLS would be another:
// TLS_TX and TLS_RX set on the socket after the handshake (setsockopt TCP_ULP "tls"), then
// the socket takes and gives plaintext.
type recordLayer interface {
	// open takes ciphertext received (valid until it returns) and hands the plaintext to the
	// connection's input; an error is the records' (an alert is queued).
	open(data []byte) error
	// seal appends plain, as records, to the connection's output.
	seal(plain []byte) error
	// closeNotify appends a close_notify alert to the connection's output.
	closeNotify() error
	// state is the connection's TLS state.
	state() tls.ConnectionState
}

// goRecords is crypto/tls's record layer, run on the loop.
type goRecords struct{ t *tlsConn }

func (r *goRecords) open(data []byte) error {
	t := r.t
	c := t.c
	t.tr.in = data
	defer func() { t.tr.in = nil }()
	// The plaintext of every record in data goes to the handler in one OnData, as a plain
	// connection's receive does, not one call per record (a client that writes each line on
	// its own sends a record per line). Only a full buffer hands over before the end.
	buf := c.l.tlsBuf()
	off := 0
	for {
		if off == len(buf) {
			c.tlsPlain(buf)
			off = 0
			if c.closed || c.closing || c.fl&cfLingering != 0 {
				return nil // input is dropped from now on
			}
		}
		n, err := t.tc.Read(buf[off:])
		off += n // n before err: those bytes are out of crypto/tls already
		switch {
		case err == io.EOF:
			t.peerNotified = true
			if off > 0 {
				c.tlsPlain(buf[:off])
			}
			if !c.closed && c.fl&cfEOF == 0 {
				c.peerEOF()
			}
			return nil
		case err != nil:
			if off > 0 {
				c.tlsPlain(buf[:off])
			}
			if err == errWouldBlock || errors.Is(err, errWouldBlock) {
				return nil
			}
			return err
		case len(t.tr.in) == 0 && off < len(buf):
			// All of the last record's plaintext was returned (it did not fill the buffer),
			// and crypto/tls holds no other (recordCut): another Read would only find the
			// transport empty.
			if off > 0 {
				c.tlsPlain(buf[:off])
			}
			return nil
		}
	}
}

func (r *goRecords) seal(plain []byte) error {
	_, err := r.t.tc.Write(plain)
	return err
}

func (r *goRecords) closeNotify() error { return r.t.tc.CloseWrite() }

func (r *goRecords) state() tls.ConnectionState { return r.t.tc.ConnectionState() }

// tlsBuf is the loop's buffer for the plaintext of the records received (crypto/tls's, or
// swRecords', which opens a record into it whole).
func (l *Loop) tlsBuf() []byte {
	if l.tlsScratch == nil {
		l.tlsScratch = make([]byte, maxCiphertext) // a record's plaintext with its padding
	}
	return l.tlsScratch
}

// errWouldBlock is the transport's Read error when the loop has handed it nothing more: a
// net.Error whose Temporary() is true, after which crypto/tls keeps the connection usable.
var errWouldBlock error = wouldBlock{}

type wouldBlock struct{}

func (wouldBlock) Error() string   { return "server: TLS transport: no more input in this turn" }
func (wouldBlock) Timeout() bool   { return true }
func (wouldBlock) Temporary() bool { return true }

// tlsTransport is the net.Conn under a connection's tls.Conn. In the handshake (sync) its Read
// blocks until the loop feeds it and its Write queues for the loop, under mu; after it, on the
// loop, Read returns what the loop received in this turn, then errWouldBlock, and Write appends
// to the connection's output. Either way a Read stops at the end of a record (recordCut). Write never fails and the deadlines are not kept: crypto/tls
// makes a write error permanent, and sets write deadlines around close_notify.
type tlsTransport struct {
	t    *tlsConn
	sync bool // the handshake's mode; the loop changes it only while no goroutine has it
	cpu  bool // the handshake's goroutine holds a token of the pool's cpu (its own field)

	cut recordCut // where Read stops: the end of the record crypto/tls reads

	mu     sync.Mutex
	wake   chan struct{} // signalled when in, closed or eof changes (sync)
	in     []byte
	out    []byte // the handshake's output, for the loop (sync)
	flight []byte // a copy of all of a server's handshake output, for newSWRecords (sync)
	// keepFlight: flight is kept (set before the handshake starts).
	keepFlight bool
	posted     bool // a takeOutput is posted (sync)
	closed     bool // the connection ended (sync)
	eof        bool // the peer closed its side (sync)
}

func (tr *tlsTransport) Read(p []byte) (int, error) {
	if !tr.sync {
		if len(tr.in) == 0 {
			return 0, errWouldBlock
		}
		n := copy(p, tr.in[:tr.cut.take(tr.in, len(p))])
		tr.in = tr.in[n:]
		return n, nil
	}
	tr.mu.Lock()
	if len(tr.in) == 0 && tr.cpu {
		tr.mu.Unlock()
		tr.compute(false) // waiting: another handshake may compute
		tr.mu.Lock()
	}
	for len(tr.in) == 0 {
		switch {
		case tr.closed:
			tr.mu.Unlock()
			return 0, net.ErrClosed
		case tr.eof:
			tr.mu.Unlock()
			return 0, io.EOF
		}
		if tr.wake == nil {
			tr.wake = make(chan struct{}, 1)
		}
		w := tr.wake
		tr.mu.Unlock()
		<-w
		tr.mu.Lock()
	}
	n := copy(p, tr.in[:tr.cut.take(tr.in, len(p))])
	tr.in = tr.in[n:]
	tr.mu.Unlock()
	tr.compute(true)
	return n, nil
}

// recordCut follows the record boundaries of what the transport hands crypto/tls, so that a Read
// stops at the end of the record crypto/tls is reading. Its input buffer (which keeps its
// capacity for the connection's life) then never holds more than one record, and once the loop
// has handed over all it received, crypto/tls holds no ciphertext: a record it returned
// plaintext for was the last one there.
type recordCut struct {
	hdr  [5]byte // the current record's header, as far as seen
	hn   int     // bytes of hdr seen
	left int     // bytes of the current record's body not yet handed over (once hn is 5)
}

// take returns how many of b's first bytes, at most max, to hand over: those of the current
// record. It moves past them.
func (r *recordCut) take(b []byte, max int) int {
	b = b[:min(len(b), max)]
	n := 0
	if r.hn < len(r.hdr) {
		n = copy(r.hdr[r.hn:], b)
		r.hn += n
		if r.hn < len(r.hdr) {
			return n
		}
		r.left = int(r.hdr[3])<<8 | int(r.hdr[4])
	}
	k := min(r.left, len(b)-n)
	r.left -= k
	if r.left == 0 {
		r.hn = 0 // the next byte starts a record
	}
	return n + k
}

// compute takes (on) or gives back a token of the pool's cpu for the handshake's goroutine.
func (tr *tlsTransport) compute(on bool) {
	if tr.cpu == on {
		return
	}
	tr.cpu = on
	if on {
		tr.t.c.l.e.tls.cpu <- struct{}{}
	} else {
		<-tr.t.c.l.e.tls.cpu
	}
}

func (tr *tlsTransport) Write(p []byte) (int, error) {
	if !tr.sync {
		tr.t.c.rawWrite(p)
		return len(p), nil
	}
	tr.mu.Lock()
	if tr.closed {
		tr.mu.Unlock()
		return len(p), nil // dropped: nobody sends it
	}
	tr.out = append(tr.out, p...)
	if tr.keepFlight {
		tr.flight = append(tr.flight, p...)
	}
	post := !tr.posted
	tr.posted = true
	tr.mu.Unlock()
	if post {
		tr.t.c.l.Post(tr.takeOutput) // an error: the loop has ended, nothing is sent
	}
	return len(p), nil
}

// takeOutput moves what the handshake wrote into the connection's output (on the loop).
func (tr *tlsTransport) takeOutput() {
	tr.mu.Lock()
	out := tr.out
	tr.out, tr.posted = nil, false
	tr.mu.Unlock()
	if len(out) > 0 {
		tr.t.c.rawWrite(out)
	}
}

// feed gives the handshake bytes received (on the loop) and returns how many it holds.
func (tr *tlsTransport) feed(data []byte) int {
	tr.mu.Lock()
	defer tr.mu.Unlock()
	if len(tr.in) == 0 {
		tr.in = bytes.Clone(data)
	} else {
		tr.in = append(tr.in, data...)
	}
	tr.signal()
	return len(tr.in)
}

// signal wakes a Read that waits (under mu).
func (tr *tlsTransport) signal() {
	if tr.wake != nil {
		select {
		case tr.wake <- struct{}{}:
		default:
		}
	}
}

// closeRead is the peer's end of file, for the handshake.
func (tr *tlsTransport) closeRead() {
	tr.mu.Lock()
	tr.eof = true
	tr.signal()
	tr.mu.Unlock()
}

// close ends the handshake's transport: Read fails, Write drops.
func (tr *tlsTransport) close() {
	tr.mu.Lock()
	tr.closed, tr.in = true, nil
	tr.signal()
	tr.mu.Unlock()
}

func (tr *tlsTransport) isClosed() bool {
	tr.mu.Lock()
	defer tr.mu.Unlock()
	return tr.closed
}

// Close is tls.Conn's, which the layer does not call: the connection's socket is the layer's.
func (tr *tlsTransport) Close() error { return nil }

func (tr *tlsTransport) LocalAddr() net.Addr              { return tr.t.c.LocalAddr() }
func (tr *tlsTransport) RemoteAddr() net.Addr             { return tr.t.c.RemoteAddr() }
func (tr *tlsTransport) SetDeadline(time.Time) error      { return nil }
func (tr *tlsTransport) SetReadDeadline(time.Time) error  { return nil }
func (tr *tlsTransport) SetWriteDeadline(time.Time) error { return nil }
