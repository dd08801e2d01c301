//go:build linux

package nethttp

import (
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"io"
	"net/http"
	"testing"

	"github.com/ringev/ringev/internal/testutil"
	"github.com/ringev/ringev/server"
)

// TestServerRequestHasTLSState: over a connection served with server.WithTLS, a request's
// r.TLS is the connection's TLS state (handshake complete, ALPN "http/1.1"), as net/http's
// TLS server gives it.
func TestServerRequestHasTLSState(t *testing.T) {
	certPEM, keyPEM, err := testutil.SelfSignedCert()
	if err != nil {
		t.Fatal(err)
	}
	cert, err := tls.X509KeyPair(certPEM, keyPEM)
	if err != nil {
		t.Fatal(err)
	}
	roots := x509.NewCertPool()
	roots.AppendCertsFromPEM(certPEM)
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.TLS == nil {
			io.WriteString(w, "r.TLS nil")
			return
		}
		fmt.Fprintf(w, "complete=%v alpn=%s", r.TLS.HandshakeComplete, r.TLS.NegotiatedProtocol)
	})
	eachSetup(t, func(t *testing.T, backend string, opts ...server.Option) {
		cfg := &tls.Config{Certificates: []tls.Certificate{cert}, NextProtos: []string{"http/1.1"}}
		addr := serveRingev(t, backend, &http.Server{Handler: h}, append(opts, server.WithTLS(cfg))...)
		tr := &http.Transport{TLSClientConfig: &tls.Config{RootCAs: roots}, ForceAttemptHTTP2: true}
		defer tr.CloseIdleConnections()
		client := &http.Client{Transport: tr, Timeout: waitFor}
		resp, err := client.Get("https://" + addr + "/")
		if err != nil {
			t.Fatal(err)
		}
		b, err := io.ReadAll(resp.Body)
		resp.Body.Close()
		if want := "complete=true alpn=http/1.1"; string(b) != want || err != nil {
			t.Errorf("GET over TLS: %q, %v; want %q", b, err, want)
		}
	})
}
