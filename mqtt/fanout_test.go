package mqtt

import (
	"bufio"
	"context"
	"encoding/binary"
	"io"
	"net"
	"slices"
	"strconv"
	"sync/atomic"
	"testing"
	"time"

	"github.com/eclipse/paho.golang/paho"

	"github.com/openbdp/bdp/clock"
	"github.com/openbdp/bdp/codec"
	"github.com/openbdp/bdp/pipeline"
)

// Live out's fast path keeps QoS 1's promise: a message a subscriber has
// not acknowledged stays in flight with its packet id, and is sent again
// (DUP) when the client returns to its session; once acknowledged it is
// not.
func TestLiveFastPathResendsUnacknowledged(t *testing.T) {
	e := newLiveEnv(t, liveEnvConfig{embedded: true})
	e.account("reader", e.p1, e.adminA, false)
	filter := codec.ProjectTopicPrefix(e.p1) + "#"

	c, present := dialRaw(t, e.addr, "keeper", "reader", false)
	if present {
		t.Fatal("a new session is present")
	}
	c.subscribe(t, filter, 1)
	e.upload(obsAt(e.p1, "dp", 1, 1), obsAt(e.p1, "dp", 2, 2))
	first := []rawPublish{c.next(t), c.next(t)} // not acknowledged
	for i, p := range first {
		if want := payloadOf(i+1, float64(i+1)); p.payload != want || p.qos != 1 || p.dup {
			t.Fatalf("first delivery %d: %+v, want %s at QoS 1", i, p, want)
		}
	}
	if first[0].id == first[1].id {
		t.Fatalf("two messages in flight share packet id %d", first[0].id)
	}
	c.close()

	c, present = dialRaw(t, e.addr, "keeper", "reader", false)
	if !present {
		t.Fatal("the kept session is not present")
	}
	again := []rawPublish{c.next(t), c.next(t)}
	slices.SortFunc(again, func(a, b rawPublish) int { return int(a.id) - int(b.id) })
	slices.SortFunc(first, func(a, b rawPublish) int { return int(a.id) - int(b.id) })
	for i, p := range again {
		if !p.dup || p.id != first[i].id || p.payload != first[i].payload {
			t.Fatalf("resent %+v, want %+v again with DUP", p, first[i])
		}
		c.puback(t, p.id)
	}
	e.upload(obsAt(e.p1, "dp", 3, 3))
	third := c.next(t)
	if third.dup || third.payload != payloadOf(3, 3) {
		t.Fatalf("after the resend: %+v, want observation 3, not a duplicate", third)
	}
	c.close()

	// Only the message not acknowledged comes again.
	c, _ = dialRaw(t, e.addr, "keeper", "reader", false)
	if p := c.next(t); !p.dup || p.id != third.id || p.payload != third.payload {
		t.Fatalf("resent %+v, want %+v again with DUP", p, third)
	}
	c.expectNothing(t)
}

// A session whose credentials have expired by the broker's clock gets
// nothing more, even before the expiry timer closes it.
func TestLiveFastPathStopsAtExpiry(t *testing.T) {
	var ahead atomic.Int64
	e := newLiveEnv(t, liveEnvConfig{embedded: true, clock: clock.Func(func() time.Time { return time.Now().Add(time.Duration(ahead.Load())) })})
	e.account("reader", e.p1, e.adminA, false) // valid for an hour
	sub := e.subscribe("reader", codec.ProjectTopicPrefix(e.p1)+"#")
	e.upload(obsAt(e.p1, "dp", 1, 1))
	if got := sub.collect(1); len(got) != 1 {
		t.Fatalf("before expiry received %v, want one message", got)
	}
	ahead.Store(int64(2 * time.Hour))
	e.upload(obsAt(e.p1, "dp", 2, 2))
	e.waitLive(t, 2, 0)
	if got := sub.collect(0); len(got) != 0 {
		t.Fatalf("after expiry received %v", got)
	}
}

// Every kind of subscriber gets live data as it subscribed, in order:
// MQTT 3.1.1 at QoS 0 and at QoS 1, MQTT 5 with its subscription
// identifier and the message expiry interval mochi gives, and an MQTT 5
// client that lets only 3 messages be unacknowledged at once (the rest
// are held back until it acknowledges; mochi's publish delivered a few
// out of order, then nothing).
func TestLiveSubscriberKinds(t *testing.T) {
	e := newLiveEnv(t, liveEnvConfig{embedded: true})
	e.account("reader", e.p1, e.adminA, false)
	e.account("reader2", e.p2, e.adminA, false)
	filter := codec.ProjectTopicPrefix(e.p1) + "#"
	q0, _ := dialRaw(t, e.addr, "qos0", "reader", true)
	q0.subscribe(t, filter, 0)
	q1, _ := dialRaw(t, e.addr, "qos1", "reader", true)
	q1.subscribe(t, filter, 1)
	v5 := subscribe5(t, e.addr, "v5", "reader", filter, 0, 7)
	narrow := subscribe5(t, e.addr, "narrow", "reader2", codec.ProjectTopicPrefix(e.p2)+"#", 3, 0)

	const n = 20
	var obs []pipeline.Observation
	for sec := range n {
		obs = append(obs, obsAt(e.p1, "a", sec, float64(sec)), obsAt(e.p2, "b", sec, float64(sec)))
	}
	e.upload(obs...)
	for _, c := range []struct {
		sub *rawClient
		qos byte
	}{{q0, 0}, {q1, 1}} {
		for sec := range n {
			p := c.sub.next(t)
			if p.topic != codec.DatapointTopic(e.p1, "a") || p.payload != payloadOf(sec, float64(sec)) || p.qos != c.qos {
				t.Fatalf("QoS %d subscriber: %+v, want observation %d at QoS %d", c.qos, p, sec, c.qos)
			}
			if p.qos == 1 {
				c.sub.puback(t, p.id)
			}
		}
	}
	for _, c := range []struct {
		got   chan *paho.Publish
		topic string
		id    int
	}{{v5, codec.DatapointTopic(e.p1, "a"), 7}, {narrow, codec.DatapointTopic(e.p2, "b"), 0}} {
		var payloads []string
		for sec := range n {
			select {
			case p := <-c.got:
				if p.Topic != c.topic || p.QoS != 1 {
					t.Fatalf("MQTT 5 subscriber: %s %d %s, want observation %d on %s", p.Topic, p.QoS, p.Payload, sec, c.topic)
				}
				payloads = append(payloads, string(p.Payload))
				if ex := p.Properties.MessageExpiry; ex == nil || *ex < 86000 {
					t.Fatalf("MQTT 5 subscriber of %s: message expiry %v, want mochi's day", c.topic, ex)
				}
				// A subscription without an identifier gets none: 0
				// is a protocol error to the client.
				if si := p.Properties.SubscriptionIdentifier; c.id != 0 && (si == nil || *si != c.id) || c.id == 0 && si != nil {
					got := "none"
					if si != nil {
						got = strconv.Itoa(*si)
					}
					t.Fatalf("MQTT 5 subscriber of %s: subscription identifier %s, want %d (0: none)", c.topic, got, c.id)
				}
			case <-time.After(5 * time.Second):
				t.Fatalf("MQTT 5 subscriber of %s: observation %d did not arrive", c.topic, sec)
			}
		}
		for sec, p := range payloads {
			if p != payloadOf(sec, float64(sec)) {
				t.Fatalf("MQTT 5 subscriber of %s: got %v", c.topic, payloads)
			}
		}
	}
}

// subscribe5 connects an MQTT 5 client (receiveMax 0: none said) and
// subscribes it at QoS 1 (with a subscription identifier unless 0); it
// acknowledges what arrives and hands it on.
func subscribe5(t *testing.T, addr, clientID, user, filter string, receiveMax uint16, id int) chan *paho.Publish {
	t.Helper()
	got := make(chan *paho.Publish, 100)
	conn, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	c := paho.NewClient(paho.ClientConfig{ClientID: clientID, Conn: conn, OnPublishReceived: []func(paho.PublishReceived) (bool, error){
		func(p paho.PublishReceived) (bool, error) { got <- p.Packet; return true, nil }}})
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	cp := &paho.Connect{ClientID: clientID, CleanStart: true, KeepAlive: 30,
		Username: user, UsernameFlag: true, Password: []byte("pw"), PasswordFlag: true}
	if receiveMax > 0 {
		cp.Properties = &paho.ConnectProperties{ReceiveMaximum: &receiveMax}
	}
	if ack, err := c.Connect(ctx, cp); err != nil || ack.ReasonCode != 0 {
		t.Fatalf("connect %s (MQTT 5): %v %+v", clientID, err, ack)
	}
	t.Cleanup(func() { _ = c.Disconnect(&paho.Disconnect{}) })
	sub := &paho.Subscribe{Subscriptions: []paho.SubscribeOptions{{Topic: filter, QoS: 1}}}
	if id != 0 {
		sub.Properties = &paho.SubscribeProperties{SubscriptionIdentifier: &id}
	}
	if _, err := c.Subscribe(ctx, sub); err != nil {
		t.Fatal(err)
	}
	return got
}

// An MQTT 5 client's receive maximum holds: never more messages
// unacknowledged than it allows, the rest sent in order as it
// acknowledges, and what is held back when it goes reaches it when it
// returns to its session.
func TestLiveFastPathReceiveMaximum(t *testing.T) {
	e := newLiveEnv(t, liveEnvConfig{embedded: true})
	e.account("reader", e.p1, e.adminA, false)
	c, _ := dialRawVersion(t, e.addr, "narrow", "reader", false, 3)
	c.subscribe(t, codec.ProjectTopicPrefix(e.p1)+"#", 1)
	var obs []pipeline.Observation
	for sec := range 12 {
		obs = append(obs, obsAt(e.p1, "dp", sec, float64(sec)))
	}
	e.upload(obs...)
	expect := func(secs ...int) []uint16 {
		t.Helper()
		var ids []uint16
		for _, sec := range secs {
			if p := c.next(t); p.payload != payloadOf(sec, float64(sec)) {
				t.Fatalf("received %+v, want observation %d", p, sec)
			} else {
				ids = append(ids, p.id)
			}
		}
		c.expectNothing(t)
		return ids
	}
	ids := expect(0, 1, 2)
	c.puback(t, ids[0])
	ids = append(ids[1:], expect(3)...)
	for _, id := range ids {
		c.puback(t, id)
	}
	expect(4, 5, 6)
	c.close() // 7 to 11 held back, 4 to 6 unacknowledged

	c, present := dialRawVersion(t, e.addr, "narrow", "reader", false, 20)
	if !present {
		t.Fatal("the session is not present")
	}
	var got []string
	for range 8 {
		p := c.next(t)
		got = append(got, p.payload)
		c.puback(t, p.id)
	}
	for i, p := range got { // resent from the session in the order they were sent, then the held ones
		if sec := i + 4; p != payloadOf(sec, float64(sec)) {
			t.Fatalf("after the return: %v, want observations 4 to 11", got)
		}
	}
}

// rawClient is an MQTT 3.1.1 client that shows what arrives as it is:
// packet ids, DUP, QoS; it acknowledges only when told.
type rawClient struct {
	c  net.Conn
	r  *bufio.Reader
	v5 bool
}

type rawPublish struct {
	topic, payload string
	qos            byte
	dup            bool
	id             uint16
}

// dialRaw connects with password "pw" and returns whether the broker
// had a session for the client id.
func dialRaw(t *testing.T, addr, clientID, user string, clean bool) (*rawClient, bool) {
	t.Helper()
	return dialRawVersion(t, addr, clientID, user, clean, 0)
}

// dialRawVersion connects as dialRaw; with receiveMax > 0 as an MQTT 5
// client that lets that many messages be unacknowledged.
func dialRawVersion(t *testing.T, addr, clientID, user string, clean bool, receiveMax uint16) (*rawClient, bool) {
	t.Helper()
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	flags := byte(0xC0)
	if clean {
		flags |= 0x02
	}
	body := []byte{0, 4, 'M', 'Q', 'T', 'T', 4, flags, 0, 60}
	if receiveMax > 0 {
		body[6] = 5
		// Properties: receive maximum, session expiry interval 60 s.
		body = append(body, 8, 0x21, byte(receiveMax>>8), byte(receiveMax), 0x11, 0, 0, 0, 60)
	}
	for _, s := range []string{clientID, user, "pw"} {
		body = append(binary.BigEndian.AppendUint16(body, uint16(len(s))), s...)
	}
	if _, err := c.Write(append(appendRemaining([]byte{0x10}, len(body)), body...)); err != nil {
		t.Fatal(err)
	}
	rc := &rawClient{c: c, r: bufio.NewReader(c), v5: receiveMax > 0}
	header, ack := rc.read(t)
	if header != 0x20 || len(ack) < 2 || ack[1] != 0 {
		t.Fatalf("CONNACK %#x % x", header, ack)
	}
	return rc, ack[0]&1 == 1
}

func (rc *rawClient) close() { rc.c.Close() }

func (rc *rawClient) subscribe(t *testing.T, filter string, qos byte) {
	t.Helper()
	body := []byte{0, 1}
	if rc.v5 {
		body = append(body, 0) // no properties
	}
	body = append(binary.BigEndian.AppendUint16(body, uint16(len(filter))), filter...)
	body = append(body, qos)
	if _, err := rc.c.Write(append(appendRemaining([]byte{0x82}, len(body)), body...)); err != nil {
		t.Fatal(err)
	}
	if header, ack := rc.read(t); header != 0x90 || len(ack) < 3 || ack[0] != 0 || ack[1] != 1 || ack[len(ack)-1] != qos {
		t.Fatalf("SUBACK %#x % x, want packet id 1 and QoS %d granted", header, ack, qos)
	}
}

// unsubscribe unsubscribes from filter with packet id id; a subscription
// must exist.
func (rc *rawClient) unsubscribe(t *testing.T, filter string, id uint16) {
	t.Helper()
	body := binary.BigEndian.AppendUint16(nil, id)
	if rc.v5 {
		body = append(body, 0) // no properties
	}
	body = append(binary.BigEndian.AppendUint16(body, uint16(len(filter))), filter...)
	if _, err := rc.c.Write(append(appendRemaining([]byte{0xA2}, len(body)), body...)); err != nil {
		t.Fatal(err)
	}
	header, ack := rc.read(t)
	ok := header == 0xB0 && len(ack) >= 2 && binary.BigEndian.Uint16(ack) == id
	if rc.v5 {
		ok = ok && len(ack) >= 4 && ack[len(ack)-1] == 0 // success
	}
	if !ok {
		t.Fatalf("UNSUBACK %#x % x, want packet id %d and success", header, ack, id)
	}
}

func (rc *rawClient) puback(t *testing.T, id uint16) {
	t.Helper()
	if _, err := rc.c.Write([]byte{0x40, 2, byte(id >> 8), byte(id)}); err != nil {
		t.Fatal(err)
	}
}

// read reads one packet within 5 s.
func (rc *rawClient) read(t *testing.T) (byte, []byte) {
	t.Helper()
	_ = rc.c.SetReadDeadline(time.Now().Add(5 * time.Second))
	header, err := rc.r.ReadByte()
	if err != nil {
		t.Fatalf("read: %v", err)
	}
	n, err := binary.ReadUvarint(rc.r)
	if err != nil {
		t.Fatalf("read: %v", err)
	}
	body := make([]byte, n)
	if _, err := io.ReadFull(rc.r, body); err != nil {
		t.Fatalf("read: %v", err)
	}
	return header, body
}

// next reads the next PUBLISH.
func (rc *rawClient) next(t *testing.T) rawPublish {
	t.Helper()
	header, body := rc.read(t)
	if header>>4 != 3 {
		t.Fatalf("packet %#x, want a PUBLISH", header)
	}
	p := rawPublish{qos: header >> 1 & 3, dup: header&0x08 != 0}
	n := int(binary.BigEndian.Uint16(body))
	p.topic, body = string(body[2:2+n]), body[2+n:]
	if p.qos > 0 {
		p.id, body = binary.BigEndian.Uint16(body), body[2:]
	}
	if rc.v5 {
		n, l := binary.Uvarint(body) // properties' length
		body = body[l+int(n):]
	}
	p.payload = string(body)
	return p
}

// expectNothing fails if a packet arrives within 300 ms.
func (rc *rawClient) expectNothing(t *testing.T) {
	t.Helper()
	_ = rc.c.SetReadDeadline(time.Now().Add(300 * time.Millisecond))
	if b, err := rc.r.ReadByte(); err == nil {
		t.Fatalf("unexpected packet %#x", b)
	}
}

// A stored batch reaches each subscriber at once: a burst of thousands of
// messages, many times BDP_MQTT_CLIENT_QUEUE, is written to a subscriber
// that keeps reading, not dropped.
func TestLiveBurstIsNotDropped(t *testing.T) {
	const burst = 10_000
	e := newLiveEnv(t, liveEnvConfig{embedded: true})
	e.account("reader", e.p1, e.adminA, false)
	c, _ := dialRaw(t, e.addr, "burst", "reader", true)
	c.subscribe(t, codec.ProjectTopicPrefix(e.p1)+"#", 1)
	s := pipeline.Stored{Obs: make([]pipeline.Observation, burst), Sources: make([]pipeline.Source, burst)}
	for i := range burst {
		s.Obs[i] = obsAt(e.p1, "dp-"+strconv.Itoa(i%100), i, float64(i))
	}
	e.live.DeliverStored(s)
	for i := range burst {
		p := c.next(t)
		if p.payload != payloadOf(i, float64(i)) {
			t.Fatalf("message %d: %+v", i, p)
		}
		c.puback(t, p.id)
	}
	if n := e.metric("bdp_mqtt_messages_dropped_total"); n != 0 {
		t.Fatalf("%v messages dropped", n)
	}
}
