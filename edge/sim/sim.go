// Package sim is a simulated edge device speaking the edge protocol
// (docs/edge-protocol.md) over a real MQTT connection: a BACnet-style
// priority array per writable datapoint, present values on data, apps with
// reset values and alive time-outs, auto-recovery, and simulated crashes.
package sim

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"regexp"
	"slices"
	"strconv"
	"sync"
	"time"

	paho "github.com/eclipse/paho.mqtt.golang"

	"github.com/openbdp/bdp/edge"
)

// Config configures one simulated device.
type Config struct {
	Broker    string // tcp://host:port
	Username  string // edge-{project_id}
	Password  string
	ProjectID int64
	ClientID  string // default bdp-edge-sim-{project_id}
	// Datapoints are the writable datapoints and their relinquish defaults
	// (nil: null). Empty: any datapoint is writable, its priority array
	// created on first use with a null relinquish default.
	Datapoints map[string]*float64
	// AliveInterval between heartbeats (default edge.AliveInterval).
	AliveInterval time.Duration
	// DataInterval between periodic publications of every present value
	// (default 60 s); changes are published at once.
	DataInterval time.Duration
	// CheckInterval between checks of the apps' alive time-outs (default 1 s).
	CheckInterval time.Duration
	// BootDelay: after a crash, the device is off the network this long
	// (default 2 s).
	BootDelay time.Duration
	// ReloadDelay: after booting from a crash, running apps reload after this
	// long (default 10 s; at most a minute, the protocol's promise).
	ReloadDelay time.Duration
	// StateFile keeps the app definitions on disk (JSON), so that a
	// restart of the process is a reboot of the same device: running apps
	// reload after ReloadDelay. Empty: they live in the process only.
	StateFile string
	Log       *slog.Logger
}

// Defaults.
const (
	DefaultDataInterval  = 60 * time.Second
	DefaultCheckInterval = time.Second
	DefaultBootDelay     = 2 * time.Second
	DefaultReloadDelay   = 10 * time.Second
	maxReloadDelay       = time.Minute
	publishWait          = 5 * time.Second
	requestQueue         = 256
)

// Simulator is one simulated edge device. Run it with Run; Crash simulates
// a power loss.
type Simulator struct {
	cfg   Config
	log   *slog.Logger
	crash chan string
	link  chan bool // SetLink: false takes the device off the network, true back
	// reloadAtStart: the state file had running apps, reloaded as after a crash.
	reloadAtStart bool

	mu  sync.Mutex
	dev *device
	// What a test or benchmark counts, the newest maxHistory each: the
	// writes the device took and the events its delivered heartbeats
	// carried.
	writes    []Written
	delivered []edge.Event
}

// Written is a write the device took.
type Written struct {
	Time        time.Time
	DataPointID string
	Priority    int
	Value       *float64
}

// maxHistory bounds Writes and Events.
const maxHistory = 10000

// keepNewest appends to a history and drops its oldest past maxHistory.
func keepNewest[T any](h []T, add ...T) []T {
	h = append(h, add...)
	if over := len(h) - maxHistory; over > 0 {
		h = slices.Delete(h, 0, over)
	}
	return h
}

// Writes returns the writes the device took, oldest first.
func (s *Simulator) Writes() []Written {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.writes)
}

// Events returns the events of the heartbeats the broker acknowledged
// (the platform's to log), oldest first.
func (s *Simulator) Events() []edge.Event {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.delivered)
}

// New checks cfg and returns a simulator that is not yet connected.
func New(cfg Config) (*Simulator, error) {
	if cfg.Broker == "" {
		return nil, errors.New("edge-sim: broker missing")
	}
	if cfg.ProjectID <= 0 {
		return nil, errors.New("edge-sim: project id missing")
	}
	if cfg.ClientID == "" {
		cfg.ClientID = "bdp-edge-sim-" + strconv.FormatInt(cfg.ProjectID, 10)
	}
	def := func(d *time.Duration, v time.Duration) {
		if *d <= 0 {
			*d = v
		}
	}
	def(&cfg.AliveInterval, edge.AliveInterval)
	def(&cfg.DataInterval, DefaultDataInterval)
	def(&cfg.CheckInterval, DefaultCheckInterval)
	def(&cfg.BootDelay, DefaultBootDelay)
	def(&cfg.ReloadDelay, DefaultReloadDelay)
	if cfg.ReloadDelay > maxReloadDelay {
		return nil, fmt.Errorf("edge-sim: reload delay %s over the protocol's %s", cfg.ReloadDelay, maxReloadDelay)
	}
	for id, v := range cfg.Datapoints {
		if err := (edge.Observation{DataPointID: id, Time: time.Unix(1, 0), Value: deref(v)}).Validate(); err != nil {
			return nil, fmt.Errorf("edge-sim: datapoint %q: %w", id, err)
		}
	}
	log := cfg.Log
	if log == nil {
		log = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	log = log.With("project_id", cfg.ProjectID)
	s := &Simulator{cfg: cfg, log: log, crash: make(chan string, 1), link: make(chan bool, 1), dev: newDevice(cfg.Datapoints, time.Now())}
	if cfg.StateFile != "" {
		var err error
		if s.reloadAtStart, err = s.dev.loadState(cfg.StateFile, time.Now()); err != nil {
			return nil, fmt.Errorf("edge-sim: %w", err)
		}
	}
	return s, nil
}

func deref(v *float64) float64 {
	if v == nil {
		return 0
	}
	return *v
}

// Crash simulates a power loss: the device drops off the network, loses
// every priority array and which apps run, keeps its app definitions and
// event log, boots after BootDelay and reloads running apps after
// ReloadDelay, logging crash and reload events for the next heartbeat.
func (s *Simulator) Crash(reason string) {
	select {
	case s.crash <- reason:
	default: // a crash is already on its way
	}
}

// SetLink takes the device off the network (false: its MQTT connection is
// closed, its clock and alive time-outs go on) or back on it (true), as a
// cut cable would. A crash brings the link back.
func (s *Simulator) SetLink(up bool) {
	for {
		select {
		case s.link <- up:
			return
		default:
		}
		select {
		case <-s.link: // replace a change not yet taken
		default:
		}
	}
}

// PriorityArray returns a datapoint's 17 slots as the device holds them,
// without a request (which would count as the platform being there).
func (s *Simulator) PriorityArray(dataPointID string) ([]*float64, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	p, ok := s.dev.points[dataPointID]
	if !ok {
		return nil, false
	}
	return p.array(), true
}

// Apps returns the apps the device knows and whether each runs.
func (s *Simulator) Apps() []edge.AppState {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.dev.alive(time.Now()).Apps
}

// Run connects and runs the device until ctx ends.
func (s *Simulator) Run(ctx context.Context) error {
	var reloadAt <-chan time.Time
	if s.reloadAtStart {
		reloadAt = time.After(s.cfg.ReloadDelay)
	}
	for {
		reason, err := s.runConnected(ctx, reloadAt)
		if err != nil || ctx.Err() != nil {
			return err
		}
		s.mu.Lock()
		s.dev.crash(time.Now(), reason)
		s.mu.Unlock()
		s.log.Info("edge-sim: simulated crash", "reason", reason)
		select {
		case <-ctx.Done():
			return nil
		case <-time.After(s.cfg.BootDelay):
		}
		reloadAt = time.After(s.cfg.ReloadDelay)
	}
}

// runConnected is one power-on period: it returns the crash reason when
// Crash is called, or "" when ctx ends.
func (s *Simulator) runConnected(ctx context.Context, reloadAt <-chan time.Time) (string, error) {
	requests := make(chan []byte, requestQueue)
	connected := make(chan struct{}, 1)
	opts := s.clientOptions(requests, connected)
	client := paho.NewClient(opts)
	// With ConnectRetry the token completes only once connected; the device
	// keeps running (its time-outs count) while the broker is unreachable.
	client.Connect()
	linked := true
	defer func() { client.Disconnect(250) }()

	alive := time.NewTicker(s.cfg.AliveInterval)
	defer alive.Stop()
	data := time.NewTicker(s.cfg.DataInterval)
	defer data.Stop()
	check := time.NewTicker(s.cfg.CheckInterval)
	defer check.Stop()
	for {
		select {
		case <-ctx.Done():
			return "", nil
		case reason := <-s.crash:
			return reason, nil
		case up := <-s.link:
			if up && !linked {
				client = paho.NewClient(opts)
				client.Connect()
			} else if !up && linked {
				client.Disconnect(250)
				s.log.Info("edge-sim: link down")
			}
			linked = up
		case <-connected:
			// (Re)connected: tell the platform at once what the device has.
			s.publishAlive(client)
			s.mu.Lock()
			obs := s.dev.observations(time.Now())
			s.mu.Unlock()
			s.publishData(client, obs)
		case payload := <-requests:
			s.handle(client, payload)
		case <-alive.C:
			s.publishAlive(client)
		case <-data.C:
			s.mu.Lock()
			obs := s.dev.observations(time.Now())
			s.mu.Unlock()
			s.publishData(client, obs)
		case <-check.C:
			s.mu.Lock()
			ch := s.dev.expire(time.Now())
			s.mu.Unlock()
			s.publishChanges(client, ch)
		case <-reloadAt:
			reloadAt = nil
			s.mu.Lock()
			s.dev.reload(time.Now())
			s.mu.Unlock()
		}
	}
}

func (s *Simulator) clientOptions(requests chan<- []byte, connected chan<- struct{}) *paho.ClientOptions {
	o := paho.NewClientOptions().AddBroker(s.cfg.Broker).SetClientID(s.cfg.ClientID).
		SetUsername(s.cfg.Username).SetPassword(s.cfg.Password).
		SetCleanSession(true).SetAutoReconnect(true).SetConnectRetry(true).
		SetConnectRetryInterval(time.Second).SetMaxReconnectInterval(5 * time.Second).
		SetKeepAlive(30 * time.Second).SetOrderMatters(true)
	topic := edge.RequestTopic(s.cfg.ProjectID)
	o.SetOnConnectHandler(func(c paho.Client) {
		// Requests are queued for the run loop, in order; a full queue
		// drops (the platform's 30-s wait fails the operation).
		t := c.Subscribe(topic, edge.QoS, func(_ paho.Client, m paho.Message) {
			select {
			case requests <- m.Payload():
			default:
				s.log.Warn("edge-sim: request queue full, request dropped")
			}
		})
		if t.WaitTimeout(publishWait) && t.Error() != nil {
			s.log.Warn("edge-sim: subscribe failed", "err", t.Error())
		} else {
			s.log.Info("edge-sim: connected", "broker", s.cfg.Broker)
		}
		select {
		case connected <- struct{}{}:
		default:
		}
	})
	o.SetConnectionLostHandler(func(_ paho.Client, err error) {
		s.log.Warn("edge-sim: connection lost", "err", err)
	})
	return o
}

// nilReference answers a request whose reference cannot be read.
const nilReference = "00000000-0000-0000-0000-000000000000"

var referenceField = regexp.MustCompile(`"reference"\s*:\s*"([0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12})"`)

// handle answers one request; a request that does not decode is answered
// with status error under its reference if one can be read, else the nil
// uuid.
func (s *Simulator) handle(client paho.Client, payload []byte) {
	now := time.Now()
	req, err := edge.DecodeRequest(payload)
	var resp edge.Response
	var ch changed
	s.mu.Lock()
	if err != nil {
		ref := nilReference
		if len(payload) <= edge.MaxMessageBytes {
			if m := referenceField.FindSubmatch(payload); m != nil {
				ref = string(m[1])
			}
		}
		resp = edge.Response{Reference: ref, Status: edge.StatusError, Error: err.Error()}
	} else {
		resp, ch = s.dev.handle(now, req)
		if req.Operation == edge.OpWrite && resp.Status == edge.StatusOK {
			s.writes = keepNewest(s.writes, Written{Time: now, DataPointID: req.DataPointID, Priority: req.Priority, Value: copyValue(req.Value)})
		}
		if s.cfg.StateFile != "" && resp.Status == edge.StatusOK && req.App != nil {
			if err := s.dev.saveState(s.cfg.StateFile); err != nil {
				s.log.Error("edge-sim: state file not written", "err", err)
			}
		}
	}
	s.mu.Unlock()
	s.publish(client, edge.ResponseTopic(s.cfg.ProjectID), resp)
	s.publishChanges(client, ch)
}

func (s *Simulator) publishChanges(client paho.Client, ch changed) {
	now := time.Now().UTC()
	var obs []edge.Observation
	for id, v := range ch {
		if v != nil { // a present value that became null has nothing to publish
			obs = append(obs, edge.Observation{DataPointID: id, Time: now, Value: *v})
		}
	}
	s.publishData(client, obs)
}

func (s *Simulator) publishData(client paho.Client, obs []edge.Observation) {
	for len(obs) > 0 {
		n := min(len(obs), edge.MaxObservations)
		s.publish(client, edge.DataTopic(s.cfg.ProjectID), obs[:n])
		obs = obs[n:]
	}
}

func (s *Simulator) publishAlive(client paho.Client) {
	s.mu.Lock()
	a := s.dev.alive(time.Now())
	s.mu.Unlock()
	if s.publish(client, edge.AliveTopic(s.cfg.ProjectID), a) {
		s.mu.Lock()
		s.dev.takeEvents(len(a.Events))
		s.delivered = keepNewest(s.delivered, a.Events...)
		s.mu.Unlock()
	}
}

// publish sends v at QoS 1 and reports whether the broker acknowledged it.
func (s *Simulator) publish(client paho.Client, topic string, v any) bool {
	payload, err := json.Marshal(v)
	if err != nil {
		s.log.Error("edge-sim: encode", "topic", topic, "err", err)
		return false
	}
	if !client.IsConnectionOpen() {
		return false
	}
	t := client.Publish(topic, edge.QoS, false, payload)
	if !t.WaitTimeout(publishWait) || t.Error() != nil {
		s.log.Warn("edge-sim: publish failed", "topic", topic, "err", t.Error())
		return false
	}
	return true
}
