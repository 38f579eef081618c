package mqtt

import (
	"context"
	"errors"
	"net/netip"
	"strconv"
	"testing"
	"time"

	"github.com/eclipse/paho.golang/paho"

	"github.com/openbdp/bdp/auth"
	"github.com/openbdp/bdp/clock"
	"github.com/openbdp/bdp/store"
)

// After N failed CONNECTs of a username, even the right password is
// refused (0x9F, connection rate exceeded), and the failures count
// against the client's address in the throttle HTTP logins share.
func TestConnectThrottledAfterFailures(t *testing.T) {
	e := newBrokerEnv(t, brokerEnvConfig{throttle: auth.ThrottleConfig{AccountFailures: 3, AddressFailures: 5}})
	e.user("gw", "gw-password", store.MQTTRead)
	e.user("gw2", "gw2-password", store.MQTTRead)
	for i := range 3 {
		if _, code, _ := e.connect5("t-"+strconv.Itoa(i), "gw", "guess-"+strconv.Itoa(i)); code != 0x86 {
			t.Fatalf("guess %d: 0x%02x, want 0x86", i, code)
		}
	}
	if _, code, err := e.connect5("t-right", "gw", "gw-password"); code != 0x9F || err == nil {
		t.Fatalf("right password after 3 failures: 0x%02x (%v), want 0x9F", code, err)
	}
	if got := e.metric("bdp_mqtt_connect_refused_total", "reason", refusedThrottled); got != 1 {
		t.Fatalf("throttled refusals: %v", got)
	}
	if _, err := connect3(t, "tcp://"+e.addr, "t-v3", "gw", "gw-password"); !errors.Is(err, errV3Unavailable) {
		t.Fatalf("3.1.1 client, throttled: %v, want return code 3", err)
	}
	// Another username from the same address is still let in...
	if _, code, err := e.connect5("t-other", "gw2", "gw2-password"); err != nil {
		t.Fatalf("another user: 0x%02x %v", code, err)
	}
	// ...until the address's own limit: the same count an HTTP login
	// from this address is checked against.
	for i := range 2 {
		_, _, _ = e.connect5("t-addr-"+strconv.Itoa(i), "gw2", "guess")
	}
	var th *auth.Throttled
	if err := e.throttle.Check("someone@acme.test", netip.MustParseAddr("127.0.0.1")); !errors.As(err, &th) || th.Scope != auth.ScopeAddress {
		t.Fatalf("HTTP login from the address after 5 failed CONNECTs: %v, want throttled by address", err)
	}
}

// A reconnect with credentials verified recently skips the slow hash; a
// changed password drops them at once (and ends the session).
func TestCredentialCache(t *testing.T) {
	// The notice of the new user drops its cached credentials (any
	// change does); the timer it re-arms tells when that is done.
	start := time.Now().Truncate(time.Millisecond) // as stored: whole microseconds
	fake := clock.NewFake(start)
	e := newBrokerEnv(t, brokerEnvConfig{clock: fake})
	u := e.user("gw", "first-password", store.MQTTWrite, start.Add(time.Hour))
	waitArmed(t, fake, start.Add(time.Hour))
	hashes := func() float64 { return e.metric("bdp_mqtt_password_hashes_total") }
	if _, _, err := e.connect5("cache-1", "gw", "first-password"); err != nil {
		t.Fatal(err)
	}
	if got := hashes(); got != 1 {
		t.Fatalf("hashes after the first CONNECT: %v", got)
	}
	for i := range 5 {
		if _, _, err := e.connect5("cache-again-"+strconv.Itoa(i), "gw", "first-password"); err != nil {
			t.Fatal(err)
		}
	}
	if got := hashes(); got != 1 {
		t.Fatalf("hashes after 5 more CONNECTs with the same credentials: %v, want still 1", got)
	}
	// A wrong password is never served from the cache.
	if _, code, _ := e.connect5("cache-wrong", "gw", "second-password"); code != 0x86 {
		t.Fatalf("wrong password: 0x%02x", code)
	}
	c, _, err := e.connect5("cache-session", "gw", "first-password")
	if err != nil {
		t.Fatal(err)
	}
	newHash := e.hash("second-password")
	if _, err := e.st.UpdateMQTTUser(context.Background(), e.p, u.ID, &newHash, nil, nil, nil); err != nil {
		t.Fatal(err)
	}
	if code, _ := c.waitDisconnected(t, 2*time.Second); code != 0x98 {
		t.Fatalf("session after the password changed: DISCONNECT 0x%02x, want 0x98", code)
	}
	if _, code, _ := e.connect5("cache-old", "gw", "first-password"); code != 0x86 {
		t.Fatalf("old password after the change: 0x%02x, want 0x86", code)
	}
	if _, _, err := e.connect5("cache-new", "gw", "second-password"); err != nil {
		t.Fatalf("new password: %v", err)
	}
}

// Deleting an MQTT user (DELETE route) closes its sessions at once;
// another user's session stays.
func TestDeleteClosesSessions(t *testing.T) {
	e := newBrokerEnv(t, brokerEnvConfig{})
	gone := e.user("gone", "gone-password", store.MQTTRead)
	e.user("stays", "stays-password", store.MQTTRead)
	c1, _, err := e.connect5("del-1", "gone", "gone-password")
	if err != nil {
		t.Fatal(err)
	}
	c2, _, err := e.connect5("del-2", "gone", "gone-password")
	if err != nil {
		t.Fatal(err)
	}
	other, _, err := e.connect5("del-other", "stays", "stays-password")
	if err != nil {
		t.Fatal(err)
	}
	deleted := time.Now()
	if err := e.st.DeleteMQTTUser(context.Background(), e.p, gone.ID); err != nil {
		t.Fatal(err)
	}
	for _, c := range []*client5{c1, c2} {
		code, at := c.waitDisconnected(t, 2*time.Second)
		if code != 0x98 || at.Sub(deleted) > time.Second {
			t.Fatalf("session of the deleted user: 0x%02x after %s, want 0x98 within 1 s", code, at.Sub(deleted))
		}
	}
	if _, code, _ := e.connect5("del-again", "gone", "gone-password"); code != 0x86 {
		t.Fatalf("deleted user connects: 0x%02x", code)
	}
	if r := other.subscribe(t, "project/"+strconv.FormatInt(e.p, 10)+"/#"); r >= 0x80 {
		t.Fatalf("the other user's session: SUBACK 0x%02x", r)
	}
	if n := e.b.Sessions().Len(); n != 1 {
		t.Fatalf("sessions left: %d, want the other user's only", n)
	}
}

// Edge credentials: rotating the password (operator POST again) closes
// the old session; the old password is refused, the new one works.
// Shrinking a user's rights from write to read closes its sessions too.
func TestRotationAndRightsCloseSessions(t *testing.T) {
	e := newBrokerEnv(t, brokerEnvConfig{})
	ctx := context.Background()
	edge := store.EdgeUsername(e.p)
	if _, err := e.st.PutEdgeCredentials(ctx, e.p, e.hash("edge-first")); err != nil {
		t.Fatal(err)
	}
	c, _, err := e.connect5("edge-device", edge, "edge-first")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := e.st.PutEdgeCredentials(ctx, e.p, e.hash("edge-second")); err != nil {
		t.Fatal(err)
	}
	if code, _ := c.waitDisconnected(t, 2*time.Second); code != 0x98 {
		t.Fatalf("edge session after rotation: DISCONNECT 0x%02x, want 0x98", code)
	}
	if _, code, _ := e.connect5("edge-device", edge, "edge-first"); code != 0x86 {
		t.Fatalf("old edge password: 0x%02x, want 0x86", code)
	}
	if _, _, err := e.connect5("edge-device", edge, "edge-second"); err != nil {
		t.Fatalf("new edge password: %v", err)
	}

	w := e.user("writer", "writer-password", store.MQTTWrite)
	c, _, err = e.connect5("writer-1", "writer", "writer-password")
	if err != nil {
		t.Fatal(err)
	}
	read := store.MQTTRead
	if _, err := e.st.UpdateMQTTUser(ctx, e.p, w.ID, nil, &read, nil, nil); err != nil {
		t.Fatal(err)
	}
	if code, _ := c.waitDisconnected(t, 2*time.Second); code != 0x98 {
		t.Fatalf("writer after its rights shrank: DISCONNECT 0x%02x, want 0x98", code)
	}
	// Reconnected, it may subscribe but no longer publish.
	c, _, err = e.connect5("writer-1", "writer", "writer-password")
	if err != nil {
		t.Fatal(err)
	}
	if r := c.publish(t, "project/"+strconv.FormatInt(e.p, 10)+"/datapoint/a", `{"time":"2026-01-01T00:00:00Z","value":1}`); r != 0x87 {
		t.Fatalf("PUBLISH with read rights: PUBACK 0x%02x, want 0x87", r)
	}
}

// A client id whose session belongs to another MQTT user is refused
// (taking it over would inherit that user's subscriptions); the same
// user takes its own session over.
func TestClientIDOfAnotherUserRefused(t *testing.T) {
	e := newBrokerEnv(t, brokerEnvConfig{})
	e.user("alice", "alice-password", store.MQTTRead)
	e.userOf(e.q, e.creatorQ, "mallory", "mallory-password", store.MQTTRead)
	first, _, err := e.connect5("shared-id", "alice", "alice-password")
	if err != nil {
		t.Fatal(err)
	}
	if _, code, _ := e.connect5("shared-id", "mallory", "mallory-password"); code != 0x85 {
		t.Fatalf("another user's client id: 0x%02x, want 0x85", code)
	}
	if got := e.metric("bdp_mqtt_connect_refused_total", "reason", refusedClientID); got != 1 {
		t.Fatalf("client id refusals: %v", got)
	}
	if _, _, err := e.connect5("shared-id", "alice", "alice-password"); err != nil {
		t.Fatalf("the same user again: %v", err)
	}
	if code, _ := first.waitDisconnected(t, 2*time.Second); code != 0x8E {
		t.Fatalf("the first connection: DISCONNECT 0x%02x, want 0x8E (session taken over)", code)
	}
}

// A session kept for a disconnected client is discarded when its user is
// deleted: nothing of it stays in the broker, and a new user of the same
// project does not inherit its subscriptions.
func TestDeleteDiscardsKeptSession(t *testing.T) {
	e := newBrokerEnv(t, brokerEnvConfig{})
	u := e.user("away", "away-password", store.MQTTRead)
	c, _, err := e.connect5("kept-id", "away", "away-password", connect5Options{keep: true})
	if err != nil {
		t.Fatal(err)
	}
	if r := c.subscribe(t, "project/"+strconv.FormatInt(e.p, 10)+"/#"); r >= 0x80 {
		t.Fatalf("SUBSCRIBE: 0x%02x", r)
	}
	if err := c.Disconnect(&paho.Disconnect{}); err != nil {
		t.Fatal(err)
	}
	waitUntil(t, func() bool { cl, ok := e.b.server.Clients.Get("kept-id"); return ok && cl.Closed() })
	if n := e.b.Sessions().Len(); n != 1 {
		t.Fatalf("kept sessions: %d, want 1", n)
	}
	if err := e.st.DeleteMQTTUser(context.Background(), e.p, u.ID); err != nil {
		t.Fatal(err)
	}
	waitUntil(t, func() bool { _, ok := e.b.server.Clients.Get("kept-id"); return !ok && e.b.Sessions().Len() == 0 })
	if subs := e.b.server.Topics.Subscribers("project/" + strconv.FormatInt(e.p, 10) + "/datapoint/a"); len(subs.Subscriptions) != 0 {
		t.Fatalf("subscriptions of the deleted user's session remain: %v", subs.Subscriptions)
	}
}

// waitUntil polls cond for up to 2 s.
func waitUntil(t *testing.T, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(2 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatal("condition not met within 2 s")
		}
		time.Sleep(10 * time.Millisecond)
	}
}
