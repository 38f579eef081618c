package mqtt

import (
	"testing"
	"time"

	"github.com/eclipse/paho.golang/paho"

	"github.com/openbdp/bdp/store"
)

// The embedded broker tells at once when a project's edge device connects
// and when its last connection ends; a connection taken over by the same
// client id, one of two connections, and other users' connections tell
// nothing.
func TestWatchEdgeDevices(t *testing.T) {
	e := newBrokerEnv(t, brokerEnvConfig{})
	if _, err := e.st.PutEdgeCredentials(t.Context(), e.p, e.hash("edge-password")); err != nil {
		t.Fatal(err)
	}
	e.user("reader", "reader-password", store.MQTTRead)
	type seen struct {
		project   int64
		connected bool
	}
	events := make(chan seen, 16)
	stop := e.b.Sessions().WatchEdgeDevices(func(p int64, c bool) { events <- seen{p, c} })
	defer stop()
	want := func(what string, w seen) {
		t.Helper()
		select {
		case got := <-events:
			if got != w {
				t.Fatalf("%s: got %+v, want %+v", what, got, w)
			}
		case <-time.After(5 * time.Second):
			t.Fatalf("%s: nothing told, want %+v", what, w)
		}
	}
	quiet := func(what string) {
		t.Helper()
		select {
		case got := <-events:
			t.Fatalf("%s: told %+v, want nothing", what, got)
		case <-time.After(300 * time.Millisecond):
		}
	}
	user := store.EdgeUsername(e.p)
	first, _, err := e.connect5("device-a", user, "edge-password")
	if err != nil {
		t.Fatal(err)
	}
	want("connect", seen{e.p, true})
	// A reconnect with the same client id takes the session over: the
	// old connection's end says nothing about the device.
	second, _, err := e.connect5("device-a", user, "edge-password")
	if err != nil {
		t.Fatal(err)
	}
	want("takeover", seen{e.p, true})
	first.waitDisconnected(t, 5*time.Second)
	quiet("the taken-over connection ended")
	other, _, err := e.connect5("device-b", user, "edge-password")
	if err != nil {
		t.Fatal(err)
	}
	want("second connection", seen{e.p, true})
	if _, _, err := e.connect5("reader-1", "reader", "reader-password"); err != nil {
		t.Fatal(err)
	}
	quiet("a user's connection")
	if err := second.Disconnect(&paho.Disconnect{}); err != nil {
		t.Fatal(err)
	}
	quiet("one of two connections ended")
	if err := other.Disconnect(&paho.Disconnect{}); err != nil {
		t.Fatal(err)
	}
	want("the last connection ended", seen{e.p, false})

	// A kept session's connection that ends leaves the device offline
	// too: nothing reaches it until it is back.
	kept, _, err := e.connect5("device-c", user, "edge-password", connect5Options{keep: true})
	if err != nil {
		t.Fatal(err)
	}
	want("kept session", seen{e.p, true})
	if err := kept.Disconnect(&paho.Disconnect{}); err != nil {
		t.Fatal(err)
	}
	want("kept session's connection ended", seen{e.p, false})
}
