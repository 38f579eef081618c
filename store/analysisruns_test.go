package store

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
)

// analysisFixture is a project with a mapped component (pins "co2" and
// "temp", attribute "outdoor_co2"), one analysis function and one
// instance of it.
type analysisFixture struct {
	projectID, instanceID, functionID int64
	datapoints                        map[string]int64 // dataPointID -> row id
}

func newAnalysisFixture(t *testing.T, s *Store) analysisFixture {
	t.Helper()
	ctx := context.Background()
	projectID, dps := newTimeseriesProject(t, s, "room.co2", "room.temp")
	comps, err := s.SyncComponents(ctx, []CatalogComponent{{AlphanumericID: "room", NameDE: "Raum", NameEN: "Room",
		Pins: []CatalogPin{
			{AlphanumericID: "co2", NameDE: "CO2", NameEN: "CO2", Location: "left", Unit: "ppm"},
			{AlphanumericID: "temp", NameDE: "Temperatur", NameEN: "Temperature", Location: "left", Unit: "°C"},
		},
		Attributes: []AttributeDefinition{{AlphanumericID: "outdoor_co2", Key: "outdoor_co2", NameDE: "Außen-CO2", NameEN: "Outdoor CO2", ValueType: "float"}},
	}})
	if err != nil {
		t.Fatal(err)
	}
	cip, err := s.CreateComponentInProject(ctx, projectID, comps[0].ID, ComponentInProjectNames{})
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range comps[0].Pins {
		if err := s.MapPin(ctx, projectID, cip.ID, p.ID, "room."+p.AlphanumericID, MapCreate); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.SetAttribute(ctx, projectID, cip.ID, comps[0].Attributes[0].ID, "420", MapCreate); err != nil {
		t.Fatal(err)
	}
	f := analysisFixture{projectID: projectID, datapoints: dps}
	if err := s.pool.QueryRow(ctx, `INSERT INTO analysis_functions (alphanumeric_id, name_de, name_en)
		VALUES ('room_air_quality', 'Raumluft', 'Room air') RETURNING id`).Scan(&f.functionID); err != nil {
		t.Fatal(err)
	}
	if err := s.pool.QueryRow(ctx, `INSERT INTO analysis_instances (project_id, function_id, componentinproject_id, enabled)
		VALUES ($1, $2, $3, true) RETURNING id`, projectID, f.functionID, cip.ID).Scan(&f.instanceID); err != nil {
		t.Fatal(err)
	}
	return f
}

// queueRun inserts a waiting run as a manual run request does.
func queueRun(t *testing.T, s *Store, f analysisFixture, start, end time.Time) string {
	t.Helper()
	var id string
	if err := s.pool.QueryRow(context.Background(), `INSERT INTO analysis_results (id, instance_id, project_id, period_start, period_end)
		VALUES (gen_random_uuid(), $1, $2, $3, $4) RETURNING id::text`, f.instanceID, f.projectID, start, end).Scan(&id); err != nil {
		t.Fatal(err)
	}
	return id
}

func TestAnalysisClaimAndFinish(t *testing.T) {
	ctx := context.Background()
	s := newTestStore(t)
	f := newAnalysisFixture(t, s)
	ids := []string{queueRun(t, s, f, t0, t0.Add(time.Hour)), queueRun(t, s, f, t0, t0.Add(2*time.Hour)), queueRun(t, s, f, t0, t0.Add(3*time.Hour))}

	first, err := s.ClaimAnalysisRuns(ctx, 2, time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	if len(first) != 2 || first[0].ResultID != ids[0] || first[1].ResultID != ids[1] {
		t.Fatalf("first claim %+v, want the two oldest %v", first, ids[:2])
	}
	if r := first[1]; r.InstanceID != f.instanceID || r.ProjectID != f.projectID || !r.Start.Equal(t0) ||
		!r.End.Equal(t0.Add(2*time.Hour)) || r.Attempts != 1 || r.Weekly {
		t.Fatalf("claimed run %+v", r)
	}
	second, err := s.ClaimAnalysisRuns(ctx, 2, time.Hour)
	if err != nil || len(second) != 1 || second[0].ResultID != ids[2] {
		t.Fatalf("second claim %+v, %v: want only the third", second, err)
	}
	if none, err := s.ClaimAnalysisRuns(ctx, 2, time.Hour); err != nil || len(none) != 0 {
		t.Fatalf("claim with every run held: %+v, %v", none, err)
	}

	// A claim older than the stale limit is a crashed worker's: taken again.
	if _, err := s.pool.Exec(ctx, `UPDATE analysis_results SET claimed_at = now() - interval '2 hours' WHERE id = $1::uuid`, ids[0]); err != nil {
		t.Fatal(err)
	}
	again, err := s.ClaimAnalysisRuns(ctx, 5, time.Hour)
	if err != nil || len(again) != 1 || again[0].ResultID != ids[0] || again[0].Attempts != 2 {
		t.Fatalf("claim of a stale run: %+v, %v", again, err)
	}

	ok, err := s.FinishAnalysisRun(ctx, ids[0], AnalysisRunEnd{Status: AnalysisSuccess, Outcome: []byte(`{"no_data":true}`), Version: "v1"})
	if err != nil || !ok {
		t.Fatalf("finish: %v, %v", ok, err)
	}
	// The second finisher of a run changes nothing.
	if ok, err := s.FinishAnalysisRun(ctx, ids[0], AnalysisRunEnd{Status: AnalysisFailed, Info: "late"}); err != nil || ok {
		t.Fatalf("second finish: %v, %v", ok, err)
	}
	var status, info, version string
	var outcome json.RawMessage
	var finished bool
	if err := s.pool.QueryRow(ctx, `SELECT status, info, analytics_version, outcome, finished_at IS NOT NULL FROM analysis_results WHERE id = $1::uuid`, ids[0]).
		Scan(&status, &info, &version, &outcome, &finished); err != nil {
		t.Fatal(err)
	}
	if status != AnalysisSuccess || info != "" || version != "v1" || string(outcome) != `{"no_data": true}` || !finished {
		t.Fatalf("finished row: %s %q %s %s %v", status, info, version, outcome, finished)
	}

	// A released run waits again and its attempt is not counted.
	if err := s.ReleaseAnalysisRun(ctx, ids[1]); err != nil {
		t.Fatal(err)
	}
	if r, err := s.ClaimAnalysisRuns(ctx, 5, time.Hour); err != nil || len(r) != 1 || r[0].ResultID != ids[1] || r[0].Attempts != 1 {
		t.Fatalf("claim after release: %+v, %v", r, err)
	}
}

// A run requested by hand goes before a weekly batch queued earlier, the
// batch's earliest week first, and the claim reads the queue's index, not
// every waiting row.
func TestAnalysisManualRunsFirst(t *testing.T) {
	ctx := context.Background()
	s := newTestStore(t)
	f := newAnalysisFixture(t, s)
	w0 := time.Date(2024, 1, 1, 0, 0, 0, 0, time.UTC)
	if _, err := s.pool.Exec(ctx, `UPDATE analysis_instances SET created_at = $1`, w0); err != nil {
		t.Fatal(err)
	}
	if n, err := s.ScheduleWeeklyAnalysisRuns(ctx, w0, w0.Add(20*7*24*time.Hour)); err != nil || n != 21 {
		t.Fatalf("weekly runs: %d, %v", n, err)
	}
	manual := queueRun(t, s, f, t0, t0.Add(time.Hour))
	runs, err := s.ClaimAnalysisRuns(ctx, 2, time.Hour)
	if err != nil || len(runs) != 2 || runs[0].ResultID != manual || !runs[1].Weekly || !runs[1].Start.Equal(w0) {
		t.Fatalf("claimed %+v, %v: want the manual run, then the oldest weekly one", runs, err)
	}
	// A table this small plans to a scan and a sort whatever its indexes;
	// with those priced out, only an index in the claim's order avoids
	// the sort.
	conn, err := s.pool.Acquire(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Release()
	if _, err := conn.Exec(ctx, `SET enable_seqscan = off; SET enable_bitmapscan = off; SET enable_sort = off`); err != nil {
		t.Fatal(err)
	}
	defer conn.Exec(ctx, `RESET ALL`)
	rows, err := conn.Query(ctx, `EXPLAIN SELECT id FROM analysis_results
		WHERE status = 'running' AND (claimed_at IS NULL OR claimed_at < now() - make_interval(secs => 60))
		ORDER BY weekly, created_at, period_start LIMIT 2 FOR UPDATE SKIP LOCKED`)
	if err != nil {
		t.Fatal(err)
	}
	lines, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		t.Fatal(err)
	}
	if plan := strings.Join(lines, "\n"); !strings.Contains(plan, "analysis_results_waiting") || strings.Contains(plan, "Sort") {
		t.Fatalf("the claim does not read the queue's index: %s", plan)
	}
}

// Two nodes claiming at once never get the same run.
func TestAnalysisClaimsDoNotOverlap(t *testing.T) {
	ctx := context.Background()
	s := newTestStore(t)
	f := newAnalysisFixture(t, s)
	const n = 200
	for i := range n {
		queueRun(t, s, f, t0, t0.Add(time.Duration(i+1)*time.Minute))
	}
	var mu sync.Mutex
	seen := map[string]int{}
	var wg sync.WaitGroup
	for range 4 {
		wg.Go(func() {
			for {
				runs, err := s.ClaimAnalysisRuns(ctx, 7, time.Hour)
				if err != nil {
					t.Error(err)
					return
				}
				if len(runs) == 0 {
					return
				}
				mu.Lock()
				for _, r := range runs {
					seen[r.ResultID]++
				}
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	if len(seen) != n {
		t.Fatalf("%d runs claimed, want %d", len(seen), n)
	}
	for id, c := range seen {
		if c != 1 {
			t.Fatalf("run %s claimed %d times", id, c)
		}
	}
}

func TestAnalysisRunSetup(t *testing.T) {
	ctx := context.Background()
	s := newTestStore(t)
	f := newAnalysisFixture(t, s)
	week := 7 * 24 * time.Hour
	run := AnalysisRun{InstanceID: f.instanceID, Start: t0, End: t0.Add(week)}

	setup, err := s.AnalysisRunSetup(ctx, run)
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]int64{"co2": f.datapoints["room.co2"], "temp": f.datapoints["room.temp"]}
	if setup.FunctionID != f.functionID || setup.Component != "room" || fmt.Sprint(setup.Pins) != fmt.Sprint(want) ||
		fmt.Sprint(setup.Attributes) != "map[outdoor_co2:420]" || setup.Previous != nil {
		t.Fatalf("setup %+v", setup)
	}

	// Only a Success of the period of equal length ending at this start is
	// the previous one.
	for _, p := range []struct {
		start, end time.Time
		status     string
		outcome    string
	}{
		{t0.Add(-week), t0, AnalysisSuccess, `{"summary": {"current": 7}}`},
		{t0.Add(-week), t0, AnalysisFailed, ``},
		{t0.Add(-2 * week), t0, AnalysisSuccess, `{"summary": {"current": 1}}`},
		{t0.Add(-week), t0.Add(-time.Hour), AnalysisSuccess, `{"summary": {"current": 2}}`},
	} {
		id := queueRun(t, s, f, p.start, p.end)
		var outcome []byte
		if p.outcome != "" {
			outcome = []byte(p.outcome)
		}
		if _, err := s.FinishAnalysisRun(ctx, id, AnalysisRunEnd{Status: p.status, Outcome: outcome}); err != nil {
			t.Fatal(err)
		}
	}
	if setup, err = s.AnalysisRunSetup(ctx, run); err != nil || string(setup.Previous) != `{"summary": {"current": 7}}` {
		t.Fatalf("previous %s, %v", setup.Previous, err)
	}

	if _, err := s.AnalysisRunSetup(ctx, AnalysisRun{InstanceID: f.instanceID + 100, Start: t0, End: t0.Add(week)}); err == nil {
		t.Fatal("setup of an unknown instance: no error")
	}
}

func TestAnalysisSeriesRead(t *testing.T) {
	ctx := context.Background()
	s := newTestStore(t)
	f := newAnalysisFixture(t, s)
	writeMinutes(t, s, f.datapoints["room.co2"], 400, 500, 600, 700, 800)
	writeMinutes(t, s, f.datapoints["room.temp"], 20, 21)

	got, err := s.ReadAnalysisSeries(ctx, map[string]int64{"co2": f.datapoints["room.co2"], "temp": f.datapoints["room.temp"]},
		minute(2), minute(4))
	if err != nil {
		t.Fatal(err)
	}
	// The point before the start sets the value at the start; the point
	// at the end closes the period (a meter's last reading).
	wantPoints(t, "co2", got["co2"], 1, 500, 600, 700, 800)
	wantPoints(t, "temp", got["temp"], 1, 21)
	if got, err = s.ReadAnalysisSeries(ctx, map[string]int64{"co2": f.datapoints["room.co2"]}, minute(-10), minute(-5)); err != nil || len(got["co2"]) != 0 {
		t.Fatalf("read before any data: %v, %v", got, err)
	}
}

// 4 weeks of 1-minute data (40,320 points) of one pin, read as a run reads
// it: go test ./store -run '^$' -bench AnalysisSeriesRead -benchtime 20x
func BenchmarkAnalysisSeriesRead(b *testing.B) {
	ctx := context.Background()
	s := newTestStore(b)
	dps, err := s.EnsureDatapoints(ctx, benchProject(b, s), []string{"meter"})
	if err != nil {
		b.Fatal(err)
	}
	const n = 4 * 7 * 24 * 60
	rows := make([]Row, n)
	for i := range rows {
		rows[i] = Row{Datapoint: dps["meter"], Time: t0.Add(time.Duration(i) * time.Minute), Value: float64(i)}
	}
	if err := s.WriteObservations(ctx, rows); err != nil {
		b.Fatal(err)
	}
	if _, err := s.pool.Exec(ctx, `VACUUM ANALYZE observations`); err != nil {
		b.Fatal(err)
	}
	series := map[string]int64{"meter": dps["meter"]}
	b.ResetTimer()
	for b.Loop() {
		got, err := s.ReadAnalysisSeries(ctx, series, t0.Add(time.Minute), t0.Add(n*time.Minute))
		if err != nil || len(got["meter"]) != n {
			b.Fatalf("%d points, %v", len(got["meter"]), err)
		}
	}
}

func benchProject(t testing.TB, s *Store) int64 {
	t.Helper()
	return companyProject(t, s, "acme")
}

// companyProject makes a company of that name with one project.
func companyProject(t testing.TB, s *Store, name string) int64 {
	t.Helper()
	ctx := context.Background()
	co, u, _, err := s.CreateCompany(ctx, Company{Name: name},
		NewUser{FirstName: "A", LastName: "B", Email: "a@" + name + ".test", PasswordHash: "h"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	p, _, err := s.CreateProject(ctx, u.ID, Project{CompanyID: co.ID, Name: "p"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	return p.ID
}

func TestAnalysisWeeklySchedule(t *testing.T) {
	ctx := context.Background()
	s := newTestStore(t)
	f := newAnalysisFixture(t, s)
	week := 7 * 24 * time.Hour
	// The instance was created in the week of w2 (a Wednesday).
	w0 := time.Date(2024, 1, 1, 0, 0, 0, 0, time.UTC)
	w2 := w0.Add(2 * week)
	if _, err := s.pool.Exec(ctx, `UPDATE analysis_instances SET created_at = $2 WHERE id = $1`, f.instanceID, w2.Add(50*time.Hour)); err != nil {
		t.Fatal(err)
	}

	n, err := s.ScheduleWeeklyAnalysisRuns(ctx, w0, w0.Add(4*week))
	if err != nil || n != 3 {
		t.Fatalf("made %d runs, %v; want weeks 2, 3 and 4", n, err)
	}
	if n, err := s.ScheduleWeeklyAnalysisRuns(ctx, w0, w0.Add(5*week)); err != nil || n != 1 {
		t.Fatalf("second schedule made %d runs, %v; want only week 5", n, err)
	}
	rows, err := s.pool.Query(ctx, `SELECT period_start, period_end, weekly, status FROM analysis_results ORDER BY period_start`)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	i := 2
	for rows.Next() {
		var start, end time.Time
		var weekly bool
		var status string
		if err := rows.Scan(&start, &end, &weekly, &status); err != nil {
			t.Fatal(err)
		}
		if !start.Equal(w0.Add(time.Duration(i)*week)) || end.Sub(start) != week || !weekly || status != AnalysisRunning {
			t.Fatalf("run %d: %s to %s weekly %v %s", i, start, end, weekly, status)
		}
		i++
	}
	if i != 6 {
		t.Fatalf("runs of weeks 2 to %d, want to 5", i-1)
	}

	// A disabled instance gets none.
	if _, err := s.pool.Exec(ctx, `UPDATE analysis_instances SET enabled = false`); err != nil {
		t.Fatal(err)
	}
	if n, err := s.ScheduleWeeklyAnalysisRuns(ctx, w0.Add(6*week), w0.Add(6*week)); err != nil || n != 0 {
		t.Fatalf("disabled instance: %d runs, %v", n, err)
	}
}
