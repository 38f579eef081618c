package edge

import (
	"context"
	"crypto/rand"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/asynkron/protoactor-go/actor"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/openbdp/bdp/actors"
	"github.com/openbdp/bdp/mqtt"
	"github.com/openbdp/bdp/pipeline"
	"github.com/openbdp/bdp/store"
)

// Config configures the edge connections.
type Config struct {
	// System is the process's actor system (actors.NewSystem); nil for
	// one of the manager's own.
	System   *actor.ActorSystem
	Broker   mqtt.Broker
	Store    *store.Store
	Sink     pipeline.Sink // where observations on data go
	Log      *slog.Logger
	Registry prometheus.Registerer
	// Now is the clock; nil: time.Now.
	Now func() time.Time
	// Tick is how often each connection judges its heartbeat and its
	// deadlines; default 1 s.
	Tick time.Duration
	// OfflineAfter: no heartbeat for this long and the device is offline;
	// default MissedAlivesOffline × AliveInterval (15 s).
	OfflineAfter time.Duration
	// OperationTimeout: a request unanswered this long fails; default
	// OperationTimeout (30 s, decisions.md 7).
	OperationTimeout time.Duration
	// Presence, if set, tells at once when a project's edge device
	// connects and when its last connection ends (the embedded broker's
	// sessions, mqtt.Sessions). nil (an external broker): only the
	// heartbeat tells.
	Presence Presence
	// Owns tells, in a cluster, whether this node runs a project's edge
	// connection (the owner of "project/<id>"); the project's controls
	// apps run there too. nil: every project, as one node does.
	Owns func(projectID int64) bool
	// Holder names this node in the edge connections' fence
	// (store.AcquireEdgeHold): its node id; default "single".
	Holder string
	// Resync is how often Run synchronises the connections with Owns set,
	// so that a move is taken up, and a superseded hold taken back, even
	// when a change of membership was not told; default 10 s.
	Resync time.Duration
}

var _ Presence = (*mqtt.Sessions)(nil)

// Presence hears of edge devices connecting to the broker and leaving it.
type Presence interface {
	// WatchEdgeDevices calls fn, without blocking, when a project's edge
	// device connects (true) and when its last connection ends (false).
	WatchEdgeDevices(fn func(projectID int64, connected bool)) (stop func())
}

// dataQueue bounds the data messages of one device waiting to be stored;
// beyond, messages are dropped and counted (a device flooding data must
// not hold anyone else up).
const dataQueue = 64

// Manager runs one supervised connection actor per project with edge
// credentials.
type Manager struct {
	cfg     Config
	log     *slog.Logger
	system  *actor.ActorSystem
	sup     *actor.PID
	metrics *metrics
	ctx     context.Context // ends at Close: data writes in flight give up
	cancel  context.CancelFunc
	// stopPresence ends the Presence calls; nil without Presence.
	stopPresence func()
	backOnline   backOnline

	// life makes starts and stops one at a time: a start takes the
	// project's hold, and two starts of one project would supersede each
	// other.
	life  sync.Mutex
	mu    sync.Mutex
	conns map[int64]*conn
	wg    sync.WaitGroup // the ticker and the data writers
}

// NewManager starts the actor system; Sync or Run start the connections.
func NewManager(cfg Config) (*Manager, error) {
	if cfg.Broker == nil || cfg.Store == nil || cfg.Sink == nil || cfg.Log == nil || cfg.Registry == nil {
		return nil, errors.New("edge: Broker, Store, Sink, Log and Registry are required")
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	if cfg.Tick <= 0 {
		cfg.Tick = time.Second
	}
	if cfg.OfflineAfter <= 0 {
		cfg.OfflineAfter = MissedAlivesOffline * AliveInterval
	}
	if cfg.OperationTimeout <= 0 {
		cfg.OperationTimeout = OperationTimeout
	}
	if cfg.Holder == "" {
		cfg.Holder = DefaultHolder
	}
	if cfg.Resync <= 0 {
		cfg.Resync = 10 * time.Second
	}
	ctx, cancel := context.WithCancel(context.Background())
	m := &Manager{cfg: cfg, log: cfg.Log.With(slog.String("part", "edge")), conns: map[int64]*conn{}, ctx: ctx, cancel: cancel}
	var err error
	if m.metrics, err = newMetrics(m, cfg.Registry); err != nil {
		cancel()
		return nil, err
	}
	if m.system = cfg.System; m.system == nil {
		m.system = actors.NewSystem(cfg.Log)
	}
	// A connection that panics (a bug) restarts, up to 10 times a minute;
	// beyond, it stops and the next Sync starts it anew.
	m.sup = m.system.Root.Spawn(actor.PropsFromProducer(func() actor.Actor { return &supervisor{} },
		actor.WithSupervisor(actors.HealthStrategy{Restarts: 10})))
	m.wg.Add(1)
	go func() { defer m.wg.Done(); m.tick() }()
	if cfg.Presence != nil {
		m.stopPresence = cfg.Presence.WatchEdgeDevices(m.presence)
	}
	return m, nil
}

// presence hands a device's arrival or departure, as the broker saw it,
// to its project's connection.
func (m *Manager) presence(projectID int64, connected bool) {
	m.mu.Lock()
	c, ok := m.conns[projectID]
	m.mu.Unlock()
	if ok {
		m.system.Root.Send(c.pid, &presenceMsg{connected: connected})
	}
}

// tick sends every connection its tick from one ticker: a ticker per
// connection woke the scheduler once a second for each project, most of
// bdp's idle CPU with a hundred devices.
func (m *Manager) tick() {
	t := time.NewTicker(m.cfg.Tick)
	defer t.Stop()
	var pids []*actor.PID
	for {
		select {
		case <-t.C:
		case <-m.ctx.Done():
			return
		}
		m.mu.Lock()
		pids = pids[:0]
		for _, c := range m.conns {
			pids = append(pids, c.pid)
		}
		m.mu.Unlock()
		for _, pid := range pids {
			m.system.Root.Send(pid, &tickMsg{})
		}
	}
}

// supervisor is the parent of every connection actor, so their failures
// come to its strategy.
type supervisor struct{}

// spawnRequest asks the supervisor for a child of props; it answers with
// the child's PID (actors.Ask).
type spawnRequest struct {
	props *actor.Props
}

func (s *supervisor) Receive(ctx actor.Context) {
	if req, ok := ctx.Message().(*spawnRequest); ok {
		ctx.Respond(ctx.Spawn(req.props))
	}
}

// Run starts and stops connections as projects get and lose edge
// credentials, and with Owns set every Resync as well, until ctx ends.
func (m *Manager) Run(ctx context.Context) {
	resync := func() {
		if err := m.Sync(ctx); err != nil && ctx.Err() == nil {
			m.log.Error("edge connections not synchronised", slog.Any("error", err))
		}
	}
	if m.cfg.Owns != nil {
		done := make(chan struct{})
		defer func() { <-done }()
		go func() {
			defer close(done)
			t := time.NewTicker(m.cfg.Resync)
			defer t.Stop()
			for {
				select {
				case <-ctx.Done():
					return
				case <-t.C:
					resync()
				}
			}
		}()
	}
	m.cfg.Store.ListenMQTTUsersChanged(ctx, func(int64) { resync() })
}

// Sync starts a connection for every project with edge credentials that
// this node owns (Config.Owns) and stops the others; in a cluster it also
// takes back the hold of an owned project that another node took over
// while both believed they owned it. The cluster calls it on every change
// of membership, before the controls apps' Reconcile, so an app finds its
// project's connection. A project that cannot start does not keep the
// others from it.
func (m *Manager) Sync(ctx context.Context) error {
	ids, err := m.cfg.Store.EdgeProjects(ctx)
	if err != nil {
		return err
	}
	m.life.Lock()
	defer m.life.Unlock()
	want := make(map[int64]bool, len(ids))
	var errs []error
	for _, id := range ids {
		if m.cfg.Owns != nil && !m.cfg.Owns(id) {
			continue
		}
		want[id] = true
		if err := m.start(ctx, id); err != nil {
			errs = append(errs, err)
		}
	}
	m.mu.Lock()
	var gone []int64
	for id := range m.conns {
		if !want[id] {
			gone = append(gone, id)
		}
	}
	m.mu.Unlock()
	for _, id := range gone {
		m.stop(id)
	}
	if m.cfg.Owns != nil {
		errs = append(errs, m.retake(ctx))
	}
	return errors.Join(errs...)
}

// Start runs the connection of a project, holding its fence; one running
// already stays.
func (m *Manager) Start(ctx context.Context, projectID int64) error {
	m.life.Lock()
	defer m.life.Unlock()
	return m.start(ctx, projectID)
}

func (m *Manager) start(ctx context.Context, projectID int64) error {
	m.mu.Lock()
	_, ok := m.conns[projectID]
	m.mu.Unlock()
	if ok {
		return nil
	}
	// The hold first: the actor must not send under no token.
	token, err := m.acquire(ctx, projectID)
	if err != nil {
		return err
	}
	c := &conn{projectID: projectID, m: m, data: make(chan []Observation, dataQueue)}
	c.token.Store(token)
	pid, err := actors.Ask[*actor.PID](m.system, m.sup, &spawnRequest{props: actor.PropsFromProducer(func() actor.Actor { return &connActor{c: c} })}, actors.SpawnTimeout)
	if err != nil {
		return fmt.Errorf("edge: start the connection of project %d: %w", projectID, err)
	}
	c.pid = pid
	for _, sub := range []struct {
		topic  string
		handle func([]byte)
	}{
		{ResponseTopic(projectID), c.onResponse},
		{AliveTopic(projectID), c.onAlive},
		{DataTopic(projectID), c.onData},
	} {
		handle := sub.handle
		unsub, err := m.cfg.Broker.Subscribe(sub.topic, func(_ string, payload []byte) { handle(payload) })
		if err != nil {
			c.stop()
			return fmt.Errorf("edge: subscribe %s: %w", sub.topic, err)
		}
		c.unsubscribe = append(c.unsubscribe, unsub)
	}
	m.wg.Add(1)
	go func() { defer m.wg.Done(); c.writeData() }()
	m.mu.Lock()
	m.conns[projectID] = c
	m.mu.Unlock()
	m.log.Info("edge connection started", slog.Int64("project_id", projectID), slog.Int64("hold_token", token))
	return nil
}

// Stop ends the connection of a project, if it runs.
func (m *Manager) Stop(projectID int64) {
	m.life.Lock()
	defer m.life.Unlock()
	m.stop(projectID)
}

func (m *Manager) stop(projectID int64) {
	m.mu.Lock()
	c, ok := m.conns[projectID]
	delete(m.conns, projectID)
	m.mu.Unlock()
	if ok {
		c.stop()
		m.log.Info("edge connection stopped", slog.Int64("project_id", projectID))
	}
}

// stop ends subscriptions and ticks, lets the data writer finish, and
// stops the actor.
func (c *conn) stop() {
	for _, u := range c.unsubscribe {
		u()
	}
	c.dataMu.Lock()
	c.dataClosed = true
	close(c.data)
	c.dataMu.Unlock()
	c.m.system.Root.Stop(c.pid)
}

// Close stops every connection and the actor system.
func (m *Manager) Close() {
	if m.stopPresence != nil {
		m.stopPresence()
	}
	m.mu.Lock()
	ids := make([]int64, 0, len(m.conns))
	for id := range m.conns {
		ids = append(ids, id)
	}
	m.mu.Unlock()
	for _, id := range ids {
		m.Stop(id)
	}
	m.cancel()
	m.wg.Wait()
	m.system.Root.Stop(m.sup)
	m.system.Shutdown()
}

// Connections counts the connections this node runs.
func (m *Manager) Connections() int {
	m.mu.Lock()
	defer m.mu.Unlock()
	return len(m.conns)
}

// Status is a project's edge connection; Configured false when the
// project has no edge credentials.
func (m *Manager) Status(projectID int64) Status {
	m.mu.Lock()
	c, ok := m.conns[projectID]
	m.mu.Unlock()
	if !ok {
		return Status{}
	}
	return c.status()
}

// errNoDevice is returned for a project without edge credentials.
var errNoDevice = errors.New("edge: the project has no edge device")

// request hands a request to the project's connection.
func (m *Manager) request(projectID int64, req Request, deadline time.Time, events chan<- event) error {
	m.mu.Lock()
	c, ok := m.conns[projectID]
	m.mu.Unlock()
	if !ok {
		if m.cfg.Owns != nil {
			return notHeld(projectID)
		}
		return errNoDevice
	}
	m.system.Root.Send(c.pid, &requestMsg{req: req, deadline: deadline, events: events})
	return nil
}

func (m *Manager) publish(projectID int64, req Request) error {
	payload, err := json.Marshal(req)
	if err != nil {
		return err
	}
	return m.cfg.Broker.Publish(RequestTopic(projectID), payload, QoS)
}

// The subscription handlers run on the publisher's goroutine: they decode
// (bounded by MaxMessageBytes) and hand over, never block.

func (c *conn) onResponse(payload []byte) {
	r, err := DecodeResponse(payload)
	if err != nil {
		c.garbage("response", err)
		return
	}
	c.m.system.Root.Send(c.pid, &responseMsg{resp: r})
}

func (c *conn) onAlive(payload []byte) {
	a, err := DecodeAlive(payload)
	if err != nil {
		c.garbage("alive", err)
		return
	}
	c.m.system.Root.Send(c.pid, &aliveMsg{alive: a})
}

func (c *conn) onData(payload []byte) {
	obs, err := DecodeData(payload)
	if err != nil {
		c.garbage("data", err)
		return
	}
	// A handler may still run after unsubscribing: stop closes data
	// under the write lock, so no send reaches a closed channel.
	c.dataMu.RLock()
	defer c.dataMu.RUnlock()
	if c.dataClosed {
		return
	}
	select {
	case c.data <- obs:
	default:
		c.m.metrics.dataDropped.Inc()
	}
}

func (c *conn) garbage(topic string, err error) {
	c.m.metrics.garbage.WithLabelValues(topic).Inc()
	c.m.log.Warn("edge device sent a bad message", slog.Int64("project_id", c.projectID), slog.String("topic", topic), slog.Any("error", err))
}

// writeData stores the device's observations through the pipeline, one
// message at a time, until the connection stops.
func (c *conn) writeData() {
	for msg := range c.data {
		obs := make([]pipeline.Observation, 0, len(msg))
		for _, o := range msg {
			po := pipeline.Observation{ProjectID: c.projectID, DataPointID: o.DataPointID, Time: o.Time.UTC(), Value: o.Value}
			if err := po.Validate(); err != nil {
				c.garbage("data", err)
				continue
			}
			obs = append(obs, po)
		}
		if len(obs) == 0 {
			continue
		}
		ctx, cancel := context.WithTimeout(c.m.ctx, 30*time.Second)
		err := c.m.cfg.Sink.Write(ctx, pipeline.SourceEdge, obs)
		cancel()
		if err != nil {
			c.m.metrics.dataDropped.Inc()
			c.m.log.Warn("edge data not stored", slog.Int64("project_id", c.projectID), slog.Any("error", err))
		}
	}
}

// newReference makes a random (version 4) uuid.
func newReference() string {
	var b [16]byte
	_, _ = rand.Read(b[:]) // never fails (crypto/rand)
	b[6] = b[6]&0x0f | 0x40
	b[8] = b[8]&0x3f | 0x80
	return fmt.Sprintf("%x-%x-%x-%x-%x", b[0:4], b[4:6], b[6:8], b[8:10], b[10:16])
}
