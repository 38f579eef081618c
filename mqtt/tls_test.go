package mqtt

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/eclipse/paho.golang/paho"
	pahov3 "github.com/eclipse/paho.mqtt.golang"

	"github.com/openbdp/bdp/mqtt/tlstest"
	"github.com/openbdp/bdp/store"
)

// A gateway on the internet connects over TLS, checking the broker's
// certificate against its CA: MQTT 5 and 3.1.1 over TLS and MQTT over
// WebSocket over TLS get their CONNACK and may publish; a client that
// does not trust the certificate, or speaks plain MQTT to the TLS port,
// gets no session.
func TestTLSListeners(t *testing.T) {
	pki := tlstest.New(t)
	cert, key := pki.Server("broker", time.Now().Add(time.Hour))
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
	conn, err := tls.Dial("tcp", addrs["mqtt_tls"], pki.Client())
	if err != nil {
		t.Fatalf("TLS handshake with the CA's trust: %v", err)
	}
	c := paho.NewClient(paho.ClientConfig{Conn: conn})
	// A deadline for each exchange, so that a slow CONNECT (the password
	// goes through the slow KDF) cannot use up SUBSCRIBE's: the
	// fresh-clone CI once saw SUBSCRIBE time out 10.3 s into one shared
	// deadline, here the whole test takes 0.3 s.
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	ack, err := c.Connect(ctx, &paho.Connect{ClientID: "gw-tls5", Username: "gw", UsernameFlag: true,
		Password: []byte("gw-password"), PasswordFlag: true, KeepAlive: 30, CleanStart: true})
	if err != nil || ack.ReasonCode != 0 {
		t.Fatalf("MQTT 5 CONNECT over TLS: %v %+v", err, ack)
	}
	ctx, cancel = context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if sa, err := c.Subscribe(ctx, &paho.Subscribe{Subscriptions: []paho.SubscribeOptions{{Topic: "project/" + itoa(e.p) + "/#", QoS: 1}}}); err != nil || sa.Reasons[0] >= 0x80 {
		t.Fatalf("SUBSCRIBE over TLS: %v %+v", err, sa)
	}
	_ = c.Disconnect(&paho.Disconnect{})

	// MQTT 3.1.1 (paho.mqtt.golang) over ssl:// and wss://.
	for _, url := range []string{"ssl://" + addrs["mqtt_tls"], "wss://" + addrs["mqtt_wss"] + "/mqtt"} {
		c3 := pahov3.NewClient(pahov3.NewClientOptions().AddBroker(url).SetClientID("gw-v3-" + url[:3]).
			SetUsername("gw").SetPassword("gw-password").SetProtocolVersion(4).SetAutoReconnect(false).
			SetConnectTimeout(10 * time.Second).SetTLSConfig(pki.Client()))
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
	pki := tlstest.New(t)
	cert, key := pki.Server("good", time.Now().Add(time.Hour))
	_, otherKey := pki.Server("other", time.Now().Add(time.Hour))
	expired, expiredKey := pki.Server("expired", time.Now().Add(-time.Hour))
	notPEM := filepath.Join(pki.Dir, "not.pem")
	pki.Write(notPEM, []byte("not a certificate"))
	if _, err := LoadTLS(cert, key); err != nil {
		t.Fatalf("a good pair: %v", err)
	}
	cases := []struct{ name, cert, key, want string }{
		{"missing certificate", filepath.Join(pki.Dir, "missing.crt"), key, "missing.crt"},
		{"missing key", cert, filepath.Join(pki.Dir, "missing.key"), "missing.key"},
		{"key of another certificate", cert, otherKey, "does not match"},
		{"expired", expired, expiredKey, "expired"},
		{"not PEM", notPEM, key, "not.pem"},
		{"a directory", pki.Dir, key, "directory"},
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
	pki := tlstest.New(t)
	cert, key := pki.Server("broker", time.Now().Add(time.Hour))
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
	newCert, newKey := pki.Server("renewed", time.Now().Add(2*time.Hour))
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
