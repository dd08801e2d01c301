//go:build unix

// Command httpd is a net/http application, a ServeMux, served by ringev's loops
// (server/nethttp) or by net/http, by a flag: the same handlers either way.
//
//	go run ./examples/httpd -addr 127.0.0.1:8080              # on ringev
//	go run ./examples/httpd -addr 127.0.0.1:8080 -server net  # on net/http
//
// With --tls-cert and --tls-key it serves HTTPS, HTTP/1.1 alone on either server (ALPN
// "http/1.1"; net/http's HTTP/2 is off), so that the two compare like for like.
//
// Paths: / and /plaintext ("Hello, World!"), /json, /upload (POST: the body's SHA-256),
// /stream (a streamed response, one line per 100 ms, ?n= lines), /ws (a WebSocket echo).
package main

import (
	"context"
	"crypto/sha256"
	"crypto/tls"
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
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/coder/websocket"
	"github.com/ringev/ringev"
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
	cert := flag.String("tls-cert", "", "serve HTTPS with this PEM certificate `file` (with --tls-key)")
	key := flag.String("tls-key", "", "the PEM private key `file` of --tls-cert")
	flag.Parse()
	if err := checkFlags(*which, *backend, *loops); err != nil {
		fmt.Fprintf(os.Stderr, "httpd: %v\n", err)
		flag.Usage()
		os.Exit(2)
	}
	cfg, err := tlsConfig(*cert, *key)
	if err != nil {
		log.Fatal(err)
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := run(ctx, *which, *addr, *backend, *loops, cfg, nil); err != nil {
		log.Fatal(err)
	}
}

// checkFlags refuses a value of --server, --backend or --loops that run would refuse later,
// with an error that names the flag, as the flag package's errors do.
func checkFlags(which, backend string, loops int) error {
	if which != "ringev" && which != "net" {
		return fmt.Errorf("invalid value %q for flag --server: ringev or net", which)
	}
	if backend != "auto" && !slices.Contains(ringev.Backends(), backend) {
		return fmt.Errorf("invalid value %q for flag --backend: known: auto, %s", backend, strings.Join(ringev.Backends(), ", "))
	}
	if loops < 0 {
		return fmt.Errorf("invalid value \"%d\" for flag --loops: must be >= 0 (0: one per CPU)", loops)
	}
	return nil
}

// tlsConfig is the TLS config of --tls-cert and --tls-key: nil when both are empty, an error
// when one is given alone or the files do not load. It offers HTTP/1.1 alone by ALPN.
func tlsConfig(certFile, keyFile string) (*tls.Config, error) {
	if certFile == "" && keyFile == "" {
		return nil, nil
	}
	if certFile == "" || keyFile == "" {
		return nil, errors.New("httpd: --tls-cert and --tls-key go together")
	}
	cert, err := tls.LoadX509KeyPair(certFile, keyFile)
	if err != nil {
		return nil, fmt.Errorf("httpd: --tls-cert, --tls-key: %w", err)
	}
	return &tls.Config{Certificates: []tls.Certificate{cert}, NextProtos: []string{"http/1.1"}}, nil
}

// run serves the application on addr until ctx is done, over TLS with cfg when it is not nil;
// ready, if not nil, is told the address served.
func run(ctx context.Context, which, addr, backend string, loops int, cfg *tls.Config, ready chan<- string) error {
	srv := &http.Server{Handler: mux(), ReadHeaderTimeout: 10 * time.Second, IdleTimeout: 75 * time.Second}
	switch which {
	case "ringev":
		s := nethttp.New(srv)
		// WithLogf: where "auto" fell back from io_uring (sysctl kernel.io_uring_disabled, a
		// container's seccomp policy), the engine says so, naming the errno, on stderr.
		opts := []server.Option{server.WithBackend(backend), server.WithLoops(loops), server.WithLogf(log.Printf)}
		if cfg != nil {
			opts = append(opts, server.WithTLS(cfg))
		}
		e, err := server.Listen(ctx, "tcp", addr, s, opts...)
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
		if cfg != nil {
			// HTTP/1.1 alone: a non-nil, empty TLSNextProto turns net/http's HTTP/2 off.
			srv.TLSConfig = cfg
			srv.TLSNextProto = map[string]func(*http.Server, *tls.Conn, http.Handler){}
			ln = tls.NewListener(ln, cfg)
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
