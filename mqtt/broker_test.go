package mqtt

import (
	"context"
	"crypto/tls"
	"errors"
	"io"
	"log/slog"
	"net"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/eclipse/paho.golang/paho"
	pahov3 "github.com/eclipse/paho.mqtt.golang"
	pahov3packets "github.com/eclipse/paho.mqtt.golang/packets"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/openbdp/bdp/auth"
	"github.com/openbdp/bdp/clock"
	"github.com/openbdp/bdp/store"
	"github.com/openbdp/bdp/store/storetest"
)

// brokerEnv is the embedded broker over a real PostgreSQL on 127.0.0.1,
// with two companies' projects to hold MQTT users.
type brokerEnv struct {
	t        *testing.T
	st       *store.Store
	hasher   *auth.Hasher
	throttle *auth.Throttle
	reg      *prometheus.Registry
	b        *Embedded
	addr     string
	// p and q are projects of different companies; creatorP and
	// creatorQ their companies' admins.
	p, q               int64
	creatorP, creatorQ int64
}

type brokerEnvConfig struct {
	throttle auth.ThrottleConfig
	clock    clock.Clock // nil: the real one
	wsAddr   string
	cacheTTL time.Duration // default a minute
	// tls, when set, serves MQTT over TLS and over WebSocket over TLS
	// with its certificate too.
	tls *tls.Config
	log io.Writer // the broker's log; nil: discarded
}

// The errors of paho.mqtt.golang for MQTT 3.1.1 CONNACK return codes.
var (
	errV3BadCredentials = pahov3packets.ErrorRefusedBadUsernameOrPassword // 0x04
	errV3NotAuthorized  = pahov3packets.ErrorRefusedNotAuthorised         // 0x05
	errV3IDRejected     = pahov3packets.ErrorRefusedIDRejected            // 0x02
	errV3Unavailable    = pahov3packets.ErrorRefusedServerUnavailable     // 0x03
)

// testHashParams keep the tests fast; the hash is argon2id all the same.
var testHashParams = auth.HashParams{Time: 1, Memory: 1024, Threads: 1}

func newBrokerEnv(t *testing.T, cfg brokerEnvConfig) *brokerEnv {
	t.Helper()
	ctx := context.Background()
	st, _ := openTestStore(t)
	e := &brokerEnv{t: t, st: st, hasher: auth.NewHasher(testHashParams, 4), reg: prometheus.NewRegistry()}
	var err error
	if e.throttle, err = auth.NewThrottle(cfg.throttle); err != nil {
		t.Fatal(err)
	}
	e.p, e.creatorP = e.project("acme")
	e.q, e.creatorQ = e.project("other")
	if cfg.cacheTTL == 0 {
		cfg.cacheTTL = time.Minute
	}
	bcfg := Config{Addr: "127.0.0.1:0", WSAddr: cfg.wsAddr, CredentialTTL: cfg.cacheTTL, Clock: cfg.clock}
	if cfg.tls != nil {
		bcfg.TLSAddr, bcfg.WSSAddr, bcfg.TLS = "127.0.0.1:0", "127.0.0.1:0", cfg.tls
	}
	if cfg.log == nil {
		cfg.log = io.Discard
	}
	e.b, err = StartEmbedded(ctx, bcfg,
		Deps{Store: st, Hasher: e.hasher, Throttle: e.throttle, Log: slog.New(slog.NewTextHandler(cfg.log, nil)), Registry: e.reg})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		if err := e.b.Close(ctx); err != nil {
			t.Error(err)
		}
	})
	e.addr = e.b.Addresses()["mqtt"]
	return e
}

// project makes a company with its admin and one project.
func (e *brokerEnv) project(name string) (projectID, adminID int64) {
	e.t.Helper()
	tn := storetest.NewTenant(e.t, e.st, name)
	return tn.Project.ID, tn.Admin.ID
}

func (e *brokerEnv) hash(password string) string {
	e.t.Helper()
	h, err := e.hasher.Hash(context.Background(), password)
	if err != nil {
		e.t.Fatal(err)
	}
	return h
}

// user stores an MQTT user of project p (created by p's admin), valid for
// an hour unless validUntil says otherwise.
func (e *brokerEnv) user(username, password, rights string, validUntil ...time.Time) store.MQTTUser {
	e.t.Helper()
	return e.userOf(e.p, e.creatorP, username, password, rights, validUntil...)
}

func (e *brokerEnv) userOf(project, creator int64, username, password, rights string, validUntil ...time.Time) store.MQTTUser {
	e.t.Helper()
	until := time.Now().Add(time.Hour)
	if len(validUntil) > 0 {
		until = validUntil[0]
	}
	u, err := e.st.CreateMQTTUser(context.Background(), store.MQTTUser{ProjectID: project, Username: username,
		PasswordHash: e.hash(password), Rights: rights, ValidUntil: &until, CreatedBy: creator})
	if err != nil {
		e.t.Fatal(err)
	}
	return u
}

// metric reads a counter or gauge of the broker's registry; labels are
// name, value pairs. A metric that is not there fails the test.
func (e *brokerEnv) metric(name string, labels ...string) float64 {
	e.t.Helper()
	v, ok := gatherValue(e.t, e.reg, name, labels...)
	if !ok {
		e.t.Fatalf("no metric %s%v", name, labels)
	}
	return v
}

// client5 is an MQTT 5 connection (paho.golang), for reason codes.
type client5 struct {
	*paho.Client
	received     chan *paho.Publish
	disconnected chan *paho.Disconnect // the server's DISCONNECT
	closed       chan struct{}         // the connection ended, however
}

type connect5Options struct {
	will *paho.WillMessage
	// keep asks for a persistent session (clean start off, kept an hour).
	keep bool
}

// connect5 connects over MQTT 5 and returns the client and the CONNACK's
// reason code; err is set when the connection was refused.
func (e *brokerEnv) connect5(clientID, username, password string, opts ...connect5Options) (*client5, byte, error) {
	e.t.Helper()
	conn, err := net.Dial("tcp", e.addr)
	if err != nil {
		e.t.Fatal(err)
	}
	c := &client5{received: make(chan *paho.Publish, 100), disconnected: make(chan *paho.Disconnect, 1), closed: make(chan struct{})}
	var once sync.Once
	c.Client = paho.NewClient(paho.ClientConfig{Conn: conn,
		OnPublishReceived: []func(paho.PublishReceived) (bool, error){func(pr paho.PublishReceived) (bool, error) {
			c.received <- pr.Packet
			return true, nil
		}},
		OnServerDisconnect: func(d *paho.Disconnect) { c.disconnected <- d },
		OnClientError:      func(error) { once.Do(func() { close(c.closed) }) },
	})
	cp := &paho.Connect{ClientID: clientID, Username: username, UsernameFlag: true, Password: []byte(password),
		PasswordFlag: true, KeepAlive: 30, CleanStart: true}
	if len(opts) > 0 && opts[0].will != nil {
		cp.WillMessage = opts[0].will
	}
	if len(opts) > 0 && opts[0].keep {
		hour := uint32(3600)
		cp.CleanStart = false
		cp.Properties = &paho.ConnectProperties{SessionExpiryInterval: &hour}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	ack, err := c.Connect(ctx, cp)
	if ack == nil {
		if err == nil {
			err = errors.New("no CONNACK")
		}
		e.t.Fatalf("CONNECT %s: %v", username, err)
	}
	if err == nil {
		e.t.Cleanup(func() { _ = c.Disconnect(&paho.Disconnect{}) })
	}
	return c, ack.ReasonCode, err
}

// connect3 connects over MQTT 3.1.1 (paho.mqtt.golang) to broker
// (tcp://… or ws://…).
func connect3(t *testing.T, broker, clientID, username, password string) (pahov3.Client, error) {
	t.Helper()
	c := pahov3.NewClient(pahov3.NewClientOptions().AddBroker(broker).SetClientID(clientID).SetUsername(username).
		SetPassword(password).SetProtocolVersion(4).SetAutoReconnect(false).SetConnectTimeout(10 * time.Second))
	tok := c.Connect()
	if !tok.WaitTimeout(15 * time.Second) {
		t.Fatalf("CONNECT %s to %s: no answer", username, broker)
	}
	if tok.Error() == nil {
		t.Cleanup(func() { c.Disconnect(100) })
	}
	return c, tok.Error()
}

// subscribe5 subscribes to one filter and returns the SUBACK's reason.
func (c *client5) subscribe(t *testing.T, filter string) byte {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	sa, err := c.Subscribe(ctx, &paho.Subscribe{Subscriptions: []paho.SubscribeOptions{{Topic: filter, QoS: 1}}})
	if sa == nil {
		t.Fatalf("SUBSCRIBE %s: %v", filter, err)
	}
	return sa.Reasons[0]
}

// publish sends a QoS 1 PUBLISH and returns the PUBACK's reason code.
func (c *client5) publish(t *testing.T, topic, payload string) byte {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	res, err := c.Publish(ctx, &paho.Publish{Topic: topic, QoS: 1, Payload: []byte(payload)})
	if res == nil {
		t.Fatalf("PUBLISH %s: %v", topic, err)
	}
	return res.ReasonCode
}

// waitDisconnected waits for the server to end the connection and
// returns the DISCONNECT's reason code (0 when none came) and when the
// connection ended.
func (c *client5) waitDisconnected(t *testing.T, within time.Duration) (byte, time.Time) {
	t.Helper()
	select {
	case d := <-c.disconnected:
		return d.ReasonCode, time.Now()
	case <-c.closed:
		return 0, time.Now()
	case <-time.After(within):
		t.Fatalf("still connected after %s", within)
	}
	return 0, time.Time{}
}

// TestConnectRefusals: who may connect, with the reason code an MQTT 5
// client is told and the refusal counted by reason.
func TestConnectRefusals(t *testing.T) {
	// The broker's clock runs two hours ahead, so a user valid for one
	// more hour by the database's clock has expired by the broker's:
	// valid_until is checked on CONNECT, not only by the expiry timer.
	ahead := 2 * time.Hour
	e := newBrokerEnv(t, brokerEnvConfig{clock: clock.Func(func() time.Time { return time.Now().Add(ahead) })})
	e.user("reader", "reader-password", store.MQTTRead, time.Now().Add(3*time.Hour))
	e.user("lapsed", "lapsed-password", store.MQTTRead, time.Now().Add(time.Hour))
	edgeHash := e.hash("edge-password")
	if _, err := e.st.PutEdgeCredentials(context.Background(), e.p, edgeHash); err != nil {
		t.Fatal(err)
	}
	edge := store.EdgeUsername(e.p)
	willOn := func(topic string) connect5Options {
		return connect5Options{will: &paho.WillMessage{Topic: topic, Payload: []byte("gone"), QoS: 0}}
	}
	cases := []struct {
		name, clientID, username, password string
		opts                               []connect5Options
		code                               byte
		reason                             string // counted refusal; "" for none
	}{
		{"good", "c-good", "reader", "reader-password", nil, 0x00, ""},
		{"wrong password", "c-wrong", "reader", "not-the-password", nil, 0x86, refusedBadPassword},
		{"unknown user", "c-unknown", "nobody", "reader-password", nil, 0x86, refusedUnknownUser},
		{"expired", "c-expired", "lapsed", "lapsed-password", nil, 0x87, refusedExpired},
		{"username too long to exist", "c-long", strings.Repeat("r", 65), "reader-password", nil, 0x86, refusedUnknownUser},
		{"username with NUL", "c-nul", "reader\x00", "reader-password", nil, 0x86, refusedUnknownUser},
		{"inline client id", "inline", "reader", "reader-password", nil, 0x85, refusedReserved},
		{"platform client id", "bdp", "reader", "reader-password", nil, 0x85, refusedReserved},
		{"will of a user", "c-will", "reader", "reader-password", []connect5Options{willOn("project/" + strconv.FormatInt(e.p, 10) + "/datapoint/x")}, 0x87, refusedWill},
		{"will of the edge device outside its tree", "c-edge-will", edge, "edge-password", []connect5Options{willOn("edge/" + strconv.FormatInt(e.q, 10) + "/status")}, 0x87, refusedWill},
		{"will of the edge device on its tree", "c-edge-will-ok", edge, "edge-password", []connect5Options{willOn("edge/" + strconv.FormatInt(e.p, 10) + "/status")}, 0x00, ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			before := 0.0
			if c.reason != "" {
				before = e.metric("bdp_mqtt_connect_refused_total", "reason", c.reason)
			}
			_, code, err := e.connect5(c.clientID, c.username, c.password, c.opts...)
			if code != c.code || (err == nil) != (c.code == 0) {
				t.Fatalf("CONNACK reason 0x%02x (%v), want 0x%02x", code, err, c.code)
			}
			if c.reason != "" {
				if got := e.metric("bdp_mqtt_connect_refused_total", "reason", c.reason); got != before+1 {
					t.Fatalf("refusals %q: %v, want %v", c.reason, got, before+1)
				}
			}
		})
	}
	// MQTT 3.1.1 clients get the 3.1.1 return codes.
	if _, err := connect3(t, "tcp://"+e.addr, "v3-wrong", "reader", "nope"); !errors.Is(err, errV3BadCredentials) {
		t.Fatalf("3.1.1 wrong password: %v", err)
	}
	if _, err := connect3(t, "tcp://"+e.addr, "v3-expired", "lapsed", "lapsed-password"); !errors.Is(err, errV3NotAuthorized) {
		t.Fatalf("3.1.1 expired: %v", err)
	}
	if _, err := connect3(t, "tcp://"+e.addr, "inline", "reader", "reader-password"); !errors.Is(err, errV3IDRejected) {
		t.Fatalf("3.1.1 inline client id: %v", err)
	}
	if _, err := connect3(t, "tcp://"+e.addr, "v3-good", "reader", "reader-password"); err != nil {
		t.Fatalf("3.1.1 good: %v", err)
	}
}
