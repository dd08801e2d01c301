//go:build linux

package server

// Tests of ListenPacket: a UDP engine hands each datagram to OnPacket with its sender's address
// and sends WriteTo's datagrams, on every backend and driver.

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/ringev/ringev"
	"github.com/ringev/ringev/internal/testutil"
)

// udpEcho sends every datagram back to its sender, prefixed with "re:".
type udpEcho struct{ n atomic.Int64 }

func (u *udpEcho) OnPacket(pc *PacketConn, from netip.AddrPort, data []byte) {
	u.n.Add(1)
	pc.WriteTo(append([]byte("re:"), data...), from)
}

// startPacketEngine serves h on udp 127.0.0.1 (any port) with opts; cleanup ends it.
func startPacketEngine(t *testing.T, h PacketHandler, opts ...Option) *Engine {
	t.Helper()
	return startPacketEngineOn(t, "127.0.0.1:0", h, opts...)
}

// startPacketEngineOn is startPacketEngine on addr.
func startPacketEngineOn(t *testing.T, addr string, h PacketHandler, opts ...Option) *Engine {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	e, err := ListenPacket(ctx, "udp", addr, h, append([]Option{WithLoops(1), WithLogf(t.Logf)}, opts...)...)
	if err != nil {
		cancel()
		t.Fatalf("ListenPacket: %v", err)
	}
	t.Cleanup(func() {
		cancel()
		waitEngine(t, e, "the cancellation of its context")
	})
	return e
}

// TestPacketEchoesWithTheSendersAddress: 200 datagrams from a net.Dial("udp") client each come
// back to it, answered to the address OnPacket was given; with APIRequests, on every backend,
// through the loop's RecvMsg and SendMsg requests.
func TestPacketEchoesWithTheSendersAddress(t *testing.T) {
	eachSetup(t, func(t *testing.T, s setup) {
		h := &udpEcho{}
		e := startPacketEngine(t, h, s.opts()...)
		pc := e.Loops()[0].pc
		onLoop(t, pc.Loop(), func() {
			if want := s.api == APIRequests; pc.reqs != want {
				t.Errorf("RecvMsg/SendMsg requests: %v, want %v", pc.reqs, want)
			}
		})
		c, err := net.Dial("udp", e.Addr().String())
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		c.SetDeadline(time.Now().Add(waitFor))
		buf := make([]byte, 100)
		for i := range 200 {
			msg := fmt.Sprintf("dgram %d", i)
			if _, err := c.Write([]byte(msg)); err != nil {
				t.Fatal(err)
			}
			n, err := c.Read(buf)
			if err != nil {
				t.Fatalf("reply %d: %v", i, err)
			}
			if got := string(buf[:n]); got != "re:"+msg {
				t.Fatalf("reply %q, want %q", got, "re:"+msg)
			}
		}
	})
}

// TestPacketWildcardServesIPv4AndIPv6: an engine on ":0" for "udp" answers an IPv4 and an
// IPv6 client, as net.ListenPacket's dual-stack socket does.
func TestPacketWildcardServesIPv4AndIPv6(t *testing.T) {
	needIPv6Loopback(t)
	eachSetup(t, func(t *testing.T, s setup) {
		e := startPacketEngineOn(t, ":0", &udpEcho{}, s.opts()...)
		port := strconv.Itoa(e.Addr().(*net.UDPAddr).Port)
		for _, host := range []string{"127.0.0.1", "::1"} {
			c, err := net.Dial("udp", net.JoinHostPort(host, port))
			if err != nil {
				t.Fatal(err)
			}
			defer c.Close()
			c.SetDeadline(time.Now().Add(waitFor))
			c.Write([]byte(host))
			buf := make([]byte, 100)
			n, err := c.Read(buf)
			if err != nil || string(buf[:n]) != "re:"+host {
				t.Fatalf("reply to %s: %q, %v", host, buf[:n], err)
			}
		}
	})
}

// TestPacketBatchOfDatagrams: 64 datagrams sent at once are all answered (several receives and
// the sends of one turn in flight together).
func TestPacketBatchOfDatagrams(t *testing.T) {
	eachSetup(t, func(t *testing.T, s setup) {
		h := &udpEcho{}
		e := startPacketEngine(t, h, s.opts()...)
		c, err := net.Dial("udp", e.Addr().String())
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		c.(*net.UDPConn).SetReadBuffer(1 << 20)
		c.SetDeadline(time.Now().Add(waitFor))
		const n = 64
		for i := range n {
			c.Write([]byte{byte(i)})
		}
		seen := map[byte]bool{}
		buf := make([]byte, 16)
		for len(seen) < n {
			k, err := c.Read(buf)
			if err != nil {
				t.Fatalf("after %d replies: %v", len(seen), err)
			}
			if k != 4 || string(buf[:3]) != "re:" {
				t.Fatalf("reply %q", buf[:k])
			}
			seen[buf[3]] = true
		}
	})
}

// TestPacketWriteToRefusals: WriteTo refuses other goroutines, oversized datagrams and IPv6
// destinations on an IPv4 socket.
func TestPacketWriteToRefusals(t *testing.T) {
	eachBackendRequests(t, func(t *testing.T, s setup) {
		got := make(chan *PacketConn, 1)
		h := packetFunc(func(pc *PacketConn, from netip.AddrPort, data []byte) {
			select {
			case got <- pc:
			default:
			}
		})
		e := startPacketEngine(t, h, s.opts()...)
		c, err := net.Dial("udp", e.Addr().String())
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		c.Write([]byte("x"))
		var pc *PacketConn
		select {
		case pc = <-got:
		case <-time.After(waitFor):
			t.Fatal("no datagram received")
		}
		to := netip.MustParseAddrPort("127.0.0.1:9")
		if _, err := pc.WriteTo([]byte("x"), to); !errors.Is(err, ringev.ErrNotOwner) {
			t.Errorf("WriteTo from another goroutine: %v", err)
		}
		onLoop(t, pc.Loop(), func() {
			if _, err := pc.WriteTo(make([]byte, MaxDatagram+1), to); err == nil {
				t.Error("WriteTo of an oversized datagram succeeded")
			}
			if _, err := pc.WriteTo([]byte("x"), netip.MustParseAddrPort("[::1]:9")); err == nil {
				t.Error("WriteTo of an IPv6 address from an IPv4 socket succeeded")
			}
		})
	})
}

// packetFunc is a PacketHandler of a function.
type packetFunc func(pc *PacketConn, from netip.AddrPort, data []byte)

func (f packetFunc) OnPacket(pc *PacketConn, from netip.AddrPort, data []byte) { f(pc, from, data) }

// TestPacketWithTLSIsAnError: ListenPacket with WithTLS fails, naming it, rather than serve
// in plaintext what the caller asked to be encrypted.
func TestPacketWithTLSIsAnError(t *testing.T) {
	testutil.NoLeaks(t)
	cert, _ := testutil.Cert(t)
	e, err := ListenPacket(context.Background(), "udp", "127.0.0.1:0", &udpEcho{}, WithTLS(&tls.Config{Certificates: []tls.Certificate{cert}}))
	if err == nil {
		e.Close()
		e.Wait()
		t.Fatal("ListenPacket with WithTLS succeeded")
	}
	if !strings.Contains(err.Error(), "WithTLS") {
		t.Fatalf("error %q does not name WithTLS", err)
	}
}
