//go:build unix

package server

import (
	"errors"
	"time"

	"github.com/ringev/ringev"
	"golang.org/x/sys/unix"
)

// The receive modes of the requests driver (WithRecv).
const (
	// RecvMultishot: one multishot recv per connection into the loop's buffer group
	// (IORING_RECV_MULTISHOT, Linux 6.0, into a provided buffer ring,
	// IORING_REGISTER_PBUF_RING, 5.19). An idle connection owns no buffer, and a busy one makes
	// no SQE per recv. The default (see DefaultRecv).
	RecvMultishot = "multishot"
	// RecvPerConn: one recv at a time per connection, into a RecvBufferSize buffer the
	// connection owns while the recv waits (always, for an idle connection).
	RecvPerConn = "per-conn"
	// DefaultRecv is the requests driver's receive mode when WithRecv names none:
	// RecvMultishot. A loop whose kernel lacks the multishot recv (Loop.CheckOp) or refuses
	// its provided buffer ring (NewBufferGroup: a kernel before 5.19, or an error such as
	// ENOMEM) receives RecvPerConn instead and says so through WithLogf; WithRecv(RecvMultishot)
	// named outright makes Listen fail there with that error (naming the feature where one is
	// missing).
	DefaultRecv = RecvMultishot
)

// Sizes of the requests driver's receive buffers.
const (
	// RecvBufferSize is the size of one receive buffer, in bytes (4 KiB): each buffer of the
	// group in RecvMultishot mode where the group's buffers are not consumed incrementally
	// (the emulation on epoll and poll, a kernel before 6.12), each connection's buffer in
	// RecvPerConn mode.
	RecvBufferSize = 4 << 10
	// RecvGroupBuffers is the number of buffers in each loop's group of RecvBufferSize
	// buffers (512: 2 MiB per loop). A buffer is held only from a completion to the end of its
	// callback, so the group runs dry only when more completions are queued than it has
	// buffers; then a recv gets ENOBUFS, loses nothing, and is re-armed by the loop.
	RecvGroupBuffers = 512
	// RecvLargeBufferSize is the size of each buffer of the group in RecvMultishot mode where
	// the kernel consumes the group's buffers incrementally (IOU_PBUF_RING_INC, Linux 6.12;
	// ringev.BufferGroup.Incremental), in bytes (64 KiB): small messages share a buffer, each
	// completion its slice of it, while a stream fills up to 64 KiB per completion (a sixteenth
	// of the completions, callbacks and copies that 4 KiB buffers cost per byte).
	RecvLargeBufferSize = 64 << 10
	// RecvLargeGroupBuffers is the number of buffers in each loop's group of
	// RecvLargeBufferSize buffers (32: 2 MiB per loop, as RecvGroupBuffers' group).
	RecvLargeGroupBuffers = 32
)

// Tokens of a connection's requests (Completion.Token): the kind in the low tokBits bits,
// the connection's sequence number (its low 32-tokBits bits, which Conn.seq holds shifted into
// place) above them, and its slot (Conn.slot) in the high 32 bits.
const (
	tokRecv uint64 = iota + 1
	tokSend
	tokClose

	tokBits = 2
)

// drainGrace is how long a drain lets an idle connection's requests already received (whose
// completion the loop has not run yet) be served before it starts its lingering close.
const drainGrace = 10 * time.Millisecond

// The free lists' bounds: what a loop keeps for reuse is at most freeBufs buffers of up to
// freeBufCap bytes (16 MiB) and freeRecvBufs RecvPerConn buffers (4 MiB).
const (
	freeBufs     = 256
	freeBufCap   = 64 << 10
	freeRecvBufs = 1024
)

// recvMultishotCheck is loop.CheckOp(ringev.OpRecvMultishot); tests replace it to play a kernel
// without the multishot recv.
var recvMultishotCheck = func(loop *ringev.Loop) error { return loop.CheckOp(ringev.OpRecvMultishot) }

// groupIncremental reports whether loop's buffer groups are consumed incrementally
// (ringev.BufferGroup.Incremental: IOU_PBUF_RING_INC, Linux 6.12, on uring), by making and
// closing a group of one small buffer; tests replace it to play a kernel without it.
var groupIncremental = func(loop *ringev.Loop) bool {
	g, err := loop.NewBufferGroup(1, 64)
	if err != nil {
		return false
	}
	inc := g.Incremental()
	g.Close()
	return inc
}

// newRecvGroup makes loop l's buffer group for RecvMultishot: RecvLargeGroupBuffers buffers of
// RecvLargeBufferSize where they are consumed incrementally, else RecvGroupBuffers of
// RecvBufferSize (a large buffer would then hold a whole 64 KiB for each small message); on
// uring the fallback is said through WithLogf. Errors: NewBufferGroup's.
func newRecvGroup(l *Loop) (*ringev.BufferGroup, error) {
	if groupIncremental(l.ev) {
		g, err := l.ev.NewBufferGroup(RecvLargeGroupBuffers, RecvLargeBufferSize)
		if err == nil && g.Incremental() {
			return g, nil
		}
		if err == nil {
			g.Close()
		}
	} else if l.ev.Backend() == "uring" {
		l.e.logf("incremental buffer consumption (IOU_PBUF_RING_INC, Linux 6.12) unavailable: receiving into %d-byte buffers", RecvBufferSize)
	}
	return l.ev.NewBufferGroup(RecvGroupBuffers, RecvBufferSize)
}

// The connections' requests driver (APIRequests, the default): a multishot accept on the
// listening socket; per connection a multishot recv into the loop's buffer group (or, with
// RecvPerConn or where the kernel lacks the multishot recv, one recv at a time into a buffer of
// the connection's own); the output of a turn sent with one Send (the loop finishes short
// sends; output written meanwhile waits for the turn after its completion); CloseFd to close.
// On the uring backend these are SQEs that go to the kernel together in the loop's one
// io_uring_enter(2) per turn; on epoll and poll the loop emulates them with readiness and
// non-blocking syscalls.
//
// No allocation per request in steady state: the loop's connections' requests share one
// Callback per kind (onRecv, onSent, onIO) and are told apart by their token (the
// connection's slot and the kind);
// output buffers and leftover input come from the loop's free list. With the multishot recv
// an idle connection owns no buffer: the kernel picks one of the group's when bytes arrive,
// OnData sees them there, and the buffer goes back when it returns (what OnData leaves is
// copied).
type connReqs struct {
	l       *Loop
	lfd     int // the listening socket; -1 once closed (or none)
	onAcc   ringev.Callback
	onConn  ringev.Callback // onIO, made once
	onRecv  ringev.Callback // onRecvs, made once
	onSent  ringev.Callback // onSends, made once
	onLst   ringev.Callback
	lclosed bool // the listener's CloseFd has completed (or there was none)
	group   *ringev.BufferGroup
	rfree   []*[RecvBufferSize]byte // RecvPerConn receive buffers
}

// newConnReqs makes loop l's requests driver with its receive mode (WithRecv): the buffer
// group for RecvMultishot, or, when RecvMultishot was not named and the kernel lacks it,
// RecvPerConn (said through WithLogf). Errors: with RecvMultishot named, the loop's from
// CheckOp (naming the feature, wrapping unix.EOPNOTSUPP) or NewBufferGroup.
func newConnReqs(l *Loop) (*connReqs, error) {
	d := &connReqs{l: l, lfd: -1, lclosed: true}
	d.onAcc, d.onLst, d.onConn = d.accepted, d.listenerClosed, d.onIO()
	d.onRecv, d.onSent = d.onRecvs(), d.onSends()
	if mode := l.e.o.recv; mode != RecvPerConn {
		err := recvMultishotCheck(l.ev)
		if err == nil {
			d.group, err = newRecvGroup(l)
		}
		switch {
		case err == nil:
			l.lend.start(d)
		case mode == "":
			l.e.logf("multishot recv unavailable, receiving %s instead: %v", RecvPerConn, err)
		default:
			return nil, err
		}
	}
	return d, nil
}

// recvMode is RecvMultishot with a buffer group, else RecvPerConn.
func (d *connReqs) recvMode() string {
	if d.group != nil {
		return RecvMultishot
	}
	return RecvPerConn
}

func (d *connReqs) start(lfd int) error {
	if lfd < 0 {
		return nil
	}
	d.lfd, d.lclosed = lfd, false
	if err := d.armAccept(); err != nil {
		unix.Close(lfd)
		d.lfd, d.lclosed = -1, true
		return err
	}
	return nil
}

// armAccept submits the multishot accept.
func (d *connReqs) armAccept() error {
	_, err := d.l.ev.AcceptMultishot(d.lfd, sockFlags, d.onAcc, 0)
	return err
}

// accepted is the multishot accept's callback: once per connection, and once more when it
// ends (ECANCELED when the listener is closed; EMFILE and the like when fds or memory ran out:
// re-armed after acceptPause, the connections waiting in the backlog meanwhile).
func (d *connReqs) accepted(x *ringev.Completion) {
	if x.Err == nil {
		d.l.accepted(x.N)
		return
	}
	if x.More || d.lfd < 0 || d.l.draining {
		return
	}
	d.l.acceptFailed(x.Err)
	d.l.ev.AddTimer(acceptPause, func(*ringev.Timer) {
		if d.lfd >= 0 && !d.l.draining {
			if err := d.armAccept(); err != nil {
				d.l.e.logf("accept: %v", err)
			}
		}
	})
}

func (d *connReqs) add(c *Conn) {
	unix.SetsockoptInt(int(c.fd), unix.IPPROTO_TCP, unix.TCP_NODELAY, 1) // fails harmlessly on a unix socket
	d.update(c)
}

// tok is the token of c's request of kind k.
func (c *Conn) tok(k uint64) uint64 {
	return uint64(c.slot)<<32 | uint64(c.seq) | k
}

// onIO is the callback of the loop's connections' requests but their recvs and sends (onRecv,
// onSent): the token names the connection (its slot and sequence number) and the kind.
// CloseFd's completion comes after every other of the fd's, but where CloseFd itself fails
// (closeFd) the socket is closed and the connection finished at once, and a recv still
// pending may complete later, when the slot may be another's: such a completion is dropped
// (its group buffer given back), as a finished connection would. A closure over d, its body
// inside it: a method value (d.onIO) would add a call to every completion.
func (d *connReqs) onIO() ringev.Callback {
	return func(x *ringev.Completion) {
		c := d.conn(x.Token)
		if c == nil {
			x.ReleaseBuffer()
			return
		}
		switch x.Token & (1<<tokBits - 1) {
		case tokRecv:
			c.reqReceived(x)
		case tokSend:
			c.reqSent(x)
		case tokClose:
			c.reqClosed()
		}
	}
}

// onRecvs is the callback of the connections' recvs, and onSends of their sends: onIO's for
// one kind, without its test of the kind (every receive and send of the loop).
//
//go:noinline
func (d *connReqs) onRecvs() ringev.Callback {
	return func(x *ringev.Completion) {
		if c := d.conn(x.Token); c != nil {
			c.reqReceived(x)
		} else {
			x.ReleaseBuffer()
		}
	}
}

//go:noinline
func (d *connReqs) onSends() ringev.Callback {
	return func(x *ringev.Completion) {
		if c := d.conn(x.Token); c != nil {
			c.reqSent(x)
		}
	}
}

// conn returns the connection a completion's token names, nil when it has finished (its slot
// is empty or another's).
func (d *connReqs) conn(tok uint64) *Conn {
	c := d.l.conns.all[tok>>32]
	if c == nil || c.seq != uint32(tok)&^(1<<tokBits-1) {
		return nil
	}
	return c
}

// reqReceived handles a recv completion: bytes (dropped while closing or lingering), the
// peer's end of file, an error, or the end of a multishot recv cancelled for backpressure.
// Bytes that nothing waits before (servesNow, outside another connection's OnData) go to
// OnData here, from the completion's buffer (serve's usual case, without its call; served
// keeps what OnData left); others go through deliver.
func (c *Conn) reqReceived(x *ringev.Completion) {
	if !x.More {
		c.fl &^= cfRecvLive | cfRecvStop
	}
	switch {
	case x.Err == nil && x.N > 0:
		lend := &c.l.lend
		lend.x = x // a Forward may lend its buffer (forward)
		if v := &c.l.view; v.c == nil && c.servesNow() {
			if c.to.idles() { // gotInput's, without noteInput's call
				c.active = c.l.turnTime()
				c.ractive = c.active
			}
			// deliver's usual case, serve's, without their calls
			h := c.handlersOn(c.l).h
			v.c, v.b, v.off, v.part = c, x.Buf, 0, false
			c.inData = true
			h.OnData(c)
			c.inData = false
			off := v.off
			v.c = nil // (b is left: it is read only with c)
			if off != len(x.Buf) || c.in != nil || c.inN != 0 {
				c.served(x.Buf, off)
			} else {
				c.reqStart = 0
			}
		} else {
			c.deliver(x.Buf)
		}
		if lend.x != nil {
			x.ReleaseBuffer() // OnData keeps no reference; what it left was copied
		}
		lend.x = nil // (lent: the send's completion gives it back)
		if c.fl&(cfRecvLive|cfHeld) == cfRecvLive && c.bp < bpPaused && !c.closed && c.splicingOut() == nil {
			return // still receiving, as wanted: what changed the want (PauseRead, a close, Splice, the write limit) updated it
		}
	case x.Err == nil: // N 0: the peer closed its side
		if c.fl&cfLingering != 0 || c.closed {
			c.end(nil)
			return
		}
		c.peerEOF() // the replies to what came before the FIN are still sent
		c.readStopped()
		return
	case errors.Is(x.Err, unix.ENOBUFS): // the group ran dry; the loop re-arms the recv
		c.readStopped() // unless reading is held: then this was the recv's last completion
		return
	case errors.Is(x.Err, unix.ECANCELED) && !c.closed:
		// the recv was stopped for backpressure or PauseRead: update re-arms it when wanted
	default: // ETIME (the linger's deadline), a reset, ECANCELED by CloseFd
		c.end(x.Err)
		return
	}
	c.l.drv.update(c)
	if c.fl&cfRecvLive == 0 && c.rare != nil && c.rare.afterPause != nil {
		c.readStopped()
	}
}

// reqSent handles a send's completion: all of its buffer (x.Buf, c.outLen bytes) was sent
// (the loop finishes short sends), or an error (a reset, ECANCELED by CloseFd).
func (c *Conn) reqSent(x *ringev.Completion) {
	past := false  // Pending was past the write limit until now
	if !c.closed { // (else end counted it out already)
		n := int64(c.outLen)
		past = c.outN.Add(-n)+n > int64(c.l.limit) // wrote(-c.outLen), by hand (hot path)
		if c.lentBid == 0 {
			c.l.charge(-int(c.outLen)) // (a lent send is not charged: see lender)
		}
	}
	if bid := int(c.lentBid) - 1; bid < 0 {
		c.l.bufs.put(x.Buf) // the kernel is done with it
	} else {
		c.lentBid = 0
		c.l.lend.back(bid) // the group's buffer goes back
	}
	c.outLen = 0
	if x.Err != nil {
		c.end(x.Err)
		return
	}
	if !c.closed {
		if len(c.pend) > 0 && !c.dirty {
			c.l.markDirty(c) // what was written meanwhile goes at this turn's end
		}
		if s := c.splicingIn(); s != nil {
			s.pumpOut(false) // a splice's bytes that waited for this output
		}
		if past && c.bp < bpTold {
			if c.passedLimit(); c.closed {
				return // its handler closed it
			}
		}
		if c.sentWork() {
			c.sentSome()
		}
	}
}

// reqClosed is CloseFd's completion: every request of the connection has ended.
func (c *Conn) reqClosed() {
	d := c.l.drv.(*connReqs)
	if x := c.rare; x != nil {
		if x.rbuf != nil && c.fl&cfRecvLive == 0 && len(d.rfree) < freeRecvBufs {
			d.rfree = append(d.rfree, x.rbuf)
		}
		x.rbuf = nil
	}
	c.l.finished(c)
}

// update keeps a recv pending while input is wanted (not while paused or held, not at end of
// file), and cancels the multishot recv when it is not (and the recv into the connection's
// own buffer when reading is held: PauseRead leaves no recv pending). While reading is held it
// watches the socket for Error (watchHeld), so that a reset is seen without a recv.
func (d *connReqs) update(c *Conn) {
	if c.closed || c.fl&cfEOF != 0 {
		d.watchHeld(c, false)
		return
	}
	splicing := false
	if s := c.splicingOut(); s != nil {
		s.spliceUpdate() // (which ends it when the connection closes)
		splicing = c.splicingOut() != nil
	}
	want := c.fl&cfLingering != 0 || c.bp < bpPaused && c.fl&cfHeld == 0 && !splicing && !c.backlogged()
	switch {
	case want && c.fl&cfRecvLive == 0:
		d.armRecv(c)
	case !want && c.fl&cfRecvLive != 0 && c.fl&cfRecvStop == 0 && (d.group != nil || c.fl&cfHeld != 0 || splicing):
		c.fl |= cfRecvStop
		c.recv.Cancel()
	}
	d.watchHeld(c, c.fl&cfHeld != 0 && !want && !c.closing && c.fl&cfPeerShut == 0)
}

// watchHeld starts (on) or stops watching a held connection's socket for Error (an fd event:
// POLLERR, POLLHUP, POLLRDHUP), as the readiness driver always does: with no recv pending, a
// reset would otherwise go unseen until ResumeRead. (The write limit's pause needs none: its
// connection has a send under way, which a reset fails.) A watch that cannot be made is said
// through WithLogf; the reset is then seen once reading resumes.
func (d *connReqs) watchHeld(c *Conn, on bool) {
	switch {
	case on && (c.rare == nil || c.rare.watch == nil):
		ev, err := d.l.ev.AddFd(int(c.fd), ringev.Error, d.heldEvent)
		if err != nil {
			d.l.e.logf("watching a paused connection for errors: %v", err)
			return
		}
		ev.Data = c
		c.x().watch = ev
	case !on && c.rare != nil && c.rare.watch != nil:
		c.rare.watch.Close()
		c.rare.watch = nil
	}
}

// heldEvent is a held connection's Error: a reset ends it (heldError); the peer's half-close
// is noted (cfPeerShut) and the watch stops, since POLLRDHUP stays raised: the input and the EOF
// wait in the kernel for ResumeRead, no byte lost.
func (d *connReqs) heldEvent(ev *ringev.FdEvent, _ ringev.Flags) {
	c := ev.Data.(*Conn)
	if c.heldError() {
		return
	}
	c.fl |= cfPeerShut
	d.watchHeld(c, false)
}

// armRecv submits the connection's recv: a multishot one into the group, or one into its own
// buffer; while lingering, with the time left as its deadline.
func (d *connReqs) armRecv(c *Conn) {
	var err error
	if d.group != nil {
		c.recv, err = d.l.ev.RecvMultishot(int(c.fd), d.group, 0, d.onRecv, c.tok(tokRecv))
	} else {
		x := c.x()
		if x.rbuf == nil {
			if n := len(d.rfree); n > 0 {
				x.rbuf, d.rfree = d.rfree[n-1], d.rfree[:n-1]
			} else {
				x.rbuf = new([RecvBufferSize]byte)
			}
		}
		c.recv, err = d.l.ev.Recv(int(c.fd), x.rbuf[:], 0, d.onRecv, c.tok(tokRecv))
	}
	if err != nil {
		d.l.e.logf("recv: %v", err)
		c.end(err)
		return
	}
	c.fl = c.fl&^cfRecvStop | cfRecvLive
	if c.fl&cfLingering != 0 {
		left := time.Duration(c.x().lingerEnd - c.l.now())
		if left <= 0 {
			c.end(nil)
			return
		}
		c.recv.SetTimeout(left)
	}
}

// maxSend is the most bytes one send request takes: what the kernel moves in one call
// (MAX_RW_COUNT, 0x7ffff000), which Conn.outLen's 32 bits hold. Output past it (a write limit
// raised past 2 GiB) goes in more sends. A variable, so that a test can make it small.
var maxSend = 0x7ffff000

func (d *connReqs) send(c *Conn) {
	if c.outLen > 0 || len(c.pend) == 0 || c.closed || c.rare != nil && c.rare.splIn != nil && c.rare.splIn.sending() {
		return // (a splice's completion marks it dirty again)
	}
	out := c.pend
	if len(out) > maxSend { // (past what outLen holds: the rest waits for this send's end)
		out, c.pend = out[:maxSend:maxSend], out[maxSend:]
	} else {
		c.pend = nil
	}
	c.outLen = int32(len(out))
	d.l.sends++
	// (the turn's end, on the loop: the send needs no check of its caller)
	if _, err := sendOwned(d.l.ev, int(c.fd), out, 0, d.onSent, c.tok(tokSend)); err != nil {
		d.l.e.logf("send: %v", err)
		c.wrote(-len(out))
		d.l.bufs.put(out)
		c.outLen = 0
		c.end(err)
	}
}

// linger begins the lingering close (nginx's lingering_close): the writing side is shut down,
// so the peer reads every byte and then EOF, while what it still sends is received and dropped
// until it closes or lingerTimeout passes (the recv's deadline). Closing at once would make the
// kernel answer unread input with a reset, which can destroy the last bytes before the peer has
// read them.
func (d *connReqs) linger(c *Conn) {
	c.fl |= cfLingering
	c.x().lingerEnd = c.l.now() + int64(lingerTimeout)
	if err := unix.Shutdown(int(c.fd), unix.SHUT_WR); err != nil {
		c.end(nil)
		return
	}
	if c.fl&cfRecvLive != 0 {
		if c.fl&cfRecvStop == 0 {
			c.recv.SetTimeout(lingerTimeout) // a multishot recv goes on, with a deadline
		}
		return // a cancelled one is re-armed, with the deadline, by update
	}
	d.armRecv(c)
}

func (d *connReqs) closeFd(c *Conn) {
	d.watchHeld(c, false) // before the socket closes: the fd number may be reused
	if _, err := d.l.ev.CloseFd(int(c.fd), d.onConn, c.tok(tokClose)); err != nil {
		d.l.e.logf("closing a connection: %v", err)
		unix.Close(int(c.fd))
		c.reqClosed()
	}
}

// stopAccept takes the connections already in the backlog, then closes the listener (which
// ends the multishot accept).
func (d *connReqs) stopAccept() {
	if d.lfd < 0 {
		return
	}
	acceptBacklog(d.l, d.lfd)
	if _, err := d.l.ev.CloseFd(d.lfd, d.onLst, 0); err != nil {
		unix.Close(d.lfd)
		d.lclosed = true
	}
	d.lfd = -1
}

// listenerClosed is the listening socket's CloseFd completion.
func (d *connReqs) listenerClosed(*ringev.Completion) {
	d.lclosed = true
	d.l.maybeDone()
}

func (d *connReqs) idle() bool { return d.lclosed && d.l.pipes.live == 0 }

// abandon closes the listener, the sockets of the connections whose close has not started
// (closeFd: a CloseFd request may have closed it already, and its number be another's now),
// and the splice pipes.
func (d *connReqs) abandon() {
	for _, c := range d.l.conns.all {
		if c != nil && !c.closed {
			unix.Close(int(c.fd))
			c.closed = true
		}
	}
	if d.lfd >= 0 {
		unix.Close(d.lfd)
		d.lfd = -1
	}
	d.l.pipes.close()
}

func (d *connReqs) release() {
	d.l.pipes.close()
	if d.group != nil {
		d.group.Close()
		d.group = nil
	}
}
