package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
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

// The real binary's broker follows the API: an MQTT user deleted over
// HTTP loses its session at once, one made with a 2-s validity within 1 s
// of valid_until (and is refused after), and edge credentials rotated by
// the operator end the old session and refuse the old password.
func TestServeMQTTSessionsFollowTheAPI(t *testing.T) {
	s := startServe(t, newDataDir(t))
	pid, admin := vdpProject(t, s)
	type created struct {
		ID         int64  `json:"id"`
		ValidUntil string `json:"valid_until"`
		Username   string `json:"username"`
		Password   string `json:"password"`
	}
	post := func(path string, as func(*http.Request), body string) created {
		t.Helper()
		status, b := s.request("POST", path, as, body)
		var env struct{ Resource created }
		if status != 201 || json.Unmarshal(b, &env) != nil {
			t.Fatalf("POST %s: %d %s", path, status, b)
		}
		return env.Resource
	}
	// connect logs in over MQTT 3.1.1; the channel tells when the broker
	// ends the connection.
	connect := func(clientID, username, password string) (paho.Client, chan time.Time, error) {
		lost := make(chan time.Time, 1)
		c := paho.NewClient(paho.NewClientOptions().AddBroker(mqttAddr(t, s)).SetClientID(clientID).SetUsername(username).
			SetPassword(password).SetProtocolVersion(4).SetAutoReconnect(false).
			SetConnectionLostHandler(func(paho.Client, error) { lost <- time.Now() }))
		tok := c.Connect()
		if !tok.WaitTimeout(15 * time.Second) {
			t.Fatalf("CONNECT %s: no answer", username)
		}
		if tok.Error() == nil {
			t.Cleanup(func() { c.Disconnect(0) })
		}
		return c, lost, tok.Error()
	}
	users := fmt.Sprintf("/v2/project/%d/mqttuser", pid)

	gone := post(users, admin, `{"username":"e2e-gone","password":"mqtt-password-1","rights":"read"}`)
	_, lost, err := connect("e2e-gone-1", "e2e-gone", "mqtt-password-1")
	if err != nil {
		t.Fatal(err)
	}
	deleted := time.Now()
	if status, b := s.request("DELETE", fmt.Sprintf("%s/%d", users, gone.ID), admin, ""); status != 200 {
		t.Fatalf("DELETE: %d %s", status, b)
	}
	select {
	case at := <-lost:
		if at.Sub(deleted) > time.Second {
			t.Fatalf("session of the deleted user closed after %s", at.Sub(deleted))
		}
	case <-time.After(3 * time.Second):
		t.Fatal("session of the deleted user still open")
	}

	brief := post(users, admin, `{"username":"e2e-brief","password":"mqtt-password-1","rights":"read","validity":2}`)
	validUntil, err := time.Parse(time.RFC3339, brief.ValidUntil)
	if err != nil {
		t.Fatalf("valid_until %q: %v", brief.ValidUntil, err)
	}
	_, lost, err = connect("e2e-brief-1", "e2e-brief", "mqtt-password-1")
	if err != nil {
		t.Fatal(err)
	}
	select {
	case at := <-lost:
		if at.Before(validUntil) || at.Sub(validUntil) > time.Second {
			t.Fatalf("session closed at valid_until%+v, want within 1 s after it", at.Sub(validUntil))
		}
	case <-time.After(time.Until(validUntil) + 3*time.Second):
		t.Fatal("session of the expired user still open")
	}
	if _, _, err := connect("e2e-brief-2", "e2e-brief", "mqtt-password-1"); !errors.Is(err, pahopackets.ErrorRefusedNotAuthorised) {
		t.Fatalf("CONNECT after expiry: %v, want not authorized", err)
	}

	edgePath := fmt.Sprintf("/operator/projects/%d/edge", pid)
	first := post(edgePath, operator, "")
	_, lost, err = connect("e2e-edge", first.Username, first.Password)
	if err != nil {
		t.Fatal(err)
	}
	second := post(edgePath, operator, "")
	select {
	case <-lost:
	case <-time.After(3 * time.Second):
		t.Fatal("edge session with the old password still open after rotation")
	}
	if _, _, err := connect("e2e-edge", first.Username, first.Password); !errors.Is(err, pahopackets.ErrorRefusedBadUsernameOrPassword) {
		t.Fatalf("old edge password: %v", err)
	}
	if _, _, err := connect("e2e-edge", second.Username, second.Password); err != nil {
		t.Fatalf("new edge password: %v", err)
	}
	if err := s.stop(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
}

// HTTP and MQTT share one login throttle: failed CONNECTs from an address
// count against HTTP logins from it, so a guesser gains nothing by
// alternating.
func TestServeMQTTAndHTTPShareTheLoginThrottle(t *testing.T) {
	s := startServe(t, newDataDir(t), "BDP_LOGIN_ADDRESS_FAILURES=3")
	if status, body := s.request("POST", "/operator/companies", operator,
		`{"name":"acme","admin":{"firstName":"Ada","lastName":"L","email":"ada@acme.test","password":"secret-pw-1"}}`); status != 201 {
		t.Fatalf("create company: %d %s", status, body)
	}
	for i := range 3 {
		c := paho.NewClient(paho.NewClientOptions().AddBroker(mqttAddr(t, s)).SetClientID(fmt.Sprintf("guess-%d", i)).
			SetUsername(fmt.Sprintf("guess-%d", i)).SetPassword("wrong-password").SetProtocolVersion(4).SetAutoReconnect(false))
		if tok := c.Connect(); !tok.WaitTimeout(15*time.Second) || tok.Error() == nil {
			t.Fatalf("guess %d: %v", i, tok.Error())
		}
	}
	// The right password over HTTP, from the same address: refused.
	if status, body := s.request("GET", "/v2/user", basicAuth("ada@acme.test", "secret-pw-1"), ""); status != 429 {
		t.Fatalf("HTTP login after 3 failed CONNECTs from the address: %d %s, want 429", status, body)
	}
	if err := s.stop(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
}
