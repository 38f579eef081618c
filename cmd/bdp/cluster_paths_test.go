package main

import (
	"encoding/json"
	"fmt"
	"net/http"
	"testing"
	"time"

	paho "github.com/eclipse/paho.mqtt.golang"
	"github.com/segmentio/kafka-go"

	"github.com/openbdp/bdp/codec"
	"github.com/openbdp/bdp/pipeline/kafkatest"
)

// gateways are the cluster test's field gateways: one producing to the
// Kafka topic the nodes consume, one publishing over the external broker
// with a write MQTT user made through the API.
type gateways struct {
	t     *testing.T
	topic string
	pid   int64
	mqtt  paho.Client
}

func (p *clusterPlatform) gateways(s *server, pid int64, admin func(*http.Request)) *gateways {
	p.t.Helper()
	status, body := s.request("POST", fmt.Sprintf("/v2/project/%d/mqttuser", pid), admin,
		`{"username":"cluster-gw","password":"cluster-gw-password","rights":"write","validity":7200}`)
	if status != 201 {
		p.t.Fatalf("MQTT user: %d %s", status, body)
	}
	c := paho.NewClient(paho.NewClientOptions().AddBroker(p.svc.MQTT.URL).SetClientID("cluster-gw").
		SetUsername("cluster-gw").SetPassword("cluster-gw-password").SetProtocolVersion(4).SetCleanSession(true).
		SetConnectTimeout(10 * time.Second).SetAutoReconnect(true))
	// The broker takes the user once bdp has synced it into its plugin.
	var err error
	for deadline := time.Now().Add(15 * time.Second); ; time.Sleep(200 * time.Millisecond) {
		tok := c.Connect()
		if tok.WaitTimeout(10*time.Second) && tok.Error() == nil {
			break
		}
		err = tok.Error()
		if time.Now().After(deadline) {
			p.t.Fatalf("gateway's MQTT connection: %v", err)
		}
	}
	p.t.Cleanup(func() { c.Disconnect(250) })
	return &gateways{t: p.t, topic: p.kafkaTopic, pid: pid, mqtt: c}
}

// roundObs is round r: value r*10+s at minute r for every source s.
func roundObs(at time.Time, r, sources int, each func(source string, t time.Time, v int)) {
	for s := range sources {
		each(fmt.Sprintf("s%d", s), at.Add(time.Duration(r)*time.Minute), r*10+s)
	}
}

// kafka produces round r, one message per observation, acknowledged by
// the broker.
func (g *gateways) kafka(at time.Time, r, sources int) {
	g.t.Helper()
	var msgs []kafka.Message
	roundObs(at, r, sources, func(dp string, t time.Time, v int) {
		b, _ := json.Marshal(map[string]any{"project_id": g.pid, "dataPointID": dp, "time": t.Format(time.RFC3339), "value": v})
		msgs = append(msgs, kafka.Message{Key: []byte(fmt.Sprintf("%d/%s", g.pid, dp)), Value: b})
	})
	kafkatest.Produce(g.t, g.topic, msgs...)
}

// publish publishes round r at QoS 1, one message per observation, each
// acknowledged by the broker.
func (g *gateways) publish(at time.Time, r, sources int) {
	g.t.Helper()
	roundObs(at, r, sources, func(dp string, t time.Time, v int) {
		tok := g.mqtt.Publish(codec.DatapointTopic(g.pid, dp), 1, false, fmt.Sprintf(`{"time":%q,"value":%d}`, t.Format(time.RFC3339), v))
		if !tok.WaitTimeout(10*time.Second) || tok.Error() != nil {
			g.t.Fatalf("publish round %d of %s: %v", r, dp, tok.Error())
		}
	})
}
