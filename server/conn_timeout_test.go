//go:build linux

package server

// Tests of a connection's timeouts: the idle timeout closes a connection on which nothing
// happens, and the request timeout closes one whose request is not complete in time, however
// many of its bytes trickle in; neither touches a connection that keeps up.

import (
	"errors"
	"io"
	"testing"
	"time"
)

// TestConnIdleTimeoutClosesAnIdleConnection: a connection that sends nothing is closed at the
// idle timeout (the peer reads EOF; OnClose's err is ErrIdleTimeout), while one that sends a line
// every tenth of the timeout stays open past it. An attempt where the busy client itself went
// more than half the timeout between two echoes (a machine too busy to run it) proves nothing
// and is made again, at most 5 times.
func TestConnIdleTimeoutClosesAnIdleConnection(t *testing.T) {
	eachSetup(t, func(t *testing.T, s setup) {
		for attempt := 1; !idleTimeoutClosesTheIdleOne(t, s); attempt++ {
			if attempt == 5 {
				t.Fatalf("in %d attempts the busy client never kept its pace: the case was never set up", attempt)
			}
		}
	})
}

// idleTimeoutClosesTheIdleOne is one attempt of TestConnIdleTimeoutClosesAnIdleConnection; false:
// the busy client did not keep its pace.
func idleTimeoutClosesTheIdleOne(t *testing.T, s setup) bool {
	t.Helper()
	const idle = 250 * time.Millisecond
	r := newRecorder()
	e := startEngine(t, r, append(s.opts(), WithIdleTimeout(idle))...)
	last := time.Now() // the busy client's last exchange: its connection is new
	busy := dialEngine(t, e)
	bc := r.next(t)
	start := time.Now()
	quiet := dialEngine(t, e)
	r.next(t)
	for time.Since(start) < 3*idle {
		busy.SetDeadline(time.Now().Add(waitFor))
		_, werr := busy.Write([]byte("x\n"))
		b := make([]byte, 2)
		_, rerr := io.ReadFull(busy, b)
		now := time.Now()
		if now.Sub(last) > idle/2 {
			return false // the client paused longer than half the timeout: not the case
		}
		last = now
		if werr != nil || rerr != nil || string(b) != "x\n" {
			t.Fatalf("echo %q, write %v, read %v: the busy connection was not served", b, werr, rerr)
		}
		time.Sleep(idle / 10) // the pace of a client that keeps up, not a wait for a condition
	}
	if got := readToEOF(t, quiet); got != "" {
		t.Fatalf("the idle connection got %q", got)
	}
	quiet.Close()
	c, err := r.closedWith(t)
	if c == bc || !errors.Is(err, ErrIdleTimeout) {
		t.Fatalf("closed: the busy one %v, err %v; want the idle one, ErrIdleTimeout", c == bc, err)
	}
	if took := time.Since(start); took < idle {
		t.Errorf("closed after %v, before the idle timeout %v", took, idle)
	}
	return true
}

// TestConnRequestTimeoutIsNotResetPerByte: a request whose bytes trickle in (one every tenth
// of the timeout, never a whole line) is cut off at the request timeout of its first byte
// (OnClose's err ErrRequestTimeout), while a client that sends whole lines at the same pace is
// served past it.
func TestConnRequestTimeoutIsNotResetPerByte(t *testing.T) {
	eachSetup(t, func(t *testing.T, s setup) {
		const timeout = 250 * time.Millisecond
		r := newRecorder()
		e := startEngine(t, r, append(s.opts(), WithRequestTimeout(timeout))...)
		good := dialEngine(t, e)
		gc := r.next(t)
		slow := dialEngine(t, e)
		r.next(t)
		start := time.Now()
		sent := 0
		for time.Since(start) < 3*timeout {
			if _, err := slow.Write([]byte("s")); err == nil {
				sent++
			}
			good.Write([]byte("g\n"))
			if got := readN(t, good, 2); got != "g\n" {
				t.Fatalf("echo %q", got)
			}
			time.Sleep(timeout / 10)
		}
		c, err := r.closedWith(t)
		if c == gc || !errors.Is(err, ErrRequestTimeout) {
			t.Fatalf("closed: the good one %v, err %v; want the slow one, ErrRequestTimeout", c == gc, err)
		}
		if sent < 5 {
			t.Errorf("the slow client sent %d bytes before the end; the test wants it to trickle", sent)
		}
	})
}

// TestConnSetTimeoutsPerConnection: SetIdleTimeout on one connection closes it alone.
func TestConnSetTimeoutsPerConnection(t *testing.T) {
	eachBackendRequests(t, func(t *testing.T, s setup) {
		r := newRecorder()
		r.greet = "hi\n"
		e := startEngine(t, r, s.opts()...)
		other := dialEngine(t, e)
		r.next(t)
		c := dialEngine(t, e)
		sc := r.next(t)
		onLoop(t, sc.Loop(), func() {
			if err := sc.SetIdleTimeout(50 * time.Millisecond); err != nil {
				t.Errorf("SetIdleTimeout: %v", err)
			}
		})
		if got := readToEOF(t, c); got != "hi\n" {
			t.Fatalf("got %q", got)
		}
		c.Close()
		if got, err := r.closedWith(t); got != sc || !errors.Is(err, ErrIdleTimeout) {
			t.Fatalf("closed %v with %v", got == sc, err)
		}
		other.Write([]byte("still\n"))
		if got := readN(t, other, 9); got != "hi\nstill\n" {
			t.Fatalf("the other connection: %q", got)
		}
	})
}

// TestConnSetTimeoutsSetsARequestTimeoutAlone: SetTimeouts(0, d) gives a connection a request
// timeout alone: a request left incomplete is cut off with ErrRequestTimeout (the engine's
// hour-long idle timeout replaced).
func TestConnSetTimeoutsSetsARequestTimeoutAlone(t *testing.T) {
	eachBackendRequests(t, func(t *testing.T, s setup) {
		setTimeoutsCloses(t, s, 0, 100*time.Millisecond, "incomplete", ErrRequestTimeout)
	})
}

// TestConnSetTimeoutsSetsAnIdleTimeoutAlone: SetTimeouts(d, 0) gives a connection an idle
// timeout alone: a connection that sends nothing is closed with ErrIdleTimeout.
func TestConnSetTimeoutsSetsAnIdleTimeoutAlone(t *testing.T) {
	eachBackendRequests(t, func(t *testing.T, s setup) {
		setTimeoutsCloses(t, s, 100*time.Millisecond, 0, "", ErrIdleTimeout)
	})
}

// setTimeoutsCloses calls SetTimeouts(idle, request) on a connection of an engine on s whose
// idle timeout is an hour, has the client send send, and checks that the connection is closed
// with want (within waitFor).
func setTimeoutsCloses(t *testing.T, s setup, idle, request time.Duration, send string, want error) {
	t.Helper()
	r := newRecorder()
	e := startEngine(t, r, append(s.opts(), WithIdleTimeout(time.Hour))...)
	c := dialEngine(t, e)
	sc := r.next(t)
	onLoop(t, sc.Loop(), func() {
		if err := sc.SetTimeouts(idle, request); err != nil {
			t.Errorf("SetTimeouts: %v", err)
		}
	})
	c.Write([]byte(send))
	if got, err := r.closedWith(t); got != sc || !errors.Is(err, want) {
		t.Fatalf("SetTimeouts(%v, %v): closed the connection %v with %v; want %v", idle, request, got == sc, err, want)
	}
}

// TestConnReadIdleTimeoutCountsInputOnly: with WithReadIdleTimeout, a client that only listens
// (the server writes to it every tenth of the timeout) is closed at the timeout (OnClose's err
// ErrIdleTimeout), while one that sends a line at that pace stays open.
func TestConnReadIdleTimeoutCountsInputOnly(t *testing.T) {
	eachSetup(t, func(t *testing.T, s setup) {
		const idle = 400 * time.Millisecond
		r := newRecorder()
		e := startEngine(t, r, append(s.opts(), WithReadIdleTimeout(idle))...)
		busy := dialEngine(t, e)
		bc := r.next(t)
		start := time.Now()
		listener := dialEngine(t, e)
		lc := r.next(t)
		var cutAt time.Duration
		for cutAt == 0 && time.Since(start) < 3*idle {
			b := make([]byte, 5)
			if _, err := lc.WriteString("news\n"); err != nil {
				cutAt = time.Since(start)
			} else if _, err := io.ReadFull(listener, b); err != nil {
				cutAt = time.Since(start)
			}
			busy.Write([]byte("x\n"))
			if got := readN(t, busy, 2); got != "x\n" {
				t.Fatalf("echo %q", got)
			}
			time.Sleep(idle / 10) // the pace of the clients, not a wait for a condition
		}
		if cutAt == 0 {
			t.Fatalf("the listening client was open after %v, 3 times the read idle timeout: the server's writes kept it", 3*idle)
		}
		if cutAt < idle {
			t.Errorf("cut off after %v, before the read idle timeout %v", cutAt, idle)
		}
		if c, err := r.closedWith(t); c != lc || !errors.Is(err, ErrIdleTimeout) {
			t.Fatalf("closed: the busy one %v, err %v; want the listening one, ErrIdleTimeout", c == bc, err)
		}
	})
}

// lastWord is a recorder that is also a TimeoutHandler: at a timeout it writes the input left
// and the reason, and closes the connection itself if closeToo.
type lastWord struct {
	*recorder
	closeToo bool
}

func (h lastWord) OnTimeout(c *Conn, err error) {
	b, _ := c.Peek(-1)
	c.WriteString("late " + string(b) + ": " + err.Error() + "\n")
	if h.closeToo {
		c.Close()
	}
}

// TestConnTimeoutHandlerAnswerIsSent: what a TimeoutHandler writes when the request timeout
// cuts a request short reaches the peer before the close (EOF, not a reset), and OnClose's err
// is ErrRequestTimeout, also when OnTimeout closes the connection itself.
func TestConnTimeoutHandlerAnswerIsSent(t *testing.T) {
	eachSetup(t, func(t *testing.T, s setup) {
		for _, closeToo := range []bool{false, true} {
			r := newRecorder()
			e := startEngine(t, lastWord{r, closeToo}, append(s.opts(), WithRequestTimeout(200*time.Millisecond))...)
			c := dialEngine(t, e)
			r.next(t)
			c.Write([]byte("GET "))
			want := "late GET : " + ErrRequestTimeout.Error() + "\n"
			if got := readToEOF(t, c); got != want {
				t.Fatalf("closeToo %v: the peer read %q; want %q, then EOF", closeToo, got, want)
			}
			c.Close()
			if _, err := r.closedWith(t); !errors.Is(err, ErrRequestTimeout) {
				t.Fatalf("closeToo %v: OnClose's err %v; want ErrRequestTimeout", closeToo, err)
			}
		}
	})
}

// bufferedOn waits until the server's side of a connection, sc, holds input its handler left.
func bufferedOn(t *testing.T, sc *Conn) {
	t.Helper()
	eventually(t, "the input left buffered", func() bool {
		n := 0
		onLoop(t, sc.Loop(), func() { n = sc.Buffered() })
		return n > 0
	})
}

// TestConnSetRequestTimeoutStartsARequestForInputLeft: SetRequestTimeout outside OnData, on a
// connection whose handler left input while it had no request timeout (the next of pipelined
// requests, once the one before is served), starts the request then: it is cut off at the
// timeout (ErrRequestTimeout), not left without a deadline.
func TestConnSetRequestTimeoutStartsARequestForInputLeft(t *testing.T) {
	eachSetup(t, func(t *testing.T, s setup) {
		r := newRecorder()
		e := startEngine(t, r, s.opts()...)
		c := dialEngine(t, e)
		sc := r.next(t)
		c.Write([]byte("partial"))
		bufferedOn(t, sc)
		onLoop(t, sc.Loop(), func() { sc.SetRequestTimeout(200 * time.Millisecond) })
		if got := readToEOF(t, c); got != "" {
			t.Fatalf("the peer read %q", got)
		}
		if _, err := r.closedWith(t); !errors.Is(err, ErrRequestTimeout) {
			t.Fatalf("OnClose's err %v; want ErrRequestTimeout", err)
		}
	})
}

// TestConnSetRequestTimeoutZeroEndsTheRequest: SetRequestTimeout(0) ends the request under
// way: a request timeout set again later times the input left from then, not from the first
// request's start (which had passed).
func TestConnSetRequestTimeoutZeroEndsTheRequest(t *testing.T) {
	eachSetup(t, func(t *testing.T, s setup) {
		const timeout = 200 * time.Millisecond
		r := newRecorder()
		e := startEngine(t, r, append(s.opts(), WithRequestTimeout(timeout))...)
		c := dialEngine(t, e)
		sc := r.next(t)
		c.Write([]byte("partial"))
		bufferedOn(t, sc)
		onLoop(t, sc.Loop(), func() { sc.SetRequestTimeout(0) })
		first := time.Now().Add(timeout) // the first request's deadline or later: its bytes came before
		var set time.Time
		eventually(t, "the first request's deadline to pass", func() bool {
			if time.Now().Before(first) {
				return false
			}
			onLoop(t, sc.Loop(), func() {
				set = time.Now()
				sc.SetRequestTimeout(timeout)
			})
			return true
		})
		if got := readToEOF(t, c); got != "" {
			t.Fatalf("the peer read %q", got)
		}
		if took := time.Since(set); took < timeout {
			t.Fatalf("closed %v after the timeout was set again; want the timeout, %v", took, timeout)
		}
		c.Close()
		if _, err := r.closedWith(t); !errors.Is(err, ErrRequestTimeout) {
			t.Fatalf("OnClose's err %v; want ErrRequestTimeout", err)
		}
	})
}
