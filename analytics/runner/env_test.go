package runner

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/openbdp/bdp/analytics"
	"github.com/openbdp/bdp/analytics/kpi"
	"github.com/openbdp/bdp/clock"
	"github.com/openbdp/bdp/store"
	"github.com/openbdp/bdp/store/pgcluster"
	"github.com/openbdp/bdp/store/storetest"
)

var testCluster *pgcluster.Cluster

func TestMain(m *testing.M) {
	pgcluster.RunTests(m, func(c *pgcluster.Cluster) { testCluster = c })
}

// env is a migrated database with the catalog loaded, a project with a
// room whose co2 pin is mapped onto the datapoint "room.co2", and a pool
// of connections for the test's own queries.
type env struct {
	st        *store.Store
	cat       *analytics.Catalog
	db        *pgxpool.Pool
	projectID int64
	cipID     int64
	co2       int64 // the row id of datapoint room.co2
	log       *slog.Logger
}

func newEnv(t testing.TB) *env {
	t.Helper()
	ctx := context.Background()
	st, url := storetest.Open(t, testCluster)
	db, err := pgxpool.New(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(db.Close)
	cat, err := analytics.LoadCatalog(ctx, st)
	if err != nil {
		t.Fatal(err)
	}
	e := &env{st: st, cat: cat, db: db, log: slog.New(slog.NewTextHandler(io.Discard, nil))}
	p := storetest.NewTenant(t, st, "acme").Project
	e.projectID = p.ID
	dps, err := st.EnsureDatapoints(ctx, p.ID, []string{"room.co2"})
	if err != nil {
		t.Fatal(err)
	}
	e.co2 = dps["room.co2"]
	var room store.CatalogComponent
	for _, c := range cat.Components() {
		if c.AlphanumericID == "room" {
			room, _ = cat.Component(c.ID)
		}
	}
	cip, err := st.CreateComponentInProject(ctx, p.ID, room.ID, store.ComponentInProjectNames{})
	if err != nil {
		t.Fatal(err)
	}
	e.cipID = cip.ID
	for _, pin := range room.Pins {
		if pin.AlphanumericID == "co2" {
			if err := st.MapPin(ctx, p.ID, cip.ID, pin.ID, "room.co2", store.MapCreate); err != nil {
				t.Fatal(err)
			}
		}
	}
	return e
}

// catalogFunction is the id of one of the release's functions.
func (e *env) catalogFunction(t testing.TB, alphanumericID string) int64 {
	t.Helper()
	for _, f := range e.cat.Functions() {
		if f.AlphanumericID == alphanumericID {
			return f.ID
		}
	}
	t.Fatalf("no analysis function %q in the catalog", alphanumericID)
	return 0
}

// function makes an analysis function row of the test's and returns its id.
func (e *env) function(t *testing.T, alphanumericID string) int64 {
	t.Helper()
	var id int64
	if err := e.db.QueryRow(context.Background(), `INSERT INTO analysis_functions (alphanumeric_id, name_de, name_en)
		VALUES ($1, $1, $1) RETURNING id`, alphanumericID).Scan(&id); err != nil {
		t.Fatal(err)
	}
	return id
}

// instance makes an instance of the function on the room.
func (e *env) instance(t testing.TB, functionID int64, enabled bool, created time.Time) int64 {
	t.Helper()
	var id int64
	if err := e.db.QueryRow(context.Background(), `INSERT INTO analysis_instances (project_id, function_id, componentinproject_id, enabled, created_at)
		VALUES ($1, $2, $3, $4, $5) RETURNING id`, e.projectID, functionID, e.cipID, enabled, created).Scan(&id); err != nil {
		t.Fatal(err)
	}
	return id
}

// request queues a manual run as the run route does.
func (e *env) request(t testing.TB, instanceID int64, start, end time.Time) string {
	t.Helper()
	var id string
	if err := e.db.QueryRow(context.Background(), `INSERT INTO analysis_results (id, instance_id, project_id, period_start, period_end)
		VALUES (gen_random_uuid(), $1, $2, $3, $4) RETURNING id::text`, instanceID, e.projectID, start, end).Scan(&id); err != nil {
		t.Fatal(err)
	}
	return id
}

// result is a result row as the test reads it.
type result struct {
	status, info, version string
	attempts              int
	outcome               *analytics.Outcome
}

func (e *env) result(t *testing.T, id string) result {
	t.Helper()
	var r result
	if err := e.db.QueryRow(context.Background(), `SELECT status, info, analytics_version, attempts, outcome FROM analysis_results WHERE id = $1::uuid`, id).
		Scan(&r.status, &r.info, &r.version, &r.attempts, &r.outcome); err != nil {
		t.Fatal(err)
	}
	return r
}

// waitFinished waits until no run is left waiting or in progress.
func (e *env) waitFinished(t *testing.T, timeout time.Duration) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for {
		var n int
		if err := e.db.QueryRow(context.Background(), `SELECT count(*) FROM analysis_results WHERE status = 'running'`).Scan(&n); err != nil {
			t.Fatal(err)
		}
		if n == 0 {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d runs still running after %s", n, timeout)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// startPool runs a pool until the test ends.
func (e *env) startPool(t *testing.T, cfg Config) *Pool {
	t.Helper()
	cfg.Store, cfg.Log = e.st, e.log
	if cfg.Version == "" {
		cfg.Version = "test-version"
	}
	p, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); p.Run(ctx) }()
	t.Cleanup(func() { cancel(); <-done })
	return p
}

// testFunction is an analysis function made of a Go func, for runs whose
// behaviour a test chooses (a panic, a slow kernel).
type testFunction struct {
	reads []string
	run   func(analytics.Input) (analytics.Outcome, error)
}

func (f testFunction) Reads(string) []string                             { return f.reads }
func (f testFunction) Run(in analytics.Input) (analytics.Outcome, error) { return f.run(in) }

// lookup finds the test's functions in fns, and the release's in the
// catalog.
func (e *env) lookup(fns map[int64]Function) Functions {
	release := FromCatalog(e.cat)
	return func(id int64) (Function, bool) {
		if f, ok := fns[id]; ok {
			return f, true
		}
		return release(id)
	}
}

// airQuality runs the room air quality kernel on the co2 pin, reporting
// the mean concentration as the summary KPI: a function of the test's
// that computes from stored data.
var airQuality = testFunction{reads: []string{"co2"}, run: func(in analytics.Input) (analytics.Outcome, error) {
	co2, ok := in.Series["co2"]
	if !ok {
		return analytics.Outcome{}, fmt.Errorf("pin co2: %w", analytics.ErrMissingPin)
	}
	res, err := kpi.RoomAirQuality(co2, kpi.AirQualityAttributes{}, in.Period)
	if err != nil {
		return analytics.Outcome{}, err
	}
	out := analytics.Outcome{NoData: res.NoData, SignalColor: string(res.Color)}
	for _, k := range res.KPIs {
		out.KPIs = append(out.KPIs, analytics.OutcomeKPI{Identifier: k.ID, Unit: k.Unit, Value: k.Value})
	}
	out.Summary.Identifier = "co2.mean"
	if k, ok := res.KPI("co2.mean"); ok {
		out.Summary.Current = &k.Value
	}
	return out, nil
}}

// waitTimers waits until n timers are armed on c: the schedules are asleep.
func waitTimers(t *testing.T, c *clock.Fake, n int) {
	t.Helper()
	for deadline := time.Now().Add(10 * time.Second); c.Armed() < n; time.Sleep(5 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("%d timers armed, want %d", c.Armed(), n)
		}
	}
}
