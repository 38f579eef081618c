package main

import (
	"context"
	"fmt"
	"regexp"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/openbdp/bdp/analytics/runner"
	"github.com/openbdp/bdp/store"
)

// The real binary runs analyses: at start it makes up the weekly runs of
// the weeks it missed, a run requested while it serves is computed at
// once, /metrics counts them, and SIGTERM joins the pool cleanly.
func TestServeRunsAnalyses(t *testing.T) {
	dir := newDataDir(t)
	s := startServe(t, dir, "BDP_ANALYSIS_WORKERS=1")
	ctx := context.Background()
	st, err := store.Open(ctx, managedURL(t, dir))
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	co, u, _, err := st.CreateCompany(ctx, store.Company{Name: "acme"},
		store.NewUser{FirstName: "A", LastName: "B", Email: "a@acme.test", PasswordHash: "h"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	p, _, err := st.CreateProject(ctx, u.ID, store.Project{CompanyID: co.ID, Name: "p"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	dps, err := st.EnsureDatapoints(ctx, p.ID, []string{"room.co2"})
	if err != nil {
		t.Fatal(err)
	}
	// Hourly CO2 over the last five weeks: 600 ppm, 1500 ppm every sixth
	// hour.
	now := time.Now().UTC().Truncate(time.Hour)
	var rows []store.Row
	for h := 5 * 7 * 24; h > 0; h-- {
		v := 600.0
		if h%6 == 0 {
			v = 1500
		}
		rows = append(rows, store.Row{Datapoint: dps["room.co2"], Time: now.Add(-time.Duration(h) * time.Hour), Value: v})
	}
	if err := st.WriteObservations(ctx, rows); err != nil {
		t.Fatal(err)
	}
	conn, err := pgx.Connect(ctx, managedURL(t, dir))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	var room, co2Pin, fn int64
	if err := conn.QueryRow(ctx, `SELECT c.id, p.id FROM components c JOIN component_pins p ON p.component_id = c.id
		WHERE c.alphanumeric_id = 'room' AND p.alphanumeric_id = 'co2'`).Scan(&room, &co2Pin); err != nil {
		t.Fatal(err)
	}
	if err := conn.QueryRow(ctx, `SELECT id FROM analysis_functions WHERE alphanumeric_id = 'room_air_quality_analysis'`).Scan(&fn); err != nil {
		t.Fatal(err)
	}
	cip, err := st.CreateComponentInProject(ctx, p.ID, room, store.ComponentInProjectNames{})
	if err != nil {
		t.Fatal(err)
	}
	if err := st.MapPin(ctx, p.ID, cip.ID, co2Pin, "room.co2", store.MapCreate); err != nil {
		t.Fatal(err)
	}
	// Made three weeks ago, while no node ran the schedule: its weeks are
	// made up at the next start.
	var inst int64
	if err := conn.QueryRow(ctx, `INSERT INTO analysis_instances (project_id, function_id, componentinproject_id, enabled, created_at)
		VALUES ($1, $2, $3, true, now() - interval '21 days') RETURNING id`, p.ID, fn, cip.ID).Scan(&inst); err != nil {
		t.Fatal(err)
	}
	if err := s.stop(syscall.SIGTERM); err != nil {
		t.Fatalf("exit after SIGTERM: %v\n%s", err, s.log)
	}
	conn.Close(ctx)
	st.Close()

	s = startServe(t, dir, "BDP_ANALYSIS_WORKERS=1")
	if conn, err = pgx.Connect(ctx, managedURL(t, dir)); err != nil {
		t.Fatal(err)
	}
	var manual string
	if err := conn.QueryRow(ctx, `INSERT INTO analysis_results (id, instance_id, project_id, period_start, period_end)
		VALUES (gen_random_uuid(), $1, $2, $3, $4) RETURNING id::text`, inst, p.ID, now.Add(-48*time.Hour), now).Scan(&manual); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(30 * time.Second)
	for {
		var waiting int
		if err := conn.QueryRow(ctx, `SELECT count(*) FROM analysis_results WHERE status = 'running'`).Scan(&waiting); err != nil {
			t.Fatal(err)
		}
		if waiting == 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d runs still running after 30 s:\n%s", waiting, s.log)
		}
		time.Sleep(50 * time.Millisecond)
	}
	rs, err := conn.Query(ctx, `SELECT period_start, weekly, status, info, analytics_version,
		(SELECT k->>'value' FROM jsonb_array_elements(outcome->'kpis') k WHERE k->>'identifier' = 'co2 duration.IDA4.relative')
		FROM analysis_results ORDER BY weekly DESC, period_start`)
	if err != nil {
		t.Fatal(err)
	}
	type row struct {
		start                 time.Time
		weekly                bool
		status, info, version string
		ida4                  *string
	}
	got, err := pgx.CollectRows(rs, func(r pgx.CollectableRow) (row, error) {
		var x row
		return x, r.Scan(&x.start, &x.weekly, &x.status, &x.info, &x.version, &x.ida4)
	})
	if err != nil {
		t.Fatal(err)
	}
	week := runner.WeekStart(time.Now())
	want := []time.Time{week.Add(-3 * runner.Week), week.Add(-2 * runner.Week), week.Add(-runner.Week), now.Add(-48 * time.Hour)}
	if len(got) != len(want) {
		t.Fatalf("results %+v, want weekly runs of the three weeks since the instance was made and the manual run", got)
	}
	for i, r := range got {
		// One hour in six above 1400 ppm: IDA 4 (outdoor air 400 ppm).
		if !r.start.Equal(want[i]) || r.weekly != (i < 3) || r.status != store.AnalysisSuccess || r.version != version ||
			r.ida4 == nil || !regexp.MustCompile(`^16\.6`).MatchString(*r.ida4) {
			t.Errorf("result %d: %+v (IDA 4 share %v), want a Success from %s", i, r, deref(r.ida4), want[i])
		}
	}
	_, body := s.request("GET", "/metrics", nil, "")
	if m := regexp.MustCompile(`(?m)^bdp_analysis_runs_total\{status="Success"\} (\S+)$`).FindSubmatch(body); m == nil || string(m[1]) != "4" {
		t.Fatalf("bdp_analysis_runs_total{status=\"Success\"}: %q", m)
	}
	conn.Close(ctx)
	if err := s.stop(syscall.SIGTERM); err != nil {
		t.Fatalf("exit after SIGTERM: %v\n%s", err, s.log)
	}
}

func deref(s *string) string {
	if s == nil {
		return "<none>"
	}
	return fmt.Sprint(*s)
}
