//go:build unix

package nethttp

import (
	"bytes"
	"context"
	"math/bits"
	"net/http"
	"net/url"
)

// maxFastFields is the most header fields a head may have for fastRequest.
const maxFastFields = 32

// fastRequest reads the common request head without net/textproto: a GET or HEAD of an
// origin-form target made of plain bytes (no escapes, no fragment), HTTP/1.1 or HTTP/1.0,
// every line ending in CRLF, and fields with plain names and values, none about framing
// (Content-Length, Transfer-Encoding, Trailer), none that http.ReadRequest rewrites
// (Pragma) and at most one Host and one plain Connection. The Request is the one
// http.ReadRequest returns for the same bytes, with ctx as its context, and hosts is how many
// Host fields the head holds (0 or 1: req.Host is the first's value). It returns nil for any
// other head, which http.ReadRequest reads instead. It is scan, then request: see there.
func fastRequest(head []byte, ctx context.Context, room *fastRoom, sc *fastScratch) (req *http.Request, hosts int) {
	if sc.scan(head) != len(head) {
		return nil, 0
	}
	return sc.request(head, ctx, room)
}

// fastScratch is a loop's, for fastRequest: scan notes in it where the parts of the head it
// read are (offsets into the head), for request to build the Request from; fields are not
// cleared for each head. last is the last head request made a string of (headString), and
// goodHost the last Host value found valid (hostValid).
type fastScratch struct {
	fields   [maxFastFields]fastField
	n        int  // the fields noted
	host     int  // the Host field's index in fields, -1 for none
	line     int  // the request line's end (its CR)
	tstart   int  // the target's start
	tend     int  // the target's end
	q        int  // where the target's query starts ('?'), -1 for none
	minor    int  // the protocol's minor version
	isHead   bool // the method is HEAD, else GET
	closing  bool // the connection closes after the request
	last     string
	goodHost string
}

type fastField struct{ k0, k1, v0, v1 int }

// scan reads the fast head (see fastRequest) at the start of in, which may hold more bytes
// after it, and returns its length; -1 where in does not start with a whole fast head (another
// head, or one not complete yet).
func (sc *fastScratch) scan(in []byte) int {
	i := bytes.IndexByte(in, '\n')
	if i < 2 || in[i-1] != '\r' {
		return -1
	}
	line := in[:i-1]
	tstart := 0
	switch {
	case len(line) > 4 && string(line[:5]) == "GET /":
		tstart, sc.isHead = 4, false
	case len(line) > 5 && string(line[:6]) == "HEAD /":
		tstart, sc.isHead = 5, true
	default:
		return -1
	}
	if len(line) < tstart+9 {
		return -1
	}
	switch string(line[len(line)-9:]) {
	case " HTTP/1.1":
		sc.minor = 1
	case " HTTP/1.0":
		sc.minor = 0
	default:
		return -1
	}
	tend := len(line) - 9
	q := -1
	for j := tstart; j < tend; j++ {
		switch c, k := line[j], fastClass[line[j]]; {
		case k&classPath != 0:
		case c == '?' && q < 0:
			q = j
		case q >= 0 && k&classQuery != 0:
		default:
			return -1
		}
	}
	if q == tend-1 {
		return -1 // a lone '?' at the end: url's ForceQuery
	}
	sc.line, sc.tstart, sc.tend, sc.q = i-1, tstart, tend, q

	n, host, conn := 0, -1, -1
	p := i + 1
	for {
		if p+1 >= len(in) {
			return -1
		}
		if in[p] == '\r' && in[p+1] == '\n' {
			p += 2
			break
		}
		if n == maxFastFields {
			return -1
		}
		k0 := p
		if m := uint64(0); p+8 <= len(in) {
			if m = notName(word(in, p)); m != 0 {
				p += bits.TrailingZeros64(m) >> 3 // a name of fewer than 8 bytes
			}
		}
		if p == k0 {
			p = nameEnd(in, p)
		}
		if p == k0 || p == len(in) || in[p] != ':' {
			return -1
		}
		k1 := p
		p++
		for p < len(in) && (in[p] == ' ' || in[p] == '\t') {
			p++
		}
		v0 := p
		p = valueEnd(in, p)
		v1 := p
		if p+1 >= len(in) || in[p] != '\r' || in[p+1] != '\n' {
			return -1
		}
		p += 2
		for v1 > v0 && (in[v1-1] == ' ' || in[v1-1] == '\t') {
			v1--
		}
		switch name := in[k0:k1]; len(name) {
		case 4:
			if word4(name, 0)|0x20202020 == 'h'|'o'<<8|'s'<<16|'t'<<24 { // nameIs(name, "host")
				if host >= 0 {
					return -1
				}
				host = n
			}
		case 10:
			if nameIs(name, "connection") {
				if conn >= 0 {
					return -1
				}
				conn = n
			}
		case 6, 7, 14, 17:
			if nameIs(name, "pragma") || nameIs(name, "trailer") ||
				nameIs(name, "content-length") || nameIs(name, "transfer-encoding") {
				return -1
			}
		}
		sc.fields[n] = fastField{k0, k1, v0, v1}
		n++
	}
	closing := sc.minor == 0 // HTTP/1.0 closes without keep-alive
	if conn >= 0 {
		v := in[sc.fields[conn].v0:sc.fields[conn].v1]
		switch {
		case fieldIs(v, "close"):
			closing = true
		case fieldIs(v, "keep-alive"):
			closing = false
		default:
			return -1 // a list of tokens: http.ReadRequest's parsing of it
		}
	}
	sc.n, sc.host, sc.closing = n, host, closing
	return p
}

// request builds the Request of head, which scan has just read: see fastRequest.
//
// The Request and its URL go in room (made for the request; never reused, as a handler may
// keep the Request); its strings are parts of one string of the head (headString); the
// header's values, where there are fields but Host, are one slice made for them. The Request
// is given ctx first, by WithContext's copy of a zero Request (ctx is unexported), then its
// fields: the copy's write barrier, while the collector marks, has no field to shade.
func (sc *fastScratch) request(head []byte, ctx context.Context, room *fastRoom) (req *http.Request, hosts int) {
	s := sc.headString(head) // every string of the Request is part of this one
	r := &room.req
	*r = *new(http.Request).WithContext(ctx)
	r.Method = "GET"
	if sc.isHead {
		r.Method = "HEAD"
	}
	r.Proto = s[sc.tend+1 : sc.line]
	r.ProtoMajor, r.ProtoMinor = 1, sc.minor
	others := sc.n // the fields but Host
	if sc.host >= 0 {
		others--
	}
	if others == 0 {
		r.Header = make(http.Header)
	} else {
		r.Header = make(http.Header, others)
	}
	r.Body = http.NoBody
	r.Close = sc.closing
	r.RequestURI = s[sc.tstart:sc.tend]
	u := &room.url
	if q := sc.q; q >= 0 {
		u.Path, u.RawQuery = s[sc.tstart:q], s[q+1:sc.tend]
	} else {
		u.Path = r.RequestURI
	}
	r.URL = u
	var vals []string
	if others > 0 {
		vals = make([]string, others)
	}
	for j, f := range sc.fields[:sc.n] {
		v := s[f.v0:f.v1]
		if j == sc.host {
			r.Host, hosts = v, 1
			continue
		}
		k := canonicalName(s[f.k0:f.k1], head[f.k0:f.k1])
		if vv, ok := r.Header[k]; ok {
			r.Header[k] = append(vv, v)
			continue
		}
		vals[0] = v
		r.Header[k] = vals[:1:1]
		vals = vals[1:]
	}
	return r, hosts
}

// valueEnd returns where the field value that starts at p in b ends: the first byte from p
// that is not in one (valueChars), len(b) where none is. It reads 8 bytes at a time.
func valueEnd(b []byte, p int) int {
	for p+8 <= len(b) {
		m := notPlain(word(b, p))
		if m == 0 {
			p += 8
			continue
		}
		p += bits.TrailingZeros64(m) >> 3
		if b[p] != '\t' {
			return p
		}
		p++
	}
	for p < len(b) && valueChars[b[p]] {
		p++
	}
	return p
}

// nameEnd returns where the field name that starts at p in b ends: the first byte from p that
// is not a letter, a digit or '-' (className), len(b) where none is. It reads 8 bytes at a
// time.
func nameEnd(b []byte, p int) int {
	for p+8 <= len(b) {
		if m := notName(word(b, p)); m != 0 {
			return p + bits.TrailingZeros64(m)>>3
		}
		p += 8
	}
	for p < len(b) && fastClass[b[p]]&className != 0 {
		p++
	}
	return p
}

// notName returns, of the bytes of x (a word), those that are not a letter, a digit or '-':
// each such byte's high bit, set in the result. Each byte is tested on its own (no carry
// crosses a byte): a 7-bit y is in [lo, hi] where y+(0x80-lo) has its high bit and
// y+(0x7f-hi) has not.
func notName(x uint64) uint64 {
	const ones, highs = 0x0101010101010101, 0x8080808080808080
	y := x &^ highs
	l := y | ones*0x20 // letters in lower case (other bytes may land on letters only from letters)
	digit := (y + ones*(0x80-'0')) &^ (y + ones*(0x7f-'9'))
	letter := (l + ones*(0x80-'a')) &^ (l + ones*(0x7f-'z'))
	dash := ^((y ^ ones*'-') + ones*0x7f)
	return (^(digit | letter | dash) | x) & highs
}

// nameIs reports whether the field name b (className each) is name, which is lower case,
// ASCII case-insensitively: a name's byte with bit 0x20 set is its lower case (digits and '-'
// have it already).
func nameIs(b []byte, name string) bool {
	if len(b) != len(name) {
		return false
	}
	for len(b) >= 8 {
		if word(b, 0)|0x2020202020202020 != word(name, 0) {
			return false
		}
		b, name = b[8:], name[8:]
	}
	if len(b) >= 4 {
		if word4(b, 0)|0x20202020 != word4(name, 0) {
			return false
		}
		b, name = b[4:], name[4:]
	}
	for i := range b {
		if b[i]|0x20 != name[i] {
			return false
		}
	}
	return true
}

// valueChars marks the bytes of a fast field value: visible ASCII, space and tab.
var valueChars = func() (t [256]bool) {
	for c := ' '; c < 0x7f; c++ {
		t[c] = true
	}
	t['\t'] = true
	return t
}()

// word is the 8 bytes of b from i, little-endian (one load), for the scans that test 8 bytes
// at a time.
func word[B string | []byte](b B, i int) uint64 {
	b = b[i : i+8]
	return uint64(b[0]) | uint64(b[1])<<8 | uint64(b[2])<<16 | uint64(b[3])<<24 |
		uint64(b[4])<<32 | uint64(b[5])<<40 | uint64(b[6])<<48 | uint64(b[7])<<56
}

// word4 is the 4 bytes of b from i, little-endian (one load).
func word4[B string | []byte](b B, i int) uint32 {
	b = b[i : i+4]
	return uint32(b[0]) | uint32(b[1])<<8 | uint32(b[2])<<16 | uint32(b[3])<<24
}

// hasCtl reports whether one of the bytes of x is below c (c at most 0x80).
func hasCtl(x uint64, c byte) bool {
	const ones, highs = 0x0101010101010101, 0x8080808080808080
	return (x-ones*uint64(c))&^x&highs != 0
}

// notPlain returns, of the bytes of x (a word), those that are not visible ASCII or space
// (valueChars but for the tab, which valueEnd takes on its own): each such byte's high bit,
// set in the result. The lowest is exact (the subtraction's borrow may mark bytes above it).
func notPlain(x uint64) uint64 {
	const ones, highs = 0x0101010101010101, 0x8080808080808080
	return ((x-ones*' ')&^x | (x&^highs + ones | x)) & highs
}

// fastRoom is where fastRequest puts a Request and its URL: part of the request's state.
type fastRoom struct {
	req http.Request
	url url.URL
}

// maxLastHead is the longest head whose string headString keeps for the next, in bytes.
const maxLastHead = 1024

// headString returns head as a string: the last head's when head is the same bytes (a client
// that repeats its request, as load generators and health checks do: strings are immutable,
// so requests may share one), else a new string, kept as the last if it is short. The bytes
// are copied, not kept in the request's state, which stays within the 512-byte size class.
func (sc *fastScratch) headString(head []byte) string {
	if string(head) == sc.last {
		return sc.last
	}
	s := string(head)
	if len(s) <= maxLastHead {
		sc.last = s
	}
	return s
}

// The classes of fastClass: the bytes a fast target's path may hold (url.URL keeps them as
// they are, no RawPath, and they need no unescaping), those its query may hold (kept raw by
// url.URL), and those a fast field name may hold (letters, digits and '-', which
// net/textproto canonicalizes).
const (
	classPath = 1 << iota
	classQuery
	className
)

// fastClass is each byte's classes.
var fastClass = func() (t [256]uint8) {
	for c := range 256 {
		switch {
		case 'a' <= c && c <= 'z', 'A' <= c && c <= 'Z', '0' <= c && c <= '9':
			t[c] = classPath | classQuery | className
		}
	}
	for _, c := range []byte("-_.~/$&+,:;=@") {
		t[c] |= classPath | classQuery
	}
	for _, c := range []byte("%!'()*?") {
		t[c] |= classQuery
	}
	t['-'] |= className
	return t
}()

// hostValid is validHost(host) for the Host value of a fast head of n bytes, which request
// has just built. The last value found valid is not checked again (most requests to a server
// name the same one); it is kept only from a head of at most maxLastHead bytes, as it is part
// of the head's string (headString), which it would keep alive.
func (sc *fastScratch) hostValid(host string, n int) bool {
	if host == sc.goodHost {
		return true
	}
	if !validHost(host) {
		return false
	}
	if n <= maxLastHead {
		sc.goodHost = host
	}
	return true
}

// fieldIs reports whether b is name, ASCII case-insensitively.
func fieldIs(b []byte, name string) bool {
	if len(b) != len(name) {
		return false
	}
	for i := range len(b) {
		if b[i]|0x20 != name[i]|0x20 {
			return false
		}
	}
	return true
}

// canonicalName is net/textproto's canonical form of the field name s (whose bytes are b,
// className each): s itself when it is canonical, else a common name's constant, else a new
// string.
func canonicalName(s string, b []byte) string {
	upper := true
	canonical := true
	for _, c := range b {
		if upper && 'a' <= c && c <= 'z' || !upper && 'A' <= c && c <= 'Z' {
			canonical = false
			break
		}
		upper = c == '-'
	}
	if canonical {
		return s
	}
	var buf [64]byte
	if len(b) > len(buf) {
		return http.CanonicalHeaderKey(s)
	}
	k := buf[:len(b)]
	upper = true
	for i, c := range b {
		if upper && 'a' <= c && c <= 'z' {
			c -= 'a' - 'A'
		} else if !upper && 'A' <= c && c <= 'Z' {
			c += 'a' - 'A'
		}
		k[i] = c
		upper = c == '-'
	}
	if v, ok := commonNames[string(k)]; ok {
		return v
	}
	return string(k)
}

// commonNames are the field names whose canonical forms canonicalName need not allocate.
var commonNames = func() map[string]string {
	m := map[string]string{}
	for _, v := range []string{"Accept", "Accept-Charset", "Accept-Encoding", "Accept-Language",
		"Accept-Ranges", "Authorization", "Cache-Control", "Cc", "Connection", "Content-Id",
		"Content-Language", "Content-Type", "Cookie", "Date", "Dkim-Signature", "Etag",
		"Expires", "From", "If-Modified-Since", "If-None-Match", "Origin", "Referer",
		"Sec-Fetch-Dest", "Sec-Fetch-Mode", "Sec-Fetch-Site", "Sec-Fetch-User",
		"Upgrade", "Upgrade-Insecure-Requests", "User-Agent", "X-Forwarded-For",
		"X-Requested-With"} {
		m[v] = v
	}
	return m
}()
