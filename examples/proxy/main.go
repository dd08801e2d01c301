//go:build unix

// Command proxy is a TCP reverse proxy on ringev: each client connection is joined to a new
// connection to the upstream, dialed on the client's loop, and bytes go both ways with
// backpressure both ways (Forward stops reading a side while the other side's output is past
// its write limit), half-close passed on both ways, and a reset passed on as a reset.
//
//	go run ./examples/proxy --listen 127.0.0.1:7001 --upstream 127.0.0.1:6379 [--backend B] [--loops N] [--dial-timeout 10s]
package main

import (
	"context"
	"errors"
	"flag"
	"io"
	"log"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/ringev/ringev/server"
)

// proxy is the Handler of both sides of a proxied connection (one type for both, so that
// OnData is called without a promoted method's wrapper): each Conn's context is the Conn on the
// other side, once both are there (the upstream's is its client from the start).
type proxy struct{ upstream string }

// OnOpen dials the upstream for a client. Conn.Dial reads the client only once the dial has
// ended, and ends the dial if the client leaves first (a reset) or WithDialTimeout passes. An
// upstream's OnOpen does nothing: Conn.Dial made its context its client already.
func (p *proxy) OnOpen(c *server.Conn) {
	if c.Context() != nil {
		return // an upstream
	}
	done := func(u *server.Conn, err error) {
		if err != nil {
			log.Printf("upstream: %v", err) // names the address
			c.Close()
			return
		}
		c.SetContext(u) // u's is c: Conn.Dial's
	}
	if err := c.Dial(context.Background(), "tcp", p.upstream, p, done); err != nil {
		done(nil, err)
	}
}

// OnData passes what arrived to the other side, and then the peer's half-close.
func (*proxy) OnData(c *server.Conn) {
	// Splice: through the kernel where it can (uring), else Forward (copies). Half-open
	// (WithHalfOpen): the peer's EOF ends its input alone, and Splice says so (io.EOF).
	other := c.Context().(*server.Conn)
	if _, err := c.Splice(other); err == io.EOF {
		other.CloseWrite()
	}
}

// OnClose closes the other side once what it was given is sent, when this side ended well (a
// Close, or its peer's EOF). When it failed (a reset, a timeout, its output cap), the stream
// is cut short: the other side is aborted, so that its peer gets a reset rather than an EOF
// that would make a cut stream look whole. A client that left before its upstream was there
// has no other side (its dial ended with it).
func (*proxy) OnClose(c *server.Conn, err error) {
	if other, ok := c.Context().(*server.Conn); ok && (err == nil || errors.Is(err, io.EOF)) {
		other.Close()
	} else if ok {
		other.Abort()
	}
}

func main() {
	listen := flag.String("listen", "127.0.0.1:7001", "address to listen on")
	upstream := flag.String("upstream", "127.0.0.1:6379", "address to pass connections to")
	backend := flag.String("backend", "auto", "ringev backend: auto, uring, epoll or poll")
	loops := flag.Int("loops", 0, "number of loops (0: one per CPU)")
	dialTimeout := flag.Duration("dial-timeout", 10*time.Second, "how long a client waits for its upstream's connect")
	flag.Parse()
	mustCheckFlags(*listen, *upstream, *backend, *loops, *dialTimeout)
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := server.Serve(ctx, "tcp", *listen, &proxy{upstream: *upstream}, server.WithHalfOpen(true), server.WithDialTimeout(*dialTimeout),
		server.WithBackend(*backend), server.WithLoops(*loops)); err != nil {
		log.Fatal(err)
	}
}
