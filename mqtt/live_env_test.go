package mqtt

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"net"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/eclipse/paho.golang/paho"
	pahov3 "github.com/eclipse/paho.mqtt.golang"
	"github.com/jackc/pgx/v5"
	mochi "github.com/mochi-mqtt/server/v2"
	"github.com/mochi-mqtt/server/v2/listeners"
	"github.com/mochi-mqtt/server/v2/packets"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/openbdp/bdp/auth"
	"github.com/openbdp/bdp/clock"
	"github.com/openbdp/bdp/pipeline"
	"github.com/openbdp/bdp/store"
)

// liveEnv is the delivery side over a real PostgreSQL and a real mochi
// broker on 127.0.0.1: the pipeline (batcher, router), the Gate, the live
// publisher as a tap and the ingestion hook. Who logs in is decided by a
// small auth hook of the test (accounts by username); it asks the Gate on
// every delivery as the broker's ACL hook does.
type liveEnv struct {
	t        testing.TB
	st       *store.Store
	url      string
	reg      *prometheus.Registry
	router   *pipeline.Router
	batcher  *pipeline.Batcher
	gate     *Gate
	live     *Live
	ingest   *Ingest
	server   *mochi.Server
	addr     string
	accounts *testAccounts
	hasher   *auth.Hasher // embedded: MQTT users' passwords

	stopBroker func()

	// Fixtures: company A (admin with a company role; "tagged", whose
	// only role in p1 grants read and write on dataPointIDs room*),
	// projects p1 and p2 of A; company B (admin) with project q.
	adminA, adminB, tagged int64
	p1, p2, q              int64
	taggedRole             store.ProjectRole
}

type liveEnvConfig struct {
	// embedded: the platform's broker (Embedded, with its auth and ACL
	// hook and real MQTT users in PostgreSQL) instead of a bare mochi
	// server with the test's auth hook.
	embedded  bool
	liveQueue int
	publisher func(*mochiServer) Publisher // default the server itself
	clock     clock.Clock                  // the embedded broker's; nil: the real one
}

func newLiveEnv(t testing.TB, cfg liveEnvConfig) *liveEnv {
	t.Helper()
	ctx := context.Background()
	e := &liveEnv{t: t, reg: prometheus.NewRegistry(), accounts: newTestAccounts()}
	e.st, e.url = openTestStore(t)
	e.fixtures(ctx)

	e.router = pipeline.NewRouter()
	var err error
	e.batcher, err = pipeline.NewBatcher(pipeline.BatcherConfig{}, e.st, e.router, e.reg)
	if err != nil {
		t.Fatal(err)
	}
	go e.batcher.Run()
	t.Cleanup(e.batcher.Stop)

	e.gate = NewGate(e.st)
	lctx, cancel := context.WithCancel(ctx)
	listened := make(chan struct{})
	go func() { defer close(listened); e.gate.Listen(lctx) }()
	t.Cleanup(func() { cancel(); <-listened })

	var pub Publisher
	if cfg.embedded {
		pub = e.startEmbedded(ctx, cfg.clock)
	} else {
		pub = e.startMochi()
	}
	if cfg.publisher != nil {
		pub = cfg.publisher(e.server)
	}
	e.live, err = NewLive(pub, LiveConfig{QueueObservations: cfg.liveQueue}, e.reg)
	if err != nil {
		t.Fatal(err)
	}
	removeTap := e.router.AddTap(e.live)
	t.Cleanup(func() {
		removeTap()
		e.live.Close()
		e.stopBroker()
		e.ingest.Close()
	})
	return e
}

// startMochi serves a bare mochi server with the test's auth hook.
func (e *liveEnv) startMochi() Publisher {
	t := e.t
	e.server = mochi.New(&mochi.Options{InlineClient: true,
		Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err := e.server.AddHook(&testAuth{accounts: e.accounts, gate: e.gate}, nil); err != nil {
		t.Fatal(err)
	}
	var err error
	e.ingest, err = NewIngest(e.batcher, e.gate, e.accounts, e.reg)
	if err != nil {
		t.Fatal(err)
	}
	e.ingest.Info = e.server.Info
	if err := e.server.AddHook(e.ingest, nil); err != nil {
		t.Fatal(err)
	}
	tcp := listeners.NewTCP(listeners.Config{ID: "tcp", Address: "127.0.0.1:0"})
	if err := e.server.AddListener(tcp); err != nil {
		t.Fatal(err)
	}
	if err := e.server.Serve(); err != nil {
		t.Fatal(err)
	}
	e.addr = tcp.Address()
	e.stopBroker = func() { _ = e.server.Close() }
	return inlinePublisher{e.server}
}

// startEmbedded serves the platform's broker as bdp serve does.
func (e *liveEnv) startEmbedded(ctx context.Context, c clock.Clock) Publisher {
	t := e.t
	throttle, err := auth.NewThrottle(auth.ThrottleConfig{})
	if err != nil {
		t.Fatal(err)
	}
	e.hasher = auth.NewHasher(testHashParams, 4)
	b, err := NewEmbedded(ctx, Config{Addr: "127.0.0.1:0", CredentialTTL: time.Minute, Clock: c},
		Deps{Store: e.st, Hasher: e.hasher, Throttle: throttle, Log: slog.New(slog.NewTextHandler(io.Discard, nil)),
			Registry: e.reg, Gate: e.gate})
	if err != nil {
		t.Fatal(err)
	}
	if e.ingest, err = b.AddIngest(e.batcher, e.gate, e.reg); err != nil {
		t.Fatal(err)
	}
	if err := b.Serve(); err != nil {
		t.Fatal(err)
	}
	e.addr = b.Addresses()["mqtt"]
	e.stopBroker = func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		_ = b.Close(ctx)
	}
	return b
}

// inlinePublisher is what the broker's Publish does: the inline client.
type inlinePublisher struct{ s *mochi.Server }

func (p inlinePublisher) Publish(topic string, payload []byte, qos byte) error {
	return p.s.Publish(topic, payload, false, qos)
}

func (e *liveEnv) fixtures(ctx context.Context) {
	t := e.t
	company := func(name string) (int64, int64) {
		co, admin, _, err := e.st.CreateCompany(ctx, store.Company{Name: name},
			store.NewUser{FirstName: "A", LastName: name, Email: "admin@" + name + ".test", PasswordHash: "h"}, nil)
		if err != nil {
			t.Fatal(err)
		}
		return co.ID, admin.ID
	}
	project := func(creator, company int64, name string) int64 {
		p, _, err := e.st.CreateProject(ctx, creator, store.Project{CompanyID: company, Name: name}, nil)
		if err != nil {
			t.Fatal(err)
		}
		return p.ID
	}
	coA, adminA := company("a")
	coB, adminB := company("b")
	e.adminA, e.adminB = adminA, adminB
	e.p1, e.p2 = project(adminA, coA, "p1"), project(adminA, coA, "p2")
	e.q = project(adminB, coB, "q")
	u, err := e.st.CreateUser(ctx, store.NewUser{CompanyID: coA, FirstName: "T", LastName: "Agged", Email: "tagged@a.test", PasswordHash: "h"})
	if err != nil {
		t.Fatal(err)
	}
	e.tagged = u.ID
	e.taggedRole, err = e.st.CreateProjectRole(ctx, store.ProjectRole{Name: "rooms", ProjectID: e.p1,
		AuthedTags: []store.TagAuth{{Key: "name", Value: "room*", Read: true, Write: true}}})
	if err != nil {
		t.Fatal(err)
	}
	if err := e.st.AssignProjectRole(ctx, e.taggedRole.ID, e.tagged); err != nil {
		t.Fatal(err)
	}
}

// testAccounts is the session registry of the test broker: accounts by
// username, and by client id once connected.
type testAccounts struct {
	mu       sync.Mutex
	byUser   map[string]Account
	byClient map[string]Account
}

func newTestAccounts() *testAccounts {
	return &testAccounts{byUser: map[string]Account{}, byClient: map[string]Account{}}
}

func (a *testAccounts) add(acct Account) {
	a.mu.Lock()
	a.byUser[acct.Username] = acct
	a.mu.Unlock()
}

func (a *testAccounts) Account(clientID string) (Account, bool) {
	a.mu.Lock()
	defer a.mu.Unlock()
	acct, ok := a.byClient[clientID]
	return acct, ok
}

// testAuth admits the known usernames and checks topics as the broker's
// ACL hook does: the account's tree, and the Gate on every delivery.
type testAuth struct {
	mochi.HookBase
	accounts *testAccounts
	gate     *Gate
}

func (h *testAuth) ID() string { return "test-auth" }

func (h *testAuth) Provides(b byte) bool {
	return b == mochi.OnConnectAuthenticate || b == mochi.OnACLCheck
}

func (h *testAuth) OnConnectAuthenticate(cl *mochi.Client, pk packets.Packet) bool {
	h.accounts.mu.Lock()
	defer h.accounts.mu.Unlock()
	acct, ok := h.accounts.byUser[string(pk.Connect.Username)]
	if ok {
		h.accounts.byClient[cl.ID] = acct
	}
	return ok
}

func (h *testAuth) OnACLCheck(cl *mochi.Client, topic string, write bool) bool {
	acct, ok := h.accounts.Account(cl.ID)
	if !ok {
		return false
	}
	if write {
		return acct.MayPublish(topic)
	}
	return acct.MaySubscribe(topic) && h.gate.MayRead(acct, topic)
}

// account registers an MQTT user of project, created by creator (with
// the embedded broker, a row of mqtt_users), password "pw".
func (e *liveEnv) account(name string, project, creator int64, write bool) Account {
	a := Account{ID: int64(len(name)), Username: name, ProjectID: project, CreatedBy: creator, Write: write}
	if e.hasher != nil {
		hash, err := e.hasher.Hash(context.Background(), "pw")
		if err != nil {
			e.t.Fatal(err)
		}
		rights, until := store.MQTTRead, time.Now().Add(time.Hour)
		if write {
			rights = store.MQTTWrite
		}
		u, err := e.st.CreateMQTTUser(context.Background(), store.MQTTUser{ProjectID: project, Username: name,
			PasswordHash: hash, Rights: rights, ValidUntil: &until, CreatedBy: creator})
		if err != nil {
			e.t.Fatal(err)
		}
		a.ID, a.ValidUntil = u.ID, until
	}
	e.accounts.add(a)
	return a
}

// received is one message a subscriber got.
type received struct {
	topic   string
	payload string
}

// subscriber is a paho (MQTT 3.1.1) client subscribed with QoS 1.
type subscriber struct {
	c   pahov3.Client
	got chan received
}

func (e *liveEnv) subscribe(user, filter string) *subscriber {
	t := e.t
	t.Helper()
	s := &subscriber{got: make(chan received, 100_000)}
	opts := pahov3.NewClientOptions().AddBroker("tcp://" + e.addr).SetClientID(user + "-sub").
		SetUsername(user).SetPassword("pw").SetAutoReconnect(false).SetOrderMatters(true)
	s.c = pahov3.NewClient(opts)
	if tok := s.c.Connect(); !tok.WaitTimeout(5*time.Second) || tok.Error() != nil {
		t.Fatalf("connect %s: %v", user, tok.Error())
	}
	t.Cleanup(func() { s.c.Disconnect(0) })
	tok := s.c.Subscribe(filter, 1, func(_ pahov3.Client, m pahov3.Message) {
		s.got <- received{m.Topic(), string(m.Payload())}
	})
	if !tok.WaitTimeout(5*time.Second) || tok.Error() != nil {
		t.Fatalf("subscribe %s to %s: %v", user, filter, tok.Error())
	}
	if codes := tok.(*pahov3.SubscribeToken).Result(); codes[filter] >= 0x80 {
		t.Fatalf("subscribe %s to %s refused: %#x", user, filter, codes[filter])
	}
	return s
}

// collect waits up to 5 s for n messages, then 300 ms more for any that
// should not come; it returns all of them.
func (s *subscriber) collect(n int) []received {
	var out []received
	deadline := time.After(5 * time.Second)
	for len(out) < n {
		select {
		case m := <-s.got:
			out = append(out, m)
		case <-deadline:
			return out
		}
	}
	for {
		select {
		case m := <-s.got:
			out = append(out, m)
		case <-time.After(300 * time.Millisecond):
			return out
		}
	}
}

// publisher3 connects an MQTT 3.1.1 client.
func (e *liveEnv) publisher3(user string) pahov3.Client {
	t := e.t
	t.Helper()
	opts := pahov3.NewClientOptions().AddBroker("tcp://" + e.addr).SetClientID(user + "-pub3").
		SetUsername(user).SetPassword("pw").SetAutoReconnect(false)
	c := pahov3.NewClient(opts)
	if tok := c.Connect(); !tok.WaitTimeout(5*time.Second) || tok.Error() != nil {
		t.Fatalf("connect %s: %v", user, tok.Error())
	}
	t.Cleanup(func() { c.Disconnect(0) })
	return c
}

// publisher5 connects an MQTT 5 client.
func (e *liveEnv) publisher5(user string) *paho.Client {
	t := e.t
	t.Helper()
	conn, err := net.Dial("tcp", e.addr)
	if err != nil {
		t.Fatal(err)
	}
	c := paho.NewClient(paho.ClientConfig{ClientID: user + "-pub5", Conn: conn})
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	ack, err := c.Connect(ctx, &paho.Connect{ClientID: user + "-pub5", CleanStart: true, KeepAlive: 30,
		Username: user, UsernameFlag: true, Password: []byte("pw"), PasswordFlag: true})
	if err != nil || ack.ReasonCode != 0 {
		t.Fatalf("connect %s (MQTT 5): %v %+v", user, err, ack)
	}
	t.Cleanup(func() { _ = c.Disconnect(&paho.Disconnect{}) })
	return c
}

// upload stores observations through the batcher, as an HTTP upload does.
func (e *liveEnv) upload(obs ...pipeline.Observation) {
	e.t.Helper()
	if err := e.batcher.Write(context.Background(), pipeline.SourceHTTP, obs); err != nil {
		e.t.Fatal(err)
	}
}

func (e *liveEnv) count(query string, args ...any) int {
	e.t.Helper()
	conn, err := pgx.Connect(context.Background(), e.url)
	if err != nil {
		e.t.Fatal(err)
	}
	defer conn.Close(context.Background())
	var n int
	if err := conn.QueryRow(context.Background(), query, args...).Scan(&n); err != nil {
		e.t.Fatalf("%s: %v", query, err)
	}
	return n
}

// metric reads a counter of the env's registry by name and labels; one
// not there yet reads 0.
func (e *liveEnv) metric(name string, labels ...string) float64 {
	e.t.Helper()
	v, _ := gatherValue(e.t, e.reg, name, labels...)
	return v
}

// obs is one observation of project p at second sec after t0.
func obsAt(p int64, dp string, sec int, v float64) pipeline.Observation {
	return pipeline.Observation{ProjectID: p, DataPointID: dp, Time: t0.Add(time.Duration(sec) * time.Second), Value: v}
}

var t0 = time.Date(2026, 3, 2, 0, 0, 0, 0, time.UTC)

// payloadOf is the live payload of an observation at sec with value v.
func payloadOf(sec int, v float64) string {
	return fmt.Sprintf(`{"time":"%s","value":%g}`, t0.Add(time.Duration(sec)*time.Second).Format(time.RFC3339Nano), v)
}

func topics(ms []received) []string {
	out := make([]string, len(ms))
	for i, m := range ms {
		out[i] = m.topic
	}
	return out
}

func lines(ms []received) string {
	var b strings.Builder
	for _, m := range ms {
		b.WriteString(m.topic + " " + m.payload + "\n")
	}
	return b.String()
}

type mochiServer = mochi.Server
