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
	h       dlHeap
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

// dlHeap is the heap's array of entries, in chunks of dlChunk entries that are never moved: a
// slice that grows by copying would leave its old arrays behind as garbage, about its own
// size (doubling) or four times it (append's growth), which stays in the process's memory
// until the next collection, when every connection has an entry.
type dlHeap struct {
	chunks []*[dlChunk]deadline
	n      int
}

// dlChunk is the entries per chunk of a dlHeap (8 KiB).
const dlChunk = 512

// at returns entry i (i < n).
func (h *dlHeap) at(i int) *deadline { return &h.chunks[i/dlChunk][i%dlChunk] }

// push adds e as entry n.
func (h *dlHeap) push(e deadline) {
	if h.n == len(h.chunks)*dlChunk {
		h.chunks = append(h.chunks, new([dlChunk]deadline))
	}
	*h.at(h.n) = e
	h.n++
}

// pop clears and drops the last entry, and the last chunk once it is empty and another chunk
// has room to spare (so that an entry added and taken at a chunk's edge does not make a chunk
// each time).
func (h *dlHeap) pop() {
	h.n--
	*h.at(h.n) = deadline{}
	if k := len(h.chunks); k > 1 && h.n <= (k-2)*dlChunk+dlChunk/2 {
		h.chunks[k-1] = nil
		h.chunks = h.chunks[:k-1]
	}
}

// armDeadline makes c's deadline entry at loop time at (ns) or before: a later at than the
// entry's is left for the entry's time to come (onTimer re-arms it then).
func (l *Loop) armDeadline(c *Conn, at int64) {
	d := &l.dls
	if i := int(c.dl) - 1; i >= 0 {
		e := d.h.at(i)
		if e.at <= at {
			return
		}
		e.at = at
		d.up(i)
	} else {
		d.h.push(deadline{at: at, c: c})
		c.dl = int32(d.h.n)
		d.up(d.h.n - 1)
	}
	if !d.running && (d.t == nil || at < d.tAt) {
		l.armDeadlineTimer()
	}
}

// armedBy reports whether c's entry comes at loop time at or before, when armDeadline has
// nothing to do: inlined, for an idle timeout put back after each request (SetTimeouts), which
// finds its entry armed earlier.
func (d *deadlines) armedBy(c *Conn, at int64) bool {
	i := uint(c.dl) - 1
	return i < uint(d.h.n) && d.h.chunks[i/dlChunk][i%dlChunk].at <= at
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
	if d.h.n == 0 {
		return
	}
	if d.fn == nil {
		d.fn = l.deadlinesDue
	}
	d.tAt = d.h.at(0).at
	d.t = l.ev.AddTimer(time.Duration(d.tAt-l.now()), d.fn)
}

// deadlinesDue is the loop timer: each connection whose entry is due is checked (Conn.onTimer,
// which closes it or re-arms its entry for its next deadline), then the timer is set for the
// earliest entry left.
func (l *Loop) deadlinesDue(*ringev.Timer) {
	d := &l.dls
	d.t, d.running = nil, true
	now := l.now()
	for d.h.n > 0 && d.h.at(0).at <= now {
		c := d.h.at(0).c
		d.remove(0)
		c.onTimer()
	}
	d.running = false
	l.armDeadlineTimer()
}

// remove takes entry i out of the heap.
func (d *deadlines) remove(i int) {
	e := d.h.at(i)
	e.c.dl = 0
	n := d.h.n - 1
	if i != n {
		*e = *d.h.at(n)
		e.c.dl = int32(i + 1)
	}
	d.h.pop()
	if i != n {
		d.down(i)
		d.up(i)
	}
}

// up moves entry i towards the root while it is earlier than its parent.
func (d *deadlines) up(i int) {
	h := &d.h
	for i > 0 {
		p := (i - 1) / 2
		if h.at(p).at <= h.at(i).at {
			break
		}
		d.swap(i, p)
		i = p
	}
}

// down moves entry i towards the leaves while a child is earlier.
func (d *deadlines) down(i int) {
	h := &d.h
	n := h.n
	for {
		m := i
		if c := 2*i + 1; c < n && h.at(c).at < h.at(m).at {
			m = c
		}
		if c := 2*i + 2; c < n && h.at(c).at < h.at(m).at {
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
	a, b := d.h.at(i), d.h.at(j)
	*a, *b = *b, *a
	a.c.dl, b.c.dl = int32(i+1), int32(j+1)
}

// connTimeouts are a connection's timeouts (see WithIdleTimeout, WithRequestTimeout,
// WithReadIdleTimeout; 0: none). The loop's connections with the same timeouts share one
// (Loop.timeouts), which does not change once made, so that a connection holds a pointer, not
// three durations; a connection past the shared ones (maxTimeouts) has its own, changed in place.
type connTimeouts struct {
	idle, reqTO, rIdle time.Duration
}

// idles reports whether t (nil: none) has an idle timeout, of either kind: only those need the
// time of the connection's last activity (Conn.active, Conn.ractive), which a request timeout
// alone does not.
func (t *connTimeouts) idles() bool { return t != nil && t.idle|t.rIdle != 0 }

// maxTimeouts bounds the loop's shared connTimeouts (Loop.tos): past it, a connection whose
// timeouts are none of them gets its own, which it keeps and changes in place from then on.
const maxTimeouts = 8

// timeouts returns the connTimeouts for idle, reqTO and rIdle of a connection whose record is
// now cur (nil for none), or nil when all are 0: the loop's shared one when it has it (made
// once), else cur itself, changed, when cur is the connection's own (none of the loop's), so
// that a connection past the shared ones allocates once, not at each change.
func (l *Loop) timeouts(cur *connTimeouts, idle, reqTO, rIdle time.Duration) *connTimeouts {
	if idle == 0 && reqTO == 0 && rIdle == 0 {
		return nil
	}
	want := connTimeouts{idle, reqTO, rIdle}
	own := cur != nil
	for _, t := range l.tos {
		if *t == want {
			l.lastTO = t
			return t
		}
		own = own && t != cur
	}
	t := cur
	if !own {
		t = new(connTimeouts) // (not &want: want would escape, and be made on every call)
		if len(l.tos) < maxTimeouts {
			l.tos = append(l.tos, t)
			l.lastTO = t
		}
	}
	*t = want
	return t
}

// timeouts returns the connection's timeouts (all 0 for none).
func (c *Conn) timeouts() connTimeouts {
	if c.to == nil {
		return connTimeouts{}
	}
	return *c.to
}
