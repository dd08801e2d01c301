//go:build unix

package nethttp

import (
	"net/http"
	"strings"
)

// The field checks of net/http's server (RFC 9110 section 5), written here so that the module
// needs no golang.org/x/net.

// validFieldName reports whether name is a token (RFC 9110 section 5.6.2).
func validFieldName(name string) bool {
	if name == "" {
		return false
	}
	for i := 0; i < len(name); i++ {
		if !isTokenChar(name[i]) {
			return false
		}
	}
	return true
}

func isTokenChar(c byte) bool { return tokenChars[c] }

// tokenChars marks the bytes of a token: letters, digits and "!#$%&'*+-.^_`|~".
var tokenChars = alnumAnd("!#$%&'*+-.^_`|~")

// alnumAnd is a table that marks letters, digits and the bytes of extra.
func alnumAnd(extra string) (t [256]bool) {
	for c := range 256 {
		switch {
		case 'a' <= c && c <= 'z', 'A' <= c && c <= 'Z', '0' <= c && c <= '9':
			t[c] = true
		}
	}
	for _, c := range []byte(extra) {
		t[c] = true
	}
	return t
}

// validFieldValue reports whether v holds no control character but a horizontal tab.
func validFieldValue(v string) bool {
	for i := 0; i < len(v); i++ {
		if c := v[i]; c < ' ' && c != '\t' || c == 0x7f {
			return false
		}
	}
	return true
}

// validHost reports whether h holds only the bytes a Host may (RFC 3986's reg-name, IP
// literals and a port).
func validHost(h string) bool {
	for i := 0; i < len(h); i++ {
		if !hostChars[h[i]] {
			return false
		}
	}
	return true
}

// hostChars marks the bytes validHost allows: letters, digits and "!$%&'()*+,-.:;=[]_~".
var hostChars = alnumAnd("!$%&'()*+,-.:;=[]_~")

// badTrailers are the fields a trailer may not carry (RFC 9110 section 6.5.1): framing,
// routing, request modifiers, authentication, and response control.
var badTrailers = map[string]bool{
	"Authorization": true, "Cache-Control": true, "Connection": true, "Content-Encoding": true,
	"Content-Length": true, "Content-Range": true, "Content-Type": true, "Expect": true,
	"Host": true, "Keep-Alive": true, "Max-Forwards": true, "Pragma": true,
	"Proxy-Authenticate": true, "Proxy-Authorization": true, "Proxy-Connection": true,
	"Range": true, "Realm": true, "Te": true, "Trailer": true, "Transfer-Encoding": true,
	"Www-Authenticate": true,
}

// validTrailer reports whether a response may declare name as a trailer.
func validTrailer(name string) bool {
	name = http.CanonicalHeaderKey(name)
	return !strings.HasPrefix(name, "If-") && !badTrailers[name]
}

// valuesHaveToken reports whether one of the comma-separated elements of values is token,
// case-insensitively.
func valuesHaveToken(values []string, token string) bool {
	for _, v := range values {
		for e := range strings.SplitSeq(v, ",") {
			if strings.EqualFold(strings.Trim(e, " \t"), token) {
				return true
			}
		}
	}
	return false
}
