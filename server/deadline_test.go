//go:build linux

package server

// Tests of a loop's deadlines: the connections' timeouts are entries of one heap per loop,
// served by one loop timer, not a timer per connection.

import (
	"math/rand/v2"
	"testing"
	"time"
)

// deadlinesState returns, on l's goroutine, the number of deadline entries, whether the heap
// is ordered with every connection's index right, and whether one loop timer is armed for the
// earliest entry.
func deadlinesState(t *testing.T, l *Loop) (n int, ordered, timed bool) {
	t.Helper()
	onLoop(t, l, func() {
		d := &l.dls
		n, ordered = d.h.n, true
		for i := range n {
			if e := d.h.at(i); int(e.c.dl) != i+1 || i > 0 && d.h.at((i-1)/2).at > e.at {
				ordered = false
			}
		}
		timed = n > 0 && d.t != nil && d.tAt == d.h.at(0).at
	})
	return n, ordered, timed
}

// TestLoopDeadlinesOneEntryPerConnection: three connections with an idle timeout are three
// entries of the loop's deadline heap, in heap order, and one loop timer is armed for the
// earliest.
func TestLoopDeadlinesOneEntryPerConnection(t *testing.T) {
	eachSetup(t, func(t *testing.T, s setup) {
		r := newRecorder()
		e := startEngine(t, r, append(s.opts(), WithIdleTimeout(time.Hour))...)
		for range 3 {
			dialEngine(t, e)
			r.next(t)
		}
		n, ordered, timed := deadlinesState(t, e.Loops()[0])
		if n != 3 || !ordered || !timed {
			t.Fatalf("deadlines: %d entries, ordered %v, one timer for the earliest %v; want 3, true, true", n, ordered, timed)
		}
	})
}

// TestLoopDeadlinesEntryLeavesWithTheConnection: a connection that closes takes its entry out
// of the loop's deadlines (the heap keeps no closed connection).
func TestLoopDeadlinesEntryLeavesWithTheConnection(t *testing.T) {
	eachSetup(t, func(t *testing.T, s setup) {
		r := newRecorder()
		e := startEngine(t, r, append(s.opts(), WithIdleTimeout(time.Hour))...)
		a := dialEngine(t, e)
		r.next(t)
		dialEngine(t, e)
		r.next(t)
		a.Close()
		r.closedWith(t)
		n, ordered, _ := deadlinesState(t, e.Loops()[0])
		if n != 1 || !ordered {
			t.Fatalf("deadlines after a close: %d entries, ordered %v; want 1, true", n, ordered)
		}
	})
}

// TestLoopDeadlinesOneEntryAtTheEarliestTimeout: a connection with an idle timeout and a read
// idle timeout holds one entry of the loop's deadlines, at the earlier of the two.
func TestLoopDeadlinesOneEntryAtTheEarliestTimeout(t *testing.T) {
	eachSetup(t, func(t *testing.T, s setup) {
		r := newRecorder()
		e := startEngine(t, r, append(s.opts(), WithIdleTimeout(time.Hour), WithReadIdleTimeout(time.Minute))...)
		dialEngine(t, e)
		c := r.next(t)
		l := e.Loops()[0]
		var n int
		var at, want int64
		onLoop(t, l, func() {
			n = l.dls.h.n
			if n == 1 {
				at = l.dls.h.at(0).at
			}
			want = c.ractive + int64(time.Minute)
		})
		if n != 1 || at != want {
			t.Fatalf("deadlines: %d entries, the first at %d; want 1 at the read idle deadline %d", n, at, want)
		}
	})
}

// TestLoopTimeoutsSharedByConnections: connections with the same timeouts share one record of
// them (a pointer each, not three durations); one whose timeout changes gets another, and one
// with none holds none.
func TestLoopTimeoutsSharedByConnections(t *testing.T) {
	eachSetup(t, func(t *testing.T, s setup) {
		r := newRecorder()
		e := startEngine(t, r, append(s.opts(), WithIdleTimeout(time.Hour), WithRequestTimeout(time.Minute))...)
		var sc [3]*Conn
		for i := range sc {
			dialEngine(t, e)
			sc[i] = r.next(t)
		}
		var same, other, none bool
		onLoop(t, e.Loops()[0], func() {
			sc[1].SetIdleTimeout(2 * time.Hour)
			sc[2].SetIdleTimeout(0)
			sc[2].SetRequestTimeout(0)
			same = sc[0].to != nil && sc[0].to == e.Loops()[0].timeouts(nil, time.Hour, time.Minute, 0)
			other = sc[1].to != nil && sc[1].to != sc[0].to && *sc[1].to == connTimeouts{idle: 2 * time.Hour, reqTO: time.Minute}
			none = sc[2].to == nil
		})
		if !same || !other || !none {
			t.Fatalf("shared by the first: %v, the changed one's own: %v, none for none: %v; want all true", same, other, none)
		}
	})
}

// TestLoopTimeoutsSharedAllocateNothing: a connection given timeouts that the loop already has
// a record of (each new connection, with the engine's) allocates nothing for them: a record
// made for each call and dropped was garbage per connection.
func TestLoopTimeoutsSharedAllocateNothing(t *testing.T) {
	e := startEngine(t, newRecorder(), WithIdleTimeout(time.Hour), WithRequestTimeout(time.Minute))
	l := e.Loops()[0]
	var allocs float64
	onLoop(t, l, func() {
		l.timeouts(nil, time.Hour, time.Minute, 0)
		allocs = testing.AllocsPerRun(100, func() { l.timeouts(nil, time.Hour, time.Minute, 0) })
	})
	if allocs != 0 {
		t.Fatalf("%v allocations for timeouts the loop has a record of, want 0", allocs)
	}
}

// TestLoopTimeoutsPastTheSharedOnesKeepTheConnectionsOwn: once the loop shares maxTimeouts
// records, a connection whose timeouts are none of them gets a record of its own, and keeps
// it as they change: each change allocated a record before.
func TestLoopTimeoutsPastTheSharedOnesKeepTheConnectionsOwn(t *testing.T) {
	r := newRecorder()
	e := startEngine(t, r)
	l := e.Loops()[0]
	dialEngine(t, e)
	c := r.next(t)
	var allocs float64
	var same bool
	onLoop(t, l, func() {
		for i := range maxTimeouts {
			l.timeouts(nil, time.Duration(i+1)*time.Hour, 0, 0)
		}
		c.SetIdleTimeout(time.Minute)
		own := c.to
		d := time.Second
		allocs = testing.AllocsPerRun(100, func() {
			d++
			c.SetIdleTimeout(d)
		})
		same = c.to == own && c.to.idle == d
	})
	if allocs != 0 || !same {
		t.Fatalf("%v allocations per change of a connection's own timeouts, the same record changed: %v; want 0, true", allocs, same)
	}
}

// TestDeadlinesHeapGrowsWithoutCopying: the deadlines' heap grows by chunks that stay where
// they are (a copied array would be garbage the size of the heap, with an entry per
// connection), keeps its order across chunks, and gives its chunks back as it empties.
func TestDeadlinesHeapGrowsWithoutCopying(t *testing.T) {
	var d deadlines
	rng := rand.New(rand.NewPCG(1, 2))
	n := 3*dlChunk + 7
	var first *[dlChunk]deadline
	for i := range n {
		c := &Conn{}
		d.h.push(deadline{at: rng.Int64N(1 << 40), c: c})
		c.dl = int32(d.h.n)
		d.up(d.h.n - 1)
		if i == 0 {
			first = d.h.chunks[0]
		}
	}
	if d.h.chunks[0] != first || len(d.h.chunks) != 4 {
		t.Fatalf("after %d entries: %d chunks, the first moved: %v; want 4, false", n, len(d.h.chunks), d.h.chunks[0] != first)
	}
	last := int64(-1)
	for d.h.n > 0 {
		e := d.h.at(0)
		if e.at < last || int(e.c.dl) != 1 {
			t.Fatalf("entry at %d after %d (index %d), want in order, index 1", e.at, last, e.c.dl)
		}
		last = e.at
		d.remove(0)
	}
	if len(d.h.chunks) != 1 {
		t.Fatalf("%d chunks once empty, want 1", len(d.h.chunks))
	}
}
