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
	var err error
	if dst.l == c.l && !dst.gone.Load() {
		if dst.fits(n) {
			dst.write(b)
		} else {
			err = dst.overflow(n)
		}
	} else {
		_, err = dst.Write(b)
	}
	c.discard(n)
	return n, err
}
