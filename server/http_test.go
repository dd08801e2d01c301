//go:build linux

package server

import (
	"bufio"
	"fmt"
	"net"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"
)

// wrkRequest is the request wrk 4 sends for http://127.0.0.1:8080/plaintext.
const wrkRequest = "GET /plaintext HTTP/1.1\r\nHost: 127.0.0.1:8080\r\n\r\n"

// curlRequest is curl 7.88's.
const curlRequest = "GET / HTTP/1.1\r\nHost: 127.0.0.1:8080\r\nUser-Agent: curl/7.88.1\r\nAccept: */*\r\n\r\n"

// testDate is the Date every test server is ticked to.
var testDate = time.Date(2026, 11, 30, 23, 59, 58, 0, time.UTC)

const testDateHeader = "Date: Mon, 30 Nov 2026 23:59:58 GMT\r\n"

// helloResponse is the plaintext response with a Connection header (conn "" for none).
func helloResponse(conn string) string {
	s := "HTTP/1.1 200 OK\r\nServer: ringev\r\n" + testDateHeader + "Content-Type: text/plain\r\nContent-Length: 13\r\n"
	if conn != "" {
		s += "Connection: " + conn + "\r\n"
	}
	return s + "\r\nHello, World!"
}

// errorResponse is the response of a refused request: its status, the reason as body, a close.
func errorResponse(status string) string {
	reason := status[4:]
	return fmt.Sprintf("HTTP/1.1 %s\r\nServer: ringev\r\n%sContent-Type: text/plain\r\nContent-Length: %d\r\nConnection: close\r\n\r\n%s",
		status, testDateHeader, len(reason), reason)
}

// serveHTTP runs in through a fresh HTTP server ticked to testDate, in one call.
func serveHTTP(in string) (n int, out string, closeAfter bool) {
	h := NewHTTP()
	h.setDate(testDate)
	n, b, closeAfter := h.serve([]byte(in), nil, outputLimit)
	return n, string(b), closeAfter
}

// TestHTTPPlaintext: wrk's and curl's requests get "Hello, World!" with TechEmpower's headers,
// and the connection stays open.
func TestHTTPPlaintext(t *testing.T) {
	for _, req := range []string{wrkRequest, curlRequest, "GET /plaintext?x=1 HTTP/1.1\r\nHost: h\r\n\r\n"} {
		n, out, closeAfter := serveHTTP(req)
		if n != len(req) || out != helloResponse("") || closeAfter {
			t.Errorf("%q: n %d, close %v, out\n%s", req, n, closeAfter, out)
		}
	}
}

// httpFastPathCases are requests at the edges of the parser's fast path (parseRequestFast):
// empty lines first, bare LFs, CRs inside lines, white space around values, control bytes,
// fields it reads in any case, repeated and bad Content-Lengths, bodies, HTTP/1.0, a head at
// MaxHeaderBytes and one past it, names and methods next to Host and GET (read by one compare).
var httpFastPathCases = []string{
	wrkRequest, curlRequest, "\r\n" + wrkRequest, "\n" + wrkRequest, "GET / HTTP/1.1\nHost: h\r\n\r\n",
	"GET / HTTP/1.1\r\nHost: h\n\r\n", "GET / HTTP/1.1\r\nHost: h\r\n\n", "GET / HTTP/1.1\r\nHost: h\r\n\rx\r\n\r\n",
	"GET / HTTP/1.1\r\nHost: h\rx\r\n\r\n", "GET /\r HTTP/1.1\r\nHost: h\r\n\r\n", "GET / HTTP/1.1\r\nhOsT:h\r\n\r\n",
	"GET / HTTP/1.1\r\nHost: \t h \t\r\n\r\n", "GET / HTTP/1.1\r\nHost : h\r\n\r\n", "GET / HTTP/1.1\r\n Host: h\r\n\r\n",
	"GET / HTTP/1.1\r\nHost: h\x01\r\n\r\n", "GET / HTTP/1.1\r\nHost: h\x7f\r\n\r\n", "GET / HTTP/1.1\r\nHost: h\xff\r\n\r\n",
	"GET / HTTP/1.1\r\nHost: h\r\nHost: h\r\n\r\n", "GET / HTTP/1.1\r\n\r\n", "GET / HTTP/1.0\r\n\r\n",
	"GET / HTTP/1.1\r\nHost: h\r\nCONNECTION: Close\r\n\r\n", "GET / HTTP/1.0\r\nConnection: x, keep-alive \r\n\r\n",
	"POST / HTTP/1.1\r\nHost: h\r\nContent-Length: 3\r\n\r\nabc", "POST / HTTP/1.1\r\nHost: h\r\ncontent-length: 0\r\n\r\n",
	"POST / HTTP/1.1\r\nHost: h\r\nContent-Length: 3\r\nContent-Length: 3\r\n\r\nabc",
	"POST / HTTP/1.1\r\nHost: h\r\nContent-Length: 3\r\nContent-Length: 4\r\n\r\nabcd",
	"POST / HTTP/1.1\r\nHost: h\r\nContent-Length: 0\r\nContent-Length: 1\r\n\r\na",
	"POST / HTTP/1.1\r\nHost: h\r\nContent-Length: x\r\n\r\n", "POST / HTTP/1.1\r\nHost: h\r\nContent-Length: 99999999\r\n\r\n",
	"POST / HTTP/1.1\r\nHost: h\r\nTransfer-Encoding: chunked\r\n\r\n", "GET / HTTP/2.0\r\nHost: h\r\n\r\n",
	"GET / HTTP/1.1\r\nHost: h\r\nX: " + strings.Repeat("a", MaxHeaderBytes-50) + "\r\n\r\n",
	"GET / HTTP/1.1\r\nHost: h\r\nX: " + strings.Repeat("a", MaxHeaderBytes-40) + "\r\n\r\n",
	// Host and GET, each told by one compare, and names and methods that are almost them
	"GET / HTTP/1.1\r\nHosts: h\r\n\r\n", "GET / HTTP/1.1\r\nHost:\r\n\r\n", "GET / HTTP/1.1\r\nHost\r\n\r\n",
	"GET / HTTP/1.1\r\nHo\x00t: h\r\n\r\n", "GET / HTTP/1.1\r\nHOST:h \r\nHost:h\r\n\r\n", "GET / HTTP/1.1\r\nHost: h \t \r\n\r\n",
	"GETS / HTTP/1.1\r\nHost: h\r\n\r\n", "get / HTTP/1.1\r\nHost: h\r\n\r\n", "GET  / HTTP/1.1\r\nHost: h\r\n\r\n",
	"GET", "GET ", "GET /plaintext HTTP/1.1\r\nHost: h\r\n\r\n", "GET /plaintext? HTTP/1.0\r\nHost: h\r\n\r\n",
}

// TestHTTPFastPathAgreesWithTheGeneralParser: on every prefix of requests at the edges of the
// fast path, the parser as serve runs it (parseRequestFast, then parseRequestSlow unless the
// fast path took the request or found it cut short) finds what its general rules
// (parseRequestSlow) find: the same request, length and refusal.
func TestHTTPFastPathAgreesWithTheGeneralParser(t *testing.T) {
	for _, in := range httpFastPathCases {
		for i := 1; i <= len(in); i++ {
			if i == 100 && len(in) > 300 {
				i = len(in) - 100 // the long heads' middles are all alike
			}
			if fast, slow := httpParse(in[:i], false), httpParse(in[:i], true); fast != slow {
				t.Errorf("%.80q: the parser found %s, its general rules %s", in[:i], fast, slow)
			}
		}
	}
}

// httpParse is what serve's parse (parseRequestFast, then parseRequestSlow if it does not take
// the request) or, slow, parseRequestSlow alone finds at the start of in, as text.
func httpParse(in string, slow bool) string {
	req := request{method: []byte("stale"), http10: true} // what a request before left
	n, ok := 0, false
	if !slow {
		n, ok = parseRequestFast([]byte(in), &req)
	}
	status := ""
	if !ok && n < 0 {
		n = 0 // incomplete
	} else if !ok {
		req, n, status = parseRequestSlow([]byte(in))
	}
	if n == 0 {
		req = request{} // what an incomplete or refused request leaves in it is not read
	}
	return fmt.Sprintf("%q %q %v %v %d %q", req.method, req.target, req.http10, req.keepAlive, n, status)
}

// TestHTTPValueEndFindsTheFirstBadByte: valueEnd, eight bytes at a time, finds the first byte
// a field value may not hold as a byte-by-byte look does: each byte value at each position of
// values of 1 to 24 bytes, after a tab or a byte of 0x80 and more, or a second bad byte.
func TestHTTPValueEndFindsTheFirstBadByte(t *testing.T) {
	want := func(b []byte) int {
		for i, c := range b {
			if badValueByte[c] {
				return i
			}
		}
		return len(b)
	}
	for n := 1; n <= 24; n++ {
		for pos := range n {
			for c := range 256 {
				for _, before := range []byte{'a', '\t', 0xff, 0x80, 0x1f} {
					b := []byte(strings.Repeat("a", n))
					if pos > 0 {
						b[pos-1] = before
					}
					b[pos] = byte(c)
					if got := valueEnd(b); got != want(b) {
						t.Fatalf("valueEnd(%q) = %d; want %d", b, got, want(b))
					}
				}
			}
		}
	}
}

// TestHTTPPipelinedInOrder: requests sent together are answered in order, the incomplete one
// at the end is left for later.
func TestHTTPPipelinedInOrder(t *testing.T) {
	in := wrkRequest + "GET /nope HTTP/1.1\r\nHost: h\r\n\r\n" + "HEAD / HTTP/1.1\r\nHost: h\r\n\r\n" + wrkRequest[:20]
	n, out, closeAfter := serveHTTP(in)
	notFound := "HTTP/1.1 404 Not Found\r\nServer: ringev\r\n" + testDateHeader + "Content-Type: text/plain\r\nContent-Length: 9\r\n\r\nNot Found"
	head := strings.TrimSuffix(helloResponse(""), "Hello, World!")
	if want := helloResponse("") + notFound + head; out != want || n != len(in)-20 || closeAfter {
		t.Errorf("n %d (want %d), close %v, out\n%q\nwant\n%q", n, len(in)-20, closeAfter, out, want)
	}
}

// TestHTTPWaitsForIncompleteRequests: every proper prefix of a request is consumed as nothing.
func TestHTTPWaitsForIncompleteRequests(t *testing.T) {
	req := "POST / HTTP/1.1\r\nHost: h\r\nContent-Length: 5\r\n\r\nhello"
	for i := range len(req) {
		if n, out, closeAfter := serveHTTP(req[:i]); n != 0 || out != "" || closeAfter {
			t.Errorf("%q: n %d, close %v, out %q", req[:i], n, closeAfter, out)
		}
	}
}

// TestHTTPConnectionClose: "Connection: close" is answered with it and closes; the requests
// after it are dropped.
func TestHTTPConnectionClose(t *testing.T) {
	in := "GET / HTTP/1.1\r\nHost: h\r\nConnection: keep-alive, Close\r\n\r\n" + wrkRequest
	n, out, closeAfter := serveHTTP(in)
	if out != helloResponse("close") || !closeAfter || n != len(in) {
		t.Errorf("n %d, close %v, out\n%s", n, closeAfter, out)
	}
}

// TestHTTP10ClosesWithoutKeepAlive: HTTP/1.0 closes after the response unless it asks for
// keep-alive, which is then confirmed.
func TestHTTP10ClosesWithoutKeepAlive(t *testing.T) {
	if _, out, closeAfter := serveHTTP("GET / HTTP/1.0\r\n\r\n"); out != helloResponse("close") || !closeAfter {
		t.Errorf("HTTP/1.0: close %v, out\n%s", closeAfter, out)
	}
	if _, out, closeAfter := serveHTTP("GET / HTTP/1.0\r\nConnection: Keep-Alive\r\n\r\n"); out != helloResponse("keep-alive") || closeAfter {
		t.Errorf("HTTP/1.0 keep-alive: close %v, out\n%s", closeAfter, out)
	}
}

// TestHTTPMalformedGets400: each malformed request gets 400 and a close, after the responses
// to the requests before it.
func TestHTTPMalformedGets400(t *testing.T) {
	for _, req := range []string{
		"GET / HTTP/1.1\nHost: h\n\n",        // bare LF
		"GET  / HTTP/1.1\r\nHost: h\r\n\r\n", // two spaces
		"GET /\r\nHost: h\r\n\r\n",           // no version
		"G(T / HTTP/1.1\r\nHost: h\r\n\r\n",  // not a token
		"GET x HTTP/1.1\r\nHost: h\r\n\r\n",  // not origin-form
		"GET / HTTP/1.1\r\n\r\n",             // no Host
		"GET / HTTP/1.1\r\nHost: a\r\nHost: b\r\n\r\n",
		"GET / HTTP/1.1\r\nHost : h\r\n\r\n", // space before the colon
		"GET / HTTP/1.1\r\nHost: h\r\n folded\r\n\r\n",
		"GET / HTTP/1.1\r\nHost: h\r\nX: a\x01b\r\n\r\n",
		"GET / HTTP/1.1\r\nHost: h\r\nContent-Length: -1\r\n\r\n",
		"GET / HTTP/1.1\r\nHost: h\r\nContent-Length: 1\r\nContent-Length: 2\r\n\r\nxx",
		"GET / HTTP/x.y\r\nHost: h\r\n\r\n",
		"\x16\x03\x01\x02\x00\x01\x00\x01\xfc\x03\x03\r\n\r\n", // a TLS hello
	} {
		n, out, closeAfter := serveHTTP(wrkRequest + req)
		if want := helloResponse("") + errorResponse(statusBadRequest); out != want || !closeAfter || n != len(wrkRequest)+len(req) {
			t.Errorf("%q: n %d, close %v, out\n%s", req, n, closeAfter, out)
		}
	}
}

// TestHTTPHeadersOverLimitGet431: a head longer than MaxHeaderBytes gets 431 and a close, whether
// or not its end has arrived.
func TestHTTPHeadersOverLimitGet431(t *testing.T) {
	long := "GET / HTTP/1.1\r\nHost: h\r\nX: " + strings.Repeat("a", MaxHeaderBytes) + "\r\n\r\n"
	for _, in := range []string{long, long[:MaxHeaderBytes+1]} {
		if _, out, closeAfter := serveHTTP(in); out != errorResponse(statusHeadersTooBig) || !closeAfter {
			t.Errorf("%d bytes: close %v, out\n%.200s", len(in), closeAfter, out)
		}
	}
	fits := "GET / HTTP/1.1\r\nHost: h\r\nX: " + strings.Repeat("a", MaxHeaderBytes-50) + "\r\n\r\n"
	if _, out, _ := serveHTTP(fits); out != helloResponse("") {
		t.Errorf("a head of %d bytes: %.200s", len(fits), out)
	}
}

// TestHTTPOtherRefusals: 413 for a body over MaxBodyBytes, 501 for Transfer-Encoding, 505 for
// another version; each closes.
func TestHTTPOtherRefusals(t *testing.T) {
	for _, tc := range []struct{ req, status string }{
		{fmt.Sprintf("POST / HTTP/1.1\r\nHost: h\r\nContent-Length: %d\r\n\r\n", MaxBodyBytes+1), statusTooLarge},
		{"POST / HTTP/1.1\r\nHost: h\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n", statusNotImplemented},
		{"GET / HTTP/2.0\r\nHost: h\r\n\r\n", statusBadVersion},
	} {
		if _, out, closeAfter := serveHTTP(tc.req); out != errorResponse(tc.status) || !closeAfter {
			t.Errorf("%q: close %v, out\n%s", tc.req, closeAfter, out)
		}
	}
}

// TestHTTPBodySkippedAndMethodRefused: a POST's body is skipped (the next request is parsed
// after it) and the POST gets 405, keeping the connection.
func TestHTTPBodySkippedAndMethodRefused(t *testing.T) {
	in := "POST /plaintext HTTP/1.1\r\nHost: h\r\nContent-Length: 16\r\n\r\nGET / HTTP/1.1\r\n" + wrkRequest
	n, out, closeAfter := serveHTTP(in)
	want := "HTTP/1.1 405 Method Not Allowed\r\nAllow: GET, HEAD\r\nServer: ringev\r\n" + testDateHeader +
		"Content-Type: text/plain\r\nContent-Length: 18\r\n\r\nMethod Not Allowed" + helloResponse("")
	if out != want || closeAfter || n != len(in) {
		t.Errorf("n %d, close %v, out\n%q\nwant\n%q", n, closeAfter, out, want)
	}
}

// TestHTTPDateFollowsSetDate: setDate (OnTick's) changes the Date of the next responses.
func TestHTTPDateFollowsSetDate(t *testing.T) {
	h := NewHTTP()
	h.setDate(testDate)
	h.setDate(testDate.Add(2 * time.Second))
	_, out, _ := h.serve([]byte(wrkRequest), nil, outputLimit)
	if !strings.Contains(string(out), "Date: Tue, 01 Dec 2026 00:00:00 GMT\r\n") {
		t.Errorf("after a setDate 2 s later:\n%s", out)
	}
}

// slowClient is one connection of a slowloris client: it sends one byte of a request head that
// never ends every interval, and returns the time from its first byte until the server closed
// it (EOF or a reset), or an error: the dial failed, or the server had not closed it within
// limit of its first byte.
func slowClient(addr string, interval, limit time.Duration) (time.Duration, error) {
	c, err := net.DialTimeout("tcp", addr, ioTimeout)
	if err != nil {
		return 0, err
	}
	defer c.Close()
	head := "GET /plaintext HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Slow: " + strings.Repeat("a", 1000)
	start := time.Now() // before the first byte is written: the server cannot have it earlier
	buf := make([]byte, 512)
	for i := 0; ; i++ {
		if _, err := c.Write([]byte{head[i%len(head)]}); err != nil {
			return time.Since(start), nil // a reset
		}
		if time.Since(start) > limit {
			return 0, fmt.Errorf("still open %v after its first byte", time.Since(start))
		}
		c.SetReadDeadline(time.Now().Add(interval)) // the pause before the next byte
		for {
			n, err := c.Read(buf)
			if err == nil && n > 0 {
				continue // a response, if the server sent one: the close follows
			}
			if ne, ok := err.(net.Error); ok && ne.Timeout() {
				break
			}
			return time.Since(start), nil // EOF or a reset: closed
		}
	}
}

// TestHTTPClosesSlowlorisConnectionsAtTheRequestTimeout: 1,000 net.Dial clients that each send
// one byte of a request head every 250 ms, never ending it, are all closed by an HTTP server
// whose RequestTimeout is 500 ms: none before 500 ms after its first byte, and every one though
// its bytes keep coming (a deadline moved by each byte would never close them; each client's
// hang guard is ioTimeout). Meanwhile a client connected before them, sending a whole request
// every 50 ms, is answered while they are open: it is not made to wait for them. On every backend, with both
// drivers.
func TestHTTPClosesSlowlorisConnectionsAtTheRequestTimeout(t *testing.T) {
	const n, interval, timeout, pace = 1000, 250 * time.Millisecond, 500 * time.Millisecond, 50 * time.Millisecond
	const served = 3 // the well-behaved client's responses while slow connections are open
	raiseNofile(t, 2*n+512)
	forEachBackendDriver(t, false, func(t *testing.T, cfg srvConfig) {
		h := NewHTTP()
		h.RequestTimeout, h.IdleTimeout = timeout, 0
		cfg.Handler = h
		srv := startServer(t, cfg)
		addr := srv.Addr().String()
		good := dial(t, srv)
		r := bufio.NewReader(good)
		exchange := func() {
			good.SetDeadline(time.Now().Add(ioTimeout))
			if _, err := good.Write([]byte(wrkRequest)); err != nil {
				t.Fatalf("the well-behaved client: %v", err)
			}
			if got, err := r.Peek(len(helloResponse(""))); err != nil || !strings.HasSuffix(string(got), "Hello, World!") {
				t.Fatalf("the well-behaved client: %q, %v; want a response", got, err)
			}
			r.Discard(len(helloResponse("")))
		}
		exchange() // served and open before the slow clients come
		var wg sync.WaitGroup
		took := make([]time.Duration, n)
		errs := make([]error, n)
		for i := range n {
			wg.Go(func() { took[i], errs[i] = slowClient(addr, interval, ioTimeout) })
		}
		attack := make(chan struct{})
		go func() { wg.Wait(); close(attack) }()
		during := 0 // responses read while slow connections were open
		for waiting := true; waiting; {
			select {
			case <-attack:
				waiting = false
			default:
				exchange()
				if srv.Conns() > 1 {
					during++
				}
				time.Sleep(pace) // a client's pace, not a wait for a condition
			}
		}
		good.Close()
		if during < served {
			t.Errorf("the well-behaved client had %d responses while slow connections were open, want at least %d", during, served)
		}
		slices.Sort(took)
		for i, err := range errs {
			if err != nil {
				t.Fatalf("slow client %d: %v", i, err)
			}
		}
		t.Logf("%d slow clients closed after %v (first) to %v (last) from their first byte; %d responses to the other client meanwhile",
			n, took[0], took[n-1], during)
		if took[0] < timeout {
			t.Errorf("a slow client was closed %v after its first byte, before the request timeout (%v)", took[0], timeout)
		}
		waitConns(t, srv, 0)
	})
}
