//go:build linux

package nethttp

import (
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/ringev/ringev/server"
)

// requireHalfOpen skips the test where package server's Conn cannot stay open for writing
// after the peer's EOF.
func requireHalfOpen(t *testing.T) {
	if _, ok := any((*server.Conn)(nil)).(halfOpener); !ok {
		t.Skip("server.Conn has no SetHalfOpen: a half-closed client's answer cannot be sent")
	}
}

// TestServerAnswersHalfClosedClient: a client that shuts down its side after its requests
// (nc -N, HTTP/1.0 tools) gets every answer, as from net/http, then the close; a body the EOF
// cuts short gets its reader's io.ErrUnexpectedEOF.
func TestServerAnswersHalfClosedClient(t *testing.T) {
	requireHalfOpen(t)
	eachBackend(t, func(t *testing.T, backend string) {
		cfg := &http.Server{Handler: testHandler()}
		ref, got := serveNetHTTP(t, cfg), serveRingev(t, backend, cfg)
		for _, raw := range []string{
			"GET / HTTP/1.1\r\nHost: x\r\n\r\n",
			"GET /big HTTP/1.1\r\nHost: x\r\n\r\nGET /req HTTP/1.1\r\nHost: x\r\n\r\n",
			"POST /echo HTTP/1.1\r\nHost: x\r\nContent-Length: 30\r\n\r\nabc",
			"POST /echo HTTP/1.1\r\nHost: x\r\nContent-Length: 1048576\r\n\r\nabc", // read from the socket
			"POST /echo HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhel",
			"GET / HTTP/1.1\r\nHost: x\r\n\r\nGET /req HTTP/1.1\r\nHost:",
			"GET / HT",
			"GET / HTTP/1.1\r\nHost: x\r\n\r\nGE",    // fewer than the 4 bytes net/http waits for
			postAB + "\r\nG",                         // the same, a stray CRLF counted
			postAB + "\r\nGE",                        // 4 bytes: the head is read, its CRLF skipped
			postAB + "\r\n\r\n",                      // 4 CRLFs skipped, nothing after them
			"GET / HTTP/1.1\r\nHost: x\r\n\r\n\r\nG", // a stray CRLF after a GET is not skipped
		} {
			want, err := halfClosedExchange(ref, raw)
			if err != nil {
				t.Fatal(err)
			}
			have, err := halfClosedExchange(got, raw)
			if err != nil {
				t.Fatal(err)
			}
			if normalize(want) != normalize(have) {
				t.Errorf("%q:\nnet/http:\n%s\nringev:\n%s", raw, quote(normalize(want)), quote(normalize(have)))
			}
		}
	})
}

// halfClosedExchange sends raw, shuts down the client's writing side, and reads until the
// server closes.
func halfClosedExchange(addr, raw string) (string, error) {
	c, err := net.DialTimeout("tcp", addr, waitFor)
	if err != nil {
		return "", err
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(waitFor))
	if _, err := io.WriteString(c, raw); err != nil {
		return "", err
	}
	c.(*net.TCPConn).CloseWrite()
	b, err := io.ReadAll(c)
	if err != nil && !strings.Contains(err.Error(), "reset") {
		return string(b), err
	}
	return string(b), nil
}
