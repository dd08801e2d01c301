// Package nethttp serves any net/http Handler over HTTP/1.1 on ringev's loops (package
// server), with no goroutine and no buffer for an idle connection.
//
//	err := nethttp.Serve(ctx, ":8080", mux) // until ctx is done
//
// or, with an http.Server's settings and the engine's options:
//
//	s := nethttp.New(&http.Server{Handler: mux, ReadHeaderTimeout: 5 * time.Second})
//	err := server.Serve(ctx, "tcp", ":8080", s, server.WithLoops(2))
//	s.Wait()
//
// # How a request is served
//
// A request's head is found and parsed on the connection's loop, by net/http's own
// http.ReadRequest, and checked as net/http's server checks it (Host, header names and
// values, the protocol version). Its handler then runs on a goroutine of its own, which ends
// with the response: a handler may block. The request's body is read by net/http's own body
// reader (Content-Length or chunked, trailers included) from the bytes the loop hands it as
// they arrive; a handler that reads slowly holds back the connection's reading. Responses are
// written as net/http writes them, byte for byte: status line, Date, a sniffed Content-Type,
// Content-Length for a response that ends within its first 2 KiB, chunked otherwise
// (HTTP/1.1), HEAD, 1xx, trailers, "Connection: close" and HTTP/1.0 keep-alive; Flusher,
// Hijacker (the loop stops parsing and the net.Conn returned reads what followed the head),
// "Expect: 100-continue", and http.ResponseController's deadlines and full duplex. Pipelined
// requests are answered one after another, in order, as net/http does. A handler's panic is
// recovered and logged as net/http does, and closes the connection. r.Context() is cancelled
// when the connection closes. Once the client has closed or reset it, a response's write (or
// Flush) fails as on net/http, with a *net.OpError ("write tcp LOCAL->REMOTE: write: broken
// pipe") wrapping syscall.EPIPE: errors.Is(err, syscall.EPIPE) tells it; where the server
// closed the connection (a shutdown past its drain timeout) the error wraps net.ErrClosed.
//
// Bad input gets net/http's answers: 400 (with net/http's texts), 431 past MaxHeaderBytes, 501
// for a Transfer-Encoding it does not implement, 505, 417; request smuggling by both
// Content-Length and Transfer-Encoding, or by conflicting lengths, is refused as net/http
// refuses it. A differential test sends the same raw requests to both servers.
//
// TLS: served with server.WithTLS, a request's r.TLS is its connection's state (Conn.TLS).
// There is no HTTP/2 here: a tls.Config that offers "h2" by ALPN (NextProtos, as autocert's
// TLSConfig and configs made for net/http do) is served as a copy that offers "http/1.1" in its
// place (server.HTTPSHandler), so that browsers and curl, which offer both, get HTTP/1.1.
//
// Differences from net/http's server: there is no HTTP/2 (nor h2c); ConnState is called on the
// connection's loop (it must not block); BaseContext and ConnContext are not used; a graceful
// shutdown (see Serve) closes hijacked connections, which net/http's Shutdown leaves open and
// does not wait for. A handler
// whose http.MaxBytesReader passes its limit gets "Connection: close" and the close, as on
// net/http, where the reader is r.Body (r.Body = http.MaxBytesReader(w, r.Body, n)): nethttp
// looks there as it writes the header (not in full duplex, where another goroutine may read
// it) and once the handler has returned (net/http's own ResponseWriter is told at once,
// through an unexported method). A reader kept elsewhere (a variable, the Request that
// http.MaxBytesHandler copies) goes unseen: the body's rest is read, up to 256 KiB, and the
// connection kept, as after any body left unread. A kept-alive connection's next head
// that cannot be read (cut short, too large, malformed) gets ConnState's StateActive only when
// it is longer than 4096 bytes: net/http calls it when it read some of the head after its
// first read of it (4096 bytes at most), which depends on how the bytes came, not on what was
// sent. After a POST, when the 4 bytes net/http waits for are all CR and LF (which it skips),
// the next head's deadline starts at its first byte, not at the fourth CR or LF. A head not
// yet complete whose lines net/http refuses as they come (a malformed request line, a header
// line without a colon) gets its 400 at once, as on net/http, while it is at most 1024 bytes
// long; a longer one gets it at its end, or at the timeout's cut (an unfinished head is read
// all again when a line of it ends, or the byte after one comes: the bound keeps a head sent
// a byte at a time cheap). A TLS
// handshake is bounded by ReadHeaderTimeout (else ReadTimeout, else
// server.DefaultTLSHandshakeTimeout); net/http's by the least of ReadHeaderTimeout,
// ReadTimeout and WriteTimeout, else not at all.
package nethttp
