//go:build linux

package nethttp

import (
	"bufio"
	"context"
	"io"
	"net"
	"net/http"
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
			nc, brw, err := w.(http.Hijacker).Hijack()
			if err != nil {
				t.Error(err)
				return
			}
			defer nc.Close()
			nc.SetReadDeadline(time.Now().Add(waitFor))
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
			nc, _, err := w.(http.Hijacker).Hijack()
			if err != nil {
				t.Error(err)
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
