//go:build unix

package nethttp

import (
	"io"
	"net"
	"net/http"
	"os"
	"sync"
	"time"

	"github.com/ringev/ringev/server"
)

// netConn is a connection as a net.Conn: what ConnState is given, and what Hijack returns.
// Once hijacked, Read takes the client's bytes from a pipe the loop feeds (those that came
// after the request's head first), and Write queues to the Conn, waiting while its output is
// past the write limit.
type netConn struct {
	h     *conn
	c     *server.Conn
	laddr net.Addr
	raddr net.Addr
	in    *pipe // set when hijacked

	mu       sync.Mutex
	wdl      time.Time
	unsynced int
}

func newNetConn(h *conn) *netConn {
	return &netConn{h: h, c: h.c, laddr: h.c.LocalAddr(), raddr: h.c.RemoteAddr()}
}

// hijack hands the connection to the handler of x (from its goroutine): the loop stops
// parsing, and the input left after the request's head goes to the returned conn.
func (h *conn) hijack(x *exchange) (*netConn, error) {
	nc := newNetConn(h)
	nc.in = newPipe(nc.more)
	done := make(chan bool, 1)
	err := h.c.Loop().Post(func() {
		if h.x != x {
			done <- false
			return
		}
		h.wmu.Lock()
		gone := h.gone
		h.wmu.Unlock()
		if gone {
			done <- false
			return
		}
		h.x = nil
		h.hj = nc
		h.c.SetTimeouts(0, 0)
		if x.body != nil {
			// What the body's reader has not read of the bytes given to it is the client's
			// next, as net/http's hijacked connection reads it from its buffer.
			if nc.in.put(x.unreadBody()) {
				h.pauseRead()
			}
			x.body.close()
		}
		h.state(http.StateHijacked)
		nc.fill()
		if h.eof {
			nc.in.end(nil) // the client's EOF came before: no OnData will tell it again
		}
		if x.detaching || x.direct || !nc.in.isFull() {
			// The body's reader held reading: what follows it is the hijacked conn's.
			x.detaching, x.direct = false, false
			h.resumeRead()
		}
		done <- true
	})
	if err != nil || !<-done {
		return nil, errHijackClosed
	}
	return nc, nil
}

// unreadBody is what x's body's reader has not read of the bytes the loop gave it (its
// bufio.Reader's, then the pipe's; on the loop, while its handler waits in Hijack), without
// the bytes after the body a chunked body's reader was given to peek at (still in the input).
func (x *exchange) unreadBody() []byte {
	var b []byte
	if x.br != nil {
		b, _ = x.br.Peek(x.br.Buffered())
	}
	b = x.body.unread(b)
	if x.chunks.state == chunkDone {
		b = b[:len(b)-min(len(b), x.chunks.peek)]
	}
	return b
}

// fill moves the Conn's input into the pipe (on the loop), and pauses reading while the pipe
// is full.
func (nc *netConn) fill() {
	in, _ := nc.c.Peek(-1)
	if len(in) == 0 {
		return
	}
	if nc.in.put(in) {
		nc.h.pauseRead()
	}
	nc.c.Discard(len(in))
}

// more is called by Read once the pipe has room again.
func (nc *netConn) more() {
	nc.c.Loop().Post(func() {
		nc.fill()
		if !nc.in.isFull() {
			nc.h.resumeRead()
		}
	})
}

func (nc *netConn) Read(b []byte) (int, error) {
	if nc.in == nil {
		return 0, net.ErrClosed
	}
	n, err := nc.in.Read(b)
	switch err {
	case io.ErrClosedPipe:
		err = net.ErrClosed
	case os.ErrDeadlineExceeded:
		err = &net.OpError{Op: "read", Net: "tcp", Source: nc.laddr, Addr: nc.raddr, Err: err}
	}
	return n, err
}

// Write writes b in pieces of at most syncEvery bytes, waiting between them while the Conn's
// output is past its write limit (see connWriter).
func (nc *netConn) Write(b []byte) (int, error) {
	nc.mu.Lock()
	defer nc.mu.Unlock()
	n := 0
	for {
		if !nc.wdl.IsZero() && !time.Now().Before(nc.wdl) {
			return n, &net.OpError{Op: "write", Net: "tcp", Source: nc.laddr, Addr: nc.raddr, Err: os.ErrDeadlineExceeded}
		}
		m, err := nc.c.Write(b[:min(len(b), syncEvery)])
		if n, b = n+m, b[m:]; err != nil {
			return n, err
		}
		if nc.unsynced += m; nc.unsynced >= syncEvery {
			nc.unsynced = 0
			if err := nc.h.syncWrites(nc.wdl); err != nil {
				if err == os.ErrDeadlineExceeded {
					err = &net.OpError{Op: "write", Net: "tcp", Source: nc.laddr, Addr: nc.raddr, Err: err}
				}
				return n, err
			}
		}
		if len(b) == 0 {
			return n, nil
		}
	}
}

func (nc *netConn) Close() error {
	if nc.in != nil {
		nc.in.close()
	}
	return nc.c.Close()
}

func (nc *netConn) LocalAddr() net.Addr  { return nc.laddr }
func (nc *netConn) RemoteAddr() net.Addr { return nc.raddr }

func (nc *netConn) SetDeadline(t time.Time) error {
	nc.SetReadDeadline(t)
	return nc.SetWriteDeadline(t)
}

func (nc *netConn) SetReadDeadline(t time.Time) error {
	if nc.in != nil {
		nc.in.setDeadline(t)
	}
	return nil
}

func (nc *netConn) SetWriteDeadline(t time.Time) error {
	nc.mu.Lock()
	nc.wdl = t
	nc.mu.Unlock()
	return nil
}
