//go:build linux

package server

// Tests of the requests driver's receive mode by default (no WithRecv): multishot where the
// loop can, per connection where the kernel lacks the multishot recv.

import (
	"errors"
	"fmt"
	"io"
	"strings"
	"sync"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/ringev/ringev"
	"github.com/ringev/ringev/internal/testutil"
)

// withoutRecvMultishot makes the requests driver find no multishot recv on any loop, as on a
// kernel before Linux 6.0, until the test ends.
func withoutRecvMultishot(t *testing.T) {
	old := recvMultishotCheck
	recvMultishotCheck = func(*ringev.Loop) error {
		return fmt.Errorf("ringev: recv-multishot: needs IORING_RECV_MULTISHOT with provided buffer rings (Linux 6.0), which this kernel lacks: %w", unix.EOPNOTSUPP)
	}
	t.Cleanup(func() { recvMultishotCheck = old })
}

// echoOnce sends msg to srv over a new connection and checks it comes back.
func echoOnce(t *testing.T, srv *Engine, msg string) {
	t.Helper()
	c := dialSend(t, srv, msg)
	got := make([]byte, len(msg))
	if _, err := io.ReadFull(c, got); err != nil || string(got) != msg {
		t.Fatalf("echo of %q: got %q, %v", msg, got, err)
	}
}

// recvMultishotHere is a loop's CheckOp(OpRecvMultishot) on backend, or why no loop was made.
func recvMultishotHere(t *testing.T, backend string) error {
	l, err := ringev.New(ringev.WithBackend(backend))
	if err != nil {
		return err
	}
	defer l.Close()
	return l.CheckOp(ringev.OpRecvMultishot)
}

func TestDefaultRecvIsMultishot(t *testing.T) {
	for _, b := range ringev.Backends() {
		t.Run(b, func(t *testing.T) {
			srv := startServer(t, srvConfig{Handler: echoServer(), Backend: b, API: APIRequests})
			if srv.Recv() != RecvMultishot {
				if err := recvMultishotHere(t, b); err != nil {
					testutil.SkipIfIOUringUnavailable(t, err, "backend "+b)
					testutil.SkipIfFeatureMissing(t, err) // IORING_RECV_MULTISHOT, Linux 6.0
					t.Fatalf("probing for the multishot recv: %v", err)
				}
				t.Fatalf("Recv() = %q with no receive mode named, want %q", srv.Recv(), RecvMultishot)
			}
			echoOnce(t, srv, "multishot by default")
		})
	}
}

func TestDefaultRecvFallsBackToPerConnWithoutMultishot(t *testing.T) {
	withoutRecvMultishot(t)
	var mu sync.Mutex
	var logs []string
	srv, err := listenServer(t, srvConfig{Handler: echoServer(), API: APIRequests, Loops: 2,
		Opts: []Option{WithLogf(func(format string, args ...any) {
			mu.Lock()
			logs = append(logs, fmt.Sprintf(format, args...))
			mu.Unlock()
		})}})
	if err != nil {
		t.Fatalf("Listen with no receive mode named and no multishot recv: %v, want a per-conn server", err)
	}
	t.Cleanup(func() { stopServer(t, srv) })
	if srv.Recv() != RecvPerConn {
		t.Errorf("Recv() = %q, want %q", srv.Recv(), RecvPerConn)
	}
	mu.Lock()
	said := strings.Join(logs, "\n")
	mu.Unlock()
	if n := strings.Count(said, "IORING_RECV_MULTISHOT"); n != 2 {
		t.Errorf("logs %q: want one line per loop naming IORING_RECV_MULTISHOT, got %d", said, n)
	}
	echoOnce(t, srv, "per connection instead")
}

func TestDefaultRecvFallsBackOnAnyErrorItMeets(t *testing.T) {
	old := recvMultishotCheck
	recvMultishotCheck = func(*ringev.Loop) error { return fmt.Errorf("a buffer ring refused: %w", unix.ENOMEM) }
	t.Cleanup(func() { recvMultishotCheck = old })
	srv := startServer(t, srvConfig{Handler: echoServer(), API: APIRequests})
	if srv.Recv() != RecvPerConn {
		t.Fatalf("Recv() = %q after an ENOMEM on the default's way, want %q", srv.Recv(), RecvPerConn)
	}
	echoOnce(t, srv, "per connection after ENOMEM")
}

func TestNamedMultishotRecvFailsWithoutIt(t *testing.T) {
	withoutRecvMultishot(t)
	before := fdCount(t)
	_, err := listenServer(t, srvConfig{Handler: echoServer(), API: APIRequests, Recv: RecvMultishot})
	if !errors.Is(err, unix.EOPNOTSUPP) || !strings.Contains(err.Error(), "IORING_RECV_MULTISHOT") {
		t.Fatalf("Listen with RecvMultishot and no multishot recv: %v, want EOPNOTSUPP naming IORING_RECV_MULTISHOT", err)
	}
	if n := fdCount(t); n != before {
		t.Errorf("%d fds open after the failed Listen, %d before", n, before)
	}
}

func TestReadinessAPIHasNoRecvMode(t *testing.T) {
	srv := startServer(t, srvConfig{Handler: echoServer(), API: APIReadiness})
	if srv.Recv() != "" {
		t.Errorf("Recv() = %q with the readiness API, want \"\"", srv.Recv())
	}
}
