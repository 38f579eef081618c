package mqtt

import (
	"context"
	"runtime"
	"testing"
	"time"

	"github.com/openbdp/bdp/clock"
	"github.com/openbdp/bdp/store"
)

// waitArmed waits until the broker's one expiry timer on c is armed for at.
func waitArmed(tb testing.TB, c *clock.Fake, at time.Time) {
	tb.Helper()
	for deadline := time.Now().Add(5 * time.Second); ; time.Sleep(time.Millisecond) {
		pending := c.Pending()
		if len(pending) == 1 && pending[0].Equal(at) {
			return
		}
		if time.Now().After(deadline) {
			tb.Fatalf("timers armed for %v, want one for %v", pending, at)
		}
	}
}

// The expiry timer, driven by an injected clock: one timer for the next
// valid_until of any user (re-armed when users change); when it fires the
// expired user's row is deleted and its session closed (0x87); a later
// CONNECT with the right password is told 0x87, not 0x86.
func TestExpiryWithInjectedClock(t *testing.T) {
	start := time.Now().Truncate(time.Millisecond)
	fake := clock.NewFake(start)
	e := newBrokerEnv(t, brokerEnvConfig{clock: fake})
	ctx := context.Background()
	// Nobody expires yet: no timer is armed at all.
	later := e.user("later", "later-password", store.MQTTRead, start.Add(2*time.Hour))
	// The new user re-arms the timer for its valid_until.
	waitArmed(t, fake, start.Add(2*time.Hour))
	soon := e.user("soon", "soon-password", store.MQTTRead, start.Add(30*time.Minute))
	waitArmed(t, fake, start.Add(30*time.Minute))
	c, _, err := e.connect5("exp-soon", "soon", "soon-password")
	if err != nil {
		t.Fatal(err)
	}
	other, _, err := e.connect5("exp-later", "later", "later-password")
	if err != nil {
		t.Fatal(err)
	}

	fake.Set(start.Add(30 * time.Minute)) // the timer fires
	if code, _ := c.waitDisconnected(t, 2*time.Second); code != 0x87 {
		t.Fatalf("expired session: DISCONNECT 0x%02x, want 0x87", code)
	}
	if us, err := e.st.MQTTUsers(ctx, e.p); err != nil || len(us) != 1 || us[0].ID != later.ID {
		t.Fatalf("users after expiry: %+v %v, want only %d", us, err, later.ID)
	}
	if _, err := e.st.MQTTUser(ctx, e.p, soon.ID); err == nil {
		t.Fatal("the expired row is still there")
	}
	// Armed anew for the next expiry, 90 minutes on.
	waitArmed(t, fake, start.Add(2*time.Hour))
	if _, code, _ := e.connect5("exp-soon-again", "soon", "soon-password"); code != 0x87 {
		t.Fatalf("expired user connects: 0x%02x, want 0x87", code)
	}
	if _, code, _ := e.connect5("exp-soon-wrong", "soon", "not-the-password"); code != 0x86 {
		t.Fatalf("expired user with a wrong password: 0x%02x, want 0x86", code)
	}
	if r := other.subscribe(t, "project/#"); r != 0x87 {
		t.Fatalf("the other user's session is not what it was: SUBACK 0x%02x", r)
	}
	if n := e.b.Sessions().Len(); n != 1 {
		t.Fatalf("sessions: %d, want the unexpired user's only", n)
	}
}

// A real 2-s validity: the session is closed within 1 s of valid_until
// and the row is gone.
func TestExpiryRealTwoSeconds(t *testing.T) {
	e := newBrokerEnv(t, brokerEnvConfig{})
	validUntil := time.Now().Add(2 * time.Second)
	u := e.user("brief", "brief-password", store.MQTTRead, validUntil)
	c, _, err := e.connect5("brief-1", "brief", "brief-password")
	if err != nil {
		t.Fatal(err)
	}
	code, at := c.waitDisconnected(t, 4*time.Second)
	if code != 0x87 || at.Before(validUntil) || at.Sub(validUntil) > time.Second {
		t.Fatalf("DISCONNECT 0x%02x at valid_until%+v, want 0x87 within 1 s after it", code, at.Sub(validUntil))
	}
	if _, err := e.st.MQTTUser(context.Background(), e.p, u.ID); err == nil {
		t.Fatal("row still readable after expiry")
	}
	if next, ok, err := e.st.NextMQTTUserExpiry(context.Background()); err != nil || ok {
		t.Fatalf("an expiry is still due (%v %v): the row was not deleted", next, err)
	}
}

// Close disconnects the clients (MQTT 5: 0x8B) and joins every goroutine
// the broker started.
func TestCloseJoinsGoroutines(t *testing.T) {
	e := newBrokerEnv(t, brokerEnvConfig{wsAddr: "127.0.0.1:0"})
	e.user("gw", "gw-password", store.MQTTRead)
	before := runtime.NumGoroutine()
	c, _, err := e.connect5("close-1", "gw", "gw-password")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := connect3(t, "ws://"+e.b.Addresses()["mqtt_ws"], "close-ws", "gw", "gw-password"); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := e.b.Close(ctx); err != nil {
		t.Fatal(err)
	}
	if code, _ := c.waitDisconnected(t, 2*time.Second); code != 0x8B {
		t.Fatalf("DISCONNECT 0x%02x, want 0x8B", code)
	}
	// The broker's goroutines (listeners, connections, expiry timer,
	// change watch) are gone; the test's own clients may take a moment.
	deadline := time.Now().Add(3 * time.Second)
	for runtime.NumGoroutine() > before-4 && time.Now().Before(deadline) {
		time.Sleep(20 * time.Millisecond)
	}
	if n := runtime.NumGoroutine(); n > before-4 {
		buf := make([]byte, 1<<16)
		t.Fatalf("%d goroutines after Close, %d with the broker serving before the clients:\n%s", n, before, buf[:runtime.Stack(buf, true)])
	}
}
