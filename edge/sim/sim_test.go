package sim

import (
	"context"
	"crypto/rand"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"slices"
	"sync"
	"testing"
	"time"

	paho "github.com/eclipse/paho.mqtt.golang"
	mochi "github.com/mochi-mqtt/server/v2"
	"github.com/mochi-mqtt/server/v2/listeners"
	"github.com/mochi-mqtt/server/v2/packets"

	"github.com/openbdp/bdp/edge"
	"github.com/openbdp/bdp/edge/edgetest"
)

const project = 7

// startBroker serves a plain mochi broker on 127.0.0.1, port 0 (the
// platform's broker with its ACL is exercised by cmd/bdp's tests).
func startBroker(t testing.TB) string {
	t.Helper()
	server := mochi.New(&mochi.Options{Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err := server.AddHook(new(allowAll), nil); err != nil {
		t.Fatal(err)
	}
	tcp := listeners.NewTCP(listeners.Config{ID: "tcp", Address: "127.0.0.1:0"})
	if err := server.AddListener(tcp); err != nil {
		t.Fatal(err)
	}
	if err := server.Serve(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = server.Close() })
	return "tcp://" + tcp.Address()
}

// allowAll lets every client connect and use every topic.
type allowAll struct{ mochi.HookBase }

func (*allowAll) ID() string { return "allow-all" }
func (*allowAll) Provides(b byte) bool {
	return b == mochi.OnConnectAuthenticate || b == mochi.OnACLCheck
}
func (*allowAll) OnConnectAuthenticate(*mochi.Client, packets.Packet) bool { return true }
func (*allowAll) OnACLCheck(*mochi.Client, string, bool) bool              { return true }

// platform is the other side: it sends requests and checks every message
// the simulator sends against the protocol's schemas and decoders.
type platform struct {
	t         testing.TB
	schemas   edgetest.Schemas
	client    paho.Client
	responses chan edge.Response
	alives    chan edge.Alive

	mu     sync.Mutex
	events []edge.Event
	data   []edge.Observation
}

func startPlatform(t testing.TB, broker string) *platform {
	t.Helper()
	p := &platform{t: t, schemas: edgetest.CompileSchemas(t), responses: make(chan edge.Response, 100), alives: make(chan edge.Alive, 1000)}
	p.client = paho.NewClient(paho.NewClientOptions().AddBroker(broker).SetClientID("platform"))
	if tok := p.client.Connect(); !tok.WaitTimeout(5*time.Second) || tok.Error() != nil {
		t.Fatalf("platform connect: %v", tok.Error())
	}
	t.Cleanup(func() { p.client.Disconnect(100) })
	subs := map[string]byte{edge.ResponseTopic(project): 1, edge.AliveTopic(project): 1, edge.DataTopic(project): 1}
	if tok := p.client.SubscribeMultiple(subs, p.received); !tok.WaitTimeout(5*time.Second) || tok.Error() != nil {
		t.Fatalf("platform subscribe: %v", tok.Error())
	}
	return p
}

func (p *platform) received(_ paho.Client, m paho.Message) {
	payload := m.Payload()
	switch m.Topic() {
	case edge.ResponseTopic(project):
		p.validate("response", payload)
		r, err := edge.DecodeResponse(payload)
		if err != nil {
			p.t.Errorf("response %s: %v", payload, err)
			return
		}
		p.responses <- r
	case edge.AliveTopic(project):
		p.validate("alive", payload)
		a, err := edge.DecodeAlive(payload)
		if err != nil {
			p.t.Errorf("alive %s: %v", payload, err)
			return
		}
		p.mu.Lock()
		p.events = append(p.events, a.Events...)
		p.mu.Unlock()
		select {
		case p.alives <- a:
		default:
		}
	case edge.DataTopic(project):
		p.validate("data", payload)
		obs, err := edge.DecodeData(payload)
		if err != nil {
			p.t.Errorf("data %s: %v", payload, err)
			return
		}
		p.mu.Lock()
		p.data = append(p.data, obs...)
		p.mu.Unlock()
	}
}

func (p *platform) validate(schema string, payload []byte) {
	if err := p.schemas.Validate(schema, payload); err != nil {
		p.t.Errorf("simulator sent %s %s: %v", schema, payload, err)
	}
}

func uuid(t testing.TB) string {
	b := make([]byte, 16)
	if _, err := rand.Read(b); err != nil {
		t.Fatal(err)
	}
	return fmt.Sprintf("%x-%x-%x-%x-%x", b[0:4], b[4:6], b[6:8], b[8:10], b[10:])
}

// send publishes a raw request and waits for the response with reference.
func (p *platform) send(payload []byte, reference string) edge.Response {
	p.t.Helper()
	if tok := p.client.Publish(edge.RequestTopic(project), 1, false, payload); !tok.WaitTimeout(5*time.Second) || tok.Error() != nil {
		p.t.Fatalf("publish request: %v", tok.Error())
	}
	deadline := time.After(5 * time.Second)
	for {
		select {
		case r := <-p.responses:
			if r.Reference == reference {
				return r
			}
		case <-deadline:
			p.t.Fatalf("no response to %s", payload)
		}
	}
}

func (p *platform) request(r edge.Request) edge.Response {
	p.t.Helper()
	r.Reference = uuid(p.t)
	payload, err := json.Marshal(r)
	if err != nil {
		p.t.Fatal(err)
	}
	if err := p.schemas.Validate("request", payload); err != nil {
		p.t.Fatalf("test request %s: %v", payload, err)
	}
	return p.send(payload, r.Reference)
}

func (p *platform) write(id string, v *float64, priority int) edge.Response {
	return p.request(edge.Request{Operation: edge.OpWrite, DataPointID: id, Value: v, Priority: priority})
}

func (p *platform) read(id string) edge.Response {
	return p.request(edge.Request{Operation: edge.OpRead, DataPointID: id})
}

// waitEvent waits for an event of kind for appID in a heartbeat.
func (p *platform) waitEvent(kind, appID string, within time.Duration) edge.Event {
	p.t.Helper()
	deadline := time.Now().Add(within)
	for time.Now().Before(deadline) {
		p.mu.Lock()
		i := slices.IndexFunc(p.events, func(e edge.Event) bool { return e.Kind == kind && e.AppID == appID })
		var e edge.Event
		if i >= 0 {
			e = p.events[i]
		}
		p.mu.Unlock()
		if i >= 0 {
			return e
		}
		time.Sleep(20 * time.Millisecond)
	}
	p.t.Fatalf("no %s event for app %q within %s", kind, appID, within)
	return edge.Event{}
}

// waitApp waits for a heartbeat showing the app running or not.
func (p *platform) waitApp(id string, running bool, within time.Duration) {
	p.t.Helper()
	deadline := time.After(within)
	for {
		select {
		case a := <-p.alives:
			if slices.Contains(a.Apps, edge.AppState{ID: id, Running: running}) {
				return
			}
		case <-deadline:
			p.t.Fatalf("no heartbeat with app %s running=%v within %s", id, running, within)
		}
	}
}

// testConfig is a simulator configured for tests: fast heartbeats,
// checks, boots and reloads.
func testConfig(broker string, datapoints map[string]*float64) Config {
	return Config{Broker: broker, ProjectID: project, Datapoints: datapoints,
		AliveInterval: 100 * time.Millisecond, CheckInterval: 50 * time.Millisecond, DataInterval: 200 * time.Millisecond,
		BootDelay: 100 * time.Millisecond, ReloadDelay: 300 * time.Millisecond}
}

// startSim runs a simulator and waits for its first heartbeat (sent once it
// has subscribed to requests).
func startSim(t testing.TB, broker string, p *platform, datapoints map[string]*float64) *Simulator {
	t.Helper()
	s, _ := startSimWith(t, p, testConfig(broker, datapoints))
	return s
}

// startSimWith runs a simulator with cfg; stop ends it and waits (also
// called at cleanup).
func startSimWith(t testing.TB, p *platform, cfg Config) (s *Simulator, stop func()) {
	t.Helper()
	s, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- s.Run(ctx) }()
	var once sync.Once
	stop = func() {
		once.Do(func() {
			cancel()
			if err := <-done; err != nil {
				t.Errorf("simulator: %v", err)
			}
		})
	}
	t.Cleanup(stop)
	select {
	case <-p.alives:
	case <-time.After(5 * time.Second):
		t.Fatal("simulator sent no heartbeat")
	}
	return s, stop
}

func num(v float64) *float64 { return &v }

func show(v *float64) string {
	if v == nil {
		return "null"
	}
	return fmt.Sprint(*v)
}

func showArray(a []*float64) string {
	out := make([]string, len(a))
	for i, v := range a {
		out[i] = show(v)
	}
	return fmt.Sprint(out)
}
