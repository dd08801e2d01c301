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
	"time"

	"github.com/ringev/ringev/server"
)

// side is the Handler of both sides of a proxied connection: each Conn's context is the Conn
// on the other side. upstream is the address the clients' side dials.
type side struct{ upstream string }

// proxy is the clients' Handler: a side that dials the upstream when a client opens (the
// upstream's side is a bare side: no OnOpen), each dial bounded by dialTimeout.
type proxy struct {
	side
	dialTimeout time.Duration
}

// OnOpen dials the upstream for a client, whose reading waits for it. Until the upstream is
// there the client's context is the dial's cancel: a client that leaves meanwhile (a reset is
// seen while its reading waits) ends the dial, and so does dialTimeout.
func (p *proxy) OnOpen(c *server.Conn) {
	c.PauseRead()
	ctx, cancel := context.WithTimeout(context.Background(), p.dialTimeout)
	c.SetContext(cancel)
	done := func(u *server.Conn, err error) {
		if cancel(); err != nil {
			log.Printf("upstream: %v", err) // names the address
			c.Close()
			return
		}
		u.SetContext(c)
		c.SetContext(u)
		if c.ResumeRead() != nil {
			u.Close() // the client left meanwhile
		}
	}
	if err := c.Loop().Dial(ctx, "tcp", p.upstream, side{}, done); err != nil {
		done(nil, err)
	}
}

// OnData passes what arrived to the other side, and then the peer's half-close.
func (side) OnData(c *server.Conn) {
	// Splice: through the kernel where it can (uring), else Forward (copies). Half-open
	// (WithHalfOpen): the peer's EOF ends its input alone.
	other := c.Context().(*server.Conn)
	if c.Splice(other); c.EOF() {
		other.CloseWrite()
	}
}

// OnClose closes the other side once what it was given is sent, when this side ended well (a
// Close, or its peer's EOF). When it failed (a reset, a timeout, its output cap), the stream
// is cut short: the other side is aborted, so that its peer gets a reset rather than an EOF
// that would make a cut stream look whole. A client that left before the upstream was there
// ends the upstream's dial.
func (side) OnClose(c *server.Conn, err error) {
	if cancel, ok := c.Context().(context.CancelFunc); ok {
		cancel()
	} else if other := c.Context().(*server.Conn); err == nil || errors.Is(err, io.EOF) {
		other.Close()
	} else {
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
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	if err := server.Serve(ctx, "tcp", *listen, &proxy{side{*upstream}, *dialTimeout}, server.WithHalfOpen(true), server.WithBackend(*backend), server.WithLoops(*loops)); err != nil {
		log.Fatal(err)
	}
}
