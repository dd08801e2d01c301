//go:build unix

package server

import (
	"errors"
	"time"

	"github.com/ringev/ringev"
	"golang.org/x/sys/unix"
)

// The requests driver: one per loop, beside the readiness driver and serving the same Protocols.
// It does its I/O with completion requests (ringev issue 12): a multishot accept on the
// listening socket, per connection a multishot recv into the loop's provided buffers (or, with
// Config.Recv == RecvPerConn or where the kernel lacks the multishot recv, one recv at a time
// into a buffer of the connection's own), the
// replies sent with Send (one send in flight per connection, the loop finishing short sends;
// output made meanwhile waits in a second buffer), and CloseFd to close. On the uring backend
// these are SQEs, every one prepared in a turn going to the kernel in the loop's one
// io_uring_enter; on epoll and poll the loop emulates them with readiness and non-blocking
// syscalls.
//
// No allocation per request in steady state: each connection has one Callback (a method value
// made when it is accepted) and tells its requests apart by the token; output buffers and input
// leftovers come from a per-loop free list and go back to it when they empty. With multishot
// recv an idle connection owns no buffer at all: the kernel picks a buffer of the loop's group
// when bytes arrive, the callback serves them from it (copying only an incomplete request) and
// gives the buffer back before it returns.

// The Config.Recv modes of the requests driver.
const (
	// RecvMultishot: one multishot recv per connection into the loop's buffer group
	// (IORING_RECV_MULTISHOT, Linux 6.0, into a provided buffer ring,
	// IORING_REGISTER_PBUF_RING, 5.19). An idle connection owns no buffer, and a busy one makes
	// no SQE per recv. The default (see DefaultRecv).
	RecvMultishot = "multishot"
	// RecvPerConn: one recv at a time per connection, into a RecvBufferSize buffer the
	// connection owns while the recv waits (always, for an idle connection).
	RecvPerConn = "per-conn"
	// DefaultRecv is Config.Recv's default, RecvMultishot. With Config.Recv "" a loop whose
	// kernel lacks the multishot recv (Loop.CheckOp) or refuses its provided buffer ring
	// (NewBufferGroup: a kernel before 5.19, or an error such as ENOMEM) receives RecvPerConn
	// instead and says so through Config.Logf; a Config.Recv of RecvMultishot named outright
	// makes Start fail there with that error (naming the feature where one is missing).
	// (Until 2026-12-01 the default was RecvPerConn: the loop's dispatch delivered a multishot
	// request's completions out of order when more than 32 were queued, fixed in the loop since
	// and tested there, MultishotRecvKeepsTheStreamInOrder.)
	DefaultRecv = RecvMultishot
)

// Sizes of the requests driver's receive buffers.
const (
	// RecvBufferSize is the size of one receive buffer, in bytes (4 KiB): each buffer of the
	// group in RecvMultishot mode, each connection's buffer in RecvPerConn mode.
	RecvBufferSize = 4 << 10
	// RecvGroupBuffers is the number of buffers in each loop's group in RecvMultishot mode
	// (512: 2 MiB per loop). A buffer is held only from a completion to the end of its
	// callback, so the group runs dry only when more completions are queued than it has
	// buffers; then a recv gets ENOBUFS, loses nothing, and is re-armed by the loop.
	RecvGroupBuffers = 512
)

// Tokens of a connection's requests (Completion.Token).
const (
	tokRecv uint64 = iota + 1
	tokSend
	tokClose
)

// drainGrace is how long a drain lets an idle connection's requests already received (whose
// completion the loop has not run yet) be served before it starts its lingering close.
const drainGrace = 10 * time.Millisecond

// reqDriver serves one Protocol on one loop with requests.
type reqDriver struct {
	srv     *Server
	loop    *ringev.Loop
	proto   Protocol
	lfd     int            // the listening socket; -1 once closed
	accept  ringev.Request // the multishot accept
	onAcc   ringev.Callback
	onLst   ringev.Callback // the listener's CloseFd
	lclosed bool            // the listener's CloseFd has completed (or there was none)
	// group: RecvMultishot's buffers; nil in RecvPerConn mode (Config.Recv, or the default's
	// fallback where the multishot recv is unavailable)
	group *ringev.BufferGroup
	conns map[*rconn]struct{}
	bufs  bufPool  // output and leftover-input buffers
	rfree [][]byte // RecvPerConn receive buffers (at most freeRecvBufs)
	// draining: Shutdown was asked; graceDone: its grace has passed (idle connections linger).
	draining, graceDone bool
	sends               int // Send requests made (the loop's goroutine only; tests read it after Wait)
	// held: connections holding replies for their next recv completion (sendHold); flushHeld,
	// an immediate made once and scheduled again, sends them on the loop's next Once if that
	// completion has not come by then (as on ENOBUFS, EOF or an error in its place).
	held     []*rconn
	flushImm *ringev.Immediate
	timers
}

// rconn is one connection of the requests driver.
type rconn struct {
	d  *reqDriver
	fd int
	cb ringev.Callback // c.onIO, made once: every request of the connection uses it
	// in is input the protocol has not consumed yet (a free-list buffer), nil when empty.
	in []byte
	// out is the buffer a send has in flight (the kernel's until its completion), nil when none.
	out []byte
	// pend is output made while out is in flight (a free-list buffer), nil when empty.
	pend []byte
	rbuf []byte // RecvPerConn: the receive buffer

	recv      ringev.Request
	recvLive  bool // a recv request is pending (its last completion has not run)
	recvStop  bool // a Cancel was asked of the multishot recv (backpressure)
	closing   bool // the protocol asked for the end: input is dropped, linger once out is sent
	hold      bool // serve leaves a send to the next completion, or the next Once (sendHold, flushHeld)
	held      bool // c is in d.held
	lingering bool // our side is shut down; input is dropped until the peer closes
	// eof: the peer shut down its side (a recv returned 0); no recv is armed again, and the
	// connection closes once the replies to what it sent are sent.
	eof       bool
	lingerEnd time.Time
	closed    bool // CloseFd asked
}

// recvMultishotCheck is loop.CheckOp(ringev.OpRecvMultishot); tests replace it to play a kernel
// without the multishot recv.
var recvMultishotCheck = func(loop *ringev.Loop) error { return loop.CheckOp(ringev.OpRecvMultishot) }

// newReqDriver starts serving on loop with requests: a multishot accept on lfd (a non-blocking
// listening socket, which it owns from now on and closes), and, for a Ticker, its timer. Errors:
// the loop's, from CheckOp, NewBufferGroup (with Config.Recv RecvMultishot named) or
// AcceptMultishot (naming the kernel feature missing).
func newReqDriver(srv *Server, loop *ringev.Loop, lfd int, proto Protocol) (*reqDriver, error) {
	d := &reqDriver{srv: srv, loop: loop, proto: proto, lfd: lfd, conns: map[*rconn]struct{}{}}
	d.onAcc, d.onLst = d.accepted, d.listenerClosed
	if srv.cfg.Recv == RecvMultishot {
		err := recvMultishotCheck(loop)
		if err == nil {
			d.group, err = loop.NewBufferGroup(RecvGroupBuffers, RecvBufferSize)
		}
		switch {
		case err == nil:
		case srv.recvAuto:
			// the default, not asked for: any reason it cannot be had (a kernel without it,
			// EOPNOTSUPP; a buffer ring the kernel refuses, ENOMEM) leaves the per-conn mode
			srv.logf("multishot recv unavailable, receiving %s instead: %v", RecvPerConn, err)
		default:
			unix.Close(lfd)
			return nil, err
		}
	}
	if err := d.armAccept(); err != nil {
		unix.Close(lfd)
		return nil, err
	}
	d.startTick(loop, proto)
	return d, nil
}

// recvMode is the receive mode the driver uses: RecvMultishot with a buffer group, else
// RecvPerConn.
func (d *reqDriver) recvMode() string {
	if d.group != nil {
		return RecvMultishot
	}
	return RecvPerConn
}

// armAccept submits the multishot accept.
func (d *reqDriver) armAccept() error {
	r, err := d.loop.AcceptMultishot(d.lfd, sockFlags, d.onAcc, 0)
	d.accept = r
	return err
}

// accepted is the multishot accept's callback: once per connection, then once more when the
// accept ends (ECANCELED when the listener is closed; EMFILE and the like when fds or memory
// ran out: it is re-armed after 100 ms, the connection staying in the backlog meanwhile).
func (d *reqDriver) accepted(c *ringev.Completion) {
	if c.Err == nil {
		d.addConn(c.N)
		return
	}
	if c.More || d.lfd < 0 || d.draining {
		return
	}
	d.srv.logf("accept: %v; pausing accept for 100 ms", c.Err)
	d.loop.AddTimer(100*time.Millisecond, func(*ringev.Timer) {
		if d.lfd >= 0 && !d.draining {
			if err := d.armAccept(); err != nil {
				d.srv.logf("accept: %v", err)
			}
		}
	})
}

// addConn starts serving an accepted socket.
func (d *reqDriver) addConn(fd int) {
	unix.SetsockoptInt(fd, unix.IPPROTO_TCP, unix.TCP_NODELAY, 1) // replies go out at once; fails harmlessly on a unix socket
	c := &rconn{d: d, fd: fd}
	c.cb = c.onIO
	d.conns[c] = struct{}{}
	d.srv.conns.Add(1)
	if d.draining && d.graceDone {
		c.startLinger()
		return
	}
	c.update()
}

// The free lists' bounds: what a loop keeps for reuse is at most freeBufs buffers of up to
// freeBufCap bytes (16 MiB) and freeRecvBufs RecvPerConn buffers (4 MiB).
const (
	freeBufs     = 256
	freeBufCap   = 64 << 10
	freeRecvBufs = 1024
)

// onIO is the connection's one callback, for each of its requests.
func (c *rconn) onIO(x *ringev.Completion) {
	switch x.Token {
	case tokRecv:
		c.received(x)
	case tokSend:
		c.sent(x)
	case tokClose:
		c.finished(x)
	}
}

// received handles a recv completion: bytes to serve (or to drop while the connection is
// closing or lingering), the peer's end of file, an error, or the end of a cancelled multishot.
func (c *rconn) received(x *ringev.Completion) {
	if !x.More {
		c.recvLive, c.recvStop = false, false
	}
	switch {
	case x.Err == nil && x.N > 0:
		if !c.closed && !c.closing && !c.lingering {
			// The socket holds more (the rest of a message that filled its group buffer,
			// say): the multishot recv's next completion comes, as a rule, in the same
			// batch, so its replies go in the same send as these (sendHold; flushHeld
			// sends them on the next Once if it does not).
			c.hold = x.More && x.SockNonempty
			c.input(x.Buf)
			c.hold = false
		}
		x.ReleaseBuffer() // the protocol keeps no reference; leftovers were copied
	case x.Err == nil: // N 0: the peer closed its side
		if c.lingering || c.closed {
			c.close()
			return
		}
		// A half-close (`printf 'PING\r\n' | nc -N`): the requests that came before the FIN
		// are still answered; update closes once the replies are sent. Closing now would
		// cancel their sends.
		c.eof = true
	case errors.Is(x.Err, unix.ENOBUFS): // the group ran dry; the loop re-arms the recv
		return
	case errors.Is(x.Err, unix.ECANCELED) && !c.closed:
		// the multishot recv stopped for backpressure: update re-arms it when wanted
	default: // ETIME (the linger's deadline), a reset, ECANCELED by CloseFd
		c.close()
		return
	}
	c.update()
}

// input hands data (a received buffer: a view the callback must give back) to the protocol,
// after any leftover.
func (c *rconn) input(data []byte) {
	if len(c.in) > 0 {
		c.in = append(c.in, data...)
		c.serve(c.in)
		return
	}
	c.serve(data)
}

// serve hands data (c.in, or received bytes not yet copied) to the protocol while the pending
// output is under OutputLimit, keeps what it did not consume in c.in, and starts a send.
func (c *rconn) serve(data []byte) {
	d := c.d
	for len(data) > 0 && len(c.pend) < OutputLimit && !c.closing {
		if c.pend == nil {
			c.pend = d.bufs.get()
		}
		used, out, closeAfter := d.proto.Serve(data, c.pend)
		c.pend, data = out, data[used:]
		if closeAfter {
			c.closing, data = true, nil
		}
		if used == 0 {
			break
		}
	}
	switch {
	case len(data) > MaxInput:
		d.srv.logf("closing a connection with %d bytes of input its protocol did not consume", len(data))
		c.close()
		return
	case len(data) == 0:
		d.bufs.put(c.in)
		c.in = nil
	default:
		if c.in == nil {
			c.in = d.bufs.get()
		}
		c.in = append(c.in[:0], data...) // data may be c.in's tail: append moves it to the start
	}
	if len(c.pend) == 0 {
		d.bufs.put(c.pend)
		c.pend = nil
	}
	// A closing connection drops the next completion's input: nothing is held for it.
	if !c.hold || c.closing || len(c.pend) >= sendHold {
		c.send()
		return
	}
	// SockNonempty does not promise a completion: an urgent byte (MSG_OOB) counts as queued
	// data, but the next recv skips it and waits. The loop's next Once sends what is held.
	if len(c.pend) > 0 && c.out == nil && !c.held {
		c.held = true
		d.held = append(d.held, c)
		if d.flushImm == nil {
			d.flushImm = d.loop.AddImmediate(d.flushHeld)
		} else {
			d.flushImm.Schedule() // false while queued: one flush serves every held connection
		}
	}
}

// flushHeld sends the replies that connections hold for a recv completion that has not come.
func (d *reqDriver) flushHeld() {
	for i, c := range d.held {
		c.held = false
		c.send()
		d.held[i] = nil
	}
	d.held = d.held[:0]
}

// sendHold bounds the replies a connection holds back while its multishot recv has more to
// deliver at once (Completion.SockNonempty), in bytes.
const sendHold = 16 << 10

// send sends the pending output if no send is in flight.
func (c *rconn) send() {
	if c.out != nil || len(c.pend) == 0 || c.closed {
		return
	}
	c.out, c.pend = c.pend, nil
	c.d.sends++
	if _, err := c.d.loop.Send(c.fd, c.out, 0, c.cb, tokSend); err != nil {
		c.d.srv.logf("send: %v", err)
		c.d.bufs.put(c.out)
		c.out = nil
		c.close()
	}
}

// sent handles a send's completion: all of c.out was sent (the loop finishes short sends), or
// an error (the peer reset, ECANCELED by CloseFd).
func (c *rconn) sent(x *ringev.Completion) {
	c.d.bufs.put(c.out) // the kernel is done with it
	c.out = nil
	if x.Err != nil {
		c.close()
		return
	}
	if c.closed {
		return
	}
	c.send()
	if len(c.in) > 0 && !c.closing && !c.lingering && len(c.pend) < OutputLimit {
		c.serve(c.in) // requests held back while the output was full
	}
	c.update()
}

// update makes the connection's requests follow its state: a connection with nothing left to
// send that the protocol is done with (or that a drain reached) starts its lingering close; a
// recv is kept pending while input is wanted (not while the output is full), and a multishot
// recv is cancelled when it is not.
func (c *rconn) update() {
	if c.closed {
		return
	}
	if c.eof { // nothing more will come: no recv; close once every reply is sent
		if c.out == nil && len(c.pend) == 0 {
			c.close()
		}
		return
	}
	if c.out == nil && len(c.pend) == 0 && !c.lingering && (c.closing || c.d.draining && c.d.graceDone) {
		c.startLinger()
		return
	}
	want := c.lingering || c.closing || len(c.pend) < OutputLimit
	switch {
	case want && !c.recvLive:
		c.armRecv()
	case !want && c.recvLive && !c.recvStop && c.d.group != nil:
		c.recvStop = true
		c.recv.Cancel()
	}
}

// armRecv submits the connection's recv: a multishot one into the group, or one into its own
// buffer; while lingering, with the time left as its deadline.
func (c *rconn) armRecv() {
	d := c.d
	var err error
	if d.group != nil {
		c.recv, err = d.loop.RecvMultishot(c.fd, d.group, 0, c.cb, tokRecv)
	} else {
		if c.rbuf == nil {
			if n := len(d.rfree); n > 0 {
				c.rbuf, d.rfree = d.rfree[n-1], d.rfree[:n-1]
			} else {
				c.rbuf = make([]byte, RecvBufferSize)
			}
		}
		c.recv, err = d.loop.Recv(c.fd, c.rbuf, 0, c.cb, tokRecv)
	}
	if err != nil {
		d.srv.logf("recv: %v", err)
		c.close()
		return
	}
	c.recvLive, c.recvStop = true, false
	if c.lingering {
		left := time.Until(c.lingerEnd)
		if left <= 0 {
			c.close()
			return
		}
		c.recv.SetTimeout(left)
	}
}

// startLinger begins a lingering close (nginx's lingering_close), as the readiness driver does:
// the server's side is shut down, so the peer reads every reply and then EOF, while what the
// peer still sends is received and dropped until it closes or lingerTimeout passes (the recv's
// deadline). Closing at once would make the kernel answer unread input with a reset, which can
// destroy the last replies before the peer has read them.
func (c *rconn) startLinger() {
	c.lingering, c.lingerEnd = true, time.Now().Add(lingerTimeout)
	d := c.d
	d.bufs.put(c.in)
	c.in = nil
	if err := unix.Shutdown(c.fd, unix.SHUT_WR); err != nil {
		c.close()
		return
	}
	if c.recvLive {
		if !c.recvStop {
			c.recv.SetTimeout(lingerTimeout) // a multishot recv goes on, with a deadline
		}
		return // a cancelled one is re-armed, with the deadline, by update
	}
	c.armRecv()
}

// close ends the connection: CloseFd cancels its requests and closes the socket once their
// completions have run. Idempotent.
func (c *rconn) close() {
	if c.closed {
		return
	}
	c.closed = true
	d := c.d
	d.bufs.put(c.in)
	d.bufs.put(c.pend)
	c.in, c.pend = nil, nil
	if _, err := d.loop.CloseFd(c.fd, c.cb, tokClose); err != nil {
		d.srv.logf("closing a connection: %v", err)
		unix.Close(c.fd)
		c.finished(nil)
	}
}

// finished is CloseFd's completion (x nil when CloseFd could not be asked): the socket is
// closed, every request of the connection has had its last completion.
func (c *rconn) finished(*ringev.Completion) {
	d := c.d
	if c.rbuf != nil && !c.recvLive && len(d.rfree) < freeRecvBufs {
		d.rfree = append(d.rfree, c.rbuf)
	}
	c.rbuf = nil
	delete(d.conns, c)
	d.srv.conns.Add(-1)
	d.maybeDone()
}

// shutdown stops accepting (after taking the connections already in the backlog), lets the
// requests already received be served for drainGrace, then every connection writes its
// replies, lingers and closes. Connections still open after timeout are closed; the loop stops
// when none is left and the listener is closed.
func (d *reqDriver) shutdown(timeout time.Duration) {
	if d.draining {
		return
	}
	d.draining = true
	if d.lfd >= 0 {
		for { // the backlog, at once (the multishot accept may be taking some too)
			fd, err := accept4(d.lfd)
			if err != nil {
				if errors.Is(err, unix.EINTR) || errors.Is(err, unix.ECONNABORTED) {
					continue
				}
				break
			}
			d.addConn(fd)
		}
		if _, err := d.loop.CloseFd(d.lfd, d.onLst, 0); err != nil { // ends the multishot accept
			unix.Close(d.lfd)
			d.lclosed = true
		}
		d.lfd = -1
	} else {
		d.lclosed = true
	}
	d.loop.AddTimer(drainGrace, func(*ringev.Timer) {
		d.graceDone = true
		for c := range d.conns {
			c.update()
		}
		d.maybeDone()
	})
	d.deadline = d.loop.AddTimer(timeout, func(*ringev.Timer) { d.closeAll() })
}

// closeAll closes every connection now (Server.Close): CloseFd cancels their requests, and the
// loop stops once every close has completed.
func (d *reqDriver) closeAll() {
	for c := range d.conns {
		c.close()
	}
}

// listenerClosed is the listening socket's CloseFd completion.
func (d *reqDriver) listenerClosed(*ringev.Completion) {
	d.lclosed = true
	d.maybeDone()
}

// maybeDone stops the loop once a drain has closed every connection and the listener.
func (d *reqDriver) maybeDone() {
	if !d.draining || !d.graceDone || len(d.conns) > 0 || !d.lclosed {
		return
	}
	d.stopTimers()
	if d.group != nil {
		d.group.Close()
	}
	d.loop.Stop()
}
