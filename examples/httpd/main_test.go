//go:build linux

package main

// TestHTTPDServesEachPathOnBothServers: the application answers its five paths the same on
// ringev (each backend) and on net/http.

import (
	"bytes"
	"context"
	"crypto/sha256"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/coder/websocket"
	"go.uber.org/goleak"
)

func TestHTTPDServesEachPathOnBothServers(t *testing.T) {
	defer goleak.VerifyNone(t, goleak.IgnoreCurrent())
	for _, v := range []struct{ server, backend string }{{"ringev", "uring"}, {"ringev", "epoll"}, {"ringev", "poll"}, {"net", ""}} {
		t.Run(v.server+"/"+v.backend, func(t *testing.T) {
			ctx, cancel := context.WithCancel(context.Background())
			ready, done := make(chan string, 1), make(chan error, 1)
			go func() { done <- run(ctx, v.server, "127.0.0.1:0", v.backend, 1, ready) }()
			var addr string
			select {
			case addr = <-ready:
			case err := <-done:
				cancel()
				if strings.Contains(fmt.Sprint(err), "io_uring") {
					t.Skip(err)
				}
				t.Fatal(err)
			}
			defer func() {
				cancel()
				if err := <-done; err != nil {
					t.Error(err)
				}
			}()
			tr := &http.Transport{}
			defer tr.CloseIdleConnections()
			client := &http.Client{Transport: tr, Timeout: 10 * time.Second}
			get := func(path string) string {
				resp, err := client.Get("http://" + addr + path)
				if err != nil {
					t.Fatal(err)
				}
				defer resp.Body.Close()
				b, _ := io.ReadAll(resp.Body)
				return string(b)
			}
			if got := get("/plaintext"); got != "Hello, World!" {
				t.Fatalf("/plaintext: %q", got)
			}
			if got := get("/json"); got != "{\"message\":\"Hello, World!\"}\n" {
				t.Fatalf("/json: %q", got)
			}
			if got := get("/stream?n=3"); got != "line 0\nline 1\nline 2\n" {
				t.Fatalf("/stream: %q", got)
			}
			body := bytes.Repeat([]byte("0123456789"), 100000)
			resp, err := client.Post("http://"+addr+"/upload", "application/octet-stream", bytes.NewReader(body))
			if err != nil {
				t.Fatal(err)
			}
			b, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if want := fmt.Sprintf("%d bytes, sha256 %x\n", len(body), sha256.Sum256(body)); string(b) != want {
				t.Fatalf("/upload: %q, want %q", b, want)
			}
			wctx, wcancel := context.WithTimeout(ctx, 10*time.Second)
			defer wcancel()
			c, _, err := websocket.Dial(wctx, "ws://"+addr+"/ws", nil)
			if err != nil {
				t.Fatal(err)
			}
			defer c.CloseNow()
			c.Write(wctx, websocket.MessageText, []byte("ping"))
			if _, m, err := c.Read(wctx); err != nil || string(m) != "ping" {
				t.Fatalf("/ws: %q, %v", m, err)
			}
			c.Close(websocket.StatusNormalClosure, "")
		})
	}
}
