//go:build unix

package server

import (
	"time"

	"github.com/ringev/ringev"
)

// deadlines are a loop's connections' timeouts (idle, read idle, request): a min-heap of
// (loop time, connection), one entry per connection that has a timeout, at the earliest of
// its deadlines, and one loop timer for the earliest entry. A connection with a timeout so holds a 16-byte heap entry, not a *ringev.Timer
// (64 bytes) and a handler (16) of its own.
type deadlines struct {
	h       []deadline
	t       *ringev.Timer // armed for tAt (h[0].at when it was armed); nil: none
	tAt     int64
	fn      func(*ringev.Timer) // Loop.deadlinesDue, made once
	running bool                // deadlinesDue is running: it arms the timer when done
}

// deadline is one entry of the heap: the connection's earliest deadline it was armed for.
type deadline struct {
	at int64 // loop time, ns (Loop.now)
	c  *Conn
}

// armDeadline makes c's deadline entry at loop time at (ns) or before: a later at than the
// entry's is left for the entry's time to come (onTimer re-arms it then).
func (l *Loop) armDeadline(c *Conn, at int64) {
	d := &l.dls
	if i := int(c.dl) - 1; i >= 0 {
		if d.h[i].at <= at {
			return
		}
		d.h[i].at = at
		d.up(i)
	} else {
		d.h = append(roomFor1(d.h), deadline{at: at, c: c})
		c.dl = int32(len(d.h))
		d.up(len(d.h) - 1)
	}
	if !d.running && (d.t == nil || at < d.tAt) {
		l.armDeadlineTimer()
	}
}

// dropDeadline takes c's entry out of the heap, if it has one (its loop timer may still fire,
// and finds nothing due).
func (l *Loop) dropDeadline(c *Conn) {
	if i := int(c.dl) - 1; i >= 0 {
		l.dls.remove(i)
	}
}

// armDeadlineTimer sets the loop timer for the earliest entry (none for an empty heap).
func (l *Loop) armDeadlineTimer() {
	d := &l.dls
	if d.t != nil {
		d.t.Stop()
		d.t = nil
	}
	if len(d.h) == 0 {
		return
	}
	if d.fn == nil {
		d.fn = l.deadlinesDue
	}
	d.tAt = d.h[0].at
	d.t = l.ev.AddTimer(time.Duration(d.tAt-l.now()), d.fn)
}

// deadlinesDue is the loop timer: each connection whose entry is due is checked (Conn.onTimer,
// which closes it or re-arms its entry for its next deadline), then the timer is set for the
// earliest entry left.
func (l *Loop) deadlinesDue(*ringev.Timer) {
	d := &l.dls
	d.t, d.running = nil, true
	now := l.now()
	for len(d.h) > 0 && d.h[0].at <= now {
		c := d.h[0].c
		d.remove(0)
		c.onTimer()
	}
	d.running = false
	l.armDeadlineTimer()
}

// remove takes entry i out of the heap.
func (d *deadlines) remove(i int) {
	d.h[i].c.dl = 0
	n := len(d.h) - 1
	if i != n {
		d.h[i] = d.h[n]
		d.h[i].c.dl = int32(i + 1)
	}
	d.h[n] = deadline{}
	d.h = d.h[:n]
	if i != n {
		d.down(i)
		d.up(i)
	}
}

// up moves entry i towards the root while it is earlier than its parent.
func (d *deadlines) up(i int) {
	h := d.h
	for i > 0 {
		p := (i - 1) / 2
		if h[p].at <= h[i].at {
			break
		}
		d.swap(i, p)
		i = p
	}
}

// down moves entry i towards the leaves while a child is earlier.
func (d *deadlines) down(i int) {
	h := d.h
	n := len(h)
	for {
		m := i
		if c := 2*i + 1; c < n && h[c].at < h[m].at {
			m = c
		}
		if c := 2*i + 2; c < n && h[c].at < h[m].at {
			m = c
		}
		if m == i {
			return
		}
		d.swap(i, m)
		i = m
	}
}

func (d *deadlines) swap(i, j int) {
	h := d.h
	h[i], h[j] = h[j], h[i]
	h[i].c.dl, h[j].c.dl = int32(i+1), int32(j+1)
}

// connTimeouts are a connection's timeouts (see WithIdleTimeout, WithRequestTimeout,
// WithReadIdleTimeout; 0: none). They do not change once made: the loop's connections with the
// same timeouts share one (Loop.timeouts), so that a connection holds a pointer, not three
// durations.
type connTimeouts struct {
	idle, reqTO, rIdle time.Duration
}

// maxTimeouts bounds the loop's shared connTimeouts (Loop.tos): past it, a connection whose
// timeouts are none of them gets its own.
const maxTimeouts = 8

// timeouts returns the loop's connTimeouts for idle, reqTO and rIdle (made once and shared),
// or nil when all are 0.
func (l *Loop) timeouts(idle, reqTO, rIdle time.Duration) *connTimeouts {
	if idle == 0 && reqTO == 0 && rIdle == 0 {
		return nil
	}
	want := connTimeouts{idle, reqTO, rIdle}
	for _, t := range l.tos {
		if *t == want {
			return t
		}
	}
	t := new(connTimeouts) // (not &want: want would escape, and be made on every call)
	*t = want
	if len(l.tos) < maxTimeouts {
		l.tos = append(l.tos, t)
	}
	return t
}

// timeouts returns the connection's timeouts (all 0 for none).
func (c *Conn) timeouts() connTimeouts {
	if c.to == nil {
		return connTimeouts{}
	}
	return *c.to
}
