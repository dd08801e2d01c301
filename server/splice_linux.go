//go:build linux

package server

// Conn.Splice's kernel path: a connection's input moved to another connection's socket through a
// pipe with splice(2), without passing through user space; the waits for input and for room
// are the loop's Poll requests (IORING_OP_POLL_ADD on uring).

import (
	"errors"
	"fmt"

	"github.com/ringev/ringev"
	"golang.org/x/sys/unix"
)

// Sizes of Conn.Splice's pipes.
const (
	// SplicePipeSize is the capacity asked of each splice pipe (F_SETPIPE_SZ, fcntl(2)), in
	// bytes (1 MiB, the default /proc/sys/fs/pipe-max-size): the most one splice moves, and the
	// most a direction holds in the kernel between its two sockets. Where the kernel refuses
	// it (a user past /proc/sys/fs/pipe-user-pages-soft), the pipe keeps the size it has.
	SplicePipeSize = 1 << 20
	// SplicePipesFree is the most pipes a loop keeps for reuse (64: 128 fds).
	SplicePipesFree = 64
	// SplicePipesMax is the most pipes a loop's splices hold at once (512: 1,024 fds); a
	// splice that would need more moves its chunk with the copy path (recv and send) instead.
	SplicePipesMax = 512
)

// spliceSmallRun is how many chunks below SpliceMinChunk in a row end a splicing (see Splice):
// one alone is often a stream's, and going back to the recv and splicing again costs more.
const spliceSmallRun = 8

// Tokens of a splicer's requests.
const (
	tokSpPollIn  uint64 = iota + 1 // Poll for POLLIN on the source
	tokSpPollOut                   // Poll for POLLOUT on the destination
)

// splicePipes is a loop's pool of splice pipes.
type splicePipes struct {
	free  [][2]int            // empty pipes kept for reuse: read end, write end
	used  map[[2]int]struct{} // the pipes the loop's splicers hold (closed with the pool)
	live  int                 // splicers with requests in the kernel or bytes in a pipe (the loop waits for them)
	off   error               // the kernel refused a socket's splice: Splice is Forward on this loop
	moved uint64              // bytes moved out of the pipes (tests)
}

// take returns an empty pipe: one of the pool's, else a new one (pipe2(2), non-blocking, sized
// with F_SETPIPE_SZ). Errors: pipe2(2)'s (EMFILE, ENFILE), or one wrapping unix.EMFILE past
// SplicePipesMax.
func (p *splicePipes) take() ([2]int, error) {
	if n := len(p.free); n > 0 {
		fds := p.free[n-1]
		p.free = p.free[:n-1]
		p.hold(fds)
		return fds, nil
	}
	if len(p.used) >= SplicePipesMax {
		return [2]int{}, fmt.Errorf("server: %d splice pipes in use: %w", len(p.used), unix.EMFILE)
	}
	var fds [2]int
	if err := unix.Pipe2(fds[:], unix.O_NONBLOCK|unix.O_CLOEXEC); err != nil {
		return fds, fmt.Errorf("server: pipe2 for a splice: %w", err)
	}
	unix.FcntlInt(uintptr(fds[0]), unix.F_SETPIPE_SZ, SplicePipeSize) // its size stays on failure
	p.hold(fds)
	return fds, nil
}

// hold counts fds among the pipes the splicers hold.
func (p *splicePipes) hold(fds [2]int) {
	if p.used == nil {
		p.used = map[[2]int]struct{}{}
	}
	p.used[fds] = struct{}{}
}

// put gives a pipe back: kept when empty and the pool has room, else closed.
func (p *splicePipes) put(fds [2]int, empty bool) {
	delete(p.used, fds)
	if empty && len(p.free) < SplicePipesFree {
		p.free = append(p.free, fds)
		return
	}
	unix.Close(fds[0])
	unix.Close(fds[1])
}

// close closes the pool's pipes at the loop's end: the free ones, and those splicers still
// hold (a loop that ended on an error: their bytes go nowhere now).
func (p *splicePipes) close() {
	for _, fds := range p.free {
		unix.Close(fds[0])
		unix.Close(fds[1])
	}
	for fds := range p.used {
		unix.Close(fds[0])
		unix.Close(fds[1])
	}
	p.free, p.used = nil, nil
}

// splicer moves one direction's bytes, src's input to dst's socket, in chunks: a POLL_ADD waits
// for src's input, a splice(2) moves what is there into a pipe (taken from the loop's pool
// then), and splices move the pipe's bytes to dst (a POLL_ADD on dst waits while its socket is
// full), after the output dst had; once the pipe is empty it goes back to the pool and the
// next chunk starts. So a direction holds at most a pipe's bytes, and a slow dst stops src's
// reading. The splices are the loop's own non-blocking calls, not IORING_OP_SPLICE requests:
// the kernel runs every one of those in an io-wq thread, whose hand-offs cost more CPU per
// GiB than the calls (docs/design.md). On the loop's goroutine only.
type splicer struct {
	src, dst *Conn
	cb       ringev.Callback
	pipe     [2]int
	hasPipe  bool
	inPipe   int            // bytes in the pipe
	inReq    ringev.Request // the POLL_ADD on src, while inPoll
	inPoll   bool           // the POLL_ADD on src is in flight
	outBusy  bool           // the POLL_ADD on dst is in flight
	reqs     int            // requests in flight
	srcDone  bool           // src gives no more input (closed, closing, at its EOF)
	dstDone  bool           // dst is closed: the pipe's bytes go nowhere
	small    int            // chunks below SpliceMinChunk in a row: the recv comes back at spliceSmallRun
	released bool           // finished (maybeRelease)
}

// spliceable reports whether c's input can go to dst through the kernel: both plain sockets of
// the same loop, served by the requests driver on uring, open, neither splicing already, and the
// kernel has not refused a splice on this loop.
func (c *Conn) spliceable(dst *Conn) bool {
	l := c.l
	if _, ok := l.drv.(*connReqs); !ok || l.pipes.off != nil || l.ev.Backend() != "uring" {
		return false
	}
	return dst.l == l && dst != c && c.tlsOf() == nil && dst.tlsOf() == nil && c.splicingOut() == nil && dst.splicingIn() == nil &&
		!c.closing && !c.closed && c.fl&cfLingering == 0 && c.fl&cfEOF == 0 && !dst.closing && !dst.closed && !dst.gone()
}

// startSplice makes c's further input go to dst through the kernel: the recv stops (its last
// completions are still delivered, and forwarded by the handler), then the splicer starts.
func (c *Conn) startSplice(dst *Conn) {
	s := &splicer{src: c, dst: dst}
	s.cb = s.onIO
	c.x().splOut, dst.x().splIn = s, s
	c.l.pipes.live++
	c.l.drv.update(c)
}

// unsentSpliced is the bytes a splice into c holds in its pipe, not yet sent.
func (c *Conn) unsentSpliced() int {
	if s := c.splicingIn(); s != nil {
		return s.inPipe
	}
	return 0
}

// endSplices is the connection's end (Conn.end) for the splices from and to it: no more input
// is spliced from it, and what a pipe holds for it is dropped.
func (c *Conn) endSplices() {
	if s := c.rare.splOut; s != nil {
		s.stopIn()
	}
	if s := c.rare.splIn; s != nil {
		s.dstGone()
	}
}

// spliceUpdate follows src's state (connReqs.update): reading goes on while it is wanted and
// the recv has ended; a POLL_ADD waiting for input is cancelled when reading is paused or held.
func (s *splicer) spliceUpdate() {
	c := s.src
	if c.closing || c.closed || c.fl&cfLingering != 0 || c.fl&cfEOF != 0 {
		s.stopIn()
		return
	}
	if c.bp >= bpPaused || c.fl&cfHeld != 0 {
		if s.inPoll {
			s.inReq.Cancel()
		}
		return
	}
	s.pumpIn()
}

// pumpIn starts the next chunk: a POLL_ADD for src's input, once the last chunk is sent and
// src's recv has ended.
func (s *splicer) pumpIn() {
	c := s.src
	if s.srcDone || s.inPoll || s.outBusy || s.inPipe > 0 || c.fl&cfRecvLive != 0 || c.bp >= bpPaused || c.fl&cfHeld != 0 {
		return
	}
	r, err := c.l.ev.Poll(int(c.fd), unix.POLLIN, s.cb, tokSpPollIn)
	if err != nil {
		c.end(fmt.Errorf("server: poll for a splice from fd %d: %w", c.fd, err))
		return
	}
	s.inReq, s.inPoll = r, true
	s.reqs++
}

// spliceIn moves src's input into a pipe (taken from the pool): splice(2), SPLICE_F_NONBLOCK.
// With no pipe to be had, the chunk goes through the copy path (splicing ends for this
// direction).
func (s *splicer) spliceIn() {
	c := s.src
	if !s.hasPipe {
		fds, err := c.l.pipes.take()
		if err != nil {
			c.l.e.logf("splice from fd %d: %v; forwarding with copies", c.fd, err)
			s.detach()
			return
		}
		s.pipe, s.hasPipe = fds, true
	}
	s.splicedIn(spliceNow(int(c.fd), s.pipe[1], SplicePipeSize))
}

// spliceNow is splice(2) of up to n bytes from in to out, SPLICE_F_MOVE | SPLICE_F_NONBLOCK
// (both non-blocking: EAGAIN when in has nothing or out no room).
func spliceNow(in, out, n int) (int, error) {
	for {
		m, err := unix.Splice(in, nil, out, nil, n, unix.SPLICE_F_MOVE|unix.SPLICE_F_NONBLOCK)
		if err != unix.EINTR {
			return int(m), err
		}
	}
}

// pumpOut moves the pipe's bytes to dst once dst's own output is sent: splice(2), or a
// POLL_ADD for room in dst's socket after one that could move nothing.
func (s *splicer) pumpOut(poll bool) {
	d := s.dst
	if s.outBusy || s.inPipe == 0 || s.dstDone || d.closed || d.outLen > 0 || len(d.pend) > 0 {
		return
	}
	if !poll {
		s.splicedOut(spliceNow(s.pipe[0], int(d.fd), s.inPipe))
		return
	}
	if _, err := d.l.ev.Poll(int(d.fd), unix.POLLOUT, s.cb, tokSpPollOut); err != nil {
		d.end(fmt.Errorf("server: poll for a splice to fd %d: %w", d.fd, err))
		return
	}
	s.outBusy = true
	s.reqs++
}

// sending reports whether the pipe's bytes wait for room in dst (a POLL_ADD on it): dst's own
// output waits for them.
func (s *splicer) sending() bool { return s.outBusy }

// onIO is the splicer's one callback.
func (s *splicer) onIO(x *ringev.Completion) {
	s.reqs--
	switch x.Token {
	case tokSpPollIn:
		s.inPoll = false
		s.polledIn(x.Err)
	case tokSpPollOut:
		s.outBusy = false
		if x.Err != nil && !errors.Is(x.Err, unix.ECANCELED) && !s.dst.closed {
			s.dst.end(x.Err)
		}
		s.pumpOut(false)
	}
	s.maybeRelease()
}

// polledIn follows the POLL_ADD on src: input (or its end, or an error) is there to splice.
func (s *splicer) polledIn(err error) {
	c := s.src
	switch {
	case s.srcDone || c.closed:
	case err == nil:
		s.spliceIn()
	case errors.Is(err, unix.ECANCELED): // PauseRead, the write limit, or a close
		s.spliceUpdate()
	default:
		c.end(err)
	}
}

// splicedIn follows the splice into the pipe: bytes (then sent on), src's end of file, nothing
// yet (polled again), or an error, which closes src; a kernel that refuses the splice
// (EINVAL: a socket splice(2) cannot read) turns splicing off on the loop, and the direction
// goes back to the copy path.
func (s *splicer) splicedIn(n int, err error) {
	c := s.src
	switch {
	case err == nil && n > 0:
		s.inPipe = n
		if s.small++; n >= SpliceMinChunk {
			s.small = 0
		}
		if !c.closed {
			c.gotInput()
		}
		s.pumpOut(false)
	case s.srcDone || c.closed:
	case err == nil: // the peer's FIN: the pipe is empty, every byte before it went on
		s.stopIn()
		c.peerEOF()
	case errors.Is(err, unix.EAGAIN), errors.Is(err, unix.ECANCELED):
		s.spliceUpdate()
	case errors.Is(err, unix.EINVAL), errors.Is(err, unix.EOPNOTSUPP):
		c.l.pipes.off = err
		c.l.e.logf("splice(2) from fd %d: %v; forwarding with copies", c.fd, err)
		s.detach()
	default:
		c.end(err)
	}
}

// splicedOut follows a splice out of the pipe: the rest is sent on (after a POLL_ADD when dst's
// socket is full); an empty pipe goes back to the pool, dst's output state follows (a close or
// CloseWrite that waited for these bytes), and the next chunk starts. An error closes dst.
func (s *splicer) splicedOut(n int, err error) {
	d := s.dst
	switch {
	case err == nil:
		s.inPipe -= n
		s.l().pipes.moved += uint64(n)
	case errors.Is(err, unix.EAGAIN):
		s.pumpOut(true)
		return
	case s.dstDone || d.closed:
		return
	default:
		d.end(err)
		return
	}
	if s.inPipe > 0 {
		if len(d.pend) > 0 && !d.dirty && !d.closed {
			d.l.markDirty(d) // written meanwhile: sent before the pipe's rest (see send)
		}
		s.pumpOut(false)
		return
	}
	s.l().pipes.put(s.pipe, true)
	s.hasPipe = false
	if !d.closed {
		if len(d.pend) > 0 && !d.dirty {
			d.l.markDirty(d) // written while the pipe was sent: goes at this turn's end
		}
		d.sentSome()
	}
	switch {
	case s.srcDone:
	case s.small >= spliceSmallRun: // not a stream any more: small chunks cost less copied
		s.detach()
	default:
		s.spliceUpdate()
	}
}

// l is the splicer's loop.
func (s *splicer) l() *Loop { return s.src.l }

// stopIn ends the input side: src splices no more (a POLL_ADD in flight is cancelled).
func (s *splicer) stopIn() {
	if s.srcDone {
		return
	}
	s.srcDone = true
	if s.src.rare.splOut == s {
		s.src.rare.splOut = nil
	}
	if s.inPoll {
		s.inReq.Cancel()
	}
	s.maybeRelease()
}

// dstGone is dst's end (Conn.end): the pipe's bytes are dropped, and src, if still open, goes
// back to the copy path (its handler's Splice forwards what comes, and fails).
func (s *splicer) dstGone() {
	s.dstDone = true
	s.dst.rare.splIn = nil
	s.detach()
}

// detach ends splicing for this direction while src stays open: its recv comes back.
func (s *splicer) detach() {
	src := s.src
	s.stopIn()
	if !src.closed {
		src.l.drv.update(src)
	}
	s.maybeRelease()
}

// maybeRelease finishes a splicer that has nothing left to do: no request in flight, and no
// input to come or no destination. Its pipe goes back (closed if it holds bytes).
func (s *splicer) maybeRelease() {
	if s.released || s.reqs > 0 || !s.srcDone || (s.inPipe > 0 && !s.dstDone) {
		return
	}
	l := s.l()
	if s.hasPipe {
		l.pipes.put(s.pipe, s.inPipe == 0)
		s.hasPipe = false
	}
	if s.dst.rare.splIn == s {
		s.dst.rare.splIn = nil
	}
	s.released = true
	l.pipes.live--
	l.maybeDone()
}
