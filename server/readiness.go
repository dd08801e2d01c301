//go:build unix

package server

import (
	"errors"
	"time"

	"github.com/ringev/ringev"
	"golang.org/x/sys/unix"
)

// The readiness driver: one per loop. It watches its listening socket and each connection with fd
// events, reads and writes with the loop's non-blocking I/O, and hands the bytes to its Protocol.
//
// A connection owns no buffer while it is idle: a read lands in the loop's read buffer, the
// replies go to the loop's write buffer and are written at once. Only what is left over (part of
// a request; output the socket did not take) is copied into buffers of the connection's own,
// which are dropped when they empty. It asks for Write readiness only while it has output
// pending, and it asks for Error, so that a connection waiting to write still hears of a reset
// (a handler that waits only for Write is not told of errors; see ringev.Flags).
//
// The exception is a peer that has shut down its writing side (a half-close) while replies are
// pending: the loop reports the half-close as Error, level-triggered, on every dispatch from then
// on, so watching Error (or Read, at end of file) while the socket is full would wake the handler
// in a loop. Such a connection waits for Write alone until its output is written, and a timer
// (shutProbeInterval) tries the write now and then, which is how it hears of a reset.

// readChunk is the size of one read, in bytes: the loop's read buffer, and the room a
// connection's own input buffer is given before a read into it.
const readChunk = 16 << 10

// acceptBatch is the most connections one call of the listener's handler accepts, so that a flood
// of connections does not starve the connections already open.
const acceptBatch = 64

// lingerTimeout bounds a lingering close (see conn.linger): the time the peer has to close its
// side after the server has sent its last reply and shut down its own.
const lingerTimeout = time.Second

// shutProbeInterval is how often a connection that waits for Write alone (its peer has shut down
// its writing side, see conn.peerShut) tries to write: a reset fails the write and closes it.
const shutProbeInterval = time.Second

// driver serves one Protocol on one loop.
type driver struct {
	srv      *Server
	loop     *ringev.Loop
	proto    Protocol
	listener *ringev.FdEvent // nil once closed
	conns    map[*conn]struct{}
	rbuf     []byte // every read of a connection without leftover input lands here
	wbuf     []byte // replies to a connection without pending output are built here
	draining bool
	timers
	// acceptPaused: accept failed for lack of fds or memory; the listener is disarmed and a timer
	// re-arms it.
	acceptPaused bool
}

// conn is one accepted connection.
type conn struct {
	d  *driver
	ev *ringev.FdEvent // auto-close: closing it closes the socket
	// in is input the protocol has not consumed yet (an incomplete request, or requests held
	// back while out is full); nil when empty.
	in []byte
	// out is output not written yet; nil when empty.
	out []byte
	// closing: the protocol asked for the connection to end; nothing more is read for it, and
	// the connection lingers once out is written.
	closing   bool
	lingering bool          // our side is shut down; reads are drained until the peer closes
	linger    *ringev.Timer // ends the lingering close
	// peerShut: the peer has shut down its writing side (a half-close) while output was
	// pending: a read returned end of file, or Error came while the connection was not reading.
	// While out is not empty it waits for Write alone (see update), and shutProbe tries the
	// write every shutProbeInterval.
	peerShut  bool
	shutProbe *ringev.Timer
	closed    bool
}

// newDriver starts serving on loop: it watches lfd (a listening socket, which it owns from now on
// and closes) and, for a Ticker, starts its timer.
func newDriver(srv *Server, loop *ringev.Loop, lfd int, proto Protocol) (*driver, error) {
	d := &driver{srv: srv, loop: loop, proto: proto, conns: map[*conn]struct{}{},
		rbuf: make([]byte, readChunk), wbuf: make([]byte, 0, readChunk)}
	ev, err := loop.AddFd(lfd, ringev.Read, d.accept)
	if err != nil {
		unix.Close(lfd)
		return nil, err
	}
	ev.SetAutoClose(true)
	d.listener = ev
	d.startTick(loop, proto)
	return d, nil
}

// accept takes the connections waiting on the listening socket.
func (d *driver) accept(ev *ringev.FdEvent, _ ringev.Flags) {
	for range acceptBatch {
		fd, err := accept4(ev.Fd())
		switch {
		case err == nil:
			d.addConn(fd)
		case errors.Is(err, unix.EINTR), errors.Is(err, unix.ECONNABORTED):
			continue
		case errors.Is(err, unix.EMFILE), errors.Is(err, unix.ENFILE), errors.Is(err, unix.ENOBUFS), errors.Is(err, unix.ENOMEM):
			// The connection stays in the backlog; retrying at once would spin. Wait a little.
			d.srv.logf("accept: %v; pausing accept for 100 ms", err)
			d.acceptPaused = true
			ev.SetFlags(0)
			d.loop.AddTimer(100*time.Millisecond, func(*ringev.Timer) {
				d.acceptPaused = false
				if d.listener != nil {
					d.listener.SetFlags(ringev.Read)
				}
			})
			return
		case errors.Is(err, unix.EAGAIN):
			return
		default:
			d.srv.logf("accept: %v", err)
			return
		}
	}
}

// addConn starts serving an accepted socket.
func (d *driver) addConn(fd int) {
	unix.SetsockoptInt(fd, unix.IPPROTO_TCP, unix.TCP_NODELAY, 1) // replies go out at once; fails harmlessly on a unix socket
	c := &conn{d: d}
	ev, err := d.loop.AddFd(fd, ringev.Read|ringev.Error, d.handle)
	if err != nil {
		d.srv.logf("watching a connection: %v", err)
		unix.Close(fd)
		return
	}
	ev.SetAutoClose(true)
	ev.Data = c
	c.ev = ev
	d.conns[c] = struct{}{}
	d.srv.conns.Add(1)
}

// handle is every connection's fd handler.
func (d *driver) handle(ev *ringev.FdEvent, flags ringev.Flags) {
	c := ev.Data.(*conn)
	switch {
	case flags&ringev.Error != 0 && c.lingering:
		// The peer closed (or reset) while we linger.
		c.close()
		return
	case flags&ringev.Error != 0 && flags&ringev.Read == 0:
		// Error on a connection that does not read (its output is full, or the protocol is
		// done with it), so it has output pending: a reset or the peer's half-close. A reset
		// socket is reported writable and its write fails (flush closes the connection); a
		// half-close leaves the replies to be written, waiting for Write alone.
		c.peerShut = true
		if flags&ringev.Write != 0 {
			c.flush()
		}
		c.update()
		return
	}
	// Error with Read: a reset (read returns the error and the connection closes) or the
	// peer's half-close (POLLRDHUP), whose requests may have come with the FIN (`printf
	// 'PING\r\n' | nc -N`): they are read and served like any others, the replies written, and
	// the read that returns end of file closes the connection, or once its output is written
	// (peerShut). Closing at once would drop them and make the kernel answer the unread input
	// with a reset.
	if flags&ringev.Write != 0 {
		c.flush()
	}
	if flags&ringev.Read != 0 && !c.closed {
		c.read()
	}
}

// read reads once and serves what arrived.
func (c *conn) read() {
	d := c.d
	buf := d.rbuf
	if len(c.in) > 0 && !c.lingering { // read after the leftover, in the connection's own buffer
		if cap(c.in)-len(c.in) < readChunk {
			grown := make([]byte, len(c.in), 2*cap(c.in)+readChunk)
			copy(grown, c.in)
			c.in = grown
		}
		buf = c.in[len(c.in):cap(c.in)]
	}
	n, err := d.loop.ReadNonblocking(c.ev.Fd(), buf)
	switch {
	case errors.Is(err, unix.EAGAIN):
		return
	case err == nil && n == 0 && len(c.out) > 0 && !c.lingering:
		// The peer shut down its side with replies still to write: write them first.
		c.peerShut = true
		c.update()
		return
	case err != nil || n == 0: // an error, or the peer closed its side
		c.close()
		return
	case c.lingering:
		return // drop what the peer still sends
	}
	if len(c.in) > 0 {
		c.serve(c.in[:len(c.in)+n])
	} else {
		c.serve(d.rbuf[:n])
	}
}

// serve hands data (what the connection has received and not yet consumed: c.in when it is not
// empty, else the loop's read buffer) to the protocol, keeps what it did not consume, and sends
// the replies. When the protocol stopped at OutputLimit and the replies went out at once, it goes
// on with the requests it held back.
func (c *conn) serve(data []byte) {
	d := c.d
	for !c.closed {
		out := c.out
		if len(out) == 0 {
			out = d.wbuf[:0]
		}
		used, out, closeAfter := d.proto.Serve(data, out)
		rest := data[used:]
		switch {
		case closeAfter:
			c.closing, c.in = true, nil
		case len(rest) > MaxInput:
			d.srv.logf("closing a connection with %d bytes of input its protocol did not consume", len(rest))
			c.close()
			return
		case len(rest) == 0:
			c.in = nil
		case len(c.in) > 0: // data is c.in: move the rest to its start
			c.in = append(c.in[:0], rest...)
		default: // data is the loop's read buffer: the rest needs a buffer of its own
			c.in = append(make([]byte, 0, len(rest)+readChunk), rest...)
		}
		if len(c.out) > 0 { // appended to the pending output; Write readiness will send it
			c.out = out
		} else {
			c.write(out)
		}
		if closeAfter || used == 0 || len(c.in) == 0 || len(c.out) > 0 {
			break
		}
		data = c.in
	}
	c.update()
}

// write sends out (the loop's write buffer); what the socket does not take is kept in c.out.
func (c *conn) write(out []byte) {
	if len(out) == 0 {
		return
	}
	n, err := c.d.loop.WriteNonblocking(c.ev.Fd(), out)
	switch {
	case errors.Is(err, unix.EAGAIN):
		n = 0
	case err != nil:
		c.close()
		return
	}
	if n < len(out) {
		c.out = append([]byte(nil), out[n:]...)
	}
	if cap(out) > cap(c.d.wbuf) && cap(out) <= 2*OutputLimit { // keep a grown write buffer
		c.d.wbuf = out[:0]
	}
}

// flush writes pending output; once it is all written, the input held back is served.
func (c *conn) flush() {
	if len(c.out) == 0 {
		c.update()
		return
	}
	n, err := c.d.loop.WriteNonblocking(c.ev.Fd(), c.out)
	switch {
	case errors.Is(err, unix.EAGAIN):
		return
	case err != nil:
		c.close()
		return
	}
	c.out = c.out[n:]
	if len(c.out) > 0 {
		return
	}
	c.out = nil
	if len(c.in) > 0 && !c.closing {
		c.serve(c.in) // requests held back while the output was full
		return
	}
	c.update()
}

// update sets the connection's fd event flags from its state. A connection the protocol is done
// with, or that Shutdown drains, starts a lingering close once its output is written.
func (c *conn) update() {
	if c.closed {
		return
	}
	if len(c.out) == 0 && (c.closing || c.d.draining) && !c.lingering {
		c.startLinger()
		return
	}
	flags := ringev.Error
	if len(c.out) > 0 {
		flags |= ringev.Write
	}
	if c.lingering || !c.closing && !c.d.draining && len(c.out) < OutputLimit {
		flags |= ringev.Read
	}
	if c.peerShut && len(c.out) > 0 {
		// The half-close is Error (and Read, at end of file) on every dispatch: wait for
		// Write alone, and probe for a reset, which does not wake a Write-alone handler.
		flags = ringev.Write
		if c.shutProbe == nil {
			c.shutProbe = c.d.loop.AddTimer(shutProbeInterval, c.probeShut)
		}
	} else if c.shutProbe != nil {
		c.shutProbe.Stop()
		c.shutProbe = nil
	}
	if err := c.ev.SetFlags(flags); err != nil {
		c.close()
	}
}

// probeShut is shutProbe's handler: it tries the write (a reset fails it and closes the
// connection; the loop may have cleared the Write flag on the reset, which update restores
// while output is pending) and starts the next probe.
func (c *conn) probeShut(*ringev.Timer) {
	c.shutProbe = nil
	c.flush()
	c.update()
}

// startLinger begins a lingering close (nginx's lingering_close): the server's side is shut down,
// so the peer reads every reply and then EOF, while what the peer still sends is read and dropped
// until it closes, or lingerTimeout. Closing at once would make the kernel answer that unread
// input with a reset, which can destroy the last replies before the peer has read them.
func (c *conn) startLinger() {
	c.lingering = true
	if err := unix.Shutdown(c.ev.Fd(), unix.SHUT_WR); err != nil {
		c.close()
		return
	}
	c.linger = c.d.loop.AddTimer(lingerTimeout, func(*ringev.Timer) { c.close() })
	if err := c.ev.SetFlags(ringev.Read | ringev.Error); err != nil {
		c.close()
	}
}

// close ends the connection and closes its socket. Idempotent.
func (c *conn) close() {
	if c.closed {
		return
	}
	c.closed = true
	if c.linger != nil {
		c.linger.Stop()
	}
	if c.shutProbe != nil {
		c.shutProbe.Stop()
	}
	c.ev.Close() // auto-close: closes the socket
	c.in, c.out = nil, nil
	d := c.d
	delete(d.conns, c)
	d.srv.conns.Add(-1)
	d.maybeDone()
}

// shutdown stops accepting (after taking what is already in the backlog) and drains every
// connection: what has arrived is read and served, the replies are written, then it lingers
// and closes. Connections still open after timeout are closed; the loop stops when none is left.
func (d *driver) shutdown(timeout time.Duration) {
	if d.draining {
		return
	}
	if d.listener != nil {
		if !d.acceptPaused {
			d.accept(d.listener, ringev.Read)
		}
		d.listener.Close()
		d.listener = nil
	}
	d.draining = true
	for c := range d.conns {
		if !c.closing && !c.closed {
			c.read() // requests that have arrived
		}
		c.update()
	}
	d.deadline = d.loop.AddTimer(timeout, func(*ringev.Timer) { d.closeAll() })
	d.maybeDone()
}

// closeAll closes every connection now (Server.Close); the loop stops once they are closed.
func (d *driver) closeAll() {
	for c := range d.conns {
		c.close()
	}
}

// maybeDone stops the loop once a drain has closed every connection.
func (d *driver) maybeDone() {
	if !d.draining || len(d.conns) > 0 {
		return
	}
	d.stopTimers()
	d.loop.Stop()
}
