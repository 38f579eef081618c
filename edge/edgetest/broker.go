package edgetest

import (
	"context"
	"testing"
	"time"

	"github.com/openbdp/bdp/edge"
	"github.com/openbdp/bdp/mqtt"
	"github.com/openbdp/bdp/mqtt/mosquittotest"
	"github.com/openbdp/bdp/pipeline"
	"github.com/openbdp/bdp/store"
)

// Broker is a test's MQTT broker as the edge connections use it: bdp's
// embedded broker, or a real Mosquitto 2 (mosquittotest) that bdp
// reaches as an external broker. The caller closes it.
type Broker struct {
	mqtt.Broker
	Embedded *mqtt.Embedded // nil on Mosquitto
	External *mqtt.External // nil on the embedded broker
	Addr     string         // host:port devices connect to
}

// StartBroker starts the embedded broker with deps, or with mosquitto a
// Mosquitto whose observations bdp stores through deps' store and sink.
func StartBroker(t testing.TB, mosquitto bool, deps mqtt.Deps, sink pipeline.Sink) *Broker {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if mosquitto {
		m := mosquittotest.Start(t)
		ext, err := mqtt.StartExternal(ctx, mqtt.ExternalConfig{URL: m.URL, AdminUser: m.AdminUser, AdminPassword: m.AdminPassword,
			ClientID: "bdp-edge-test", Store: deps.Store, Sink: sink})
		if err != nil {
			t.Fatalf("start external: %v\n%s", err, m.Log())
		}
		return &Broker{Broker: ext, External: ext, Addr: m.Addr}
	}
	emb, err := mqtt.StartEmbedded(ctx, mqtt.Config{Addr: "127.0.0.1:0", CredentialTTL: time.Minute}, deps)
	if err != nil {
		t.Fatal(err)
	}
	return &Broker{Broker: emb, Embedded: emb, Addr: emb.Addresses()["mqtt"]}
}

// Presence is edge.Config's Presence: the embedded broker's sessions; nil
// on Mosquitto, where only the heartbeat tells that a device left.
func (b *Broker) Presence() edge.Presence {
	if b.Embedded == nil {
		return nil
	}
	return b.Embedded.Sessions()
}

// SetEdgePassword hands the password of edge credentials to Mosquitto,
// which hashes it itself (as the operator API does); the embedded broker
// checks the stored hash.
func (b *Broker) SetEdgePassword(ctx context.Context, u store.MQTTUser, password string) error {
	if b.External == nil {
		return nil
	}
	return b.External.SetPassword(ctx, u, password)
}
