//go:build unix

package nethttp

import (
	"bytes"
	"context"
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
// http.ReadRequest returns for the same bytes, with ctx as its context (made on the stack,
// given ctx by WithContext, copied into room), and hosts is how many Host fields
// the head holds (0 or 1: req.Host is the first's value). It returns nil for any other head,
// which http.ReadRequest reads instead.
//
// The Request and its URL go in room (made for the request; never reused, as a handler may
// keep the Request); its strings are parts of one string of the head (sc.headString); the
// header's values, where there are fields but Host, are one slice made for them. sc is the
// loop's: where fastRequest notes the fields as it reads them, and the last head's string.
func fastRequest(head []byte, ctx context.Context, room *fastRoom, sc *fastScratch) (req *http.Request, hosts int) {
	fields := &sc.fields
	i := bytes.IndexByte(head, '\n')
	if i < 2 || head[i-1] != '\r' {
		return nil, 0
	}
	line := head[:i-1]
	var method string
	switch {
	case len(line) > 4 && string(line[:5]) == "GET /":
		method = "GET"
	case len(line) > 5 && string(line[:6]) == "HEAD /":
		method = "HEAD"
	default:
		return nil, 0
	}
	if len(line) < len(method)+1+9 {
		return nil, 0
	}
	minor := 0
	switch string(line[len(line)-9:]) {
	case " HTTP/1.1":
		minor = 1
	case " HTTP/1.0":
	default:
		return nil, 0
	}
	tstart, tend := len(method)+1, len(line)-9
	q := -1 // where the query starts ('?')
	for j := tstart; j < tend; j++ {
		c := line[j]
		switch {
		case pathByte(c):
		case c == '?' && q < 0:
			q = j
		case q >= 0 && (c == '?' || queryByte(c)):
		default:
			return nil, 0
		}
	}
	if q == tend-1 {
		return nil, 0 // a lone '?' at the end: url's ForceQuery
	}

	n := 0
	host, conn := -1, -1
	p := i + 1
	for {
		if p+1 < len(head) && head[p] == '\r' && head[p+1] == '\n' {
			if p+2 != len(head) {
				return nil, 0
			}
			break
		}
		if n == maxFastFields {
			return nil, 0
		}
		k0 := p
		for p < len(head) && nameByte(head[p]) {
			p++
		}
		if p == k0 || p == len(head) || head[p] != ':' {
			return nil, 0
		}
		k1 := p
		p++
		for p < len(head) && (head[p] == ' ' || head[p] == '\t') {
			p++
		}
		v0 := p
		for p+8 <= len(head) && plainWord(word(head, p)) {
			p += 8
		}
		for p < len(head) && valueChars[head[p]] {
			p++
		}
		v1 := p
		if p+1 >= len(head) || head[p] != '\r' || head[p+1] != '\n' {
			return nil, 0
		}
		p += 2
		for v1 > v0 && (head[v1-1] == ' ' || head[v1-1] == '\t') {
			v1--
		}
		switch {
		case fieldIs(head[k0:k1], "Host"):
			if host >= 0 {
				return nil, 0
			}
			host = n
		case fieldIs(head[k0:k1], "Connection"):
			if conn >= 0 {
				return nil, 0
			}
			conn = n
		case fieldIs(head[k0:k1], "Content-Length"), fieldIs(head[k0:k1], "Transfer-Encoding"),
			fieldIs(head[k0:k1], "Trailer"), fieldIs(head[k0:k1], "Pragma"):
			return nil, 0
		}
		fields[n] = fastField{k0, k1, v0, v1}
		n++
	}
	closing := minor == 0 // HTTP/1.0 closes without keep-alive
	if conn >= 0 {
		v := head[fields[conn].v0:fields[conn].v1]
		switch {
		case fieldIs(v, "close"):
			closing = true
		case fieldIs(v, "keep-alive"):
			closing = false
		default:
			return nil, 0 // a list of tokens: http.ReadRequest's parsing of it
		}
	}

	s := sc.headString(head) // every string of the Request is part of this one
	// The Request is set in place (room is new, so zero), then given ctx by WithContext's
	// copy, as ctx is unexported.
	r := &room.req
	r.Method = method
	r.Proto = s[tend+1 : i-1]
	r.ProtoMajor, r.ProtoMinor = 1, minor
	others := n // the fields but Host
	if host >= 0 {
		others--
	}
	r.Header = make(http.Header, others)
	r.Body = http.NoBody
	r.Close = closing
	r.RequestURI = s[tstart:tend]
	u := &room.url
	u.Path = s[tstart:tend]
	if q >= 0 {
		u.Path, u.RawQuery = s[tstart:q], s[q+1:tend]
	}
	r.URL = u
	var vals []string
	if others > 0 {
		vals = make([]string, others)
	}
	for j, f := range fields[:n] {
		v := s[f.v0:f.v1]
		if j == host {
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
	*r = *r.WithContext(ctx)
	return &room.req, hosts
}

// fastScratch is a loop's for fastRequest: fields is where it notes the fields of a head,
// where each name and value is (offsets into the head), not cleared for each request; last is
// the last head it made a string of (headString).
type fastScratch struct {
	fields [maxFastFields]fastField
	last   string
}

type fastField struct{ k0, k1, v0, v1 int }

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

// hasCtl reports whether one of the bytes of x is below c (c at most 0x80).
func hasCtl(x uint64, c byte) bool {
	const ones, highs = 0x0101010101010101, 0x8080808080808080
	return (x-ones*uint64(c))&^x&highs != 0
}

// plainWord reports whether the bytes of x are all visible ASCII or space (valueChars but
// for the tab, which the byte scan takes).
func plainWord(x uint64) bool {
	const ones, highs = 0x0101010101010101, 0x8080808080808080
	return !hasCtl(x, ' ') && (x&^highs+ones|x)&highs == 0
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

// pathByte reports whether c may be in a fast target's path: bytes that url.URL keeps as
// they are (no RawPath) and that need no unescaping.
func pathByte(c byte) bool {
	switch {
	case 'a' <= c && c <= 'z', 'A' <= c && c <= 'Z', '0' <= c && c <= '9':
		return true
	}
	switch c {
	case '-', '_', '.', '~', '/', '$', '&', '+', ',', ':', ';', '=', '@':
		return true
	}
	return false
}

// queryByte reports whether c may be in a fast target's query (kept raw by url.URL).
func queryByte(c byte) bool {
	return pathByte(c) || c == '%' || c == '!' || c == '\'' || c == '(' || c == ')' || c == '*'
}

// nameByte reports whether c may be in a fast field name: letters, digits and '-', which
// net/textproto canonicalizes.
func nameByte(c byte) bool {
	return 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || c == '-'
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
// nameByte each): s itself when it is canonical, else a common name's constant, else a new
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
