package mqtt

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	pahov1 "github.com/eclipse/paho.mqtt.golang"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/openbdp/bdp/codec"
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
	ctx := context.Background()
	f := &externalFixture{broker: mosquittotest.Start(t)}
	st, err := store.Open(ctx, testCluster.TestDatabase(t))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(st.Close)
	if _, err := st.Migrate(ctx); err != nil {
		t.Fatal(err)
	}
	f.store, f.router = st, pipeline.NewRouter()
	f.sink, err = pipeline.NewBatcher(pipeline.BatcherConfig{MaxWait: time.Millisecond}, st, f.router, prometheus.NewRegistry())
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

func TestExternalDynsecBatchAnswersInOrder(t *testing.T) {
	f := newExternalFixture(t)
	ctx := context.Background()
	answers, err := f.ext.ds.Do(ctx,
		dsCreateRole("r1"),
		// Not marked as bdp's (dynsecManaged): no sync deletes them.
		DynsecCommand{"command": "createClient", "username": "c1", "password": "password-1"},
		DynsecCommand{"command": "createClient", "username": "c1", "password": "password-2"}, // a second time: refused
		dsAddRoleACL("r1", dynsecACL{"subscribePattern", "x/#"}),
		dsGetRole("no-such-role"))
	if err != nil {
		t.Fatal(err)
	}
	var errs []string
	for _, a := range answers {
		if a.Err() == nil {
			errs = append(errs, "")
		} else {
			errs = append(errs, a.Error)
		}
	}
	want := []string{"", "", dynsecClientExists, "", dynsecRoleNotFound}
	if strings.Join(errs, "|") != strings.Join(want, "|") {
		t.Fatalf("answers %q, want %q", errs, want)
	}
	if err := f.ext.ds.Run(ctx, dsDeleteClient("no-such-client")); !dynsecIs(err, dynsecClientNotFound) {
		t.Fatalf("delete of an unknown client: %v", err)
	}
	// More commands than one message takes: every one answered, in order.
	var many []DynsecCommand
	for i := range dynsecBatch + 10 {
		many = append(many, dsCreateRole(fmt.Sprintf("many-%d", i)))
	}
	answers, err = f.ext.ds.Do(ctx, many...)
	if err != nil || len(answers) != len(many) {
		t.Fatalf("%d answers to %d commands: %v", len(answers), len(many), err)
	}
	for i, a := range answers {
		if a.Command != "createRole" || a.Err() != nil {
			t.Fatalf("answer %d: %+v", i, a)
		}
	}
	if _, err := f.connect(t, "c1", "password-1"); err != nil {
		t.Fatalf("the client made through the plugin: %v", err)
	}
	if _, err := f.connect(t, "c1", "password-2"); err == nil {
		t.Fatal("the refused second createClient's password works")
	}
}

func TestExternalUsersAuthAndACL(t *testing.T) {
	f := newExternalFixture(t)
	pid, admin := f.company(t, "acme")
	other, otherAdmin := f.company(t, "other")
	f.mqttUser(t, store.MQTTUser{ProjectID: pid, Username: "reader", Rights: store.MQTTRead, CreatedBy: admin}, "reader-pw-1")
	f.mqttUser(t, store.MQTTUser{ProjectID: pid, Username: "writer", Rights: store.MQTTWrite, CreatedBy: admin}, "writer-pw-1")
	f.mqttUser(t, store.MQTTUser{ProjectID: other, Username: "stranger", Rights: store.MQTTWrite, CreatedBy: otherAdmin}, "stranger-pw")

	for _, c := range []struct{ user, password string }{
		{"reader", "wrong-password"}, {"reader", ""}, {"nobody", "reader-pw-1"}, {mosquittotest.AdminUser, "reader-pw-1"},
	} {
		if _, err := f.connect(t, c.user, c.password); err == nil {
			t.Errorf("%s with password %q: connected", c.user, c.password)
		}
	}
	reader := f.mustConnect(t, "reader", "reader-pw-1")
	writer := f.mustConnect(t, "writer", "writer-pw-1")
	stranger := f.mustConnect(t, "stranger", "stranger-pw")

	own := fmt.Sprintf("project/%d/#", pid)
	for _, c := range []struct {
		client *mqttClient
		filter string
		want   bool
	}{
		{reader, own, true},
		{reader, fmt.Sprintf("project/%d/#", other), false},
		{reader, "project/+/datapoint/#", false},
		{reader, "#", false},
		{reader, fmt.Sprintf("edge/%d/#", pid), false},
		{writer, own, true},
		{stranger, fmt.Sprintf("project/%d/#", other), true},
		{stranger, own, false},
	} {
		if got := c.client.subscribe(t, c.filter); got != c.want {
			t.Errorf("subscribe %s: granted %v, want %v", c.filter, got, c.want)
		}
	}

	// The write user publishes; bdp ingests it (stored, then acknowledged)
	// and the read user receives it from the broker.
	topic := codec.DatapointTopic(pid, "hall/temp")
	writer.publish(t, topic, `[{"time":"2026-01-02T03:04:05Z","value":21.5},{"time":"2026-01-02T03:04:06Z","value":22}]`)
	eventually(t, "the write user's publish stored", func() bool { return f.stored(t, pid, "hall/temp") == 2 })
	eventually(t, "the read user receives the write user's publish", func() bool { return len(reader.received(topic)) == 1 })
	// The read user may not publish: nothing of it is stored.
	reader.publish(t, topic, `{"time":"2026-01-02T03:04:07Z","value":99}`)
	// Nor may the other project's user publish into this project.
	stranger.publish(t, codec.DatapointTopic(pid, "intruder"), `{"time":"2026-01-02T03:04:07Z","value":99}`)
	writer.publish(t, codec.DatapointTopic(pid, "marker"), `{"time":"2026-01-02T03:04:07Z","value":1}`)
	eventually(t, "the marker stored", func() bool { return f.stored(t, pid, "marker") == 1 })
	if n := f.stored(t, pid, "hall/temp"); n != 2 {
		t.Errorf("the read user's publish was stored: %d observations", n)
	}
	if n := f.stored(t, pid, "intruder"); n != 0 {
		t.Errorf("another project's user published into this one: %d stored", n)
	}

	// Live data of an upload through the Sink: the project's subscribers get
	// it, the other project's do not.
	live := codec.DatapointTopic(pid, "up%load")
	f.ingest(t, pid, "up%load")
	if err := f.ext.Publish(live, []byte(`{"time":"2026-01-02T03:04:08Z","value":1}`), 1); err != nil {
		t.Fatal(err)
	}
	eventually(t, "live data reaches the read user", func() bool { return len(reader.received(live)) == 1 })
	if ts := stranger.topics(); len(ts) != 0 {
		t.Errorf("the other project's user received %v", ts)
	}
	// bdp's own live data is not ingested again (it would loop).
	time.Sleep(200 * time.Millisecond)
	if n := f.stored(t, pid, "up%load"); n != 1 {
		t.Errorf("live data was ingested back: %d observations of up%%load", n)
	}
}

func TestExternalTagAuthFiltersWhatAReadUserReceives(t *testing.T) {
	f := newExternalFixture(t)
	ctx := context.Background()
	pid, admin := f.company(t, "acme")
	p, err := f.store.Project(ctx, pid)
	if err != nil {
		t.Fatal(err)
	}
	limited, err := f.store.CreateUser(ctx, store.NewUser{CompanyID: p.CompanyID, FirstName: "L", LastName: "U", Email: "l@acme.test", PasswordHash: "h"})
	if err != nil {
		t.Fatal(err)
	}
	role, err := f.store.CreateProjectRole(ctx, store.ProjectRole{Name: "rooms", ProjectID: pid, AuthedEndpoints: []int32{1},
		AuthedTags: []store.TagAuth{{Key: "name", Value: "room*", Read: true, Write: true}}})
	if err != nil {
		t.Fatal(err)
	}
	if err := f.store.AssignProjectRole(ctx, role.ID, limited.ID); err != nil {
		t.Fatal(err)
	}
	f.ingest(t, pid, "room1", "hall1")
	f.mqttUser(t, store.MQTTUser{ProjectID: pid, Username: "rooms-reader", Rights: store.MQTTRead, CreatedBy: limited.ID}, "rooms-reader-pw")
	f.mqttUser(t, store.MQTTUser{ProjectID: pid, Username: "rooms-writer", Rights: store.MQTTWrite, CreatedBy: limited.ID}, "rooms-writer-pw")
	f.mqttUser(t, store.MQTTUser{ProjectID: pid, Username: "all-reader", Rights: store.MQTTRead, CreatedBy: admin}, "all-reader-pw")
	rooms := f.mustConnect(t, "rooms-reader", "rooms-reader-pw")
	all := f.mustConnect(t, "all-reader", "all-reader-pw")
	for _, c := range []*mqttClient{rooms, all} {
		if !c.subscribe(t, fmt.Sprintf("project/%d/#", pid)) {
			t.Fatal("subscribe to the own project refused")
		}
	}
	publish := func(id string) {
		if err := f.ext.Publish(codec.DatapointTopic(pid, id), []byte(`{"time":"2026-01-02T03:04:05Z","value":1}`), 1); err != nil {
			t.Fatal(err)
		}
	}
	publish("room1")
	publish("hall1")
	eventually(t, "the unlimited reader gets both", func() bool { return len(all.topics()) == 2 })
	time.Sleep(100 * time.Millisecond)
	if got := rooms.topics(); len(got) != 1 || got[0] != codec.DatapointTopic(pid, "room1") {
		t.Fatalf("the TagAuth-limited reader received %v, want only room1", got)
	}

	// A new datapoint its creator may read: listed once live data shows it.
	f.ingest(t, pid, "room2")
	publish("room2")
	eventually(t, "a new readable datapoint reaches the limited reader", func() bool {
		publish("room2")
		return len(rooms.received(codec.DatapointTopic(pid, "room2"))) > 0
	})

	// The write user may publish only what its creator may write.
	writer := f.mustConnect(t, "rooms-writer", "rooms-writer-pw")
	writer.publish(t, codec.DatapointTopic(pid, "hall1"), `{"time":"2026-01-02T03:04:09Z","value":5}`)
	writer.publish(t, codec.DatapointTopic(pid, "room1"), `{"time":"2026-01-02T03:04:09Z","value":5}`)
	eventually(t, "a writable datapoint stored", func() bool { return f.stored(t, pid, "room1") == 2 })
	if n := f.stored(t, pid, "hall1"); n != 1 {
		t.Errorf("hall1, outside the creator's TagAuths, has %d observations after the write user's publish", n)
	}

	// The creator loses the grant: so does the MQTT user, at once.
	if err := f.store.UnassignProjectRole(ctx, role.ID, limited.ID); err != nil {
		t.Fatal(err)
	}
	before := len(rooms.received(codec.DatapointTopic(pid, "room1")))
	time.Sleep(300 * time.Millisecond) // the notice and the sync
	publish("room1")
	eventually(t, "the unlimited reader still gets room1", func() bool { return len(all.received(codec.DatapointTopic(pid, "room1"))) == 2 })
	time.Sleep(100 * time.Millisecond)
	if n := len(rooms.received(codec.DatapointTopic(pid, "room1"))); n != before {
		t.Errorf("after its creator lost the TagAuth the reader still received room1 (%d messages, %d before)", n, before)
	}
}

func TestExternalExpiryDeleteAndEdgeRotation(t *testing.T) {
	f := newExternalFixture(t)
	ctx := context.Background()
	pid, admin := f.company(t, "acme")

	// Expiry: a 2-s user's session closes within 1 s of valid_until.
	until := time.Now().Add(2 * time.Second)
	f.mqttUser(t, store.MQTTUser{ProjectID: pid, Username: "brief", Rights: store.MQTTRead, CreatedBy: admin, ValidUntil: &until}, "brief-pw-1")
	brief := f.mustConnect(t, "brief", "brief-pw-1")
	brief.waitLost(t, time.Until(until)+time.Second, "expiry")
	if late := time.Since(until); late < -50*time.Millisecond {
		t.Errorf("the session closed %s before valid_until", -late)
	}
	if _, err := f.connect(t, "brief", "brief-pw-1"); err == nil {
		t.Error("an expired user connects")
	}

	// Deleting a user closes its session.
	gone := f.mqttUser(t, store.MQTTUser{ProjectID: pid, Username: "gone", Rights: store.MQTTRead, CreatedBy: admin}, "gone-pw-1")
	goneClient := f.mustConnect(t, "gone", "gone-pw-1")
	if err := f.store.DeleteMQTTUser(ctx, pid, gone.ID); err != nil {
		t.Fatal(err)
	}
	goneClient.waitLost(t, 2*time.Second, "delete")
	if _, err := f.connect(t, "gone", "gone-pw-1"); err == nil {
		t.Error("a deleted user connects")
	}

	// Edge credentials: edge/{p}/# only; a rotation closes the old session
	// and refuses the old password.
	edge := f.mqttUser(t, store.MQTTUser{ProjectID: pid, Edge: true}, "edge-pw-1")
	old := f.mustConnect(t, edge.Username, "edge-pw-1")
	if !old.subscribe(t, fmt.Sprintf("edge/%d/#", pid)) {
		t.Error("edge credentials may not subscribe to their tree")
	}
	if old.subscribe(t, fmt.Sprintf("project/%d/#", pid)) {
		t.Error("edge credentials may subscribe to the project's live data")
	}
	f.mqttUser(t, store.MQTTUser{ProjectID: pid, Edge: true}, "edge-pw-2")
	old.waitLost(t, 2*time.Second, "edge rotation")
	if _, err := f.connect(t, edge.Username, "edge-pw-1"); err == nil {
		t.Error("the old edge password still works")
	}
	f.mustConnect(t, edge.Username, "edge-pw-2")
}

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
	for reason, want := range map[string]float64{dropReasonTopic: 2, dropReasonPayload: 2, dropReasonInvalid: 1} {
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
