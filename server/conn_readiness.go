//go:build unix

package server

import (
	"errors"
	"fmt"
	"time"

	"github.com/ringev/ringev"
	"golang.org/x/sys/unix"
)

// readChunk is the size of one read, in bytes: the loop's read buffer, and the room a
// connection's own input buffer is given before a read into it.
const readChunk = 16 << 10

// acceptBatch is the most connections one call of the listener's handler accepts, so that a
// flood of connections does not starve the connections already open.
const acceptBatch = 64

// lingerTimeout bounds a lingering close (both drivers' linger): the time the peer has to
// close its side after the server has sent its last byte and shut down its own.
const lingerTimeout = time.Second

// shutProbeInterval is how often a connection that waits for Write alone (its peer has shut
// down its writing side, see cfPeerShut) tries to write: a reset fails the write and
// closes it.
const shutProbeInterval = time.Second

// The connections' readiness driver (APIReadiness): fd events on the listening socket and on
// each connection, read(2) and write(2) through the loop's non-blocking I/O
// (Loop.ReadNonblocking and WriteNonblocking, which ride the ring on uring).
//
// A connection owns no buffer while it is idle: a read lands in the loop's read buffer, and
// only what OnData leaves is copied into a buffer of its own. A turn's output is written at the
// turn's end; Write readiness is asked for only after the socket refused some (cfWBlocked).
// Error is always asked for, so that a connection waiting to write still hears of a reset.
//
// The exception is a peer that shut down its writing side (a half-close) while output is
// pending: the loop reports the half-close as Error on every dispatch from then on, so a
// connection that waited for Error (or Read, at end of file) while its socket is full would be
// woken in a loop. It waits for Write alone until its output is written, and a timer
// (shutProbeInterval) tries the write now and then, which is how it hears of a reset.
type connRdy struct {
	l            *Loop
	lev          *ringev.FdEvent   // the listening socket's; nil once closed
	rbuf         []byte            // every read of a connection without leftover input lands here
	evs          []*ringev.FdEvent // the connections' fd events, by slot (see ev)
	acceptPaused bool              // accept failed for lack of fds or memory; a timer re-arms it
}

func newConnRdy(l *Loop) *connRdy { return &connRdy{l: l, rbuf: make([]byte, readChunk)} }

func (d *connRdy) start(lfd int) error {
	if lfd < 0 {
		return nil
	}
	ev, err := d.l.ev.AddFd(lfd, ringev.Read, d.accept)
	if err != nil {
		unix.Close(lfd)
		return err
	}
	ev.SetAutoClose(true)
	d.lev = ev
	return nil
}

// accept takes up to acceptBatch connections waiting on the listening socket, so that a flood
// of connections does not starve the open ones.
func (d *connRdy) accept(ev *ringev.FdEvent, _ ringev.Flags) {
	for range acceptBatch {
		fd, err := accept4(ev.Fd())
		switch {
		case err == nil:
			d.l.accepted(fd)
		case acceptAgain(err):
			continue
		case errors.Is(err, unix.EMFILE), errors.Is(err, unix.ENFILE), errors.Is(err, unix.ENOBUFS), errors.Is(err, unix.ENOMEM):
			// The connection stays in the backlog; retrying at once would spin.
			d.l.acceptFailed(err)
			d.acceptPaused = true
			ev.SetFlags(0)
			d.l.ev.AddTimer(acceptPause, func(*ringev.Timer) {
				d.acceptPaused = false
				if d.lev != nil {
					d.lev.SetFlags(ringev.Read)
				}
			})
			return
		case errors.Is(err, unix.EAGAIN):
			return
		default:
			d.l.e.logf("accept: %v", err)
			return
		}
	}
}

func (d *connRdy) add(c *Conn) {
	unix.SetsockoptInt(int(c.fd), unix.IPPROTO_TCP, unix.TCP_NODELAY, 1) // fails harmlessly on a unix socket
	ev, err := d.l.ev.AddFd(int(c.fd), ringev.Read|ringev.Error, d.handle)
	if err != nil {
		d.l.e.logf("watching a connection: %v", err)
		c.closed = true
		c.setGone()
		c.setReason(err)
		unix.Close(int(c.fd))
		d.l.finishLater(c)
		return
	}
	ev.SetAutoClose(true)
	ev.Data = c
	for len(d.evs) <= int(c.slot) {
		d.evs = append(d.evs, nil)
	}
	d.evs[c.slot] = ev
}

// ev is c's fd event (nil before add, or when add failed). The driver keeps the connections'
// events by slot (Conn.slot), so that a connection of the requests driver holds no field for
// one.
func (d *connRdy) ev(c *Conn) *ringev.FdEvent {
	if int(c.slot) < len(d.evs) {
		return d.evs[c.slot]
	}
	return nil
}

// handle is every connection's fd handler.
func (d *connRdy) handle(ev *ringev.FdEvent, flags ringev.Flags) {
	c := ev.Data.(*Conn)
	switch {
	case flags&ringev.Error != 0 && c.fl&cfLingering != 0 && flags&ringev.Read == 0:
		// The peer closed (or reset) while we linger, and nothing is left to read. Input
		// left (Read) is read and dropped first, below, until the end of file: closing the
		// socket with input unread makes the kernel send a reset, which drops the output not
		// yet acknowledged.
		c.end(nil)
		return
	case flags&ringev.Error != 0 && flags&ringev.Read == 0:
		// Error on a connection that does not read (paused, held, closing, or at end of
		// file): a reset or the peer's half-close. A reset ends it now, with or without
		// output to write (heldError); a half-close leaves the output to be written, waiting
		// for Write alone, and the input and EOF in the kernel, read once reading resumes.
		if c.heldError() {
			return
		}
		c.fl |= cfPeerShut
		d.write(c)
		d.update(c)
		return
	}
	// Error with Read: a reset (the read returns the error) or the peer's half-close
	// (POLLRDHUP), whose requests may have come with the FIN: they are read and served, the
	// replies written, and the read that returns end of file closes the connection once they
	// are sent (peerEOF).
	if flags&ringev.Write != 0 {
		d.write(c)
	}
	if flags&ringev.Read != 0 && !c.closed {
		d.read(c)
	}
}

// read reads once and hands what arrived to the connection.
func (d *connRdy) read(c *Conn) {
	buf := d.rbuf
	// Read after the leftover, in the connection's own buffer (not TLS's: c.in is plaintext).
	into := len(c.inBytes()) > 0 && c.fl&cfLingering == 0 && c.tlsOf() == nil
	if into {
		if in := c.in.b; cap(in)-len(in) < readChunk {
			grown := make([]byte, len(in), 2*cap(in)+readChunk)
			copy(grown, in)
			d.l.bufs.put(in)
			c.in.b = grown
		}
		buf = c.in.b[len(c.in.b):cap(c.in.b)]
	}
	n, err := d.l.ev.ReadNonblocking(int(c.fd), buf)
	switch {
	case errors.Is(err, unix.EAGAIN):
		return
	case err != nil:
		c.end(fmt.Errorf("server: read on fd %d: %w", c.fd, err))
		return
	case n == 0:
		if c.fl&cfLingering != 0 {
			c.end(nil)
			return
		}
		c.peerEOF()
		return
	case c.fl&cfLingering != 0 || c.closing && !c.tlsHandshaking():
		return // dropped (a closing TLS connection's handshake input goes on: deliver)
	}
	if into {
		c.in.b = c.in.b[:len(c.in.b)+n]
		c.gotInput()
		c.received()
		return
	}
	c.deliver(buf[:n])
}

// write writes the pending output; what the socket does not take waits for Write readiness.
func (d *connRdy) write(c *Conn) {
	if len(c.pend) == 0 || c.closed {
		return
	}
	n, err := d.l.ev.WriteNonblocking(int(c.fd), c.pend)
	switch {
	case errors.Is(err, unix.EAGAIN):
		n = 0
	case err != nil:
		c.end(fmt.Errorf("server: write on fd %d: %w", c.fd, err))
		return
	}
	d.l.sends++
	past := c.outN.Add(-int64(n))+int64(n) > int64(c.l.limit) // wrote(-n), by hand (hot path)
	c.l.charge(-n)
	if n == len(c.pend) {
		d.l.bufs.put(c.pend)
		c.pend = nil
		c.fl &^= cfWBlocked
	} else {
		c.pend = c.pend[:copy(c.pend, c.pend[n:])]
		c.fl |= cfWBlocked
	}
	if n > 0 {
		if c.to.idles() {
			c.active = c.l.turnTime()
		}
		if past && c.bp < bpTold {
			if c.passedLimit(); c.closed {
				return // its handler closed it
			}
		}
		c.sentSome()
	}
	d.update(c)
}

func (d *connRdy) send(c *Conn) {
	if c.fl&cfWBlocked == 0 {
		d.write(c)
	}
}

// update sets the connection's fd event flags from its state.
func (d *connRdy) update(c *Conn) {
	ev := d.ev(c)
	if c.closed || ev == nil {
		return
	}
	flags := ringev.Error
	if c.fl&cfWBlocked != 0 && len(c.pend) > 0 {
		flags |= ringev.Write
	}
	if c.fl&cfLingering != 0 || c.bp < bpPaused && c.fl&cfHeld == 0 && (!c.closing || c.tlsHandshaking()) && c.fl&cfEOF == 0 && !c.backlogged() {
		flags |= ringev.Read
	}
	shut := (c.fl&cfPeerShut != 0 || c.fl&cfEOF != 0) && c.fl&cfLingering == 0
	if shut && flags&ringev.Read == 0 && len(c.pend) == 0 {
		flags = 0 // as below, with nothing to write: nothing to wait for until it reads again
	}
	if shut && len(c.pend) > 0 {
		// The half-close is Error (and Read, at end of file) on every dispatch: wait for
		// Write alone, and probe for a reset, which does not wake a Write-alone handler.
		flags = ringev.Write
		if x := c.x(); x.shutProbe == nil {
			x.shutProbe = d.l.ev.AddTimer(shutProbeInterval, c.probeShut)
		}
	} else if x := c.rare; x != nil && x.shutProbe != nil {
		x.shutProbe.Stop()
		x.shutProbe = nil
	}
	if ev.Flags() != flags {
		if err := ev.SetFlags(flags); err != nil {
			c.end(err)
		}
	}
}

// probeShut is shutProbe's handler: it tries the write (a reset fails it and closes the
// connection) and starts the next probe.
func (c *Conn) probeShut(*ringev.Timer) {
	c.rare.shutProbe = nil
	d := c.l.drv.(*connRdy)
	c.fl &^= cfWBlocked
	d.write(c)
	d.update(c)
}

// linger begins the lingering close (see connReqs.linger): the writing side is shut down and
// what the peer still sends is read and dropped until it closes, or lingerTimeout.
func (d *connRdy) linger(c *Conn) {
	c.fl |= cfLingering
	if err := unix.Shutdown(int(c.fd), unix.SHUT_WR); err != nil {
		c.end(nil)
		return
	}
	c.x().lingerT = d.l.ev.AddTimer(lingerTimeout, func(*ringev.Timer) { c.end(nil) })
	d.update(c)
}

func (d *connRdy) closeFd(c *Conn) {
	if x := c.rare; x != nil {
		if x.lingerT != nil {
			x.lingerT.Stop()
		}
		if x.shutProbe != nil {
			x.shutProbe.Stop()
		}
	}
	if ev := d.ev(c); ev != nil {
		ev.Close() // auto-close: closes the socket
		d.evs[c.slot] = nil
	}
	d.l.finishLater(c)
}

// stopAccept takes what is in the backlog and closes the listening socket.
func (d *connRdy) stopAccept() {
	if d.lev == nil {
		return
	}
	acceptBacklog(d.l, d.lev.Fd())
	d.lev.Close()
	d.lev = nil
}

func (d *connRdy) idle() bool { return true }

func (d *connRdy) release() {}

// abandon has nothing to close: the loop's Close closes the listener and the connections
// (AddFd with AutoClose).
func (d *connRdy) abandon() {}
