// Package tlstest makes the certificates of TLS tests: a CA made for one
// test and server certificates it signs for 127.0.0.1 and localhost, as
// PEM files in the test's temporary directory. Nothing is committed: the
// keys live as long as the test.
package tlstest

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

// PKI is a test's CA.
type PKI struct {
	t testing.TB
	// Dir holds the files written; CAFile is the CA certificate (what a
	// client's --cafile or ca_certs names).
	Dir, CAFile string
	Pool        *x509.CertPool // trusts the CA only

	ca     *x509.Certificate
	key    *ecdsa.PrivateKey
	serial int64
}

// New makes a CA valid for a day.
func New(t testing.TB) *PKI {
	t.Helper()
	key := newKey(t)
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "bdp test CA"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(24 * time.Hour),
		IsCA: true, BasicConstraintsValid: true, KeyUsage: x509.KeyUsageCertSign}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	ca, err := x509.ParseCertificate(der)
	if err != nil {
		t.Fatal(err)
	}
	p := &PKI{t: t, Dir: t.TempDir(), Pool: x509.NewCertPool(), ca: ca, key: key, serial: 1}
	p.Pool.AddCert(ca)
	p.CAFile = filepath.Join(p.Dir, "ca.crt")
	p.Write(p.CAFile, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}))
	return p
}

func newKey(t testing.TB) *ecdsa.PrivateKey {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	return key
}

// Server writes a server certificate for 127.0.0.1 and localhost, valid
// until notAfter, and its key as name.crt and name.key in Dir.
func (p *PKI) Server(name string, notAfter time.Time) (certFile, keyFile string) {
	p.t.Helper()
	key := newKey(p.t)
	p.serial++
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(p.serial), Subject: pkix.Name{CommonName: name},
		NotBefore: time.Now().Add(-2 * time.Hour), NotAfter: notAfter,
		DNSNames: []string{"localhost"}, IPAddresses: []net.IP{net.IPv4(127, 0, 0, 1)},
		KeyUsage: x509.KeyUsageDigitalSignature, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, p.ca, &key.PublicKey, p.key)
	if err != nil {
		p.t.Fatal(err)
	}
	keyDER, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		p.t.Fatal(err)
	}
	certFile, keyFile = filepath.Join(p.Dir, name+".crt"), filepath.Join(p.Dir, name+".key")
	p.Write(certFile, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}))
	p.Write(keyFile, pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: keyDER}))
	return certFile, keyFile
}

// Write writes a file of the test.
func (p *PKI) Write(name string, b []byte) {
	p.t.Helper()
	if err := os.WriteFile(name, b, 0o600); err != nil {
		p.t.Fatal(err)
	}
}

// Client is a client's TLS configuration that trusts the CA only.
func (p *PKI) Client() *tls.Config {
	return &tls.Config{RootCAs: p.Pool, ServerName: "localhost", MinVersion: tls.VersionTLS12}
}
