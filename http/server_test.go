package http

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net"
	nethttp "net/http"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/openbdp/bdp/actors"
	"github.com/openbdp/bdp/auth"
	"github.com/openbdp/bdp/controls"
	"github.com/openbdp/bdp/node"
	"github.com/openbdp/bdp/store"
	"github.com/openbdp/bdp/store/pgcluster"
)

// The tests of this package run the real server on 127.0.0.1:0 against a
// real PostgreSQL cluster started once for the package; each test gets a
// fresh database.

var testCluster *pgcluster.Cluster

const testOperatorToken = "operator-token-for-tests-0123456789"

func TestMain(m *testing.M) {
	pgcluster.RunTests(m, func(c *pgcluster.Cluster) { testCluster = c })
}

// testEnv is one running server with its own database.
type testEnv struct {
	t     *testing.T
	base  string
	dbURL string // the test's own database, for checks in SQL
	store *store.Store
	srv   *Server
	// writes records the setpoints controls apps write (recordingWriter).
	writes *recordingWriter
}

// fastHash keeps tests quick; production uses auth.DefaultHashParams.
var fastHash = auth.HashParams{Time: 1, Memory: 1024, Threads: 1}

func newTestEnv(t *testing.T, tweak ...func(*Config)) *testEnv {
	t.Helper()
	return newTestEnvEngine(t, func(*actors.EngineConfig) {}, tweak...)
}

// newTestEnvEngine is newTestEnv with the engine's configuration changed
// by tweakEngine (a window budget, say).
func newTestEnvEngine(t *testing.T, tweakEngine func(*actors.EngineConfig), tweak ...func(*Config)) *testEnv {
	t.Helper()
	return startTestEnv(t, testCluster.TestDatabase(t), tweakEngine, tweak...)
}

// twin starts a second server on the database of e, with caches of its
// own, as a second node of one deployment.
func (e *testEnv) twin() *testEnv {
	e.t.Helper()
	return startTestEnv(e.t, e.dbURL, func(*actors.EngineConfig) {})
}

// startTestEnv starts a server on the database at url.
func startTestEnv(t *testing.T, url string, tweakEngine func(*actors.EngineConfig), tweak ...func(*Config)) *testEnv {
	t.Helper()
	return startTestEnvDeps(t, url, tweakEngine, func(*Deps) func(context.Context) { return nil }, tweak...)
}

// startTestEnvDeps is startTestEnv with the server's Deps changed by
// tweakDeps (a document store, say). The stop tweakDeps returns, if not
// nil, runs once HTTP has drained, before the engine and the pipeline
// stop: the parts it started may write through them.
func startTestEnvDeps(t *testing.T, url string, tweakEngine func(*actors.EngineConfig), tweakDeps func(*Deps) (stop func(context.Context)), tweak ...func(*Config)) *testEnv {
	t.Helper()
	ctx := context.Background()
	st, err := store.Open(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := st.Migrate(ctx); err != nil {
		t.Fatal(err)
	}
	cfg := Config{OperatorToken: testOperatorToken, TokenSecret: bytes.Repeat([]byte("k"), 32),
		CredentialTTL: time.Minute, HashParams: fastHash, Version: "test"}
	for _, f := range tweak {
		f(&cfg)
	}
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	reg := prometheus.NewRegistry()
	// The core that bdp serve runs, started by the same code; the test's
	// parts below stop in reverse, as bdp serve's do.
	running := &node.Parts{Log: log}
	var engineCfg actors.EngineConfig
	tweakEngine(&engineCfg)
	core, err := node.StartCore(ctx, node.CoreConfig{Store: st, Registry: reg, Log: log, Engine: engineCfg}, running)
	if err != nil {
		t.Fatal(err)
	}
	writes := &recordingWriter{}
	ctrl, err := controls.New(controls.Config{Store: st, Catalog: core.Components, Writer: writes, Router: core.Router,
		History: actors.StoreHistory{Store: st}, Log: log})
	if err != nil {
		t.Fatal(err)
	}
	running.Add("controls apps", ctrl.Shutdown)
	deps := Deps{Store: st, Ingest: core.Ingest, Engine: core.Engine, Components: core.Components, Log: log, Registry: reg, Controls: ctrl}
	if stop := tweakDeps(&deps); stop != nil {
		running.Add("the test's own parts", stop)
	}
	srv, err := New(ctx, cfg, deps)
	if err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	go func() { defer close(done); _ = srv.Serve(ln) }()
	running.Add("http", func(ctx context.Context) { _ = srv.Shutdown(ctx); <-done })
	t.Cleanup(func() {
		running.Stop(5 * time.Second)
		st.Close()
	})
	return &testEnv{t: t, base: "http://" + ln.Addr().String(), dbURL: url, store: st, srv: srv, writes: writes}
}

// cred is how a request authenticates: Basic, Bearer or not at all.
type cred interface{ apply(*nethttp.Request) }

type basic struct{ email, password string }

func (b basic) apply(r *nethttp.Request) { r.SetBasicAuth(b.email, b.password) }

type bearer string

func (b bearer) apply(r *nethttp.Request) { r.Header.Set("Authorization", "Bearer "+string(b)) }

// resp is a decoded answer.
type resp struct {
	Status int
	Header nethttp.Header
	Body   []byte
	JSON   map[string]any
	List   []any
}

// do sends a request; body may be nil, a []byte sent verbatim, or a value
// encoded as JSON.
func (e *testEnv) do(method, path string, c cred, body any) resp {
	e.t.Helper()
	switch b := body.(type) {
	case nil:
		return e.send(method, path, c, "", nil)
	case []byte:
		return e.send(method, path, c, "application/json", bytes.NewReader(b))
	default:
		j, err := json.Marshal(b)
		if err != nil {
			e.t.Fatal(err)
		}
		return e.send(method, path, c, "application/json", bytes.NewReader(j))
	}
}

// send sends body (nil for none) as contentType and reads the whole
// answer; a JSON array lands in List, an object in JSON.
func (e *testEnv) send(method, path string, c cred, contentType string, body io.Reader) resp {
	e.t.Helper()
	req, err := nethttp.NewRequest(method, e.base+path, body)
	if err != nil {
		e.t.Fatal(err)
	}
	if body != nil {
		req.Header.Set("Content-Type", contentType)
	}
	if c != nil {
		c.apply(req)
	}
	res, err := nethttp.DefaultClient.Do(req)
	if err != nil {
		e.t.Fatalf("%s %s: %v", method, path, err)
	}
	defer res.Body.Close()
	raw, err := io.ReadAll(res.Body)
	if err != nil {
		e.t.Fatal(err)
	}
	r := resp{Status: res.StatusCode, Header: res.Header, Body: raw}
	trimmed := bytes.TrimSpace(raw)
	if len(trimmed) > 0 && trimmed[0] == '[' {
		_ = json.Unmarshal(raw, &r.List)
	} else {
		_ = json.Unmarshal(raw, &r.JSON)
	}
	return r
}

// want fails the test unless the status matches.
func (r resp) want(t *testing.T, status int) resp {
	t.Helper()
	if r.Status != status {
		t.Fatalf("expected HTTP %d, got %d: %s", status, r.Status, r.Body)
	}
	return r
}

// wantError checks the status and the failure envelope.
func (r resp) wantError(t *testing.T, status int) resp {
	t.Helper()
	r.want(t, status)
	if r.JSON["success"] != false || r.JSON["error"] == "" || r.JSON["error"] == nil {
		t.Fatalf("expected the error envelope, got %s", r.Body)
	}
	if _, ok := r.JSON["operation"].(string); !ok {
		t.Fatalf("error envelope without operation: %s", r.Body)
	}
	return r
}

// resource returns the resource of a success envelope.
func (r resp) resource(t *testing.T) map[string]any {
	t.Helper()
	if r.JSON["success"] != true {
		t.Fatalf("expected a success envelope, got %s", r.Body)
	}
	res, ok := r.JSON["resource"].(map[string]any)
	if !ok {
		t.Fatalf("resource is not an object: %s", r.Body)
	}
	return res
}

// num reads a number at a dotted path such as "resource.project.id".
func num(t *testing.T, v any, path string) int64 {
	t.Helper()
	f, ok := adAt(t, v, path).(float64)
	if !ok {
		t.Fatalf("%s: not a number in %v", path, v)
	}
	return int64(f)
}

// company is a company created through the operator API with its admin.
type company struct {
	ID          int64
	Admin       basic
	AdminID     int64
	AdminRoleID int64
}

var nameSeq atomic.Int64

func uniq(prefix string) string { return fmt.Sprintf("%s%d", prefix, nameSeq.Add(1)) }

func (e *testEnv) newCompany() company {
	e.t.Helper()
	email := uniq("admin") + "@example.com"
	r := e.do("POST", "/operator/companies", bearer(testOperatorToken), map[string]any{
		"name": uniq("company"), "description": "test company",
		"admin": map[string]any{"firstName": "Ada", "lastName": "Admin", "email": email, "password": "admin-password"},
	}).want(e.t, 201)
	return company{ID: num(e.t, r.JSON, "resource.company.id"), Admin: basic{email, "admin-password"},
		AdminID: num(e.t, r.JSON, "resource.user.id"), AdminRoleID: num(e.t, r.JSON, "resource.role.id")}
}

// newUser creates a user without roles in the company.
func (e *testEnv) newUser(c company) (basic, int64) {
	e.t.Helper()
	u := basic{uniq("user") + "@example.com", "user-password"}
	r := e.do("POST", "/v2/company/user", c.Admin, map[string]any{
		"company_id": c.ID, "firstName": "Uma", "lastName": "User", "email": u.email, "password": u.password,
	}).want(e.t, 200)
	return u, num(e.t, r.JSON, "resource.id")
}

// newProject creates a project as the given user and returns its id and
// admin role id.
func (e *testEnv) newProject(as cred) (int64, int64) {
	e.t.Helper()
	r := e.do("POST", "/v2/company/project", as, map[string]any{"name": uniq("project")}).want(e.t, 200)
	return num(e.t, r.JSON, "resource.project.id"), num(e.t, r.JSON, "resource.role.id")
}

// endpointID looks up a catalog id by method and path template.
func (e *testEnv) endpointID(method, path string) int32 {
	e.t.Helper()
	for _, r := range e.srv.routes {
		if r.Method == method && r.Path == path {
			return r.ID
		}
	}
	e.t.Fatalf("no endpoint %s %s", method, path)
	return 0
}

// sqlFloat runs a query returning one number, straight against the test's
// database: what is stored, not what the API says.
func (e *testEnv) sqlFloat(query string, args ...any) float64 {
	e.t.Helper()
	conn, err := pgx.Connect(context.Background(), e.dbURL)
	if err != nil {
		e.t.Fatal(err)
	}
	defer conn.Close(context.Background())
	var v float64
	if err := conn.QueryRow(context.Background(), query, args...).Scan(&v); err != nil {
		e.t.Fatalf("%s: %v", query, err)
	}
	return v
}
