package mqtt

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	pahov1 "github.com/eclipse/paho.mqtt.golang"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/openbdp/bdp/mqtt/mosquittotest"
	"github.com/openbdp/bdp/pipeline"
	"github.com/openbdp/bdp/store"
)

// externalFixture is a Mosquitto with the dynamic-security plugin, a
// database, the pipeline's Batcher and bdp's External connection.
type externalFixture struct {
	broker *mosquittotest.Broker
	store  *store.Store
	sink   *pipeline.Batcher
	router *pipeline.Router
	ext    *External
}

func newExternalFixture(t *testing.T) *externalFixture {
	t.Helper()
	f := &externalFixture{broker: mosquittotest.Start(t)}
	f.store, _ = openTestStore(t)
	f.router = pipeline.NewRouter()
	var err error
	f.sink, err = pipeline.NewBatcher(pipeline.BatcherConfig{MaxWait: time.Millisecond}, f.store, f.router, prometheus.NewRegistry())
	if err != nil {
		t.Fatal(err)
	}
	go f.sink.Run()
	t.Cleanup(f.sink.Stop)
	f.ext = f.startExternal(t, "bdp-test")
	return f
}

func (f *externalFixture) startExternal(t *testing.T, clientID string) *External {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	ext, err := StartExternal(ctx, ExternalConfig{URL: f.broker.URL, AdminUser: f.broker.AdminUser,
		AdminPassword: f.broker.AdminPassword, ClientID: clientID, Store: f.store, Sink: f.sink})
	if err != nil {
		t.Fatalf("start external: %v\n%s", err, f.broker.Log())
	}
	t.Cleanup(func() { _ = ext.Close(context.Background()) })
	return ext
}

// company makes a company with its admin (a company role: every datapoint)
// and one project.
func (f *externalFixture) company(t *testing.T, name string) (projectID, adminID int64) {
	t.Helper()
	ctx := context.Background()
	co, u, _, err := f.store.CreateCompany(ctx, store.Company{Name: name},
		store.NewUser{FirstName: "A", LastName: "B", Email: "a@" + name + ".test", PasswordHash: "h"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	p, _, err := f.store.CreateProject(ctx, u.ID, store.Project{CompanyID: co.ID, Name: "p"}, []int32{1})
	if err != nil {
		t.Fatal(err)
	}
	return p.ID, u.ID
}

// mqttUser stores an MQTT user and hands its password to the broker, as
// the HTTP layer does.
func (f *externalFixture) mqttUser(t *testing.T, u store.MQTTUser, password string) store.MQTTUser {
	t.Helper()
	ctx := context.Background()
	if u.ValidUntil == nil && !u.Edge {
		later := time.Now().Add(time.Hour)
		u.ValidUntil = &later
	}
	var err error
	if u.Edge {
		u, err = f.store.PutEdgeCredentials(ctx, u.ProjectID, "hash")
	} else {
		u.PasswordHash = "hash"
		u, err = f.store.CreateMQTTUser(ctx, u)
	}
	if err != nil {
		t.Fatal(err)
	}
	if err := f.ext.SetPassword(ctx, u, password); err != nil {
		t.Fatalf("set password of %s: %v", u.Username, err)
	}
	return u
}

// ingest stores observations through the Sink, as an HTTP upload does.
func (f *externalFixture) ingest(t *testing.T, projectID int64, ids ...string) time.Time {
	t.Helper()
	at := time.Now().UTC().Truncate(time.Millisecond)
	var obs []pipeline.Observation
	for i, id := range ids {
		obs = append(obs, pipeline.Observation{ProjectID: projectID, DataPointID: id, Time: at, Value: float64(i + 1)})
	}
	if err := f.sink.Write(context.Background(), pipeline.SourceHTTP, obs); err != nil {
		t.Fatal(err)
	}
	return at
}

// stored counts a datapoint's observations.
func (f *externalFixture) stored(t *testing.T, projectID int64, id string) int64 {
	t.Helper()
	ctx := context.Background()
	d, err := f.store.Datapoint(ctx, projectID, id)
	if err != nil {
		return 0
	}
	n, err := f.store.CountObservations(ctx, d.ID, time.Unix(0, 0), time.Now().Add(time.Hour), 0)
	if err != nil {
		t.Fatal(err)
	}
	return n
}

// mqttClient is an MQTT 3.1.1 client (paho.mqtt.golang) of a test, with
// what it received and whether its connection was lost.
type mqttClient struct {
	c    pahov1.Client
	lost chan error
	mu   sync.Mutex
	got  map[string][]string // topic -> payloads
}

func (f *externalFixture) connect(t *testing.T, username, password string) (*mqttClient, error) {
	t.Helper()
	mc := &mqttClient{lost: make(chan error, 1), got: map[string][]string{}}
	opts := pahov1.NewClientOptions().AddBroker(f.broker.URL).SetClientID(username + "-" + randomID()).
		SetUsername(username).SetPassword(password).SetAutoReconnect(false).SetConnectRetry(false).
		SetConnectTimeout(5 * time.Second).
		SetConnectionLostHandler(func(_ pahov1.Client, err error) { mc.lost <- err }).
		SetDefaultPublishHandler(func(_ pahov1.Client, m pahov1.Message) {
			mc.mu.Lock()
			mc.got[m.Topic()] = append(mc.got[m.Topic()], string(m.Payload()))
			mc.mu.Unlock()
		})
	mc.c = pahov1.NewClient(opts)
	tok := mc.c.Connect()
	if !tok.WaitTimeout(10 * time.Second) {
		return nil, fmt.Errorf("connect %s: no answer", username)
	}
	if err := tok.Error(); err != nil {
		return nil, err
	}
	t.Cleanup(func() { mc.c.Disconnect(0) })
	return mc, nil
}

func (f *externalFixture) mustConnect(t *testing.T, username, password string) *mqttClient {
	t.Helper()
	mc, err := f.connect(t, username, password)
	if err != nil {
		t.Fatalf("connect as %s: %v", username, err)
	}
	return mc
}

// subscribe returns whether the broker granted the filter.
func (mc *mqttClient) subscribe(t *testing.T, filter string) bool {
	t.Helper()
	// No handler of its own: paho would route each message to every
	// matching filter's handler, refused ones too; the default handler
	// sees each message once.
	tok := mc.c.Subscribe(filter, 1, nil)
	if !tok.WaitTimeout(5*time.Second) || tok.Error() != nil {
		t.Fatalf("subscribe %s: %v", filter, tok.Error())
	}
	return tok.(*pahov1.SubscribeToken).Result()[filter] < 0x80
}

func (mc *mqttClient) publish(t *testing.T, topic, payload string) {
	t.Helper()
	tok := mc.c.Publish(topic, 1, false, payload)
	if !tok.WaitTimeout(5*time.Second) || tok.Error() != nil {
		t.Fatalf("publish %s: %v", topic, tok.Error())
	}
}

func (mc *mqttClient) received(topic string) []string {
	mc.mu.Lock()
	defer mc.mu.Unlock()
	return append([]string(nil), mc.got[topic]...)
}

func (mc *mqttClient) topics() []string {
	mc.mu.Lock()
	defer mc.mu.Unlock()
	var ts []string
	for t := range mc.got {
		ts = append(ts, t)
	}
	return ts
}

// eventually polls cond for up to 5 s.
func eventually(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("%s: not within 5 s", what)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// waitLost waits for the broker to close a client's connection.
func (mc *mqttClient) waitLost(t *testing.T, within time.Duration, what string) {
	t.Helper()
	select {
	case <-mc.lost:
	case <-time.After(within):
		t.Fatalf("%s: the session is still open after %s", what, within)
	}
}
