package mqtt

import (
	"context"
	"net"
	"testing"
	"time"

	"github.com/eclipse/paho.golang/paho"
	pahov3 "github.com/eclipse/paho.mqtt.golang"

	"github.com/openbdp/bdp/codec"
)

// Live out costs nothing while nobody listens: observations of a
// datapoint no subscription matches are neither encoded nor published.
// A subscriber that comes after a quiet period gets what is stored from
// then on; one that unsubscribes stops costing.
func TestLiveSkipsWhatNobodySubscribes(t *testing.T) {
	e := newLiveEnv(t, liveEnvConfig{embedded: true})
	e.account("reader", e.p1, e.adminA, false)
	filter := codec.ProjectTopicPrefix(e.p1) + "#"

	// Connected, but subscribed to another datapoint only.
	sub := e.subscribe("reader", codec.DatapointTopic(e.p1, "elsewhere"))
	e.upload(obsAt(e.p1, "dp", 0, 0), obsAt(e.p2, "dp", 0, 0))
	e.waitLive(t, 0, 2)

	if tok := sub.c.Subscribe(filter, 1, func(_ pahov3.Client, m pahov3.Message) {
		sub.got <- received{m.Topic(), string(m.Payload())}
	}); !tok.WaitTimeout(5*time.Second) || tok.Error() != nil {
		t.Fatalf("subscribe: %v", tok.Error())
	}
	e.upload(obsAt(e.p1, "dp", 1, 1), obsAt(e.p2, "dp", 1, 1))
	if got := sub.collect(1); len(got) != 1 || got[0] != (received{codec.DatapointTopic(e.p1, "dp"), payloadOf(1, 1)}) {
		t.Fatalf("the subscriber that came later received\n%s", lines(got))
	}
	e.waitLive(t, 1, 3) // project 2 still has nobody

	if tok := sub.c.Unsubscribe(filter); !tok.WaitTimeout(5*time.Second) || tok.Error() != nil {
		t.Fatalf("unsubscribe: %v", tok.Error())
	}
	e.upload(obsAt(e.p1, "dp", 2, 2))
	e.waitLive(t, 1, 4)
	if got := sub.collect(0); len(got) != 0 {
		t.Errorf("received after unsubscribing:\n%s", lines(got))
	}

	// The platform's own subscriptions listen too, to any project.
	b := e.live.pub.(*Embedded)
	inline := make(chan string, 10)
	unsubscribe, err := b.Subscribe("project/+/datapoint/+", func(topic string, _ []byte) { inline <- topic })
	if err != nil {
		t.Fatal(err)
	}
	e.upload(obsAt(e.p2, "dp", 3, 3))
	e.waitLive(t, 2, 4)
	if topic := <-inline; topic != codec.DatapointTopic(e.p2, "dp") {
		t.Errorf("the platform's subscription got %s", topic)
	}
	unsubscribe()
	e.upload(obsAt(e.p2, "dp", 4, 4))
	e.waitLive(t, 2, 5)
}

// A session kept for a subscriber that is away still listens: what is
// stored meanwhile waits for it (QoS 1), and reaches it, and what comes
// after, when it returns or another connection takes the session over.
// A session that expires stops costing.
func TestLiveReachesKeptSessions(t *testing.T) {
	e := newLiveEnv(t, liveEnvConfig{embedded: true})
	e.account("reader", e.p1, e.adminA, false)
	filter := codec.ProjectTopicPrefix(e.p1) + "#"
	got := make(chan received, 100)
	connect := func() pahov3.Client {
		t.Helper()
		opts := pahov3.NewClientOptions().AddBroker("tcp://" + e.addr).SetClientID("keeper").SetCleanSession(false).
			SetUsername("reader").SetPassword("pw").SetAutoReconnect(false).SetOrderMatters(true).
			SetDefaultPublishHandler(func(_ pahov3.Client, m pahov3.Message) { got <- received{m.Topic(), string(m.Payload())} })
		c := pahov3.NewClient(opts)
		if tok := c.Connect(); !tok.WaitTimeout(5*time.Second) || tok.Error() != nil {
			t.Fatalf("connect: %v", tok.Error())
		}
		t.Cleanup(func() { c.Disconnect(0) })
		return c
	}
	next := func(sec int) {
		t.Helper()
		select {
		case m := <-got:
			if want := (received{codec.DatapointTopic(e.p1, "dp"), payloadOf(sec, float64(sec))}); m != want {
				t.Fatalf("received %v, want %v", m, want)
			}
		case <-time.After(5 * time.Second):
			t.Fatalf("observation %d did not arrive", sec)
		}
	}

	away := connect()
	if tok := away.Subscribe(filter, 1, nil); !tok.WaitTimeout(5*time.Second) || tok.Error() != nil {
		t.Fatalf("subscribe: %v", tok.Error())
	}
	away.Disconnect(100)
	e.upload(obsAt(e.p1, "dp", 1, 1))
	e.waitLive(t, 1, 0)

	back := connect()
	next(1)
	e.upload(obsAt(e.p1, "dp", 2, 2))
	next(2)

	connect() // takes the session over from back
	e.upload(obsAt(e.p1, "dp", 3, 3))
	next(3)
	e.waitLive(t, 3, 0)
	_ = back

	// An MQTT 5 session, alone on project 2, that expires a second after
	// its client left.
	e.account("brief", e.p2, e.adminA, false)
	conn, err := net.Dial("tcp", e.addr)
	if err != nil {
		t.Fatal(err)
	}
	c5 := paho.NewClient(paho.ClientConfig{ClientID: "brief", Conn: conn})
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	second := uint32(1)
	if ack, err := c5.Connect(ctx, &paho.Connect{ClientID: "brief", CleanStart: true, KeepAlive: 30,
		Username: "brief", UsernameFlag: true, Password: []byte("pw"), PasswordFlag: true,
		Properties: &paho.ConnectProperties{SessionExpiryInterval: &second}}); err != nil || ack.ReasonCode != 0 {
		t.Fatalf("connect (MQTT 5): %v %+v", err, ack)
	}
	if _, err := c5.Subscribe(ctx, &paho.Subscribe{Subscriptions: []paho.SubscribeOptions{{Topic: codec.ProjectTopicPrefix(e.p2) + "#", QoS: 1}}}); err != nil {
		t.Fatal(err)
	}
	_ = c5.Disconnect(&paho.Disconnect{})
	published, unheard := e.metric("bdp_mqtt_live_published_total"), e.metric("bdp_mqtt_live_unsubscribed_total")
	for sec := 0; e.metric("bdp_mqtt_live_unsubscribed_total") == unheard; sec++ {
		if sec > 10 {
			t.Fatal("the expired session's topic is still published")
		}
		e.upload(obsAt(e.p2, "brief", sec, 0))
		published++
		waitFor(t, "live to handle the upload", func() bool {
			return e.metric("bdp_mqtt_live_published_total")+e.metric("bdp_mqtt_live_unsubscribed_total") == published+unheard
		})
		if e.metric("bdp_mqtt_live_unsubscribed_total") == unheard {
			time.Sleep(time.Second)
		} else {
			published--
		}
	}
}

// The external broker publishes everything: other nodes' subscribers are
// invisible to bdp.
func TestExternalIsNoAudience(t *testing.T) {
	if _, ok := any(&External{}).(Audience); ok {
		t.Fatal("External is an Audience: live data would skip topics subscribed through other nodes")
	}
}

// waitLive waits until live out has published and skipped (nobody
// subscribed) so many observations in all, and no more of either.
func (e *liveEnv) waitLive(t *testing.T, published, unheard float64) {
	t.Helper()
	waitFor(t, "live out to handle the uploads", func() bool {
		return e.metric("bdp_mqtt_live_published_total")+e.metric("bdp_mqtt_live_unsubscribed_total") >= published+unheard
	})
	if p, u := e.metric("bdp_mqtt_live_published_total"), e.metric("bdp_mqtt_live_unsubscribed_total"); p != published || u != unheard {
		t.Fatalf("live out published %v and skipped %v, want %v and %v", p, u, published, unheard)
	}
}
