//go:build linux

// Command fwdstall reproduces two defects of a proxy written with Conn.Forward (a new user's
// first proxy, as examples/proxy is with Splice) between clients and an echo upstream that, as
// any net.Conn program does, reads and then writes with blocking calls. Each client sends
// --bytes random bytes, half-closes, and reads the echo to EOF; every byte is checked (SHA-256).
// Small socket buffers (--sockbuf, set on both of the proxy's connections) make the kernel's
// share small, so that the layer's own holds decide:
//
//   - stalled: no byte moves for --timeout. The upstream connection is not read while its own
//     output is past the write limit (the write limit's pause), the upstream blocks writing its
//     echo to it, so it no longer reads, so that output never drains: a deadlock a net.Conn
//     proxy (a goroutine per direction) cannot have.
//
//   - lost: a client's stream ends short or differs. A client connection that Forward holds
//     (its upstream past the write limit) keeps receiving on uring (its multishot recv brings
//     what arrives until the cancel lands, and is armed again at each hold's end) until its input
//     passes MaxInput, and the layer closes it (ErrInputTooLarge): the client loses the rest.
//
//     go run ./scripts/fwdstall [--backend uring] [--api requests] [--sockbuf 32768] [--clients 4] [--bytes 20m] [--runs 6]
//
// The last line is the tally: "fwdstall: R runs: K ok, L lost, S stalled".
package main

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"errors"
	"flag"
	"fmt"
	"io"
	"log"
	"net"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/ringev/ringev/server"
	"golang.org/x/sys/unix"
)

var (
	backend = flag.String("backend", "uring", "the proxy's backend")
	api     = flag.String("api", server.APIRequests, "the proxy's driver: requests or readiness")
	sockbuf = flag.Int("sockbuf", 32<<10, "SO_SNDBUF and SO_RCVBUF of the proxy's connections (0: the kernel's)")
	clients = flag.Int("clients", 4, "clients per run")
	nbytes  = flag.Int("bytes", 20<<20, "bytes each client sends (and expects back)")
	runs    = flag.Int("runs", 6, "runs")
	timeout = flag.Duration("timeout", 10*time.Second, "a run with no byte received for this long is stalled")
)

// proxy forwards each connection's input to its peer (Context), passes a half-close on, and
// closes the peer when it closes; it notes why each connection closed.
type proxy struct {
	upstream string
	mu       sync.Mutex
	closes   []string
}

func (p *proxy) OnOpen(c *server.Conn) {
	if *sockbuf > 0 {
		unix.SetsockoptInt(c.Fd(), unix.SOL_SOCKET, unix.SO_SNDBUF, *sockbuf)
		unix.SetsockoptInt(c.Fd(), unix.SOL_SOCKET, unix.SO_RCVBUF, *sockbuf)
	}
	if c.Context() != nil {
		return // the upstream: its Context is its client
	}
	err := c.Dial(context.Background(), "tcp", p.upstream, p, func(up *server.Conn, err error) {
		if err != nil {
			c.Close()
			return
		}
		c.SetContext(up)
	})
	if err != nil {
		c.Close()
	}
}

func (p *proxy) OnData(c *server.Conn) {
	peer, _ := c.Context().(*server.Conn)
	if peer == nil {
		return
	}
	c.Forward(peer)
	if c.EOF() {
		peer.CloseWrite()
	}
}

func (p *proxy) OnClose(c *server.Conn, err error) {
	if err != nil && !errors.Is(err, io.EOF) {
		p.mu.Lock()
		p.closes = append(p.closes, fmt.Sprintf("%v (%d bytes of input left)", err, c.Buffered()))
		p.mu.Unlock()
	}
	if peer, _ := c.Context().(*server.Conn); peer != nil {
		peer.Close()
	}
}

// echo serves ln as a net.Conn program does: read, then write what was read, blocking; at EOF
// it half-closes and waits for the other side's close.
func echo(ln net.Listener) {
	for {
		c, err := ln.Accept()
		if err != nil {
			return
		}
		go func() {
			defer c.Close()
			io.Copy(c, c)
			c.(*net.TCPConn).CloseWrite()
			io.Copy(io.Discard, c)
		}()
	}
}

// run makes one run and returns "ok", "lost: ..." or "stalled: ...".
func run() string {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		log.Fatal(err)
	}
	defer ln.Close()
	go echo(ln)
	p := &proxy{upstream: ln.Addr().String()}
	e, err := server.Listen(context.Background(), "tcp", "127.0.0.1:0", p,
		server.WithBackend(*backend), server.WithAPI(*api), server.WithLoops(1), server.WithHalfOpen(true))
	if err != nil {
		log.Fatal(err)
	}
	defer e.Close()
	var got atomic.Int64
	var mu sync.Mutex
	var bad []string
	var conns []net.Conn
	var wg sync.WaitGroup
	for i := 0; i < *clients; i++ {
		data := make([]byte, *nbytes)
		rand.Read(data)
		c, err := net.Dial("tcp", e.Addr().String())
		if err != nil {
			log.Fatal(err)
		}
		conns = append(conns, c)
		wg.Add(2)
		go func() {
			defer wg.Done()
			c.Write(data)
			c.(*net.TCPConn).CloseWrite()
		}()
		go func(i int) {
			defer wg.Done()
			h := sha256.New()
			n, err := io.Copy(io.MultiWriter(h, counter{&got}), c)
			if want := sha256.Sum256(data); n != int64(len(data)) || string(h.Sum(nil)) != string(want[:]) {
				mu.Lock()
				bad = append(bad, fmt.Sprintf("client %d got %d of %d bytes (%v)", i, n, len(data), err))
				mu.Unlock()
			}
		}(i)
	}
	done := make(chan struct{})
	go func() { wg.Wait(); close(done) }()
	last, since := int64(-1), time.Now()
	for {
		select {
		case <-done:
			if len(bad) == 0 {
				return "ok"
			}
			p.mu.Lock()
			defer p.mu.Unlock()
			return "lost: " + strings.Join(bad, "; ") + "; the proxy closed: " + strings.Join(p.closes, "; ")
		case <-time.After(50 * time.Millisecond):
		}
		if n := got.Load(); n != last {
			last, since = n, time.Now()
			continue
		}
		if time.Since(since) > *timeout {
			for _, c := range conns {
				c.Close()
			}
			<-done
			return fmt.Sprintf("stalled: %d of %d bytes echoed, none for %v", last, *clients**nbytes, *timeout)
		}
	}
}

type counter struct{ n *atomic.Int64 }

func (c counter) Write(p []byte) (int, error) { c.n.Add(int64(len(p))); return len(p), nil }

func main() {
	flag.Parse()
	tally := map[string]int{}
	for i := 1; i <= *runs; i++ {
		r := run()
		fmt.Printf("run %d: %s\n", i, r)
		tally[strings.SplitN(r, ":", 2)[0]]++
	}
	fmt.Printf("fwdstall: %d runs: %d ok, %d lost, %d stalled\n", *runs, tally["ok"], tally["lost"], tally["stalled"])
	if tally["ok"] != *runs {
		os.Exit(1)
	}
}
