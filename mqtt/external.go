package mqtt

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"net/url"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/eclipse/paho.golang/autopaho"
	"github.com/eclipse/paho.golang/paho"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/openbdp/bdp/clock"
	"github.com/openbdp/bdp/pipeline"
	"github.com/openbdp/bdp/store"
)

// External is the MQTT layer when an external broker (Mosquitto 2 with its
// dynamic-security plugin) serves the clients instead of the embedded one:
// BDP_MQTT_EXTERNAL. bdp holds one MQTT 5 connection to it as the admin
// client and through it
//   - keeps every MQTT user of mqtt_users in the plugin: a client with its
//     password and a role with its ACLs (external_users.go);
//   - publishes live data (Publish), marked as bdp's own;
//   - ingests what gateways publish to project/+/datapoint/# through a
//     shared subscription, acknowledging a QoS 1 message only once stored
//     (external_ingest.go).
//
// MQTT 5, not 3.1.1, because a node must recognise live data published by
// any node (its own or another's) on the very topics it ingests from:
// MQTT 3.1.1 says nothing about who published a message, and No Local is
// not allowed on a shared subscription. Live data carries the user
// property liveMarker; a publish with it is never ingested.
type External struct {
	cfg     ExternalConfig
	log     *slog.Logger
	cm      *autopaho.ConnectionManager
	ds      *dynsec
	ingest  *externalIngest
	users   *externalUsers
	metrics *externalMetrics

	ctx    context.Context
	cancel context.CancelFunc
	wg     sync.WaitGroup

	firstUp atomic.Bool // the first connection was made (StartExternal syncs after it)

	connMu     sync.Mutex
	connCtx    context.Context // the current connection's; done while down
	connCancel context.CancelFunc

	mu   sync.Mutex
	subs map[string]map[string]func(topic string, payload []byte) // Subscribe's handlers by filter and id

	pub *externalPublisher

	owned ownedIngest // the cluster's ingestion session (external_owned.go)
}

var _ Broker = (*External)(nil)

// ExternalConfig configures External.
type ExternalConfig struct {
	URL           string // tcp://host:port (BDP_MQTT_EXTERNAL)
	AdminUser     string // a client of the plugin with every right (BDP_MQTT_ADMIN_USER)
	AdminPassword string
	// ClientID names bdp's session at the broker; persistent (a restart
	// picks up what was queued for it). Each node needs its own; the
	// default is bdp-{hostname}.
	ClientID string
	Store    *store.Store
	// Sink stores ingested observations; nil: no ingestion.
	Sink pipeline.Sink
	// IngestClientID, in a cluster, names the ingestion session the nodes
	// take turns on (SetIngesting, external_owned.go) instead of sharing
	// a subscription. Empty (one node): the shared subscription.
	IngestClientID string
	Logger         *slog.Logger
	Registry       prometheus.Registerer // /metrics; nil: counted, not exported
	Clock          clock.Clock           // the time of expiry; nil: the real one
}

// liveMarker is the MQTT 5 user property on every publish of live data.
const liveMarker = "bdp-live"

// sessionExpiry keeps bdp's session (its shared subscription and what is
// queued for it) at the broker across a restart of bdp of up to a day.
const sessionExpiry = 24 * 60 * 60

// StartExternal connects to the broker (waiting up to connectTimeout for
// the first connection), brings the plugin's clients and roles in line
// with mqtt_users, and starts following changes. Close stops it.
func StartExternal(ctx context.Context, cfg ExternalConfig) (*External, error) {
	const connectTimeout = 30 * time.Second
	u, err := url.Parse(cfg.URL)
	if err != nil || u.Host == "" || (u.Scheme != "tcp" && u.Scheme != "mqtt") {
		return nil, fmt.Errorf("external MQTT broker %q: want tcp://host:port", cfg.URL)
	}
	if cfg.AdminUser == "" || cfg.AdminPassword == "" || cfg.Store == nil {
		return nil, errors.New("external MQTT broker: the admin user and password and the store are required")
	}
	if cfg.ClientID == "" {
		host, _ := os.Hostname()
		cfg.ClientID = "bdp-" + host
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	if cfg.Clock == nil {
		cfg.Clock = clock.Real{}
	}
	if cfg.Registry == nil {
		cfg.Registry = prometheus.NewRegistry()
	}
	metrics, err := newExternalMetrics(cfg.Registry)
	if err != nil {
		return nil, err
	}
	e := &External{cfg: cfg, log: cfg.Logger.With("mqtt", "external"), metrics: metrics,
		subs: map[string]map[string]func(string, []byte){}}
	e.ctx, e.cancel = context.WithCancel(context.Background())
	e.ds = newDynsec(e.publishRaw, e.onConnection)
	e.pub = newExternalPublisher(e)
	e.users = newExternalUsers(e)
	if cfg.Sink != nil {
		e.ingest = newExternalIngest(e, cfg.Sink)
	}
	up := make(chan struct{}, 1)
	refused := make(chan error, 1) // the broker's refusal of the first CONNECT: a configuration error
	e.cm, err = autopaho.NewConnection(e.ctx, autopaho.ClientConfig{
		ServerUrls:                    []*url.URL{u},
		KeepAlive:                     20,
		CleanStartOnInitialConnection: false,
		SessionExpiryInterval:         sessionExpiry,
		ReconnectBackoff:              autopaho.NewExponentialBackoff(100*time.Millisecond, 5*time.Second, 250*time.Millisecond, 2),
		ConnectUsername:               cfg.AdminUser,
		ConnectPassword:               []byte(cfg.AdminPassword),
		ConnectPacketBuilder:          ingestReceiveMaximum,
		OnConnectionUp: func(cm *autopaho.ConnectionManager, _ *paho.Connack) {
			e.wg.Add(1)
			go func() {
				defer e.wg.Done()
				e.connectionUp(cm)
				select {
				case up <- struct{}{}:
				default:
				}
			}()
		},
		OnConnectionDown: func() bool {
			e.connDown()
			e.metrics.connected.Set(0)
			if e.ctx.Err() == nil {
				e.log.Warn("connection to the external MQTT broker lost; reconnecting")
			}
			return true
		},
		OnConnectError: func(err error) {
			var connack *autopaho.ConnackError
			if !e.firstUp.Load() && errors.As(err, &connack) {
				select {
				case refused <- err:
				default:
				}
				return
			}
			e.log.Warn("connect to the external MQTT broker", "err", err)
		},
		ClientConfig: paho.ClientConfig{
			ClientID:                   cfg.ClientID,
			EnableManualAcknowledgment: true,
			SendAcksInterval:           2 * time.Millisecond,
			OnPublishReceived:          []func(paho.PublishReceived) (bool, error){e.received},
		},
	})
	if err != nil {
		e.cancel()
		return nil, fmt.Errorf("external MQTT broker: %w", err)
	}
	wait, cancel := context.WithTimeout(ctx, connectTimeout)
	defer cancel()
	select {
	case <-up:
	case err := <-refused:
		_ = e.Close(context.Background())
		return nil, fmt.Errorf("external MQTT broker %s refused bdp's admin client %s (check BDP_MQTT_ADMIN_USER and BDP_MQTT_ADMIN_PASSWORD): %w",
			cfg.URL, cfg.AdminUser, err)
	case <-wait.Done():
		_ = e.Close(context.Background())
		return nil, fmt.Errorf("external MQTT broker %s: no connection as %s within %s (see the log for why)", cfg.URL, cfg.AdminUser, connectTimeout)
	}
	if err := e.users.start(wait); err != nil {
		_ = e.Close(context.Background())
		return nil, err
	}
	return e, nil
}

// connectionUp (re)subscribes after every connection: the response topic
// of the plugin, the ingestion subscription and Subscribe's filters. The
// persistent session would keep them, but a broker that lost its state
// would not.
func (e *External) connectionUp(cm *autopaho.ConnectionManager) {
	e.connMu.Lock()
	e.connCtx, e.connCancel = context.WithCancel(e.ctx)
	e.connMu.Unlock()
	e.metrics.connected.Set(1)
	subs := []paho.SubscribeOptions{{Topic: dynsecResponseTopic, QoS: 1}}
	if e.ingest != nil && e.cfg.IngestClientID == "" {
		subs = append(subs, paho.SubscribeOptions{Topic: ingestShare, QoS: 1})
	}
	if e.cfg.IngestClientID != "" {
		// A node that ran alone before keeps its session's shared
		// subscription: in a cluster it must not ingest through it.
		uctx, cancel := context.WithTimeout(e.ctx, 10*time.Second)
		_, _ = cm.Unsubscribe(uctx, &paho.Unsubscribe{Topics: []string{ingestShare}})
		cancel()
	}
	e.mu.Lock()
	for f := range e.subs {
		subs = append(subs, paho.SubscribeOptions{Topic: f, QoS: 1})
	}
	e.mu.Unlock()
	ctx, cancel := context.WithTimeout(e.ctx, 10*time.Second)
	defer cancel()
	if _, err := cm.Subscribe(ctx, &paho.Subscribe{Subscriptions: subs}); err != nil {
		e.log.Error("subscribe at the external MQTT broker", "err", err)
	}
	if !e.firstUp.CompareAndSwap(false, true) {
		e.users.resync() // what changed while the connection was down
	}
}

// ingestReceiveMaximum is the CONNECT of a connection that ingests:
// ingestion acknowledges after storing, so enough messages must be in
// flight to fill the Batcher.
func ingestReceiveMaximum(c *paho.Connect, _ *url.URL) (*paho.Connect, error) {
	if c.Properties == nil {
		c.Properties = &paho.ConnectProperties{}
	}
	recvMax := uint16(4096)
	c.Properties.ReceiveMaximum = &recvMax
	return c, nil
}

// received routes one incoming publish. Every path acknowledges it; an
// ingested one only once stored.
func (e *External) received(pr paho.PublishReceived) (bool, error) {
	p := pr.Packet
	ack := func() { _ = pr.Client.Ack(p) }
	switch {
	case p.Topic == dynsecResponseTopic:
		ack()
		e.ds.received(p.Payload)
	case e.ingest != nil && e.cfg.IngestClientID == "" && strings.HasPrefix(p.Topic, "project/"):
		if p.Properties != nil && p.Properties.User.Get(liveMarker) != "" {
			ack() // live data of some bdp node: stored already
			break
		}
		e.ingest.take(p.Topic, p.Payload, ack)
	default:
		ack()
	}
	e.mu.Lock()
	var handlers []func(string, []byte)
	for f, hs := range e.subs {
		if topicMatches(f, p.Topic) {
			for _, h := range hs {
				handlers = append(handlers, h)
			}
		}
	}
	e.mu.Unlock()
	for _, h := range handlers {
		h(p.Topic, p.Payload)
	}
	return true, nil
}

// Publish queues a message of the platform (live data) for the broker and
// returns; the publishing goroutines send it at qos, waiting for the
// broker's acknowledgement, in order per topic. It is marked as bdp's own,
// so that no node ingests it. A full queue refuses it
// (ErrPublishQueueFull): live data is best effort and its publisher counts
// what it drops.
func (e *External) Publish(topic string, payload []byte, qos byte) error {
	return e.pub.enqueue(topic, payload, qos)
}

// connDown ends the current connection's context: what waits on it (a
// publish, an answer of the plugin) gives up at once instead of waiting
// for an acknowledgement that cannot come.
func (e *External) connDown() {
	e.connMu.Lock()
	defer e.connMu.Unlock()
	if e.connCancel != nil {
		e.connCancel()
	}
}

// onConnection bounds ctx by the current connection: it ends when either
// does; with no connection it is done already.
func (e *External) onConnection(ctx context.Context) (context.Context, context.CancelFunc) {
	e.connMu.Lock()
	conn := e.connCtx
	e.connMu.Unlock()
	ctx, cancel := context.WithCancelCause(ctx)
	if conn == nil {
		cancel(autopaho.ConnectionDownError)
		return ctx, func() {}
	}
	stop := context.AfterFunc(conn, func() { cancel(autopaho.ConnectionDownError) })
	return ctx, func() { stop(); cancel(nil) }
}

// publishRaw publishes without the marker: commands of the plugin.
func (e *External) publishRaw(ctx context.Context, topic string, payload []byte) error {
	_, err := e.cm.Publish(ctx, &paho.Publish{QoS: 1, Topic: topic, Payload: payload})
	return err
}

// Subscribe calls handler with every message on filter (at QoS 1) until
// unsubscribe; handler runs on the connection's goroutine and must not
// block.
func (e *External) Subscribe(filter string, handler func(topic string, payload []byte)) (func(), error) {
	id := randomID()
	e.mu.Lock()
	if e.subs[filter] == nil {
		e.subs[filter] = map[string]func(string, []byte){}
	}
	e.subs[filter][id] = handler
	e.mu.Unlock()
	unsubscribe := func() {
		e.mu.Lock()
		delete(e.subs[filter], id)
		last := len(e.subs[filter]) == 0
		if last {
			delete(e.subs, filter)
		}
		e.mu.Unlock()
		if last {
			ctx, cancel := context.WithTimeout(e.ctx, 10*time.Second)
			defer cancel()
			_, _ = e.cm.Unsubscribe(ctx, &paho.Unsubscribe{Topics: []string{filter}})
		}
	}
	ctx, cancel := context.WithTimeout(e.ctx, 10*time.Second)
	defer cancel()
	if _, err := e.cm.Subscribe(ctx, &paho.Subscribe{Subscriptions: []paho.SubscribeOptions{{Topic: filter, QoS: 1}}}); err != nil {
		unsubscribe()
		return nil, fmt.Errorf("subscribe to %s at the external MQTT broker: %w", filter, err)
	}
	return unsubscribe, nil
}

// Addresses names the broker clients connect to, for addresses.json.
func (e *External) Addresses() map[string]string {
	return map[string]string{"mqtt_external": e.cfg.URL}
}

// Close stops following changes and publishing, stops ingestion (what is
// not stored yet is not acknowledged: the broker delivers it again to the
// session, which it keeps for sessionExpiry) and disconnects, waiting at
// most until ctx ends.
func (e *External) Close(ctx context.Context) error {
	e.closeOwned() // the cluster's ingestion session stays for the next owner
	e.cancel()
	done := make(chan struct{})
	go func() {
		defer close(done)
		e.pub.close()
		if e.ingest != nil {
			e.ingest.close()
		}
		e.wg.Wait()
	}()
	select {
	case <-done:
	case <-ctx.Done():
		return fmt.Errorf("close the external MQTT connection: %w", ctx.Err())
	}
	dctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	_ = e.cm.Disconnect(dctx)
	select {
	case <-e.cm.Done():
		return nil
	case <-ctx.Done():
		return fmt.Errorf("close the external MQTT connection: %w", ctx.Err())
	}
}

// topicMatches tells whether topic matches an MQTT filter.
func topicMatches(filter, topic string) bool {
	f, t := strings.Split(filter, "/"), strings.Split(topic, "/")
	for i, level := range f {
		if level == "#" {
			return true
		}
		if i >= len(t) || level != "+" && level != t[i] {
			return false
		}
	}
	return len(f) == len(t)
}

func randomID() string {
	b := make([]byte, 4)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}
