package mqtt

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/eclipse/paho.golang/paho"
	pahov3 "github.com/eclipse/paho.mqtt.golang"

	"github.com/openbdp/bdp/codec"
)

// arrayPayload is n observations from second first on, values first+i.
func arrayPayload(first, n int) string {
	parts := make([]string, n)
	for i := range parts {
		parts[i] = payloadOf(first+i, float64(first+i))
	}
	return "[" + strings.Join(parts, ",") + "]"
}

// A QoS 1 publish is acknowledged once stored: the rows are in PostgreSQL
// when PUBACK arrives, for each of many messages a publisher keeps in
// flight. Subscribers get the stored observations one by one, never the
// raw array.
func TestIngestStoredThenAcked(t *testing.T) {
	forBrokers(t, func(t *testing.T, broker liveEnvConfig) {
		e := newLiveEnv(t, broker)
		e.account("writer", e.p1, e.tagged, true)
		e.account("reader", e.p1, e.adminA, false)
		sub := e.subscribe("reader", codec.ProjectTopicPrefix(e.p1)+"#")
		pub := e.publisher3("writer")
		topic := codec.DatapointTopic(e.p1, "room/1")

		tok := pub.Publish(topic, 1, false, arrayPayload(0, 100))
		if !tok.WaitTimeout(5*time.Second) || tok.Error() != nil {
			t.Fatalf("publish: %v", tok.Error())
		}
		if n := e.count(`SELECT count(*) FROM observations`); n != 100 {
			t.Fatalf("%d rows when PUBACK arrived, want 100", n)
		}
		got := sub.collect(100)
		if len(got) != 100 || got[0].topic != topic || got[0].payload != payloadOf(0, 0) || got[99].payload != payloadOf(99, 99) {
			t.Fatalf("subscriber got %d messages, want the 100 observations one by one:\n%.400s", len(got), lines(got))
		}

		// Many in flight at once: each acknowledged after its own rows.
		const messages = 200
		toks := make([]pahov3.Token, messages)
		for m := range toks {
			toks[m] = pub.Publish(topic, 1, false, arrayPayload(1000+100*m, 100))
		}
		for m, tok := range toks {
			if !tok.WaitTimeout(10*time.Second) || tok.Error() != nil {
				t.Fatalf("message %d: %v", m, tok.Error())
			}
			first := t0.Add(time.Duration(1000+100*m) * time.Second)
			if n := e.count(`SELECT count(*) FROM observations WHERE time >= $1 AND time < $2`, first, first.Add(100*time.Second)); n != 100 {
				t.Fatalf("message %d acknowledged with %d of its rows stored", m, n)
			}
		}
		if n := e.count(`SELECT count(*) FROM observations`); n != 100+messages*100 {
			t.Fatalf("%d rows, want %d", n, 100+messages*100)
		}
		if n := e.metric("bdp_pipeline_observations_stored_total", "source", "mqtt"); n != 100+messages*100 {
			t.Errorf("stored from mqtt: %v", n)
		}
	})
}

// What ingestion refuses is dropped and counted by reason; an MQTT 5
// publisher learns why from the PUBACK's reason code, an MQTT 3.1.1 one
// gets a plain PUBACK (it cannot be told, and must not resend forever).
func TestIngestRefusals(t *testing.T) {
	forBrokers(t, func(t *testing.T, broker liveEnvConfig) {
		e := newLiveEnv(t, broker)
		e.account("writer", e.p1, e.tagged, true)
		e.account("reader", e.p1, e.adminA, false)
		sub := e.subscribe("reader", codec.ProjectTopicPrefix(e.p1)+"#")
		v5 := e.publisher5("writer")
		v3 := e.publisher3("writer")
		room := codec.DatapointTopic(e.p1, "room-1")
		cases := []struct {
			name, topic, payload string
			code                 byte
			reason               string
		}{
			{"not JSON", room, "{", 0x99, "payload"},
			{"unknown field", room, `{"time":"2026-03-02T00:00:00Z","value":1,"unit":"K"}`, 0x99, "payload"},
			{"value a string", room, `{"time":"2026-03-02T00:00:00Z","value":"1"}`, 0x99, "payload"},
			{"year 1800", room, `{"time":"1800-03-02T00:00:00Z","value":1}`, 0x99, "invalid"},
			{"datapoint outside the creator's TagAuths", codec.DatapointTopic(e.p1, "office-1"), payloadOf(0, 1), 0x87, "unauthorized"},
			{"not a datapoint topic", codec.ProjectTopicPrefix(e.p1) + "status", payloadOf(0, 1), 0x90, "topic"},
			{"bad escape", codec.ProjectTopicPrefix(e.p1) + "datapoint/a%zz", payloadOf(0, 1), 0x90, "topic"},
		}
		for _, c := range cases {
			t.Run(c.name, func(t *testing.T) {
				before := e.metric("bdp_mqtt_ingest_dropped_total", "reason", c.reason)
				ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
				defer cancel()
				resp, _ := v5.Publish(ctx, &paho.Publish{Topic: c.topic, QoS: 1, Payload: []byte(c.payload)})
				if resp == nil || resp.ReasonCode != c.code {
					t.Errorf("MQTT 5 PUBACK %+v, want reason code %#x", resp, c.code)
				}
				tok := v3.Publish(c.topic, 1, false, c.payload)
				if !tok.WaitTimeout(5*time.Second) || tok.Error() != nil {
					t.Errorf("MQTT 3.1.1: no plain PUBACK: %v", tok.Error())
				}
				if d := e.metric("bdp_mqtt_ingest_dropped_total", "reason", c.reason) - before; d != 2 {
					t.Errorf("dropped{reason=%q} rose by %v, want 2", c.reason, d)
				}
			})
		}
		if n := e.count(`SELECT count(*) FROM observations`); n != 0 {
			t.Errorf("%d rows stored from refused publishes", n)
		}
		if got := sub.collect(0); len(got) != 0 {
			t.Errorf("a refused publish reached a subscriber: %v", got)
		}
		// And a good one from MQTT 5: success, stored.
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		resp, err := v5.Publish(ctx, &paho.Publish{Topic: room, QoS: 1, Payload: []byte(arrayPayload(0, 3))})
		if err != nil || resp.ReasonCode != 0 {
			t.Fatalf("good publish: %v %+v", err, resp)
		}
		if n := e.count(`SELECT count(*) FROM observations`); n != 3 {
			t.Errorf("%d rows after a good publish, want 3", n)
		}
	})
}

// A user's write access follows its creator's like its reading does: a
// withdrawn grant refuses the next publish.
func TestIngestFollowsTheCreator(t *testing.T) {
	e := newLiveEnv(t, liveEnvConfig{})
	acct := e.account("writer", e.p1, e.tagged, true)
	v5 := e.publisher5("writer")
	room := codec.DatapointTopic(e.p1, "room-1")
	publish := func(sec int) byte {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		resp, _ := v5.Publish(ctx, &paho.Publish{Topic: room, QoS: 1, Payload: []byte(payloadOf(sec, 1))})
		if resp == nil {
			t.Fatal("no PUBACK")
		}
		return resp.ReasonCode
	}
	if c := publish(0); c != 0 {
		t.Fatalf("granted publish: %#x", c)
	}
	if err := e.st.UnassignProjectRole(context.Background(), e.taggedRole.ID, e.tagged); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the gate to follow", func() bool { return !e.gate.Allowed(acct, e.p1, "room-1", true) })
	if c := publish(1); c != 0x87 {
		t.Fatalf("publish after the grant went: %#x, want 0x87", c)
	}
	if n := e.count(`SELECT count(*) FROM observations`); n != 1 {
		t.Errorf("%d rows, want the 1 granted", n)
	}
	// A read-only user may not ingest even where its creator may write.
	ro := e.account("ro", e.p1, e.adminA, false)
	if e.gate.Allowed(ro, e.p1, "room-1", true) {
		t.Error("a read user may write")
	}
}

// When the observations cannot be stored, the publisher is not told they
// were: MQTT 5 gets 0x80, an MQTT 3.1.1 client no PUBACK (its connection
// is closed, so it sends the message again after reconnecting).
func TestIngestStorageFailure(t *testing.T) {
	e := newLiveEnv(t, liveEnvConfig{})
	e.account("writer", e.p1, e.tagged, true)
	v5 := e.publisher5("writer")
	v3 := e.publisher3("writer")
	room := codec.DatapointTopic(e.p1, "room-1")
	e.batcher.Stop() // the pipeline refuses every write from now on
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	resp, _ := v5.Publish(ctx, &paho.Publish{Topic: room, QoS: 1, Payload: []byte(payloadOf(0, 1))})
	if resp == nil || resp.ReasonCode != 0x80 {
		t.Errorf("MQTT 5 PUBACK %+v, want 0x80", resp)
	}
	tok := v3.Publish(room, 1, false, payloadOf(1, 1))
	if !tok.WaitTimeout(5*time.Second) || tok.Error() == nil {
		t.Errorf("MQTT 3.1.1: publish completed without error (%v); want the connection closed, no PUBACK", tok.Error())
	}
	waitFor(t, "the 3.1.1 client to be disconnected", func() bool { return !v3.IsConnectionOpen() })
	if d := e.metric("bdp_mqtt_ingest_dropped_total", "reason", "storage"); d != 2 {
		t.Errorf("dropped{reason=storage} %v, want 2", d)
	}
}
