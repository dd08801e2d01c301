//go:build unix

package nethttp

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"math"
	"net"
	"net/http"
	"net/textproto"
	"os"
	"path"
	"reflect"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"golang.org/x/sys/unix"
)

// response is a request's http.ResponseWriter (and http.Flusher, http.Hijacker, io.ReaderFrom,
// and what http.ResponseController asks for). It writes what net/http's server writes, byte
// for byte: the same buffering before chunking decides Content-Length, the same sniffed
// Content-Type, the same chunks, Connection and Date headers.
type response struct {
	x       *exchange
	req     *http.Request
	reqBody io.ReadCloser // the body before an Expect wrapper

	wroteHeader      bool
	wants10KeepAlive bool
	wantsClose       bool

	writeContinueMu  sync.Mutex
	canWriteContinue atomic.Bool

	w    *bufio.Writer // bufferBeforeChunkingSize bytes, in front of cw
	cw   chunkWriter
	bufw *outBuf // the response's bytes on their way to the Conn

	handlerHeader http.Header
	calledHeader  bool

	written       int64
	contentLength int64
	status        int

	closeAfterReply     bool
	fullDuplex          bool
	requestBodyLimitHit bool
	bodyAtHeader        int64 // the body's reader's count of what it had left at WriteHeader
	trailers            []string

	handlerDone atomic.Bool
	hijacked    atomic.Bool
	werr        error // the first error writing to the connection

	clenBuf   [10]byte
	statusBuf [3]byte

	closeNotifyMu        sync.Mutex
	closeNotifyCh        chan bool
	closeNotifyTriggered bool
}

// bufferBeforeChunkingSize is net/http's: a response that ends within it gets a
// Content-Length, a longer one is chunked (HTTP/1.1).
const bufferBeforeChunkingSize = 2048

// syncEvery is how many bytes a response writes to the Conn between waits for its output to
// be below the write limit.
const syncEvery = 64 << 10

var ()

// outBuf holds a response's bytes until they go to the Conn: at a Flush (from the handler's
// goroutine, through the Conn's inbox), past flushAt bytes, or at the response's end, when the
// loop takes them with the connection back (one hand-off for both).
type outBuf struct {
	b []byte
	w connWriter

	// The last plain header written through this buffer (plainHead), kept for the next
	// with the same fields in the same second: the status line of 200, the handler's
	// Content-Type line (none unless hasCT), the Date line of date, the Content-Length clen,
	// the sniffed Content-Type line (none if sniffed is empty), the blank line.
	head    []byte
	ct      string
	hasCT   bool
	date    *dateValue
	clen    int64
	sniffed string
}

// flushAt is how many bytes outBuf holds before it writes them to the Conn.
const flushAt = 16 << 10

func (o *outBuf) Write(p []byte) (int, error) {
	if len(o.b)+len(p) > flushAt {
		if err := o.Flush(); err != nil {
			return 0, err
		}
		if len(p) > flushAt {
			return o.w.Write(p)
		}
	}
	o.b = append(o.b, p...)
	return len(p), nil
}

func (o *outBuf) WriteString(s string) (int, error) {
	if len(o.b)+len(s) > flushAt {
		return o.writeLong(s)
	}
	o.b = append(o.b, s...)
	return len(s), nil
}

func (o *outBuf) writeLong(s string) (int, error) { return o.Write([]byte(s)) }

// appendField writes the header line "key: v\r\n", its value a string or bytes.
func appendField[V string | []byte](o *outBuf, key string, v V) {
	if len(o.b)+len(key)+len(v)+4 > flushAt {
		o.WriteString(key)
		o.WriteString(": ")
		o.WriteString(string(v))
		o.WriteString("\r\n")
		return
	}
	b := append(o.b, key...)
	b = append(b, ':', ' ')
	b = append(b, v...)
	o.b = append(b, '\r', '\n')
}

func (o *outBuf) WriteByte(c byte) error {
	_, err := o.Write([]byte{c})
	return err
}

// Flush writes what is held to the Conn.
func (o *outBuf) Flush() error {
	if len(o.b) == 0 {
		return nil
	}
	_, err := o.w.Write(o.b)
	o.b = o.b[:0]
	return err
}

// initResponse prepares x's response (part of x, which is new or recycled: the response is
// zero). Its header map is made by Header, when asked for.
func initResponse(x *exchange) *response {
	w := &x.resp
	var conn string // the request's Connection
	if len(x.req.Header) > 0 {
		conn = headerGet(x.req.Header, "Connection")
	}
	w.x, w.req, w.reqBody = x, x.req, x.req.Body
	w.contentLength = -1
	w.wants10KeepAlive = x.req.ProtoMajor == 1 && x.req.ProtoMinor == 0 && hasToken(conn, "keep-alive")
	w.wantsClose = x.req.Close || hasToken(conn, "close")
	w.cw.res = w
	w.w, w.bufw = x.h.ls.takeBufs()
	w.w.Reset(&w.cw)
	w.bufw.w = connWriter{w}
	return w
}

// maxLoopBufs bounds the responses' buffers a loop keeps for reuse (loopState.bufs).
const maxLoopBufs = 64

// respBufs are a response's buffers: its bufio.Writer and its outBuf.
type respBufs struct {
	w   *bufio.Writer
	out *outBuf
}

// takeBufs returns buffers for a response (on the loop): a pair kept, else new ones.
func (ls *loopState) takeBufs() (*bufio.Writer, *outBuf) {
	if n := len(ls.bufs); n > 0 {
		b := ls.bufs[n-1]
		ls.bufs[n-1] = respBufs{}
		ls.bufs = ls.bufs[:n-1]
		return b.w, b.out
	}
	return bufio.NewWriterSize(nil, bufferBeforeChunkingSize), &outBuf{b: make([]byte, 0, 4<<10)}
}

// putBufs keeps a response's buffers for the next (on the loop, once the handler is done with
// them), unless the loop keeps maxLoopBufs or out has grown past 64 KiB.
func (ls *loopState) putBufs(w *bufio.Writer, out *outBuf) {
	if len(ls.bufs) >= maxLoopBufs || cap(out.b) > 64<<10 {
		return
	}
	w.Reset(nil)
	out.b, out.w = out.b[:0], connWriter{}
	ls.bufs = append(ls.bufs, respBufs{w, out})
}

// connWriter writes a response's bytes to its Conn (from the handler's goroutine), waiting
// every syncEvery bytes while the Conn's output is past its write limit. A write longer than
// syncEvery goes in pieces of syncEvery, with the waits between them, so that the Conn's
// output stays far below its cap (server.WithMaxPending) however much one write holds.
//
// Past the write deadline (WriteTimeout, or http.ResponseController's) a write fails, as
// net/http's connection write does, with "write tcp LOCAL->REMOTE: i/o timeout"; the bytes
// written before it are still sent, and the connection closes once the handler returns.
type connWriter struct{ w *response }

func (cw connWriter) Write(p []byte) (int, error) {
	n := 0
	for len(p) > syncEvery {
		m, err := cw.write(p[:syncEvery])
		if n += m; err != nil {
			return n, err
		}
		p = p[syncEvery:]
	}
	m, err := cw.write(p)
	return n + m, err
}

// write is Write of at most syncEvery bytes.
func (cw connWriter) write(p []byte) (int, error) {
	w := cw.w
	if w.werr != nil {
		return 0, w.werr
	}
	x := w.x
	if x.pastWriteDeadline() {
		w.werr = x.writeTimeout()
		return 0, w.werr
	}
	n, err := x.h.c.Write(p)
	if err != nil {
		if err == net.ErrClosed {
			err = x.goneErr()
		}
		w.werr = err
		return n, err
	}
	if x.unsynced += n; x.unsynced >= syncEvery {
		x.unsynced = 0
		if err := x.h.syncWrites(x.wdl); err != nil {
			switch err {
			case os.ErrDeadlineExceeded:
				err = x.writeTimeout()
			case net.ErrClosed:
				err = x.goneErr()
			}
			w.werr = err
			return n, err
		}
	}
	return n, nil
}

// pastWriteDeadline reports whether the response's write deadline has passed.
func (x *exchange) pastWriteDeadline() bool {
	return !x.wdl.IsZero() && !time.Now().Before(x.wdl)
}

// writeTimeout is the error of a response's write past its deadline, net/http's: a
// *net.OpError naming the connection's addresses and wrapping os.ErrDeadlineExceeded.
func (x *exchange) writeTimeout() error {
	h := x.h
	return &net.OpError{Op: "write", Net: "tcp", Source: h.ls.localAddr(h.c), Addr: h.c.RemoteAddr(), Err: os.ErrDeadlineExceeded}
}

// goneWhy is why a connection closed, for the error of a write after it: 0 until OnClose,
// whyServer where the server closed it, else the errno a write to its socket meets then.
type goneWhy uint8

const whyServer goneWhy = 255

// whyOf is the goneWhy of OnClose's reason: the client's EOF or reset is EPIPE, what a write
// to a socket whose peer has reset it meets once the reset is known (net/http's handlers get
// it); another errno (ETIMEDOUT, ...) is itself; the server's reasons (its close, a timeout,
// the shutdown) are whyServer.
func whyOf(err error) goneWhy {
	var errno unix.Errno
	switch {
	case errors.Is(err, io.EOF), errors.Is(err, io.ErrUnexpectedEOF):
		return goneWhy(unix.EPIPE)
	case errors.As(err, &errno) && errno == unix.ECONNRESET:
		return goneWhy(unix.EPIPE)
	case errno > 0 && errno < unix.Errno(whyServer):
		return goneWhy(errno)
	}
	return whyServer
}

// goneErr is the error of a response's write once its connection has closed (the Conn's
// net.ErrClosed), net/http's: a *net.OpError, "write tcp LOCAL->REMOTE: write: broken pipe",
// wrapping an *os.SyscallError of syscall.EPIPE where the client closed or reset the
// connection (errors.Is(err, syscall.EPIPE)), of the errno the connection ended on where it was
// another (ETIMEDOUT, say); wrapping net.ErrClosed where the server closed it (a shutdown). A
// write that meets the close before OnClose has run takes the client's leaving for its cause,
// unless the server is shutting down.
func (x *exchange) goneErr() error {
	h := x.h
	h.wmu.Lock()
	why := h.why
	h.wmu.Unlock()
	if why == 0 && !h.ls.shutting.Load() {
		why = goneWhy(unix.EPIPE)
	}
	var err error = net.ErrClosed
	if why != 0 && why != whyServer {
		err = os.NewSyscallError("write", unix.Errno(why))
	}
	return &net.OpError{Op: "write", Net: "tcp", Source: h.ls.localAddr(h.c), Addr: h.c.RemoteAddr(), Err: err}
}

// chunkWriter is the writer behind w.w: it writes the header on the first write, then the
// body, in chunks when chunking.
type chunkWriter struct {
	res         *response
	header      headerSnap // the handler's as it was at WriteHeader (taken: snapped)
	snapped     bool
	wroteHeader bool
	chunking    bool
}

func (cw *chunkWriter) Write(p []byte) (n int, err error) {
	if !cw.wroteHeader {
		cw.writeHeader(p)
	}
	if cw.res.req.Method == "HEAD" {
		return len(p), nil
	}
	bw := cw.res.bufw
	if cw.chunking {
		_, err = fmt.Fprintf(bw, "%x\r\n", len(p))
		if err != nil {
			return
		}
	}
	n, err = bw.Write(p)
	if cw.chunking && err == nil {
		_, err = bw.WriteString("\r\n")
	}
	return
}

func (cw *chunkWriter) flush() error {
	if !cw.wroteHeader {
		cw.writeHeader(nil)
	}
	return cw.res.bufw.Flush()
}

func (cw *chunkWriter) close() {
	if !cw.wroteHeader {
		cw.writeHeader(nil)
	}
	if cw.chunking {
		bw := cw.res.bufw
		bw.WriteString("0\r\n")
		if trailers := cw.res.finalTrailers(); trailers != nil {
			trailers.Write(bw)
		}
		bw.WriteString("\r\n")
	}
}

func (w *response) Header() http.Header {
	if !w.cw.snapped && w.wroteHeader && !w.cw.wroteHeader {
		w.cw.snap()
	}
	w.calledHeader = true
	if w.handlerHeader == nil {
		// Each response's own, never reused: a goroutine may keep it after the handler
		// returned, and its writes must reach no later response.
		w.handlerHeader = make(http.Header)
	}
	return w.handlerHeader
}

// relevantCaller is the first caller outside this package and net/http, for the log.
func relevantCaller() runtime.Frame {
	pc := make([]uintptr, 16)
	n := runtime.Callers(1, pc)
	frames := runtime.CallersFrames(pc[:n])
	var frame runtime.Frame
	for {
		f, more := frames.Next()
		if !strings.HasPrefix(f.Function, "net/http.") && !strings.Contains(f.Function, "/server/nethttp.") {
			return f
		}
		frame = f
		if !more {
			break
		}
	}
	return frame
}

func (w *response) logf(format string, args ...any) { w.x.h.s.logf(format, args...) }

func (w *response) WriteHeader(code int) {
	if w.hijacked.Load() {
		caller := relevantCaller()
		w.logf("http: response.WriteHeader on hijacked connection from %s (%s:%d)", caller.Function, path.Base(caller.File), caller.Line)
		return
	}
	if w.wroteHeader {
		caller := relevantCaller()
		w.logf("http: superfluous response.WriteHeader call from %s (%s:%d)", caller.Function, path.Base(caller.File), caller.Line)
		return
	}
	if code < 100 || code > 999 {
		panic(fmt.Sprintf("invalid WriteHeader code %v", code))
	}
	if (code < 101 || code > 199) && w.canWriteContinue.Load() {
		w.disableWriteContinue()
	}
	if code >= 100 && code <= 199 && code != http.StatusSwitchingProtocols {
		writeStatusLine(w.bufw, w.req.ProtoAtLeast(1, 1), code, w.statusBuf[:])
		w.handlerHeader.WriteSubset(w.bufw, excludedHeadersNoBody)
		w.bufw.WriteString("\r\n")
		w.bufw.Flush()
		return
	}
	w.wroteHeader = true
	w.status = code
	if rb, ok := w.reqBody.(*reqBody); ok {
		w.bodyAtHeader = rb.mark()
	}
	if w.calledHeader && !w.cw.snapped {
		w.cw.snap()
	}
	cl := ""
	if w.cw.snapped {
		cl = w.cw.header.get(hContentLength) // the map's, as just taken
	} else {
		cl = headerGet(w.handlerHeader, "Content-Length")
	}
	if cl != "" {
		v, err := strconv.ParseInt(cl, 10, 64)
		if err == nil && v >= 0 {
			w.contentLength = v
		} else {
			w.logf("http: invalid Content-Length of %q", cl)
			w.handlerHeader.Del("Content-Length")
		}
	}
}

var excludedHeadersNoBody = map[string]bool{"Content-Length": true, "Transfer-Encoding": true}

func headerGet(h http.Header, key string) string {
	if v := h[key]; len(v) > 0 {
		return v[0]
	}
	return ""
}

// extraHeader is what writeHeader adds to the handler's header.
type extraHeader struct {
	contentType      string
	connection       string
	transferEncoding string
	date             string // the Date line (dateLine)
	contentLength    []byte
}

func (h extraHeader) write(w *outBuf) {
	if h.date != "" {
		w.WriteString(h.date)
	}
	if h.contentLength != nil {
		appendField(w, "Content-Length", h.contentLength)
	}
	if h.contentType != "" {
		appendField(w, "Content-Type", h.contentType)
	}
	if h.connection != "" {
		appendField(w, "Connection", h.connection)
	}
	if h.transferEncoding != "" {
		appendField(w, "Transfer-Encoding", h.transferEncoding)
	}
}

func bodyAllowedForStatus(status int) bool {
	switch {
	case status >= 100 && status <= 199, status == 204, status == 304:
		return false
	}
	return true
}

func suppressedHeaders(status int) []int {
	switch {
	case status == 304:
		return []int{hContentType, hContentLength, hTransferEncoding}
	case !bodyAllowedForStatus(status):
		return []int{hContentLength, hTransferEncoding}
	}
	return nil
}

// writeHeader decides the header net/http's server would send, and writes it to the
// connection's buffer. p is the body's first bytes (sniffed for a Content-Type; their length
// is the Content-Length when the handler has ended).
func (cw *chunkWriter) writeHeader(p []byte) {
	if cw.wroteHeader {
		return
	}
	w := cw.res
	if b := w.req.Body; reflect.TypeOf(b) == maxBytesReaderType && !w.fullDuplex {
		// Its limit passed so far (finishRequest looks again); not in full duplex, where
		// another goroutine of the handler may be reading it.
		w.maxBytesRead(b)
	}
	cw.wroteHeader = true
	keepAlivesEnabled := !w.x.h.ls.shutting.Load() // net/http's doKeepAlives
	isHEAD := w.req.Method == "HEAD"

	cw.snap() // the map now, unless taken at WriteHeader
	if cw.plainHeader(p, keepAlivesEnabled) {
		return
	}
	header := &cw.header
	delHeader := header.del
	var setHeader extraHeader

	trailers := false
	for i := 0; header.prefixed && i < len(header.fields); i++ {
		if f := &header.fields[i]; strings.HasPrefix(f.key, http.TrailerPrefix) {
			f.gone = true
			trailers = true
		}
	}
	for _, v := range header.values(hTrailer) {
		trailers = true
		foreachHeaderElement(v, cw.res.declareTrailer)
	}

	te := header.get(hTransferEncoding)
	hasTE := te != ""

	if w.handlerDone.Load() && !trailers && !hasTE && bodyAllowedForStatus(w.status) && !header.has(hContentLength) && (!isHEAD || len(p) > 0) {
		w.contentLength = int64(len(p))
		setHeader.contentLength = strconv.AppendInt(cw.res.clenBuf[:0], int64(len(p)), 10)
	}

	if w.wants10KeepAlive && keepAlivesEnabled {
		sentLength := header.get(hContentLength) != ""
		if sentLength && header.get(hConnection) == "keep-alive" {
			w.closeAfterReply = false
		}
	}

	hasCL := w.contentLength != -1

	if w.wants10KeepAlive && (isHEAD || hasCL || !bodyAllowedForStatus(w.status)) {
		connectionHeaderSet := header.has(hConnection)
		if !connectionHeaderSet {
			setHeader.connection = "keep-alive"
		}
	} else if !w.req.ProtoAtLeast(1, 1) || w.wantsClose {
		w.closeAfterReply = true
	}

	if header.get(hConnection) == "close" || !keepAlivesEnabled {
		w.closeAfterReply = true
	}

	if ecr, ok := w.req.Body.(*expectContinueReader); ok && !ecr.sawEOF.Load() {
		w.closeAfterReply = true
	}

	if w.req.ContentLength != 0 && !w.closeAfterReply && !w.fullDuplex {
		var discard, tooBig bool
		switch bdy := w.req.Body.(type) {
		case *expectContinueReader:
		case *reqBody:
			closed, sawEOF, unread := bdy.state()
			switch {
			case closed:
				if !sawEOF {
					w.closeAfterReply = true
				}
			case unread >= maxPostHandlerReadBytes:
				tooBig = true
			default:
				discard = true
			}
		default:
			discard = true
		}
		if discard {
			_, err := io.CopyN(io.Discard, w.reqBody, maxPostHandlerReadBytes+1)
			switch err {
			case nil:
				tooBig = true
			case http.ErrBodyReadAfterClose:
			case io.EOF:
				if err := w.reqBody.Close(); err != nil {
					w.closeAfterReply = true
				}
			default:
				w.closeAfterReply = true
			}
		}
		if tooBig {
			w.requestTooLarge()
			delHeader(hConnection)
			setHeader.connection = "close"
		}
	}

	code := w.status
	if bodyAllowedForStatus(code) {
		haveType := header.has(hContentType)
		ce := header.get(hContentEncoding)
		hasCE := len(ce) > 0
		if !hasCE && !haveType && !hasTE && len(p) > 0 {
			setHeader.contentType = http.DetectContentType(p)
		}
	} else {
		for _, k := range suppressedHeaders(code) {
			delHeader(k)
		}
	}

	if !header.has(hDate) {
		setHeader.date = dateLine()
	}

	if hasCL && hasTE && te != "identity" {
		w.logf("http: WriteHeader called with both Transfer-Encoding of %q and a Content-Length of %d", te, w.contentLength)
		delHeader(hContentLength)
		hasCL = false
	}

	if w.req.Method == "HEAD" || !bodyAllowedForStatus(code) || code == http.StatusNoContent {
		delHeader(hTransferEncoding)
	} else if hasCL {
		delHeader(hTransferEncoding)
	} else if w.req.ProtoAtLeast(1, 1) {
		if hasTE && te == "identity" {
			cw.chunking = false
			w.closeAfterReply = true
			delHeader(hTransferEncoding)
		} else {
			cw.chunking = true
			setHeader.transferEncoding = "chunked"
			if hasTE && te == "chunked" {
				delHeader(hTransferEncoding)
			}
		}
	} else {
		w.closeAfterReply = true
		delHeader(hTransferEncoding)
	}

	if cw.chunking {
		delHeader(hContentLength)
	}
	if !w.req.ProtoAtLeast(1, 0) {
		return
	}

	delConnectionHeader := w.closeAfterReply &&
		(!keepAlivesEnabled || !hasToken(header.get(hConnection), "close")) &&
		!isProtocolSwitchResponse(w.status, header)
	if delConnectionHeader {
		delHeader(hConnection)
		if w.req.ProtoAtLeast(1, 1) {
			setHeader.connection = "close"
		}
	}

	writeStatusLine(w.bufw, w.req.ProtoAtLeast(1, 1), code, w.statusBuf[:])
	header.write(w.bufw)
	setHeader.write(w.bufw)
	w.bufw.WriteString("\r\n")
}

// plainHeader writes the header of the common response, and reports whether it did: an
// HTTP/1.1 request without a body, not HEAD, whose handler has returned with a status that
// allows a body, a header with no field writeHeader decides on but Content-Type, the
// connection kept. It is what writeHeader's rules come to then, without asking each: the
// handler's fields, Date, Content-Length (the body's length), a sniffed Content-Type where
// the handler set none.
func (cw *chunkWriter) plainHeader(p []byte, keepAlivesEnabled bool) bool {
	w, s := cw.res, &cw.header
	req := w.req
	if !keepAlivesEnabled || !w.handlerDone.Load() || w.closeAfterReply || w.wantsClose || w.wants10KeepAlive ||
		req.ProtoMajor != 1 || req.ProtoMinor != 1 || req.ContentLength != 0 || req.Method == "HEAD" ||
		!bodyAllowedForStatus(w.status) || s.prefixed || s.decided() {
		return false
	}
	if _, ok := req.Body.(*expectContinueReader); ok {
		return false
	}
	w.contentLength = int64(len(p))
	ct := ""
	if s.known[hContentType] == 0 && len(p) > 0 {
		ct = http.DetectContentType(p)
	}
	o := w.bufw
	if w.status == http.StatusOK && (len(s.fields) == 0 || len(s.fields) == 1 && s.known[hContentType] == 1 && len(s.fields[0].vals) == 1) {
		if o.plainHead(s, ct, w.contentLength) {
			return true
		}
	}
	if w.status == http.StatusOK && len(o.b)+len(statusOK) <= flushAt {
		o.b = append(o.b, statusOK...)
	} else {
		writeStatusLine(o, true, w.status, w.statusBuf[:])
	}
	s.write(o)
	d := dateNow()
	if len(o.b)+len(d.lineCL)+20+len(ct)+20 > flushAt {
		o.WriteString(d.line)
		appendField(o, "Content-Length", strconv.AppendInt(w.clenBuf[:0], w.contentLength, 10))
		if ct != "" {
			appendField(o, "Content-Type", ct)
		}
		o.WriteString("\r\n")
		return true
	}
	b := append(o.b, d.lineCL...)
	b = strconv.AppendInt(b, w.contentLength, 10)
	if ct != "" {
		b = append(b, "\r\nContent-Type: "...)
		b = append(b, ct...)
	}
	o.b = append(b, "\r\n\r\n"...)
	return true
}

// plainHead writes the header of a plain response of status 200 whose one field, if any, is
// Content-Type with one value (of at most maxHeadCT bytes), the header kept if it is the
// same (made again where a field or the second differ), and reports whether it did (not
// where the buffer would pass flushAt). sniffed is the Content-Type to add (one of
// http.DetectContentType's), clen the Content-Length.
func (o *outBuf) plainHead(s *headerSnap, sniffed string, clen int64) bool {
	ct, hasCT := "", len(s.fields) == 1
	if hasCT {
		if ct = s.fields[0].vals[0]; len(ct) > maxHeadCT {
			return false
		}
	}
	d := dateNow()
	if d != o.date || clen != o.clen || hasCT != o.hasCT || ct != o.ct || sniffed != o.sniffed {
		h := append(o.head[:0], statusOK...)
		if hasCT {
			h = append(h, "Content-Type: "...)
			h = append(h, headerValue(ct)...)
			h = append(h, '\r', '\n')
		}
		h = append(h, d.lineCL...)
		h = strconv.AppendInt(h, clen, 10)
		if sniffed != "" {
			h = append(h, "\r\nContent-Type: "...)
			h = append(h, sniffed...)
		}
		o.head = append(h, "\r\n\r\n"...)
		o.ct, o.hasCT, o.date, o.clen, o.sniffed = ct, hasCT, d, clen, sniffed
	}
	if len(o.b)+len(o.head) > flushAt {
		return false
	}
	o.b = append(o.b, o.head...)
	return true
}

// maxHeadCT is the longest Content-Type a plain header's head is kept with (outBuf.head).
const maxHeadCT = 128

func isProtocolSwitchResponse(code int, h *headerSnap) bool {
	return code == http.StatusSwitchingProtocols && h.get(hUpgrade) != "" &&
		valuesHaveToken(h.values(hConnection), "Upgrade")
}

// snap takes the handler's header as it is now, once: net/http clones the map at WriteHeader,
// so that the handler's later changes do not show.
func (cw *chunkWriter) snap() {
	if !cw.snapped {
		cw.snapped = true
		cw.header.take(cw.res.handlerHeader)
	}
}

// headerSnap is a response header as it was when taken: its fields sorted by name, as
// http.Header's WriteSubset writes them, with those writeHeader removed marked gone. It is
// part of the response (no map, no allocation for a few fields).
type headerSnap struct {
	fields   []headerField
	vals     []string      // the fields' values, one after another
	known    [nKnown]int32 // where each of the fields writeHeader asks for is in fields, plus 1
	prefixed bool          // a name starts with http.TrailerPrefix
	fbuf     [4]headerField
	vbuf     [4]string
}

type headerField struct {
	key   string
	vals  []string
	gone  bool
	known bool // key is one of knownField's (a valid name)
}

// The fields writeHeader asks a headerSnap for, by number.
const (
	hTrailer = iota
	hTransferEncoding
	hContentLength
	hConnection
	hContentType
	hContentEncoding
	hDate
	hUpgrade
	nKnown
)

// knownField is the number of the field named key, -1 for another.
func knownField(key string) int {
	switch key {
	case "Trailer":
		return hTrailer
	case "Transfer-Encoding":
		return hTransferEncoding
	case "Content-Length":
		return hContentLength
	case "Connection":
		return hConnection
	case "Content-Type":
		return hContentType
	case "Content-Encoding":
		return hContentEncoding
	case "Date":
		return hDate
	case "Upgrade":
		return hUpgrade
	}
	return -1
}

// take copies h (its values too, as http.Header's Clone does). A header of one field that is
// Content-Type (the common case) is read by a lookup: ranging over a map costs more.
func (s *headerSnap) take(h http.Header) {
	s.fields, s.vals = s.fbuf[:0], s.vbuf[:0]
	s.known = [nKnown]int32{}
	s.prefixed = false
	if s.takeContentType(h) {
		return
	}
	for k, vv := range h {
		i := len(s.vals)
		s.vals = append(s.vals, vv...)
		s.fields = append(s.fields, headerField{key: k, vals: s.vals[i:len(s.vals):len(s.vals)]})
	}
	if len(s.fields) > 8 {
		slices.SortFunc(s.fields, func(a, b headerField) int { return strings.Compare(a.key, b.key) })
	} else {
		for i := 1; i < len(s.fields); i++ {
			for j := i; j > 0 && s.fields[j].key < s.fields[j-1].key; j-- {
				s.fields[j], s.fields[j-1] = s.fields[j-1], s.fields[j]
			}
		}
	}
	for i, f := range s.fields {
		if k := knownField(f.key); k >= 0 {
			s.known[k] = int32(i + 1)
			s.fields[i].known = true
		} else if strings.HasPrefix(f.key, http.TrailerPrefix) {
			s.prefixed = true
		}
	}
}

// takeContentType takes h if its one field is Content-Type, and reports whether it did.
func (s *headerSnap) takeContentType(h http.Header) bool {
	if len(h) != 1 {
		return false
	}
	vv, ok := h["Content-Type"]
	if !ok {
		return false
	}
	if len(vv) == 1 {
		s.vals = append(s.vals, vv[0]) // a store, not typedslicecopy's call
	} else {
		s.vals = append(s.vals, vv...)
	}
	s.fields = append(s.fields, headerField{key: "Content-Type", vals: s.vals[:len(vv):len(vv)], known: true})
	s.known[hContentType] = 1
	return true
}

// setClose makes the header's Connection field "close", where net/http's requestTooLarge
// would have set it in the map before it was taken.
func (s *headerSnap) setClose() {
	if i := s.known[hConnection]; i > 0 {
		f := &s.fields[i-1]
		f.vals, f.gone = []string{"close"}, false
		return
	}
	i, _ := slices.BinarySearchFunc(s.fields, "Connection", func(f headerField, k string) int { return strings.Compare(f.key, k) })
	s.fields = slices.Insert(s.fields, i, headerField{key: "Connection", vals: []string{"close"}, known: true})
	for k, j := range s.known {
		if j > int32(i) {
			s.known[k] = j + 1
		}
	}
	s.known[hConnection] = int32(i + 1)
}

// field returns the field number k (hTrailer...), nil if there is none or it is gone.
func (s *headerSnap) field(k int) *headerField {
	if i := s.known[k]; i > 0 {
		if f := &s.fields[i-1]; !f.gone {
			return f
		}
	}
	return nil
}

// decided reports whether the header holds a field whose value writeHeader decides on, but
// Content-Type.
func (s *headerSnap) decided() bool {
	k := &s.known
	return k[hTrailer]|k[hTransferEncoding]|k[hContentLength]|k[hConnection]|k[hContentEncoding]|k[hDate]|k[hUpgrade] != 0
}

func (s *headerSnap) has(k int) bool { return s.field(k) != nil }

// get is http.Header's Get for the field number k.
func (s *headerSnap) get(k int) string {
	if f := s.field(k); f != nil && len(f.vals) > 0 {
		return f.vals[0]
	}
	return ""
}

func (s *headerSnap) values(k int) []string {
	if f := s.field(k); f != nil {
		return f.vals
	}
	return nil
}

// del removes the field number k.
func (s *headerSnap) del(k int) {
	if f := s.field(k); f != nil {
		f.gone = true
	}
}

// write writes the fields left as http.Header's WriteSubset does: invalid names dropped,
// CR and LF in values made spaces, values trimmed.
func (s *headerSnap) write(w *outBuf) {
	for _, f := range s.fields {
		if f.gone || !f.known && !validFieldName(f.key) {
			continue
		}
		for _, v := range f.vals {
			appendField(w, f.key, headerValue(v))
		}
	}
}

var newlineToSpace = strings.NewReplacer("\n", " ", "\r", " ")

// headerValue is v as http.Header's Write writes it: CR and LF made spaces, then trimmed
// (textproto.TrimString).
func headerValue(v string) string {
	if v == "" || v[0] > ' ' && v[len(v)-1] > ' ' && !hasLineBreak(v) {
		return v
	}
	return textproto.TrimString(newlineToSpace.Replace(v))
}

// hasLineBreak reports whether v holds a CR or an LF. A value of 8 bytes or more is passed
// 8 bytes at a time (the last 8 overlapping) when none is a control byte up to CR.
func hasLineBreak(v string) bool {
	if len(v) >= 8 {
		i := 0
		for i+8 < len(v) && !hasCtl(word(v, i), '\r'+1) {
			i += 8
		}
		if i+8 >= len(v) && !hasCtl(word(v, len(v)-8), '\r'+1) {
			return false
		}
	}
	for i := 0; i < len(v); i++ {
		if c := v[i]; c <= '\r' && (c == '\r' || c == '\n') {
			return true
		}
	}
	return false
}

func foreachHeaderElement(v string, fn func(string)) {
	v = textproto.TrimString(v)
	if v == "" {
		return
	}
	if !strings.Contains(v, ",") {
		fn(v)
		return
	}
	for f := range strings.SplitSeq(v, ",") {
		if f = textproto.TrimString(f); f != "" {
			fn(f)
		}
	}
}

func (w *response) declareTrailer(k string) {
	k = http.CanonicalHeaderKey(k)
	if !validTrailer(k) {
		return
	}
	w.trailers = append(w.trailers, k)
}

func (w *response) finalTrailers() http.Header {
	var t http.Header
	for k, vv := range w.handlerHeader {
		if kk, found := strings.CutPrefix(k, http.TrailerPrefix); found {
			if t == nil {
				t = make(http.Header)
			}
			t[kk] = vv
		}
	}
	for _, k := range w.trailers {
		if t == nil {
			t = make(http.Header)
		}
		for _, v := range w.handlerHeader[k] {
			t.Add(k, v)
		}
	}
	return t
}

// maxBytesReaderType is the type of http.MaxBytesReader's readers.
var maxBytesReaderType = reflect.TypeOf(http.MaxBytesReader(nil, http.NoBody, 0))

// maxBytesRead does, where the header is written and once the handler has returned, what
// net/http's http.MaxBytesReader does past its limit through net/http's own ResponseWriter (an
// unexported method, which no other can have): the response says "Connection: close" and the
// connection closes after it. It sees the reader b that the handler put in its Request's Body
// (r.Body = http.MaxBytesReader(w, r.Body, n)); one the handler kept elsewhere (a variable, the
// Request http.MaxBytesHandler copies) goes unseen, and the connection is kept as after any
// body the handler left unread. Where the limit was passed before WriteHeader (no byte read since), the
// field is the handler's, as net/http's sets it in the handler's map then; after, it is the
// server's, at the header's end.
func (w *response) maxBytesRead(b io.ReadCloser) {
	var tooLarge *http.MaxBytesError
	if _, err := b.Read(nil); !errors.As(err, &tooLarge) {
		return // the limit was not passed (Read of nothing returns the reader's error)
	}
	if !w.wroteHeader {
		w.requestTooLarge()
		return
	}
	w.closeAfterReply = true
	w.requestBodyLimitHit = true
	rb, ok := w.reqBody.(*reqBody)
	if !ok || w.cw.wroteHeader || rb.mark() != w.bodyAtHeader {
		return
	}
	if w.cw.snapped {
		w.cw.header.setClose()
	} else {
		if w.handlerHeader == nil {
			w.handlerHeader = make(http.Header)
		}
		w.handlerHeader.Set("Connection", "close")
	}
}

func (w *response) requestTooLarge() {
	w.closeAfterReply = true
	w.requestBodyLimitHit = true
	if !w.wroteHeader {
		w.Header().Set("Connection", "close")
	}
}

func (w *response) disableWriteContinue() {
	w.writeContinueMu.Lock()
	w.canWriteContinue.Store(false)
	w.writeContinueMu.Unlock()
}

// statusOK is the status line of most responses.
const statusOK = "HTTP/1.1 200 OK\r\n"

func writeStatusLine(bw *outBuf, is11 bool, code int, scratch []byte) {
	if is11 && code == http.StatusOK {
		bw.WriteString(statusOK)
		return
	}
	if is11 {
		bw.WriteString("HTTP/1.1 ")
	} else {
		bw.WriteString("HTTP/1.0 ")
	}
	if text := http.StatusText(code); text != "" {
		bw.Write(strconv.AppendInt(scratch[:0], int64(code), 10))
		bw.WriteByte(' ')
		bw.WriteString(text)
		bw.WriteString("\r\n")
	} else {
		fmt.Fprintf(bw, "%03d status code %d\r\n", code, code)
	}
}

// dateCache holds the Date header's line for the current second.
var dateCache atomic.Pointer[dateValue]

type dateValue struct {
	sec    int64  // the second, Unix time
	line   string // "Date: ", the time in http.TimeFormat, CRLF
	lineCL string // line and "Content-Length: "
}

// dateNow returns the Date header's line for the time now, formatted once a second.
func dateNow() *dateValue {
	now := time.Now()
	if d := dateCache.Load(); d != nil && d.sec == now.Unix() {
		return d
	}
	line := "Date: " + now.UTC().Format(http.TimeFormat) + "\r\n"
	d := &dateValue{sec: now.Unix(), line: line, lineCL: line + "Content-Length: "}
	dateCache.Store(d)
	return d
}

// dateLine returns the Date header's line for the time now (dateNow's).
func dateLine() string { return dateNow().line }

func (w *response) bodyAllowed() bool {
	if !w.wroteHeader {
		panic("net/http: bodyAllowed called before the header was written")
	}
	return bodyAllowedForStatus(w.status)
}

func (w *response) Write(data []byte) (n int, err error) {
	return w.write(len(data), data, "")
}

func (w *response) WriteString(data string) (n int, err error) {
	return w.write(len(data), nil, data)
}

func (w *response) write(lenData int, dataB []byte, dataS string) (n int, err error) {
	if w.hijacked.Load() {
		if lenData > 0 {
			caller := relevantCaller()
			w.logf("http: response.Write on hijacked connection from %s (%s:%d)", caller.Function, path.Base(caller.File), caller.Line)
		}
		return 0, http.ErrHijacked
	}
	if w.canWriteContinue.Load() {
		w.disableWriteContinue()
	}
	if !w.wroteHeader {
		w.WriteHeader(http.StatusOK)
	}
	if lenData == 0 {
		return 0, nil
	}
	if !w.bodyAllowed() {
		return 0, http.ErrBodyNotAllowed
	}
	w.written += int64(lenData)
	if w.contentLength != -1 && w.written > w.contentLength {
		return 0, http.ErrContentLength
	}
	if dataB != nil {
		return w.w.Write(dataB)
	}
	return w.w.WriteString(dataS)
}

// finishRequest ends the response after its handler, as net/http's server does.
func (w *response) finishRequest() {
	w.handlerDone.Store(true)
	if b := w.req.Body; reflect.TypeOf(b) == maxBytesReaderType {
		w.maxBytesRead(b)
	}
	if !w.wroteHeader {
		w.WriteHeader(http.StatusOK)
	}
	w.w.Flush()
	w.cw.close()
	if rb, ok := w.reqBody.(*reqBody); ok && rb.mayWait() {
		// Closing the body may wait for the client's bytes: the response goes out first, as
		// net/http's does, so that a client waiting for it (or for "100 Continue") gets it.
		w.bufw.Flush()
	}
	w.reqBody.Close() // the bytes held go with the connection back to the loop (serve)
	if w.req.MultipartForm != nil {
		w.req.MultipartForm.RemoveAll()
	}
}

func (w *response) shouldReuseConnection() bool {
	if w.closeAfterReply {
		return false
	}
	if w.req.Method != "HEAD" && w.contentLength != -1 && w.bodyAllowed() && w.contentLength != w.written {
		return false
	}
	if w.werr != nil {
		return false
	}
	if rb, ok := w.reqBody.(*reqBody); ok && rb.didEarlyClose() {
		return false
	}
	return true
}

// Flush sends what was written (http.Flusher).
func (w *response) Flush() { w.FlushError() }

// FlushError is Flush with its error (http.ResponseController).
func (w *response) FlushError() error {
	if w.hijacked.Load() {
		return http.ErrHijacked
	}
	if !w.wroteHeader {
		w.WriteHeader(http.StatusOK)
	}
	err := w.w.Flush()
	e2 := w.cw.flush()
	if err == nil {
		err = e2
	}
	return err
}

// ReadFrom copies src to the response as net/http's does (the first 512 bytes through the
// buffer, for the header's sniffing and length, the rest in 32 KiB writes).
func (w *response) ReadFrom(src io.Reader) (n int64, err error) {
	buf := make([]byte, 32<<10)
	if !w.cw.wroteHeader {
		n0, err := io.CopyBuffer(writerOnly{w}, io.LimitReader(src, 512), buf)
		n += n0
		if err != nil || n0 < 512 {
			return n, err
		}
	}
	w.w.Flush()
	w.cw.flush()
	n0, err := io.CopyBuffer(writerOnly{w}, src, buf)
	n += n0
	return n, err
}

type writerOnly struct{ io.Writer }

// SetReadDeadline sets the deadline of the request body's reads (http.ResponseController).
func (w *response) SetReadDeadline(deadline time.Time) error {
	if w.x.body != nil {
		w.x.body.setDeadline(deadline)
	}
	return nil
}

// SetWriteDeadline sets the deadline of the response's writes (http.ResponseController).
func (w *response) SetWriteDeadline(deadline time.Time) error {
	w.x.wdl = deadline
	return nil
}

// EnableFullDuplex lets the handler write before it has read the body
// (http.ResponseController).
func (w *response) EnableFullDuplex() error {
	w.fullDuplex = true
	return nil
}

// CloseNotify is http.CloseNotifier's.
func (w *response) CloseNotify() <-chan bool {
	w.closeNotifyMu.Lock()
	defer w.closeNotifyMu.Unlock()
	if w.handlerDone.Load() {
		panic("net/http: CloseNotify called after ServeHTTP finished")
	}
	if w.closeNotifyCh == nil {
		w.closeNotifyCh = make(chan bool, 1)
		if w.closeNotifyTriggered {
			w.closeNotifyCh <- true
		}
	}
	return w.closeNotifyCh
}

func (w *response) closeNotify() {
	w.closeNotifyMu.Lock()
	defer w.closeNotifyMu.Unlock()
	if w.closeNotifyTriggered {
		return
	}
	w.closeNotifyTriggered = true
	if w.closeNotifyCh != nil {
		w.closeNotifyCh <- true
	}
}

// Hijack hands the connection to the handler (http.Hijacker): the loop stops parsing it, and
// the net.Conn returned reads what the client sent after the request's head (the bytes read
// already first) and writes to it.
func (w *response) Hijack() (net.Conn, *bufio.ReadWriter, error) {
	if w.handlerDone.Load() {
		panic("net/http: Hijack called after ServeHTTP finished")
	}
	w.disableWriteContinue()
	if w.wroteHeader {
		w.cw.flush()
	}
	if !w.hijacked.CompareAndSwap(false, true) {
		return nil, nil, http.ErrHijacked
	}
	w.bufw.Flush()
	nc, err := w.x.h.hijack(w.x)
	if err != nil {
		return nil, nil, err
	}
	return nc, bufio.NewReadWriter(bufio.NewReader(nc), bufio.NewWriter(nc)), nil
}

var errHijackClosed = errors.New("http: connection closed before it was hijacked")

// handle is the http.ResponseWriter a handler is given: its request's own (in the request's
// reqState, made for each request), which leads to the response, part of the exchange that
// later requests reuse. Each method counts itself in n while it runs; end, once the handler
// has returned, marks n ended and waits for the methods inside to return, so that the response
// is finished (and the exchange reused) only when no goroutine writes to it. A method called
// after end leads nowhere: a goroutine that kept the writer and writes late gets
// errAfterHandler, and does not write into the response of a later request, another
// client's perhaps.
//
// The methods that run the caller's code or panic by design (WriteHeader with a bad code,
// ReadFrom, Hijack, CloseNotify) count themselves out in a defer; the others count out on
// return. Where a handler panicked, abandon takes end's place: it does not wait (a method that
// panicked never counted out), and the exchange is not reused if a method is still inside.
type handle struct {
	w    *response
	n    atomic.Int32  // the methods inside, and handleEnded once the handler returned
	wake chan struct{} // closed by the last method to leave after end, when end waits
}

// handleEnded is the bit of handle.n that end sets; handleWoken is n once end was woken (or
// need not be), so that no later method wakes it again.
const (
	handleEnded = math.MinInt32
	handleWoken = handleEnded | 1<<30
)

// errAfterHandler is what a response's writes return once its handler has returned.
var errAfterHandler = errors.New("http: response written after its handler returned")

// enter counts a method in and reports whether the handler still runs; if not, the method is
// counted out already.
func (h *handle) enter() bool {
	if h.n.Add(1) < 0 {
		h.leave()
		return false
	}
	return true
}

// leave counts a method out; the last to leave after end wakes it (once: handleWoken).
func (h *handle) leave() {
	if h.n.Add(-1) == handleEnded && h.n.CompareAndSwap(handleEnded, handleWoken) && h.wake != nil {
		close(h.wake)
	}
}

// end marks the handler returned (on its goroutine) and waits for the methods that other
// goroutines are inside to return.
func (h *handle) end() {
	if h.n.CompareAndSwap(0, handleEnded) {
		return
	}
	h.wake = make(chan struct{})
	if h.n.Add(handleEnded) != handleEnded {
		<-h.wake
	}
}

// abandon marks the handler returned after it panicked, without waiting, and reports whether
// a method may still be inside (or never counted out).
func (h *handle) abandon() (inside bool) {
	return h.n.Add(handleEnded) != handleEnded
}

func (h *handle) Header() http.Header {
	if !h.enter() {
		return http.Header{} // changes go nowhere
	}
	hh := h.w.Header()
	h.leave()
	return hh
}

func (h *handle) WriteHeader(code int) {
	if h.enter() {
		defer h.leave()
		h.w.WriteHeader(code)
	}
}

func (h *handle) Write(data []byte) (int, error) {
	if !h.enter() {
		return 0, errAfterHandler
	}
	n, err := h.w.write(len(data), data, "")
	h.leave()
	return n, err
}

func (h *handle) WriteString(data string) (int, error) {
	if !h.enter() {
		return 0, errAfterHandler
	}
	n, err := h.w.write(len(data), nil, data)
	h.leave()
	return n, err
}

func (h *handle) Flush() { h.FlushError() }

func (h *handle) FlushError() error {
	if !h.enter() {
		return errAfterHandler
	}
	err := h.w.FlushError()
	h.leave()
	return err
}

func (h *handle) ReadFrom(src io.Reader) (int64, error) {
	if !h.enter() {
		return 0, errAfterHandler
	}
	defer h.leave()
	return h.w.ReadFrom(src)
}

func (h *handle) SetReadDeadline(deadline time.Time) error {
	if !h.enter() {
		return errAfterHandler
	}
	err := h.w.SetReadDeadline(deadline)
	h.leave()
	return err
}

func (h *handle) SetWriteDeadline(deadline time.Time) error {
	if !h.enter() {
		return errAfterHandler
	}
	err := h.w.SetWriteDeadline(deadline)
	h.leave()
	return err
}

func (h *handle) EnableFullDuplex() error {
	if !h.enter() {
		return errAfterHandler
	}
	err := h.w.EnableFullDuplex()
	h.leave()
	return err
}

func (h *handle) CloseNotify() <-chan bool {
	if !h.enter() {
		panic("net/http: CloseNotify called after ServeHTTP finished")
	}
	defer h.leave()
	return h.w.CloseNotify()
}

func (h *handle) Hijack() (net.Conn, *bufio.ReadWriter, error) {
	if !h.enter() {
		panic("net/http: Hijack called after ServeHTTP finished")
	}
	defer h.leave()
	return h.w.Hijack()
}
