//go:build linux

// Command tlsfloor measures what crypto/tls itself costs per keep-alive HTTPS request, the floor
// under any server's TLS path: both ends of a TLS 1.3 connection in one goroutine over in-memory
// non-blocking transports (as the loop's), N exchanges of serve http's request and response:
// the client seals the request, the server opens it, seals the response, the client opens it.
// With "once" each message is one Read; without it, Reads go on until the transport's Temporary
// error (errors.As). Under callgrind, the difference of two N, halved, is one end's record work
// per request:
//
//	../shared/anchors/ircount.sh events 2000 12000 -- tlsfloor {N} once
//
// The certificate is CERT and KEY (default /tmp/tls/cert/{cert,key}.pem, from tlscert.sh).
package main

import (
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"os"
	"strconv"
	"time"
)

type wouldBlock struct{}

func (wouldBlock) Error() string   { return "would block" }
func (wouldBlock) Timeout() bool   { return true }
func (wouldBlock) Temporary() bool { return true }

type pipeEnd struct {
	in   *[]byte
	out  *[]byte
	sync net.Conn // during the handshake
}

func (p *pipeEnd) Read(b []byte) (int, error) {
	if p.sync != nil {
		return p.sync.Read(b)
	}
	if len(*p.in) == 0 {
		return 0, wouldBlock{}
	}
	n := copy(b, *p.in)
	*p.in = (*p.in)[n:]
	return n, nil
}
func (p *pipeEnd) Write(b []byte) (int, error) {
	if p.sync != nil {
		return p.sync.Write(b)
	}
	*p.out = append(*p.out, b...)
	return len(b), nil
}
func (p *pipeEnd) Close() error                     { return nil }
func (p *pipeEnd) LocalAddr() net.Addr              { return nil }
func (p *pipeEnd) RemoteAddr() net.Addr             { return nil }
func (p *pipeEnd) SetDeadline(time.Time) error      { return nil }
func (p *pipeEnd) SetReadDeadline(time.Time) error  { return nil }
func (p *pipeEnd) SetWriteDeadline(time.Time) error { return nil }

func main() {
	if len(os.Args) < 2 {
		fmt.Fprintln(os.Stderr, "usage: tlsfloor N [once]")
		os.Exit(2)
	}
	n, err := strconv.Atoi(os.Args[1])
	if err != nil || n < 0 {
		fmt.Fprintf(os.Stderr, "tlsfloor: N %q: want a count of exchanges\n", os.Args[1])
		os.Exit(2)
	}
	certFile, keyFile := os.Getenv("CERT"), os.Getenv("KEY")
	if certFile == "" {
		certFile, keyFile = "/tmp/tls/cert/cert.pem", "/tmp/tls/cert/key.pem"
	}
	cert, err := tls.LoadX509KeyPair(certFile, keyFile)
	if err != nil {
		fail("certificate %s, key %s: %v", certFile, keyFile, err)
	}
	var c2s, s2c []byte
	a, b := net.Pipe()
	ce := &pipeEnd{in: &s2c, out: &c2s, sync: a}
	se := &pipeEnd{in: &c2s, out: &s2c, sync: b}
	cl := tls.Client(ce, &tls.Config{InsecureSkipVerify: true})
	sv := tls.Server(se, &tls.Config{Certificates: []tls.Certificate{cert}})
	done := make(chan error)
	go func() { done <- sv.Handshake() }()
	if err := cl.Handshake(); err != nil {
		fail("client handshake: %v", err)
	}
	if err := <-done; err != nil {
		fail("server handshake: %v", err)
	}
	ce.sync, se.sync = nil, nil
	req := []byte("GET /plaintext HTTP/1.1\r\nHost: 127.0.0.1:8080\r\n\r\n")
	resp := []byte("HTTP/1.1 200 OK\r\nServer: ringev\r\nDate: Sun, 06 Dec 2026 03:00:00 GMT\r\nContent-Type: text/plain\r\nContent-Length: 13\r\n\r\nHello, World!")
	buf := make([]byte, 16<<10)
	readAll := func(c *tls.Conn) int {
		got := 0
		for {
			m, err := c.Read(buf)
			got += m
			if err != nil {
				var wb wouldBlock
				if !errors.As(err, &wb) {
					fail("read: %v", err)
				}
				return got
			}
		}
	}
	if len(os.Args) > 2 && os.Args[2] == "once" { // one Read per record: the transport's empty read skipped
		readAll = func(c *tls.Conn) int {
			m, err := c.Read(buf)
			if err != nil {
				fail("read: %v", err)
			}
			return m
		}
	}
	for range n {
		cl.Write(req)
		if got := readAll(sv); got != len(req) {
			fail("the server read %d bytes of the request, want %d", got, len(req))
		}
		sv.Write(resp)
		if got := readAll(cl); got != len(resp) {
			fail("the client read %d bytes of the response, want %d", got, len(resp))
		}
	}
}

// fail reports what went wrong and exits 1: the count is not measured.
func fail(format string, args ...any) {
	fmt.Fprintf(os.Stderr, "tlsfloor: "+format+"\n", args...)
	os.Exit(1)
}
