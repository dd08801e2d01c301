//go:build unix

package server

import (
	"errors"
	"net/netip"
	"time"
)

// Handler serves the connections of an Engine. Its methods run on the connection's loop, one at
// a time per loop, so what a Handler keeps per connection (Conn.Context) needs no lock; what it
// shares between loops does.
//
// OnData is called when bytes have arrived: they are the connection's input (Conn.Peek,
// Conn.Next, Conn.Discard). What OnData leaves there is given again, with the bytes that
// follow, on the next call, and at the peer's EOF (Conn.EOF true: nothing follows), so that no
// byte received goes unseen. The input that waited through a pause of reading (PauseRead, the
// write limit), which can be megabytes, is given in pieces, each at most 64 KiB more than the
// last call left, one call after another until it is all given or the handler pauses reading
// again: a handler that passes its input on (a broadcast, a proxy) can stop between pieces. A
// call that takes nothing of its piece while output is pending stops them too, until the output
// has drained to half the write limit, as any call that leaves its input then (WriteLimit).
// Replies go with Conn.Write, which buffers: every write a loop turn makes to a connection goes
// out in one send at the turn's end. The output is capped, even for a peer that reads: a write
// that takes Pending past 4 MiB (WithMaxPending) closes the connection (ErrOutputFull). So a
// handler that answers requests, of which a client may pipeline thousands (redis-benchmark -P,
// a batch of GETs of large values), answers while Pending is at most WriteLimit and leaves the
// other requests in the input: OnData is given them again once the output has drained, without
// waiting for more bytes (RESP and HTTP do so). After the peer's EOF the connection closes once its
// output is sent, unless it is half-open (WithHalfOpen).
//
// A Handler may also implement OpenHandler, CloseHandler, HandshakeHandler, TickHandler,
// BackpressureHandler, ShutdownHandler, TimeoutHandler and HTTPSHandler.
//
// A panic in a Handler method is not recovered: it ends the process (net/http, unlike this,
// recovers a handler's panic and closes only that connection). A Handler that must survive a
// panic of its own recovers it and closes the connection with Conn.Abort.
type Handler interface {
	OnData(c *Conn)
}

// handlers is a Handler with its optional parts, found once (per engine, per dial), so that
// serving a connection asks no interface of it.
type handlers struct {
	h     Handler
	open  OpenHandler
	close CloseHandler
	bp    BackpressureHandler
	hand  HandshakeHandler
	shut  ShutdownHandler
	to    TimeoutHandler
}

// newHandlers finds h's optional parts.
func newHandlers(h Handler) handlers {
	hs := handlers{h: h}
	hs.open, _ = h.(OpenHandler)
	hs.close, _ = h.(CloseHandler)
	hs.bp, _ = h.(BackpressureHandler)
	hs.hand, _ = h.(HandshakeHandler)
	hs.shut, _ = h.(ShutdownHandler)
	hs.to, _ = h.(TimeoutHandler)
	return hs
}

// OpenHandler is a Handler told of each new connection, before its first OnData: the place to
// set its Context and write a greeting.
type OpenHandler interface {
	OnOpen(c *Conn)
}

// HandshakeHandler is a Handler told when a TLS connection's handshake has ended (WithTLS,
// DialTLS), after OnOpen and before the first OnData: Conn.TLS gives the state (version,
// cipher suite, ALPN, the peer's certificates). The place to choose by ALPN, check a client's
// certificate, or write a greeting that needs the handshake; it may Close the connection. It is
// not called when the handshake fails (OnClose names the failure) nor on a connection already
// closing. OnOpen runs at the accept
// (or the dial's connect), before the handshake, where Conn.TLS is nil.
type HandshakeHandler interface {
	OnHandshake(c *Conn)
}

// CloseHandler is a Handler told when a connection has closed, and why: err is nil after
// Conn.Close or Conn.Abort, io.EOF when the peer closed (or, after Conn.CloseWrite, when it
// closed its side too), ErrIdleTimeout, ErrRequestTimeout, ErrShutdown, ErrInputTooLarge,
// ErrOutputFull, ErrEngineFull, or the socket's error (wrapping the errno, e.g.
// unix.ECONNRESET). The socket is closed by then: writes fail with net.ErrClosed. Conn.Buffered
// and Conn.Peek still show the input the handler left unconsumed (what the layer drops is not
// there: bytes that arrive after Close, and the input of ErrInputTooLarge). Called once per
// connection that OnOpen was called for.
//
// After Conn.Close, OnClose comes once the output is sent and the peer has closed its side, or
// at most a second after the last byte was sent (the lingering close: the peer reads every byte
// before the socket closes); a peer that neither reads nor closes holds it until a timeout
// (WithIdleTimeout). Conn.Abort, a reset and the peer's EOF (the output being sent) end it at
// once.
type CloseHandler interface {
	OnClose(c *Conn, err error)
}

// ShutdownHandler is a Handler asked, on the connection's loop, before a graceful shutdown
// (Engine.Shutdown, the cancellation of Listen's context) closes a connection: OnShutdown
// returns true to keep it open, for a request still in service whose reply is not written yet
// (as net/http's Server.Shutdown waits for its active connections). The handler then closes it
// (Conn.Close) once it is done; the engine ends when the last connection has closed. The
// shutdown's bound (Shutdown's ctx; WithDrainTimeout after the cancellation of Listen's
// context) still closes what is left at once when it passes (Engine.Close).
type ShutdownHandler interface {
	OnShutdown(c *Conn) (keep bool)
}

// TimeoutHandler is a Handler told, on the connection's loop, when a timeout is about to close
// a connection (err is ErrRequestTimeout or ErrIdleTimeout), while it can still write: what
// OnTimeout writes is sent before the socket closes, as after Conn.Close. It is the place for a
// last answer to a request cut short, as net/http's server writes a 400 for a head whose last
// line it was reading at the deadline. The connection closes after OnTimeout returns, and
// OnClose is given err. It is not called when the connection is closing already, nor when
// output waits to be sent (the peer does not read: the timeout resets the connection).
type TimeoutHandler interface {
	OnTimeout(c *Conn, err error)
}

// HTTPSHandler is a Handler that serves HTTP over TLS (WithTLS), as package nethttp's Server
// and HTTP do: a client that sends a plaintext HTTP request in place of a TLS handshake gets
// net/http's answer, "HTTP/1.0 400 Bad Request\r\n\r\nClient sent an HTTP request to an HTTPS
// server.\n", before the connection closes. An HTTPSHandler speaks HTTP/1.1 alone: when
// WithTLS's config (or one its GetConfigForClient returns) offers "h2" by ALPN (NextProtos),
// the engine serves a copy that offers "http/1.1" in its place, so that a client that offers
// both gets HTTP/1.1. ServesHTTPS is a marker: it is not called.
type HTTPSHandler interface {
	ServesHTTPS()
}

// TickHandler is a Handler called on each loop when the loop starts, and again after the delay
// each call returns; a delay <= 0 ends that loop's ticks. It suits per-loop work on a clock:
// a cached Date header, a sweep of stale sessions.
type TickHandler interface {
	OnTick(l *Loop) (next time.Duration)
}

// BackpressureHandler is a Handler told when a connection's pending output (Conn.Pending)
// passes the write limit (WithWriteLimit): paused is true, and the connection is no longer
// read, so OnData is not called for it. Once the output has drained to half the limit, paused
// is false, reading resumes, and OnData is called if input is buffered. A connection that does
// not pause for its output (Conn.SetPauseOnOutput(false), WithPauseOnOutput) is told the same,
// true and false, but is read all along: a writer from elsewhere waits for the false. Every
// true is followed by one false unless the connection closes first (then OnClose comes), and a
// pass of the limit that anyone saw counts: a writer on any goroutine that finds Pending past
// WriteLimit after its write is told of the drain by a false that comes after it (or by
// OnClose), even when the loop sent that output before its turn's end found it past the limit
// (then true and false come together, and reading goes on). So a handler that stops writing to
// a slow client, or stops reading the clients that talk to it, waits for this call rather than
// polling Pending. During a TLS handshake the output waits for it: the pass is told once the
// records are written.
//
// Writes are not refused for it: a handler that writes to a connection its peer does not read
// (a broadcast to a stalled client) watches Pending (right from any goroutine), or this. Past
// the output cap (WithMaxPending), writes are refused and the connection closes
// (ErrOutputFull). It is called on the connection's loop: a writer on another loop or goroutine
// is told late, after it may have written megabytes more. Conn.Forward holds its source itself,
// at once, whichever loop it is on; another writer from elsewhere watches Pending against
// WriteLimit. A connection that Forward writes to is neither paused nor told: Forward holds
// its source itself (see WriteLimit).
type BackpressureHandler interface {
	OnBackpressure(c *Conn, paused bool)
}

// PacketHandler serves the datagrams of an Engine made by ListenPacket: OnPacket is called on
// the socket's loop for each datagram, with the sender's address. data is valid until OnPacket
// returns. Replies go with PacketConn.WriteTo, which queues: every datagram a loop turn queues
// is sent at the turn's end.
type PacketHandler interface {
	OnPacket(pc *PacketConn, from netip.AddrPort, data []byte)
}

// Reasons a connection closed, given to CloseHandler.OnClose.
var (
	// ErrIdleTimeout: nothing was received or sent for the idle timeout (WithIdleTimeout), or
	// nothing received for the read idle timeout (WithReadIdleTimeout).
	ErrIdleTimeout = errors.New("server: connection idle past its idle timeout")
	// ErrRequestTimeout: a request was not complete within the request timeout of its first
	// byte (WithRequestTimeout).
	ErrRequestTimeout = errors.New("server: request not complete within its request timeout")
	// ErrShutdown: the engine shut down (its context was cancelled, Engine.Shutdown,
	// Engine.Close).
	ErrShutdown = errors.New("server: engine shut down")
	// ErrInputTooLarge: the handler left more than MaxInput bytes of input unconsumed.
	ErrInputTooLarge = errors.New("server: unconsumed input past MaxInput")
	// ErrOutputFull: a write would have taken the connection's pending output past its cap
	// (WithMaxPending): its peer does not read what it is sent, or one write was larger than
	// the cap. Write, WriteString and Commit return it for the write they refuse; OnClose is
	// given it.
	ErrOutputFull = errors.New("server: a write past the connection's output cap (WithMaxPending): its peer does not read, or the write is larger than the cap")
	// ErrEngineFull: the engine's connections held more than its budget (WithMaxBuffered),
	// and this one held the most on its loop.
	ErrEngineFull = errors.New("server: the engine's buffered bytes past its budget (WithMaxBuffered): closed the connection that held the most")
)
