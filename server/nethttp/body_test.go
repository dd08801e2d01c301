//go:build linux

package nethttp

import (
	"bufio"
	"bytes"
	"crypto/sha256"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/ringev/ringev/server"
	"golang.org/x/sys/unix"
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
		c := dialRaw(t, serveRingev(t, backend, &http.Server{Handler: h}))
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

// TestServerAnswersExpectContinueWithoutTheBody: a handler that answers an
// "Expect: 100-continue" request without reading its body has its response sent at once, as on
// net/http, while the client still waits for "100 Continue" and has sent none of the body:
// the server does not hold the response until it has read the body it would discard.
func TestServerAnswersExpectContinueWithoutTheBody(t *testing.T) {
	eachBackend(t, func(t *testing.T, backend string) {
		h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			io.WriteString(w, "no body needed")
		})
		c := dialRaw(t, serveRingev(t, backend, &http.Server{Handler: h}))
		io.WriteString(c, "POST / HTTP/1.1\r\nHost: x\r\nExpect: 100-continue\r\nContent-Length: 10\r\n\r\n")
		resp, err := http.ReadResponse(bufio.NewReader(c), nil)
		if err != nil {
			t.Fatalf("no response before the body was sent: %v", err)
		}
		defer resp.Body.Close()
		b, err := io.ReadAll(resp.Body)
		if resp.StatusCode != 200 || string(b) != "no body needed" || err != nil || !resp.Close {
			t.Fatalf("got %s %q (%v), close %v; want 200 \"no body needed\", Connection: close", resp.Status, b, err, resp.Close)
		}
	})
}

// TestServerPausesReadingForSlowBodyReader: while a handler does not read its request's body,
// the server stops reading the connection (the client's send window closes) instead of
// buffering the body; once the handler reads, every byte arrives.
func TestServerPausesReadingForSlowBodyReader(t *testing.T) {
	eachBackend(t, func(t *testing.T, backend string) {
		release := make(chan struct{})
		h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			<-release
			h := sha256.New()
			n, err := io.Copy(h, r.Body)
			fmt.Fprintf(w, "%d %x %v", n, h.Sum(nil), err)
		})
		addr := serveRingev(t, backend, &http.Server{Handler: h})
		c, err := net.DialTimeout("tcp", addr, waitFor)
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		c.SetDeadline(time.Now().Add(2 * waitFor))
		body := bytes.Repeat([]byte("0123456789abcdef"), 64<<20/16) // 64 MiB: more than MaxInput
		sent := make(chan error, 1)
		go func() {
			_, err := fmt.Fprintf(c, "POST / HTTP/1.1\r\nHost: x\r\nConnection: close\r\nContent-Length: %d\r\n\r\n", len(body))
			if err == nil {
				_, err = c.Write(body)
			}
			sent <- err
		}()
		if err := awaitPeerZeroWindow(c.(*net.TCPConn), waitFor); err != nil {
			close(release)
			t.Fatal(err)
		}
		close(release)
		if err := <-sent; err != nil {
			t.Fatalf("sending the body: %v", err)
		}
		got, _ := io.ReadAll(c)
		want := fmt.Sprintf("%d %x <nil>", len(body), sha256.Sum256(body))
		if !bytes.HasSuffix(got, []byte(want)) {
			t.Fatalf("response %q, want it to end in %q", got, want)
		}
	})
}

// awaitPeerZeroWindow waits until c's peer has stopped reading: it advertises a zero receive
// window (TCP_INFO's tcpi_snd_wnd, Linux 5.4) while c has bytes to send, and has acknowledged
// no byte more for 200 ms.
func awaitPeerZeroWindow(c *net.TCPConn, d time.Duration) error {
	rc, err := c.SyscallConn()
	if err != nil {
		return err
	}
	end := time.Now().Add(d)
	var acked uint64
	var since time.Time
	for {
		var info *unix.TCPInfo
		var ierr error
		if err := rc.Control(func(fd uintptr) {
			info, ierr = unix.GetsockoptTCPInfo(int(fd), unix.IPPROTO_TCP, unix.TCP_INFO)
		}); err != nil {
			return err
		}
		if ierr != nil {
			return ierr
		}
		switch {
		case info.Snd_wnd != 0 || info.Notsent_bytes == 0 || info.Bytes_acked != acked:
			acked, since = info.Bytes_acked, time.Time{}
		case since.IsZero():
			since = time.Now()
		case time.Since(since) >= 200*time.Millisecond:
			return nil
		}
		if time.Now().After(end) {
			return fmt.Errorf("the server is still reading after %v (window %d, %d bytes acknowledged)", d, info.Snd_wnd, info.Bytes_acked)
		}
		time.Sleep(time.Millisecond)
	}
}

// TestServerReadsLongBodyThenPipelinedRequest: a body long enough for its reader to read it
// from the socket (directMin and more) gives the reader every byte, in order, and no byte past
// it: the request pipelined behind it in the same write is answered after it.
func TestServerReadsLongBodyThenPipelinedRequest(t *testing.T) {
	eachSetup(t, func(t *testing.T, backend string, opts ...server.Option) {
		h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if r.Method != "POST" {
				io.WriteString(w, "get "+r.URL.Path)
				return
			}
			h := sha256.New()
			n, err := io.CopyBuffer(h, struct{ io.Reader }{r.Body}, make([]byte, 3000))
			fmt.Fprintf(w, "%d %x %v", n, h.Sum(nil), err)
		})
		addr := serveRingev(t, backend, &http.Server{Handler: h}, opts...)
		body := make([]byte, 4*directMin+123)
		for i := range body {
			body[i] = byte(i*13 + i>>10)
		}
		c, err := net.DialTimeout("tcp", addr, waitFor)
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		c.SetDeadline(time.Now().Add(waitFor))
		raw := fmt.Appendf(nil, "POST / HTTP/1.1\r\nHost: x\r\nContent-Length: %d\r\n\r\n", len(body))
		raw = append(append(raw, body...), "GET /after HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n"...)
		go c.Write(raw)
		got, _ := io.ReadAll(c)
		want := fmt.Sprintf("%d %x <nil>", len(body), sha256.Sum256(body))
		if !bytes.Contains(got, []byte(want)) || !bytes.HasSuffix(got, []byte("get /after")) {
			t.Fatalf("responses %q: want %q, then get /after", got, want)
		}
	})
}
