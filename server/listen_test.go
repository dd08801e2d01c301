//go:build linux

package server

// Tests of the networks Listen serves (TCP over IPv4 and IPv6, Unix stream sockets) and of the
// errors that name what cannot be listened on.

import (
	"context"
	"errors"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/ringev/ringev/internal/testutil"
)

// TestListenAddressInUseSaysAnotherSocketIsBound: Listen on a port another socket holds fails
// with an error that wraps EADDRINUSE and says why.
func TestListenAddressInUseSaysAnotherSocketIsBound(t *testing.T) {
	testutil.NoLeaks(t)
	busy, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer busy.Close()
	e, err := Listen(context.Background(), "tcp", busy.Addr().String(), newRecorder(), WithLoops(2))
	if err == nil {
		e.Close()
		e.Wait()
		t.Fatal("Listen succeeded on a port in use")
	}
	if !errors.Is(err, unix.EADDRINUSE) || !strings.Contains(err.Error(), "another socket is bound there") {
		t.Errorf("error %q, want one wrapping EADDRINUSE that says another socket is bound there", err)
	}
}

// TestListenAddressNotAvailableBlamesNoOtherSocket: Listen on an address no interface of the
// machine has (TEST-NET-1, with a port, so that the port-in-use probe runs) fails with
// EADDRNOTAVAIL, and the error does not say another socket is bound there.
func TestListenAddressNotAvailableBlamesNoOtherSocket(t *testing.T) {
	testutil.NoLeaks(t)
	e, err := Listen(context.Background(), "tcp", "192.0.2.1:40000", newRecorder(), WithLoops(2))
	if err == nil {
		e.Close()
		e.Wait()
		t.Skip("192.0.2.1 can be bound here (net.ipv4.ip_nonlocal_bind is set?)")
	}
	if !errors.Is(err, unix.EADDRNOTAVAIL) {
		t.Fatalf("error %q, want one wrapping EADDRNOTAVAIL", err)
	}
	if strings.Contains(err.Error(), "another socket") {
		t.Errorf("error %q blames another socket for an address the machine does not have", err)
	}
}

// TestListenUnixSocket: an engine on a Unix stream socket serves a net.Dial("unix") client
// with two loops (round-robin: SO_REUSEPORT cannot share a Unix socket), and removes the
// socket's file when it ends.
func TestListenUnixSocket(t *testing.T) {
	eachSetup(t, func(t *testing.T, s setup) {
		path := filepath.Join(t.TempDir(), "s.sock")
		r := newRecorder()
		ctx, cancel := context.WithCancel(context.Background())
		e, err := Listen(ctx, "unix", path, r, append(s.opts(), WithLoops(2), WithLogf(t.Logf))...)
		if err != nil {
			cancel()
			t.Fatal(err)
		}
		loops := map[int]bool{}
		for range 2 {
			c := dialEngine(t, e)
			loops[r.next(t).Loop().Index()] = true
			c.Write([]byte("unix\n"))
			if got := readN(t, c, 5); got != "unix\n" {
				t.Fatalf("reply %q", got)
			}
			c.Close()
		}
		if len(loops) != 2 {
			t.Errorf("connections served by loops %v, want both", loops)
		}
		cancel()
		waitEngine(t, e, "the cancellation of its context")
		if _, err := os.Stat(path); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("the socket file is still there: %v", err)
		}
	})
}

// TestListenTCP6: an engine on [::1] serves an IPv6 client.
func TestListenTCP6(t *testing.T) {
	needIPv6Loopback(t)
	eachSetup(t, func(t *testing.T, s setup) {
		r := newRecorder()
		e := startEngineOn(t, "tcp6", "[::1]:0", r, s.opts()...)
		if a, ok := e.Addr().(*net.TCPAddr); !ok || a.IP.To4() != nil {
			t.Fatalf("Addr %v, want an IPv6 address", e.Addr())
		}
		c := dialEngine(t, e)
		c.Write([]byte("six\n"))
		if got := readN(t, c, 4); got != "six\n" {
			t.Fatalf("reply %q", got)
		}
	})
}

// TestListenWildcardServesIPv4AndIPv6: an engine on ":0" for "tcp" (of two loops, the second
// joining the first's port) serves an IPv4 and an IPv6 client, as net.Listen's dual-stack
// socket does; its Addr is then [::]'s, as net.Listen's is.
func TestListenWildcardServesIPv4AndIPv6(t *testing.T) {
	needIPv6Loopback(t)
	eachSetup(t, func(t *testing.T, s setup) {
		e := startEngineOn(t, "tcp", ":0", newRecorder(), append(s.opts(), WithLoops(2))...)
		a := e.Addr().(*net.TCPAddr)
		for _, host := range []string{"127.0.0.1", "::1"} {
			c, err := net.DialTimeout("tcp", net.JoinHostPort(host, strconv.Itoa(a.Port)), waitFor)
			if err != nil {
				t.Fatalf("dial %s: %v", host, err)
			}
			t.Cleanup(func() { c.Close() })
			c.SetDeadline(time.Now().Add(waitFor))
			c.Write([]byte(host + "\n"))
			if got := readN(t, c, len(host)+1); got != host+"\n" {
				t.Fatalf("reply to %s: %q", host, got)
			}
		}
		if !a.IP.Equal(net.IPv6unspecified) {
			t.Fatalf("Addr %v, want [::]:port", a)
		}
	})
}

// TestListenErrors: Listen names what it cannot do (the unknown name, the address in use, with
// SO_REUSEPORT on two loops or with one acceptor), and leaves nothing open.
func TestListenErrors(t *testing.T) {
	testutil.NoLeaks(t)
	busy, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer busy.Close()
	ctx := context.Background()
	for _, tc := range []struct {
		name, network, addr string
		opts                []Option
		is                  error
		says                string // the error names it
	}{
		{"unknown network", "sctp", "127.0.0.1:0", nil, nil, "sctp"},
		{"udp for Listen", "udp", "127.0.0.1:0", nil, nil, "udp"},
		{"unknown API", "tcp", "127.0.0.1:0", []Option{WithAPI("carrier-pigeon")}, nil, "carrier-pigeon"},
		{"unknown balancing", "tcp", "127.0.0.1:0", []Option{WithBalance("random")}, nil, "random"},
		{"unknown receive mode", "tcp", "127.0.0.1:0", []Option{WithRecv("telepathy")}, nil, "telepathy"},
		{"unknown backend", "tcp", "127.0.0.1:0", []Option{WithBackend("kqueue")}, nil, "kqueue"},
		{"address in use", "tcp", busy.Addr().String(), []Option{WithBalance(BalanceRoundRobin)}, unix.EADDRINUSE, busy.Addr().String()},
		{"address in use, reuseport", "tcp", busy.Addr().String(), nil, unix.EADDRINUSE, busy.Addr().String()},
		{"bad port", "tcp", "127.0.0.1:no-such-port", nil, nil, "no-such-port"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e, err := Listen(ctx, tc.network, tc.addr, newRecorder(), append(tc.opts, WithLoops(2))...)
			if err == nil {
				e.Close()
				e.Wait()
				t.Fatal("Listen succeeded")
			}
			if tc.is != nil && !errors.Is(err, tc.is) {
				t.Errorf("error %v, want one wrapping %v", err, tc.is)
			}
			if !strings.Contains(err.Error(), tc.says) {
				t.Errorf("error %v does not name %q", err, tc.says)
			}
			t.Log(err)
		})
	}
	if _, err := Listen(ctx, "tcp", "127.0.0.1:0", nil); err == nil {
		t.Error("Listen with a nil Handler succeeded")
	}
	if _, err := ListenPacket(ctx, "tcp", "127.0.0.1:0", &udpEcho{}); err == nil {
		t.Error("ListenPacket on tcp succeeded")
	}
}
