package main

import (
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/openbdp/bdp/mqtt/tlstest"
)

// The TLS listeners' certificate is loaded with the configuration: a
// file bdp cannot read, a key that does not match or a listener without a
// certificate stops the start with the variable named; a certificate
// without a listener is refused rather than ignored.
func TestConfigTLS(t *testing.T) {
	pki := tlstest.New(t)
	cert, key := pki.Server("bdp", time.Now().Add(time.Hour))
	_, otherKey := pki.Server("other", time.Now().Add(time.Hour))
	listeners := map[string]string{"BDP_MQTT_TLS_ADDR": "127.0.0.1:0", "BDP_MQTT_WSS_ADDR": "127.0.0.1:0"}
	with := func(extra map[string]string) map[string]string {
		env := map[string]string{}
		for k, v := range listeners {
			env[k] = v
		}
		for k, v := range extra {
			env[k] = v
		}
		return env
	}

	c, err := loadConfig(envOf(with(map[string]string{"BDP_TLS_CERT": cert, "BDP_TLS_KEY": key})))
	if err != nil {
		t.Fatalf("a good certificate: %v", err)
	}
	if c.MQTTTLS == nil || c.MQTTTLSAddr != "127.0.0.1:0" || c.MQTTWSSAddr != "127.0.0.1:0" {
		t.Fatalf("config %+v: want both TLS listeners with the certificate", c)
	}
	cases := []struct {
		name string
		env  map[string]string
		want []string // variable=…: reason
	}{
		{"unreadable certificate", with(map[string]string{"BDP_TLS_CERT": filepath.Join(pki.Dir, "gone.crt"), "BDP_TLS_KEY": key}),
			[]string{"BDP_TLS_CERT=", "gone.crt"}},
		{"key of another certificate", with(map[string]string{"BDP_TLS_CERT": cert, "BDP_TLS_KEY": otherKey}),
			[]string{"BDP_TLS_CERT=", "does not match"}},
		{"listener without certificate", with(nil), []string{"BDP_TLS_CERT=", "BDP_TLS_KEY=", "is required"}},
		{"certificate without listener", map[string]string{"BDP_TLS_CERT": cert, "BDP_TLS_KEY": key},
			[]string{"BDP_TLS_CERT=", "BDP_TLS_KEY=", "is used only with"}},
		{"bad address", with(map[string]string{"BDP_MQTT_TLS_ADDR": "8883", "BDP_TLS_CERT": cert, "BDP_TLS_KEY": key}),
			[]string{"BDP_MQTT_TLS_ADDR="}},
		{"external broker", with(map[string]string{"BDP_MQTT_EXTERNAL": "tcp://127.0.0.1:1883", "BDP_MQTT_ADMIN_USER": "a",
			"BDP_MQTT_ADMIN_PASSWORD": "p", "BDP_TLS_CERT": cert, "BDP_TLS_KEY": key}),
			[]string{"BDP_MQTT_TLS_ADDR=", "BDP_MQTT_WSS_ADDR=", "external broker's own configuration"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, err := loadConfig(envOf(tc.env))
			if err == nil {
				t.Fatal("accepted")
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error does not say %q:\n%v", w, err)
				}
			}
		})
	}
}
