//go:build unix

package server

// Forward moves the connection's whole input to dst's output, in order, and returns the number
// of bytes moved: what Next(-1) followed by dst.Write does (a proxy's OnData), in one call that
// checks the caller once. dst may be on another loop (its Write then queues, as from any
// goroutine). It belongs to c's loop's goroutine (an error wrapping ringev.ErrNotOwner from
// another, nothing moved); when dst is closing or closed the input is discarded all the same and
// the error is net.ErrClosed; when it would take dst's output past its cap, dst is closed and
// the error is ErrOutputFull (see Write).
func (c *Conn) Forward(dst *Conn) (int, error) {
	if !c.l.ev.Owned() {
		return 0, errNotOwner("Forward")
	}
	b := c.input()
	n := len(b)
	if n == 0 {
		return 0, nil
	}
	err := dst.forwarded(b, c.l)
	c.discard(n)
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
// kernel, socket to pipe to socket (IORING_OP_SPLICE, Linux 5.7; io_uring_prep_splice(3),
// splice(2)), without a copy in user space. That needs both connections on the same loop, the
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
// Splicing costs more than a copy for small messages (a POLL_ADD and two SPLICEs, which the
// kernel runs in its io-wq threads, against a recv and a send): it starts when one Splice call
// moves at least SpliceMinChunk bytes, and ends after 8 splices in a row that moved fewer (the
// recv takes over again), so that requests and replies of a few hundred bytes keep the copy
// path.
func (c *Conn) Splice(dst *Conn) (int, error) {
	n, err := c.Forward(dst)
	if err == nil && n >= SpliceMinChunk && c.splicingOut() == nil && c.spliceable(dst) {
		c.startSplice(dst)
	}
	return n, err
}
