//go:build unix

// Command httpd is a net/http application, a ServeMux, served by ringev's loops
// (server/nethttp) or by net/http, by a flag: the same handlers either way.
//
//	go run ./examples/httpd -addr 127.0.0.1:8080              # on ringev
//	go run ./examples/httpd -addr 127.0.0.1:8080 -server net  # on net/http
//
// Paths: / and /plaintext ("Hello, World!"), /json, /upload (POST: the body's SHA-256),
// /stream (a streamed response, one line per 100 ms, ?n= lines), /ws (a WebSocket echo).
package main

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"log"
	"net"
	"net/http"
	"os"
	"os/signal"
	"strconv"
	"time"

	"github.com/coder/websocket"
	"github.com/ringev/ringev/server"
	"github.com/ringev/ringev/server/nethttp"
)

// mux is the application: plain net/http handlers.
func mux() *http.ServeMux {
	m := http.NewServeMux()
	hello := func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/plain")
		io.WriteString(w, "Hello, World!")
	}
	m.HandleFunc("GET /{$}", hello)
	m.HandleFunc("GET /plaintext", hello)
	m.HandleFunc("GET /json", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		json.NewEncoder(w).Encode(map[string]string{"message": "Hello, World!"})
	})
	m.HandleFunc("POST /upload", func(w http.ResponseWriter, r *http.Request) {
		h := sha256.New()
		n, err := io.Copy(h, r.Body)
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		fmt.Fprintf(w, "%d bytes, sha256 %s\n", n, hex.EncodeToString(h.Sum(nil)))
	})
	m.HandleFunc("GET /stream", func(w http.ResponseWriter, r *http.Request) {
		n, err := strconv.Atoi(r.URL.Query().Get("n"))
		if err != nil || n <= 0 {
			n = 10
		}
		for i := range n {
			fmt.Fprintf(w, "line %d\n", i)
			w.(http.Flusher).Flush()
			select {
			case <-r.Context().Done():
				return
			case <-time.After(100 * time.Millisecond):
			}
		}
	})
	m.HandleFunc("GET /ws", func(w http.ResponseWriter, r *http.Request) {
		c, err := websocket.Accept(w, r, nil)
		if err != nil {
			return
		}
		defer c.CloseNow()
		ctx := r.Context()
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
	return m
}

func main() {
	addr := flag.String("addr", "127.0.0.1:8080", "address to listen on")
	which := flag.String("server", "ringev", "ringev or net (net/http)")
	backend := flag.String("backend", "auto", "ringev's backend: auto, uring, epoll or poll")
	loops := flag.Int("loops", 0, "ringev's loops (0: one per CPU)")
	flag.Parse()
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	if err := run(ctx, *which, *addr, *backend, *loops, nil); err != nil {
		log.Fatal(err)
	}
}

// run serves the application on addr until ctx is done; ready, if not nil, is told the
// address served.
func run(ctx context.Context, which, addr, backend string, loops int, ready chan<- string) error {
	srv := &http.Server{Handler: mux(), ReadHeaderTimeout: 10 * time.Second, IdleTimeout: 75 * time.Second}
	switch which {
	case "ringev":
		s := nethttp.New(srv)
		e, err := server.Listen(ctx, "tcp", addr, s, server.WithBackend(backend), server.WithLoops(loops))
		if err != nil {
			return err
		}
		if ready != nil {
			ready <- e.Addr().String()
		}
		err = e.Wait()
		s.Wait()
		return err
	case "net":
		ln, err := net.Listen("tcp", addr)
		if err != nil {
			return err
		}
		if ready != nil {
			ready <- ln.Addr().String()
		}
		go func() {
			<-ctx.Done()
			sctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			defer cancel()
			srv.Shutdown(sctx)
		}()
		if err := srv.Serve(ln); !errors.Is(err, http.ErrServerClosed) {
			return err
		}
		return nil
	}
	return fmt.Errorf("httpd: -server %q: ringev or net", which)
}
