//go:build linux

package main

// Tests of the chat: net.Dial clients (fifty, where the rule is about everyone) drive it on
// every backend with one and two loops, and check each rule of its spec; the admin address is
// driven with net/http's client, and bad flags with the command itself.

import (
	"bufio"
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/ringev/ringev/internal/testutil"
	"github.com/ringev/ringev/server"
	"golang.org/x/sys/unix"
)

// waitFor bounds every wait of these tests but sendAndReadAll's reads.
const waitFor = 10 * time.Second

// allAtOnce bounds each read of sendAndReadAll, where every client sends and reads at once: the
// chat's loops then share the test process's CPU with a hundred client goroutines (and, over
// TLS, with the clients' record work), and on a busy machine under -race a loop can wait longer
// than waitFor for the CPU between two of its turns, with every line still on its way. The bound only
// ends a hang (a line that never comes); it says nothing about how fast the chat is.
const allAtOnce = 6 * waitFor

// clients is how many clients the tests of rules about everyone connect.
const clients = 50

// TestMain runs the command itself (main) when the test binary is started with CHAT_MAIN=1:
// the bad flags test runs it so. Otherwise it opens the runtime's netpoller fds (opened at the
// first use of the network) before any test counts the open fds.
func TestMain(m *testing.M) {
	if os.Getenv("CHAT_MAIN") == "1" {
		main()
		os.Exit(0)
	}
	if l, err := net.Listen("tcp", "127.0.0.1:0"); err == nil {
		if c, err := net.Dial("tcp", l.Addr().String()); err == nil {
			c.Close()
		}
		l.Close()
	}
	os.Exit(m.Run())
}

// TestChatAnnouncesJoinsToEveryClientWithANick: a client's first line is its nick, announced to
// every client with a nick, itself included, and to no client without one.
func TestChatAnnouncesJoinsToEveryClientWithANick(t *testing.T) {
	eachSetup(t, nil, func(t *testing.T, s *chatServer) {
		quiet := s.dial(t, "quiet")
		s.joinAll(t, clients) // checks every join line
		quiet.join()          // its own join is the first line it reads: it heard none before
	})
}

// TestChatTakesNoBlankLineAsNick: blank lines (LF or CRLF) before the first line with text give
// no nick: the client hears no join, and its first line with text is its nick.
func TestChatTakesNoBlankLineAsNick(t *testing.T) {
	eachSetup(t, nil, func(t *testing.T, s *chatServer) {
		blank := s.dial(t, "blank")
		blank.send("\r\n\n")
		other := s.dial(t, "other")
		other.join()
		blank.join() // its own join is the first line it reads: "other" joined while it had none
		other.expect("* blank joined\n")
	})
}

// TestChatDeliversEachSendersLinesInOrder: every line a client with a nick sends reaches every
// other client with a nick as "NICK: L", in the order it was sent, and never the sender itself;
// lines end in LF or CRLF and may arrive in pieces.
func TestChatDeliversEachSendersLinesInOrder(t *testing.T) {
	const lines = 20
	eachSetup(t, nil, func(t *testing.T, s *chatServer) {
		sendAndReadAll(t, s.joinAll(t, clients), lines)
	})
}

// TestChatOverTLSDeliversEveryLine: with --tls-cert and --tls-key, 50 TLS clients that send 200
// lines each at once get every other client's lines, in order.
func TestChatOverTLSDeliversEveryLine(t *testing.T) {
	const lines = 200
	cert, key, _ := testutil.CertFiles(t)
	eachSetup(t, []string{"--tls-cert", cert, "--tls-key", key}, func(t *testing.T, s *chatServer) {
		sendAndReadAll(t, s.joinAll(t, clients), lines)
	})
}

// sendAndReadAll has every client of cs send lines lines and read every other client's at
// once; each error fails the test.
func sendAndReadAll(t *testing.T, cs []*client, lines int) {
	t.Helper()
	errc := make(chan error, 2*len(cs))
	var wg sync.WaitGroup
	for i, c := range cs {
		wg.Go(func() { errc <- sendLines(c, i, lines) })
		wg.Go(func() { errc <- readLines(c, cs, lines) })
	}
	wg.Wait() // every read and write has a deadline
	close(errc)
	for err := range errc {
		if err != nil {
			t.Error(err)
		}
	}
}

// sendLines sends c's lines "line K from NICK", K from 0: each in one write, or all in one, or
// each in two pieces, as i says; some clients end them with CRLF.
func sendLines(c *client, i, lines int) error {
	end := "\n"
	if i%3 == 0 {
		end = "\r\n"
	}
	var all strings.Builder
	for k := range lines {
		line := fmt.Sprintf("line %d from %s%s", k, c.name, end)
		switch i % 4 {
		case 0:
			all.WriteString(line)
			continue
		case 1:
			if err := c.write(line[:3]); err != nil {
				return err
			}
			line = line[3:]
		}
		if err := c.write(line); err != nil {
			return err
		}
	}
	return c.write(all.String())
}

// readLines reads the lines of every client of cs but c, and checks their sender and order.
func readLines(c *client, cs []*client, lines int) error {
	next := map[string]int{}
	for range (len(cs) - 1) * lines {
		got, err := c.readWithin(allAtOnce)
		if err != nil {
			return err
		}
		nick, _, _ := strings.Cut(got, ": ")
		if nick == c.name || got != fmt.Sprintf("%s: line %d from %s\n", nick, next[nick], nick) {
			return fmt.Errorf("%s read %q, want line %d of %s (and never its own)", c.name, got, next[nick], nick)
		}
		next[nick]++
	}
	return nil
}

// TestChatAdminSayReachesEveryClientWithANick: POST /say?msg=M sends "* admin: M" to every
// client with a nick, and to no other, and answers "sent to N", N the number of connections.
func TestChatAdminSayReachesEveryClientWithANick(t *testing.T) {
	eachSetup(t, nil, func(t *testing.T, s *chatServer) {
		quiet := s.dial(t, "quiet")
		cs := s.joinAll(t, clients)
		msg := "hello, everyone ✓"
		if got, want := s.say(t, msg), fmt.Sprintf("sent to %d\n", clients+1); got != want {
			t.Errorf("POST /say answered %q, want %q", got, want)
		}
		for _, c := range cs {
			c.expect("* admin: " + msg + "\n")
		}
		quiet.join() // it heard nothing before its own join
	})
}

// TestChatAdminSayTakesOnlyPost: GET /say is answered 405 Method Not Allowed and says nothing.
func TestChatAdminSayTakesOnlyPost(t *testing.T) {
	eachSetup(t, nil, func(t *testing.T, s *chatServer) {
		c := s.dial(t, "c")
		c.join()
		if status, body := s.request(t, http.MethodGet, "/say?msg=get"); status != http.StatusMethodNotAllowed {
			t.Errorf("GET /say: %d %q, want 405", status, body)
		}
		s.say(t, "post")
		c.expect("* admin: post\n") // and not "* admin: get" before it
	})
}

// TestChatAnnouncesLeaves: when a client with a nick leaves, every other client with a nick
// reads "* NICK left"; a client without a nick leaves unannounced; /say counts those left.
func TestChatAnnouncesLeaves(t *testing.T) {
	eachSetup(t, nil, func(t *testing.T, s *chatServer) {
		quiet := s.dial(t, "quiet")
		cs := s.joinAll(t, clients)
		cs[0].conn.Close()
		quiet.conn.Close()
		s.awaitCount(t, clients-1)
		s.say(t, "end")
		for _, c := range cs[1:] {
			c.readUntil("* admin: end\n", "* n00 left\n")
		}
	})
}

// TestChatClosesIdleClients: a client that sends nothing for --idle is closed, whether it has
// no nick or listens to others talking, and the others read that it left; one that talks stays.
func TestChatClosesIdleClients(t *testing.T) {
	const idle = time.Second
	eachSetup(t, []string{"--idle", idle.String()}, func(t *testing.T, s *chatServer) {
		dialed := time.Now() // before the server's idle clocks start
		quiet := s.dial(t, "quiet")
		talker, listener := s.dial(t, "talker"), s.dial(t, "listener")
		talker.join()
		joined := time.Now()
		listener.join() // listener's last line
		talker.expect("* listener joined\n")
		closed := make(chan error, 2) // the idle ones: quiet hears nothing, listener talker's lines
		go func() { closed <- quiet.awaitEOF(dialed, idle, "") }()
		go func() { closed <- listener.awaitEOF(joined, idle, "talker: ") }()
		tick := time.NewTicker(idle / 10)
		defer tick.Stop()
		timeout := time.After(waitFor)
		for k, open := 0, 2; open > 0; k++ { // talker talks until both are closed
			select {
			case err := <-closed:
				if err != nil {
					t.Fatal(err)
				}
				open--
			case <-tick.C:
				talker.send(fmt.Sprintf("line %d\n", k))
			case <-timeout:
				t.Fatalf("the idle clients were not closed within %v", waitFor)
			}
		}
		s.awaitCount(t, 1)
		s.say(t, "still here")
		talker.readUntil("* admin: still here\n", "* listener left\n")
	})
}

// talkLines is how many lines of talkSize bytes the talker sends in the backpressure tests:
// 8 MB, more than the kernel's buffers and the output cap (4 MiB) take for a client that does
// not read.
const talkLines, talkSize = 8000, 1000

// TestChatPausesATalkerWhileAClientDoesNotRead: while a client with a nick does not read, the
// talker whose lines wait past the write limit for it is no longer read; once it reads, the
// talker is read again, and it and another client get every line, in order.
func TestChatPausesATalkerWhileAClientDoesNotRead(t *testing.T) {
	eachSetup(t, []string{"--stall", "1h"}, func(t *testing.T, s *chatServer) {
		slow, reader, talker := s.joinThree(t)
		sent, heard := make(chan error, 1), make(chan error, 1)
		go func() { sent <- talker.talk(talkLines) }()
		go func() { heard <- reader.hear(talkLines) }()
		s.awaitPaused(t, "talker")
		if err := slow.hear(talkLines); err != nil {
			t.Fatal(err)
		}
		for _, c := range []chan error{sent, heard} {
			if err := <-c; err != nil { // every read and write has a deadline
				t.Fatal(err)
			}
		}
		s.awaitPaused(t, "")
	})
}

// TestChatClosesAClientThatDoesNotRead: a client with a nick whose output stays past the write
// limit for --stall is closed, with a log line naming it and its address, and the talker it held is read
// again: the clients that read get every line, in order.
func TestChatClosesAClientThatDoesNotRead(t *testing.T) {
	const stall = 500 * time.Millisecond
	eachSetup(t, []string{"--stall", stall.String()}, func(t *testing.T, s *chatServer) {
		slow, reader, talker := s.joinThree(t)
		joined := time.Now() // before slow's output could pass the write limit
		errc := make(chan error, 2)
		go func() { errc <- talker.talk(talkLines) }()
		go func() { errc <- reader.hear(talkLines) }()
		for range 2 {
			if err := <-errc; err != nil { // every read and write has a deadline
				t.Fatal(err)
			}
		}
		slow.conn.SetReadDeadline(time.Now().Add(waitFor))
		if n, err := io.Copy(io.Discard, slow.conn); errors.Is(err, os.ErrDeadlineExceeded) {
			t.Fatalf("slow is still open (%d bytes read) after every line reached the reader", n)
		}
		if took := time.Since(joined); took < stall {
			t.Errorf("slow was closed %v after it joined, before the stall timeout %v", took, stall)
		}
		s.mu.Lock()
		defer s.mu.Unlock()
		if addr := slow.conn.LocalAddr().String(); len(s.logged) != 1 || !strings.Contains(s.logged[0], "closing slow ("+addr+")") {
			t.Errorf("logged %q, want one line saying slow (%s) is closed", s.logged, addr)
		}
	})
}

// joinThree joins the clients slow, reader and talker, in that order, and reads the joins each
// hears of the others. With more than one loop, talker is served on another loop than slow (a
// talker that came on slow's loop leaves and comes again), so that the pause and its resume
// cross loops.
func (s *chatServer) joinThree(t *testing.T) (slow, reader, talker *client) {
	t.Helper()
	slow, reader = s.dial(t, "slow"), s.dial(t, "reader")
	slow.join()
	reader.join()
	slow.expect("* reader joined\n")
	for attempt := 1; ; attempt++ {
		talker = s.dial(t, "talker")
		talker.join()
		slow.expect("* talker joined\n")
		reader.expect("* talker joined\n")
		at, by := s.loopOf(t, "slow"), s.loopOf(t, "talker")
		if at != by || len(at.Engine().Loops()) == 1 {
			return slow, reader, talker
		}
		if attempt == 50 {
			t.Fatalf("%d talkers in a row came on slow's loop", attempt)
		}
		talker.conn.Close()
		slow.expect("* talker left\n")
		reader.expect("* talker left\n")
	}
}

// loopOf is the loop that serves the client with nick.
func (s *chatServer) loopOf(t *testing.T, nick string) *server.Loop {
	t.Helper()
	for c, v := range s.ch.named.Range {
		if v.(*session).nick == nick {
			return c.(*server.Conn).Loop()
		}
	}
	t.Fatalf("no client %q", nick)
	return nil
}

// talk sends n lines of talkSize bytes, numbered from 0, in writes of 64 KB or so, each within
// waitFor.
func (c *client) talk(n int) error {
	filler := strings.Repeat("x", talkSize-9)
	var buf []byte
	for k := range n {
		buf = fmt.Appendf(buf, "%07d %s\n", k, filler)
		if len(buf) >= 64<<10 || k == n-1 {
			c.conn.SetWriteDeadline(time.Now().Add(waitFor))
			if _, err := c.conn.Write(buf); err != nil {
				return fmt.Errorf("%s: writing line %d: %w", c.name, k, err)
			}
			buf = buf[:0]
		}
	}
	return nil
}

// hear reads until it has the n lines of talk, said by talker, and fails unless they come in
// order; the chat's own lines ("* ...") are skipped.
func (c *client) hear(n int) error {
	for k := 0; k < n; {
		line, err := c.read()
		if err != nil {
			return fmt.Errorf("after %d of the talker's lines: %w", k, err)
		}
		if strings.HasPrefix(line, "* ") {
			continue
		}
		if want := fmt.Sprintf("talker: %07d ", k); !strings.HasPrefix(line, want) || len(line) != len("talker: ")+talkSize {
			return fmt.Errorf("%s read %.40q (%d bytes), want %q and %d bytes", c.name, line, len(line), want, len("talker: ")+talkSize)
		}
		k++
	}
	return nil
}

// awaitPaused waits, within waitFor, until the chat holds the talker nick paused, or no
// talker ("").
func (s *chatServer) awaitPaused(t *testing.T, nick string) {
	t.Helper()
	paused := func() (nicks []string) {
		for c := range s.ch.paused.Range {
			if v, ok := s.ch.named.Load(c); ok {
				nicks = append(nicks, v.(*session).nick)
			}
		}
		return nicks
	}
	for deadline := time.Now().Add(waitFor); ; time.Sleep(time.Millisecond) { // the pace of the polling
		got := paused()
		if nick == "" && len(got) == 0 || slices.Equal(got, []string{nick}) {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("paused talkers %q %v on, want %q", got, waitFor, nick)
		}
	}
}

// TestChatRejectsBadFlags: the command exits with status 2 and a message naming the flag or the
// problem.
func TestChatRejectsBadFlags(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--idle", "soon"}, `invalid value "soon" for flag -idle`},
		{[]string{"--idle", "0s"}, "--idle 0s"},
		{[]string{"--stall", "-1s"}, "--stall -1s"},
		{[]string{"--loops", "-1"}, "--loops -1"},
		{[]string{"--backend", "nope"}, "--backend nope"},
		{[]string{"--bogus"}, "flag provided but not defined: -bogus"},
		{[]string{"9000"}, `["9000"]`},
		{[]string{"--addr", "127.0.0.1:99999"}, "127.0.0.1:99999"},
		{[]string{"--admin", "127.0.0.1:99999"}, "--admin"},
	} {
		t.Run(strings.Join(tc.args, " "), func(t *testing.T) {
			args := append([]string{"--addr", "127.0.0.1:0", "--admin", "127.0.0.1:0"}, tc.args...)
			ctx, cancel := context.WithTimeout(context.Background(), waitFor)
			defer cancel()
			cmd := exec.CommandContext(ctx, os.Args[0], args...)
			cmd.Env = append(os.Environ(), "CHAT_MAIN=1")
			out, err := cmd.CombinedOutput()
			var exit *exec.ExitError
			if !errors.As(err, &exit) || exit.ExitCode() != 2 || !strings.Contains(string(out), tc.want) {
				t.Errorf("chat %q: %v, output %q; want exit status 2 and %q", args, err, out, tc.want)
			}
		})
	}
}

// eachSetup runs test with the chat served on each backend with one and two loops (subtests
// "backend/N-loops"), args added to its flags. Each subtest fails if it leaves a goroutine or
// an fd behind.
func eachSetup(t *testing.T, args []string, test func(t *testing.T, s *chatServer)) {
	for _, backend := range []string{"uring", "epoll", "poll"} {
		for _, loops := range []string{"1", "2"} {
			t.Run(backend+"/"+loops+"-loops", func(t *testing.T) {
				testutil.NoLeaks(t)
				test(t, startChat(t, append([]string{"--backend", backend, "--loops", loops}, args...)...))
			})
		}
	}
}

// chatServer is a chat run by startChat: its two addresses, its handler, its log lines, and the
// clients' TLS config when it serves TLS (--tls-cert in its arguments).
type chatServer struct {
	addr, admin string
	tls         *tls.Config
	ch          *chat
	mu          sync.Mutex
	logged      []string
}

// startChat runs the chat (run) on free ports of 127.0.0.1 with args, and returns once it
// serves (a client has come and gone); cleanup cancels its context and waits for run to return,
// failing the test on an error. The uring backend is skipped where io_uring is switched off or
// missing (testutil.SkipIfIOUringUnavailable).
func startChat(t *testing.T, args ...string) *chatServer {
	t.Helper()
	s := &chatServer{addr: freePort(t), admin: freePort(t)}
	s.ch = &chat{logf: func(format string, args ...any) {
		s.mu.Lock()
		defer s.mu.Unlock()
		s.logged = append(s.logged, fmt.Sprintf(format, args...))
	}}
	if slices.Contains(args, "--tls-cert") {
		s.tls = &tls.Config{InsecureSkipVerify: true} // the certificate is the test's own
	}
	ctx, cancel := context.WithCancel(context.Background())
	errc := make(chan error, 1)
	go func() { errc <- run(ctx, s.ch, append([]string{"--addr", s.addr, "--admin", s.admin}, args...)) }()
	for deadline := time.Now().Add(waitFor); ; time.Sleep(time.Millisecond) {
		select {
		case err := <-errc:
			cancel()
			if slices.Contains(args, "uring") {
				testutil.SkipIfIOUringUnavailable(t, err, "the chat on the uring backend")
			}
			t.Fatalf("run %q: %v", args, err)
		default:
		}
		if c, err := net.Dial("tcp", s.addr); err == nil {
			c.Close() // a client that leaves without a nick
			break
		}
		if time.Now().After(deadline) {
			cancel()
			t.Fatalf("the chat did not accept within %v", waitFor)
		}
	}
	t.Cleanup(func() {
		cancel()
		select {
		case err := <-errc:
			if err != nil {
				t.Errorf("run: %v", err)
			}
		case <-time.After(waitFor):
			t.Errorf("the chat did not end within %v of its context's cancellation", waitFor)
		}
	})
	s.awaitCount(t, 0) // the server has seen the first client leave
	return s
}

// freePort returns an address of 127.0.0.1 with a port that was free a moment ago.
func freePort(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().String()
}

// client is one net.Dial client of the chat.
type client struct {
	t    *testing.T
	name string
	conn net.Conn
	r    *bufio.Reader
}

// dial connects a client named name (the nick it will send) and reads the greeting; cleanup
// closes it.
func (s *chatServer) dial(t *testing.T, name string) *client {
	t.Helper()
	conn, err := net.DialTimeout("tcp", s.addr, waitFor)
	if err != nil {
		t.Fatalf("dial %s: %v", s.addr, err)
	}
	t.Cleanup(func() { conn.Close() })
	if s.tls != nil {
		tc := tls.Client(conn, s.tls)
		tc.SetDeadline(time.Now().Add(waitFor))
		if err := tc.Handshake(); err != nil {
			t.Fatalf("TLS handshake with %s: %v", s.addr, err)
		}
		conn = tc
	}
	c := &client{t: t, name: name, conn: conn, r: bufio.NewReader(conn)}
	c.expect("welcome; first line is your nick\n")
	return c
}

// write writes s within waitFor.
func (c *client) write(s string) error {
	c.conn.SetWriteDeadline(time.Now().Add(waitFor))
	if _, err := io.WriteString(c.conn, s); err != nil {
		return fmt.Errorf("%s: writing %q: %w", c.name, s, err)
	}
	return nil
}

// read reads one line within waitFor.
func (c *client) read() (string, error) { return c.readWithin(waitFor) }

// readWithin reads one line within d.
func (c *client) readWithin(d time.Duration) (string, error) {
	c.conn.SetReadDeadline(time.Now().Add(d))
	line, err := c.r.ReadString('\n')
	if err != nil {
		return line, fmt.Errorf("%s: reading a line: %w (read %q)", c.name, err, line)
	}
	return line, nil
}

// send is write, failing the test on an error (call it from the test's goroutine).
func (c *client) send(s string) {
	c.t.Helper()
	if err := c.write(s); err != nil {
		c.t.Fatal(err)
	}
}

// line is read, failing the test on an error (call it from the test's goroutine).
func (c *client) line() string {
	c.t.Helper()
	line, err := c.read()
	if err != nil {
		c.t.Fatal(err)
	}
	return line
}

// expect reads one line and fails the test unless it is want.
func (c *client) expect(want string) {
	c.t.Helper()
	if got := c.line(); got != want {
		c.t.Fatalf("%s read %q, want %q", c.name, got, want)
	}
}

// join sends the client's nick and reads its own join line.
func (c *client) join() {
	c.t.Helper()
	c.send(c.name + "\n")
	c.expect("* " + c.name + " joined\n")
}

// readUntil reads lines until marker, failing the test unless once comes exactly once before
// it, among "* admin: count\n" lines (awaitCount's).
func (c *client) readUntil(marker, once string) {
	c.t.Helper()
	n := 0
	for line := c.line(); line != marker; line = c.line() {
		switch line {
		case once:
			n++
		case "* admin: count\n":
		default:
			c.t.Fatalf("%s read %q, want only %q and the admin's lines before %q", c.name, line, once, marker)
		}
	}
	if n != 1 {
		c.t.Fatalf("%s read %q %d times before %q, want once", c.name, once, n, marker)
	}
}

// awaitEOF reads until the server closes the connection, within waitFor, then closes it too.
// It fails if a line does not start with prefix (with prefix "", if a line comes) or if the
// end came before idle had passed since since (a time before the connection's last line).
func (c *client) awaitEOF(since time.Time, idle time.Duration, prefix string) error {
	c.conn.SetReadDeadline(time.Now().Add(waitFor))
	defer c.conn.Close()
	for {
		line, err := c.r.ReadString('\n')
		switch {
		case errors.Is(err, io.EOF) && line == "":
			if took := time.Since(since); took < idle {
				return fmt.Errorf("%s was closed %v after its last line, before the idle timeout %v", c.name, took, idle)
			}
			return nil
		case err != nil || prefix == "" || !strings.HasPrefix(line, prefix):
			return fmt.Errorf("%s read %q, %v; want only lines starting with %q, then EOF", c.name, line, err, prefix)
		}
	}
}

// joinAll connects n clients named n00, n01, ... and joins them one after the other, each once
// the one before has read its own join line. Then each must read the joins of those after it,
// in any order (with two loops the joins of two clients may cross), and nothing else.
func (s *chatServer) joinAll(t *testing.T, n int) []*client {
	t.Helper()
	cs := make([]*client, n)
	for i := range cs {
		cs[i] = s.dial(t, fmt.Sprintf("n%02d", i))
		cs[i].join()
	}
	for i, c := range cs {
		var got, want []string
		for _, later := range cs[i+1:] {
			got = append(got, c.line())
			want = append(want, "* "+later.name+" joined\n")
		}
		slices.Sort(got)
		if !slices.Equal(got, want) {
			t.Fatalf("%s read the joins %q, want those of every later client %q", c.name, got, want)
		}
	}
	return cs
}

// say posts msg to the admin address and returns the answer's body; a status other than 200
// fails the test.
func (s *chatServer) say(t *testing.T, msg string) string {
	t.Helper()
	status, body := s.request(t, http.MethodPost, "/say?msg="+url.QueryEscape(msg))
	if status != http.StatusOK {
		t.Fatalf("POST /say?msg=%q: %d %q", msg, status, body)
	}
	return body
}

// request sends a request with method to path on the admin address, within waitFor, and
// returns its status and body. The connection is not kept.
func (s *chatServer) request(t *testing.T, method, path string) (int, string) {
	t.Helper()
	req, err := http.NewRequest(method, "http://"+s.admin+path, nil)
	if err != nil {
		t.Fatal(err)
	}
	cl := &http.Client{Timeout: waitFor, Transport: &http.Transport{DisableKeepAlives: true}}
	resp, err := cl.Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", method, path, err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatalf("%s %s: reading the body: %v", method, path, err)
	}
	return resp.StatusCode, string(body)
}

// awaitCount posts "count" to the admin address until it answers "sent to n" (a connection
// the client closed ends on the server's loop a moment later), within waitFor.
func (s *chatServer) awaitCount(t *testing.T, n int) {
	t.Helper()
	want := fmt.Sprintf("sent to %d\n", n)
	deadline := time.Now().Add(waitFor)
	for got := s.say(t, "count"); got != want; got = s.say(t, "count") {
		if time.Now().After(deadline) {
			t.Fatalf("/say still answers %q %v on, want %q", got, waitFor, want)
		}
		time.Sleep(5 * time.Millisecond) // the pace of the polling
	}
}

// chatDeniedEnv asks a re-executed test binary to deny a system call (testutil.RunDenied).
const chatDeniedEnv = "CHAT_TEST_DENIED_CHILD"

// TestChatSaysWhenAutoFellBackFromIOUring: with io_uring_setup denied (EPERM, as Docker's
// seccomp profile or sysctl kernel.io_uring_disabled=2 make it), the chat on --backend auto
// serves on epoll and says so through its logf, naming the errno.
func TestChatSaysWhenAutoFellBackFromIOUring(t *testing.T) {
	testutil.ChildDenied(t, chatDeniedEnv, func(syscall.Errno) {
		s := startChat(t, "--backend", "auto")
		s.mu.Lock()
		defer s.mu.Unlock()
		fmt.Printf("DENIED log=%s\n", strings.Join(s.logged, " | "))
	})
	res := testutil.RunDenied(t, "TestChatSaysWhenAutoFellBackFromIOUring", chatDeniedEnv, unix.SYS_IO_URING_SETUP, unix.EPERM)
	if l := res["log"]; !strings.Contains(l, "chose epoll") || !strings.Contains(l, syscall.EPERM.Error()) {
		t.Errorf("the chat logged %q, want the choice of epoll and %q", l, syscall.EPERM.Error())
	}
}
