package mqtt

import (
	"context"
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
	"strings"
	"testing"
	"time"

	"github.com/eclipse/paho.golang/paho"
	pahov3 "github.com/eclipse/paho.mqtt.golang"

	"github.com/openbdp/bdp/store"
)

// testPKI is a CA made for one test and the server certificates it
// signs for 127.0.0.1 and localhost.
type testPKI struct {
	t    *testing.T
	dir  string
	ca   *x509.Certificate
	key  *ecdsa.PrivateKey
	pool *x509.CertPool // trusts the CA
	n    int64
}

func newTestPKI(t *testing.T) *testPKI {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
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
	p := &testPKI{t: t, dir: t.TempDir(), ca: ca, key: key, pool: x509.NewCertPool(), n: 1}
	p.pool.AddCert(ca)
	return p
}

// server writes a server certificate valid until notAfter and its key,
// and returns the two files.
func (p *testPKI) server(name string, notAfter time.Time) (certFile, keyFile string) {
	p.t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		p.t.Fatal(err)
	}
	p.n++
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(p.n), Subject: pkix.Name{CommonName: name},
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
	certFile, keyFile = filepath.Join(p.dir, name+".crt"), filepath.Join(p.dir, name+".key")
	p.write(certFile, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}))
	p.write(keyFile, pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: keyDER}))
	return certFile, keyFile
}

func (p *testPKI) write(name string, b []byte) {
	p.t.Helper()
	if err := os.WriteFile(name, b, 0o600); err != nil {
		p.t.Fatal(err)
	}
}

// clientTLS trusts the test CA only.
func (p *testPKI) clientTLS() *tls.Config {
	return &tls.Config{RootCAs: p.pool, ServerName: "localhost", MinVersion: tls.VersionTLS12}
}

// A gateway on the internet connects over TLS, checking the broker's
// certificate against its CA: MQTT 5 and 3.1.1 over TLS and MQTT over
// WebSocket over TLS get their CONNACK and may publish; a client that
// does not trust the certificate, or speaks plain MQTT to the TLS port,
// gets no session.
func TestTLSListeners(t *testing.T) {
	pki := newTestPKI(t)
	cert, key := pki.server("broker", time.Now().Add(time.Hour))
	conf, err := LoadTLS(cert, key)
	if err != nil {
		t.Fatal(err)
	}
	e := newBrokerEnv(t, brokerEnvConfig{tls: conf})
	e.user("gw", "gw-password", store.MQTTWrite)
	addrs := e.b.Addresses()
	if addrs["mqtt_tls"] == "" || addrs["mqtt_wss"] == "" {
		t.Fatalf("addresses %v, want mqtt_tls and mqtt_wss", addrs)
	}

	// MQTT 5 (paho.golang) over TLS.
	conn, err := tls.Dial("tcp", addrs["mqtt_tls"], pki.clientTLS())
	if err != nil {
		t.Fatalf("TLS handshake with the CA's trust: %v", err)
	}
	c := paho.NewClient(paho.ClientConfig{Conn: conn})
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	ack, err := c.Connect(ctx, &paho.Connect{ClientID: "gw-tls5", Username: "gw", UsernameFlag: true,
		Password: []byte("gw-password"), PasswordFlag: true, KeepAlive: 30, CleanStart: true})
	if err != nil || ack.ReasonCode != 0 {
		t.Fatalf("MQTT 5 CONNECT over TLS: %v %+v", err, ack)
	}
	if sa, err := c.Subscribe(ctx, &paho.Subscribe{Subscriptions: []paho.SubscribeOptions{{Topic: "project/" + itoa(e.p) + "/#", QoS: 1}}}); err != nil || sa.Reasons[0] >= 0x80 {
		t.Fatalf("SUBSCRIBE over TLS: %v %+v", err, sa)
	}
	_ = c.Disconnect(&paho.Disconnect{})

	// MQTT 3.1.1 (paho.mqtt.golang) over ssl:// and wss://.
	for _, url := range []string{"ssl://" + addrs["mqtt_tls"], "wss://" + addrs["mqtt_wss"] + "/mqtt"} {
		c3 := pahov3.NewClient(pahov3.NewClientOptions().AddBroker(url).SetClientID("gw-v3-" + url[:3]).
			SetUsername("gw").SetPassword("gw-password").SetProtocolVersion(4).SetAutoReconnect(false).
			SetConnectTimeout(10 * time.Second).SetTLSConfig(pki.clientTLS()))
		tok := c3.Connect()
		if !tok.WaitTimeout(15*time.Second) || tok.Error() != nil {
			t.Fatalf("MQTT 3.1.1 CONNECT to %s: %v", url, tok.Error())
		}
		c3.Disconnect(100)
	}

	// Not trusted: the handshake fails, as it must for a real check.
	if c, err := tls.Dial("tcp", addrs["mqtt_tls"], &tls.Config{RootCAs: x509.NewCertPool(), ServerName: "localhost"}); err == nil {
		c.Close()
		t.Fatal("a client trusting another CA completed the handshake")
	}
	// Plain MQTT to the TLS port: no CONNACK, the connection ends.
	if _, err := connect3(t, "tcp://"+addrs["mqtt_tls"], "plain-to-tls", "gw", "gw-password"); err == nil {
		t.Fatal("plain MQTT on the TLS port connected")
	}
}

// The certificate must load at start: a missing file, a key of another
// certificate, an expired certificate or a file that is not PEM is
// refused with the file named, so bdp does not start with listeners
// whose every handshake fails.
func TestLoadTLSRefuses(t *testing.T) {
	pki := newTestPKI(t)
	cert, key := pki.server("good", time.Now().Add(time.Hour))
	_, otherKey := pki.server("other", time.Now().Add(time.Hour))
	expired, expiredKey := pki.server("expired", time.Now().Add(-time.Hour))
	notPEM := filepath.Join(pki.dir, "not.pem")
	pki.write(notPEM, []byte("not a certificate"))
	if _, err := LoadTLS(cert, key); err != nil {
		t.Fatalf("a good pair: %v", err)
	}
	cases := []struct{ name, cert, key, want string }{
		{"missing certificate", filepath.Join(pki.dir, "missing.crt"), key, "missing.crt"},
		{"missing key", cert, filepath.Join(pki.dir, "missing.key"), "missing.key"},
		{"key of another certificate", cert, otherKey, "does not match"},
		{"expired", expired, expiredKey, "expired"},
		{"not PEM", notPEM, key, "not.pem"},
		{"a directory", pki.dir, key, "directory"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, err := LoadTLS(c.cert, c.key)
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("LoadTLS: %v, want an error saying %q", err, c.want)
			}
		})
	}
}

// A renewed certificate written over the files is served to the next
// handshakes without a restart; a half-written renewal keeps the old one.
func TestTLSCertificateReloads(t *testing.T) {
	pki := newTestPKI(t)
	cert, key := pki.server("broker", time.Now().Add(time.Hour))
	files := &certFiles{certFile: cert, keyFile: key}
	if err := files.load(time.Now()); err != nil {
		t.Fatal(err)
	}
	serial := func() int64 {
		t.Helper()
		c, err := files.get(nil)
		if err != nil {
			t.Fatal(err)
		}
		return c.Leaf.SerialNumber.Int64()
	}
	first := serial()
	// A key alone replaced (the renewal is half written): the old pair
	// stays.
	newCert, newKey := pki.server("renewed", time.Now().Add(2*time.Hour))
	copyFile(t, newKey, key)
	if got := serial(); got != first {
		t.Fatalf("serial %d after a half-written renewal, want the old %d", got, first)
	}
	copyFile(t, newCert, cert)
	if got := serial(); got == first {
		t.Fatalf("still serial %d after the renewal", got)
	}
}

func copyFile(t *testing.T, from, to string) {
	t.Helper()
	b, err := os.ReadFile(from)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(to, b, 0o600); err != nil {
		t.Fatal(err)
	}
	// A new modification time even on a coarse file system clock.
	later := time.Now().Add(2 * time.Second)
	_ = os.Chtimes(to, later, later)
}
