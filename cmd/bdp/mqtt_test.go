package main

import (
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	paho "github.com/eclipse/paho.mqtt.golang"
	pahopackets "github.com/eclipse/paho.mqtt.golang/packets"
)

// bdp serve runs the embedded broker on BDP_MQTT_ADDR and
// BDP_MQTT_WS_ADDR, writes both addresses to addresses.json, answers
// CONNECTs on both, and stops it on SIGTERM with a clean exit.
func TestServeMQTTListenersInAddresses(t *testing.T) {
	dir := newDataDir(t)
	s := startServe(t, dir, "BDP_MQTT_WS_ADDR=127.0.0.1:0")
	b, err := os.ReadFile(filepath.Join(dir, "addresses.json"))
	if err != nil {
		t.Fatal(err)
	}
	var addrs map[string]string
	if err := json.Unmarshal(b, &addrs); err != nil {
		t.Fatal(err)
	}
	for key, scheme := range map[string]string{"mqtt": "tcp://", "mqtt_ws": "ws://"} {
		if addrs[key] == "" {
			t.Fatalf("addresses.json has no %q: %s", key, b)
		}
		// Nobody is an MQTT user yet: the broker answers with a refusal
		// (not a reset), which shows it authenticates on this listener.
		c := paho.NewClient(paho.NewClientOptions().AddBroker(scheme + addrs[key]).SetClientID("probe-" + key).
			SetUsername("nobody").SetPassword("wrong-password").SetConnectTimeout(10 * time.Second).SetAutoReconnect(false).SetProtocolVersion(4))
		tok := c.Connect()
		if !tok.WaitTimeout(15 * time.Second) {
			t.Fatalf("%s: CONNECT not answered", key)
		}
		if !errors.Is(tok.Error(), pahopackets.ErrorRefusedBadUsernameOrPassword) {
			t.Fatalf("%s: CONNECT of an unknown user: %v, want a refusal", key, tok.Error())
		}
	}
	if status, body := s.request("GET", "/metrics", nil, ""); status != 200 || !containsAll(string(body),
		"bdp_mqtt_clients_connected", `bdp_mqtt_connect_refused_total{reason="unknown_user"} 2`) {
		t.Fatalf("/metrics: %d, want the broker's counters and 2 refusals:\n%s", status, grepLines(string(body), "bdp_mqtt"))
	}
	if err := s.stop(syscall.SIGTERM); err != nil {
		t.Fatalf("exit after SIGTERM: %v\n%s", err, s.log)
	}
}

func containsAll(s string, subs ...string) bool {
	for _, sub := range subs {
		if !strings.Contains(s, sub) {
			return false
		}
	}
	return true
}

// grepLines keeps the lines of s that contain sub.
func grepLines(s, sub string) string {
	var out []string
	for _, l := range strings.Split(s, "\n") {
		if strings.Contains(l, sub) {
			out = append(out, l)
		}
	}
	return strings.Join(out, "\n")
}
