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

// lendTo sends b, the whole of the bytes of x, the recv completion being delivered (lender.x),
// to c at once from the group buffer that holds them, in place of the copy into c's output
// that the turn's end would send (Forward, on c's loop, to a c that is not gone: so c is not
// closing, closed nor half-closed by CloseWrite). It reports false, and does nothing, unless
// that send would have been the turn's whole send for c and the turn's end had nothing else to
// do for it: c has no output and no send in flight, its peer has not shut down its side, it is
// not paused, holds nothing written from another goroutine, is not TLS nor spliced into, and b
// is within the write limit; and unless the lender may lend one more buffer (max).
func (c *Conn) lendTo(x *ringev.Completion, b []byte) bool {
	l := c.l
	bid := x.BufferID()
	if bid < 0 || unsafe.SliceData(b) != unsafe.SliceData(x.Buf) || len(b) != len(x.Buf) ||
		c.outLen > 0 || len(c.pend) > 0 || len(b) > l.limit || c.eof || c.bp >= bpPaused || c.asyncAt.Load() != 0 ||
		c.rare != nil && (c.rare.splIn != nil || c.rare.tls != nil) {
		return false
	}
	ld := &l.lend
	if ld.refs[bid] == 0 {
		if ld.held >= ld.max {
			return false
		}
		ld.held++
	}
	ld.refs[bid]++
	ld.x = nil // the recv's hold on the buffer is the send's now
	c.lentBid = uint16(bid + 1)
	n := len(b)
	c.outLen = int32(n)
	c.outN.Add(int64(n)) // wrote(n), by hand: the call would not be inlined
	l.charge(n)
	if c.to.idles() {
		c.active = l.turnTime() // sending is activity (see flush)
	}
	l.sends++
	if _, err := l.ev.Send(int(c.fd), b, 0, ld.d.onConn, c.tok(tokSend)); err != nil {
		l.e.logf("send: %v", err)
		c.wrote(-n)
		c.outLen = 0
		ld.refs[bid]-- // the recv's hold again: reqReceived gives it back
		if ld.refs[bid] == 0 {
			ld.held--
		}
		c.lentBid, ld.x = 0, x
		c.end(err)
	}
	return true
}
