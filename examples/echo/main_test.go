//go:build linux

package main

// TestEchoServesANetDialClient: the example's handler, served on each backend, sends back what
// a net.Dial client writes.

import (
	"context"
	"io"
	"net"
	"testing"
	"time"

	"github.com/ringev/ringev/internal/testutil"
	"github.com/ringev/ringev/server"
	"go.uber.org/goleak"
)

func TestEchoServesANetDialClient(t *testing.T) {
	defer goleak.VerifyNone(t, goleak.IgnoreCurrent())
	for _, backend := range []string{"uring", "epoll", "poll"} {
		t.Run(backend, func(t *testing.T) {
			ctx, cancel := context.WithCancel(context.Background())
			e, err := server.Listen(ctx, "tcp", "127.0.0.1:0", echo{}, server.WithBackend(backend), server.WithLoops(1))
			if err != nil {
				cancel()
				if backend == "uring" {
					testutil.SkipIfIOUringUnavailable(t, err, "the uring backend")
				}
				t.Fatal(err)
			}
			c, err := net.Dial("tcp", e.Addr().String())
			if err != nil {
				t.Fatal(err)
			}
			c.SetDeadline(time.Now().Add(10 * time.Second))
			msg := []byte("hello, ringev\n")
			for range 3 {
				if _, err := c.Write(msg); err != nil {
					t.Fatal(err)
				}
				got := make([]byte, len(msg))
				if _, err := io.ReadFull(c, got); err != nil {
					t.Fatal(err)
				}
				if string(got) != string(msg) {
					t.Fatalf("echoed %q, want %q", got, msg)
				}
			}
			c.Close()
			cancel()
			select {
			case <-e.Done():
			case <-time.After(10 * time.Second):
				t.Fatal("the server did not shut down within 10 s of its context's cancellation")
			}
			if err := e.Wait(); err != nil {
				t.Fatal(err)
			}
		})
	}
}

// TestMain runs the command itself (main) when the test binary is started with ECHO_MAIN=1: the
// SIGTERM test runs it so.
func TestMain(m *testing.M) { testutil.MainOrTests(m, "ECHO_MAIN", main) }

// TestEchoSIGTERMShutsDownAndFreesThePort: SIGTERM (kill, systemd, docker stop) shuts the
// server down as Ctrl-C does: it exits 0 and its port is free at once for a restart.
func TestEchoSIGTERMShutsDownAndFreesThePort(t *testing.T) {
	testutil.TermFreesThePort(t, "ECHO_MAIN", "--addr", "uring", 30*time.Second)
}
