// Package chatclient is the client side of examples/chat's spec that its measuring commands
// (load, stall) share: joining the chat.
package chatclient

import (
	"bufio"
	"fmt"
	"net"
	"time"
)

// Welcome is the chat's first line to a client.
const Welcome = "welcome; first line is your nick\n"

// Join connects to the chat at addr as nick, with deadline on every read and write of the
// connection: it reads the welcome, sends the nick and reads its own join line
// ("* NICK joined"), which is the next line when clients join one after another. It returns
// the connection and a 64 KiB reader of it; on an error the connection is closed.
func Join(addr, nick string, deadline time.Time) (net.Conn, *bufio.Reader, error) {
	c, err := net.DialTimeout("tcp", addr, time.Until(deadline))
	if err != nil {
		return nil, nil, err
	}
	c.SetDeadline(deadline)
	r := bufio.NewReaderSize(c, 64<<10)
	err = Expect(r, Welcome)
	if err == nil {
		_, err = fmt.Fprintf(c, "%s\n", nick)
	}
	if err == nil {
		err = Expect(r, "* "+nick+" joined\n")
	}
	if err != nil {
		c.Close()
		return nil, nil, fmt.Errorf("%s: joining: %w", nick, err)
	}
	return c, r, nil
}

// Expect reads a line from r and checks that it is want (with its LF).
func Expect(r *bufio.Reader, want string) error {
	got, err := r.ReadString('\n')
	if err != nil {
		return fmt.Errorf("reading %q: %w (read %q)", want, err, got)
	}
	if got != want {
		return fmt.Errorf("read %q, want %q", got, want)
	}
	return nil
}
