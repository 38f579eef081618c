package mqtt

import (
	"context"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/eclipse/paho.golang/paho"
	pahov3 "github.com/eclipse/paho.mqtt.golang"

	"github.com/openbdp/bdp/store"
)

// SUBSCRIBE only inside the account's topic filter: its own project's
// tree for users, edge/{project_id}/# for the edge device; never another
// project's, a wildcard above the project, $SYS or a shared subscription.
func TestSubscribeInsideTopicFilterOnly(t *testing.T) {
	e := newBrokerEnv(t, brokerEnvConfig{})
	e.user("reader", "reader-password", store.MQTTRead)
	if _, err := e.st.PutEdgeCredentials(t.Context(), e.p, e.hash("edge-password")); err != nil {
		t.Fatal(err)
	}
	p, q := strconv.FormatInt(e.p, 10), strconv.FormatInt(e.q, 10)
	reader, _, err := e.connect5("acl-reader", "reader", "reader-password")
	if err != nil {
		t.Fatal(err)
	}
	edge, _, err := e.connect5("acl-edge", store.EdgeUsername(e.p), "edge-password")
	if err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		who    string
		c      *client5
		filter string
		ok     bool
	}{
		{"reader", reader, "project/" + p + "/datapoint/room-1", true},
		{"reader", reader, "project/" + p + "/#", true},
		{"reader", reader, "project/" + p + "/datapoint/+", true},
		{"reader", reader, "project/" + q + "/#", false},
		{"reader", reader, "project/" + q + "/datapoint/room-1", false},
		{"reader", reader, "#", false},
		{"reader", reader, "+/" + p + "/#", false},
		{"reader", reader, "project/+/datapoint/room-1", false},
		{"reader", reader, "project/#", false},
		{"reader", reader, "$SYS/#", false},
		{"reader", reader, "$share/g/project/" + p + "/#", false},
		{"reader", reader, "edge/" + p + "/#", false},
		{"edge", edge, "edge/" + p + "/#", true},
		{"edge", edge, "edge/" + p + "/command", true},
		{"edge", edge, "edge/" + q + "/#", false},
		{"edge", edge, "project/" + p + "/#", false},
	}
	refused := 0
	for _, c := range cases {
		r := c.c.subscribe(t, c.filter)
		if c.ok != (r < 0x80) || !c.ok && r != 0x87 && r != 0x9E {
			t.Errorf("%s SUBSCRIBE %s: SUBACK 0x%02x, want ok=%v (refusals 0x87, or 0x9E for $share)", c.who, c.filter, r, c.ok)
		}
		if !c.ok {
			refused++
		}
	}
	if got := e.metric("bdp_mqtt_acl_refused_total", "action", "subscribe"); int(got) != refused {
		t.Errorf("subscribe refusals counted: %v, want %d", got, refused)
	}
	// An MQTT 3.1.1 client gets the failure return code 0x80.
	v3, err := connect3(t, "tcp://"+e.addr, "acl-v3", "reader", "reader-password")
	if err != nil {
		t.Fatal(err)
	}
	tok := v3.Subscribe("project/"+q+"/#", 1, nil)
	tok.WaitTimeout(5 * time.Second)
	if codes := tok.(*pahov3.SubscribeToken).Result(); codes["project/"+q+"/#"] != 0x80 {
		t.Fatalf("3.1.1 SUBSCRIBE to another project: %v, want 0x80", codes)
	}
}

// PUBLISH needs write rights and a topic inside the account's tree; what
// is published reaches the project's subscribers and nobody else's, and
// the platform's own client may publish and subscribe anywhere.
func TestPublishRightsAndDelivery(t *testing.T) {
	e := newBrokerEnv(t, brokerEnvConfig{})
	e.user("reader", "reader-password", store.MQTTRead)
	e.user("writer", "writer-password", store.MQTTWrite)
	e.userOf(e.q, e.creatorQ, "q-reader", "q-reader-password", store.MQTTRead)
	if _, err := e.st.PutEdgeCredentials(t.Context(), e.p, e.hash("edge-password")); err != nil {
		t.Fatal(err)
	}
	p, q := strconv.FormatInt(e.p, 10), strconv.FormatInt(e.q, 10)
	reader, _, _ := e.connect5("pub-reader", "reader", "reader-password")
	writer, _, _ := e.connect5("pub-writer", "writer", "writer-password")
	qReader, _, _ := e.connect5("pub-q-reader", "q-reader", "q-reader-password")
	edge, _, err := e.connect5("pub-edge", store.EdgeUsername(e.p), "edge-password")
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		c      *client5
		filter string
	}{{reader, "project/" + p + "/#"}, {qReader, "project/" + q + "/#"}} {
		if r := c.c.subscribe(t, c.filter); r >= 0x80 {
			t.Fatalf("SUBSCRIBE %s: 0x%02x", c.filter, r)
		}
	}
	var mu sync.Mutex
	var platform []string
	unsubscribe, err := e.b.Subscribe("#", func(topic string, _ []byte) {
		mu.Lock()
		defer mu.Unlock()
		platform = append(platform, topic)
	})
	if err != nil {
		t.Fatal(err)
	}
	defer unsubscribe()

	cases := []struct {
		who   string
		c     *client5
		topic string
		ok    bool
	}{
		{"reader", reader, "project/" + p + "/datapoint/a", false},
		{"writer", writer, "project/" + p + "/datapoint/a", true},
		{"writer", writer, "project/" + q + "/datapoint/a", false},
		{"writer", writer, "edge/" + p + "/command", false},
		{"edge", edge, "edge/" + p + "/status", true},
		{"edge", edge, "edge/" + q + "/status", false},
		{"edge", edge, "project/" + p + "/datapoint/a", false},
	}
	refused := 0
	for _, c := range cases {
		r := c.c.publish(t, c.topic, `{"time":"2026-01-01T00:00:00Z","value":1}`)
		if c.ok != (r < 0x80) || !c.ok && r != 0x87 {
			t.Errorf("%s PUBLISH %s: PUBACK 0x%02x, want ok=%v (refusal 0x87)", c.who, c.topic, r, c.ok)
		}
		if !c.ok {
			refused++
		}
	}
	if got := e.metric("bdp_mqtt_acl_refused_total", "action", "publish"); int(got) != refused {
		t.Errorf("publish refusals counted: %v, want %d", got, refused)
	}
	select {
	case m := <-reader.received:
		if m.Topic != "project/"+p+"/datapoint/a" {
			t.Fatalf("reader of p received %s", m.Topic)
		}
	case <-time.After(2 * time.Second):
		t.Fatal("the writer's message did not reach the project's reader")
	}
	// The platform publishes into q: q's reader gets it, p's does not.
	if err := e.b.Publish("project/"+q+"/datapoint/b", []byte(`{"time":"2026-01-01T00:00:00Z","value":2}`), 1); err != nil {
		t.Fatal(err)
	}
	select {
	case m := <-qReader.received:
		if m.Topic != "project/"+q+"/datapoint/b" {
			t.Fatalf("reader of q received %s", m.Topic)
		}
	case <-time.After(2 * time.Second):
		t.Fatal("the platform's message did not reach q's reader")
	}
	select {
	case m := <-reader.received:
		t.Fatalf("reader of p received %s", m.Topic)
	case m := <-qReader.received:
		t.Fatalf("reader of q received more: %s", m.Topic)
	case <-time.After(300 * time.Millisecond):
	}
	// The platform's subscription saw the writer's, the edge device's and
	// its own messages, none of the refused ones.
	want := map[string]bool{"project/" + p + "/datapoint/a": true, "edge/" + p + "/status": true, "project/" + q + "/datapoint/b": true}
	mu.Lock()
	defer mu.Unlock()
	if len(platform) != len(want) {
		t.Fatalf("platform subscription got %v, want %v", platform, want)
	}
	for _, topic := range platform {
		if !want[topic] {
			t.Fatalf("platform subscription got %v, want %v", platform, want)
		}
	}
}

// MQTT over WebSocket: a paho connection over ws:// logs in, subscribes
// and receives.
func TestWebSocketListener(t *testing.T) {
	e := newBrokerEnv(t, brokerEnvConfig{wsAddr: "127.0.0.1:0"})
	e.user("browser", "browser-password", store.MQTTRead)
	ws := e.b.Addresses()["mqtt_ws"]
	if ws == "" {
		t.Fatalf("addresses: %v", e.b.Addresses())
	}
	c, err := connect3(t, "ws://"+ws+"/mqtt", "ws-page", "browser", "browser-password")
	if err != nil {
		t.Fatal(err)
	}
	got := make(chan string, 1)
	topic := "project/" + strconv.FormatInt(e.p, 10) + "/datapoint/room-1"
	tok := c.Subscribe("project/"+strconv.FormatInt(e.p, 10)+"/#", 1, func(_ pahov3.Client, m pahov3.Message) { got <- m.Topic() })
	if !tok.WaitTimeout(5*time.Second) || tok.Error() != nil {
		t.Fatalf("SUBSCRIBE over WebSocket: %v", tok.Error())
	}
	if err := e.b.Publish(topic, []byte(`{"time":"2026-01-01T00:00:00Z","value":1}`), 1); err != nil {
		t.Fatal(err)
	}
	select {
	case m := <-got:
		if m != topic {
			t.Fatalf("received %s", m)
		}
	case <-time.After(3 * time.Second):
		t.Fatal("nothing received over WebSocket")
	}
	if _, err := connect3(t, "ws://"+ws+"/mqtt", "ws-wrong", "browser", "wrong-password"); err == nil {
		t.Fatal("wrong password over WebSocket was let in")
	}
}

// No retained message is kept: one would reach later subscribers past the
// live filter of their creator's datapoint access.
func TestNoRetainedMessages(t *testing.T) {
	e := newBrokerEnv(t, brokerEnvConfig{})
	e.user("writer", "writer-password", store.MQTTWrite)
	e.user("late", "late-password", store.MQTTRead)
	topic := "project/" + strconv.FormatInt(e.p, 10) + "/datapoint/a"
	writer, _, err := e.connect5("ret-writer", "writer", "writer-password")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if _, err := writer.Publish(ctx, &paho.Publish{Topic: topic, QoS: 1, Retain: true, Payload: []byte(`{"time":"2026-01-01T00:00:00Z","value":1}`)}); err != nil {
		t.Fatal(err)
	}
	if err := e.b.Publish(topic, []byte(`{"time":"2026-01-01T00:00:01Z","value":2}`), 1); err != nil {
		t.Fatal(err)
	}
	late, _, err := e.connect5("ret-late", "late", "late-password")
	if err != nil {
		t.Fatal(err)
	}
	if r := late.subscribe(t, "project/"+strconv.FormatInt(e.p, 10)+"/#"); r >= 0x80 {
		t.Fatalf("SUBSCRIBE: 0x%02x", r)
	}
	select {
	case m := <-late.received:
		t.Fatalf("a later subscriber received a retained message on %s", m.Topic)
	case <-time.After(300 * time.Millisecond):
	}
}
