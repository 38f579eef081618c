package store

import (
	"context"
	"encoding/json"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/openbdp/bdp/fault"
)

// instanceFixture is two projects of one company, a mapped component in
// each and two analysis functions.
type instanceFixture struct {
	s             *Store
	pid, otherPid int64
	cip, otherCIP int64
	fnA, fnB      int64
}

func newInstanceFixture(t *testing.T) instanceFixture {
	t.Helper()
	ctx := context.Background()
	s := newTestStore(t)
	co, u, _, err := s.CreateCompany(ctx, Company{Name: "acme"},
		NewUser{FirstName: "A", LastName: "B", Email: "a@acme.test", PasswordHash: "h"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	f := instanceFixture{s: s}
	for _, pid := range []*int64{&f.pid, &f.otherPid} {
		p, _, err := s.CreateProject(ctx, u.ID, Project{CompanyID: co.ID, Name: "p"}, nil)
		if err != nil {
			t.Fatal(err)
		}
		*pid = p.ID
	}
	comps, err := s.SyncComponents(ctx, []CatalogComponent{{AlphanumericID: "room", NameDE: "Raum", NameEN: "Room"}})
	if err != nil {
		t.Fatal(err)
	}
	for _, x := range []struct {
		pid int64
		cip *int64
	}{{f.pid, &f.cip}, {f.otherPid, &f.otherCIP}} {
		c, err := s.CreateComponentInProject(ctx, x.pid, comps[0].ID, ComponentInProjectNames{})
		if err != nil {
			t.Fatal(err)
		}
		*x.cip = c.ID
	}
	for _, fn := range []struct {
		id   *int64
		name string
	}{{&f.fnA, "room_air_quality"}, {&f.fnB, "thermal_comfort"}} {
		if err := s.pool.QueryRow(ctx, `INSERT INTO analysis_functions (alphanumeric_id, name_de, name_en) VALUES ($1, $1, $1) RETURNING id`,
			fn.name).Scan(fn.id); err != nil {
			t.Fatal(err)
		}
	}
	return f
}

func TestAnalysisInstanceLifecycle(t *testing.T) {
	ctx := context.Background()
	f := newInstanceFixture(t)
	s := f.s
	a, err := s.CreateAnalysisInstance(ctx, f.pid, NewAnalysisInstance{FunctionID: f.fnA, ComponentInProjectID: f.cip, Name: "air", Enabled: true})
	if err != nil {
		t.Fatal(err)
	}
	if a.ProjectID != f.pid || a.FunctionID != f.fnA || a.ComponentInProjectID != f.cip || a.Name != "air" || !a.Enabled {
		t.Fatalf("created %+v", a)
	}
	_, err = s.CreateAnalysisInstance(ctx, f.pid, NewAnalysisInstance{FunctionID: f.fnA, ComponentInProjectID: f.cip})
	if !fault.Is(err, fault.Conflict) || !strings.Contains(err.Error(), "already exists") ||
		!strings.Contains(err.Error(), itoa(f.cip)) || !strings.Contains(err.Error(), itoa(f.fnA)) {
		t.Fatalf("second instance of the pair: %v", err)
	}
	// A component of another project is not found from this one.
	if _, err := s.CreateAnalysisInstance(ctx, f.pid, NewAnalysisInstance{FunctionID: f.fnB, ComponentInProjectID: f.otherCIP}); !fault.Is(err, fault.NotFound) {
		t.Fatalf("component of another project: %v", err)
	}
	if _, err := s.AnalysisInstance(ctx, f.otherPid, a.ID); !fault.Is(err, fault.NotFound) {
		t.Fatalf("instance read through another project: %v", err)
	}
	b, err := s.CreateAnalysisInstance(ctx, f.pid, NewAnalysisInstance{FunctionID: f.fnB, ComponentInProjectID: f.cip})
	if err != nil {
		t.Fatal(err)
	}
	list, err := s.AnalysisInstances(ctx, f.pid)
	if err != nil || len(list) != 2 || list[0].ID != a.ID || list[1].ID != b.ID {
		t.Fatalf("list %+v, %v", list, err)
	}
	desc, off := "weekly", false
	u, err := s.UpdateAnalysisInstance(ctx, f.pid, a.ID, AnalysisInstancePatch{Description: &desc, Enabled: &off})
	if err != nil || u.Name != "air" || u.Description != "weekly" || u.Enabled {
		t.Fatalf("update: %+v, %v", u, err)
	}
	if _, err := s.UpdateAnalysisInstance(ctx, f.otherPid, a.ID, AnalysisInstancePatch{Enabled: &off}); !fault.Is(err, fault.NotFound) {
		t.Fatalf("update through another project: %v", err)
	}
	if _, err := s.CreateManualRun(ctx, f.pid, a.ID, t0, t0.Add(time.Hour)); err != nil {
		t.Fatal(err)
	}
	if _, err := s.DeleteAnalysisInstance(ctx, f.pid, a.ID); err != nil {
		t.Fatal(err)
	}
	if _, err := s.DeleteAnalysisInstance(ctx, f.pid, a.ID); !fault.Is(err, fault.NotFound) {
		t.Fatalf("second delete: %v", err)
	}
	var results int
	if err := s.pool.QueryRow(ctx, `SELECT count(*) FROM analysis_results WHERE instance_id = $1`, a.ID).Scan(&results); err != nil || results != 0 {
		t.Fatalf("results of a deleted instance: %d, %v", results, err)
	}
}

func TestAnalysisManualRunsAndResults(t *testing.T) {
	ctx := context.Background()
	f := newInstanceFixture(t)
	s := f.s
	a, err := s.CreateAnalysisInstance(ctx, f.pid, NewAnalysisInstance{FunctionID: f.fnA, ComponentInProjectID: f.cip})
	if err != nil {
		t.Fatal(err)
	}
	b, err := s.CreateAnalysisInstance(ctx, f.pid, NewAnalysisInstance{FunctionID: f.fnB, ComponentInProjectID: f.cip})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.CreateManualRun(ctx, f.otherPid, a.ID, t0, t0.Add(time.Hour)); !fault.Is(err, fault.NotFound) {
		t.Fatalf("run through another project: %v", err)
	}
	week := 7 * 24 * time.Hour
	older, err := s.CreateManualRun(ctx, f.pid, a.ID, t0.Add(-week), t0)
	if err != nil {
		t.Fatal(err)
	}
	newer, err := s.CreateManualRun(ctx, f.pid, a.ID, t0, t0.Add(week))
	if err != nil {
		t.Fatal(err)
	}
	if newer.Status != "running" || newer.Weekly || !newer.Start.Equal(t0) || !newer.End.Equal(t0.Add(week)) || newer.Outcome != nil ||
		newer.FunctionAlphanumericID != "room_air_quality" || newer.ComponentInProjectID != f.cip || len(newer.ID) != 36 || newer.ID == older.ID {
		t.Fatalf("queued run %+v", newer)
	}
	outcome := `{"no_data": false, "signal_color": "green", "kpis": [{"identifier": "co2.mean", "value": 600}],
		"interpretation": {"en": "good", "de": "gut"}, "summary": {"identifier": "co2.mean", "current": 600, "previous": 700}}`
	if _, err := s.pool.Exec(ctx, `UPDATE analysis_results SET status = 'Success', outcome = $2, finished_at = now(), analytics_version = 'v1'
		WHERE id = $1::uuid`, newer.ID, outcome); err != nil {
		t.Fatal(err)
	}
	if _, err := s.pool.Exec(ctx, `UPDATE analysis_results SET status = 'Failed', info = 'pin co2 is not mapped' WHERE id = $1::uuid`, older.ID); err != nil {
		t.Fatal(err)
	}

	full, err := s.AnalysisResult(ctx, f.pid, a.ID, newer.ID)
	if err != nil {
		t.Fatal(err)
	}
	var whole map[string]any
	if err := json.Unmarshal(full.Outcome, &whole); err != nil || whole["kpis"] == nil || full.AnalyticsVersion != "v1" || full.FinishedAt == nil {
		t.Fatalf("detail %+v: %v", full, err)
	}
	for _, x := range []struct {
		pid, instance int64
	}{{f.otherPid, a.ID}, {f.pid, b.ID}} {
		if _, err := s.AnalysisResult(ctx, x.pid, x.instance, newer.ID); !fault.Is(err, fault.NotFound) {
			t.Fatalf("result read through project %d, instance %d: %v", x.pid, x.instance, err)
		}
	}

	list, err := s.AnalysisResultsOf(ctx, f.pid, a.ID)
	if err != nil || len(list) != 2 || list[0].ID != newer.ID || list[1].ID != older.ID || list[1].Info != "pin co2 is not mapped" {
		t.Fatalf("results of the instance: %+v, %v", list, err)
	}
	var brief map[string]any
	if err := json.Unmarshal(list[0].Outcome, &brief); err != nil || brief["signal_color"] != "green" || brief["kpis"] != nil || brief["summary"] == nil {
		t.Fatalf("a list carries the outcome's brief only: %s, %v", list[0].Outcome, err)
	}
	if _, err := s.AnalysisResultsOf(ctx, f.otherPid, a.ID); !fault.Is(err, fault.NotFound) {
		t.Fatalf("results through another project: %v", err)
	}

	// b has a run over an old period created after a's: the latest of
	// each instance is by period, not by creation.
	bOld, err := s.CreateManualRun(ctx, f.pid, b.ID, t0.Add(-2*week), t0.Add(-week))
	if err != nil {
		t.Fatal(err)
	}
	latest, err := s.LatestAnalysisResults(ctx, f.pid, 0)
	if err != nil || len(latest) != 2 || latest[0].ID != newer.ID || latest[1].ID != bOld.ID {
		t.Fatalf("latest per instance: %+v, %v", latest, err)
	}
	if only, err := s.LatestAnalysisResults(ctx, f.pid, f.otherCIP); err != nil || len(only) != 0 {
		t.Fatalf("latest of a component of another project: %+v, %v", only, err)
	}
	ids, err := s.AnalysisResultIDs(ctx, f.pid, f.cip)
	if err != nil || !slices.Equal(ids[a.ID], []string{newer.ID, older.ID}) || !slices.Equal(ids[b.ID], []string{bOld.ID}) {
		t.Fatalf("result ids: %v, %v", ids, err)
	}
}

func itoa(n int64) string { return strconv.FormatInt(n, 10) }
