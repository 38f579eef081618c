package mqtt

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/openbdp/bdp/codec"
	"github.com/openbdp/bdp/mqtt/mosquittotest"
	"github.com/openbdp/bdp/store"
)

// Two bdp nodes on one broker split what gateways publish (the shared
// subscription: each message stored by one node), and neither ingests
// live data, its own or the other's.
func TestExternalNodesShareIngestionAndNeverIngestLiveData(t *testing.T) {
	f := newExternalFixture(t)
	second := f.startExternal(t, "bdp-test-2")
	pid, admin := f.company(t, "acme")
	f.mqttUser(t, store.MQTTUser{ProjectID: pid, Username: "gw", Rights: store.MQTTWrite, CreatedBy: admin}, "gw-password")
	gw := f.mustConnect(t, "gw", "gw-password")
	const n = 200
	at := time.Date(2026, 1, 2, 0, 0, 0, 0, time.UTC)
	for i := range n {
		gw.publish(t, codec.DatapointTopic(pid, "shared"), fmt.Sprintf(`{"time":%q,"value":%d}`, at.Add(time.Duration(i)*time.Second).Format(time.RFC3339), i))
	}
	eventually(t, "every publish stored", func() bool { return f.stored(t, pid, "shared") == n })
	ingested := func() (float64, float64) {
		return testutil.ToFloat64(f.ext.metrics.ingested), testutil.ToFloat64(second.metrics.ingested)
	}
	eventually(t, "every publish acknowledged", func() bool { a, b := ingested(); return a+b == n })
	if a, b := ingested(); a == 0 || b == 0 {
		t.Errorf("the nodes ingested %v and %v messages; the shared subscription should split them", a, b)
	}

	for i, node := range []*External{f.ext, second} {
		if err := node.Publish(codec.DatapointTopic(pid, fmt.Sprintf("live%d", i)), []byte(`{"time":"2026-01-02T03:04:05Z","value":1}`), 1); err != nil {
			t.Fatal(err)
		}
	}
	// A marker the gateway sends after the live data: once it is stored,
	// the live data has passed both nodes' subscriptions.
	gw.publish(t, codec.DatapointTopic(pid, "marker"), `{"time":"2026-01-02T03:04:05Z","value":1}`)
	eventually(t, "the marker stored", func() bool { return f.stored(t, pid, "marker") == 1 })
	for i := range 2 {
		if got := f.stored(t, pid, fmt.Sprintf("live%d", i)); got != 0 {
			t.Errorf("live data of node %d was ingested: %d observations", i, got)
		}
	}
	if a, b := ingested(); a+b != n+1 {
		t.Errorf("the nodes acknowledged %v messages after the live data and the marker, want %d", a+b, n+1)
	}
}

// While the broker is away bdp keeps running; when it is back bdp
// reconnects and syncs: a user deleted meanwhile loses its client, the
// others keep working, ingestion goes on.
func TestExternalResyncsWhenTheBrokerIsBack(t *testing.T) {
	f := newExternalFixture(t)
	ctx := context.Background()
	pid, admin := f.company(t, "acme")
	gone := f.mqttUser(t, store.MQTTUser{ProjectID: pid, Username: "gone", Rights: store.MQTTRead, CreatedBy: admin}, "gone-password")
	f.mqttUser(t, store.MQTTUser{ProjectID: pid, Username: "gw", Rights: store.MQTTWrite, CreatedBy: admin}, "gw-password")
	f.broker.Stop(t)
	if err := f.store.DeleteMQTTUser(ctx, pid, gone.ID); err != nil {
		t.Fatal(err)
	}
	time.Sleep(300 * time.Millisecond) // the notice arrives while the broker is away
	f.broker.Resume(t)
	eventually(t, "the user deleted while the broker was away is refused", func() bool {
		mc, err := f.connect(t, "gone", "gone-password")
		if err == nil {
			mc.c.Disconnect(0)
		}
		return err != nil
	})
	gw := f.mustConnect(t, "gw", "gw-password")
	gw.publish(t, codec.DatapointTopic(pid, "after"), `{"time":"2026-01-02T03:04:05Z","value":1}`)
	eventually(t, "ingestion after the broker is back", func() bool { return f.stored(t, pid, "after") == 1 })
}

// What is no datapoint's topic, no observation or an observation the
// pipeline refuses is dropped and counted by reason; it holds nothing up
// (acknowledgements go out in order, so one left pending would).
func TestExternalIngestDropsBadMessagesAndGoesOn(t *testing.T) {
	f := newExternalFixture(t)
	pid, admin := f.company(t, "acme")
	f.mqttUser(t, store.MQTTUser{ProjectID: pid, Username: "gw", Rights: store.MQTTWrite, CreatedBy: admin}, "gw-password")
	gw := f.mustConnect(t, "gw", "gw-password")
	ok := `{"time":"2026-01-02T03:04:05Z","value":1}`
	for _, c := range []struct{ topic, payload string }{
		{fmt.Sprintf("project/%d/datapoint/bad%%zzescape", pid), ok},                   // topic
		{fmt.Sprintf("project/%d/datapoint/", pid) + "x/y", ok},                        // topic: a / not escaped
		{codec.DatapointTopic(pid, "p1"), `{"time":"2026-01-02T03:04:05Z"}`},           // payload
		{codec.DatapointTopic(pid, "p2"), `not json`},                                  // payload
		{codec.DatapointTopic(pid, "p3"), `{"time":"1800-01-02T03:04:05Z","value":1}`}, // invalid
	} {
		gw.publish(t, c.topic, c.payload)
	}
	gw.publish(t, codec.DatapointTopic(pid, "good"), ok)
	eventually(t, "the good message stored after the bad ones", func() bool { return f.stored(t, pid, "good") == 1 })
	for reason, want := range map[string]float64{dropTopic: 2, dropPayload: 2, dropInvalid: 1} {
		if got := testutil.ToFloat64(f.ext.metrics.dropped.WithLabelValues(reason)); got != want {
			t.Errorf("dropped for %s: %v, want %v", reason, got, want)
		}
	}
	for _, id := range []string{"p1", "p2", "p3"} {
		if n := f.stored(t, pid, id); n != 0 {
			t.Errorf("%s: %d observations stored from a bad message", id, n)
		}
	}
}

// A wrong admin password is a configuration error, reported at once.
func TestExternalRefusedAdminFailsFast(t *testing.T) {
	b := mosquittotest.Start(t)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	st, err := store.Open(ctx, testCluster.TestDatabase(t))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(st.Close)
	start := time.Now()
	_, err = StartExternal(ctx, ExternalConfig{URL: b.URL, AdminUser: b.AdminUser, AdminPassword: "wrong-password",
		ClientID: "bdp-refused", Store: st})
	if err == nil || !strings.Contains(err.Error(), "refused bdp's admin client") {
		t.Fatalf("start with a wrong admin password: %v", err)
	}
	if d := time.Since(start); d > 5*time.Second {
		t.Errorf("the refusal took %s to report", d)
	}
}

// The Broker interface as the later edge connection uses it: the platform
// subscribes to a project's edge tree and publishes into it; the edge
// device, on its credentials, gets what the platform sends and reaches the
// platform's subscription, until it unsubscribes.
func TestExternalSubscribeAndPublishOnTheEdgeTree(t *testing.T) {
	f := newExternalFixture(t)
	pid, _ := f.company(t, "acme")
	edge := f.mqttUser(t, store.MQTTUser{ProjectID: pid, Edge: true}, "edge-password")
	device := f.mustConnect(t, edge.Username, "edge-password")
	if !device.subscribe(t, fmt.Sprintf("edge/%d/#", pid)) {
		t.Fatal("the device may not subscribe to its tree")
	}
	var mu sync.Mutex
	var got []string
	unsubscribe, err := f.ext.Subscribe(fmt.Sprintf("edge/%d/up/#", pid), func(topic string, payload []byte) {
		mu.Lock()
		got = append(got, topic+" "+string(payload))
		mu.Unlock()
	})
	if err != nil {
		t.Fatal(err)
	}
	count := func() int { mu.Lock(); defer mu.Unlock(); return len(got) }
	device.publish(t, fmt.Sprintf("edge/%d/up/status", pid), "ok")
	eventually(t, "the platform gets the device's message", func() bool { return count() == 1 })
	down := fmt.Sprintf("edge/%d/down/command", pid)
	if err := f.ext.Publish(down, []byte("restart"), 1); err != nil {
		t.Fatal(err)
	}
	eventually(t, "the device gets the platform's message", func() bool { return len(device.received(down)) == 1 })
	unsubscribe()
	device.publish(t, fmt.Sprintf("edge/%d/up/status", pid), "again")
	device.publish(t, down, "echo") // on a topic the device receives too: a marker
	eventually(t, "the device's marker", func() bool { return len(device.received(down)) == 2 })
	time.Sleep(100 * time.Millisecond)
	if n := count(); n != 1 {
		t.Errorf("after unsubscribe the platform got %d messages, want 1: %v", n, got)
	}
}
