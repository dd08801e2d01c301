//go:build unix

package server

import (
	"unsafe"

	"github.com/ringev/ringev"
)

// lender is a loop's lending of received buffers to Forward's sends: the bytes a recv
// completion brought into a buffer of the loop's group (the requests driver's multishot
// recv), forwarded whole to a connection with no output, are sent from that buffer, with no
// copy into the destination's output; the send's completion gives the buffer back to the
// group. A send to a peer that does not read does not complete, and keeps its buffer: so at
// most max of the group's buffers (half of them) are lent at once, and past that Forward
// copies, so that the group, which every connection of the loop receives into, never runs dry
// for lack of the lent ones.
type lender struct {
	g *ringev.BufferGroup // the requests driver's group; nil: nothing is lent
	d *connReqs
	// x is the recv completion being delivered (reqReceived), whose group buffer, if it has
	// one, a Forward may lend; nil: none, or lent already. Its buffer and bytes are read only
	// when a Forward asks (lendTo), so that a receive pays one store for it.
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
	ld.g.Release(bid)
}

// lendTo is Forward's move of c's input to dst when that input is the whole of the bytes of x,
// the recv completion being delivered (lender.x), as OnData sees them: they are sent to dst at
// once from the group buffer that holds them, in place of the copy into dst's output that the
// turn's end would send. It returns the bytes moved (all of c's input, consumed), or 0, having
// done nothing, unless that send would have been the turn's whole send for dst and the turn's
// end had nothing else to do for it: dst is on c's loop and not gone (so not closing, closed
// nor half-closed by CloseWrite), has no output and no send in flight, its peer has not shut
// down its side, it is not paused, holds nothing written from another goroutine, is not TLS
// nor spliced into, and the bytes are within the write limit and the output cap; and unless
// the lender may lend one more buffer (max). One call checks all of Forward's conditions for
// it: the path of every small message a proxy passes on.
func (c *Conn) lendTo(dst *Conn, x *ringev.Completion) int {
	l := c.l
	b, v := x.Buf, &l.view
	n := len(b)
	if !c.inData || v.c != c || v.off != 0 || len(v.b) != n || unsafe.SliceData(v.b) != unsafe.SliceData(b) ||
		dst.l != l || dst.st.Load() != stOpen || dst.outLen > 0 || len(dst.pend) > 0 || n > l.limit ||
		dst.eof || dst.bp >= bpPaused || dst.asyncAt.Load() != 0 || dst.outN.Load()+int64(n) > l.maxPend {
		return 0
	}
	rare := dst.rare
	if rare != nil && (rare.splIn != nil || rare.tls != nil) {
		return 0
	}
	bid := x.BufferID()
	if bid < 0 {
		return 0
	}
	ld := &l.lend
	r := &ld.refs[bid]
	if *r == 0 {
		if ld.held >= ld.max {
			return 0
		}
		ld.held++
	}
	*r++
	ld.x = nil // the recv's hold on the buffer is the send's now
	v.off = n  // consumed (discard's, inline)
	dst.lentBid = uint16(bid + 1)
	dst.outLen = int32(n)
	past := dst.outN.Add(int64(n)) > int64(l.limit) // wrote(n), by hand: the call would not be inlined
	l.charge(n)
	if dst.to.idles() {
		dst.active = l.turnTime() // sending is activity (see flush)
	}
	l.sends++
	if _, err := l.ev.Send(int(dst.fd), b, 0, ld.d.onConn, dst.tok(tokSend)); err != nil {
		l.e.logf("send: %v", err)
		dst.wrote(-n)
		dst.outLen = 0
		if *r--; *r == 0 { // the recv's hold again: reqReceived gives it back
			ld.held--
		}
		dst.lentBid, ld.x = 0, x
		dst.end(err)
		return n
	}
	if x := c.rare; x == nil || x.fwdTo != dst {
		c.feeds(dst) // dst's output does not pause its reading while c is open (passedLimit)
	}
	if past && (c.rare == nil || c.rare.fwdOn == nil) {
		c.waitFor(dst)
	}
	return n
}
