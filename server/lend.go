//go:build unix

package server

import (
	"github.com/ringev/ringev"
	"github.com/ringev/ringev/internal/onloop"
)

// sendOwned and releaseOwned are the root's Loop.Send and BufferGroup.Release without their
// check of the caller (internal/onloop), for what the loop sends and gives back from its own
// goroutine: a turn's end, Forward (after its own check), a send's completion.
var (
	sendOwned    = onloop.Send.(func(l *ringev.Loop, fd int, buf []byte, flags int, cb ringev.Callback, token uint64) (ringev.Request, error))
	releaseOwned = onloop.Release.(func(g *ringev.BufferGroup, id int))
)

// lender is a loop's lending of received buffers to Forward's sends: the bytes a recv
// completion brought into a buffer of the loop's group (the requests driver's multishot
// recv), forwarded whole to a connection with no output, are sent from that buffer, with no
// copy into the destination's output; the send's completion gives the buffer back to the
// group. A send to a peer that does not read does not complete, and keeps its buffer: so at
// most max of the group's buffers (half of them) are lent at once, and past that Forward
// copies, so that the group, which every connection of the loop receives into, never runs dry
// for lack of the lent ones. A lent send's bytes count in its connection's Pending but not in
// the engine's budget (Engine.Buffered, WithMaxBuffered): they are in the group, which the loop
// holds whether it lends or not, not memory the connection took.
type lender struct {
	g *ringev.BufferGroup // the requests driver's group; nil: nothing is lent
	d *connReqs
	// x is the recv completion being delivered (reqReceived), whose group buffer, if it has
	// one, a Forward may lend; nil: none, or lent already. Its buffer and bytes are read only
	// when a Forward asks (forward), so that a receive pays one store for it.
	x    *ringev.Completion
	refs []int32 // per group buffer: the sends in flight that lend it
	held int     // the group buffers lent (refs above 0)
	max  int     // the most group buffers lent at once
}

// start makes lending use d's group, if it has one.
func (ld *lender) start(d *connReqs) {
	if g := d.group; g != nil {
		*ld = lender{g: g, d: d, refs: make([]int32, g.Len()), max: g.Len() / 2}
	}
}

// back is the end of a lent send from group buffer bid: the buffer goes back to the group.
func (ld *lender) back(bid int) {
	if ld.refs[bid]--; ld.refs[bid] == 0 {
		ld.held--
	}
	releaseOwned(ld.g, bid) // (a send's completion: on the loop)
}
