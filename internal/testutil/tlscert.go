//go:build linux

package testutil

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"testing"
	"time"
)

// SelfSignedCert makes a self-signed ECDSA P-256 certificate for localhost and 127.0.0.1,
// valid for a day, and returns it and its key, PEM-encoded (for tls.X509KeyPair, or files a
// program or a real client reads). Errors: crypto/ecdsa's and crypto/x509's.
func SelfSignedCert() (certPEM, keyPEM []byte, err error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, nil, err
	}
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(1),
		Subject:      pkix.Name{CommonName: "localhost"},
		NotBefore:    time.Now().Add(-time.Hour),
		NotAfter:     time.Now().Add(24 * time.Hour),
		DNSNames:     []string{"localhost"},
		IPAddresses:  []net.IP{net.IPv4(127, 0, 0, 1)},
		KeyUsage:     x509.KeyUsageDigitalSignature,
		ExtKeyUsage:  []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		return nil, nil, err
	}
	kder, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		return nil, nil, err
	}
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}),
		pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: kder}), nil
}

// Cert is a new SelfSignedCert as a server's tls.Certificate, and a pool that trusts it (a
// client's RootCAs). An error fails tb.
func Cert(tb testing.TB) (tls.Certificate, *x509.CertPool) {
	tb.Helper()
	certPEM, keyPEM, err := SelfSignedCert()
	if err != nil {
		tb.Fatalf("making a test certificate: %v", err)
	}
	cert, err := tls.X509KeyPair(certPEM, keyPEM)
	if err != nil {
		tb.Fatalf("loading the test certificate: %v", err)
	}
	return cert, certPool(certPEM)
}

// CertFiles writes a new SelfSignedCert and its key to PEM files in tb.TempDir(), for a
// program's --tls-cert and --tls-key, and returns their paths and a pool that trusts the
// certificate. An error fails tb.
func CertFiles(tb testing.TB) (certFile, keyFile string, roots *x509.CertPool) {
	tb.Helper()
	certPEM, keyPEM, err := SelfSignedCert()
	if err != nil {
		tb.Fatalf("making a test certificate: %v", err)
	}
	dir := tb.TempDir()
	certFile, keyFile = filepath.Join(dir, "cert.pem"), filepath.Join(dir, "key.pem")
	if err := os.WriteFile(certFile, certPEM, 0o600); err != nil {
		tb.Fatal(err)
	}
	if err := os.WriteFile(keyFile, keyPEM, 0o600); err != nil {
		tb.Fatal(err)
	}
	return certFile, keyFile, certPool(certPEM)
}

// certPool is a pool of the PEM certificate certPEM alone.
func certPool(certPEM []byte) *x509.CertPool {
	pool := x509.NewCertPool()
	pool.AppendCertsFromPEM(certPEM)
	return pool
}
