//go:build linux

package server

// Helpers of the TLS tests: a certificate made once, clients with deadlines, raw access to the
// bytes under a client's records, and a captured ClientHello.

import (
	"crypto/tls"
	"crypto/x509"
	"io"
	"net"
	"sync"
	"testing"
	"time"

	"github.com/ringev/ringev/internal/testutil"
)

var (
	testCertOnce sync.Once
	testCert     tls.Certificate
	testCertPEM  []byte
	testKeyPEM   []byte
	testCertErr  error
)

// tlsTestCert is a self-signed ECDSA P-256 certificate for 127.0.0.1 and localhost, made once.
func tlsTestCert(t *testing.T) tls.Certificate {
	t.Helper()
	testCertOnce.Do(func() {
		testCertPEM, testKeyPEM, testCertErr = testutil.SelfSignedCert()
		if testCertErr == nil {
			testCert, testCertErr = tls.X509KeyPair(testCertPEM, testKeyPEM)
		}
	})
	if testCertErr != nil {
		t.Fatalf("making a test certificate: %v", testCertErr)
	}
	return testCert
}

// tlsServerConfig is a server config with the test certificate.
func tlsServerConfig(t *testing.T) *tls.Config {
	return &tls.Config{Certificates: []tls.Certificate{tlsTestCert(t)}}
}

// echoTLSPeer is echoPeer over crypto/tls's server, with tlsServerConfig.
func echoTLSPeer(t *testing.T, network, addr string) net.Listener {
	t.Helper()
	ln, err := tls.Listen(network, addr, tlsServerConfig(t))
	if err != nil {
		t.Fatalf("listen %s %s: %v", network, addr, err)
	}
	return echoOn(t, ln)
}

// tlsClientConfig trusts nothing but the test certificate.
func tlsClientConfig(t *testing.T) *tls.Config {
	t.Helper()
	tlsTestCert(t)
	pool := x509.NewCertPool()
	pool.AppendCertsFromPEM(testCertPEM)
	return &tls.Config{RootCAs: pool, ServerName: "127.0.0.1"}
}

// dialTLS connects to e over TLS with cfg (tlsClientConfig when nil), handshake done, deadlines
// on every read and write; cleanup closes it.
func dialTLS(t *testing.T, e *Engine, cfg *tls.Config) *tls.Conn {
	t.Helper()
	raw := dialEngine(t, e)
	return handshakeOver(t, raw, cfg)
}

// handshakeOver makes the client handshake over raw.
func handshakeOver(t *testing.T, raw net.Conn, cfg *tls.Config) *tls.Conn {
	t.Helper()
	if cfg == nil {
		cfg = tlsClientConfig(t)
	}
	c := tls.Client(raw, cfg)
	if err := c.Handshake(); err != nil {
		t.Fatalf("TLS handshake with %s: %v", raw.RemoteAddr(), err)
	}
	return c
}

// tapConn is a client's socket under its tls.Conn whose next write can be corrupted.
type tapConn struct {
	net.Conn
	mu      sync.Mutex
	corrupt func(b []byte) []byte // applied to the next write, then cleared
}

func (r *tapConn) Write(b []byte) (int, error) {
	r.mu.Lock()
	f := r.corrupt
	r.corrupt = nil
	r.mu.Unlock()
	if f != nil {
		if _, err := r.Conn.Write(f(append([]byte(nil), b...))); err != nil {
			return 0, err
		}
		return len(b), nil
	}
	return r.Conn.Write(b)
}

// clientHello is a ClientHello as Go's client sends it (one record), captured once.
func clientHello(t *testing.T) []byte {
	t.Helper()
	a, b := net.Pipe()
	defer a.Close()
	defer b.Close()
	go tls.Client(a, &tls.Config{ServerName: "localhost"}).Handshake()
	b.SetReadDeadline(time.Now().Add(waitFor))
	hdr := make([]byte, 5)
	if _, err := io.ReadFull(b, hdr); err != nil {
		t.Fatalf("capturing a ClientHello: %v", err)
	}
	body := make([]byte, int(hdr[3])<<8|int(hdr[4]))
	if _, err := io.ReadFull(b, body); err != nil {
		t.Fatalf("capturing a ClientHello: %v", err)
	}
	return append(hdr, body...)
}
