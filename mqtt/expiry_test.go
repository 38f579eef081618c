package mqtt

import (
	"context"
	"runtime"
	"sync"
	"testing"
	"time"

	"github.com/openbdp/bdp/store"
)

// fakeClock is the broker's clock and timer factory under a test's
// control: time moves when the test says, and a timer fires when the
// test fires it.
type fakeClock struct {
	mu     sync.Mutex
	now    time.Time
	armed  []*fakeTimer
	notify chan struct{} // a timer was armed
}

type fakeTimer struct {
	d  time.Duration
	c  chan time.Time
	mu sync.Mutex
	on bool
}

func newFakeClock(now time.Time) *fakeClock {
	return &fakeClock{now: now, notify: make(chan struct{}, 100)}
}

func (f *fakeClock) Now() time.Time {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.now
}

func (f *fakeClock) set(t time.Time) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.now = t
}

func (f *fakeClock) NewTimer(d time.Duration) Timer {
	t := &fakeTimer{d: d, c: make(chan time.Time, 1), on: true}
	f.mu.Lock()
	f.armed = append(f.armed, t)
	f.mu.Unlock()
	f.notify <- struct{}{}
	return t
}

func (t *fakeTimer) C() <-chan time.Time { return t.c }

func (t *fakeTimer) Stop() bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	was := t.on
	t.on = false
	return was
}

// waitArmed waits for a timer of duration d to be armed and still on.
func (f *fakeClock) waitArmed(tb testing.TB, d time.Duration) *fakeTimer {
	tb.Helper()
	deadline := time.After(5 * time.Second)
	for {
		f.mu.Lock()
		if n := len(f.armed); n > 0 {
			last := f.armed[n-1]
			last.mu.Lock()
			on := last.on
			last.mu.Unlock()
			if on && last.d == d {
				f.mu.Unlock()
				return last
			}
		}
		f.mu.Unlock()
		select {
		case <-f.notify:
		case <-deadline:
			tb.Fatalf("no timer of %s armed (armed: %d)", d, len(f.armed))
		}
	}
}

// fire fires a timer at the clock's time.
func (f *fakeClock) fire(t *fakeTimer) {
	t.mu.Lock()
	t.on = false
	t.mu.Unlock()
	t.c <- f.Now()
}

// The expiry timer, driven by an injected clock: one timer for the next
// valid_until of any user (re-armed when users change); when it fires the
// expired user's row is deleted and its session closed (0x87); a later
// CONNECT with the right password is told 0x87, not 0x86.
func TestExpiryWithInjectedClock(t *testing.T) {
	start := time.Now().Truncate(time.Millisecond)
	clock := newFakeClock(start)
	e := newBrokerEnv(t, brokerEnvConfig{now: clock.Now, newTimer: clock.NewTimer})
	ctx := context.Background()
	// Nobody expires yet: no timer is armed at all.
	later := e.user("later", "later-password", store.MQTTRead, start.Add(2*time.Hour))
	// The new user re-arms the timer for its valid_until.
	clock.waitArmed(t, 2*time.Hour)
	soon := e.user("soon", "soon-password", store.MQTTRead, start.Add(30*time.Minute))
	timer := clock.waitArmed(t, 30*time.Minute)
	c, _, err := e.connect5("exp-soon", "soon", "soon-password")
	if err != nil {
		t.Fatal(err)
	}
	other, _, err := e.connect5("exp-later", "later", "later-password")
	if err != nil {
		t.Fatal(err)
	}

	clock.set(start.Add(30 * time.Minute))
	clock.fire(timer)
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
	clock.waitArmed(t, 90*time.Minute)
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
