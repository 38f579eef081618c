package mqtt

import (
	"context"
	"crypto/tls"
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
	"github.com/openbdp/bdp/clock"
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
	// TLSAddr and WSSAddr are the listen addresses of MQTT over TLS and
	// of MQTT over WebSocket over TLS (gateways reach the platform over
	// the internet); empty: none. Both need TLS.
	TLSAddr, WSSAddr string
	TLS              *tls.Config // the server certificate (LoadTLS)
	// Name is the platform's own client id; network clients may use
	// neither it nor mochi's "inline". Default "bdp".
	Name          string
	MaxPacketSize uint32        // default DefaultMaxPacketSize
	ClientQueue   int32         // messages; default DefaultClientQueue
	CredentialTTL time.Duration // verified credentials are remembered this long; 0 disables
	// Clock is the time of expiry and of the credential cache; nil: the
	// real one.
	Clock clock.Clock
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
	// listeners by addresses.json key: "mqtt" always, "mqtt_ws",
	// "mqtt_tls", "mqtt_wss" when configured.
	listeners map[string]*listener
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
	if cfg.Clock == nil {
		cfg.Clock = clock.Real{}
	}
	log := deps.Log.With(slog.String("component", "mqtt"))
	dummy, err := deps.Hasher.Hash(ctx, randomPassword())
	if err != nil {
		return nil, fmt.Errorf("mqtt: %w", err)
	}
	e := &Embedded{cfg: cfg, deps: deps, log: log, dummyHash: dummy, expired: newExpiredUsers(),
		creds: auth.NewCredentialCache([]byte(randomPassword()), cfg.CredentialTTL, cfg.Clock.Now), rearm: make(chan struct{}, 1),
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
		// mochi logs every connection at info; bdp keeps its warnings,
		// with packets summarised (mochiLog).
		Logger:                 slog.New(mochiLog{Handler: log.Handler(), min: slog.LevelWarn}),
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
	if err := e.server.AddHook(newSessionHook(cfg.Clock.Now), nil); err != nil {
		return nil, err
	}
	e.audience = &audienceHook{server: e.server}
	if err := e.server.AddHook(e.audience, nil); err != nil {
		return nil, err
	}
	if err := e.listen(); err != nil {
		return nil, err
	}
	for _, l := range e.listeners {
		if err := e.server.AddListener(l); err != nil {
			e.closeListeners()
			return nil, err
		}
	}
	return e, nil
}

// listen opens the configured listeners, or none when one fails.
func (e *Embedded) listen() error {
	cfg := e.cfg
	if (cfg.TLSAddr != "" || cfg.WSSAddr != "") && cfg.TLS == nil {
		return errors.New("mqtt: TLS listeners need a certificate (Config.TLS)")
	}
	specs := []struct {
		key, addr, variable string
		open                func() (*listener, error)
	}{
		{"mqtt", cfg.Addr, "BDP_MQTT_ADDR", func() (*listener, error) { return newTCPListener(cfg.Addr, nil) }},
		{"mqtt_ws", cfg.WSAddr, "BDP_MQTT_WS_ADDR", func() (*listener, error) { return newWebSocketListener(cfg.WSAddr, nil, e.log) }},
		{"mqtt_tls", cfg.TLSAddr, "BDP_MQTT_TLS_ADDR", func() (*listener, error) { return newTCPListener(cfg.TLSAddr, cfg.TLS) }},
		{"mqtt_wss", cfg.WSSAddr, "BDP_MQTT_WSS_ADDR", func() (*listener, error) { return newWebSocketListener(cfg.WSSAddr, cfg.TLS, e.log) }},
	}
	e.listeners = map[string]*listener{}
	for _, sp := range specs {
		if sp.addr == "" && sp.key != "mqtt" {
			continue
		}
		l, err := sp.open()
		if err != nil {
			for _, opened := range e.listeners {
				_ = opened.ln.Close()
			}
			e.listeners = nil
			return fmt.Errorf("listen on %s %s: %w", sp.variable, sp.addr, err)
		}
		e.listeners[sp.key] = l
	}
	return nil
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
// "mqtt_ws" (WebSocket), "mqtt_tls" (TLS) and "mqtt_wss" (WebSocket over
// TLS).
func (e *Embedded) Addresses() map[string]string {
	out := make(map[string]string, len(e.listeners))
	for key, l := range e.listeners {
		out[key] = l.Address()
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
	for _, l := range e.listeners {
		l.Close(func(string) {})
	}
}
