//go:build unix

// Command echo is a TCP echo server on ringev: each byte a client sends comes back.
package main

import (
	"context"
	"flag"
	"log"
	"os"
	"os/signal"
	"syscall"

	"github.com/ringev/ringev/server"
)

type echo struct{}

// OnData sends back what arrived (Write buffers: it goes out at the end of the loop's turn).
func (echo) OnData(c *server.Conn) {
	b, _ := c.Next(-1)
	c.Write(b)
}

func main() {
	addr := flag.String("addr", "127.0.0.1:7000", "address to listen on")
	flag.Parse()
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := server.Serve(ctx, "tcp", *addr, echo{}); err != nil {
		log.Fatal(err)
	}
}
