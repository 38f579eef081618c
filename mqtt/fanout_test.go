package mqtt

import (
	"bufio"
	"context"
	"encoding/binary"
	"fmt"
	"io"
	"net"
	"slices"
	"strconv"
	"sync/atomic"
	"testing"
	"time"

	"github.com/eclipse/paho.golang/paho"

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
	e := newLiveEnv(t, liveEnvConfig{embedded: true, now: func() time.Time { return time.Now().Add(time.Duration(ahead.Load())) }})
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

// Every kind of subscriber gets live data as it subscribed: an MQTT 3.1.1
// subscriber at QoS 0 and at QoS 1 (the fast path), an MQTT 5 one at
// QoS 1 (through mochi's publish, which carries MQTT 5's properties).
func TestLiveSubscriberKinds(t *testing.T) {
	e := newLiveEnv(t, liveEnvConfig{embedded: true})
	e.account("reader", e.p1, e.adminA, false)
	filter := codec.ProjectTopicPrefix(e.p1) + "#"
	q0, _ := dialRaw(t, e.addr, "qos0", "reader", true)
	q0.subscribe(t, filter, 0)
	q1, _ := dialRaw(t, e.addr, "qos1", "reader", true)
	q1.subscribe(t, filter, 1)
	v5 := make(chan string, 10)
	conn, err := net.Dial("tcp", e.addr)
	if err != nil {
		t.Fatal(err)
	}
	c5 := paho.NewClient(paho.ClientConfig{ClientID: "v5", Conn: conn, OnPublishReceived: []func(paho.PublishReceived) (bool, error){
		func(p paho.PublishReceived) (bool, error) {
			v5 <- fmt.Sprintf("%s %d %s", p.Packet.Topic, p.Packet.QoS, p.Packet.Payload)
			return true, nil
		}}})
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if ack, err := c5.Connect(ctx, &paho.Connect{ClientID: "v5", CleanStart: true, KeepAlive: 30,
		Username: "reader", UsernameFlag: true, Password: []byte("pw"), PasswordFlag: true}); err != nil || ack.ReasonCode != 0 {
		t.Fatalf("connect (MQTT 5): %v %+v", err, ack)
	}
	t.Cleanup(func() { _ = c5.Disconnect(&paho.Disconnect{}) })
	if _, err := c5.Subscribe(ctx, &paho.Subscribe{Subscriptions: []paho.SubscribeOptions{{Topic: filter, QoS: 1}}}); err != nil {
		t.Fatal(err)
	}

	e.upload(obsAt(e.p1, "a", 1, 1), obsAt(e.p1, "a", 2, 2))
	for _, c := range []struct {
		sub *rawClient
		qos byte
	}{{q0, 0}, {q1, 1}} {
		for sec := 1; sec <= 2; sec++ {
			p := c.sub.next(t)
			if p.topic != codec.DatapointTopic(e.p1, "a") || p.payload != payloadOf(sec, float64(sec)) || p.qos != c.qos {
				t.Fatalf("QoS %d subscriber: %+v, want observation %d at QoS %d", c.qos, p, sec, c.qos)
			}
			if p.qos == 1 {
				c.sub.puback(t, p.id)
			}
		}
	}
	for sec := 1; sec <= 2; sec++ {
		select {
		case m := <-v5:
			if want := fmt.Sprintf("%s 1 %s", codec.DatapointTopic(e.p1, "a"), payloadOf(sec, float64(sec))); m != want {
				t.Fatalf("MQTT 5 subscriber: %q, want %q", m, want)
			}
		case <-time.After(5 * time.Second):
			t.Fatalf("MQTT 5 subscriber: observation %d did not arrive", sec)
		}
	}
}

// rawClient is an MQTT 3.1.1 client that shows what arrives as it is:
// packet ids, DUP, QoS; it acknowledges only when told.
type rawClient struct {
	c net.Conn
	r *bufio.Reader
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
	for _, s := range []string{clientID, user, "pw"} {
		body = append(binary.BigEndian.AppendUint16(body, uint16(len(s))), s...)
	}
	if _, err := c.Write(append(appendRemaining([]byte{0x10}, len(body)), body...)); err != nil {
		t.Fatal(err)
	}
	rc := &rawClient{c: c, r: bufio.NewReader(c)}
	header, ack := rc.read(t)
	if header != 0x20 || len(ack) != 2 || ack[1] != 0 {
		t.Fatalf("CONNACK %#x % x", header, ack)
	}
	return rc, ack[0]&1 == 1
}

func (rc *rawClient) close() { rc.c.Close() }

func (rc *rawClient) subscribe(t *testing.T, filter string, qos byte) {
	t.Helper()
	body := append(binary.BigEndian.AppendUint16([]byte{0, 1}, uint16(len(filter))), filter...)
	body = append(body, qos)
	if _, err := rc.c.Write(append(appendRemaining([]byte{0x82}, len(body)), body...)); err != nil {
		t.Fatal(err)
	}
	if header, ack := rc.read(t); header != 0x90 || len(ack) != 3 || ack[2] != qos {
		t.Fatalf("SUBACK %#x % x, want QoS %d granted", header, ack, qos)
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
