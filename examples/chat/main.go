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
// Backpressure goes both ways. The engine stops reading a client whose output is past the
// write limit (server.DefaultWriteLimit) until it has drained; the chat stops reading a talker
// while a client it talks to is past it, so that a slow reader is waited for, not cut off, and
// the output stays small. A client that stays past the write limit for --stall (one that does
// not read) is closed, so that it cannot hold the chat; past 4 MiB (server.DefaultMaxPending)
// a client's writes are refused and it is closed at once.
//
//	go run ./examples/chat --addr 127.0.0.1:9000 --admin 127.0.0.1:9001 --idle 30s --stall 5s
package main

import (
	"bytes"
	"context"
	"crypto/tls"
	"errors"
	"flag"
	"fmt"
	"log"
	"net"
	"net/http"
	"os"
	"os/signal"
	"slices"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/ringev/ringev"
	"github.com/ringev/ringev/server"
)

// session is one client, kept in its Conn's context: its loop's alone.
type session struct {
	nick string    // "" until its first line
	last time.Time // when it last sent bytes, for the idle sweep
	said []byte    // the lines of one OnData, as "NICK: L\n"
	late time.Time // since when its output has been past the write limit, or zero
}

// chat is the Handler. Its methods run on the loops and /say on net/http's goroutines: they
// share the clients with a nick in a sync.Map (*server.Conn to *session), and the talkers
// they have paused in another (*server.Conn to nil).
type chat struct {
	idle, stall time.Duration
	logf        func(format string, args ...any)
	named       sync.Map
	paused      sync.Map
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
		ch.holdBack(c)
	}
}

// The talkers' pause works across loops: a talker (on its loop) puts itself in ch.paused
// before it looks again at the others' output, and a resumer (on any loop) takes it out before
// it calls ResumeRead, so one of them sees the other: no resume is lost. A ResumeRead from
// another loop is queued after the talker's turn, so it cannot come before the PauseRead.

// holdBack stops reading talker, after its broadcast, while a client it talks to is past the
// write limit.
func (ch *chat) holdBack(talker *server.Conn) {
	if !ch.behind(talker) {
		return
	}
	ch.paused.Store(talker, nil)
	if ch.behind(talker) {
		talker.PauseRead()
	} else {
		ch.paused.Delete(talker)
	}
}

// behind reports whether a client with a nick, talker aside, is past its write limit.
// Pending counts the writes other loops have queued for it: it is right from any goroutine.
func (ch *chat) behind(talker *server.Conn) bool {
	for c := range ch.named.Range {
		if c := c.(*server.Conn); c != talker && c.Pending() > c.WriteLimit() {
			return true
		}
	}
	return false
}

// resume reads again the paused talkers that no client is behind for. The loop of a client
// that has drained or left calls it: every client a talker was paused for was seen past its
// write limit (behind), and a client seen so is told when it has drained (OnBackpressure
// false) or closes (OnClose), on its loop; a talker still behind another client stays paused
// until that one's drain.
func (ch *chat) resume() {
	for t := range ch.paused.Range {
		t := t.(*server.Conn)
		if ch.behind(t) {
			continue
		}
		if _, ok := ch.paused.LoadAndDelete(t); ok {
			t.ResumeRead()
		}
	}
}

// OnBackpressure notes since when a client's output has been past the write limit, and once
// it has drained, reads the talkers it held again.
func (ch *chat) OnBackpressure(c *server.Conn, late bool) {
	if s := c.Context().(*session); late {
		s.late = time.Now()
	} else {
		s.late = time.Time{}
		ch.resume()
	}
}

// OnClose says that a client with a nick left, and reads again the talkers it held.
func (ch *chat) OnClose(c *server.Conn, _ error) {
	if s := c.Context().(*session); s.nick != "" {
		// Said before the client leaves the set: a line sent once the count (the admin's "sent
		// to N") no longer includes it comes after "left", for every client.
		ch.broadcast(c, []byte("* "+s.nick+" left\n"))
		ch.named.Delete(c)
		ch.paused.Delete(c)
		ch.resume()
	}
}

// OnTick closes the loop's clients with a nick that have sent nothing for ch.idle, and those
// whose output has been past the write limit for ch.stall; it comes again in a tenth of the
// shorter (at most a second). The engine's idle timeout
// (nothing received or sent) closes the clients without a nick, which are sent nothing, but
// not those the others talk to.
func (ch *chat) OnTick(l *server.Loop) time.Duration {
	for c, s := range ch.named.Range {
		c, s := c.(*server.Conn), s.(*session)
		switch {
		case c.Loop() != l:
		case time.Since(s.last) > ch.idle:
			c.Close()
		case !s.late.IsZero() && time.Since(s.late) > ch.stall:
			// Abort drops its output (Close would wait for it to read). It stays in named
			// until OnClose, maybe past the next tick: only the Abort that took it logs.
			// RemoteAddr is asked before Abort: once the socket is closed it is nil.
			if n, addr := c.Pending(), c.RemoteAddr(); c.Abort() == nil {
				ch.logf("chat: closing %s (%v): %d bytes have waited for it for more than %v", s.nick, addr, n, ch.stall)
			}
		}
	}
	return min(ch.idle/10, ch.stall/10, time.Second)
}

// broadcast writes msg to every client with a nick but skip. Write only buffers: a client gets
// one send per loop turn, however many lines were written to it. A Write refused at the output
// cap closes its client, and OnClose says it left.
func (ch *chat) broadcast(skip *server.Conn, msg []byte) {
	for c := range ch.named.Range {
		if c != skip {
			c.(*server.Conn).Write(msg)
		}
	}
}

// run serves ch, its settings from args, until ctx is done.
func run(ctx context.Context, ch *chat, args []string) error {
	fs := flag.NewFlagSet("chat", flag.ExitOnError)
	addr := fs.String("addr", "127.0.0.1:9000", "chat `address`")
	admin := fs.String("admin", "127.0.0.1:9001", "admin HTTP `address`, for POST /say?msg=M")
	idle := fs.Duration("idle", 30*time.Second, "close a client that sends nothing for this long")
	stall := fs.Duration("stall", 5*time.Second, "close a client whose output stays past the write limit this long")
	backend := fs.String("backend", "auto", "loop backend: auto, uring, epoll or poll")
	loops := fs.Int("loops", 0, "event loops (0: one per CPU)")
	cert := fs.String("tls-cert", "", "serve the chat over TLS with this PEM certificate `file` (with --tls-key)")
	key := fs.String("tls-key", "", "the PEM private key `file` of --tls-cert")
	if fs.Parse(args); fs.NArg() > 0 || *idle <= 0 || *stall <= 0 {
		return fmt.Errorf("want --idle > 0, --stall > 0 and no arguments, got --idle %v, --stall %v and %q", *idle, *stall, fs.Args())
	}
	if *backend != "auto" && !slices.Contains(ringev.Backends(), *backend) {
		return fmt.Errorf("--backend %s: unknown (known: auto, %s)", *backend, strings.Join(ringev.Backends(), ", "))
	}
	if *loops < 0 {
		return fmt.Errorf("--loops %d: must be >= 0 (0: one per CPU)", *loops)
	}
	// WithLogf: where "auto" fell back from io_uring (sysctl kernel.io_uring_disabled, a
	// container's seccomp policy), the engine says so, naming the errno.
	opts := []server.Option{server.WithIdleTimeout(*idle), server.WithBackend(*backend), server.WithLoops(*loops), server.WithLogf(ch.logf)}
	if (*cert == "") != (*key == "") {
		return errors.New("--tls-cert and --tls-key go together")
	}
	if *cert != "" {
		kp, err := tls.LoadX509KeyPair(*cert, *key)
		if err != nil {
			return fmt.Errorf("--tls-cert, --tls-key: %w", err)
		}
		opts = append(opts, server.WithTLS(&tls.Config{Certificates: []tls.Certificate{kp}}))
	}
	ln, err := net.Listen("tcp", *admin)
	if err != nil {
		return fmt.Errorf("--admin: %w", err)
	}
	ch.idle, ch.stall = *idle, *stall
	e, err := server.Listen(ctx, "tcp", *addr, ch, opts...)
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
	if err := run(ctx, &chat{logf: log.Printf}, os.Args[1:]); err != nil {
		fmt.Fprintln(os.Stderr, "chat:", err)
		os.Exit(2)
	}
}
