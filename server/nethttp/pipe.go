//go:build unix

package nethttp

import (
	"errors"
	"io"
	"net"
	"os"
	"sync"
	"time"
)

// pipeCap is how many bytes a pipe holds before the loop pauses the connection's reading
// (64 KiB): the client's further input waits in the kernel (PauseRead).
const pipeCap = 64 << 10

// pipe carries a byte stream from the loop to one goroutine: a request's body, or a hijacked
// connection's input. The loop hands it what it received (put), the goroutine reads (Read,
// which blocks until bytes, the end or an error come, or the read deadline passes). A Read
// that waits lends its buffer to the pipe: put copies into it directly, one copy of the bytes
// fewer. Once the pipe holds pipeCap bytes or more, put says so (the loop pauses reading);
// once a Read has taken it to half of that, more is called (on the reader's goroutine) to have
// the loop read again.
type pipe struct {
	mu       sync.Mutex
	buf      []byte
	off      int
	lent     []byte // the buffer of the Read waiting on an empty pipe
	got      int    // bytes put into lent
	eof      bool   // the stream ended: Read returns io.EOF once buf is empty
	err      error  // the stream broke: Read returns it once buf is empty
	closed   bool   // the reader is gone: Read fails, put drops
	full     bool   // put reported pipeCap reached: more is due once there is room
	waiting  bool   // a Read waits for ready
	ready    chan struct{}
	deadline time.Time
	timeout  error // what a Read past the deadline returns: os.ErrDeadlineExceeded, or one wrapping it
	more     func()

	// Direct reading (direct): once buf is empty, Read reads the stream's dleft bytes left from
	// dc, a dup of the connection's socket, into its own buffer, as net/http's reads do; dend
	// is told (on the reader's goroutine) how many were left when dc is done with.
	dc     net.Conn
	dleft  int64
	dend   func(left int64)
	dlSent time.Time // the deadline dc was given
}

func newPipe(more func()) *pipe {
	return &pipe{ready: make(chan struct{}, 1), more: more, timeout: os.ErrDeadlineExceeded}
}

// put takes all of b (on the loop), into a waiting Read's buffer first, and reports whether
// the pipe now holds pipeCap bytes or more: the loop should stop reading until more is called.
func (p *pipe) put(b []byte) (full bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed || p.eof || p.err != nil || len(b) == 0 {
		return false // dropped: nobody will read it
	}
	if p.lent != nil {
		n := copy(p.lent[p.got:], b)
		p.got += n
		b = b[n:]
		if p.got == len(p.lent) {
			p.lent = nil
		}
	}
	if len(b) > 0 {
		if p.off > 0 && len(p.buf)+len(b) > cap(p.buf) {
			p.buf = p.buf[:copy(p.buf, p.buf[p.off:])]
			p.off = 0
		}
		p.buf = append(p.buf, b...)
	}
	p.wakeLocked()
	if len(p.buf)-p.off >= pipeCap {
		p.full = true
	}
	return p.full
}

// isFull reports whether put last found the pipe full and no Read has taken it to half since.
func (p *pipe) isFull() bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.full
}

// end marks the end of the stream: err nil is io.EOF after the bytes put; another error is
// returned by Read once they are read.
func (p *pipe) end(err error) {
	p.mu.Lock()
	if err == nil {
		if p.dc == nil {
			p.eof = true // (reading dc, the reader finds the end itself)
		}
	} else if p.err == nil && !p.eof {
		p.err = err
		p.dropDirectLocked()
	}
	p.wakeLocked()
	p.mu.Unlock()
}

func (p *pipe) wakeLocked() {
	if p.waiting {
		p.waiting = false
		select {
		case p.ready <- struct{}{}:
		default:
		}
	}
}

// Read reads what the loop put, waiting for it.
func (p *pipe) Read(b []byte) (int, error) {
	var timer *time.Timer
	defer func() {
		if timer != nil {
			timer.Stop()
		}
	}()
	for {
		p.mu.Lock()
		if n := p.got; n > 0 { // put filled b, lent while this Read waited
			p.lent, p.got = nil, 0
			p.mu.Unlock()
			return n, nil
		}
		p.lent = nil
		if p.closed {
			p.mu.Unlock()
			return 0, io.ErrClosedPipe
		}
		if avail := len(p.buf) - p.off; avail > 0 {
			if len(b) == 0 {
				p.mu.Unlock()
				return 0, nil
			}
			n := copy(b, p.buf[p.off:])
			p.off += n
			if p.off == len(p.buf) {
				p.buf, p.off = p.buf[:0], 0
			}
			more := p.full && len(p.buf)-p.off <= pipeCap/2
			if more {
				p.full = false
			}
			p.mu.Unlock()
			if more && p.more != nil {
				p.more()
			}
			return n, nil
		}
		if p.dc != nil && p.err == nil {
			if len(b) == 0 {
				p.mu.Unlock()
				return 0, nil
			}
			return p.readDirect(b)
		}
		switch {
		case p.err != nil:
			err := p.err
			p.mu.Unlock()
			return 0, err
		case p.eof:
			p.mu.Unlock()
			return 0, io.EOF
		}
		dl := p.deadline
		if !dl.IsZero() && !time.Now().Before(dl) {
			err := p.timeout
			p.mu.Unlock()
			return 0, err
		}
		p.waiting = true
		if len(b) > 0 {
			p.lent = b
		}
		p.mu.Unlock()
		if dl.IsZero() {
			<-p.ready
			continue
		}
		if timer == nil {
			timer = time.NewTimer(time.Until(dl))
		} else {
			timer.Reset(time.Until(dl))
		}
		select {
		case <-p.ready:
		case <-timer.C:
		}
	}
}

// direct has Read take the stream's next left bytes from dc once the bytes put are read (on
// the loop, once the loop no longer reads the connection): one copy, by the kernel, into the
// reader's buffer, and no hand-off per read. end is called, on the reader's goroutine, once
// dc is done with: left is 0 when every byte was read, more after an error or the client's
// EOF. The pipe closes dc.
func (p *pipe) direct(dc net.Conn, left int64, end func(left int64)) {
	p.mu.Lock()
	if p.closed || p.err != nil || p.eof {
		p.mu.Unlock()
		dc.Close()
		end(left) // the loop feeds what is left, as before the detach
		return
	}
	p.dc, p.dleft, p.dend = dc, left, end
	p.wakeLocked()
	p.mu.Unlock()
}

// readDirect is Read from dc (p.mu held, released).
func (p *pipe) readDirect(b []byte) (int, error) {
	dc := p.dc
	if int64(len(b)) > p.dleft {
		b = b[:p.dleft]
	}
	if dl := p.deadline; !dl.Equal(p.dlSent) {
		p.dlSent = dl
		dc.SetReadDeadline(dl)
	}
	p.mu.Unlock()
	n, err := dc.Read(b)
	p.mu.Lock()
	p.dleft -= int64(n)
	var end func(int64)
	switch {
	case p.closed:
		p.mu.Unlock()
		return n, io.ErrClosedPipe
	case p.err != nil && err != nil:
		err = p.err // the loop's: the connection closed
	case err != nil && errors.Is(err, os.ErrDeadlineExceeded):
		err = p.timeout // dc stays: a later deadline may read on
		if n > 0 {
			err = nil
		}
		p.mu.Unlock()
		return n, err
	case err == nil && p.dleft == 0:
		p.eof = true
	case err == io.EOF:
		p.eof = true // the client's EOF: the body's reader says it is cut short
		if n > 0 {
			err = nil
		}
	case err != nil:
		p.err = err
	}
	if p.dc == dc && (p.eof || p.err != nil) {
		end = p.dend
		p.dc, p.dend = nil, nil
		dc.Close()
	}
	left := p.dleft
	p.mu.Unlock()
	if end != nil {
		end(left)
	}
	return n, err
}

// unread returns b (which it does not change) followed by the bytes put and not yet read.
func (p *pipe) unread(b []byte) []byte {
	p.mu.Lock()
	defer p.mu.Unlock()
	return append(b[:len(b):len(b)], p.buf[p.off:]...)
}

// close ends the reader's side: later reads fail and later puts are dropped.
func (p *pipe) close() {
	p.mu.Lock()
	p.closed = true
	p.buf, p.off, p.lent = nil, 0, nil
	p.dropDirectLocked()
	p.wakeLocked()
	p.mu.Unlock()
}

// dropDirectLocked closes dc, if set: a Read in it returns.
func (p *pipe) dropDirectLocked() {
	if p.dc != nil {
		p.dc.Close()
		p.dc, p.dend = nil, nil
	}
}

// setDeadline sets the time after which a Read that would wait fails with
// os.ErrDeadlineExceeded; zero removes it. A Read waiting now re-checks.
func (p *pipe) setDeadline(t time.Time) {
	p.mu.Lock()
	p.deadline = t
	if p.dc != nil {
		p.dlSent = t
		p.dc.SetReadDeadline(t) // a Read waiting in dc re-checks
	}
	p.waiting = true
	p.wakeLocked()
	p.mu.Unlock()
}
