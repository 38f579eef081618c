package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"syscall"
	"testing"
	"time"

	paho "github.com/eclipse/paho.mqtt.golang"

	"github.com/openbdp/bdp/codec"
	"github.com/openbdp/bdp/mqtt/mosquittotest"
	"github.com/openbdp/bdp/store/pgcluster"
)

// mqttPlatform is bdp serve with its embedded broker, or with
// BDP_MQTT_EXTERNAL pointing at a Mosquitto of the test's, on a database
// of the test's (so that a kill -9 of bdp leaves it running).
type mqttPlatform struct {
	t       *testing.T
	broker  *mosquittotest.Broker // nil: the embedded broker
	url     string                // where MQTT clients connect
	dataDir string
	env     []string
	project int64
}

const (
	extAdminEmail    = "ada@ext.test"
	extAdminPassword = "ext-admin-pw-1"
)

func newMQTTPlatform(t *testing.T, external bool) *mqttPlatform {
	t.Helper()
	cl, stop, err := pgcluster.StartForTests(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(stop)
	p := &mqttPlatform{t: t, dataDir: newDataDir(t), env: []string{"BDP_DATABASE_URL=" + cl.URL()}}
	if external {
		p.broker = mosquittotest.Start(t)
		p.env = append(p.env, "BDP_MQTT_EXTERNAL="+p.broker.URL,
			"BDP_MQTT_ADMIN_USER="+p.broker.AdminUser, "BDP_MQTT_ADMIN_PASSWORD="+p.broker.AdminPassword)
	}
	return p
}

// start runs bdp serve and checks where addresses.json sends MQTT
// clients: the embedded listener, or the external broker and no listener.
func (p *mqttPlatform) start() *server {
	p.t.Helper()
	s := startServe(p.t, p.dataDir, p.env...)
	b, err := os.ReadFile(filepath.Join(p.dataDir, "addresses.json"))
	if err != nil {
		p.t.Fatal(err)
	}
	var addrs map[string]string
	if err := json.Unmarshal(b, &addrs); err != nil {
		p.t.Fatal(err)
	}
	switch {
	case p.broker != nil && (addrs["mqtt_external"] != p.broker.URL || addrs["mqtt"] != ""):
		p.t.Fatalf("addresses.json: %s, want mqtt_external %s and no embedded listener", b, p.broker.URL)
	case p.broker == nil && (addrs["mqtt"] == "" || addrs["mqtt_external"] != ""):
		p.t.Fatalf("addresses.json: %s, want the embedded listener", b)
	case p.broker != nil:
		p.url = p.broker.URL
	default:
		p.url = "tcp://" + addrs["mqtt"]
	}
	return s
}

var extAdmin = basicAuth(extAdminEmail, extAdminPassword)

// createProject makes the company with its admin, and a project.
func (p *mqttPlatform) createProject(s *server) {
	p.t.Helper()
	p.project = companyProject(p.t, s, "ext", extAdminEmail, extAdminPassword)
}

// mqttUser creates an MQTT user through the API and returns its id.
func (p *mqttPlatform) mqttUser(s *server, username, password, rights string) int64 {
	p.t.Helper()
	status, body := s.request("POST", fmt.Sprintf("/v2/project/%d/mqttuser", p.project), extAdmin,
		fmt.Sprintf(`{"username":%q,"password":%q,"rights":%q}`, username, password, rights))
	if status != 201 {
		p.t.Fatalf("MQTT user %s: %d %s", username, status, body)
	}
	var r struct {
		Resource struct{ ID int64 } `json:"resource"`
	}
	if err := json.Unmarshal(body, &r); err != nil {
		p.t.Fatal(err)
	}
	return r.Resource.ID
}

// stored lists a datapoint's observations as the HTTP export has them.
func (p *mqttPlatform) stored(s *server, id string) []float64 {
	p.t.Helper()
	status, body := s.request("GET", fmt.Sprintf("/v2/datapoint/timeseries?project_id=%d&dataPointID=%s&start=2000-01-01T00:00:00Z",
		p.project, id), extAdmin, "")
	if status == 404 {
		return nil
	}
	var got struct {
		Data []struct{ Value float64 } `json:"data"`
	}
	if status != 200 || json.Unmarshal(body, &got) != nil {
		p.t.Fatalf("timeseries of %s: %d %s", id, status, body)
	}
	var vs []float64
	for _, d := range got.Data {
		vs = append(vs, d.Value)
	}
	return vs
}

// gateway is an MQTT 3.1.1 client of the test.
type gateway struct {
	c    paho.Client
	lost chan error
	mu   sync.Mutex
	got  map[string]int
}

func (p *mqttPlatform) connect(username, password string) (*gateway, error) {
	g := &gateway{lost: make(chan error, 1), got: map[string]int{}}
	c := paho.NewClient(paho.NewClientOptions().AddBroker(p.url).SetClientID(username + "-" + time.Now().Format("150405.000000")).
		SetUsername(username).SetPassword(password).SetAutoReconnect(false).SetProtocolVersion(4).
		SetConnectTimeout(10 * time.Second).
		SetConnectionLostHandler(func(_ paho.Client, err error) { g.lost <- err }).
		SetDefaultPublishHandler(func(_ paho.Client, m paho.Message) {
			g.mu.Lock()
			g.got[m.Topic()]++
			g.mu.Unlock()
		}))
	tok := c.Connect()
	if !tok.WaitTimeout(15 * time.Second) {
		return nil, fmt.Errorf("CONNECT of %s not answered", username)
	}
	if err := tok.Error(); err != nil {
		return nil, err
	}
	g.c = c
	p.t.Cleanup(func() { c.Disconnect(0) })
	return g, nil
}

func (p *mqttPlatform) mustConnect(username, password string) *gateway {
	p.t.Helper()
	g, err := p.connect(username, password)
	if err != nil {
		p.t.Fatalf("connect as %s: %v", username, err)
	}
	return g
}

func (g *gateway) publish(t *testing.T, topic, payload string) {
	t.Helper()
	tok := g.c.Publish(topic, 1, false, payload)
	if !tok.WaitTimeout(10*time.Second) || tok.Error() != nil {
		t.Fatalf("publish to %s: %v", topic, tok.Error())
	}
}

func (g *gateway) received(topic string) int {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.got[topic]
}

func (g *gateway) waitLost(t *testing.T, what string) {
	t.Helper()
	select {
	case <-g.lost:
	case <-time.After(5 * time.Second):
		t.Fatalf("%s: the old session is still open after 5 s", what)
	}
}

func within(t *testing.T, d time.Duration, what string, cond func() bool) {
	t.Helper()
	for deadline := time.Now().Add(d); !cond(); time.Sleep(50 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("%s: not within %s", what, d)
		}
	}
}

// The same MQTT scenario against bdp serve with its embedded broker and
// with BDP_MQTT_EXTERNAL (Debian's mosquitto): MQTT users made through the
// API log in with their passwords and the rights the API gave them; a
// write user's publish is stored and reaches a read user once; live data
// of an HTTP upload reaches it; a change of password or a deletion closes
// the old session; edge credentials rotate. External only: the admin's
// name is reserved, and with the broker away a new user is refused with
// 503 and nothing is created.
func TestServeMQTTBothModes(t *testing.T) {
	for _, mode := range []struct {
		name     string
		external bool
	}{{"embedded", false}, {"external", true}} {
		t.Run(mode.name, func(t *testing.T) { mqttScenario(t, mode.external) })
	}
}

func mqttScenario(t *testing.T, external bool) {
	p := newMQTTPlatform(t, external)
	s := p.start()
	p.createProject(s)

	if external {
		status, body := s.request("POST", fmt.Sprintf("/v2/project/%d/mqttuser", p.project), extAdmin,
			fmt.Sprintf(`{"username":%q,"password":"whatever-pw","rights":"read"}`, p.broker.AdminUser))
		if status != 400 {
			t.Fatalf("an MQTT user named as the broker's admin: %d %s", status, body)
		}
	}
	gwID := p.mqttUser(s, "gw", "gw-password-1", "write")
	rdID := p.mqttUser(s, "rd", "rd-password-1", "read")
	if _, err := p.connect("gw", "wrong-password"); err == nil {
		t.Fatal("a wrong password connects")
	}
	gw := p.mustConnect("gw", "gw-password-1")
	rd := p.mustConnect("rd", "rd-password-1")
	if tok := rd.c.Subscribe(fmt.Sprintf("project/%d/#", p.project), 1, nil); !tok.WaitTimeout(10*time.Second) || tok.Error() != nil {
		t.Fatalf("subscribe: %v", tok.Error())
	}

	// The write user's publish is stored (and the read user gets it).
	topic := codec.DatapointTopic(p.project, "t/1")
	gw.publish(t, topic, `[{"time":"2026-01-02T03:04:05Z","value":1},{"time":"2026-01-02T03:04:06Z","value":2}]`)
	within(t, 10*time.Second, "the gateway's observations stored", func() bool { return len(p.stored(s, "t/1")) == 2 })
	// The embedded broker stores the publish and sends each observation as
	// live data; Mosquitto carries the gateway's own message, once.
	want := 2
	if external {
		want = 1
	}
	within(t, 5*time.Second, "the read user receives the gateway's observations", func() bool { return rd.received(topic) == want })

	// Live data of an HTTP upload reaches the read user through the broker.
	up := codec.DatapointTopic(p.project, "up")
	if status, body := s.request("POST", fmt.Sprintf("/v2/project/%d/timeseries", p.project), extAdmin,
		`{"up":[{"time":"2026-01-02T03:04:05Z","value":7}]}`); status != 200 {
		t.Fatalf("upload: %d %s", status, body)
	}
	within(t, 5*time.Second, "live data of an upload", func() bool { return rd.received(up) == 1 })
	// Nothing came twice (the upload's live data, later, has arrived, so a
	// second copy would have too): in external mode what came in over MQTT
	// is not published again as live data.
	if n := rd.received(topic); n != want {
		t.Errorf("the read user got %d messages of the gateway's observations, want %d", n, want)
	}

	// A new password through PUT: the old session closes, the old password
	// is refused, the new one works.
	status, body := s.request("PUT", fmt.Sprintf("/v2/project/%d/mqttuser/%d", p.project, rdID), extAdmin, `{"password":"rd-password-2"}`)
	if status != 201 {
		t.Fatalf("PUT password: %d %s", status, body)
	}
	rd.waitLost(t, "password change")
	if _, err := p.connect("rd", "rd-password-1"); err == nil {
		t.Error("the old password still connects")
	}
	p.mustConnect("rd", "rd-password-2")

	// DELETE closes the session at once.
	if status, body := s.request("DELETE", fmt.Sprintf("/v2/project/%d/mqttuser/%d", p.project, gwID), extAdmin, ""); status != 200 {
		t.Fatalf("DELETE: %d %s", status, body)
	}
	gw.waitLost(t, "delete")
	if _, err := p.connect("gw", "gw-password-1"); err == nil {
		t.Error("a deleted user connects")
	}

	// Edge credentials and their rotation.
	edgePassword := func() (string, string) {
		status, body := s.request("POST", fmt.Sprintf("/operator/projects/%d/edge", p.project), operator, "")
		var r struct {
			Resource struct{ Username, Password string } `json:"resource"`
		}
		if status != 201 || json.Unmarshal(body, &r) != nil {
			t.Fatalf("edge credentials: %d %s", status, body)
		}
		return r.Resource.Username, r.Resource.Password
	}
	user, pw1 := edgePassword()
	edge := p.mustConnect(user, pw1)
	_, pw2 := edgePassword()
	edge.waitLost(t, "edge rotation")
	if _, err := p.connect(user, pw1); err == nil {
		t.Error("the old edge password still connects")
	}
	p.mustConnect(user, pw2)

	if !external {
		return
	}
	// The broker away: no MQTT user can be made (503), and none is left.
	p.broker.Stop(t)
	status, body = s.request("POST", fmt.Sprintf("/v2/project/%d/mqttuser", p.project), extAdmin,
		`{"username":"late","password":"late-password","rights":"read"}`)
	if status != 503 {
		t.Fatalf("an MQTT user while the broker is away: %d %s, want 503", status, body)
	}
	_, body = s.request("GET", fmt.Sprintf("/v2/project/%d/mqttusers", p.project), extAdmin, "")
	var list []struct{ Username string }
	if err := json.Unmarshal(body, &list); err != nil {
		t.Fatalf("list: %v %s", err, body)
	}
	for _, u := range list {
		if u.Username == "late" {
			t.Fatalf("the refused user was kept: %s", body)
		}
	}
	p.broker.Resume(t)
	within(t, 15*time.Second, "an MQTT user once the broker is back", func() bool {
		status, _ := s.request("POST", fmt.Sprintf("/v2/project/%d/mqttuser", p.project), extAdmin,
			`{"username":"late","password":"late-password","rights":"read"}`)
		return status == 201
	})
	p.mustConnect("late", "late-password")
}

// A kill -9 of bdp while a gateway publishes loses nothing Mosquitto
// acknowledged to the gateway: bdp acknowledges to Mosquitto only once
// stored, and its persistent session at Mosquitto keeps the rest until
// bdp is back.
func TestServeExternalMQTTIngestSurvivesKill9(t *testing.T) {
	p := newMQTTPlatform(t, true)
	s := p.start()
	p.createProject(s)
	p.mqttUser(s, "gw", "gw-password-1", "write")
	gw := p.mustConnect("gw", "gw-password-1")
	const n = 400
	topic := codec.DatapointTopic(p.project, "k9")
	at := time.Date(2026, 1, 2, 0, 0, 0, 0, time.UTC)
	for i := range n {
		if i == n/4 {
			if err := s.cmd.Process.Signal(syscall.SIGKILL); err != nil {
				t.Fatal(err)
			}
			<-s.exited
		}
		gw.publish(t, topic, fmt.Sprintf(`{"time":%q,"value":%d}`, at.Add(time.Duration(i)*time.Second).Format(time.RFC3339), i))
	}
	s = p.start()
	within(t, 30*time.Second, "every acknowledged observation stored", func() bool { return len(p.stored(s, "k9")) == n })
}
