//go:build linux

package nethttp

import (
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"
)

// TestServerStreamsRequestBody: the handler reads the body's first part while the client has
// not sent the rest, and answers after the rest (chunked and by Content-Length).
func TestServerStreamsRequestBody(t *testing.T) {
	eachBackend(t, func(t *testing.T, backend string) {
		firstRead := make(chan string, 1)
		h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			b := make([]byte, 5)
			n, err := io.ReadFull(r.Body, b)
			firstRead <- string(b[:n])
			rest, err2 := io.ReadAll(r.Body)
			fmt.Fprintf(w, "%s|%s|%v|%v", b[:n], rest, err, err2)
		})
		addr := serveRingev(t, backend, &http.Server{Handler: h})
		for _, tc := range []struct{ head, first, rest string }{
			{"Content-Length: 12\r\n", "first", " second"},
			{"Transfer-Encoding: chunked\r\n", "5\r\nfirst\r\n", "7\r\n second\r\n0\r\n\r\n"},
		} {
			c, err := net.DialTimeout("tcp", addr, waitFor)
			if err != nil {
				t.Fatal(err)
			}
			c.SetDeadline(time.Now().Add(waitFor))
			io.WriteString(c, "POST / HTTP/1.1\r\nHost: x\r\nConnection: close\r\n"+tc.head+"\r\n"+tc.first)
			select {
			case got := <-firstRead:
				if got != "first" {
					t.Fatalf("first read: %q", got)
				}
			case <-time.After(waitFor):
				t.Fatal("the handler did not get the body's first part before the rest was sent")
			}
			io.WriteString(c, tc.rest)
			b, _ := io.ReadAll(c)
			c.Close()
			if !strings.HasSuffix(string(b), "first| second|<nil>|<nil>") {
				t.Fatalf("response %q", b)
			}
		}
	})
}

// TestServerAnswersExpectContinue: a client that sends "Expect: 100-continue" gets
// "100 Continue" when the handler reads the body, then the response.
func TestServerAnswersExpectContinue(t *testing.T) {
	eachBackend(t, func(t *testing.T, backend string) {
		h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			b, _ := io.ReadAll(r.Body)
			fmt.Fprintf(w, "%s", b)
		})
		addr := serveRingev(t, backend, &http.Server{Handler: h})
		c, err := net.DialTimeout("tcp", addr, waitFor)
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		c.SetDeadline(time.Now().Add(waitFor))
		io.WriteString(c, "POST / HTTP/1.1\r\nHost: x\r\nConnection: close\r\nExpect: 100-continue\r\nContent-Length: 4\r\n\r\n")
		buf := make([]byte, 25)
		if _, err := io.ReadFull(c, buf); err != nil || string(buf) != "HTTP/1.1 100 Continue\r\n\r\n" {
			t.Fatalf("got %q, %v; want 100 Continue first", buf, err)
		}
		io.WriteString(c, "body")
		b, _ := io.ReadAll(c)
		if !strings.HasPrefix(string(b), "HTTP/1.1 200 OK\r\n") || !strings.HasSuffix(string(b), "\r\n\r\nbody") {
			t.Fatalf("response %q", b)
		}
	})
}
