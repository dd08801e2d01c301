// Package server is what a Go network service is written against on ringev's loop: an Engine
// of loops, each on its own OS thread, serving connections (Conn) with a Handler, in the style
// of gnet's EventHandler and net/http.
//
//	type echo struct{}
//
//	func (echo) OnData(c *server.Conn) {
//		b, _ := c.Next(-1) // every byte received
//		c.Write(b)         // buffered: sent at the end of the loop's turn
//	}
//
//	err := server.Serve(ctx, "tcp", ":7000", echo{}) // until ctx is done, then a graceful shutdown
//
// # Handlers and connections
//
// A Handler's OnData is called on the connection's loop when bytes arrive; Conn.Peek,
// Conn.Next and Conn.Discard read them, and what it leaves comes again with the next bytes.
// Optional parts: OpenHandler (a greeting, the Conn.Context), CloseHandler (with why the
// connection closed: io.EOF, ErrIdleTimeout, ErrRequestTimeout, ErrShutdown, a reset, ...),
// TickHandler (a per-loop clock), BackpressureHandler, HandshakeHandler (a TLS connection's
// handshake has ended: Conn.TLS is set), TimeoutHandler (a last answer before a timeout's
// close).
//
// The peer's EOF hands OnData the input it left once more (Conn.EOF true); then the connection
// closes once its output is sent, or, half-open (WithHalfOpen, Conn.SetHalfOpen), stays
// writable until the handler closes it. Conn.CloseWrite sends the output, then a FIN, and
// keeps reading.
//
// Conn.Write buffers: whatever number of writes a loop turn makes to a connection, including a
// broadcast from other connections' handlers, goes out in one send at the turn's end (one
// io_uring_enter(2) for all of them on uring). Close sends what was written, then closes with a
// linger (the peer reads it all, then EOF); Abort resets at once. Write, Close, Abort and
// Loop.Post are safe from any goroutine: they queue for the connection's loop, which another
// loop of the engine wakes through the ring (IORING_OP_MSG_RING). Each of them, and every
// method that belongs to the loop's goroutine, either works or returns an error.
//
// Connections are cut off by an idle timeout (WithIdleTimeout, or WithReadIdleTimeout, which
// counts received bytes only: the server's writes do not keep a client that only listens) and a
// request timeout that starts with a request's first byte and is not moved by the bytes that
// follow (WithRequestTimeout). A connection whose pending output passes the write limit is no
// longer read until it drains (WithWriteLimit, BackpressureHandler), unless its output does not
// answer its input and it was made not to pause (Conn.SetPauseOnOutput). A handler stops
// reading one itself with Conn.PauseRead (a proxy whose other side does not keep up), until
// ResumeRead.
//
// Memory is bounded by default. A write that would take a connection's pending output
// (Conn.Pending, right from any goroutine) past its cap, 4 MiB, is refused and closes the
// connection (WithMaxPending, ErrOutputFull); input a handler leaves is capped at MaxInput.
// Past the engine's budget for what all its connections hold, an eighth of the memory the
// process may use, the connections that hold the most are closed (WithMaxBuffered,
// ErrEngineFull).
//
// # Engines
//
// Listen (and Serve) serve TCP (IPv4 and IPv6) and Unix stream sockets; ListenPacket serves UDP
// with a PacketHandler. WithLoops sets the number of loops (by default one per CPU the process
// may use); WithBalance spreads the connections by SO_REUSEPORT (the default) or by one acceptor
// that hands them to the loops in turn or to the least loaded one. Two drivers do the I/O and
// serve every handler the same way (WithAPI): completion requests (APIRequests, the default,
// on every backend: SQEs on uring, emulated with readiness on epoll and poll) and fd events
// (APIReadiness). Cancelling Listen's context, or Engine.Shutdown, shuts the engine down
// gracefully: accepting stops, what arrived is served, output is sent, connections close.
//
// Outbound connections are Conns too, served by a Handler of their own: Loop.Dial from a
// handler (it returns at once; a done function gets the connection on the same loop, as a
// proxy wants), Conn.Dial from a handler for a connection that needs the one dialed (it is
// not read until the dial ends, and its close ends the dial: a proxy's client), Engine.Dial
// from any other goroutine (it blocks until the connection is open), and NewEngine for an
// engine that only dials. WithDialTimeout bounds them all. A dialed connection has the
// engine's settings, as an accepted one has (timeouts, WithHalfOpen, the write limit and
// output cap).
//
// A proxy moves each side's input to the other with Conn.Forward, which stops reading a
// source while its destination's output is past the destination's write limit, or with
// Conn.Splice (through a kernel pipe on uring). Next and Write alone do not hold a fast side
// back: to a client that reads slower than its upstream sends, the output grows to its cap
// (4 MiB, WithMaxPending), then the write is refused and the client closed (ErrOutputFull).
// examples/proxy is such a proxy, with half-close passed on both ways.
//
// # TLS
//
// WithTLS serves TLS with any tls.Config (certificates, GetCertificate, GetConfigForClient,
// client certificates, session resumption): crypto/tls runs the handshake; then a TLS 1.3
// connection's records are ringev's own, on the loop (AES-GCM, ChaCha20-Poly1305, KeyUpdate,
// close_notify), and a TLS 1.2 connection's stay crypto/tls's. Handlers read and write
// plaintext, as over TCP; Conn.TLS is the connection's tls.ConnectionState from OnHandshake
// on. Engine.DialTLS and Loop.DialTLS dial TLS (crypto/tls's records).
//
// # ringev's own servers
//
// The package also holds the servers that `ringev serve` and `ringev bench net` run against
// real clients, each a Handler and an example of one: RESP (a small Redis over a Keyspace),
// HTTP (HTTP/1.1 plaintext, with a request timeout of 10 s and an idle timeout of 75 s by
// default) and Echo. RESP and HTTP take the input and the output's free room with
// Conn.Buffers, parse the one, append their replies to the other and Commit both, stopping once
// the output passes the connection's write limit.
package server
