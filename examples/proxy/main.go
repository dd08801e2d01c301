//go:build unix

// Command proxy is a TCP reverse proxy on ringev: each client connection is joined to a new
// connection to the upstream, dialed on the client's loop, and bytes go both ways with
// backpressure both ways (a side whose output passes the write limit pauses the other side's
// reading) and half-close passed on both ways.
//
//	go run ./examples/proxy --listen 127.0.0.1:7001 --upstream 127.0.0.1:6379 [--backend B] [--loops N]
package main

import (
	"context"
	"flag"
	"log"
	"os"
	"os/signal"

	"github.com/ringev/ringev/server"
)

// side is the Handler of both sides of a proxied connection: each Conn's context is the Conn
// on the other side. upstream is the address the clients' side dials.
type side struct{ upstream string }

// proxy is the clients' Handler: a side that dials the upstream when a client opens (the
// upstream's side is a bare side: no OnOpen).
type proxy struct{ side }

// OnOpen dials the upstream for a client, whose reading waits for it.
func (p *proxy) OnOpen(c *server.Conn) {
	c.PauseRead()
	done := func(u *server.Conn, err error) {
		if err != nil {
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
	if err := c.Loop().Dial(context.Background(), "tcp", p.upstream, side{}, done); err != nil {
		done(nil, err)
	}
}

// OnData passes what arrived to the other side, and then the peer's half-close.
func (side) OnData(c *server.Conn) {
	// Splice: through the kernel where it can (uring), else Forward (copies)
	c.Splice(c.Context().(*server.Conn))
	if c.EOF() { // half-open (WithHalfOpen): the peer's EOF ends its input alone
		c.Context().(*server.Conn).CloseWrite()
	}
}

// OnBackpressure pauses reading the other side while this side's output is past its limit.
func (side) OnBackpressure(c *server.Conn, paused bool) {
	if other := c.Context().(*server.Conn); paused {
		other.PauseRead()
	} else {
		other.ResumeRead()
	}
}

// OnClose closes the other side once what it was given is sent.
func (side) OnClose(c *server.Conn, err error) {
	if other, ok := c.Context().(*server.Conn); ok {
		other.Close()
	}
}

func main() {
	listen := flag.String("listen", "127.0.0.1:7001", "address to listen on")
	upstream := flag.String("upstream", "127.0.0.1:6379", "address to pass connections to")
	backend := flag.String("backend", "auto", "ringev backend: auto, uring, epoll or poll")
	loops := flag.Int("loops", 0, "number of loops (0: one per CPU)")
	flag.Parse()
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	if err := server.Serve(ctx, "tcp", *listen, &proxy{side{*upstream}}, server.WithHalfOpen(true), server.WithBackend(*backend), server.WithLoops(*loops)); err != nil {
		log.Fatal(err)
	}
}
