//go:build unix

package nethttp

import (
	"io"
	"net/http"
	"sync"
	"sync/atomic"
)

// maxPostHandlerReadBytes is how much of a body its handler left unread the server reads, to
// keep the connection, before it gives up and closes it instead (net/http's 256 KiB).
const maxPostHandlerReadBytes = 256 << 10

// reqBody is a request's r.Body: net/http's own body reader (Content-Length or chunked, with
// its checks and trailers) over the bytes the loop feeds, closed as net/http's server closes
// it (reading up to maxPostHandlerReadBytes of what is left, to keep the connection).
type reqBody struct {
	mu         sync.Mutex
	inner      io.ReadCloser // http.ReadRequest's body; never closed (that would read it all)
	chunked    bool
	left       int64 // Content-Length's bytes not yet read
	closing    bool  // the connection closes after this request
	sawEOF     bool
	closed     bool
	earlyClose bool // closed with more left than the server reads: the connection closes
}

func (b *reqBody) Read(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.closed {
		return 0, http.ErrBodyReadAfterClose
	}
	return b.readLocked(p)
}

func (b *reqBody) readLocked(p []byte) (int, error) {
	if b.sawEOF {
		return 0, io.EOF
	}
	n, err := b.inner.Read(p)
	b.left -= int64(n)
	switch {
	case err == io.EOF:
		b.sawEOF = true
	case err != nil && b.chunked:
		if _, e := b.inner.Read(nil); e == http.ErrBodyReadAfterClose {
			b.closed = true // a bad trailer: net/http's body refuses every later read
		}
	}
	return n, err
}

type bodyLocked struct{ b *reqBody }

func (l bodyLocked) Read(p []byte) (int, error) {
	if l.b.closed {
		return 0, http.ErrBodyReadAfterClose
	}
	return l.b.readLocked(p)
}

// Close ends the body as net/http's server does: what is left is read, up to
// maxPostHandlerReadBytes, so that the connection can serve the next request.
func (b *reqBody) Close() error {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.closed {
		return nil
	}
	var err error
	switch {
	case b.sawEOF:
	case !b.chunked && b.closing:
	case !b.chunked && b.left > maxPostHandlerReadBytes:
		b.earlyClose = true
	default:
		var n int64
		n, err = io.CopyN(io.Discard, bodyLocked{b}, maxPostHandlerReadBytes)
		if err == io.EOF {
			err = nil
		}
		if n == maxPostHandlerReadBytes {
			b.earlyClose = true
		}
	}
	b.closed = true
	return err
}

// mayWait reports whether Close may read what is left of the body: the handler left some of
// it unread, and the connection is not given up on it (closing, or more left than the server
// reads).
func (b *reqBody) mayWait() bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	return !b.closed && !b.sawEOF && (b.chunked || !b.closing && b.left <= maxPostHandlerReadBytes)
}

// state is what the response's header decides by, under the body's lock.
func (b *reqBody) state() (closed, sawEOF bool, unread int64) {
	b.mu.Lock()
	defer b.mu.Unlock()
	unread = -1
	if !b.chunked {
		unread = b.left
	}
	return b.closed, b.sawEOF, unread
}

// mark is a count that changes at each read of the body: what Content-Length has left.
func (b *reqBody) mark() int64 {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.left
}

func (b *reqBody) didEarlyClose() bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.earlyClose
}

// expectContinueReader is r.Body for "Expect: 100-continue": its first Read sends
// "100 Continue", unless the response has begun.
type expectContinueReader struct {
	resp       *response
	readCloser io.ReadCloser
	closed     atomic.Bool
	sawEOF     atomic.Bool
}

func (ecr *expectContinueReader) Read(p []byte) (n int, err error) {
	if ecr.closed.Load() {
		return 0, http.ErrBodyReadAfterClose
	}
	w := ecr.resp
	if w.canWriteContinue.Load() {
		w.writeContinueMu.Lock()
		if w.canWriteContinue.Load() {
			w.bufw.WriteString("HTTP/1.1 100 Continue\r\n\r\n")
			w.bufw.Flush()
			w.canWriteContinue.Store(false)
		}
		w.writeContinueMu.Unlock()
	}
	n, err = ecr.readCloser.Read(p)
	if err == io.EOF {
		ecr.sawEOF.Store(true)
	}
	return
}

func (ecr *expectContinueReader) Close() error {
	ecr.closed.Store(true)
	return ecr.readCloser.Close()
}
