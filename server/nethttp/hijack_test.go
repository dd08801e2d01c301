//go:build linux

package nethttp

import (
	"bufio"
	"context"
	"io"
	"net"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/coder/websocket"
	gorilla "github.com/gorilla/websocket"
	"github.com/ringev/ringev/server"
)

// TestServerHijackServesWebSocket: coder/websocket's Accept hijacks the connection, and a
// WebSocket client's messages come back from the echo handler, small and large.
func TestServerHijackServesWebSocket(t *testing.T) {
	eachBackend(t, func(t *testing.T, backend string) {
		h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			c, err := websocket.Accept(w, r, nil)
			if err != nil {
				return
			}
			defer c.CloseNow()
			c.SetReadLimit(1 << 20)
			ctx := context.WithoutCancel(r.Context())
			for {
				typ, b, err := c.Read(ctx)
				if err != nil {
					return
				}
				if err := c.Write(ctx, typ, b); err != nil {
					return
				}
			}
		})
		addr := serveRingev(t, backend, &http.Server{Handler: h})
		ctx, cancel := context.WithTimeout(context.Background(), waitFor)
		defer cancel()
		c, _, err := websocket.Dial(ctx, "ws://"+addr+"/", nil)
		if err != nil {
			t.Fatal(err)
		}
		defer c.CloseNow()
		c.SetReadLimit(1 << 20)
		for _, msg := range []string{"hello", strings.Repeat("big ", 100000), "again"} {
			if err := c.Write(ctx, websocket.MessageText, []byte(msg)); err != nil {
				t.Fatal(err)
			}
			_, b, err := c.Read(ctx)
			if err != nil {
				t.Fatal(err)
			}
			if string(b) != msg {
				t.Fatalf("echo of %d bytes: got %d bytes", len(msg), len(b))
			}
		}
		if err := c.Close(websocket.StatusNormalClosure, ""); err != nil {
			t.Fatal(err)
		}
	})
}

// TestServerHijackHandsOverBytesReadAlready: what the client sent after the request's head,
// with it, is the first thing the hijacked connection reads.
func TestServerHijackHandsOverBytesReadAlready(t *testing.T) {
	eachBackend(t, func(t *testing.T, backend string) {
		h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			nc, brw := hijack(t, w)
			if nc == nil {
				return
			}
			defer nc.Close()
			line, err := brw.ReadString('\n')
			if err != nil {
				t.Error(err)
				return
			}
			brw.WriteString("got " + line)
			brw.Flush()
		})
		addr := serveRingev(t, backend, &http.Server{Handler: h})
		c, err := net.DialTimeout("tcp", addr, waitFor)
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		c.SetDeadline(time.Now().Add(waitFor))
		io.WriteString(c, "GET / HTTP/1.1\r\nHost: x\r\n\r\nafter the head\n")
		got, err := bufio.NewReader(c).ReadString('\n')
		if err != nil || got != "got after the head\n" {
			t.Fatalf("got %q, %v", got, err)
		}
	})
}

// TestServerHijackWriteLargerThanTheOutputCapArrives: one Write of 4 MB, four times the Conn's
// output cap (server.WithMaxPending), on a hijacked connection reaches the client whole.
func TestServerHijackWriteLargerThanTheOutputCapArrives(t *testing.T) {
	eachBackend(t, func(t *testing.T, backend string) {
		big := strings.Repeat("abcdefghij", 400000)
		h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			nc, _ := hijack(t, w)
			if nc == nil {
				return
			}
			defer nc.Close()
			if _, err := io.WriteString(nc, big); err != nil {
				t.Errorf("Write of %d bytes: %v", len(big), err)
			}
		})
		addr := serveRingev(t, backend, &http.Server{Handler: h}, server.WithMaxPending(1<<20))
		c, err := net.DialTimeout("tcp", addr, waitFor)
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		c.SetDeadline(time.Now().Add(waitFor))
		io.WriteString(c, "GET / HTTP/1.1\r\nHost: x\r\n\r\n")
		got, err := io.ReadAll(c)
		if err != nil || string(got) != big {
			t.Fatalf("read %d bytes of %d, %v", len(got), len(big), err)
		}
	})
}

// TestServerHijackServesGorillaWebSocket: gorilla/websocket's Upgrader hijacks the connection
// (it refuses one whose reader holds bytes already), and its client's messages come back.
func TestServerHijackServesGorillaWebSocket(t *testing.T) {
	eachBackend(t, func(t *testing.T, backend string) {
		up := gorilla.Upgrader{}
		h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			c, err := up.Upgrade(w, r, nil)
			if err != nil {
				t.Error(err)
				return
			}
			defer c.Close()
			for {
				typ, b, err := c.ReadMessage()
				if err != nil {
					return
				}
				if err := c.WriteMessage(typ, b); err != nil {
					return
				}
			}
		})
		addr := serveRingev(t, backend, &http.Server{Handler: h})
		d := gorilla.Dialer{HandshakeTimeout: waitFor}
		c, _, err := d.Dial("ws://"+addr+"/", nil)
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		c.SetReadDeadline(time.Now().Add(waitFor))
		for _, msg := range []string{"hello", strings.Repeat("big ", 100000)} {
			if err := c.WriteMessage(gorilla.BinaryMessage, []byte(msg)); err != nil {
				t.Fatal(err)
			}
			_, b, err := c.ReadMessage()
			if err != nil || string(b) != msg {
				t.Fatalf("echo of %d bytes: %d bytes, %v", len(msg), len(b), err)
			}
		}
		c.WriteMessage(gorilla.CloseMessage, gorilla.FormatCloseMessage(gorilla.CloseNormalClosure, ""))
	})
}

// TestServerHijackHandsOverTheBodyNotRead: a handler that reads part of the request's body and
// hijacks reads the rest of it from the hijacked connection, then what followed it, as on
// net/http: a short body (in the body's pipe) and a long one (read from the socket).
func TestServerHijackHandsOverTheBodyNotRead(t *testing.T) {
	eachSetup(t, func(t *testing.T, backend string, opts ...server.Option) {
		h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			io.CopyN(io.Discard, r.Body, 100)
			nc, brw := hijack(t, w)
			if nc == nil {
				return
			}
			defer nc.Close()
			rest, err := brw.ReadString('!')
			if err != nil {
				t.Errorf("reading the hijacked connection: %v (after %d bytes)", err, len(rest))
			}
			brw.WriteString(strconv.Itoa(len(rest)) + " " + strconv.Itoa(strings.Count(rest, "b")))
			brw.Flush()
		})
		addr := serveRingev(t, backend, &http.Server{Handler: h}, opts...)
		for _, n := range []int{1000, 600 << 10} {
			c, err := net.DialTimeout("tcp", addr, waitFor)
			if err != nil {
				t.Fatal(err)
			}
			c.SetDeadline(time.Now().Add(waitFor))
			go func() {
				io.WriteString(c, "POST / HTTP/1.1\r\nHost: x\r\nContent-Length: "+strconv.Itoa(n)+"\r\n\r\n")
				io.WriteString(c, strings.Repeat("b", n)+"!")
			}()
			got, err := io.ReadAll(c)
			c.Close()
			if want := strconv.Itoa(n-100+1) + " " + strconv.Itoa(n-100); err != nil || string(got) != want {
				t.Errorf("a body of %d bytes: the hijacked connection read %q (%v), want %q", n, got, err, want)
			}
		}
	})
}

// TestServerHijackSeesTheEOFThatCameBefore: a client that shuts down its side before its
// handler hijacks (the handler waits for the request's context, cancelled then) leaves its
// bytes and then EOF for the hijacked connection to read, as on net/http.
func TestServerHijackSeesTheEOFThatCameBefore(t *testing.T) {
	eachSetup(t, func(t *testing.T, backend string, opts ...server.Option) {
		h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			<-r.Context().Done()
			nc, brw := hijack(t, w)
			if nc == nil {
				return
			}
			defer nc.Close()
			rest, err := io.ReadAll(brw)
			if err != nil {
				t.Errorf("reading the hijacked connection until EOF: %v (after %q)", err, rest)
			}
			brw.WriteString("got " + string(rest))
			brw.Flush()
		})
		addr := serveRingev(t, backend, &http.Server{Handler: h}, opts...)
		c, err := net.DialTimeout("tcp", addr, waitFor)
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		c.SetDeadline(time.Now().Add(2 * waitFor))
		io.WriteString(c, "GET / HTTP/1.1\r\nHost: x\r\n\r\nafter")
		c.(*net.TCPConn).CloseWrite()
		got, err := io.ReadAll(c)
		if err != nil || string(got) != "got after" {
			t.Fatalf("got %q, %v", got, err)
		}
	})
}

// hijack hijacks w's connection (a handler's) and gives it a read deadline waitFor away. An
// error is the test's (Error), and nc is then nil.
func hijack(t *testing.T, w http.ResponseWriter) (nc net.Conn, brw *bufio.ReadWriter) {
	nc, brw, err := w.(http.Hijacker).Hijack()
	if err != nil {
		t.Error(err)
		return nil, nil
	}
	nc.SetReadDeadline(time.Now().Add(waitFor))
	return nc, brw
}
