//go:build linux

package nethttp

import (
	"fmt"
	"strings"
)

// corpusCase is one raw input of the differential test.
type corpusCase struct {
	name string
	raw  string
	// open: the input leaves the server waiting (a body shorter than declared, a head not
	// ended), with no close to end the client's read: it reads until it has until (the end of
	// the answer the servers give before they wait; "" for none), within waitFor, then for a
	// while more, to hear anything else. The wait is for until, not for a time: a server slow
	// to answer, on a busy machine, is not taken for one that does not.
	open  bool
	until string
	// known: a difference that cannot be helped, logged instead of failed. The one case:
	// http.MaxBytesReader past its limit makes net/http's own ResponseWriter close the
	// connection ("Connection: close") through an unexported method no other
	// ResponseWriter can have; nethttp does the same once the handler has returned, for the
	// reader the handler put in r.Body, but cannot see one kept in a variable.
	known bool
}

// endReq ends an input whose connection stays open: the server answers it and closes.
const endReq = "GET /end HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n"

// corpus returns the differential test's inputs: valid requests on every path of testHandler
// in HTTP/1.1, HTTP/1.0 and HTTP/1.0 keep-alive, bodies by Content-Length and chunked,
// pipelines, and the malformed requests of RFC 9112's smuggling section and net/http's own
// server tests.
func corpus() []corpusCase {
	var cs []corpusCase
	add := func(name, raw string) { cs = append(cs, corpusCase{name: name, raw: raw + endReq}) }
	addOpen := func(name, raw string) { cs = append(cs, corpusCase{name: name, raw: raw, open: true}) }
	addOpenAnswered := func(name, raw, until string) {
		cs = append(cs, corpusCase{name: name, raw: raw, open: true, until: until})
	}
	addRaw := func(name, raw string) { cs = append(cs, corpusCase{name: name, raw: raw}) }

	paths := []string{"/", "/plain", "/req", "/big", "/big?n=100", "/big?n=2048", "/writes", "/flush", "/flush-empty",
		"/status/200", "/status/201", "/status/204", "/status/304", "/status/404", "/status/999", "/status/499",
		"/cl", "/short-cl", "/long-cl", "/bad-cl", "/trailer", "/1xx", "/connclose", "/keepalive",
		"/te-identity", "/te-chunked", "/html", "/typed", "/encoded", "/empty", "/header-after",
		"/odd-header", "/header-mutate",
		"/panic", "/panic-flushed", "/abort", "/redirect", "/error", "/readfrom", "/readfrom-small",
		"/serve-content", "/nowhere/404"}
	for _, p := range paths {
		add("GET "+p, "GET "+p+" HTTP/1.1\r\nHost: x\r\n\r\n")
		add("HEAD "+p, "HEAD "+p+" HTTP/1.1\r\nHost: x\r\n\r\n")
		addRaw("GET/1.0 "+p, "GET "+p+" HTTP/1.0\r\n\r\n")
		add("GET/1.0 keep-alive "+p, "GET "+p+" HTTP/1.0\r\nConnection: keep-alive\r\n\r\n")
		addRaw("GET close "+p, "GET "+p+" HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
	}
	add("HEAD/1.0 keep-alive", "HEAD / HTTP/1.0\r\nConnection: keep-alive\r\n\r\n")
	add("HEAD/1.0 keep-alive cl", "HEAD /cl HTTP/1.0\r\nConnection: Keep-Alive\r\n\r\n")
	add("range", "GET /serve-content HTTP/1.1\r\nHost: x\r\nRange: bytes=10-20\r\n\r\n")
	add("if-modified-since", "GET /serve-content HTTP/1.1\r\nHost: x\r\nIf-Modified-Since: Wed, 15 Nov 2023 00:00:00 GMT\r\n\r\n")
	add("options *", "OPTIONS * HTTP/1.1\r\nHost: x\r\n\r\n")
	add("options * body", "OPTIONS * HTTP/1.1\r\nHost: x\r\nContent-Length: 3\r\n\r\nabc")
	add("absolute uri", "GET http://example.com/req?a=b HTTP/1.1\r\nHost: other\r\n\r\n")
	add("absolute uri no host", "GET http://example.com/req HTTP/1.1\r\n\r\n")
	add("connect", "CONNECT example.com:443 HTTP/1.1\r\n\r\n")
	add("query", "GET /req?x=1&y=%20z HTTP/1.1\r\nHost: x\r\n\r\n")
	add("headers", "GET /req HTTP/1.1\r\nHost: x\r\nX-A: 1\r\nx-a: 2\r\nUser-Agent: test\r\nAccept: */*\r\nCookie: a=b\r\n\r\n")
	add("header spaces", "GET /req HTTP/1.1\r\nHost: x\r\nX-Pad:    padded   \r\nX-Tab:\tt\t\r\n\r\n")
	add("empty header value", "GET /req HTTP/1.1\r\nHost: x\r\nX-Empty:\r\n\r\n")
	add("empty host", "GET /req HTTP/1.1\r\nHost:\r\n\r\n")
	add("host with port", "GET /req HTTP/1.1\r\nHost: example.com:8080\r\n\r\n")
	add("ipv6 host", "GET /req HTTP/1.1\r\nHost: [::1]:80\r\n\r\n")
	// A Host field continued on the next line (obs-fold): net/http checks the value joined
	// to its continuation ("x y", not valid), on an origin-form and an absolute-form target.
	add("folded host", "GET /req HTTP/1.1\r\nHost: x\r\n y\r\n\r\n")
	add("folded host tab", "GET /req HTTP/1.1\r\nhost: x \r\n\t \t\r\nX-A: b\r\n\r\n")
	add("folded host absolute", "GET http://example.com/req HTTP/1.1\r\nHost: x\r\n y\r\n\r\n")
	add("folded host valid", "GET /req HTTP/1.1\r\nHost: x\r\n \r\n\r\n")
	add("folded empty host", "GET /req HTTP/1.1\r\nHost:\r\n x\r\n\r\n")
	add("empty host bare LF", "GET /req HTTP/1.1\nHost:\n\n")
	add("pragma no-cache", "GET /req HTTP/1.1\r\nHost: x\r\nPragma: no-cache\r\n\r\n")
	add("bare LF lines", "GET /req HTTP/1.1\nHost: x\nX-A: b\n\n")
	add("mixed line ends", "GET /req HTTP/1.1\r\nHost: x\nX-A: b\r\n\n")
	add("connection close token list", "GET /req HTTP/1.1\r\nHost: x\r\nConnection: foo, close\r\n\r\n")
	add("connection CLOSE upper", "GET /req HTTP/1.1\r\nHost: x\r\nConnection: CLOSE\r\n\r\n")
	add("1.0 keep-alive no cl", "GET /flush HTTP/1.0\r\nConnection: keep-alive\r\n\r\n")
	add("1.0 keep-alive 204", "GET /status/204 HTTP/1.0\r\nConnection: keep-alive\r\n\r\n")
	add("method lowercase", "get /req HTTP/1.1\r\nHost: x\r\n\r\n")
	add("method custom", "PURGE /req HTTP/1.1\r\nHost: x\r\n\r\n")
	add("delete", "DELETE /req HTTP/1.1\r\nHost: x\r\n\r\n")
	add("pri h2 upgrade", "PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n")
	// The edges of the fast head parser (fastRequest) and where it leaves the head to
	// http.ReadRequest.
	add("fast path bytes", "GET /req/a-b_c.d~e$f&g+h,i:j;k=l@m HTTP/1.1\r\nHost: x\r\n\r\n")
	add("fast query bytes", "GET /req?a=%zz&b='!()*'?c HTTP/1.1\r\nHost: x\r\n\r\n")
	add("fast lone question mark", "GET /req? HTTP/1.1\r\nHost: x\r\n\r\n")
	add("fast escaped path", "GET /req%2Fx HTTP/1.1\r\nHost: x\r\n\r\n")
	add("fast path bang", "GET /req!x HTTP/1.1\r\nHost: x\r\n\r\n")
	add("fast lower-case names", "GET /req HTTP/1.1\r\nhost: x\r\nuser-agent: u\r\nx-custom-NAME: a\r\nX-Custom-Name: b\r\n\r\n")
	add("fast keep-alive 1.1", "GET /req HTTP/1.1\r\nHost: x\r\nConnection: Keep-Alive\r\n\r\n")
	add("fast value DEL", "GET /req HTTP/1.1\r\nHost: x\r\nX-V: a\x7fb\r\n\r\n")
	add("fast value obs-text", "GET /req HTTP/1.1\r\nHost: x\r\nX-V: caf\xc3\xa9\r\n\r\n")
	add("fast value blanks", "GET /req HTTP/1.1\r\nHost: \t x \t\r\nX-V:\t\r\n\r\n")
	addRaw("fast two hosts", "GET /req HTTP/1.1\r\nHost: x\r\nhost: y\r\n\r\n")
	add("fast no host 1.0", "HEAD /req HTTP/1.0\r\nConnection: keep-alive\r\n\r\n")
	add("fast name underscore", "GET /req HTTP/1.1\r\nHost: x\r\nX_Under: v\r\n\r\n")
	addRaw("fast bad host", "GET /req HTTP/1.1\r\nHost: a<b\r\n\r\n")
	addRaw("fast bad host after a good one", "GET /req HTTP/1.1\r\nHost: x\r\n\r\nGET /req HTTP/1.1\r\nHost: x y\r\n\r\n")
	long := "X-Pad: " + strings.Repeat("p", 2000) + "\r\n" // a head past the Host memo's 1 KiB
	addRaw("fast long heads, the same host then a bad one", "GET /req HTTP/1.1\r\nHost: x\r\n"+long+"\r\n"+
		"GET /req HTTP/1.1\r\nHost: x\r\n"+long+"\r\nGET /req HTTP/1.1\r\nHost: x<y\r\n"+long+"\r\n")
	add("fast many fields", "GET /req HTTP/1.1\r\nHost: x\r\n"+strings.Repeat("X-F: v\r\n", 40)+"\r\n")

	// Bodies.
	for _, p := range []string{"/echo", "/noread", "/readsome", "/closebody", "/maxbytes", "/maxbytes-error", "/maxbytes-after-header", "/maxbytes-big", "/maxbytes-local", "/form", "/"} {
		n := len(cs)
		add("POST cl "+p, "POST "+p+" HTTP/1.1\r\nHost: x\r\nContent-Type: application/x-www-form-urlencoded\r\nContent-Length: 11\r\n\r\na=1&b=2&c=3")
		add("POST chunked "+p, "POST "+p+" HTTP/1.1\r\nHost: x\r\nContent-Type: application/x-www-form-urlencoded\r\nTransfer-Encoding: chunked\r\n\r\n3\r\na=1\r\n8\r\n&b=2&c=3\r\n0\r\n\r\n")
		add("POST chunked trailer "+p, "POST "+p+" HTTP/1.1\r\nHost: x\r\nTrailer: X-T\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhello\r\n0\r\nX-T: v\r\n\r\n")
		add("POST empty "+p, "POST "+p+" HTTP/1.1\r\nHost: x\r\nContent-Length: 0\r\n\r\n")
		add("POST/1.0 "+p, "POST "+p+" HTTP/1.0\r\nContent-Length: 4\r\n\r\nbody")
		add("POST big "+p, "POST "+p+" HTTP/1.1\r\nHost: x\r\nContent-Length: 20000\r\n\r\n"+strings.Repeat("b", 20000))
		add("POST expect "+p, "POST "+p+" HTTP/1.1\r\nHost: x\r\nExpect: 100-continue\r\nContent-Length: 5\r\n\r\nhello")
		for i := n; p == "/maxbytes-local" && i < len(cs); i++ {
			cs[i].known = true
		}
	}
	add("options * big body", "OPTIONS * HTTP/1.1\r\nHost: x\r\nContent-Length: 5000\r\n\r\n"+strings.Repeat("o", 5000))
	add("POST huge unread", "POST /noread HTTP/1.1\r\nHost: x\r\nContent-Length: 300000\r\n\r\n"+strings.Repeat("h", 300000))
	add("POST chunk extension", "POST /echo HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n5;name=val\r\nhello\r\n0;x\r\n\r\n")
	add("POST chunk size upper hex", "POST /echo HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\nA\r\n0123456789\r\n0\r\n\r\n")
	add("POST chunk size leading zeros", "POST /echo HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n0005\r\nhello\r\n0\r\n\r\n")
	add("POST chunk size trailing space", "POST /echo HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n5 \r\nhello\r\n0\r\n\r\n")
	add("POST many chunks", "POST /echo HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n"+strings.Repeat("1\r\nx\r\n", 100)+"0\r\n\r\n")
	add("POST expect 1.0", "POST /echo HTTP/1.0\r\nExpect: 100-continue\r\nContent-Length: 5\r\n\r\nhello")
	add("POST expect no body", "POST /echo HTTP/1.1\r\nHost: x\r\nExpect: 100-continue\r\nContent-Length: 0\r\n\r\n")
	add("POST expect unknown", "POST /echo HTTP/1.1\r\nHost: x\r\nExpect: something-else\r\nContent-Length: 5\r\n\r\nhello")
	add("GET expect unknown", "GET / HTTP/1.1\r\nHost: x\r\nExpect: 200-ok\r\n\r\n")
	add("GET with body", "GET /echo HTTP/1.1\r\nHost: x\r\nContent-Length: 4\r\n\r\nbody")
	add("body longer than declared", "POST /echo HTTP/1.1\r\nHost: x\r\nContent-Length: 3\r\n\r\nabcdef")
	addOpen("body shorter than declared", "POST /echo HTTP/1.1\r\nHost: x\r\nContent-Length: 30\r\n\r\nabc")
	addOpen("chunked body unfinished", "POST /echo HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhel")
	add("CRLF after POST", "POST /echo HTTP/1.1\r\nHost: x\r\nContent-Length: 2\r\n\r\nab\r\nGET / HTTP/1.1\r\nHost: x\r\n\r\n")
	add("two CRLF after POST", "POST /echo HTTP/1.1\r\nHost: x\r\nContent-Length: 2\r\n\r\nab\r\n\r\nGET / HTTP/1.1\r\nHost: x\r\n\r\n")
	add("CRLF after GET", "GET / HTTP/1.1\r\nHost: x\r\n\r\n\r\nGET / HTTP/1.1\r\nHost: x\r\n\r\n")

	// Pipelines.
	add("pipeline 3 GET", strings.Repeat("GET /req HTTP/1.1\r\nHost: x\r\n\r\n", 3))
	add("pipeline GET HEAD GET", "GET /big HTTP/1.1\r\nHost: x\r\n\r\nHEAD /big HTTP/1.1\r\nHost: x\r\n\r\nGET /cl HTTP/1.1\r\nHost: x\r\n\r\n")
	add("pipeline POST GET", "POST /echo HTTP/1.1\r\nHost: x\r\nContent-Length: 5\r\n\r\nhelloGET /req HTTP/1.1\r\nHost: x\r\n\r\n")
	add("pipeline chunked GET", "POST /echo HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhello\r\n0\r\n\r\nGET /req HTTP/1.1\r\nHost: x\r\n\r\n")
	add("pipeline noread GET", "POST /noread HTTP/1.1\r\nHost: x\r\nContent-Length: 5\r\n\r\nhelloGET /req HTTP/1.1\r\nHost: x\r\n\r\n")
	addRaw("pipeline close in middle", "GET / HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\nGET /req HTTP/1.1\r\nHost: x\r\n\r\n")
	add("pipeline bad second", "GET / HTTP/1.1\r\nHost: x\r\n\r\nGARBAGE\r\n\r\n")
	plainGets := ""
	for _, p := range []string{"/plain", "/", "/status/200", "/html", "/plain", "/typed", "/json", "/plain",
		"/sniff?b=hello%0A", "/sniff?b=%3Chtml%3E", "/sniff", "/sniff?ct=", "/sniff?ct=", "/sniff?ct=x&b=hello%0A",
		"/sniff?ct=%20x%20&b=hello%0A", "/sniff?ct=x%0Ay&b=hello%0A"} {
		plainGets += "GET " + p + " HTTP/1.1\r\nHost: x\r\n\r\n"
	}
	add("pipeline plain headers", plainGets)
	add("pipeline plain headers, other responses between", "GET /plain HTTP/1.1\r\nHost: x\r\n\r\n"+
		"HEAD /plain HTTP/1.1\r\nHost: x\r\n\r\nGET /plain HTTP/1.1\r\nHost: x\r\n\r\n"+
		"GET /status/404 HTTP/1.1\r\nHost: x\r\n\r\nGET /plain HTTP/1.1\r\nHost: x\r\n\r\n"+
		"GET /plain HTTP/1.0\r\nConnection: keep-alive\r\n\r\nGET /plain HTTP/1.1\r\nHost: x\r\n\r\n"+
		"POST /plain HTTP/1.1\r\nHost: x\r\nContent-Length: 2\r\n\r\nabGET /plain HTTP/1.1\r\nHost: x\r\n\r\n"+
		"GET /header-after HTTP/1.1\r\nHost: x\r\n\r\nGET /plain HTTP/1.1\r\nHost: x\r\n\r\n"+
		"GET /plain HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
	add("pipeline 1.0 keep-alive", "GET /cl HTTP/1.0\r\nConnection: keep-alive\r\n\r\nGET /cl HTTP/1.0\r\nConnection: keep-alive\r\n\r\n")
	add("pipeline 10", strings.Repeat("GET /big?n=300 HTTP/1.1\r\nHost: x\r\n\r\n", 10))
	add("pipeline panic then GET", "GET /panic HTTP/1.1\r\nHost: x\r\n\r\nGET / HTTP/1.1\r\nHost: x\r\n\r\n")

	// Malformed: RFC 9112 section 11.2 (smuggling), section 5 (fields), net/http's tests.
	add("CL and TE", "POST /echo HTTP/1.1\r\nHost: x\r\nContent-Length: 5\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhello\r\n0\r\n\r\n")
	add("TE and CL", "POST /echo HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\nContent-Length: 5\r\n\r\n5\r\nhello\r\n0\r\n\r\n")
	add("duplicate CL same", "POST /echo HTTP/1.1\r\nHost: x\r\nContent-Length: 5\r\nContent-Length: 5\r\n\r\nhello")
	add("duplicate CL differ", "POST /echo HTTP/1.1\r\nHost: x\r\nContent-Length: 5\r\nContent-Length: 6\r\n\r\nhello!")
	add("CL list", "POST /echo HTTP/1.1\r\nHost: x\r\nContent-Length: 5, 5\r\n\r\nhello")
	add("CL plus sign", "POST /echo HTTP/1.1\r\nHost: x\r\nContent-Length: +5\r\n\r\nhello")
	add("CL negative", "POST /echo HTTP/1.1\r\nHost: x\r\nContent-Length: -5\r\n\r\nhello")
	add("CL hex", "POST /echo HTTP/1.1\r\nHost: x\r\nContent-Length: 0x5\r\n\r\nhello")
	add("CL empty", "POST /echo HTTP/1.1\r\nHost: x\r\nContent-Length: \r\n\r\nhello")
	add("CL space inside", "POST /echo HTTP/1.1\r\nHost: x\r\nContent-Length: 1 2\r\n\r\nhello")
	add("CL huge", "POST /echo HTTP/1.1\r\nHost: x\r\nContent-Length: 99999999999999999999\r\n\r\nhello")
	add("space before colon", "GET /req HTTP/1.1\r\nHost: x\r\nContent-Length : 0\r\n\r\n")
	add("space before colon TE", "POST /echo HTTP/1.1\r\nHost: x\r\nTransfer-Encoding : chunked\r\n\r\n0\r\n\r\n")
	add("TE gzip", "POST /echo HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: gzip\r\n\r\nabc")
	add("TE gzip, chunked", "POST /echo HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: gzip, chunked\r\n\r\n0\r\n\r\n")
	add("TE chunked, chunked", "POST /echo HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked, chunked\r\n\r\n0\r\n\r\n")
	add("TE twice", "POST /echo HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n")
	add("TE identity", "POST /echo HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: identity\r\n\r\n")
	add("TE Chunked upper", "POST /echo HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: CHUNKED\r\n\r\n5\r\nhello\r\n0\r\n\r\n")
	add("TE 1.0 chunked", "POST /echo HTTP/1.0\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhello\r\n0\r\n\r\n")
	add("TE empty", "POST /echo HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: \r\n\r\n")
	add("bad chunk size", "POST /echo HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\nhello\r\n0\r\n\r\n")
	add("chunk size too long", "POST /echo HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n11111111111111111\r\nhello\r\n0\r\n\r\n")
	add("chunk size negative", "POST /echo HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n-5\r\nhello\r\n0\r\n\r\n")
	add("chunk size bare LF", "POST /echo HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n5\nhello\r\n0\r\n\r\n")
	add("chunk data bare LF end", "POST /echo HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhello\n0\r\n\r\n")
	add("chunk data too long", "POST /echo HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n3\r\nhello\r\n0\r\n\r\n")
	add("chunk CR inside", "POST /echo HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n5\r\r\nhello\r\n0\r\n\r\n")
	add("last chunk bare LF", "POST /echo HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhello\r\n0\n\r\n")
	add("chunk ext with quote", "POST /echo HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n5;a=\"b;c\"\r\nhello\r\n0\r\n\r\n")
	add("chunk size space before", "POST /echo HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n 5\r\nhello\r\n0\r\n\r\n")
	add("chunk size 0x", "POST /echo HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n0x5\r\nhello\r\n0\r\n\r\n")
	add("trailer bare LF", "POST /echo HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n0\r\nX-T: v\n\n")
	add("trailer bad", "POST /echo HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n0\r\nbad trailer\r\n\r\n")
	add("trailer forbidden", "POST /echo HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n0\r\nContent-Length: 5\r\n\r\n")
	add("obs-fold", "GET /req HTTP/1.1\r\nHost: x\r\nX-Folded: a\r\n  b\r\n\r\n")
	add("obs-fold first", "GET /req HTTP/1.1\r\n X-Folded: a\r\nHost: x\r\n\r\n")
	add("obs-fold CL", "POST /echo HTTP/1.1\r\nHost: x\r\nContent-Length:\r\n 5\r\n\r\nhello")
	add("bare CR in header", "GET /req HTTP/1.1\r\nHost: x\r\nX-A: a\rb\r\n\r\n")
	add("NUL in header", "GET /req HTTP/1.1\r\nHost: x\r\nX-A: a\x00b\r\n\r\n")
	add("DEL in header value", "GET /req HTTP/1.1\r\nHost: x\r\nX-A: a\x7fb\r\n\r\n")
	add("UTF-8 in header value", "GET /req HTTP/1.1\r\nHost: x\r\nX-A: caf\xc3\xa9\r\n\r\n")
	add("bad header name", "GET /req HTTP/1.1\r\nHost: x\r\nX(A): b\r\n\r\n")
	add("header no colon", "GET /req HTTP/1.1\r\nHost: x\r\nNoColon\r\n\r\n")
	add("header empty name", "GET /req HTTP/1.1\r\nHost: x\r\n: value\r\n\r\n")
	add("missing host", "GET /req HTTP/1.1\r\n\r\n")
	add("two hosts", "GET /req HTTP/1.1\r\nHost: a\r\nHost: b\r\n\r\n")
	add("bad host", "GET /req HTTP/1.1\r\nHost: a b\r\n\r\n")
	add("bad host char", "GET /req HTTP/1.1\r\nHost: a\"b\r\n\r\n")
	add("host lowercase key", "GET /req HTTP/1.1\r\nhost: lower\r\n\r\n")
	addRaw("HTTP/0.9", "GET /\r\n\r\n")
	addRaw("HTTP/2.0 plain", "GET / HTTP/2.0\r\nHost: x\r\n\r\n")
	add("HTTP/1.2", "GET /req HTTP/1.2\r\nHost: x\r\n\r\n")
	addRaw("HTTP/3.0", "GET / HTTP/3.0\r\nHost: x\r\n\r\n")
	addRaw("http lowercase", "GET / http/1.1\r\nHost: x\r\n\r\n")
	addRaw("version garbage", "GET / HTTP/1.x\r\nHost: x\r\n\r\n")
	addRaw("version leading zero", "GET / HTTP/01.1\r\nHost: x\r\n\r\n")
	addRaw("no version", "GET /\r\nHost: x\r\n\r\n")
	addRaw("extra space in request line", "GET  / HTTP/1.1\r\nHost: x\r\n\r\n")
	addRaw("trailing space in request line", "GET / HTTP/1.1 \r\nHost: x\r\n\r\n")
	addRaw("tab in request line", "GET\t/ HTTP/1.1\r\nHost: x\r\n\r\n")
	addRaw("empty request line", "\r\nGET / HTTP/1.1\r\nHost: x\r\n\r\n")
	addRaw("bad method", "G(T / HTTP/1.1\r\nHost: x\r\n\r\n")
	addRaw("bad uri", "GET foo HTTP/1.1\r\nHost: x\r\n\r\n")
	addRaw("uri with space", "GET /a b HTTP/1.1\r\nHost: x\r\n\r\n")
	add("uri percent bad", "GET /%zz HTTP/1.1\r\nHost: x\r\n\r\n")
	add("uri fragment", "GET /req#frag HTTP/1.1\r\nHost: x\r\n\r\n")
	add("uri dotdot", "GET /a/../req HTTP/1.1\r\nHost: x\r\n\r\n")
	add("uri double slash", "GET //req HTTP/1.1\r\nHost: x\r\n\r\n")
	addRaw("garbage", "\x16\x03\x01\x00\xa5\x01\x00\x00\xa1\x03\x03\r\n\r\n")
	addRaw("only CRLF", "\r\n\r\n")
	addRaw("binary garbage", "\x00\x01\x02\x03\n\n")
	addRaw("h2 preface", "PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n")
	addRaw("header line too long for small limit", "GET /req HTTP/1.1\r\nHost: x\r\nX-Long: "+strings.Repeat("l", 9000)+"\r\n\r\n")
	addOpen("head unfinished", "GET /req HTTP/1.1\r\nHost: x\r\n")
	// A head not ended whose lines so far net/http refuses at once (a 400 and a close), or
	// reads and waits on.
	addRaw("unfinished: bad request line", "GARBAGE\r\n")
	addRaw("unfinished: bad method", "G@T / HTTP/1.1\r\n")
	addRaw("unfinished: bad version", "GET / HTTP/x.y\r\n")
	addOpen("unfinished: version 9.9", "GET / HTTP/9.9\r\n")
	addRaw("unfinished: uri percent bad", "GET /%zz HTTP/1.1\r\n")
	addOpen("unfinished: request line in parts", "GET / HT")
	addRaw("unfinished: a line without a colon", "GET / HTTP/1.1\r\nHost: x\r\nBad Line\r\n")
	addRaw("unfinished: a first line folded", "GET / HTTP/1.1\r\n Host: x\r\n")
	addOpen("unfinished: a bad field name", "GET / HTTP/1.1\r\nHo st: x\r\n")
	addOpen("unfinished: a bad field name, a next line begun", "GET / HTTP/1.1\r\nHo st: x\r\nX")
	addRaw("unfinished: a NUL in a field name, a next line begun", "GET / HTTP/1.1\r\nX\x00Y: z\r\nA")
	addOpen("unfinished: a folded line", "GET / HTTP/1.1\r\nHost: x\r\nX-A: b\r\n c\r\n")
	addRaw("unfinished: a bad second request line", "GET / HTTP/1.1\r\nHost: x\r\n\r\nGARBAGE\r\n")
	addRaw("unfinished: a bad line after a POST's CRLF", postAB+"\r\nGARBAGE\r\n")
	addOpenAnswered("unfinished: 4 CRLFs after a POST", postAB+"\r\n\r\n", "trailer=map[]\n")
	add("4 CRLFs after a POST, then a GET", postAB+"\r\n\r\nGET / HTTP/1.1\r\nHost: x\r\n\r\n")
	add("many headers", "GET /req HTTP/1.1\r\nHost: x\r\n"+manyHeaders(50)+"\r\n")
	return cs
}

func manyHeaders(n int) string {
	var b strings.Builder
	for i := range n {
		fmt.Fprintf(&b, "X-H%d: v%d\r\n", i, i)
	}
	return b.String()
}
