//go:build linux

package server

import (
	"bufio"
	"net"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/ringev/ringev"
	"github.com/ringev/ringev/internal/testutil"
)

// Hostile clients (the breaker's tests): each runs on every backend with each driver, on one
// loop, and checks that a well-behaved client is still served promptly while they misbehave.

// brkDrivers runs test for every usable backend and driver, with a RESP server's address.
func brkDrivers(t *testing.T, test func(t *testing.T, addr string)) {
	for _, b := range ringev.Backends() {
		for _, d := range drivers {
			d.Backend = b
			t.Run(b+"/"+d.API+d.Recv, func(t *testing.T) {
				d.Handler = NewRESP(NewKeyspace())
				srv, err := listenServer(t, d)
				if err != nil {
					testutil.SkipIfIOUringUnavailable(t, err, "backend "+b)
					t.Fatal(err)
				}
				defer stopServer(t, srv)
				test(t, srv.Addr().String())
			})
		}
	}
}

// brkPing sends PING on c and fails unless +PONG arrives within d.
func brkPing(t *testing.T, c net.Conn, rd *bufio.Reader, d time.Duration, what string) {
	t.Helper()
	c.SetDeadline(time.Now().Add(d))
	if _, err := c.Write([]byte("PING\r\n")); err != nil {
		t.Fatalf("%s: write: %v", what, err)
	}
	line, err := rd.ReadString('\n')
	if err != nil || line != "+PONG\r\n" {
		t.Fatalf("%s: %q, %v; want +PONG within %v", what, line, err, d)
	}
}

// A slowloris client (an inline command, one byte per 5 ms, never ending), a client that
// pipelines 200,000 PINGs without reading a reply, and one that sends a bulk length of 1 GB
// and then trickles: a fourth client's PINGs are answered within 1 s each all along, and the
// process's heap stays below 64 MiB more than at the start.
func TestBreakerHostileClientsDoNotStallOthers(t *testing.T) {
	brkDrivers(t, func(t *testing.T, addr string) {
		runtime.GC()
		var ms runtime.MemStats
		runtime.ReadMemStats(&ms)
		heap0 := ms.HeapInuse
		stop := make(chan struct{})
		var wg sync.WaitGroup
		defer func() { close(stop); wg.Wait() }()
		dial := func() net.Conn {
			c, err := net.Dial("tcp", addr)
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { c.Close() })
			return c
		}
		slow := dial()
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				select {
				case <-stop:
					return
				case <-time.After(5 * time.Millisecond):
				}
				slow.SetWriteDeadline(time.Now().Add(time.Second))
				if _, err := slow.Write([]byte("a")); err != nil {
					return
				}
			}
		}()
		flood := dial()
		wg.Add(1)
		go func() {
			defer wg.Done()
			msg := []byte(strings.Repeat("PING\r\n", 1000))
			for range 200 {
				select {
				case <-stop:
					return
				default:
				}
				flood.SetWriteDeadline(time.Now().Add(200 * time.Millisecond))
				if _, err := flood.Write(msg); err != nil {
					if ne, ok := err.(net.Error); ok && ne.Timeout() {
						continue // the server stopped reading: it is holding back, as it should
					}
					return
				}
			}
		}()
		big := dial()
		wg.Add(1)
		go func() {
			defer wg.Done()
			big.Write([]byte("*2\r\n$3\r\nSET\r\n$1000000000\r\n"))
			for {
				select {
				case <-stop:
					return
				case <-time.After(time.Millisecond):
				}
				big.SetWriteDeadline(time.Now().Add(time.Second))
				if _, err := big.Write(make([]byte, 4096)); err != nil {
					return
				}
			}
		}()
		good := dial()
		rd := bufio.NewReader(good)
		end := time.Now().Add(time.Second)
		for i := 0; time.Now().Before(end); i++ {
			brkPing(t, good, rd, time.Second, "the well-behaved client")
			time.Sleep(10 * time.Millisecond)
		}
		runtime.GC()
		runtime.ReadMemStats(&ms)
		if ms.HeapInuse > heap0+64<<20 {
			t.Errorf("heap in use grew from %d to %d bytes under hostile clients", heap0, ms.HeapInuse)
		}
	})
}
