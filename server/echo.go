//go:build unix

package server

// Echo is the echo server, a Handler: every byte received is sent back, in order. It keeps no
// state; the connection closes when the client's does.
type Echo struct{}

// OnData writes back every byte of the connection's input.
func (Echo) OnData(c *Conn) {
	b, _ := c.Next(-1)
	c.Write(b)
}
