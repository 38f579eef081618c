// Package edgetest is a small edge device for tests: it speaks the edge
// protocol over a real MQTT connection (paho) with a BACnet-style priority
// array per datapoint and the apps app_start gave it (listed in its
// heartbeats), and can be told to refuse, stay silent, answer garbage
// first, stop its heartbeat, or forget everything (a factory reset).
package edgetest

import (
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"sync"
	"testing"
	"time"

	pahov3 "github.com/eclipse/paho.mqtt.golang"

	"github.com/openbdp/bdp/edge"
)

// Mode is how the device answers requests.
type Mode int

// The modes.
const (
	Normal  Mode = iota
	Silent       // answers nothing
	Refuse       // answers every write and read with an error
	Garbage      // sends garbage on response, alive and data before each proper answer
	Newer        // a newer device: its answers and heartbeats carry a field the protocol does not know
)

// Device is a connected test device.
type Device struct {
	t       testing.TB
	project int64
	client  pahov3.Client

	mu       sync.Mutex
	mode     Mode
	arrays   map[string]*[edge.PrioritySlots]*float64
	apps     map[string]bool // app id -> running, as app_start and app_stop left it
	requests []edge.Request
	alive    bool

	stop chan struct{}
	done chan struct{}
}

// Start connects a device of project with its edge credentials to the
// broker at addr and sends heartbeats every aliveEvery.
func Start(t testing.TB, addr string, projectID int64, password string, aliveEvery time.Duration) *Device {
	t.Helper()
	d := &Device{t: t, project: projectID, arrays: map[string]*[edge.PrioritySlots]*float64{}, apps: map[string]bool{}, alive: true,
		stop: make(chan struct{}), done: make(chan struct{})}
	opts := pahov3.NewClientOptions().AddBroker("tcp://" + addr).SetClientID(fmt.Sprintf("edge-test-%d", projectID)).
		SetUsername(fmt.Sprintf("edge-%d", projectID)).SetPassword(password).SetOrderMatters(false).SetAutoReconnect(false)
	d.client = pahov3.NewClient(opts)
	d.connect()
	go d.heartbeat(aliveEvery)
	t.Cleanup(d.Close)
	return d
}

// connect connects and subscribes to the device's requests.
func (d *Device) connect() {
	d.t.Helper()
	if tok := d.client.Connect(); !tok.WaitTimeout(10*time.Second) || tok.Error() != nil {
		d.t.Fatalf("edge test device: connect: %v", tok.Error())
	}
	if tok := d.client.Subscribe(edge.RequestTopic(d.project), edge.QoS, d.onRequest); !tok.WaitTimeout(10*time.Second) || tok.Error() != nil {
		d.t.Fatalf("edge test device: subscribe: %v", tok.Error())
	}
}

// SetLink takes the device off the network (false: it disconnects and
// its heartbeat stops) and back (true), keeping its apps and priority
// arrays, as a network outage does.
func (d *Device) SetLink(up bool) {
	d.t.Helper()
	if up {
		d.connect()
		d.SetAlive(true)
		return
	}
	d.SetAlive(false)
	d.client.Disconnect(100)
}

// Close stops the heartbeat and disconnects.
func (d *Device) Close() {
	select {
	case <-d.stop:
		return
	default:
	}
	close(d.stop)
	<-d.done
	d.client.Disconnect(100)
}

// SetMode changes how the device answers.
func (d *Device) SetMode(m Mode) {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.mode = m
}

// SetAlive starts or stops the heartbeat (the connection stays).
func (d *Device) SetAlive(on bool) {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.alive = on
}

// Reset is a factory reset: the device forgets its apps and its
// priority arrays, and stays connected.
func (d *Device) Reset() {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.apps = map[string]bool{}
	d.arrays = map[string]*[edge.PrioritySlots]*float64{}
}

// SetSlot sets a slot of a datapoint's priority array directly, as the
// building's own automation would.
func (d *Device) SetSlot(dataPointID string, priority int, v *float64) {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.array(dataPointID)[priority-1] = v
}

// PriorityArray is a copy of a datapoint's 17 slots.
func (d *Device) PriorityArray(dataPointID string) [edge.PrioritySlots]*float64 {
	d.mu.Lock()
	defer d.mu.Unlock()
	return *d.array(dataPointID)
}

// Requests are the requests received so far but pings.
func (d *Device) Requests() []edge.Request {
	d.mu.Lock()
	defer d.mu.Unlock()
	return append([]edge.Request(nil), d.requests...)
}

func (d *Device) array(id string) *[edge.PrioritySlots]*float64 {
	a, ok := d.arrays[id]
	if !ok {
		a = new([edge.PrioritySlots]*float64)
		d.arrays[id] = a
	}
	return a
}

func (d *Device) heartbeat(every time.Duration) {
	defer close(d.done)
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		d.mu.Lock()
		alive, mode := d.alive, d.mode
		apps := []edge.AppState{}
		for _, id := range slices.Sorted(maps.Keys(d.apps)) {
			apps = append(apps, edge.AppState{ID: id, Running: d.apps[id]})
		}
		d.mu.Unlock()
		if alive {
			if mode == Garbage {
				d.publish(edge.AliveTopic(d.project), []byte(`{"time":"yesterday"}`))
			}
			d.publishAnswer(edge.AliveTopic(d.project), mode, edge.Alive{Time: time.Now().UTC(), Apps: apps})
		}
		select {
		case <-t.C:
		case <-d.stop:
			return
		}
	}
}

func (d *Device) publish(topic string, payload []byte) {
	tok := d.client.Publish(topic, edge.QoS, false, payload)
	if !tok.WaitTimeout(5*time.Second) || tok.Error() != nil {
		select {
		case <-d.stop:
			// Closed while answering: the test may have ended, and
			// logging after its end panics.
		default:
			d.t.Logf("edge test device: publish %s: %v", topic, tok.Error())
		}
	}
}

func (d *Device) publishJSON(topic string, v any) {
	payload, err := json.Marshal(v)
	if err != nil {
		d.t.Errorf("edge test device: %v", err)
		return
	}
	d.publish(topic, payload)
}

// publishAnswer publishes a response or heartbeat; a Newer device adds
// a field of its own.
func (d *Device) publishAnswer(topic string, mode Mode, v any) {
	payload, err := json.Marshal(v)
	if err != nil {
		d.t.Errorf("edge test device: %v", err)
		return
	}
	if mode == Newer {
		payload = append([]byte(`{"firmware":{"version":"2.0"},`), payload[1:]...)
	}
	d.publish(topic, payload)
}

func present(a *[edge.PrioritySlots]*float64) *float64 {
	for _, v := range a {
		if v != nil {
			return v
		}
	}
	return nil
}

func (d *Device) onRequest(_ pahov3.Client, msg pahov3.Message) {
	req, err := edge.DecodeRequest(msg.Payload())
	if err != nil {
		d.t.Errorf("edge test device: bad request %s: %v", msg.Payload(), err)
		return
	}
	if req.Operation == edge.OpPing {
		return
	}
	d.mu.Lock()
	d.requests = append(d.requests, req)
	mode := d.mode
	a := d.array(req.DataPointID)
	before := *a
	resp := edge.Response{Reference: req.Reference, Status: edge.StatusOK, PriorityArray: before[:]}
	switch {
	case mode == Silent:
		d.mu.Unlock()
		return
	case mode == Refuse:
		resp = edge.Response{Reference: req.Reference, Status: edge.StatusError, Error: "datapoint out of service"}
	case req.Operation == edge.OpWrite:
		resp.OverwrittenValue = a[req.Priority-1]
		a[req.Priority-1] = req.Value
		resp.PresentValue = present(a)
	case req.Operation == edge.OpRead:
		resp.PresentValue = present(a)
	case req.Operation == edge.OpAppStart:
		d.apps[req.App.ID] = true
	case req.Operation == edge.OpAppStop:
		delete(d.apps, req.App.ID)
	}
	d.mu.Unlock()
	if mode == Garbage {
		d.publish(edge.ResponseTopic(d.project), []byte(`{"reference": 12, "status": "ok"`))
		d.publish(edge.ResponseTopic(d.project), []byte(`{"reference":"`+req.Reference+`","status":"ok","priority_array":[1,2]}`))
		d.publish(edge.DataTopic(d.project), []byte(`[{"dataPointID":"x","time":"2020-01-01T00:00:00Z"}]`))
	}
	d.publishAnswer(edge.ResponseTopic(d.project), mode, resp)
	if req.Operation == edge.OpWrite && resp.Status == edge.StatusOK && resp.PresentValue != nil {
		d.publishJSON(edge.DataTopic(d.project), edge.Observation{DataPointID: req.DataPointID, Time: time.Now().UTC(), Value: *resp.PresentValue})
	}
}
