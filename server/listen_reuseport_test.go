//go:build linux

package server

// Tests that the SO_REUSEPORT sockets of an engine share their port with the engine's own loops
// only: an address another program's SO_REUSEPORT sockets hold is in use, as with net.Listen.

import (
	"context"
	"errors"
	"net"
	"strings"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/ringev/ringev/internal/testutil"
)

// TestListenRefusesAPortAnotherEngineHolds: Listen on the address of a running engine (whose
// loops listen with SO_REUSEPORT) fails with an error naming the address and wrapping
// EADDRINUSE, instead of splitting the clients between the two; nothing is left open.
func TestListenRefusesAPortAnotherEngineHolds(t *testing.T) {
	testutil.NoLeaks(t)
	first := startEngine(t, newRecorder(), WithLoops(2))
	addr := first.Addr().String()
	e, err := Listen(context.Background(), "tcp", addr, newRecorder(), WithLoops(2))
	wantAddrInUse(t, e, err, addr)
}

// TestListenPacketRefusesAPortAnotherEngineHolds: the same for ListenPacket on the UDP address
// of a running datagram engine.
func TestListenPacketRefusesAPortAnotherEngineHolds(t *testing.T) {
	testutil.NoLeaks(t)
	ctx, cancel := context.WithCancel(context.Background())
	first, err := ListenPacket(ctx, "udp", "127.0.0.1:0", &udpEcho{}, WithLoops(2))
	if err != nil {
		cancel()
		t.Fatal(err)
	}
	t.Cleanup(func() {
		cancel()
		waitEngine(t, first, "the cancellation of its context")
	})
	addr := first.Addr().String()
	e, err := ListenPacket(context.Background(), "udp", addr, &udpEcho{}, WithLoops(2))
	wantAddrInUse(t, e, err, addr)
}

// wantAddrInUse fails the test unless err, a second engine's Listen error, names addr and wraps
// EADDRINUSE; an engine that started anyway is closed.
func wantAddrInUse(t *testing.T, e *Engine, err error, addr string) {
	t.Helper()
	if err == nil {
		e.Close()
		e.Wait()
		t.Fatalf("a second engine listens on %s beside the first", addr)
	}
	if !errors.Is(err, unix.EADDRINUSE) || !strings.Contains(err.Error(), addr) {
		t.Errorf("error %v, want one naming %s and wrapping EADDRINUSE", err, addr)
	}
}

// TestListenReusesAPortInTimeWait: a port whose last connection the server closed (leaving it
// in TIME_WAIT on the server's side) can be listened on again at once, as a restarted server
// does.
func TestListenReusesAPortInTimeWait(t *testing.T) {
	r := newRecorder()
	ctx, cancel := context.WithCancel(context.Background())
	e, err := Listen(ctx, "tcp", "127.0.0.1:0", r, WithLoops(2))
	if err != nil {
		cancel()
		t.Fatal(err)
	}
	addr := e.Addr().String()
	c := dialEngine(t, e)
	if err := r.next(t).Close(); err != nil { // the server closes first: its side goes to TIME_WAIT
		t.Fatal(err)
	}
	if got := readToEOF(t, c); got != "" {
		t.Fatalf("read %q before EOF", got)
	}
	cancel()
	waitEngine(t, e, "the cancellation of its context")
	startEngineOn(t, "tcp", addr, newRecorder(), WithLoops(2))
	c2, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatalf("dial the restarted engine: %v", err)
	}
	c2.Close()
}
