//go:build unix

package server

import (
	"bytes"
	"encoding/binary"
	"math/bits"
	"strconv"
	"sync/atomic"
	"time"
)

// Limits of the HTTP parser.
const (
	// MaxHeaderBytes is the largest request head (request line and header fields, with their
	// line endings), in bytes: 8 KiB, as nginx's default large_client_header_buffers line. A
	// longer head gets 431 Request Header Fields Too Large, and the connection is closed.
	MaxHeaderBytes = 8 << 10
	// MaxBodyBytes is the largest request body, in bytes (64 KiB): a Content-Length above gets
	// 413 Content Too Large and a close. Bodies are read and dropped.
	MaxBodyBytes = 64 << 10
)

// HTTP is an HTTP/1.1 server by the rules of TechEmpower's plaintext test, a Handler: GET (or
// HEAD) of /plaintext or / answers "Hello, World!" as text/plain with Server and Date headers;
// connections are kept alive (HTTP/1.1 unless "Connection: close"; HTTP/1.0 only with
// "Connection: keep-alive"), and pipelined requests are answered in order. Other paths get
// 404, other methods 405 (the connection stays open). A malformed request gets 400, a head
// over MaxHeaderBytes 431, a body over MaxBodyBytes 413, Transfer-Encoding (chunked bodies are
// not read) 501, a version other than 1.0 and 1.1 505; each of these closes the connection
// after the reply.
//
// A request must be complete within RequestTimeout of its first byte, and a kept-alive
// connection is closed after IdleTimeout without a request: a client that trickles its
// request (slowloris) or holds connections open for ever is cut off. One HTTP serves every
// loop of an engine; its Date is refreshed once a second (OnTick).
type HTTP struct {
	// RequestTimeout bounds the time from a request's first byte to its last
	// (Conn.SetRequestTimeout, set in OnOpen): NewHTTP's is DefaultHTTPRequestTimeout; 0
	// leaves the engine's (WithRequestTimeout: none by default).
	RequestTimeout time.Duration
	// IdleTimeout closes a connection on which nothing was received or sent for that long
	// (Conn.SetIdleTimeout): NewHTTP's is DefaultHTTPIdleTimeout; 0 leaves the engine's
	// (WithIdleTimeout: none by default).
	IdleTimeout time.Duration

	cur atomic.Pointer[httpDate]
}

// The timeouts NewHTTP gives an HTTP server.
const (
	// DefaultHTTPRequestTimeout: a request must be complete within 10 s of its first byte.
	DefaultHTTPRequestTimeout = 10 * time.Second
	// DefaultHTTPIdleTimeout: a kept-alive connection without a request for 75 s is closed,
	// nginx's keepalive_timeout. It outlasts the idle times of the clients that reuse
	// connections (browsers, wrk, load balancers' pools of 60 s), and an idle connection
	// costs the server an fd and under 2 KiB, so a long one is cheap; it is there so that
	// abandoned connections do not hold fds for ever.
	DefaultHTTPIdleTimeout = 75 * time.Second
)

// httpDate is the Date header of one second, and the whole 200 response of a kept-alive GET
// with it.
type httpDate struct {
	sec   int64  // Unix seconds
	date  []byte // IMF-fixdate, "Mon, 02 Jan 2006 15:04:05 GMT"
	hello []byte
}

// NewHTTP returns an HTTP server with the default timeouts and its Date set to now.
func NewHTTP() *HTTP {
	h := &HTTP{RequestTimeout: DefaultHTTPRequestTimeout, IdleTimeout: DefaultHTTPIdleTimeout}
	h.setDate(time.Now())
	return h
}

// setDate sets the Date of the responses to now's second (from any goroutine).
func (h *HTTP) setDate(now time.Time) {
	now = now.UTC()
	if d := h.cur.Load(); d != nil && d.sec == now.Unix() {
		return
	}
	d := &httpDate{sec: now.Unix(), date: now.AppendFormat(nil, "Mon, 02 Jan 2006 15:04:05 GMT")}
	d.hello = appendResponse(nil, d, "200 OK", helloBody, false, "")
	h.cur.Store(d)
}

const helloBody = "Hello, World!"

// OnOpen sets the connection's timeouts (RequestTimeout, IdleTimeout) where they are not 0.
func (h *HTTP) OnOpen(c *Conn) { setTimeouts(c, h.IdleTimeout, h.RequestTimeout) }

// ServesHTTPS makes HTTP an HTTPSHandler: plaintext HTTP sent to its TLS port gets net/http's
// 400.
func (h *HTTP) ServesHTTPS() {}

// OnTick refreshes the Date header, every second on each loop.
func (h *HTTP) OnTick(*Loop) time.Duration {
	h.setDate(time.Now())
	return time.Second
}

// OnData answers the complete requests of the connection's input, in order, until the pending
// output passes the connection's write limit (the others wait for the call that follows the
// output's drain), and closes the connection after a response that ends it.
func (h *HTTP) OnData(c *Conn) {
	in, out := c.Buffers()
	used, out, closeAfter := h.serve(in, out, c.WriteLimit()-c.Pending()+1)
	c.Commit(used, out)
	if closeAfter {
		c.Close()
	}
}

// serve answers the complete requests at the start of in, appending the responses to out,
// until len(out) reaches limit. It returns the bytes of in consumed, out, and closeAfter: the
// last response ends the connection ("Connection: close", HTTP/1.0, or a refused request).
func (h *HTTP) serve(in, out []byte, limit int) (int, []byte, bool) {
	d := h.cur.Load()
	used := 0
	var req request
	for used < len(in) && len(out) < limit {
		n, ok := parseRequestFast(in[used:], &req)
		if !ok {
			if n < 0 {
				break // incomplete: parseRequestSlow would find so too
			}
			var status string
			req, n, status = parseRequestSlow(in[used:])
			if status != "" {
				return len(in), appendResponse(out, d, status, status[4:], false, "close"), true
			}
			if n == 0 {
				break
			}
		}
		used += n
		if req.hello && req.keepAlive && !req.http10 {
			out = append(out, d.hello...) // respond's answer, without the call
			continue
		}
		out = respond(out, d, &req)
		if !req.keepAlive {
			return len(in), out, true
		}
	}
	return used, out, false
}

// respond appends the response to a well-formed request.
func respond(out []byte, d *httpDate, req *request) []byte {
	conn := ""
	switch {
	case !req.keepAlive:
		conn = "close"
	case req.http10:
		conn = "keep-alive"
	}
	path := req.target
	if i := bytes.IndexByte(path, '?'); i >= 0 {
		path = path[:i]
	}
	get, head := string(req.method) == "GET", string(req.method) == "HEAD"
	switch {
	case string(path) != "/plaintext" && string(path) != "/":
		return appendResponse(out, d, "404 Not Found", "Not Found", head, conn)
	case !get && !head:
		return appendResponse(out, d, "405 Method Not Allowed\r\nAllow: GET, HEAD", "Method Not Allowed", false, conn)
	case get && conn == "":
		return append(out, d.hello...)
	}
	return appendResponse(out, d, "200 OK", helloBody, head, conn)
}

// appendResponse appends a response with a text/plain body (its head only for HEAD) and d's
// Date. status is the status code and reason, possibly followed by more header lines; conn is
// the Connection header's value ("" for none).
func appendResponse(out []byte, d *httpDate, status, body string, head bool, conn string) []byte {
	out = append(out, "HTTP/1.1 "...)
	out = append(out, status...)
	out = append(out, "\r\nServer: ringev\r\nDate: "...)
	out = append(out, d.date...)
	out = append(out, "\r\nContent-Type: text/plain\r\nContent-Length: "...)
	out = strconv.AppendInt(out, int64(len(body)), 10)
	if conn != "" {
		out = append(out, "\r\nConnection: "...)
		out = append(out, conn...)
	}
	out = append(out, "\r\n\r\n"...)
	if !head {
		out = append(out, body...)
	}
	return out
}

// request is what the server needs of a parsed request.
type request struct {
	method, target []byte // views into the input
	http10         bool
	keepAlive      bool
	// hello: a GET of / or /plaintext, the usual request (requestLineFast's; false from
	// parseRequestSlow): kept alive over HTTP/1.1, serve answers it with httpDate.hello without
	// calling respond, which decides every other request (and a hello parseRequestSlow parsed)
	hello bool
}

// The statuses of the requests parseRequestSlow refuses; the connection is closed after each.
const (
	statusBadRequest     = "400 Bad Request"
	statusTooLarge       = "413 Content Too Large"
	statusHeadersTooBig  = "431 Request Header Fields Too Large"
	statusNotImplemented = "501 Not Implemented"
	statusBadVersion     = "505 HTTP Version Not Supported"
)

// parseRequestSlow parses the request at the start of b (RFC 9112) by the general rules: its
// request line, header fields (Connection, Content-Length, Host and Transfer-Encoding are read,
// the others checked and skipped) and body (skipped). It returns the request, its length in
// bytes, n == 0 when b holds no complete request yet, or the status of the error response when
// the request is refused. Lines must end in CRLF; empty lines before the request line are
// skipped. serve tries parseRequestFast first.
func parseRequestSlow(b []byte) (req request, n int, status string) {
	pos := 0
	for pos+1 < len(b) && b[pos] == '\r' && b[pos+1] == '\n' {
		pos += 2
	}
	var hs headState
	for first := true; ; first = false {
		i := bytes.IndexByte(b[pos:], '\n')
		if i < 0 && len(b) <= MaxHeaderBytes {
			return req, 0, ""
		}
		if i < 0 || pos+i+1 > MaxHeaderBytes {
			return req, 0, statusHeadersTooBig
		}
		if i == 0 || b[pos+i-1] != '\r' {
			return req, 0, statusBadRequest
		}
		line := b[pos : pos+i-1]
		pos += i + 1
		if first {
			if status = parseRequestLine(line, &req); status != "" {
				return req, 0, status
			}
			continue
		}
		if len(line) == 0 {
			break // the end of the head
		}
		colon := tokenEnd(line)
		if colon == 0 || colon == len(line) || line[colon] != ':' {
			return req, 0, statusBadRequest // also a folded line (obs-fold), which starts with a space
		}
		name, value := line[:colon], trimOWS(line[colon+1:])
		for _, c := range value {
			if badValueByte[c] {
				return req, 0, statusBadRequest
			}
		}
		if status = hs.field(name, value); status != "" {
			return req, 0, status
		}
	}
	n, status = hs.end(&req, b, pos)
	return req, n, status
}

// parseRequestFast parses the usual request in one pass over its bytes: no empty line before
// it, a request line parseRequestLine takes, header fields with a token for name and a value
// of allowed bytes, the head within MaxHeaderBytes, no Transfer-Encoding, the body complete.
// It fills req and returns what parseRequestSlow would; ok is false for anything else. Then n
// is -1 when b is such a request cut short after its request line (parseRequestSlow would find
// it incomplete too, n == 0), else 0: a request refused, one it does not take, or one cut short
// in its request line, which parseRequestSlow then parses from the start.
func parseRequestFast(b []byte, req *request) (n int, ok bool) {
	h := b[:min(len(b), MaxHeaderBytes)] // a line end past it would be a 431
	pos, ok := requestLineFast(h, req)
	if !ok {
		return 0, false
	}
	var hs headState
	for {
		if pos+1 >= len(h) {
			return cutShort(b, pos), false
		}
		if h[pos] == '\r' {
			if h[pos+1] != '\n' {
				return 0, false
			}
			pos += 2
			break // the end of the head
		}
		start := pos
		host := len(h)-pos > 4 && h[pos+4] == ':' && le32(h[pos:])|0x20202020 == hostKey
		if host {
			pos += 4 // Host, which every HTTP/1.1 request has: its name in one compare (foldEq's rule)
		} else if pos += tokenEnd(h[pos:]); pos >= len(h) {
			return cutShort(b, pos), false
		} else if pos == start || h[pos] != ':' {
			return 0, false
		}
		name := h[start:pos]
		pos++
		for pos < len(h) && (h[pos] == ' ' || h[pos] == '\t') {
			pos++
		}
		start = pos
		pos += valueEnd(h[pos:])
		if pos+1 >= len(h) {
			return cutShort(b, pos), false
		}
		if h[pos] != '\r' || h[pos+1] != '\n' {
			return 0, false
		}
		end := pos // the value without its trailing white space (the leading was skipped)
		for end > start && (h[end-1] == ' ' || h[end-1] == '\t') {
			end--
		}
		pos += 2
		if host {
			hs.hosts++ // headState.field's for Host
		} else if hs.field(name, h[start:end]) != "" {
			return 0, false
		}
	}
	n, status := hs.end(req, b, pos)
	if n == 0 && status == "" {
		return -1, false // the body is cut short
	}
	return n, status == ""
}

// cutShort is parseRequestFast's n for a request whose head b ends at pos, or at the byte at
// pos, within a line the fast path takes so far: -1 (incomplete), unless that byte is an LF
// (a line the general rules refuse) or the head is past MaxHeaderBytes (the 431): then 0, and
// parseRequestSlow decides.
func cutShort(b []byte, pos int) int {
	if len(b) > MaxHeaderBytes || pos < len(b) && b[pos] == '\n' {
		return 0
	}
	return -1
}

// requestLineFast parses the request line at the start of b as parseRequestLine does, with its
// line end: "METHOD SP request-target SP HTTP/1.1" (or 1.0) and CRLF. It returns the offset
// past the line; ok is false for anything else (parseRequestSlow decides then).
func requestLineFast(b []byte, req *request) (int, bool) {
	sp1 := 3 // GET, the usual method: its token and space in one compare
	get := len(b) >= 4 && le32(b) == 'G'|'E'<<8|'T'<<16|' '<<24
	if !get {
		if sp1 = tokenEnd(b); sp1 == 0 || sp1 == len(b) || b[sp1] != ' ' {
			return 0, false
		}
	}
	sp2 := sp1 + 1
	for _, c := range b[sp2:] {
		if c <= ' ' || c == 0x7f {
			break
		}
		sp2++
	}
	if sp2 == sp1+1 || len(b)-sp2 < len(" HTTP/1.1\r\n") || b[sp2] != ' ' {
		return 0, false
	}
	target := b[sp1+1 : sp2]
	if target[0] != '/' && string(target) != "*" {
		return 0, false
	}
	switch string(b[sp2+1 : sp2+11]) {
	case "HTTP/1.1\r\n":
		req.http10 = false
	case "HTTP/1.0\r\n":
		req.http10 = true
	default:
		return 0, false
	}
	req.method, req.target = b[:sp1], target
	req.hello = get && (string(target) == "/" || string(target) == "/plaintext")
	return sp2 + 11, true
}

// valueEnd returns the index of the first byte of b that a field value may not hold
// (badValueByte), or len(b). It looks at eight bytes at a time: in a word x, the bytes below
// 0x20 are those whose x-0x20 borrows with their top bit clear, and DEL's are the zero bytes of
// x^0x7f...; the lowest byte so marked is exact (a borrow only marks bytes above it). A tab
// is marked too: the bytes from it on are looked at one by one.
func valueEnd(b []byte) int {
	const ones, tops = 0x0101010101010101, 0x8080808080808080
	i := 0
	for ; len(b)-i >= 8; i += 8 {
		x := binary.LittleEndian.Uint64(b[i:])
		y := x ^ 0x7f*ones
		if m := ((x-0x20*ones)&^x | (y-ones)&^y) & tops; m != 0 {
			i += bits.TrailingZeros64(m) / 8
			if b[i] != '\t' {
				return i
			}
			break
		}
	}
	for ; i < len(b); i++ {
		if badValueByte[b[i]] {
			return i
		}
	}
	return len(b)
}

// le32 is the first four bytes of b, little-endian.
func le32(b []byte) uint32 { return binary.LittleEndian.Uint32(b) }

// hostKey is "host" as le32 reads it; a name's four bytes with bit 5 set (c|0x20) are hostKey
// only for Host in any case (see foldEq).
const hostKey = 'h' | 'o'<<8 | 's'<<16 | 't'<<24

// headState is what a request's header fields tell (headState.field), for its end
// (headState.end).
type headState struct {
	bodyLen             int // 1 + the Content-Length; 0: none
	hosts               int
	closeTok, keepAlive bool
}

// field reads one header field, its value trimmed of white space: Host, Connection,
// Content-Length and Transfer-Encoding. It returns the status of a refusal, or "". The names
// are told apart by their length first: most fields are none of them.
func (s *headState) field(name, value []byte) string {
	switch {
	case len(name) == len("host") && foldEq(name, "host"):
		s.hosts++
	case len(name) == len("connection") && foldEq(name, "connection"):
		for tok := range bytes.SplitSeq(value, []byte(",")) {
			tok = trimOWS(tok)
			s.closeTok = s.closeTok || bytes.EqualFold(tok, []byte("close"))
			s.keepAlive = s.keepAlive || bytes.EqualFold(tok, []byte("keep-alive"))
		}
	case len(name) == len("content-length") && foldEq(name, "content-length"):
		v, ok := parseLength(value)
		switch {
		case !ok || s.bodyLen > 0 && v != s.bodyLen-1:
			return statusBadRequest
		case v > MaxBodyBytes:
			return statusTooLarge
		}
		s.bodyLen = v + 1
	case len(name) == len("transfer-encoding") && foldEq(name, "transfer-encoding"):
		return statusNotImplemented
	}
	return ""
}

// end finishes the request whose head ends at pos in b: exactly one Host in HTTP/1.1, whether
// the connection stays open, and the body. It returns the request's length (0: its body is
// not all in b yet) or the status of a refusal.
func (s *headState) end(req *request, b []byte, pos int) (int, string) {
	if s.hosts > 1 || s.hosts == 0 && !req.http10 { // RFC 9112 3.2: exactly one Host in HTTP/1.1
		return 0, statusBadRequest
	}
	req.keepAlive = !s.closeTok && (!req.http10 || s.keepAlive)
	if s.bodyLen > 1 {
		pos += s.bodyLen - 1
		if pos > len(b) {
			return 0, ""
		}
	}
	return pos, ""
}

// foldEq reports whether name, a token (tchar bytes), is lower (lower-case letters and '-') in
// any case: a tchar byte with bit 5 set (c|0x20) is a lower-case letter only for that letter
// and its upper case, and is '-' only for '-'. name and lower have the same length.
func foldEq(name []byte, lower string) bool {
	for i := range len(lower) {
		if name[i]|0x20 != lower[i] {
			return false
		}
	}
	return true
}

// trimOWS removes the optional white space (spaces and tabs) around a field value or a list
// element (RFC 9110, 5.6.3).
func trimOWS(b []byte) []byte {
	for len(b) > 0 && (b[0] == ' ' || b[0] == '\t') {
		b = b[1:]
	}
	for len(b) > 0 && (b[len(b)-1] == ' ' || b[len(b)-1] == '\t') {
		b = b[:len(b)-1]
	}
	return b
}

// parseRequestLine parses "METHOD SP request-target SP HTTP/x.y" into req, in one pass: the
// method is a token, the target has no control character, space or DEL.
func parseRequestLine(line []byte, req *request) (status string) {
	sp1 := tokenEnd(line)
	if sp1 == 0 || sp1 == len(line) || line[sp1] != ' ' {
		return statusBadRequest
	}
	method, rest := line[:sp1], line[sp1+1:]
	sp2 := 0
	for sp2 < len(rest) && rest[sp2] > ' ' && rest[sp2] != 0x7f {
		sp2++
	}
	if sp2 == 0 || sp2 == len(rest) || rest[sp2] != ' ' {
		return statusBadRequest
	}
	target, version := rest[:sp2], rest[sp2+1:]
	if target[0] != '/' && string(target) != "*" { // origin-form, or asterisk-form (OPTIONS)
		return statusBadRequest
	}
	switch {
	case string(version) == "HTTP/1.1":
	case string(version) == "HTTP/1.0":
		req.http10 = true
	case len(version) == 8 && string(version[:5]) == "HTTP/" && isDigit(version[5]) && version[6] == '.' && isDigit(version[7]):
		return statusBadVersion
	default:
		return statusBadRequest
	}
	req.method, req.target = method, target
	return ""
}

// parseLength parses a Content-Length value: decimal digits only, at most 18 of them.
func parseLength(b []byte) (int, bool) {
	if len(b) == 0 || len(b) > 18 {
		return 0, false
	}
	n := 0
	for _, c := range b {
		if !isDigit(c) {
			return 0, false
		}
		n = n*10 + int(c-'0')
	}
	return n, true
}

func isDigit(c byte) bool { return '0' <= c && c <= '9' }

// tokenEnd returns the length of the RFC 9110 token (a method or a field name: tchars) that b
// starts with: the index of its first byte that is not a tchar, or len(b).
func tokenEnd(b []byte) int {
	for i, c := range b {
		if !tchar[c] {
			return i
		}
	}
	return len(b)
}

// badValueByte tells the bytes a field value may not hold: the control characters but tab,
// and DEL (RFC 9110, 5.5).
var badValueByte = func() (t [256]bool) {
	for c := range 256 {
		t[c] = c < ' ' && c != '\t' || c == 0x7f
	}
	return t
}()

// tchar is RFC 9110's tchar: ALPHA, DIGIT and !#$%&'*+-.^_`|~.
var tchar = func() (t [256]bool) {
	for c := range 256 {
		t[c] = 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9'
	}
	for _, c := range []byte("!#$%&'*+-.^_`|~") {
		t[c] = true
	}
	return t
}()
