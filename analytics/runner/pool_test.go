package runner

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/openbdp/bdp/analytics"
	"github.com/openbdp/bdp/store"
)

var t0 = time.Date(2024, 3, 4, 0, 0, 0, 0, time.UTC) // a Monday

func (e *env) write(t testing.TB, pts ...store.Point) {
	t.Helper()
	rows := make([]store.Row, len(pts))
	for i, p := range pts {
		rows[i] = store.Row{Datapoint: e.co2, Time: p.Time, Value: p.Value}
	}
	if err := e.st.WriteObservations(context.Background(), rows); err != nil {
		t.Fatal(err)
	}
}

func kpiValue(t *testing.T, o *analytics.Outcome, id string) float64 {
	t.Helper()
	for _, k := range o.KPIs {
		if k.Identifier == id {
			return k.Value
		}
	}
	t.Fatalf("no KPI %q in %+v", id, o.KPIs)
	return 0
}

// A requested run is taken from the queue when announced, computed by the
// release's room air quality function from the stored observations, and
// finished Success with its outcome; the summary compares with the period
// before, computed when no result of it is stored and taken from the
// stored one when it is.
func TestAnalysisRunSucceedsFromStoredObservations(t *testing.T) {
	e := newEnv(t)
	fn := e.catalogFunction(t, "room_air_quality_analysis")
	inst := e.instance(t, fn, false, t0)
	h := time.Hour
	// One hour in each indoor air class (outdoor 400 ppm); the point half
	// an hour before the period sets its value at the start.
	e.write(t, store.Point{Time: t0.Add(-h / 2), Value: 500}, store.Point{Time: t0, Value: 500},
		store.Point{Time: t0.Add(h), Value: 900}, store.Point{Time: t0.Add(2 * h), Value: 1300}, store.Point{Time: t0.Add(3 * h), Value: 1500})
	reg := prometheus.NewRegistry()
	p := e.startPool(t, Config{Functions: FromCatalog(e.cat), Workers: 2, Registry: reg})

	first := e.request(t, inst, t0, t0.Add(4*h))
	e.waitFinished(t, 10*time.Second)
	r := e.result(t, first)
	if r.status != store.AnalysisSuccess || r.info != "" || r.version != "test-version" || r.attempts != 1 || r.outcome == nil {
		t.Fatalf("result %+v", r)
	}
	for _, class := range []string{"IDA1", "IDA2", "IDA3", "IDA4"} {
		if got := kpiValue(t, r.outcome, "co2 duration."+class+".absolute"); got != 1 {
			t.Errorf("%s: %v h, want 1", class, got)
		}
	}
	if got := kpiValue(t, r.outcome, "co2.mean"); got != 1050 { // (500+900+1300+1500)/4
		t.Errorf("mean %v, want 1050", got)
	}
	// The summary KPI is the share of IDA 1; the period before holds only
	// its last half hour, at 500 ppm: all IDA 1.
	s := r.outcome.Summary
	if s.Identifier != "co2 duration.IDA1.relative" || s.Current == nil || *s.Current != 25 || s.Previous == nil || *s.Previous != 100 {
		t.Fatalf("summary %+v", s)
	}

	// The next period's previous value is the stored result's.
	if _, err := e.db.Exec(context.Background(), `UPDATE analysis_results
		SET outcome = '{"kpis": [{"identifier": "co2 duration.IDA1.relative", "value": 42}]}' WHERE id = $1::uuid`, first); err != nil {
		t.Fatal(err)
	}
	second := e.request(t, inst, t0.Add(4*h), t0.Add(8*h))
	e.waitFinished(t, 10*time.Second)
	r = e.result(t, second)
	if r.status != store.AnalysisSuccess || kpiValue(t, r.outcome, "co2 duration.IDA4.absolute") != 4 ||
		*r.outcome.Summary.Current != 0 || r.outcome.Summary.Previous == nil || *r.outcome.Summary.Previous != 42 {
		t.Fatalf("second result %+v, summary %+v", r, r.outcome.Summary)
	}

	// A period without data succeeds and says so.
	empty := e.request(t, inst, t0.Add(-100*h), t0.Add(-90*h))
	e.waitFinished(t, 10*time.Second)
	if r := e.result(t, empty); r.status != store.AnalysisSuccess || r.info != noDataInfo || !r.outcome.NoData || r.outcome.SignalColor != "yellow" {
		t.Fatalf("run without data: %+v", r)
	}
	if got := testutil.ToFloat64(p.metrics.runs.WithLabelValues(store.AnalysisSuccess)); got != 3 {
		t.Fatalf("bdp_analysis_runs_total{status=Success} %v", got)
	}
	if n, err := testutil.GatherAndCount(reg, "bdp_analysis_run_duration_seconds", "bdp_analysis_queue_wait_seconds"); err != nil || n != 2 {
		t.Fatalf("histograms in the registry: %d, %v", n, err)
	}
}

// What a run cannot compute fails it, with a reason that says why.
func TestAnalysisRunFailures(t *testing.T) {
	badAttribute := testFunction{run: func(analytics.Input) (analytics.Outcome, error) {
		return analytics.Outcome{}, fmt.Errorf("attribute schedule: %w", analytics.ErrBadAttribute)
	}}
	e := newEnv(t)
	fns := map[int64]Function{}
	cases := []struct {
		name     string
		release  string   // a function of the release, or
		fn       Function // the test's; neither: not in this release
		wantInfo string
	}{
		{"required pin unmapped", "thermal_comfort_analysis", nil,
			analytics.ErrMissingPin.Error() + ": pin operative_temperature (operative_temperature) of room, or pin temperature (air_temperature)"},
		{"bad attribute", "", badAttribute, "attribute schedule: " + analytics.ErrBadAttribute.Error()},
		{"function gone", "", nil, "analysis function %d no longer exists in this release"},
	}
	ids := make([]string, len(cases))
	for i, c := range cases {
		var fn int64
		if c.release != "" {
			fn = e.catalogFunction(t, c.release)
		} else {
			fn = e.function(t, c.name)
		}
		if c.fn != nil {
			fns[fn] = c.fn
		}
		cases[i].wantInfo = strings.Replace(c.wantInfo, "%d", fmt.Sprint(fn), 1)
		ids[i] = e.request(t, e.instance(t, fn, false, t0), t0, t0.Add(time.Hour))
	}
	e.startPool(t, Config{Functions: e.lookup(fns), Workers: 1})
	e.waitFinished(t, 10*time.Second)
	for i, c := range cases {
		if r := e.result(t, ids[i]); r.status != store.AnalysisFailed || r.info != c.wantInfo || r.outcome != nil {
			t.Errorf("%s: %+v, want Failed with %q", c.name, r, c.wantInfo)
		}
	}
}

// A panic fails its run, the supervisor restarts the worker, and the next
// run on it works; bdp goes on.
func TestAnalysisPanicRestartsWorker(t *testing.T) {
	e := newEnv(t)
	boom, air := e.function(t, "boom"), e.function(t, "air")
	exploding := testFunction{run: func(analytics.Input) (analytics.Outcome, error) { panic("kernel exploded") }}
	e.write(t, store.Point{Time: t0, Value: 700})
	badInst, goodInst := e.instance(t, boom, false, t0), e.instance(t, air, false, t0)
	bad := e.request(t, badInst, t0, t0.Add(time.Hour))
	good := e.request(t, goodInst, t0, t0.Add(time.Hour))
	p := e.startPool(t, Config{Functions: e.lookup(map[int64]Function{boom: exploding, air: airQuality}), Workers: 1})
	e.waitFinished(t, 10*time.Second)
	if r := e.result(t, bad); r.status != store.AnalysisFailed || r.info != "the analysis failed with an internal error: kernel exploded" {
		t.Fatalf("panicked run: %+v", r)
	}
	if r := e.result(t, good); r.status != store.AnalysisSuccess || *r.outcome.Summary.Current != 700 {
		t.Fatalf("run after the panic: %+v", r)
	}
	if got := testutil.ToFloat64(p.metrics.restarts); got != 1 {
		t.Fatalf("%v restarts, want 1", got)
	}
	// And again, on the restarted worker.
	bad, good = e.request(t, badInst, t0, t0.Add(time.Hour)), e.request(t, goodInst, t0, t0.Add(time.Hour))
	e.waitFinished(t, 10*time.Second)
	if e.result(t, bad).status != store.AnalysisFailed || e.result(t, good).status != store.AnalysisSuccess {
		t.Fatalf("second round: %+v, %+v", e.result(t, bad), e.result(t, good))
	}
	if got := testutil.ToFloat64(p.metrics.restarts); got != 2 {
		t.Fatalf("%v restarts, want 2", got)
	}
}

// A thousand queued runs all finish, with never more in flight than the
// pool has workers: neither computing nor claimed from the queue.
func TestAnalysisThousandRunsAreBounded(t *testing.T) {
	e := newEnv(t)
	fn := e.function(t, "counted")
	inst := e.instance(t, fn, false, t0)
	e.write(t, store.Point{Time: t0, Value: 600})
	const workers, runs = 3, 1000
	var inFlight, most atomic.Int64
	counted := testFunction{reads: []string{"co2"}, run: func(in analytics.Input) (analytics.Outcome, error) {
		n := inFlight.Add(1)
		defer inFlight.Add(-1)
		for {
			m := most.Load()
			if n <= m || most.CompareAndSwap(m, n) {
				break
			}
		}
		time.Sleep(time.Millisecond)
		return airQuality.Run(in)
	}}
	if _, err := e.db.Exec(context.Background(), `INSERT INTO analysis_results (id, instance_id, project_id, period_start, period_end)
		SELECT gen_random_uuid(), $1, $2, $3, $4 FROM generate_series(1, $5)`, inst, e.projectID, t0, t0.Add(time.Hour), runs); err != nil {
		t.Fatal(err)
	}
	// Sample how many runs are claimed in the queue while they run.
	ctx, stopSampling := context.WithCancel(context.Background())
	claimedMost := make(chan int)
	go func() {
		top := 0
		for ctx.Err() == nil {
			var n int
			if err := e.db.QueryRow(ctx, `SELECT count(*) FROM analysis_results WHERE status = 'running' AND claimed_at IS NOT NULL`).Scan(&n); err == nil {
				top = max(top, n)
			}
			time.Sleep(2 * time.Millisecond)
		}
		claimedMost <- top
	}()
	started := time.Now()
	e.startPool(t, Config{Functions: e.lookup(map[int64]Function{fn: counted}), Workers: workers})
	e.waitFinished(t, 2*time.Minute)
	took := time.Since(started)
	stopSampling()
	claimed := <-claimedMost
	var success int
	if err := e.db.QueryRow(context.Background(), `SELECT count(*) FROM analysis_results WHERE status = 'Success'`).Scan(&success); err != nil {
		t.Fatal(err)
	}
	if success != runs {
		t.Fatalf("%d of %d runs succeeded", success, runs)
	}
	if m := most.Load(); m > workers || m < 2 {
		t.Fatalf("at most %d runs computed at once, want 2 to %d", m, workers)
	}
	if claimed > workers {
		t.Fatalf("%d runs claimed at once, want at most %d", claimed, workers)
	}
	t.Logf("%d runs on %d workers in %s; at most %d computed and %d claimed at once", runs, workers, took, most.Load(), claimed)
}

// A run claimed by a node that crashed is taken again once the claim is
// stale; a live claim of another node is left alone; a run whose every
// worker vanished fails instead of being tried forever.
func TestAnalysisStaleClaimsAreTakenAtStart(t *testing.T) {
	e := newEnv(t)
	fn := e.function(t, "air")
	inst := e.instance(t, fn, false, t0)
	e.write(t, store.Point{Time: t0, Value: 800})
	stale := e.request(t, inst, t0, t0.Add(time.Hour))
	live := e.request(t, inst, t0, t0.Add(2*time.Hour))
	doomed := e.request(t, inst, t0, t0.Add(3*time.Hour))
	for id, claim := range map[string]string{
		stale:  `claimed_at = now() - interval '1 hour', attempts = 1`,
		live:   `claimed_at = now(), attempts = 1`,
		doomed: fmt.Sprintf(`claimed_at = now() - interval '1 hour', attempts = %d`, MaxAttempts),
	} {
		if _, err := e.db.Exec(context.Background(), `UPDATE analysis_results SET `+claim+` WHERE id = $1::uuid`, id); err != nil {
			t.Fatal(err)
		}
	}
	e.startPool(t, Config{Functions: e.lookup(map[int64]Function{fn: airQuality}), Workers: 2, TimeLimit: 10 * time.Minute})
	deadline := time.Now().Add(10 * time.Second)
	for e.result(t, stale).status == store.AnalysisRunning || e.result(t, doomed).status == store.AnalysisRunning {
		if time.Now().After(deadline) {
			t.Fatal("stale claims not taken again")
		}
		time.Sleep(10 * time.Millisecond)
	}
	if r := e.result(t, stale); r.status != store.AnalysisSuccess || r.attempts != 2 {
		t.Fatalf("stale claim: %+v", r)
	}
	want := fmt.Sprintf("not run again: %d workers took it and none finished it", MaxAttempts)
	if r := e.result(t, doomed); r.status != store.AnalysisFailed || r.info != want {
		t.Fatalf("run of too many attempts: %+v", r)
	}
	if r := e.result(t, live); r.status != store.AnalysisRunning || r.attempts != 1 {
		t.Fatalf("another node's live claim: %+v", r)
	}
}

// A run over the time limit fails with that reason; the pool goes on.
func TestAnalysisTimeLimit(t *testing.T) {
	e := newEnv(t)
	slow, air := e.function(t, "slow"), e.function(t, "air")
	sleeping := testFunction{run: func(analytics.Input) (analytics.Outcome, error) {
		time.Sleep(time.Second)
		return analytics.Outcome{}, errors.New("should not be written")
	}}
	late := e.request(t, e.instance(t, slow, false, t0), t0, t0.Add(time.Hour))
	next := e.request(t, e.instance(t, air, false, t0), t0, t0.Add(time.Hour))
	e.startPool(t, Config{Functions: e.lookup(map[int64]Function{slow: sleeping, air: airQuality}), Workers: 1, TimeLimit: 200 * time.Millisecond})
	e.waitFinished(t, 10*time.Second)
	if r := e.result(t, late); r.status != store.AnalysisFailed || r.info != "the run took longer than the time limit of 200ms" {
		t.Fatalf("slow run: %+v", r)
	}
	if r := e.result(t, next); r.status != store.AnalysisSuccess {
		t.Fatalf("run after the slow one: %+v", r)
	}
}

// Stopping the pool waits for the run in progress, whose result is
// written before Run returns, also when it panics.
func TestAnalysisShutdownJoinsRunsInProgress(t *testing.T) {
	for _, c := range []struct {
		name       string
		panics     bool
		wantStatus string
	}{
		{"finishes", false, store.AnalysisSuccess},
		{"panics", true, store.AnalysisFailed},
	} {
		t.Run(c.name, func(t *testing.T) {
			e := newEnv(t)
			fn := e.function(t, "slow")
			began := make(chan struct{})
			var once sync.Once
			slow := testFunction{run: func(analytics.Input) (analytics.Outcome, error) {
				once.Do(func() { close(began) }) // it runs twice: this period and the one before
				time.Sleep(300 * time.Millisecond)
				if c.panics {
					panic("late")
				}
				return analytics.Outcome{SignalColor: "green"}, nil
			}}
			id := e.request(t, e.instance(t, fn, false, t0), t0, t0.Add(time.Hour))
			p, err := New(Config{Store: e.st, Functions: e.lookup(map[int64]Function{fn: slow}), Log: e.log, Version: "v"})
			if err != nil {
				t.Fatal(err)
			}
			ctx, cancel := context.WithCancel(context.Background())
			done := make(chan struct{})
			go func() { defer close(done); p.Run(ctx) }()
			<-began
			cancel()
			<-done
			if r := e.result(t, id); r.status != c.wantStatus {
				t.Fatalf("run in progress at shutdown: %+v, want %s", r, c.wantStatus)
			}
		})
	}
}

// A meter's consumption runs up to its reading at the period's end, which
// also closes the period before: read hourly at 1 kWh an hour, each week
// consumed 168 kWh (not 167: the last hour ends at the last reading).
func TestAnalysisRunCountsTheMeterReadingAtThePeriodsEnd(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	var meter store.CatalogComponent
	for _, c := range e.cat.Components() {
		if c.AlphanumericID == "electricity_meter" {
			meter, _ = e.cat.Component(c.ID)
		}
	}
	cip, err := e.st.CreateComponentInProject(ctx, e.projectID, meter.ID, store.ComponentInProjectNames{})
	if err != nil {
		t.Fatal(err)
	}
	dps, err := e.st.EnsureDatapoints(ctx, e.projectID, []string{"meter.energy"})
	if err != nil {
		t.Fatal(err)
	}
	for _, pin := range meter.Pins {
		if pin.AlphanumericID == "energy_meter" {
			if err := e.st.MapPin(ctx, e.projectID, cip.ID, pin.ID, "meter.energy", store.MapCreate); err != nil {
				t.Fatal(err)
			}
		}
	}
	const week = 7 * 24 * time.Hour
	var rows []store.Row
	for h := -168; h <= 168; h++ {
		rows = append(rows, store.Row{Datapoint: dps["meter.energy"], Time: t0.Add(time.Duration(h) * time.Hour), Value: 1000 + float64(h)})
	}
	if err := e.st.WriteObservations(ctx, rows); err != nil {
		t.Fatal(err)
	}
	var inst int64
	if err := e.db.QueryRow(ctx, `INSERT INTO analysis_instances (project_id, function_id, componentinproject_id, enabled, created_at)
		VALUES ($1, $2, $3, false, $4) RETURNING id`, e.projectID, e.catalogFunction(t, "energy_consumption_analysis"), cip.ID, t0).Scan(&inst); err != nil {
		t.Fatal(err)
	}
	e.startPool(t, Config{Functions: FromCatalog(e.cat), Workers: 1})
	id := e.request(t, inst, t0, t0.Add(week))
	e.waitFinished(t, 10*time.Second)
	r := e.result(t, id)
	if r.status != store.AnalysisSuccess {
		t.Fatalf("result %+v", r)
	}
	if got := kpiValue(t, r.outcome, "energy consumption"); got != 168 {
		t.Errorf("energy consumption %v kWh, want 168", got)
	}
	if s := r.outcome.Summary; s.Previous == nil || *s.Previous != 168 {
		t.Errorf("the week before: summary %+v, want previous 168", s)
	}
}
