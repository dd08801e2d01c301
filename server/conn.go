//go:build unix

package server

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"math"
	"net"
	"sync/atomic"
	"time"
	"unsafe"

	"github.com/ringev/ringev"
	"golang.org/x/sys/unix"
)

// MaxInput is the layer's cap on a connection's unconsumed input, in bytes (4 MiB), above the
// limits of ringev's own handlers (MaxRESPRequest, MaxHeaderBytes+MaxBodyBytes): a connection
// whose handler left that much is closed without a reply (ErrInputTooLarge).
const MaxInput = 4 << 20

// Conn is one connection of an Engine. Its methods belong to its loop's goroutine (the
// Handler's methods and functions given to Loop.Post run there), except Write, WriteString,
// Close, Abort, CloseWrite, PauseRead and ResumeRead, which are safe from any goroutine: from
// another one they queue what they do for the loop; Pending and Loop are right from any
// goroutine too. A method that cannot be used from the caller's goroutine returns an error
// wrapping ringev.ErrNotOwner; a closed connection's, one that is net.ErrClosed.
//
// A Conn is never reused for another connection: one kept after OnClose stays closed.
type Conn struct {
	l   *Loop
	ctx any

	// addrs are the addresses once the loop has asked for them (atomic: read from any
	// goroutine).
	addrs atomic.Pointer[connAddrs]

	// Input: in holds what the handler left unconsumed (a free-list buffer, inBytes), nil when
	// empty (a holder of the loop's, so that an idle connection holds 8 bytes for it, not a
	// slice's 24). During OnData (inData, with the state below), the input it sees is the
	// loop's view.
	in *inBuf

	// Output: pend is what was written and not yet handed to the kernel (a free-list buffer);
	// outLen (below), the bytes of the send in flight.
	pend []byte

	// asyncAt is 1 + the index of the loop's entry (Loop.inW) that holds what other goroutines
	// wrote, under l.mu, until the loop takes it (drain, or the loop's own Write or Close, which
	// must come after it); 0: none. Read without the lock, it tells whether there is any.
	asyncAt atomic.Int32
	// st is what other goroutines see of the connection's state, one word so that a change is
	// one atomic step: stOpen; stWShut once CloseWrite took it (Write fails, Close and Abort
	// work once: claim); stGone once it is closing or closed (Write, Close and Abort fail).
	st atomic.Int32
	// dl is 1 + the index of its entry in the loop's deadlines, 0: none.
	dl int32
	// asked is the hold PauseRead or ResumeRead from another goroutine asked last (holdWant)
	// and whether the loop has yet to apply it (holdQueued: applyHold is in its inbox, once),
	// one atomic word (in what would be padding too), so that a call that finds one queued
	// needs no lock; and whether Forward holds a source until this connection's output drains
	// (fwdWatched: its entries in the loop's fwdWait), so that the sends of the others do not
	// look there.
	asked atomic.Uint32
	fd    int32 // its socket (here: in what would be padding)
	// outLen is the bytes of the send in flight (the requests driver's: its buffer is the
	// request's, which its completion gives back): at most maxSend, 0x7ffff000 bytes, which
	// 32 bits hold (send splits longer output).
	outLen int32
	// outN is the output written and not yet sent: pend, the send in flight and what other
	// goroutines wrote (atomic: Pending and the output cap read it from any goroutine). inN,
	// below, is the input charged to the loop's buffered bytes (len(in) when last charged).
	outN atomic.Int64

	// State, on the loop's goroutine: the flags most often set stand alone (a store each), the
	// others are bits of fl (cfLingering ...), so that the Conn fits in a smaller size class.
	dirty    bool   // in l.dirty: the turn's end flushes it
	closing  bool   // a graceful close: input is dropped, it lingers once the output is sent
	closed   bool   // its socket is being closed (driver.closeFd)
	inData   bool   // OnData is running (see Loop.view)
	life     uint8  // lifeOpened: OnOpen ran (or is running); lifeDone: finished, OnClose ran
	shut     uint8  // CloseWrite's: 0, shutWanted or shutIssued
	bp       uint8  // backpressure: bpPaused, bpTold, bpRead
	reasonAt uint8  // where the reason it closes is (the first one set wins): see setReason
	fl       uint16 // the connection's other flags (cfLingering ...)
	// lentBid is 1 + the group buffer whose bytes the send in flight sends (Forward's lend);
	// 0: the send's buffer is a free-list buffer.
	lentBid uint16
	inN     int32 // see outN

	// Timeouts: to, the connection's timeouts (nil: none), shared with the loop's other
	// connections that have the same (Loop.timeouts); active, the loop time (ns) of the last
	// bytes received or sent; reqStart, when the request under way started (0: none); ractive,
	// the loop time of the last bytes received. One entry in the loop's deadlines serves all
	// three (dl, above), armed for the earliest deadline and re-armed when it comes early.
	to               *connTimeouts
	active, reqStart int64
	ractive          int64

	// The requests driver's state (and cfRecvLive, cfRecvStop).
	recv ringev.Request // the pending recv

	// The readiness driver's fd event is its own (connRdy.ev); see cfWBlocked and cfPeerShut.

	// rare is what few connections use, made when first needed (see connRare).
	rare *connRare

	// The small fields last, in one word: the padding each would take elsewhere is an idle
	// connection's bytes.
	slot int32  // its slot in the loop's connections (connTable)
	seq  uint32 // its sequence number there, shifted past tokBits as its tokens hold it: a slot's next connection has another
}

// The bits of Conn.fl.
const (
	cfLingering uint16 = 1 << iota // its writing side is shut down; input is dropped until the peer closes
	cfEOF                          // the peer shut down its side: it closes once the output is sent (unless cfHalfOpen)
	cfEOFTold                      // OnData was called with EOF true (its last call)
	cfHalfOpen                     // the peer's EOF ends the input only (WithHalfOpen)
	cfDrainWait                    // OnData left input while output was pending: served again once it drains
	cfHeld                         // PauseRead, or Forward's hold (connRare.fwdOn): not read until its end (apart from bp)
	cfRecvLive                     // requests: a recv request is pending
	cfRecvStop                     // requests: a Cancel was asked of the multishot recv
	cfWBlocked                     // readiness: the socket refused output, Write readiness is awaited
	cfPeerShut                     // the peer shut down its writing side, seen while the connection did not read
	cfDialed                       // a dial's connection: its Handler is the dial's (connRare.hs), not the engine's
)

// setFl sets the bits f of c.fl when on, else clears them.
func (c *Conn) setFl(f uint16, on bool) {
	if on {
		c.fl |= f
	} else {
		c.fl &^= f
	}
}

// handlers is the connection's Handler and its optional parts: the engine's, or for a dial's
// connection the one the dial named (kept in its rare part, so that the others hold no pointer
// for it).
func (c *Conn) handlers() *handlers { return c.handlersOn(c.l) }

// handlersOn is handlers with the connection's loop l at hand (OnData's calls: l in a register).
func (c *Conn) handlersOn(l *Loop) *handlers {
	if c.fl&cfDialed != 0 {
		return c.rare.hs
	}
	return l.hs
}

// connRare is the state of a connection that few use: a lingering close's, a half-closed
// peer's probe, RecvPerConn's receive buffer, the error it closes for, TLS. It is made when
// first needed and kept, so an idle connection that uses none holds only the pointer.
type connRare struct {
	rbuf      *[RecvBufferSize]byte // requests: RecvPerConn's receive buffer, while it has one
	hs        *handlers             // a dial's connection's Handler (Conn.handlers)
	lingerEnd int64                 // requests: loop time (ns) at which a lingering close ends
	lingerT   *ringev.Timer         // readiness: ends a lingering close
	shutProbe *ringev.Timer         // readiness: see probeShut
	// Splice's (the requests driver on uring): splOut moves this connection's input to another's
	// socket through the kernel, splIn another's input to this one's.
	splOut, splIn *splicer
	watch         *ringev.FdEvent // requests: a held connection's watch for Error (watchHeld)
	fwdOn         *Conn           // Forward's hold: the destination whose output it waits for
	dialing       *dialer         // Conn.Dial's dial under way: the connection is not read until it ends
	fwdTo         *Conn           // the connection of its loop its Forward wrote to last, counted in that one's fwdDst until it closes
	userHeld      bool            // during Forward's or Conn.Dial's hold: PauseRead's state, held at its end
	backlog       bool            // the input that waited through a pause or hold is served before it is read again
	fwdDst        int32           // open sources of its loop whose Forward (or Splice) writes to it (fwdTo): its output does not pause its reading
	fwdSrc        *Conn           // the last of them to become one (a pair's other side), which its close finds without a search (dropSources)
	afterPause    func()          // AfterPause's f, until no read is in flight
	leftKept      int             // what a piece's OnData left when the pieces stopped for the output (serveLeft)
	reason        error           // what OnClose is told, when Conn.reasonAt says it is here
	// tls is WithTLS's or DialTLS's state (tlsOf), else nil: pend is then ciphertext, the
	// handler's output is tls.plain.
	tls *tlsConn
}

// splicingOut is the splicer that moves the connection's input (Splice), or nil.
func (c *Conn) splicingOut() *splicer {
	if c.rare == nil {
		return nil
	}
	return c.rare.splOut
}

// splicingIn is the splicer that moves another connection's input to this one, or nil.
func (c *Conn) splicingIn() *splicer {
	if c.rare == nil {
		return nil
	}
	return c.rare.splIn
}

// tlsOf is the connection's TLS state (connRare.tls), nil without TLS.
func (c *Conn) tlsOf() *tlsConn {
	if c.rare == nil {
		return nil
	}
	return c.rare.tls
}

// tlsHeld reports whether the connection's TLS state holds its reading (tlsConn.held).
func (c *Conn) tlsHeld() bool {
	t := c.tlsOf()
	return t != nil && t.held
}

// x returns the connection's rare part, made when first asked.
func (c *Conn) x() *connRare {
	if c.rare == nil {
		c.rare = new(connRare)
	}
	return c.rare
}

// The values of Conn.st.
const (
	stOpen int32 = iota
	stWShut
	stGone
)

// gone reports whether writes are refused: the connection is closing or closed, or its writing
// side is (CloseWrite).
func (c *Conn) gone() bool { return c.st.Load() != stOpen }

// setGone marks the connection closing or closed: Write, Close and Abort fail from now on.
func (c *Conn) setGone() { c.st.Store(stGone) }

// afterCloseWriteClaim, when set (tests), is called by CloseWrite from another goroutine once it
// has taken the connection's writing side and queued the shutdown for the loop.
var afterCloseWriteClaim func(c *Conn)

// Loop is the loop that serves the connection.
func (c *Conn) Loop() *Loop { return c.l }

// Fd is the connection's socket, for socket options (setsockopt(2)); do not read, write or
// close it.
func (c *Conn) Fd() int { return int(c.fd) }

// Context returns what SetContext stored (nil at first).
func (c *Conn) Context() any { return c.ctx }

// SetContext stores v with the connection: the handler's state for it.
func (c *Conn) SetContext(v any) { c.ctx = v }

// LocalAddr is the connection's local address (getsockname(2), asked once), a *net.TCPAddr or
// *net.UnixAddr; safe from any goroutine, but nil from another goroutine than the loop's until
// the loop has asked (it has for a Conn that Engine.Dial returns), and when the socket cannot
// tell.
func (c *Conn) LocalAddr() net.Addr { return c.addr(0, unix.Getsockname) }

// RemoteAddr is the peer's address (getpeername(2), asked once), as LocalAddr. In OnClose it is
// still the peer's, after a reset too: for a handler with OnClose (CloseHandler) that has not
// asked for it, the loop asks the kernel before it closes the socket (getpeername(2), or
// getsockopt(2) SO_PEERNAME once a reset has closed the connection), one system call per
// connection; a handler that asks for it in OnOpen spares that.
func (c *Conn) RemoteAddr() net.Addr { return c.addr(1, unix.Getpeername) }

// connAddrs are a connection's local (0) and remote (1) addresses, each nil until asked. The
// loop replaces the whole (it alone writes them), so that other goroutines read them without a
// lock.
type connAddrs [2]net.Addr

// addr is LocalAddr's and RemoteAddr's work: address i if it was asked, else, on the loop's
// goroutine and while the socket is open, what get says (kept in c.addrs).
func (c *Conn) addr(i int, get func(int) (unix.Sockaddr, error)) net.Addr {
	old := c.addrs.Load()
	if old != nil && old[i] != nil {
		return old[i]
	}
	if !c.l.ev.Owned() || c.closed {
		return nil
	}
	sa, err := get(int(c.fd))
	if err != nil {
		return nil
	}
	return c.keepAddr(i, sa)
}

// keepAddr keeps sa as address i (in c.addrs) and returns it as a net.Addr, nil if it is no
// address of a stream socket.
func (c *Conn) keepAddr(i int, sa unix.Sockaddr) net.Addr {
	a := sockaddrToNet(sa, unix.SOCK_STREAM)
	if a == nil {
		return nil
	}
	var both connAddrs
	if old := c.addrs.Load(); old != nil {
		both = *old
	}
	both[i] = a
	c.addrs.Store(&both)
	return a
}

// keepPeer asks for the peer's address before the socket closes, unless it was asked already,
// so that RemoteAddr gives it in OnClose. getpeername(2) fails once a reset has closed the
// connection (ENOTCONN): SO_PEERNAME still tells then (peerName).
func (c *Conn) keepPeer() {
	if c.RemoteAddr() != nil {
		return
	}
	if sa, err := peerName(int(c.fd)); err == nil {
		c.keepAddr(1, sa)
	}
}

// input is the connection's unconsumed input.
func (c *Conn) input() []byte {
	if v := &c.l.view; c.inData && v.c == c {
		return v.b[v.off:]
	}
	return c.inBytes()
}

// inBuf holds a connection's unconsumed input (Conn.in) while it has some; the loop keeps the
// spares (Loop.ins).
type inBuf struct{ b []byte }

// inBytes is the connection's unconsumed input outside OnData (c.in's bytes), nil for none.
func (c *Conn) inBytes() []byte {
	if c.in == nil {
		return nil
	}
	return c.in.b
}

// keepInput sets the connection's unconsumed input to b, taking a holder (and a buffer) from
// the loop when it has none: b may be c.in's own bytes (a tail of them: copy moves it to the
// start).
func (c *Conn) keepInput(b []byte) {
	if c.in == nil {
		c.in = c.l.takeIn()
	}
	c.in.b = append(c.in.b[:0], b...)
}

// addInput appends b to the connection's unconsumed input.
func (c *Conn) addInput(b []byte) {
	if c.in == nil {
		c.in = c.l.takeIn()
	}
	c.in.b = append(c.in.b, b...)
}

// dropInput gives the connection's input holder and its buffer back to the loop: it has no
// unconsumed input left.
func (c *Conn) dropInput() {
	if h := c.in; h != nil {
		c.in = nil
		c.l.putIn(h)
	}
}

// Buffered is the number of input bytes received and not yet discarded (0 from another
// goroutine).
func (c *Conn) Buffered() int {
	if !c.l.ev.Owned() {
		return 0
	}
	return len(c.input())
}

// Peek returns the next n bytes of input without consuming them, or all of it for n <= 0.
// With fewer than n bytes buffered it returns those and io.ErrShortBuffer. The bytes are valid
// until OnData returns or the input is discarded; copy what must live longer.
func (c *Conn) Peek(n int) ([]byte, error) {
	if !c.l.ev.Owned() {
		return nil, errNotOwner("Peek")
	}
	b := c.input()
	if n <= 0 {
		return b, nil
	}
	if n > len(b) {
		return b, io.ErrShortBuffer
	}
	return b[:n], nil
}

// Next is Peek followed by Discard of what it returns.
func (c *Conn) Next(n int) ([]byte, error) {
	b, err := c.Peek(n)
	if len(b) > 0 {
		c.Discard(len(b))
	}
	return b, err
}

// Discard consumes the next n bytes of input (all of it if fewer are buffered) and returns how
// many it consumed.
func (c *Conn) Discard(n int) (int, error) {
	if !c.l.ev.Owned() {
		return 0, errNotOwner("Discard")
	}
	return c.discard(n), nil
}

// discard is Discard on the loop's goroutine.
func (c *Conn) discard(n int) int {
	if v := &c.l.view; c.inData && v.c == c {
		n = max(0, min(n, len(v.b)-v.off))
		v.off += n
		return n
	}
	in := c.inBytes()
	n = max(0, min(n, len(in)))
	if n == len(in) {
		c.dropInput()
		c.reqStart = 0
	} else {
		c.in.b = in[:copy(in, in[n:])]
	}
	c.chargeInput()
	return n
}

// chargeInput charges the loop with the change of the input the connection keeps (c.in) since it
// was last charged: the engine's buffered bytes (WithMaxBuffered) count it.
func (c *Conn) chargeInput() {
	if len(c.inBytes()) != int(c.inN) {
		c.chargeInputNow()
	}
}

// chargeInputNow is chargeInput's work when the input has changed.
func (c *Conn) chargeInputNow() {
	if !c.closed {
		n := len(c.inBytes())
		c.l.charge(n - int(c.inN))
		c.inN = int32(n) // at most MaxInput and a read
	}
}

// wrote counts n bytes added to the output (n < 0: sent or dropped) in what the connection and
// its loop hold.
func (c *Conn) wrote(n int) {
	c.outN.Add(int64(n))
	c.l.charge(n)
}

// fits tells whether n more bytes of output stay within the output cap (WithMaxPending).
func (c *Conn) fits(n int) bool { return c.outN.Load()+int64(n) <= c.l.maxPend }

// overflow is a write on the loop refused by the output cap: the connection is closed at once
// (OnClose's err is ErrOutputFull), and the write returns ErrOutputFull.
func (c *Conn) overflow(n int) error {
	c.l.e.logf("closing a connection whose output would pass %d bytes (%d pending, %d more written)", c.l.maxPend, c.outN.Load(), n)
	c.setGone()
	c.abort(ErrOutputFull)
	return ErrOutputFull
}

// Write appends p to the connection's output, in order, and returns len(p). Nothing is sent
// before the loop's turn ends: then every connection written to makes one send, however many
// writes it got. On the loop's goroutine it copies p into the output and allocates nothing
// once the connection's buffer has grown to its traffic; from another goroutine it copies p
// into the connection's inbox, and the loop takes it on its next turn (woken through the ring
// from another loop of the engine). Either way p may be reused at once. What one goroutine
// writes, posts (Loop.Post) and closes reaches the connection in the order of its calls; across
// goroutines the order is the loop's. A write from another goroutine joins the output before the
// loop's next write to the connection, unless a function that goroutine posted before it is
// still waiting to run: then it joins in its turn, after that function, and what a handler
// writes meanwhile comes first, even a write made on hearing (through a channel, say) that
// this Write had returned. To have a handler write after another goroutine's write, that
// goroutine hands over through the loop: a function it posts after its Write runs once the
// bytes are in the output. It returns 0 and
// net.ErrClosed once the connection is closing or closed (on the loop, a close another
// goroutine queued counts from when the loop runs it: see Loop.Post). A write that would take
// Pending past the output cap (WithMaxPending) is refused: it returns 0 and ErrOutputFull, and
// the connection is closed at once, its output dropped (OnClose's err is ErrOutputFull).
func (c *Conn) Write(p []byte) (int, error) {
	if !c.l.ev.Owned() || c.gone() {
		return c.writeElsewhere(p)
	}
	if !c.fits(len(p)) {
		return 0, c.overflow(len(p))
	}
	c.write(p)
	return len(p), nil
}

// write is Write on the loop's goroutine, of an open connection.
func (c *Conn) write(p []byte) {
	if c.asyncAt.Load() != 0 {
		p = c.writeAfterAsync(p)
	}
	if t := c.tlsOf(); t == nil {
		if inRoom(c.pend, p) {
			c.pend = c.pend[:len(c.pend)+len(p)] // appendOut's common case, inlined
		} else {
			c.pend = c.appendOut(c.pend, p)
		}
	} else {
		t.plain = c.appendOut(t.plain, p)
	}
	c.outN.Add(int64(len(p))) // wrote(len(p)), by hand: the call would not be inlined
	c.l.charge(len(p))
	if !c.dirty {
		c.l.markDirty(c)
	}
}

// appendOut appends p to out, the handler's output (c.pend, or a TLS connection's plaintext).
func (c *Conn) appendOut(out, p []byte) []byte {
	if out == nil {
		out = c.l.bufs.get()
	}
	if inRoom(out, p) {
		return out[:len(out)+len(p)]
	}
	return append(out, p...)
}

// inRoom reports whether p was appended to out's free room (AvailableBuffer, Buffers): it is
// in place, out[len(out):len(out)+len(p)].
func inRoom(out, p []byte) bool {
	n := len(out)
	return len(p) > 0 && n < cap(out) && &p[0] == &out[:n+1][n] && len(p) <= cap(out)-n
}

// outRoom is the free room of the handler's output (Buffers, AvailableBuffer).
func (c *Conn) outRoom() []byte {
	if t := c.tlsOf(); t != nil {
		if t.plain == nil {
			t.plain = c.l.bufs.get()
		}
		return t.plain[len(t.plain):len(t.plain)]
	}
	if c.pend == nil {
		c.pend = c.l.bufs.get()
	}
	return c.pend[len(c.pend):len(c.pend)]
}

// Buffers returns, in one call, what Peek(-1) and AvailableBuffer return: the input, and an
// empty buffer over the output's free room. A handler that parses requests and appends its
// replies takes both, parses in, appends to out, and ends with Commit (ringev's RESP and HTTP
// do): two calls per request where Peek, AvailableBuffer, Write and Discard make four. From
// another goroutine both are nil; on a closed connection out is.
func (c *Conn) Buffers() (in, out []byte) {
	if !c.l.ev.Owned() {
		return nil, nil
	}
	in = c.input()
	if c.writeShut() {
		return in, nil
	}
	return in, c.outRoom()
}

// Commit is Discard(consumed) followed by Write(out), in one call: out appended to Buffers' out
// is written without a copy. It returns an error wrapping ringev.ErrNotOwner from another
// goroutine (nothing is done); net.ErrClosed, with the input discarded, when the connection is
// closing or closed (Close, Abort, or its end), even with an empty out, and when out is not
// empty and its writing side is closed (CloseWrite); ErrOutputFull, with the input discarded,
// when out would take Pending past the output cap (the connection is closed, as Write's doc
// says).
func (c *Conn) Commit(consumed int, out []byte) error {
	if !c.l.ev.Owned() {
		return errNotOwner("Commit")
	}
	if v := &c.l.view; c.inData && v.c == c && uint(consumed) <= uint(len(v.b)-v.off) {
		v.off += consumed // discard's common case, inlined
	} else if consumed > 0 {
		c.discard(consumed)
	}
	if len(out) == 0 {
		if c.st.Load() == stGone {
			return net.ErrClosed
		}
		return nil
	}
	if c.writeShut() {
		return net.ErrClosed
	}
	if !c.fits(len(out)) {
		return c.overflow(len(out))
	}
	c.write(out)
	return nil
}

// AvailableBuffer returns an empty buffer whose capacity is the free room of the connection's
// output, as bufio.Writer's does: append to it and pass the result to Write at once, and the
// bytes are written without a copy (a protocol's encoder appends its replies there). From
// another goroutine, and on a closed connection, it returns nil (append then allocates, and
// Write copies or fails as usual).
func (c *Conn) AvailableBuffer() []byte {
	if !c.l.ev.Owned() || c.writeShut() {
		return nil
	}
	return c.outRoom()
}

// WriteString is Write of s (without a copy of s of its own).
func (c *Conn) WriteString(s string) (int, error) {
	return c.Write(unsafe.Slice(unsafe.StringData(s), len(s)))
}

// writeElsewhere is Write from another goroutine, or on a connection a close has taken.
func (c *Conn) writeElsewhere(p []byte) (int, error) {
	if !c.l.ev.Owned() {
		return c.writeAsync(p)
	}
	if c.writeShut() {
		return 0, net.ErrClosed
	}
	if !c.fits(len(p)) {
		return 0, c.overflow(len(p))
	}
	c.write(p)
	return len(p), nil
}

// writeShut reports, on the loop, whether writes fail: the connection is closing or closed, or
// its writing side is shut down. A Close, Abort or CloseWrite from another goroutine takes the
// connection at once (gone), but runs on the loop behind what was queued before it (posted
// functions, writes): until then a write on the loop still joins the output, so that a posted
// function's write queued before the close is sent before it, as the writes queued after the
// function are; failing it would leave a hole in the stream.
func (c *Conn) writeShut() bool { return c.gone() && (c.closing || c.closed || c.shut != 0) }

// writeAsync is Write from another goroutine: p joins the connection's entry of the loop's
// (asyncAt) and the loop is woken. Past the
// output cap, the write is refused and an abort is queued for the loop.
func (c *Conn) writeAsync(p []byte) (int, error) {
	l := c.l
	l.mu.Lock()
	if l.stopped.Load() || c.gone() {
		l.mu.Unlock()
		return 0, net.ErrClosed
	}
	if len(p) == 0 {
		l.mu.Unlock()
		return 0, nil
	}
	if !c.fits(len(p)) {
		if !c.st.CompareAndSwap(stOpen, stGone) {
			l.mu.Unlock()
			return 0, net.ErrClosed
		}
		l.queueClose(closeReq{c: c, abort: true, reason: ErrOutputFull})
		l.wakeLocked()
		return 0, ErrOutputFull
	}
	if l.funcs > 0 { // behind the functions queued before it
		if n := len(l.inF); n > 0 && l.inF[n-1] == nil && l.inQ[len(l.inQ)-1].c == c {
			e := &l.inQ[len(l.inQ)-1] // the write before it, not taken yet
			e.b = append(e.b, p...)
		} else {
			l.inF = append(l.inF, nil)
			l.inQ = append(l.inQ, asyncOut{c: c, b: append(l.spareW(), p...)})
			l.funcs++
		}
		c.outN.Add(int64(len(p)))
		l.bufAsync.Add(int64(len(p)))
		l.wakeLocked()
		return len(p), nil
	}
	i := c.asyncAt.Load()
	if i == 0 {
		l.inW = append(l.inW, asyncOut{c: c, b: l.spareW()})
		i = int32(len(l.inW))
		c.asyncAt.Store(i)
	}
	e := &l.inW[i-1]
	e.b = append(e.b, p...)
	c.outN.Add(int64(len(p)))
	l.bufAsync.Add(int64(len(p)))
	l.wakeLocked()
	return len(p), nil
}

// writeAfterAsync is Write's first step on the loop while bytes other goroutines wrote wait
// (asyncAt): they join the output first, so that the order is the order of the writes. A p in the
// output's free room (AvailableBuffer) is copied first: those bytes would overwrite it.
func (c *Conn) writeAfterAsync(p []byte) []byte {
	out := c.pend
	if t := c.tlsOf(); t != nil {
		out = t.plain
	}
	if n := len(out); len(p) > 0 && n < cap(out) && &p[0] == &out[:n+1][n] {
		p = bytes.Clone(p)
	}
	c.takeAsyncNow()
	return p
}

// takeAsyncNow is takeAsync on the loop outside drain: before a Write or a Close on the loop,
// the bytes other goroutines wrote before it join the output.
func (c *Conn) takeAsyncNow() {
	l := c.l
	l.mu.Lock()
	n := 0
	if i := c.asyncAt.Load(); i > 0 {
		e := &l.inW[i-1]
		n, e.b = c.takeAsync(e.b) // the entry stays, emptied: drain passes over it
	}
	l.mu.Unlock()
	l.charge(n)
}

// takeQueued is a write from another goroutine queued behind posted functions (writeAsync),
// run on the loop in its turn: b joins the output as an entry's bytes do. No entry of the
// connection's is waiting then: none is made while functions are queued.
func (c *Conn) takeQueued(b []byte) {
	l := c.l
	l.mu.Lock()
	n, spare := c.takeAsync(b)
	l.putSpareW(spare)
	l.mu.Unlock()
	l.charge(n)
}

// takeAsync moves b, what other goroutines wrote (an entry of the loop's, under l.mu), into
// the output; on a closing or closed connection it drops it. It returns the bytes moved, which
// the caller charges to the loop once l.mu is unlocked (charge may post to the loops), and a
// buffer for the loop's spares: b emptied, or the output's empty one when b became the output.
func (c *Conn) takeAsync(b []byte) (n int, spare []byte) {
	c.asyncAt.Store(0)
	n = len(b)
	if n == 0 {
		return 0, b // taken already by takeAsyncNow
	}
	c.l.bufAsync.Add(-int64(n))
	if c.closing || c.closed {
		c.outN.Add(-int64(n))
		return 0, b[:0]
	}
	if t := c.tlsOf(); t != nil {
		t.plain = c.appendOut(t.plain, b)
		spare = b[:0]
	} else if len(c.pend) == 0 {
		c.pend, spare = b, c.pend[:0]
	} else {
		c.pend = append(c.pend, b...)
		spare = b[:0]
	}
	if !c.dirty {
		c.l.markDirty(c)
	}
	return n, spare
}

// Pending is the number of output bytes written and not yet sent, including those other
// goroutines wrote that the loop has not taken yet. Safe from any goroutine; 0 once the
// connection has closed. Past the write limit (WriteLimit) the connection is no longer read
// (unless SetPauseOnOutput(false)); a write that would take it past the output cap
// (WithMaxPending) is refused.
func (c *Conn) Pending() int { return int(c.outN.Load()) }

// pending is the output the loop holds (what Pending counts but the bytes not yet taken from
// other goroutines): a TLS connection's plaintext not yet sealed included.
func (c *Conn) pending() int {
	if t := c.tlsOf(); t != nil {
		return len(c.pend) + int(c.outLen) + len(t.plain)
	}
	return len(c.pend) + int(c.outLen)
}

// unsent is the output not yet sent: pending's, and the bytes a Splice into the connection holds
// in its pipe (a close or CloseWrite waits for them too).
func (c *Conn) unsent() int { return c.pending() + c.unsentSpliced() }

// WriteLimit is the pending output, in bytes, past which the connection is no longer read
// (WithWriteLimit), unless SetPauseOnOutput(false) was asked. A handler that answers requests
// stops answering once Pending and what it has yet to write pass it, and leaves the other
// requests in the input: OnData is given them again once the output has drained to half of
// it, without waiting for more bytes.
//
// That pause suits a connection whose output answers its input. It does not suit one whose
// output comes from elsewhere (another goroutine, a broadcast, a download) while its peer reads
// only once it has written, or needs its input read to go on: past the limit the connection is
// not read, the peer blocks writing to it and does not read either, and neither moves again.
// Such a connection is made not to pause (SetPauseOnOutput(false), or WithPauseOnOutput(false)
// for every connection): it is read whatever its output, as a net.Conn's reader is not stopped
// by a writer blocked on the same connection, while the output cap (WithMaxPending), MaxInput
// and the engine's budget (WithMaxBuffered) still bound what it holds, and its handler is still
// told (BackpressureHandler) so that a writer from elsewhere can wait for the drain. A
// connection Forward writes to does not pause for its output either (Forward holds the source
// instead).
func (c *Conn) WriteLimit() int { return c.l.limit }

// Close closes the connection gracefully: no more input is handed to OnData, the output
// written before it is sent, then the connection's writing side is shut down and it lingers
// until the peer closes (at most a second), so that the peer reads every byte and then EOF;
// then OnClose (err nil): up to a second after the output is sent. It returns net.ErrClosed if the connection is closing or closed
// already. From another goroutine it is queued after the writes made before it. A peer that
// does not read keeps the output from being sent: an idle timeout (WithIdleTimeout) ends that,
// and Abort does at once.
func (c *Conn) Close() error {
	if !c.l.ev.Owned() {
		return c.closeAsync(false)
	}
	if !c.claim() {
		return net.ErrClosed
	}
	c.closeWith(nil, true)
	return nil
}

// Abort closes the connection at once: output not yet sent is dropped and the peer gets a
// reset (SO_LINGER 0); then OnClose (err nil). It returns net.ErrClosed if the connection is
// closing or closed already.
func (c *Conn) Abort() error {
	if !c.l.ev.Owned() {
		return c.closeAsync(true)
	}
	if !c.claim() {
		return net.ErrClosed
	}
	c.abort(nil)
	return nil
}

// closeAsync is Close or Abort from another goroutine: queued for the loop.
func (c *Conn) closeAsync(abort bool) error {
	l := c.l
	l.mu.Lock()
	if l.stopped.Load() || !c.claim() {
		l.mu.Unlock()
		return net.ErrClosed
	}
	l.queueClose(closeReq{c: c, abort: abort})
	l.wakeLocked()
	return nil
}

// claim takes the right to close the connection (Close, Abort, a timeout's or a shutdown's
// close): it is open, or its writing side alone is closed (CloseWrite), and no close took it
// before.
func (c *Conn) claim() bool {
	return c.st.CompareAndSwap(stOpen, stGone) || c.st.CompareAndSwap(stWShut, stGone)
}

// CloseWrite shuts down the connection's writing side, as net.TCPConn's does, and keeps
// reading: the output written before it is sent, then the peer reads EOF (a FIN, shutdown(2)
// with SHUT_WR). Later writes fail with net.ErrClosed; Close and Abort still work. OnData is
// still called with what the peer sends; the connection closes, and OnClose is told io.EOF,
// once the peer has shut down its side too (at once if it had: a half-open connection, see
// WithHalfOpen). Safe from any goroutine: from another one it is queued after that goroutine's
// writes. It returns net.ErrClosed if the connection is closing or closed, or CloseWrite was
// called already.
func (c *Conn) CloseWrite() error {
	if !c.l.ev.Owned() {
		return c.closeWriteAsync()
	}
	if !c.st.CompareAndSwap(stOpen, stWShut) {
		return net.ErrClosed
	}
	c.startShut()
	return nil
}

// closeWriteAsync is CloseWrite from another goroutine: the writing side is taken and the
// shutdown queued for the loop in one step under l.mu, as other goroutines' writes and posted
// functions are queued, so that each of them is either before it (sent first) or after it
// (refused).
func (c *Conn) closeWriteAsync() error {
	l := c.l
	l.mu.Lock()
	if l.stopped.Load() || !c.st.CompareAndSwap(stOpen, stWShut) {
		l.mu.Unlock()
		return net.ErrClosed
	}
	l.postLocked(c.startShut)
	if afterCloseWriteClaim != nil {
		afterCloseWriteClaim(c)
	}
	return nil
}

// startShut is CloseWrite on the loop: the turn's end sends the output, then shuts down the
// writing side (outputChanged).
func (c *Conn) startShut() {
	if c.closing || c.closed || c.shut != 0 {
		return
	}
	if c.asyncAt.Load() != 0 {
		c.takeAsyncNow() // what other goroutines wrote before it is sent
	}
	c.shut = shutWanted
	if !c.dirty {
		c.l.markDirty(c)
	}
}

// EOF reports whether the peer has shut down its writing side: no more input will come. OnData
// is called with EOF true when input is left over then (again, like any leftover, after a
// pause of reading: the write limit's, PauseRead), and on a half-open connection (WithHalfOpen)
// always, once at least: that call is how its handler learns of it (Forward and Splice then
// return io.EOF). False from another goroutine.
func (c *Conn) EOF() bool {
	return c.l.ev.Owned() && c.atEOF()
}

// atEOF is EOF on c's loop.
func (c *Conn) atEOF() bool {
	l := c.l
	return c.fl&cfEOF != 0 && !(c.inData && l.view.c == c && l.view.part) // (a piece: more input waits behind it, serveLeft)
}

// SetHalfOpen sets whether the peer's EOF ends the connection once its output is sent (false,
// the default: see WithHalfOpen) or the input alone (true). Errors: ringev.ErrNotOwner
// (wrapped) from another goroutine, net.ErrClosed.
func (c *Conn) SetHalfOpen(on bool) error {
	if err := c.usable("SetHalfOpen"); err != nil {
		return err
	}
	c.setFl(cfHalfOpen, on)
	if c.fl&cfEOF != 0 && !on {
		c.outputChanged()
	}
	return nil
}

// The bits of Conn.life.
const (
	lifeOpened uint8 = 1 << iota // OnOpen ran (or is running)
	lifeDone                     // finished: OnClose ran
)

// The values of Conn.shut (CloseWrite's).
const (
	shutWanted uint8 = 1 + iota // the writing side is shut down once the output is sent
	shutIssued                  // shutdown(SHUT_WR) is done
)

// Where a connection's reason to close is (Conn.reasonAt): none set yet; nil; io.EOF (the
// peer's: the common one, kept without a rare part); connRare.reason.
const (
	reasonUnset uint8 = iota
	reasonNil
	reasonEOF
	reasonRare
)

// setReason records why the connection closes, unless a reason was recorded already: only one
// other than nil and io.EOF takes a rare part.
func (c *Conn) setReason(err error) {
	if c.reasonAt != reasonUnset {
		return
	}
	switch err {
	case nil:
		c.reasonAt = reasonNil
	case io.EOF:
		c.reasonAt = reasonEOF
	default:
		c.x().reason, c.reasonAt = err, reasonRare
	}
}

// closeReason is what setReason recorded (nil when nothing was).
func (c *Conn) closeReason() error {
	switch c.reasonAt {
	case reasonEOF:
		return io.EOF
	case reasonRare:
		return c.rare.reason
	}
	return nil
}

// closeWith starts a graceful close for reason; asked: Close (or a queued Close) set gone
// already, else closeWith does unless the connection is closing already.
func (c *Conn) closeWith(reason error, asked bool) {
	if !asked && !c.claim() {
		return
	}
	if c.closing || c.closed {
		return
	}
	if c.asyncAt.Load() != 0 {
		c.takeAsyncNow() // what other goroutines wrote before the close is sent
	}
	c.setReason(reason)
	c.closing, c.reqStart = true, 0 // the input left stays, for OnClose
	c.l.drv.update(c)
	if !c.dirty {
		c.l.markDirty(c) // the turn's end sends the output, then lingers
	}
}

// abort closes the socket at once, with a reset, dropping the output not yet sent.
func (c *Conn) abort(reason error) {
	if c.closed {
		return
	}
	c.setReason(reason)
	unix.SetsockoptLinger(int(c.fd), unix.SOL_SOCKET, unix.SO_LINGER, &unix.Linger{Onoff: 1, Linger: 0})
	c.end(nil)
}

// end closes the socket (driver.closeFd), which finishes the connection once its I/O is done.
func (c *Conn) end(reason error) {
	if c.closed {
		return
	}
	if c.handlers().close != nil && c.life&lifeOpened != 0 {
		c.keepPeer() // for RemoteAddr in OnClose
	}
	c.closed = true
	c.setGone()
	if c.asked.Load()&fwdWatched != 0 {
		c.wakeForwarders() // their next Forward fails (net.ErrClosed)
	}
	if x := c.rare; x != nil && (x.fwdOn != nil || x.fwdTo != nil || x.fwdDst > 0) {
		c.fwdGone()
	}
	c.setReason(reason)
	c.l.dropDeadline(c)
	if c.rare != nil {
		c.endSplices()
		if d := c.rare.dialing; d != nil {
			c.l.ev.Post(d.forGone)
		}
	}
	if c.asyncAt.Load() != 0 {
		c.takeAsyncNow() // dropped: the output other goroutines wrote counts no more
	}
	c.wrote(-(len(c.pend) + int(c.outLen))) // the send in flight, if any, counts no more either
	if c.lentBid != 0 {
		c.l.charge(int(c.outLen)) // (a lent send was not charged: see lender)
	}
	c.l.charge(-int(c.inN))
	c.inN = 0
	c.l.bufs.put(c.pend)
	c.pend = nil
	if t := c.tlsOf(); t != nil {
		t.end()
	}
	c.l.drv.closeFd(c) // the input left stays, for OnClose (finished)
}

// peerEOF is the peer's end of file: the handler is told if it must be (serveLeft), the
// replies to what came before it are still sent, then the connection closes (io.EOF), unless
// it is half-open and its writing side is not shut down yet.
func (c *Conn) peerEOF() {
	if t := c.tlsOf(); t != nil && t.peerClosed() {
		return // the handshake under way takes it (see tlsConn.peerClosed)
	}
	c.fl |= cfEOF
	if c.fl&cfHalfOpen == 0 || c.shut != 0 {
		c.setReason(c.eofReason())
	}
	c.serveLeft()
	if c.closed {
		return
	}
	if c.doneAtEOF(c.unsent()) && c.endAtEOF() {
		return
	}
	c.l.drv.update(c)
}

// endAtEOF closes a connection that doneAtEOF found done and reports whether it did: not
// when other goroutines wrote to it before it could refuse their writes (the bytes wait in the
// loop's inbox, or behind functions posted before them): those are taken into the output
// (the inbox's at once, the others in their turn), to be sent before it closes, as the bytes
// its handler wrote before the EOF are. Its writes are refused from the check on (gone), under
// l.mu, where other goroutines' writes are queued.
func (c *Conn) endAtEOF() bool {
	l := c.l
	l.mu.Lock()
	if c.asyncAt.Load() != 0 || c.outN.Load() > int64(c.pending()) {
		l.mu.Unlock()
		if c.asyncAt.Load() != 0 {
			c.takeAsyncNow()
		}
		return false
	}
	reason := c.eofReason()
	c.setGone()
	l.mu.Unlock()
	c.setReason(reason)
	if t := c.tlsOf(); t != nil && t.notifyAtEOF() {
		return false // its close_notify is sent first: the send's end closes it
	}
	c.end(nil)
	return true
}

// eofReason is the reason to close that the peer's EOF gives: io.EOF, or nil when a Close or
// Abort from another goroutine has claimed the connection already and waits in the loop's
// queue. The call that returned nil first decides OnClose's err, as if the loop had run it
// before it saw the EOF. (An abort by the output cap waiting so reports nil too.)
func (c *Conn) eofReason() error {
	if c.st.Load() == stGone {
		return nil
	}
	return io.EOF
}

// doneAtEOF reports whether a connection at the peer's EOF with p bytes of output pending has
// nothing left to do but close: its output is sent, its handler was told of the EOF if it had
// to be and has not paused reading with input left, and it is not half-open (or its writing
// side is closing too).
func (c *Conn) doneAtEOF(p int) bool {
	switch {
	case p > 0:
		return false
	case c.closing:
		return true
	case c.fl&cfEOFTold == 0 && (c.fl&cfHalfOpen != 0 || len(c.inBytes()) > 0), c.fl&cfHeld != 0 && len(c.inBytes()) > 0:
		return false // the handler has yet to see the EOF, or paused reading with input left
	case c.tlsOf() != nil && c.tlsOf().phase == tlsHandoff:
		return false // a handshake under way has the EOF: its end serves what came before it
	}
	return c.fl&cfHalfOpen == 0 || c.shut != 0
}

// serveLeft is OnData for what waited (a pause, PauseRead, the peer's EOF): the input left
// over, so that no byte received goes unseen, or, at the EOF of a half-open connection, its
// one call with EOF true and nothing to read. Nothing while reading is paused or held, or the
// connection closes.
//
// What waited is given in pieces, each at most leftPiece bytes more than the last OnData left
// unconsumed, and none once OnData pauses or holds reading again or the connection closes: a
// pause can leave megabytes waiting (a multishot recv's completions in flight), and a handler
// that passes its input on (a broadcast, a proxy) must be able to pause between pieces, as it
// can between reads. EOF is false until the last piece. A piece whose OnData took nothing
// while output is pending ends them too, until the output drains (cfDrainWait), as any OnData
// that leaves its input then: a handler that stops for its output is not handed ever larger
// pieces in one turn. (One that took some and left the rest is given the next piece at once:
// the rest is most likely a request the piece's end cut.) The pieces are views of c.in from
// where the last one's OnData stopped: the input is not moved between them (dropConsumed).
func (c *Conn) serveLeft() {
	start, kept := 0, 0 // where the input not yet consumed starts in c.in; what the last piece left
	if x := c.rare; x != nil && x.leftKept > 0 {
		kept, x.leftKept = x.leftKept, 0
	}
	pieces := false
	for c.bp < bpPaused && c.fl&cfHeld == 0 && !c.closing && !c.closed {
		n := len(c.inBytes()) - start
		if end := start + kept + leftPiece; n > kept+leftPiece {
			pieces = true
			from := start
			if start = c.servePiece(from, end); c.fl&cfDrainWait != 0 {
				c.x().leftKept = end - start
				break
			}
			kept = end - start
			continue
		}
		if n > 0 || c.fl&cfEOF != 0 && c.fl&cfHalfOpen != 0 && c.fl&cfEOFTold == 0 {
			c.setFl(cfEOFTold, c.fl&cfEOF != 0)
			c.serve(c.inBytes()[start:])
		}
		c.servedBacklog()
		return
	}
	c.dropConsumed(start)
	if c.fl&cfDrainWait != 0 {
		c.servedBacklog() // OnData stopped for the output, not holding reading: more input may help it
	}
	if pieces {
		c.readStopped() // an AfterPause asked within a piece: the input is all of it now
	}
}

// servePiece calls OnData with c.in[from:to] as its input, c.in[to:] kept unseen behind it
// (serveLeft), and returns where the input OnData left starts in c.in. c.in is not changed.
func (c *Conn) servePiece(from, to int) int {
	l := c.l
	outer := l.view
	l.view, c.inData = inView{c: c, b: c.in.b[:to], off: from, part: true}, true
	c.handlers().h.OnData(c)
	c.inData = false
	off := l.view.off
	l.view = outer
	c.setFl(cfDrainWait, off == from && c.pending() > 0)
	c.leftInput(off > from)
	return off
}

// dropConsumed drops the first n bytes of c.in, what the pieces' OnData consumed (serveLeft).
// The rest is moved to the front only when it is no longer than n, so that moving costs at most
// what was consumed; else c.in starts past them, in the same buffer.
func (c *Conn) dropConsumed(n int) {
	in := c.inBytes()
	switch rest := len(in) - n; {
	case n == 0:
		return
	case rest == 0:
		c.dropInput()
		c.reqStart = 0
	case rest <= n:
		c.in.b = in[:copy(in, in[n:])]
	default:
		c.in.b = in[n:]
	}
	c.chargeInput()
}

// leftPiece is how much more input that waited (serveLeft) one OnData is given than the last
// left unconsumed, in bytes: a recv buffer's worth.
const leftPiece = RecvLargeBufferSize

// deliver hands bytes received (data, valid until it returns) to OnData, after the input left
// over; input is dropped once the connection is closing.
func (c *Conn) deliver(data []byte) {
	if c.servesNow() {
		c.gotInput()
		c.serve(data) // arrived's usual case, without its call
		return
	}
	if c.closing || c.fl&cfLingering != 0 || c.closed {
		if c.fl&cfLingering == 0 && !c.closed && c.tlsHandshaking() {
			c.tlsOf().recv(data) // the handshake a Close waits for (tlsConn.seal)
		}
		return
	}
	c.gotInput()
	if s := c.splicingOut(); s != nil {
		s.dst.forwarded(data, c.l) // what the recv brings once Splice was asked goes on, in order
		return
	}
	if t := c.tlsOf(); t != nil {
		t.recv(data) // ciphertext: its plaintext comes back through tlsPlain
		return
	}
	c.arrived(data)
}

// servesNow reports whether bytes received go to OnData at once, as they are (deliver's usual
// case): the connection is open and not lingering, has no input left, is neither paused nor
// held, and neither splices its input nor is TLS.
func (c *Conn) servesNow() bool {
	return !c.closing && !c.closed && c.fl&(cfLingering|cfHeld) == 0 && len(c.inBytes()) == 0 && c.bp < bpPaused &&
		(c.rare == nil || c.rare.splOut == nil && c.rare.tls == nil)
}

// arrived is what deliver and tlsPlain do with the bytes (plaintext) that arrived: served at
// once when nothing waits before them, else kept after what waits.
func (c *Conn) arrived(data []byte) {
	if len(c.inBytes()) == 0 && c.bp < bpPaused && c.fl&cfHeld == 0 {
		c.serve(data)
		return
	}
	c.addInput(data)
	c.received()
}

// received serves c.in, which has grown (deliver, or the readiness driver's read into it).
func (c *Conn) received() {
	c.chargeInput()
	if x := c.rare; x != nil {
		x.leftKept = 0 // the input is served whole, or waits for a pause's end (serveLeft)
	}
	if c.bp < bpPaused && c.fl&cfHeld == 0 {
		c.serve(c.inBytes())
		c.servedBacklog()
	}
	// Else it is kept, however much: the loop read it (a recv in flight as reading stopped,
	// bounded by the receive group), not the handler, which is not closed for it.
}

// keepBacklog notes, as a pause or a hold ends, that the input that waited is to be served
// before the connection is read again: reading at once would bring more than the pieces it is
// served in take (serveLeft) when the handler holds reading again between them (Forward), and
// its input would grow at each hold.
func (c *Conn) keepBacklog() {
	if len(c.inBytes()) > 0 {
		c.x().backlog = true
	} else if c.rare != nil {
		c.rare.backlog = false // the pieces took it all before the hold came back
	}
}

// servedBacklog follows an OnData given the whole of the input that waited (or one that stopped
// for its output: cfDrainWait): reading resumes.
func (c *Conn) servedBacklog() {
	if x := c.rare; x != nil && x.backlog {
		x.backlog = false
		if !c.closed {
			c.l.drv.update(c)
		}
	}
}

// backlogged reports whether the input that waited through a pause or hold is still to be
// served (keepBacklog): the drivers do not read the connection until it is.
func (c *Conn) backlogged() bool { return c.rare != nil && c.rare.backlog }

// serve calls OnData with data (c.in, part of it, or bytes received and not yet copied) as its
// input and keeps what it leaves in c.in; the request deadline starts when a request is left
// unfinished.
func (c *Conn) serve(data []byte) {
	l := c.l
	var off int
	if v := &l.view; v.c == nil {
		h := c.handlersOn(l).h
		v.c, v.b, v.off, v.part = c, data, 0, false
		c.inData = true
		h.OnData(c)
		c.inData = false
		off, v.c = v.off, nil // (b is left: it is read only with c)
	} else {
		off = c.serveInside(data)
	}
	c.served(data, off)
}

// served is serve's end, once OnData consumed off bytes of data: what it left is kept.
func (c *Conn) served(data []byte, off int) {
	if off == len(data) {
		if c.in != nil { // (else the input charged, inN, is what is left to take off)
			c.dropInput()
		}
		c.reqStart = 0
		if c.inN != 0 {
			c.chargeInputNow()
		}
		return
	}
	rest := data[off:]
	consumed := off > 0
	if len(rest) > MaxInput && !c.closing && !c.closed {
		c.dropInput()
		c.l.e.logf("closing a connection with %d bytes of input its handler did not consume", len(rest))
		c.abort(ErrInputTooLarge)
		return
	}
	c.keepInput(rest)
	c.chargeInput()
	// A handler may have stopped for the output (WriteLimit's doc) below the limit, where no
	// backpressure pause brings it back: it is given the input again once the output drains.
	c.setFl(cfDrainWait, c.pending() > 0)
	c.leftInput(consumed)
}

// serveInside is serve's OnData when it runs inside another connection's OnData: that one's
// view is kept, and restored. It returns how much of data OnData consumed.
func (c *Conn) serveInside(data []byte) int {
	l := c.l
	outer := l.view
	l.view, c.inData = inView{c: c, b: data}, true
	c.handlers().h.OnData(c)
	c.inData = false
	off := l.view.off
	l.view = outer
	return off
}

// leftInput follows an OnData that left input unconsumed (consumed: it took some): the request
// deadline starts.
func (c *Conn) leftInput(consumed bool) {
	if t := c.to; t != nil && t.reqTO > 0 && (consumed || c.reqStart == 0) && !c.closing && !c.closed {
		c.reqStart = c.l.now() // precise: the request deadline is the one a client can exploit
		c.armTimer(c.reqStart + int64(t.reqTO))
	}
}

// sentSome follows output the kernel took: the end of backpressure, and what outputChanged does.
// (Sending is activity for the idle timeout from the moment the output goes to the kernel:
// flush, and the readiness driver's writes, note the time.)
func (c *Conn) sentSome() {
	if c.asked.Load()&fwdWatched != 0 && c.outN.Load() <= int64(c.l.limit/2) {
		c.wakeForwarders()
	}
	if c.bp >= bpTold {
		c.maybeResume()
	} else if c.fl&cfDrainWait != 0 && c.pending() <= c.l.limit/2 {
		c.fl &^= cfDrainWait
		c.serveLeft()
	}
	if c.outputWork() {
		c.outputChanged()
	}
}

// sentWork reports whether sentSome may have work to do: a forwarder to wake, a pause or an
// OnData that stopped for the output to end, or what outputWork says. (Inlined: the send's
// completion calls sentSome only then.)
func (c *Conn) sentWork() bool {
	return c.asked.Load()&fwdWatched != 0 || c.bp >= bpTold || c.fl&cfDrainWait != 0 || c.outputWork()
}

// maybeResume ends backpressure once the output has drained to half the write limit: reading
// resumes, the handler is told, and the input that waited is served. A connection read past
// the limit (bpTold) is told alone.
func (c *Conn) maybeResume() {
	if c.pending() > c.l.limit/2 || c.tlsHeld() {
		return
	}
	if c.bp < bpPaused {
		c.bp &^= bpTold
		if bp := c.handlers().bp; bp != nil {
			bp.OnBackpressure(c, false)
		}
		return
	}
	c.bp &^= bpPaused
	c.keepBacklog()
	c.l.drv.update(c)
	if bp := c.handlers().bp; bp != nil {
		bp.OnBackpressure(c, false)
	}
	c.serveLeft() // the input that waited
}

// The bits of Conn.bp, the connection's backpressure. bpPaused and bpTold are never both set,
// and they are its high bits, so that the tests of the request path are each one compare of
// the byte: not paused (c.bp < bpPaused), neither (c.bp < bpTold), either (c.bp >= bpTold).
const (
	bpRead   uint8 = 1    // SetPauseOnOutput(false): its output does not pause its reading
	bpTold   uint8 = 0x40 // past the write limit and told so (OnBackpressure), but read all the same (bpRead)
	bpPaused uint8 = 0x80 // past the write limit: not read until the output drains to half of it (or a TLS handshake's hold: tlsConn.held)
)

// SetPauseOnOutput sets whether the connection's output past the write limit pauses its
// reading (true, the default: see WriteLimit) or not (false: WithPauseOnOutput). A connection
// that does not pause is read whatever its output, as a net.Conn is read by one goroutine
// while another is blocked writing to it: for a connection whose output does not answer its
// input (a stream written from another goroutine, a broadcast, a download) to a peer that
// reads only once it has written. Its handler is still told (BackpressureHandler: true past the
// limit, false once the output has drained to half of it, but reading goes on), and the output
// cap (WithMaxPending), MaxInput and the engine's budget (WithMaxBuffered) still bound what it
// holds. Set to false while paused, reading resumes at once (OnData is called, in a turn of its
// own, with the input that waited), and the handler is told false once the output drains, as
// it would have been; set to true past the limit, reading pauses until then. Errors:
// ringev.ErrNotOwner (wrapped) from another goroutine, net.ErrClosed.
func (c *Conn) SetPauseOnOutput(on bool) error {
	if err := c.usable("SetPauseOnOutput"); err != nil {
		return err
	}
	switch {
	case on && c.bp&bpRead != 0:
		c.bp &^= bpRead
		if c.bp&bpTold != 0 {
			c.bp = c.bp&^bpTold | bpPaused
			c.l.drv.update(c)
		}
	case !on && c.bp&bpRead == 0:
		c.bp |= bpRead
		if c.bp >= bpPaused && !c.tlsHeld() {
			c.bp = c.bp&^bpPaused | bpTold
			c.keepBacklog()
			c.l.drv.update(c)
			if len(c.inBytes()) > 0 || c.fl&cfEOF != 0 {
				c.l.ev.Post(c.serveWaiting)
			}
		}
	}
	return nil
}

// PauseRead stops reading the connection until ResumeRead: no recv is left pending (uring),
// no read interest is left (epoll, poll), and OnData is not called, even for the input already
// buffered, which stays (bytes a recv in flight brings are buffered too: a loop's receive
// group at most, and the connection is not closed for them, even past MaxInput). After
// ResumeRead the connection is not read again until the input that waited has been given to
// OnData (in pieces, see Handler). The
// peer's further bytes wait in the kernel, whose receive window then holds the peer back: a
// proxy pauses the side whose destination does not keep up. A paused connection still learns
// of a reset (or another socket error): it closes, and OnClose's err wraps the errno
// (unix.ECONNRESET), as a net.Conn's next call would say; the peer's half-close leaves its bytes
// and its EOF in the kernel, for ResumeRead (a reset after it is seen once reading resumes, or
// at the next write). It is apart from the write limit's pause (BackpressureHandler) and from
// Forward's hold: the end of one does not end another. From another goroutine
// it is queued for the loop (after that goroutine's earlier writes, as Loop.Post), and a hold
// is state, not a queue: of the PauseRead and ResumeRead calls the loop has not taken yet, the
// last one counts, and they hold one entry of the loop's inbox, so that goroutines calling
// them in a tight loop cost the loop one change per turn at most. It returns net.ErrClosed once
// the connection is closed (from another goroutine: once its loop has ended).
func (c *Conn) PauseRead() error { return c.holdRead(true) }

// ResumeRead ends PauseRead: reading resumes (unless the write limit's pause holds it) and
// OnData is called, in a turn of its own, with the input that was buffered, if any, without
// waiting for more bytes. Safe from any goroutine, with PauseRead's errors.
func (c *Conn) ResumeRead() error { return c.holdRead(false) }

// AfterPause calls f on the loop once reading is paused (PauseRead) and no read of the socket
// is in flight: every byte received by then is in the input (Peek), and the peer's next bytes
// wait in the kernel until ResumeRead. A caller that reads the socket itself meanwhile (from a
// dup(2) of Fd) sees the stream from where the input ends. That is at once, before AfterPause
// returns, unless a recv is pending (the requests driver's, cancelled by PauseRead): then f runs
// when its last completion has run; or unless OnData was given a piece of the input that waited
// (Handler's doc): then f runs once that OnData has returned, with the rest in the input. f is dropped, not called, if reading resumes or the
// connection closes first; a later AfterPause replaces it. Over TLS the input is plaintext and
// the socket's bytes are not: do not read the socket of a TLS connection. Errors:
// ringev.ErrNotOwner (wrapped) from another goroutine, net.ErrClosed, and one saying reading is
// not paused.
func (c *Conn) AfterPause(f func()) error {
	if err := c.usable("AfterPause"); err != nil {
		return err
	}
	if x := c.rare; c.fl&cfHeld == 0 || x != nil && (x.fwdOn != nil || x.dialing != nil) && !x.userHeld {
		return errors.New("server: AfterPause: reading is not paused (PauseRead)")
	}
	if v := &c.l.view; c.fl&cfRecvLive != 0 || c.inData && v.c == c && v.part {
		c.x().afterPause = f // after the recv's last completion, or the OnData of a piece (serveLeft)
		return nil
	}
	if c.rare != nil {
		c.rare.afterPause = nil
	}
	f()
	return nil
}

// readStopped runs AfterPause's f once the connection's recv has ended while reading is held.
func (c *Conn) readStopped() {
	if x := c.rare; x != nil && x.afterPause != nil && c.fl&cfRecvLive == 0 {
		f := x.afterPause
		x.afterPause = nil
		if c.fl&cfHeld != 0 && !c.closing && !c.closed {
			f()
		}
	}
}

// holdRead is PauseRead (on) and ResumeRead.
func (c *Conn) holdRead(on bool) error {
	if !c.l.ev.Owned() {
		return c.holdAsync(on)
	}
	if c.closed {
		return net.ErrClosed
	}
	c.setHeld(on)
	return nil
}

// holdAsync is holdRead from another goroutine. The hold asked is state, not a queue: one
// applyHold waits in the inbox (as a posted function, in order with them and with writes),
// and applies the hold asked last, so that goroutines toggling it cannot grow the inbox; while
// one waits, a call only changes the word (c.asked), without the loop's lock.
func (c *Conn) holdAsync(on bool) error {
	want := uint32(0)
	if on {
		want = holdWant
	}
	for {
		old := c.asked.Load()
		if old&holdQueued == 0 {
			break
		}
		if c.asked.CompareAndSwap(old, old&^holdWant|want) {
			if c.l.stopped.Load() {
				return net.ErrClosed // the loop's end may run the applyHold queued, but it has ended
			}
			return nil
		}
	}
	l := c.l
	l.mu.Lock()
	if l.stopped.Load() {
		l.mu.Unlock()
		return net.ErrClosed
	}
	for {
		old := c.asked.Load()
		if !c.asked.CompareAndSwap(old, old&^holdWant|holdQueued|want) {
			continue
		}
		if old&holdQueued != 0 {
			l.mu.Unlock() // another call queued it meanwhile
			return nil
		}
		break
	}
	l.inF = append(l.inF, c.applyHold)
	l.funcs++
	l.wakeLocked()
	return nil
}

// The bits of Conn.asked.
const (
	holdWant   = 1 << iota // PauseRead (else ResumeRead)
	holdQueued             // applyHold is in the inbox
	fwdWatched             // a source Forward holds waits for this connection's output (waitFor)
)

// applyHold is holdAsync's entry of the inbox, run on the loop: the hold asked last.
func (c *Conn) applyHold() {
	c.setHeld(c.asked.And(^uint32(holdQueued))&holdWant != 0)
}

// setHeld is holdRead on the loop: the driver follows, and a resume serves the buffered input
// in a turn of its own (a handler that resumes another connection is not re-entered).
func (c *Conn) setHeld(on bool) {
	if c.closed {
		return
	}
	if x := c.rare; x != nil && (x.fwdOn != nil || x.dialing != nil) {
		x.userHeld = on // Forward's or Conn.Dial's hold holds reading until its end
		return
	}
	c.hold(on)
}

// hold holds reading (on) or ends that: the driver follows, and the end serves the buffered
// input in a turn of its own (a handler that resumes another connection is not re-entered).
func (c *Conn) hold(on bool) {
	if (c.fl&cfHeld != 0) == on {
		return
	}
	c.setFl(cfHeld, on)
	if !on && c.rare != nil {
		c.rare.afterPause = nil
	}
	if !on {
		c.keepBacklog()
	}
	c.l.drv.update(c)
	if !on && (len(c.inBytes()) > 0 || c.fl&cfEOF != 0) {
		c.l.ev.Post(c.serveWaiting)
	}
}

// heldError is what a connection that does not read (paused, held) does on Error: the
// socket's pending error (SO_ERROR), if any, ends it, and heldError returns true; OnClose's err
// wraps the errno (unix.ECONNRESET for a reset). It returns false for the peer's half-close or
// hang-up without an error.
func (c *Conn) heldError() bool {
	v, err := unix.GetsockoptInt(int(c.fd), unix.SOL_SOCKET, unix.SO_ERROR)
	switch {
	case err != nil:
		c.end(fmt.Errorf("server: getsockopt(SO_ERROR) of fd %d: %w", c.fd, err))
	case v != 0:
		c.end(fmt.Errorf("server: fd %d failed while not reading: %w", c.fd, unix.Errno(v)))
	default:
		return false
	}
	return true
}

// serveWaiting serves the input that waited through a PauseRead, unless reading is held again
// or the connection is closing.
func (c *Conn) serveWaiting() {
	c.l.clockSet = false // a posted function runs in a turn of its own (see turnTime)
	c.serveLeft()
	if c.fl&cfEOF != 0 && !c.closed {
		c.outputChanged()
	}
}

// outputWork reports whether the output's state may ask for work (outputChanged) after output
// was written or sent: a connection with nothing left to send closes (at end of file), starts
// its lingering close (closing) or shuts down its writing side (CloseWrite); one past the write
// limit pauses. The common case, none of these, costs a few loads: it is inlined, and so is
// its caller's `if c.outputWork() { c.outputChanged() }` (a function that made the call too
// would not be). A paused connection with none of the others has nothing to do (outputChanged
// would pass over it): it is not asked.
func (c *Conn) outputWork() bool {
	return c.fl&cfEOF != 0 || c.closing || c.shut != 0 || len(c.pend)+int(c.outLen) > c.l.limit
}

// outputChanged is the work outputWork reports there may be.
func (c *Conn) outputChanged() {
	if c.closed {
		return
	}
	p := c.unsent()
	switch {
	case c.fl&cfEOF != 0 && c.doneAtEOF(p) && c.endAtEOF():
		return
	case c.closing && p == 0 && c.fl&cfLingering == 0:
		c.l.drv.linger(c)
		return
	case c.shut == shutWanted && p == 0 && !c.tlsHandshaking(): // (TLS: after close_notify)
		c.shut = shutIssued
		if err := unix.Shutdown(int(c.fd), unix.SHUT_WR); err != nil {
			c.end(fmt.Errorf("server: shutdown(SHUT_WR) of fd %d: %w", c.fd, err))
			return
		}
	}
	if c.bp < bpTold && c.pending() > c.l.limit {
		c.passedLimit()
	}
}

// passedLimit is the start of backpressure: reading pauses (not for a connection that does not
// pause for its output: bpRead, it is marked told, bpTold) and the handler is told. Not for a
// connection whose output Forward fills (fedByForward): that output is not what its input
// makes, so not reading it holds nothing back, and its peer may read that output only once it
// has written (an echo upstream, a server that answers a stream): not reading it then stops
// both for good. Forward holds the sources that fill it instead. A turn's end that finds the
// output past the write limit calls it (outputChanged), and so does a send that finds Pending
// was past it while reading was not paused (reqSent, connRdy.write): bytes other goroutines
// wrote, which the loop took only once a send had completed. So whoever saw Pending past the
// limit, on any goroutine, is told when it drains (maybeResume). When the output has drained to
// half the limit already, the handler is told both at once and reading goes on. Not during a
// TLS handshake: the output waits for its end, which needs the input (a pause would hold both);
// the turn's end after it finds the records past the limit.
//
//go:noinline
func (c *Conn) passedLimit() {
	if c.closing || c.closed || c.tlsHandshaking() || c.fedByForward() {
		return
	}
	bp := c.handlers().bp
	if c.pending() <= c.l.limit/2 && !c.tlsHeld() {
		if bp != nil {
			bp.OnBackpressure(c, true)
			if !c.closed {
				bp.OnBackpressure(c, false)
			}
		}
		return
	}
	if c.bp&bpRead != 0 {
		c.bp |= bpTold // read all the same (SetPauseOnOutput)
	} else {
		c.bp |= bpPaused
		c.l.drv.update(c)
	}
	if bp != nil {
		bp.OnBackpressure(c, true)
	}
}

// SetIdleTimeout sets the connection's idle timeout (see WithIdleTimeout) from now (the loop's
// time of the turn, read once in a turn, as the connection's activity is: the clock's read is
// shared by the turn's connections); 0 removes it. Errors: ringev.ErrNotOwner (wrapped) from
// another goroutine, net.ErrClosed.
func (c *Conn) SetIdleTimeout(d time.Duration) error {
	if err := c.usable("SetIdleTimeout"); err != nil {
		return err
	}
	t := c.timeouts()
	c.to = c.l.timeouts(c.to, max(d, 0), t.reqTO, t.rIdle)
	if d > 0 {
		c.active = c.l.turnTime()
		c.armTimer(c.active + int64(d))
	}
	return nil
}

// gotInput notes that bytes were received, for the idle timeouts (inlined: a connection without
// them, a request timeout alone included, pays a compare or two and reads no clock).
func (c *Conn) gotInput() {
	if c.to.idles() {
		c.noteInput()
	}
}

// noteInput is gotInput's work (not inlined, so that gotInput is).
//
//go:noinline
func (c *Conn) noteInput() {
	c.active = c.l.turnTime()
	c.ractive = c.active
}

// SetReadIdleTimeout sets the connection's read idle timeout (see WithReadIdleTimeout) from
// now; 0 removes it. Errors as SetIdleTimeout's.
func (c *Conn) SetReadIdleTimeout(d time.Duration) error {
	if err := c.usable("SetReadIdleTimeout"); err != nil {
		return err
	}
	t := c.timeouts()
	c.to = c.l.timeouts(c.to, t.idle, t.reqTO, max(d, 0))
	if d > 0 {
		c.ractive = c.l.now()
		c.armTimer(c.ractive + int64(d))
	}
	return nil
}

// SetRequestTimeout sets the connection's request timeout (see WithRequestTimeout); 0 removes
// it and ends the request under way. A request under way keeps its start; input left buffered
// with none under way (the next of pipelined requests, outside OnData) starts one now. Errors
// as SetIdleTimeout's.
func (c *Conn) SetRequestTimeout(d time.Duration) error {
	if err := c.usable("SetRequestTimeout"); err != nil {
		return err
	}
	t := c.timeouts()
	c.to = c.l.timeouts(c.to, t.idle, max(d, 0), t.rIdle)
	c.requestTimeoutSet(d)
	return nil
}

// requestTimeoutSet follows a change of the request timeout to d: 0 ends the request under way;
// input left with none under way, outside OnData (which starts one as it returns), starts one
// now; the request's deadline is armed.
func (c *Conn) requestTimeoutSet(d time.Duration) {
	switch {
	case d <= 0:
		c.reqStart = 0
		return
	case c.reqStart == 0 && !c.inData && !c.closing && len(c.inBytes()) > 0:
		c.reqStart = c.l.now()
	}
	if c.reqStart > 0 {
		c.armTimer(c.reqStart + int64(d))
	}
}

// SetTimeouts sets the idle timeout (from now) and the request timeout together, as
// SetIdleTimeout(idle) and SetRequestTimeout(request) would (a request under way, or input
// left, as there), in one call (a service that switches between the two on every request
// pays one lookup); 0 removes either. Errors as SetIdleTimeout's.
func (c *Conn) SetTimeouts(idle, request time.Duration) error {
	l := c.l
	if !l.ev.Owned() || c.closed {
		return c.usable("SetTimeouts")
	}
	idle, request = max(idle, 0), max(request, 0)
	// (usable, timeouts and requestTimeoutSet's common cases written out: a service may call
	// this twice a request, to take the idle timeout off while it answers and put it back)
	to := c.to
	var rIdle time.Duration
	if to != nil {
		rIdle = to.rIdle
	}
	switch {
	case idle|request|rIdle == 0:
		if to != nil {
			c.to = nil
		}
	case to != nil && to.idle == idle && to.reqTO == request:
	case l.lastTO != nil && *l.lastTO == connTimeouts{idle, request, rIdle}:
		c.to = l.lastTO
	default:
		c.to = l.timeouts(to, idle, request, rIdle)
	}
	if idle > 0 {
		c.active = l.turnTime()
		if at := c.active + int64(idle); !l.dls.armedBy(c, at) {
			l.armDeadline(c, at) // (armTimer's: c is open)
		}
	}
	if request > 0 {
		c.requestTimeoutSet(request)
	} else {
		c.reqStart = 0
	}
	return nil
}

// usable returns the error of method what, which belongs to the loop's goroutine, called from
// another or on a closed connection; else nil.
func (c *Conn) usable(what string) error {
	if !c.l.ev.Owned() {
		return errNotOwner(what)
	}
	if c.closed {
		return net.ErrClosed
	}
	return nil
}

// armTimer makes the connection's deadline come at loop time at (ns) or before (an entry of
// the loop's deadlines).
func (c *Conn) armTimer(at int64) {
	if c.closed {
		return
	}
	c.l.armDeadline(c, at)
}

// onTimer checks the deadlines: one that has passed closes the connection (gracefully when
// nothing waits to be sent, after the TimeoutHandler's last answer, else at once: the peer
// does not take its output), else its entry is re-armed for the earlier one. The loop's
// deadlines call it, the connection's entry taken out.
func (c *Conn) onTimer() {
	c.l.clockSet = false // a timer runs in a turn of its own (see turnTime)
	if c.closed || c.fl&cfLingering != 0 {
		return
	}
	now := c.l.now()
	next := int64(math.MaxInt64)
	var reason error
	to := c.timeouts()
	if to.reqTO > 0 && c.reqStart > 0 {
		if at := c.reqStart + int64(to.reqTO); now >= at {
			reason = ErrRequestTimeout
		} else {
			next = at
		}
	}
	for _, t := range [2]struct {
		d  time.Duration
		at int64
	}{{to.idle, c.active}, {to.rIdle, c.ractive}} {
		if t.d > 0 && reason == nil {
			if at := t.at + int64(t.d); now >= at {
				reason = ErrIdleTimeout
			} else {
				next = min(next, at)
			}
		}
	}
	switch {
	case reason != nil && (c.closing || c.pending() > 0):
		c.setGone()
		c.abort(reason)
	case reason != nil:
		if th := c.handlers().to; th != nil && c.life&lifeOpened != 0 {
			c.setReason(reason) // kept if OnTimeout closes the connection itself
			th.OnTimeout(c, reason)
		}
		c.closeWith(reason, false)
	case next != math.MaxInt64:
		c.armTimer(next)
	}
}
