//go:build unix

package server

import (
	"io"
	"net"
	"slices"
	"unsafe"
)

// Forward moves the connection's whole input to dst's output, in order, and returns the number
// of bytes moved: what Next(-1) followed by dst.Write does (a proxy's OnData), in one call that
// checks the caller once, and holds back a source faster than dst's peer. dst may be on another
// loop (its Write then queues, as from any goroutine). When the move takes dst's Pending past
// dst's write limit (WriteLimit), Forward stops reading c at once, as PauseRead does, until
// dst's output has drained to half the limit (or dst closes): then c is read again and OnData
// is called with the input that waited. So dst holds at most its write limit and one Forward's
// input, whichever loop either is on, and a proxy needs no OnBackpressure of its own (dst's
// OnBackpressure comes at the end of a turn of dst's loop: from another loop, too late to hold
// a fast source). dst itself is not paused for its output past the write limit while c is open
// and forwards to it (when on another loop: while Forward holds a source for it),
// nor its OnBackpressure called (see WriteLimit; its output past the cap still closes it):
// its reading goes on, as a net.Conn proxy reads both ways, for its peer may read
// only once it has written (an echo upstream), and not reading it would stop both for good.
// Once the hold ends, c is not read again until the input that waited has been given to
// OnData: its input stays within what its reading brought as the hold came. This hold is apart
// from PauseRead's: ResumeRead does not end it. It belongs to
// c's loop's goroutine (an error wrapping ringev.ErrNotOwner from another, nothing moved); when
// dst is closing or closed (or its writing side is: CloseWrite) the input is discarded all the
// same and the error is net.ErrClosed, as it is when c is closed and has no input left (in
// OnClose, the input c left is still moved);
// when it would take dst's output past its cap, dst is closed and the error is ErrOutputFull
// (see Write). When the move leaves c no input and none will come (its peer has shut down its
// writing side: EOF reports true), the error is io.EOF, with the count of the bytes moved: a
// half-open proxy (WithHalfOpen) passes the half-close on then (dst.CloseWrite), with no call
// of EOF of its own.
//
// With the requests driver's multishot recv, input that is the whole of what one recv brought,
// moved to a connection of the same loop with nothing to send, is sent at once from the
// loop's receive buffer that holds it, without a copy; the buffer goes back to the loop's
// group when the send completes. At most half the group's buffers are lent so (a destination
// whose peer does not read keeps its own): past that, Forward copies.
func (c *Conn) Forward(dst *Conn) (int, error) { return c.forward(dst, false) }

// forward is Forward, and Splice's start when splice is true (one call for both: the path of
// every small message a proxy passes on). When c's input is the whole of the bytes of the recv
// completion being delivered (lender.x), as OnData sees them, it sends them to dst at once from
// the group buffer that holds them, in place of the copy into dst's output that the turn's end
// would send, if that send would have been the turn's whole send for dst and the turn's end had
// nothing else to do for it: dst is on c's loop and not gone (so not closing, closed nor
// half-closed by CloseWrite), has no output and no send in flight, its peer has not shut down
// its side, it is not paused, holds nothing written from another goroutine, is not TLS nor
// spliced into, and the bytes are within the write limit and the output cap; and if the lender
// may lend one more buffer (max). Else it copies (copyTo). The lent send's checks are here, not
// in a call of their own: one call for the whole move.
func (c *Conn) forward(dst *Conn, splice bool) (int, error) {
	l := c.l
	if !l.ev.Owned() {
		return 0, errNotOwner("Forward")
	}
	x := l.lend.x
	if x == nil {
		return c.copyTo(dst, splice)
	}
	b, v := x.Buf, &l.view
	n := len(b)
	if !c.inData || v.c != c || v.off != 0 || len(v.b) != n || unsafe.SliceData(v.b) != unsafe.SliceData(b) ||
		dst.l != l || dst.st.Load() != stOpen || dst.outLen > 0 || len(dst.pend) > 0 || n > l.limit ||
		dst.fl&cfEOF != 0 || dst.bp >= bpPaused || dst.asyncAt.Load() != 0 || dst.outN.Load()+int64(n) > l.maxPend {
		return c.copyTo(dst, splice)
	}
	bid := x.BufferID()
	if rare := dst.rare; rare != nil && (rare.splIn != nil || rare.tls != nil) || bid < 0 {
		return c.copyTo(dst, splice)
	}
	ld := &l.lend
	r := &ld.refs[bid]
	if *r == 0 {
		if ld.held >= ld.max {
			return c.copyTo(dst, splice)
		}
		ld.held++
	}
	*r++
	ld.x = nil // the recv's hold on the buffer is the send's now
	v.off = n  // consumed (discard's, inline)
	dst.lentBid = uint16(bid + 1)
	dst.outLen = int32(n)
	past := dst.outN.Add(int64(n)) > int64(l.limit) // wrote(n) but its charge: see lender
	if dst.to.idles() {
		dst.active = l.turnTime() // sending is activity (see flush)
	}
	l.sends++
	if _, err := sendOwned(l.ev, int(dst.fd), b, 0, ld.d.onSent, dst.tok(tokSend)); err != nil {
		l.e.logf("send: %v", err)
		dst.outN.Add(-int64(n)) // (a lent send is not charged)
		dst.outLen = 0
		if *r--; *r == 0 { // the recv's hold again: reqReceived gives it back
			ld.held--
		}
		dst.lentBid, ld.x = 0, x
		dst.end(err)
		return n, nil
	}
	if cr := c.rare; cr == nil || cr.fwdTo != dst {
		c.feeds(dst) // dst's output does not pause its reading while c is open (passedLimit)
	}
	if past && (c.rare == nil || c.rare.fwdOn == nil) {
		c.waitFor(dst)
	}
	if splice && n >= SpliceMinChunk && c.splicingOut() == nil && c.spliceable(dst) {
		c.startSplice(dst)
	}
	if c.atEOF() {
		return n, io.EOF
	}
	return n, nil
}

// copyTo is forward's move of c's input into dst's output (a copy), on c's loop.
func (c *Conn) copyTo(dst *Conn, splice bool) (int, error) {
	var b []byte
	v := &c.l.view
	inView := c.inData && v.c == c
	if inView {
		b = v.b[v.off:]
	} else {
		b = c.inBytes()
	}
	n := len(b)
	if n == 0 {
		if c.closed || dst.gone() {
			return 0, net.ErrClosed
		}
		if c.atEOF() {
			return 0, io.EOF
		}
		return 0, nil
	}
	var err error
	if dst.l == c.l && !dst.gone() && dst.fits(n) {
		dst.write(b) // forwarded's common case, inline
		if x := c.rare; x == nil || x.fwdTo != dst {
			c.feeds(dst) // dst's output does not pause its reading while c is open (passedLimit)
		}
	} else {
		err = dst.forwarded(b, c.l)
	}
	if inView {
		v.off += n // discard's, inline
	} else {
		c.discard(n)
	}
	if err == nil && dst.outN.Load() > int64(dst.l.limit) && (c.rare == nil || c.rare.fwdOn == nil) {
		c.waitFor(dst)
	}
	if splice && err == nil && n >= SpliceMinChunk && c.splicingOut() == nil && c.spliceable(dst) {
		c.startSplice(dst)
	}
	if err == nil && c.atEOF() {
		return n, io.EOF
	}
	return n, err
}

// forwarded is Forward's write of b to c, a destination on any loop, from loop from's goroutine.
func (c *Conn) forwarded(b []byte, from *Loop) (err error) {
	if c.l == from && !c.gone() {
		if !c.fits(len(b)) {
			return c.overflow(len(b))
		}
		c.write(b)
		return nil
	}
	_, err = c.Write(b)
	return err
}

// SpliceMinChunk is the input, in bytes (4 KiB, a small receive buffer's worth), that one
// Splice call must move for the connection to start splicing, and that splices must move for
// it to go on (see Splice).
const SpliceMinChunk = 4 << 10

// Splice is Forward, and more: from then on the connection's input goes to dst through the
// kernel, socket to pipe to socket (splice(2), the loop's non-blocking calls, each once a
// POLL_ADD request says there is input or room), without a copy in user space. That needs both connections on the same loop, the
// requests driver (APIRequests) on the uring backend, no TLS, and neither connection splicing
// already; elsewhere Splice is Forward (a handler calls it from each OnData, as it would
// Forward). It returns what Forward returns, for the input buffered now, which goes first.
//
// Once splicing: c's recv stops, and the bytes it still brings are forwarded (copied) in order,
// without OnData, which is called once more at the peer's EOF (a half-open proxy passes it on
// with dst.CloseWrite); a chunk of up to SplicePipeSize bytes
// is moved into a pipe taken from the loop's pool and out to dst once dst's own output is sent,
// and the next chunk is read only once the pipe is empty, so a slow dst stops c's reading and a
// direction holds at most a pipe's bytes in the kernel (not counted by Pending). PauseRead and
// the write limit's pause stop the reading as they stop a recv. dst's Close and CloseWrite wait
// for the pipe's bytes. When dst closes, splicing ends and c's input comes to OnData again.
// An idle connection holds no pipe: a pipe (2 fds) is held only while it has bytes, at most
// SplicePipesMax per loop, SplicePipesFree kept for reuse; when none can be had (EMFILE), or
// the kernel refuses the splice (EINVAL), the direction goes back to the copy path, said
// through WithLogf.
//
// Splicing costs more than a copy for small messages (a POLL_ADD and two splices against a
// recv and a send): it starts when one Splice call
// moves at least SpliceMinChunk bytes, and ends after 8 splices in a row that moved fewer (the
// recv takes over again), so that requests and replies of a few hundred bytes keep the copy
// path.
func (c *Conn) Splice(dst *Conn) (int, error) { return c.forward(dst, true) }

// fwdWait is a connection Forward holds (src) until the output of dst drains.
type fwdWait struct{ dst, src *Conn }

// waitFor holds c, on its loop, until the output of dst drains to half its write limit or dst
// closes: dst's loop, or a goroutine that sees it so, posts the end of the hold to c's loop.
// Registering (the entry and dst's fwdWatched, then reading gone and Pending) and dst's side
// (Pending or gone, then reading fwdWatched) are ordered so that one of them sees the other.
func (c *Conn) waitFor(dst *Conn) {
	l := dst.l
	l.mu.Lock()
	l.fwdWait = append(l.fwdWait, fwdWait{dst: dst, src: c})
	dst.asked.Or(fwdWatched)
	if l.stopped.Load() || dst.gone() {
		l.fwdWait = l.fwdWait[:len(l.fwdWait)-1]
		dst.unwatchLocked()
		l.mu.Unlock()
		return
	}
	l.mu.Unlock()
	x := c.x()
	x.fwdOn = dst
	if x.dialing == nil { // else userHeld is PauseRead's state already
		x.userHeld = c.fl&cfHeld != 0
	}
	c.hold(true)
	if dst.outN.Load() <= int64(l.limit/2) {
		dst.wakeForwarders() // it drained meanwhile: its own wake may have come before
	}
}

// wakeForwarders ends the hold of the sources Forward holds for c (from any goroutine): each
// is posted to its loop.
func (c *Conn) wakeForwarders() {
	l := c.l
	var srcs []*Conn
	l.mu.Lock()
	keep := l.fwdWait[:0]
	for _, w := range l.fwdWait {
		if w.dst == c {
			srcs = append(srcs, w.src)
		} else {
			keep = append(keep, w)
		}
	}
	clear(l.fwdWait[len(keep):])
	l.fwdWait = keep
	c.asked.And(^uint32(fwdWatched))
	l.mu.Unlock()
	for _, s := range srcs {
		s.l.Post(s.forwardDrained) // an error: its loop has ended, and s with it
	}
}

// forwardDrained ends the hold waitFor began, on c's loop.
func (c *Conn) forwardDrained() {
	x := c.rare
	if c.closed || x == nil || x.fwdOn == nil {
		return
	}
	x.fwdOn = nil
	c.hold(x.userHeld || x.dialing != nil)
}

// feeds notes that c's Forward wrote to dst, of c's loop: dst counts c among its sources
// (fwdDst) until c closes, forwards to another connection, or dst closes (dropSources).
func (c *Conn) feeds(dst *Conn) {
	x := c.x()
	if old := x.fwdTo; old != nil {
		old.lostSource(c)
	}
	x.fwdTo = dst
	d := dst.x()
	d.fwdDst++
	d.fwdSrc = c
}

// lostSource notes that src, a source of c (fwdTo), no longer forwards to it.
func (c *Conn) lostSource(src *Conn) {
	x := c.rare
	x.fwdDst--
	if x.fwdSrc == src {
		x.fwdSrc = nil
	}
}

// fedByForward reports whether c's output is Forward's: the Forward of an open connection of
// c's loop wrote to it (and to no other since), or Forward holds a source (of any loop) until
// c's output drains (waitFor).
func (c *Conn) fedByForward() bool {
	return c.rare != nil && c.rare.fwdDst > 0 || c.asked.Load()&fwdWatched != 0
}

// fwdGone ends what Forward's state c holds as it closes: it is no longer counted among its
// destination's sources (fwdTo), its own sources forget it (dropSources), and its entry goes
// from its destination's loop (a hold's end that is posted all the same finds it closed).
func (c *Conn) fwdGone() {
	if to := c.rare.fwdTo; to != nil {
		c.rare.fwdTo = nil
		to.lostSource(c)
	}
	if c.rare.fwdDst > 0 {
		c.dropSources()
	}
	dst := c.rare.fwdOn
	if dst == nil {
		return
	}
	c.rare.fwdOn = nil
	l := dst.l
	l.mu.Lock()
	if i := slices.IndexFunc(l.fwdWait, func(w fwdWait) bool { return w.src == c }); i >= 0 {
		l.fwdWait = slices.Delete(l.fwdWait, i, i+1)
		dst.unwatchLocked()
	}
	l.mu.Unlock()
}

// dropSources makes the open sources of c's loop whose Forward wrote to c last (fwdDst of
// them) forget c as it closes, so that none keeps it (or its buffers) reachable until it
// closes or forwards elsewhere itself: nothing else of theirs needs it (their next Forward to
// c fails: c is gone). The last one to become a source (fwdSrc; a pair's other side) is found
// at once; more of them (a fan-in) are looked for among the loop's connections.
func (c *Conn) dropSources() {
	x := c.rare
	if s := x.fwdSrc; s != nil {
		x.fwdSrc = nil
		s.rare.fwdTo = nil
		x.fwdDst--
	}
	for _, s := range c.l.conns.all {
		if x.fwdDst == 0 {
			return
		}
		if s != nil && s.rare != nil && s.rare.fwdTo == c {
			s.rare.fwdTo = nil
			x.fwdDst--
		}
	}
	x.fwdDst = 0 // (every open source is in the table)
}

// unwatchLocked clears c's fwdWatched unless a source still waits for it (under c.l.mu).
func (c *Conn) unwatchLocked() {
	if !slices.ContainsFunc(c.l.fwdWait, func(w fwdWait) bool { return w.dst == c }) {
		c.asked.And(^uint32(fwdWatched))
	}
}
