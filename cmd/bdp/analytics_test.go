package main

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"net/url"
	"regexp"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/openbdp/bdp/analytics/runner"
	"github.com/openbdp/bdp/store"
)

// The real binary runs analyses: at start it makes up the weekly runs of
// the weeks it missed, a run requested over HTTP is computed at once and
// its result read back, /metrics counts them, and SIGTERM joins the pool.
func TestServeRunsAnalyses(t *testing.T) {
	dir := newDataDir(t)
	s := startServe(t, dir, "BDP_ANALYSIS_WORKERS=1")
	ctx := context.Background()
	pid := companyProject(t, s, "acme", "a@acme.test", "acme-pw-12")
	admin := basicAuth("a@acme.test", "acme-pw-12")

	// The room and its CO2 series are set up in the database directly:
	// hourly over the last five weeks, 600 ppm, 1500 ppm every sixth hour.
	st, err := store.Open(ctx, managedURL(t, dir))
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	dps, err := st.EnsureDatapoints(ctx, pid, []string{"room.co2"})
	if err != nil {
		t.Fatal(err)
	}
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
	cip, err := st.CreateComponentInProject(ctx, pid, room, store.ComponentInProjectNames{})
	if err != nil {
		t.Fatal(err)
	}
	if err := st.MapPin(ctx, pid, cip.ID, co2Pin, "room.co2", store.MapCreate); err != nil {
		t.Fatal(err)
	}
	var inst struct {
		Resource struct{ ID int64 } `json:"resource"`
	}
	status, body := s.request("POST", fmt.Sprintf("/v2/analytics/instance?project_id=%d", pid), admin,
		fmt.Sprintf(`{"analysisfunction_id":%d,"componentinproject_id":%d,"enabled":true}`, fn, cip.ID))
	if status != 200 || json.Unmarshal(body, &inst) != nil || inst.Resource.ID == 0 {
		t.Fatalf("instance: %d %s", status, body)
	}
	// As if made three weeks ago, with no node running since: its weeks
	// are made up at the next start.
	if _, err := conn.Exec(ctx, `UPDATE analysis_instances SET created_at = now() - interval '21 days'`); err != nil {
		t.Fatal(err)
	}
	if err := s.stop(syscall.SIGTERM); err != nil {
		t.Fatalf("exit after SIGTERM: %v\n%s", err, s.log)
	}
	conn.Close(ctx)
	st.Close()

	s = startServe(t, dir, "BDP_ANALYSIS_WORKERS=1")
	instPath := fmt.Sprintf("/v2/analytics/instance/%d", inst.Resource.ID)
	q := url.Values{"project_id": {fmt.Sprint(pid)}, "start": {now.Add(-48 * time.Hour).Format(time.RFC3339)}, "end": {now.Format(time.RFC3339)}}
	var run struct {
		Resource struct {
			ResultID string `json:"result_id"`
			Status   string `json:"status"`
		} `json:"resource"`
	}
	status, body = s.request("POST", instPath+"/run?"+q.Encode(), admin, "")
	if status != 200 || json.Unmarshal(body, &run) != nil || run.Resource.Status != "running" {
		t.Fatalf("run: %d %s", status, body)
	}
	// Every result, the three weekly ones and the manual one, ends as a
	// Success: one hour in six above 1400 ppm is IDA 4 (outdoor air 400 ppm).
	var list []struct {
		ResultID string `json:"result_id"`
		Status   string `json:"status"`
		Weekly   bool   `json:"weekly"`
		Input    struct {
			Start string `json:"start"`
		} `json:"input_parameters"`
	}
	deadline := time.Now().Add(30 * time.Second)
	for done := false; !done; {
		status, body = s.request("GET", fmt.Sprintf("%s/results?project_id=%d", instPath, pid), admin, "")
		if status != 200 || json.Unmarshal(body, &list) != nil {
			t.Fatalf("results: %d %s", status, body)
		}
		done = len(list) == 4
		for _, r := range list {
			done = done && r.Status != "running"
		}
		if !done && time.Now().After(deadline) {
			t.Fatalf("results after 30 s: %s\n%s", body, s.log)
		}
		time.Sleep(50 * time.Millisecond)
	}
	week := runner.WeekStart(time.Now())
	want := map[string]bool{ // start -> weekly
		week.Add(-3 * runner.Week).Format(time.RFC3339): true, week.Add(-2 * runner.Week).Format(time.RFC3339): true,
		week.Add(-runner.Week).Format(time.RFC3339): true, now.Add(-48 * time.Hour).Format(time.RFC3339): false,
	}
	for _, r := range list {
		weekly, ok := want[r.Input.Start]
		if !ok || weekly != r.Weekly || r.Status != store.AnalysisSuccess {
			t.Fatalf("results %+v; want Success of the three weeks since the instance was made and of the manual run", list)
		}
		var detail struct {
			Status  string `json:"status"`
			Version string `json:"analytics_version"`
			KPI     []struct {
				Identifier string  `json:"identifier"`
				Value      float64 `json:"value"`
			} `json:"kpi"`
		}
		status, body = s.request("GET", fmt.Sprintf("%s/result/%s?project_id=%d", instPath, r.ResultID, pid), admin, "")
		if status != 200 || json.Unmarshal(body, &detail) != nil || detail.Version != version {
			t.Fatalf("result %s: %d %s", r.ResultID, status, body)
		}
		ida4 := math.NaN()
		for _, k := range detail.KPI {
			if k.Identifier == "co2 duration.IDA4.relative" {
				ida4 = k.Value
			}
		}
		// 100/6 %, shown rounded as every figure of a result is.
		if ida4 != 16.67 {
			t.Errorf("result from %s: IDA 4 share %v %%, want 16.67", r.Input.Start, ida4)
		}
	}
	_, body = s.request("GET", "/metrics", nil, "")
	if m := regexp.MustCompile(`(?m)^bdp_analysis_runs_total\{status="Success"\} (\S+)$`).FindSubmatch(body); m == nil || string(m[1]) != "4" {
		t.Fatalf("bdp_analysis_runs_total{status=\"Success\"}: %q", m)
	}
	if err := s.stop(syscall.SIGTERM); err != nil {
		t.Fatalf("exit after SIGTERM: %v\n%s", err, s.log)
	}
}
