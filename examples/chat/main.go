//go:build unix

// Command chat is a line chat on ringev's connection layer (package server).
//
// A client is greeted with "welcome; first line is your nick". Its first line is its nick, and
// every client with a nick, itself included, gets "* NICK joined". Each later line L goes to
// every other client with a nick as "NICK: L", in the order it was sent, and "* NICK left" when
// it leaves. A client that sends nothing for --idle is closed. POST /say?msg=M to the admin
// address sends "* admin: M" to every client with a nick and answers "sent to N", N being the
// number of connections.
//
//	go run ./examples/chat --addr 127.0.0.1:9000 --admin 127.0.0.1:9001 --idle 30s
package main

import (
	"bytes"
	"context"
	"flag"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/signal"
	"sync"
	"syscall"
	"time"

	"github.com/ringev/ringev/server"
)

// session is one client, kept in its Conn's context: its loop's alone.
type session struct {
	nick string    // "" until its first line
	last time.Time // when it last sent bytes, for the idle sweep
	said []byte    // the lines of one OnData, as "NICK: L\n"
}

// chat is the Handler. Its methods run on the loops and /say on net/http's goroutines: they
// share the clients with a nick in a sync.Map (*server.Conn to *session).
type chat struct {
	idle  time.Duration
	named sync.Map
}

// OnOpen greets a client.
func (ch *chat) OnOpen(c *server.Conn) {
	c.SetContext(&session{last: time.Now()})
	c.WriteString("welcome; first line is your nick\n")
}

// OnData takes the complete lines received: the first that is not blank is the nick, and the
// others are said to the others at once.
func (ch *chat) OnData(c *server.Conn) {
	s := c.Context().(*session)
	s.last = time.Now()
	in, _ := c.Peek(-1)
	in = in[:bytes.LastIndexByte(in, '\n')+1] // the complete lines
	for line := range bytes.Lines(in) {
		line = bytes.TrimRight(line, "\r\n")
		if s.nick != "" {
			s.said = fmt.Appendf(s.said, "%s: %s\n", s.nick, line)
		} else if len(line) > 0 {
			s.nick = string(line)
			ch.named.Store(c, s)
			ch.broadcast(nil, []byte("* "+s.nick+" joined\n"))
		}
	}
	c.Discard(len(in))
	if len(s.said) > 0 {
		ch.broadcast(c, s.said)
		s.said = s.said[:0]
	}
}

// OnClose says that a client with a nick left.
func (ch *chat) OnClose(c *server.Conn, _ error) {
	if s := c.Context().(*session); s.nick != "" {
		ch.named.Delete(c)
		ch.broadcast(nil, []byte("* "+s.nick+" left\n"))
	}
}

// OnTick closes the loop's clients with a nick that have sent nothing for ch.idle, and comes
// again in a tenth of that. The engine's idle timeout (nothing received or sent) closes those
// without a nick, which are sent nothing, but not those the others talk to.
func (ch *chat) OnTick(l *server.Loop) time.Duration {
	for c, s := range ch.named.Range {
		if c := c.(*server.Conn); c.Loop() == l && time.Since(s.(*session).last) > ch.idle {
			c.Close()
		}
	}
	return min(ch.idle/10, time.Second)
}

// broadcast writes msg to every client with a nick but skip. Write only buffers: a client gets
// one send per loop turn, however many lines were written to it. A client that does not read
// is closed by the engine once 4 MiB wait for it (server.DefaultMaxPending): its Write fails,
// and OnClose says it left.
func (ch *chat) broadcast(skip *server.Conn, msg []byte) {
	for c := range ch.named.Range {
		if c != skip {
			c.(*server.Conn).Write(msg)
		}
	}
}

// run serves the chat as args say until ctx is done.
func run(ctx context.Context, args []string) error {
	fs := flag.NewFlagSet("chat", flag.ExitOnError)
	addr := fs.String("addr", "127.0.0.1:9000", "chat `address`")
	admin := fs.String("admin", "127.0.0.1:9001", "admin HTTP `address`, for POST /say?msg=M")
	idle := fs.Duration("idle", 30*time.Second, "close a client that sends nothing for this long")
	backend := fs.String("backend", "auto", "loop backend: auto, uring, epoll or poll")
	loops := fs.Int("loops", 0, "event loops (0: one per CPU)")
	if fs.Parse(args); fs.NArg() > 0 || *idle <= 0 {
		return fmt.Errorf("want --idle > 0 and no arguments, got --idle %v and %q", *idle, fs.Args())
	}
	ln, err := net.Listen("tcp", *admin)
	if err != nil {
		return fmt.Errorf("--admin: %w", err)
	}
	ch := &chat{idle: *idle}
	e, err := server.Listen(ctx, "tcp", *addr, ch, server.WithIdleTimeout(*idle),
		server.WithBackend(*backend), server.WithLoops(*loops))
	if err != nil {
		ln.Close()
		return err
	}
	mux := http.NewServeMux()
	mux.HandleFunc("POST /say", func(w http.ResponseWriter, r *http.Request) {
		ch.broadcast(nil, []byte("* admin: "+r.FormValue("msg")+"\n"))
		fmt.Fprintf(w, "sent to %d\n", e.Conns())
	})
	hs := &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
	go hs.Serve(ln)
	defer hs.Close()
	return e.Wait()
}

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := run(ctx, os.Args[1:]); err != nil {
		fmt.Fprintln(os.Stderr, "chat:", err)
		os.Exit(2)
	}
}
