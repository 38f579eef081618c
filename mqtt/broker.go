package mqtt

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	mochi "github.com/mochi-mqtt/server/v2"
	"github.com/mochi-mqtt/server/v2/packets"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/openbdp/bdp/auth"
	"github.com/openbdp/bdp/store"
)

// Broker is the platform's MQTT layer as the rest of the platform uses
// it: live data out, and later the connection to a building's edge
// device. The embedded broker and an external one both provide it.
type Broker interface {
	// Publish sends a message as the platform, which may publish anywhere.
	Publish(topic string, payload []byte, qos byte) error
	// Subscribe calls handler with every message matching filter until
	// unsubscribe is called. handler runs on the publisher's goroutine
	// and must not block.
	Subscribe(filter string, handler func(topic string, payload []byte)) (unsubscribe func(), err error)
	// Addresses are the listen addresses by addresses.json key ("mqtt",
	// "mqtt_ws").
	Addresses() map[string]string
	// Close stops the broker and waits for its goroutines, at most until
	// ctx ends.
	Close(ctx context.Context) error
}

// Limits of the embedded broker (README "MQTT").
const (
	// DefaultMaxPacketSize bounds every MQTT packet: an observation array
	// of some thousand values fits many times over.
	DefaultMaxPacketSize = 1 << 20
	// DefaultClientQueue is how many messages may wait to be written to
	// one client; beyond, messages to it are dropped and counted. mochi
	// allocates the queue whole for every connection (8 bytes a message):
	// 1024 keeps an idle connection near 16 KiB of heap (the issue's
	// 20 KiB budget); mochi's 8192 would cost 64 KiB each. A deployment
	// with few, busy subscribers raises it (BDP_MQTT_CLIENT_QUEUE).
	DefaultClientQueue = 1024
	// maxInflight is how many QoS 1 and 2 messages to one client may be
	// unacknowledged; beyond, messages to it are dropped and counted.
	maxInflight = 16384
	// receiveMaximum is how many QoS 1 and 2 messages a client may have
	// unacknowledged towards the broker (told to MQTT 5 clients).
	receiveMaximum = 4096
	// MaxSessionExpiry is the longest a client's session (subscriptions,
	// messages in flight) is kept while it is disconnected.
	MaxSessionExpiry = time.Hour
)

// listenWait is how long Serve waits for the change watch to listen.
const listenWait = 10 * time.Second

// Config configures the embedded broker.
type Config struct {
	Addr   string // TCP listen address; port 0 picks a free port
	WSAddr string // WebSocket listen address; empty: none
	// Name is the platform's own client id; network clients may use
	// neither it nor mochi's "inline". Default "bdp".
	Name          string
	MaxPacketSize uint32        // default DefaultMaxPacketSize
	ClientQueue   int32         // messages; default DefaultClientQueue
	CredentialTTL time.Duration // verified credentials are remembered this long; 0 disables
	// Now and NewTimer are the clock of expiry; nil: the real one.
	Now      func() time.Time
	NewTimer func(d time.Duration) Timer
}

// Deps are the parts of the platform the broker uses. Hasher and Throttle
// are the ones HTTP uses: MQTT passwords hash the same way, and failed
// CONNECTs count against the same limits as failed HTTP logins.
type Deps struct {
	Store    *store.Store
	Hasher   *auth.Hasher
	Throttle *auth.Throttle
	Log      *slog.Logger
	Registry prometheus.Registerer
	// Gate, when set, filters every delivery of a datapoint topic to an
	// MQTT user by its creator's datapoint access (TagAuths).
	Gate *Gate
}

// Embedded is the broker inside bdp serve (mochi-mqtt). Create it with
// NewEmbedded, add the platform's other hooks with AddHook, then Serve.
type Embedded struct {
	cfg      Config
	deps     Deps
	log      *slog.Logger
	server   *mochi.Server
	sessions *Sessions
	audience *audienceHook
	fan      *fanout // live out's fast path (fanout.go)
	creds    *auth.CredentialCache
	expired  *expiredUsers
	metrics  *metrics
	tcp, ws  *listener
	// dummyHash makes an unknown username cost a hash like a wrong
	// password, so timing does not tell which usernames exist.
	dummyHash string

	rearm chan struct{} // wakes the expiry timer after a change
	// listening is closed when the change watch first listens, so a
	// change committed after Serve returns is not missed.
	listening     chan struct{}
	listeningOnce sync.Once
	subIDs        atomic.Int64 // inline subscription ids
	stop          context.CancelFunc
	running       sync.WaitGroup // the expiry timer and the change listener
	served        atomic.Bool
	closing       sync.Once
	closed        chan struct{} // closed when Close has finished
}

var _ Broker = (*Embedded)(nil)

// NewEmbedded opens the listeners (so their addresses are known) and sets
// up the broker with its authentication and ACL hook; nothing is served
// before Serve.
func NewEmbedded(ctx context.Context, cfg Config, deps Deps) (*Embedded, error) {
	if deps.Store == nil || deps.Hasher == nil || deps.Throttle == nil || deps.Log == nil || deps.Registry == nil {
		return nil, errors.New("mqtt: Store, Hasher, Throttle, Log and Registry are required")
	}
	if cfg.Name == "" {
		cfg.Name = "bdp"
	}
	if cfg.MaxPacketSize == 0 {
		cfg.MaxPacketSize = DefaultMaxPacketSize
	}
	if cfg.ClientQueue <= 0 {
		cfg.ClientQueue = DefaultClientQueue
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	if cfg.NewTimer == nil {
		cfg.NewTimer = newRealTimer
	}
	log := deps.Log.With(slog.String("component", "mqtt"))
	dummy, err := deps.Hasher.Hash(ctx, randomPassword())
	if err != nil {
		return nil, fmt.Errorf("mqtt: %w", err)
	}
	e := &Embedded{cfg: cfg, deps: deps, log: log, dummyHash: dummy, expired: newExpiredUsers(),
		creds: auth.NewCredentialCache([]byte(randomPassword()), cfg.CredentialTTL, cfg.Now), rearm: make(chan struct{}, 1),
		listening: make(chan struct{}), closed: make(chan struct{})}

	caps := mochi.NewDefaultServerCapabilities()
	caps.MaximumPacketSize = cfg.MaxPacketSize
	caps.MaximumClientWritesPending = cfg.ClientQueue
	caps.MaximumInflight = maxInflight
	caps.ReceiveMaximum = receiveMaximum
	caps.MaximumSessionExpiryInterval = uint32(MaxSessionExpiry / time.Second)
	// Retained messages would reach later subscribers past the live
	// filter of their creator's datapoint access; live data is best
	// effort and storage the record, so none are kept.
	caps.RetainAvailable = 0
	caps.SharedSubAvailable = 0 // a shared group would mix subscribers of different access
	e.server = mochi.New(&mochi.Options{
		Capabilities: caps,
		InlineClient: true,
		// mochi logs every connection at info; bdp keeps its warnings.
		Logger:                 slog.New(minLevel{Handler: log.Handler(), min: slog.LevelWarn}),
		SysTopicResendInterval: 10,
	})
	e.sessions = newSessions(e.server)
	e.fan = newFanout(e)
	if e.metrics, err = newMetrics(deps.Registry, e.server.Info); err != nil {
		return nil, err
	}
	if err := e.server.AddHook(&authHook{b: e}, nil); err != nil {
		return nil, err
	}
	if err := e.server.AddHook(&fanoutHook{f: e.fan}, nil); err != nil {
		return nil, err
	}
	if err := e.server.AddHook(newSessionHook(cfg.Now), nil); err != nil {
		return nil, err
	}
	e.audience = &audienceHook{server: e.server}
	if err := e.server.AddHook(e.audience, nil); err != nil {
		return nil, err
	}
	if e.tcp, err = newTCPListener(cfg.Addr); err != nil {
		return nil, fmt.Errorf("listen on BDP_MQTT_ADDR %s: %w", cfg.Addr, err)
	}
	if cfg.WSAddr != "" {
		if e.ws, err = newWebSocketListener(cfg.WSAddr, log); err != nil {
			_ = e.tcp.ln.Close()
			return nil, fmt.Errorf("listen on BDP_MQTT_WS_ADDR %s: %w", cfg.WSAddr, err)
		}
	}
	for _, l := range []*listener{e.tcp, e.ws} {
		if l != nil {
			if err := e.server.AddListener(l); err != nil {
				e.closeListeners()
				return nil, err
			}
		}
	}
	return e, nil
}

// AddHook adds one of the platform's hooks (ingestion, live filter); only
// before Serve.
func (e *Embedded) AddHook(h mochi.Hook) error {
	if e.served.Load() {
		return errors.New("mqtt: hooks must be added before Serve")
	}
	return e.server.AddHook(h, nil)
}

// Serve starts accepting clients, the expiry timer and the watch of MQTT
// user changes. It returns at once; Close stops everything.
func (e *Embedded) Serve() error {
	if !e.served.CompareAndSwap(false, true) {
		return errors.New("mqtt: Serve called twice")
	}
	ctx, cancel := context.WithCancel(context.Background())
	e.stop = cancel
	e.running.Add(2)
	go func() { defer e.running.Done(); e.runExpiry(ctx) }()
	go func() { defer e.running.Done(); e.deps.Store.ListenMQTTUsersChanged(ctx, e.changed) }()
	if err := e.server.Serve(); err != nil {
		cancel()
		e.running.Wait()
		return err
	}
	// Until the watch listens, a change would go unseen (its first
	// notice re-reads everything anyway); a database that does not answer
	// does not hold up the start.
	select {
	case <-e.listening:
	case <-time.After(listenWait):
		e.log.Warn("mqtt: not yet listening for changes of MQTT users", slog.Duration("waited", listenWait))
	}
	e.log.Info("mqtt broker serving", slog.Any("addresses", e.Addresses()))
	return nil
}

// StartEmbedded is NewEmbedded, AddHook for each of hooks, and Serve.
func StartEmbedded(ctx context.Context, cfg Config, deps Deps, hooks ...mochi.Hook) (*Embedded, error) {
	e, err := NewEmbedded(ctx, cfg, deps)
	if err != nil {
		return nil, err
	}
	for _, h := range hooks {
		if err := e.AddHook(h); err != nil {
			_ = e.Close(ctx)
			return nil, err
		}
	}
	if err := e.Serve(); err != nil {
		_ = e.Close(ctx)
		return nil, err
	}
	return e, nil
}

// Sessions is the registry of connected clients' accounts.
func (e *Embedded) Sessions() *Sessions { return e.sessions }

// Addresses returns the listen addresses: "mqtt" (TCP) and, when on,
// "mqtt_ws" (WebSocket).
func (e *Embedded) Addresses() map[string]string {
	out := map[string]string{"mqtt": e.tcp.Address()}
	if e.ws != nil {
		out["mqtt_ws"] = e.ws.Address()
	}
	return out
}

// Publish sends a message as the platform's own client (no ACL).
func (e *Embedded) Publish(topic string, payload []byte, qos byte) error {
	return e.server.Publish(topic, payload, false, qos)
}

// Subscribe subscribes the platform's own client to filter.
func (e *Embedded) Subscribe(filter string, handler func(topic string, payload []byte)) (func(), error) {
	id := int(e.subIDs.Add(1))
	err := e.server.Subscribe(filter, id, func(_ *mochi.Client, _ packets.Subscription, pk packets.Packet) {
		handler(pk.TopicName, pk.Payload)
	})
	if err != nil {
		return nil, err
	}
	var once sync.Once
	return func() { once.Do(func() { _ = e.server.Unsubscribe(filter, id) }) }, nil
}

// Close stops accepting, disconnects every client (MQTT 5 clients are
// told 0x8B, server shutting down), stops the expiry timer and the change
// watch, and waits for all of it, at most until ctx ends.
func (e *Embedded) Close(ctx context.Context) error {
	e.closing.Do(func() {
		go func() {
			defer close(e.closed)
			if e.stop != nil {
				e.stop()
			}
			e.running.Wait()
			if e.served.Load() {
				_ = e.server.Close() // closes the listeners, which join their goroutines
			} else {
				e.closeListeners()
			}
			e.fan.close() // the connections are closed: their writers end
		}()
	})
	select {
	case <-e.closed:
		return nil
	case <-ctx.Done():
		return fmt.Errorf("mqtt broker close: %w", ctx.Err())
	}
}

// closeListeners closes listeners that never served.
func (e *Embedded) closeListeners() {
	for _, l := range []*listener{e.tcp, e.ws} {
		if l != nil {
			l.Close(func(string) {})
		}
	}
}

// minLevel drops records below min: mochi logs every connection and
// hook at info.
type minLevel struct {
	slog.Handler
	min slog.Level
}

func (h minLevel) Enabled(ctx context.Context, l slog.Level) bool {
	return l >= h.min && h.Handler.Enabled(ctx, l)
}

func (h minLevel) WithAttrs(as []slog.Attr) slog.Handler {
	return minLevel{Handler: h.Handler.WithAttrs(as), min: h.min}
}

func (h minLevel) WithGroup(name string) slog.Handler {
	return minLevel{Handler: h.Handler.WithGroup(name), min: h.min}
}
