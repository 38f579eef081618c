package http

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"
)

// recomputeSetup creates a project with a virtual datapoint out = 2 x the
// mean of the last two values of src (not started: a recompute needs no
// actor), and uploads src at 12:00, 12:01, ..., 12:19 with values 0..19.
func recomputeSetup(t *testing.T) (*testEnv, company, int64, time.Time) {
	e := newTestEnv(t)
	c := e.newCompany()
	pid, _ := e.newProject(c.Admin)
	e.do("POST", vdpPath(pid, "", "dataPointID", "out", "type", "formula"), c.Admin, map[string]any{
		"pins":       map[string]any{"P1": map[string]any{"dataPointID": "src", "data_range": map[string]any{"count": 2}, "aggregate": "mean"}},
		"parameters": map[string]any{"formula": "P1 x 2;"}}).want(t, 200)
	at := time.Date(2026, 7, 1, 12, 0, 0, 0, time.UTC)
	var obs []map[string]any
	for i := 0; i < 20; i++ {
		obs = append(obs, map[string]any{"time": at.Add(time.Duration(i) * time.Minute).Format(time.RFC3339), "value": i})
	}
	e.do("POST", fmt.Sprintf("/v2/project/%d/timeseries", pid), c.Admin, map[string]any{"src": obs}).want(t, 200)
	return e, c, pid, at
}

func recomputePath(pid int64, q ...string) string {
	return vdpPath(pid, "/recompute", q...)
}

// recomputeLogs polls the datapoint until a recompute entry contains
// until, and returns the recompute entries.
func (e *testEnv) recomputeLogs(pid int64, as cred, id, until string) []map[string]any {
	e.t.Helper()
	var out []map[string]any
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		r := e.do("GET", vdpPath(pid, "", "dataPointID", id), as, nil).want(e.t, 200)
		out = out[:0]
		done := false
		for _, l := range r.JSON["logs"].([]any) {
			entry := l.(map[string]any)
			if entry["type"] == "recompute" {
				out = append(out, entry)
				done = done || strings.Contains(entry["message"].(string), until)
			}
		}
		if done {
			return out
		}
	}
	e.t.Fatalf("no recompute log entry with %q: %v", until, out)
	return nil
}

func TestRecomputeReplacesThePeriod(t *testing.T) {
	e, c, pid, at := recomputeSetup(t)
	minute := func(i int) string { return at.Add(time.Duration(i) * time.Minute).Format(time.RFC3339) }
	// Wrong outputs: one at a time the recompute calculates, one between
	// (it must go), and two outside the period (they must stay).
	e.do("POST", fmt.Sprintf("/v2/project/%d/timeseries", pid), c.Admin, map[string]any{"out": []map[string]any{
		{"time": minute(7), "value": -1}, {"time": at.Add(7*time.Minute + 30*time.Second).Format(time.RFC3339), "value": -2},
		{"time": minute(4), "value": -3}, {"time": minute(15), "value": -4}}}).want(t, 200)

	r := e.do("POST", recomputePath(pid, "dataPointID", "out", "start", minute(5), "end", minute(15)), c.Admin, nil).want(t, 202)
	res := r.resource(t)
	if r.JSON["operation"] != "create" || res["dataPointID"] != "out" || res["status"] != "accepted" ||
		res["start"] != minute(5) || res["end"] != minute(15) {
		t.Fatalf("202 answer: %s", r.Body)
	}
	logs := e.recomputeLogs(pid, c.Admin, "out", "finished")
	if len(logs) < 3 || !strings.Contains(logs[0]["message"].(string), "started by "+c.Admin.email) {
		t.Fatalf("want a start, progress and an end entry: %v", logs)
	}
	progress := 0
	for _, l := range logs {
		if strings.Contains(l["message"].(string), "% done") {
			progress++
		}
		// Log entries keep the shape of api.md 2.10, with the status the
		// datapoint has (Ready to start: it never ran).
		if l["status_code"] != float64(102) || l["status_text"] != "Ready to start" || len(l["ts"].(string)) < 18 {
			t.Fatalf("log entry: %v", l)
		}
	}
	last := logs[len(logs)-1]["message"].(string)
	if progress == 0 || !strings.Contains(last, "finished: 10 outputs written") {
		t.Fatalf("%d progress entries; end entry %q", progress, last)
	}

	got := e.do("GET", fmt.Sprintf("/v2/datapoint/timeseries?project_id=%d&dataPointID=out&start=%s&end=%s",
		pid, minute(0), minute(20)), c.Admin, nil).want(t, 200)
	var b strings.Builder
	for _, p := range got.JSON["data"].([]any) {
		pt := p.(map[string]any)
		fmt.Fprintf(&b, "%s=%v ", strings.TrimPrefix(strings.TrimSuffix(pt["time"].(string), ":00Z"), "2026-07-01T"), pt["value"])
	}
	// Inside: (i-1 + i) / 2 x 2 = 2i - 1 at 12:05 ... 12:14, the window
	// at 12:05 warmed with 12:04. Outside: the seeded values.
	want := "12:04=-3 12:05=9 12:06=11 12:07=13 12:08=15 12:09=17 12:10=19 12:11=21 12:12=23 12:13=25 12:14=27 12:15=-4 "
	if b.String() != want {
		t.Fatalf("outputs\n got %s\nwant %s", b.String(), want)
	}
	if n := e.sqlFloat(countObs+` AND d.datapoint_id = 'src'`, pid); n != 20 {
		t.Fatalf("the source has %v observations after the recompute, want its 20", n)
	}
}

func TestRecomputeRefusals(t *testing.T) {
	e, c, pid, at := recomputeSetup(t)
	s, en := at.Format(time.RFC3339), at.Add(time.Hour).Format(time.RFC3339)
	for name, q := range map[string][]string{
		"no dataPointID":  {"start", s, "end", en},
		"no start":        {"dataPointID", "out", "end", en},
		"no end":          {"dataPointID", "out", "start", s},
		"bad start":       {"dataPointID", "out", "start", "yesterday", "end", en},
		"bad end":         {"dataPointID", "out", "start", s, "end", "2026-13-01"},
		"year 1899":       {"dataPointID", "out", "start", "1899-12-31", "end", en},
		"start equal end": {"dataPointID", "out", "start", s, "end", s},
		"start after end": {"dataPointID", "out", "start", en, "end", s},
		"too long":        {"dataPointID", "out", "start", s, "end", at.AddDate(3, 0, 0).Format(time.RFC3339)},
	} {
		t.Run(name, func(t *testing.T) {
			r := e.do("POST", recomputePath(pid, q...), c.Admin, nil).wantError(t, 400)
			if r.JSON["operation"] != "create" {
				t.Fatalf("operation: %s", r.Body)
			}
		})
	}
	e.do("POST", recomputePath(pid, "dataPointID", "nope", "start", s, "end", en), c.Admin, nil).wantError(t, 404)
	// The endpoint grant is not enough: the TagAuths must let the caller
	// read the sources and write the output.
	grant := []int32{e.endpointID("POST", "/v2/project/{project_id}/virtual_datapoint/recompute")}
	for _, tt := range []struct {
		name   string
		tags   []map[string]any
		status int
		want   string
	}{
		{"no read on the source", []map[string]any{rbTag("name", "out", true, true)}, 403, `"src"`},
		{"no write on the output", []map[string]any{rbTag("name", "*", true, false)}, 403, `"out"`},
		{"read and write", []map[string]any{rbTag("name", "src", true, false), rbTag("name", "out", false, true)}, 202, ""},
	} {
		t.Run(tt.name, func(t *testing.T) {
			u, uid := e.newUser(c)
			rbAssignProjectRole(e, c.Admin, pid, rbCreateProjectRole(e, c.Admin, pid, grant, tt.tags...), uid)
			r := e.do("POST", recomputePath(pid, "dataPointID", "out", "start", s, "end", en), u, nil).want(t, tt.status)
			if tt.status != 202 {
				r.wantError(t, tt.status)
				if !strings.Contains(r.JSON["error"].(string), tt.want) {
					t.Fatalf("error %s does not name %s", r.Body, tt.want)
				}
			}
		})
	}
}

// One recompute per virtual datapoint at a time; the server's shutdown
// cancels one in progress and its log says so.
func TestRecomputeOneAtATime(t *testing.T) {
	e, c, pid, at := recomputeSetup(t)
	release := make(chan struct{})
	e.srv.recomputes.SetBeforeRun(func(ctx context.Context) {
		select {
		case <-release:
		case <-ctx.Done():
		}
	})
	s, en := at.Format(time.RFC3339), at.Add(time.Hour).Format(time.RFC3339)
	e.do("POST", recomputePath(pid, "dataPointID", "out", "start", s, "end", en), c.Admin, nil).want(t, 202)
	r := e.do("POST", recomputePath(pid, "dataPointID", "out", "start", s, "end", en), c.Admin, nil).wantError(t, 409)
	if !strings.Contains(r.JSON["error"].(string), "running") {
		t.Fatalf("409: %s", r.Body)
	}
	close(release)
	e.recomputeLogs(pid, c.Admin, "out", "finished")
	// Done: the next one is accepted; this one is held until the shutdown.
	e.srv.recomputes.SetBeforeRun(func(ctx context.Context) { <-ctx.Done() })
	e.do("POST", recomputePath(pid, "dataPointID", "out", "start", s, "end", en), c.Admin, nil).want(t, 202)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := e.srv.Shutdown(ctx); err != nil {
		t.Fatal(err)
	}
	v, err := e.store.VDP(ctx, pid, "out")
	if err != nil {
		t.Fatal(err)
	}
	if msg := v.Logs[len(v.Logs)-1].Message; !strings.Contains(msg, "cancelled") {
		t.Fatalf("last log entry after shutdown: %q", msg)
	}
}

// Calculations that fail emit nothing; the end entry counts them.
func TestRecomputeReportsCalculationErrors(t *testing.T) {
	e, c, pid, at := recomputeSetup(t)
	e.do("POST", vdpPath(pid, "", "dataPointID", "ratio", "type", "formula"), c.Admin,
		formulaConfig("10 / (P1 - 5);", map[string]string{"P1": "src"})).want(t, 200)
	e.do("POST", recomputePath(pid, "dataPointID", "ratio", "start", at.Format(time.RFC3339),
		"end", at.Add(20*time.Minute).Format(time.RFC3339)), c.Admin, nil).want(t, 202)
	logs := e.recomputeLogs(pid, c.Admin, "ratio", "finished")
	last := logs[len(logs)-1]["message"].(string)
	if !strings.Contains(last, "19 outputs written") || !strings.Contains(last, "failed calculations that emitted nothing: 1") ||
		!strings.Contains(last, "division by zero") {
		t.Fatalf("end entry: %q", last)
	}
}

// start and end take the forms the export takes, a date among them.
func TestRecomputeTakesDates(t *testing.T) {
	e, c, pid, _ := recomputeSetup(t)
	r := e.do("POST", recomputePath(pid, "dataPointID", "out", "start", "2026-07-01", "end", "2026-07-02"), c.Admin, nil).want(t, 202)
	if res := r.resource(t); res["start"] != "2026-07-01T00:00:00Z" || res["end"] != "2026-07-02T00:00:00Z" {
		t.Fatalf("the period as understood: %s", r.Body)
	}
	e.recomputeLogs(pid, c.Admin, "out", "finished")
}
