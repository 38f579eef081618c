package mqtt

import (
	"context"
	"fmt"
	"net"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/eclipse/paho.golang/paho"
	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/openbdp/bdp/codec"
	"github.com/openbdp/bdp/store"
)

// aedifion's MQTT tutorial publishes Influx line protocol: a QoS 1
// message of one or many lines is stored before its PUBACK, from MQTT 5
// and 3.1.1; line protocol for a datapoint outside the creator's TagAuths
// is refused as JSON is (0x87); a message that is neither JSON nor line
// protocol of the topic's datapoint is answered 0x99 with the reason and
// counted, and stores nothing.
func TestIngestLineProtocol(t *testing.T) {
	forBrokers(t, func(t *testing.T, broker liveEnvConfig) {
		e := newLiveEnv(t, broker)
		e.account("writer", e.p1, e.tagged, true)
		v5 := e.publisher5("writer")
		v3 := e.publisher3("writer")
		room := codec.DatapointTopic(e.p1, "room-1")
		ns := t0.UnixNano()
		publish5 := func(topic, payload string) *paho.PublishResponse {
			t.Helper()
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			defer cancel()
			resp, err := v5.Publish(ctx, &paho.Publish{Topic: topic, QoS: 1, Payload: []byte(payload)})
			if resp == nil {
				t.Fatalf("no PUBACK: %v", err)
			}
			return resp
		}

		if r := publish5(room, fmt.Sprintf("room-1 value=0 %d", ns)); r.ReasonCode != 0 {
			t.Fatalf("one line: reason %#x %q", r.ReasonCode, r.Properties.ReasonString)
		}
		if n := e.count(`SELECT count(*) FROM observations`); n != 1 {
			t.Fatalf("%d rows when the PUBACK of one line arrived, want 1", n)
		}
		lines := fmt.Sprintf("room-1,site=aachen value=1.5 %d\nroom-1 value=2i %d\n", ns+1e9, ns+2e9)
		if tok := v3.Publish(room, 1, false, lines); !tok.WaitTimeout(5*time.Second) || tok.Error() != nil {
			t.Fatalf("MQTT 3.1.1 two lines: %v", tok.Error())
		}
		if n := e.count(`SELECT count(*) FROM observations WHERE time = $1 AND value = 2`, t0.Add(2*time.Second)); n != 1 {
			t.Fatalf("the second line of the 3.1.1 message is not stored when its PUBACK arrived")
		}

		if r := publish5(codec.DatapointTopic(e.p1, "office-1"), fmt.Sprintf("office-1 value=1 %d", ns)); r.ReasonCode != 0x87 {
			t.Errorf("line protocol outside the creator's TagAuths: %#x, want 0x87", r.ReasonCode)
		}
		before := e.metric("bdp_mqtt_ingest_dropped_total", "reason", dropPayload)
		for _, bad := range []string{
			"hello " + strings.Repeat("secret ", 50),       // neither
			fmt.Sprintf("room-2 value=1 %d", ns),           // another datapoint's line on room-1's topic
			fmt.Sprintf("room-1 value=1 %d\nroom-1 x", ns), // a bad second line: nothing of the message stored
		} {
			r := publish5(room, bad)
			if r.ReasonCode != 0x99 || r.Properties == nil || !strings.Contains(r.Properties.ReasonString, "line protocol") ||
				strings.Contains(r.Properties.ReasonString, "secret") {
				t.Errorf("%.20q: reason %#x %+v, want 0x99 saying why, without the payload", bad, r.ReasonCode, r.Properties)
			}
		}
		if d := e.metric("bdp_mqtt_ingest_dropped_total", "reason", dropPayload) - before; d != 3 {
			t.Errorf("dropped{reason=payload} rose by %v, want 3", d)
		}
		if n := e.count(`SELECT count(*) FROM observations`); n != 3 {
			t.Errorf("%d rows, want the 3 lines accepted", n)
		}
	})
}

// The external broker's ingestion reads line protocol too, from paho's
// MQTT 3.1.1 client and from Debian's mosquitto_pub in MQTT 5 mode, and
// drops and counts what is neither.
func TestExternalIngestLineProtocol(t *testing.T) {
	f := newExternalFixture(t)
	pid, admin := f.company(t, "acme")
	f.mqttUser(t, store.MQTTUser{ProjectID: pid, Username: "gw", Rights: store.MQTTWrite, CreatedBy: admin}, "gw-password")
	gw := f.mustConnect(t, "gw", "gw-password")
	ns := time.Date(2026, 1, 2, 0, 0, 0, 0, time.UTC).UnixNano()
	topic := codec.DatapointTopic(pid, "dp")
	gw.publish(t, topic, "not a line")
	gw.publish(t, topic, fmt.Sprintf("dp value=0 %d\ndp value=1 %d", ns, ns+1e9))
	eventually(t, "both lines stored", func() bool { return f.stored(t, pid, "dp") == 2 })

	host, port, err := net.SplitHostPort(strings.TrimPrefix(f.broker.URL, "tcp://"))
	if err != nil {
		t.Fatal(err)
	}
	out, err := exec.Command("mosquitto_pub", "-h", host, "-p", port, "-V", "mqttv5", "-q", "1", "-i", "gw-mosquitto-pub",
		"-u", "gw", "-P", "gw-password", "-t", topic, "-m", fmt.Sprintf("dp,site=aachen value=2.5 %d", ns+2e9)).CombinedOutput()
	if err != nil {
		t.Fatalf("mosquitto_pub: %v\n%s", err, out)
	}
	eventually(t, "the line from mosquitto_pub stored", func() bool { return f.stored(t, pid, "dp") == 3 })
	if got := testutil.ToFloat64(f.ext.metrics.dropped.WithLabelValues(dropPayload)); got != 1 {
		t.Errorf("dropped for payload: %v, want 1", got)
	}
}
