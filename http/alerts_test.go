package http

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/openbdp/bdp/actors"
)

// GET /v2/project/{project_id}/alerts: virtual datapoints in a failure
// state and those with a calculation error in the last 24 hours.

// alExec runs a statement straight against the test's database: to put
// the platform in states the API cannot reach by itself (a stored config
// the engine refuses, an old log entry).
func alExec(e *testEnv, sql string, args ...any) {
	e.t.Helper()
	conn, err := pgx.Connect(context.Background(), e.dbURL)
	if err != nil {
		e.t.Fatal(err)
	}
	defer conn.Close(context.Background())
	if _, err := conn.Exec(context.Background(), sql, args...); err != nil {
		e.t.Fatalf("%s: %v", sql, err)
	}
}

func alertsPath(pid int64, q string) string {
	return fmt.Sprintf("/v2/project/%d/alerts?%s", pid, q)
}

// alSummary is the items of an answer as "type dataPointID status_code
// status", in order, and its meta.
func alSummary(t *testing.T, r resp) (string, string) {
	t.Helper()
	var items []string
	for _, it := range adList(t, r.JSON, "items") {
		items = append(items, fmt.Sprintf("%v %v %v %v", it["type"], it["dataPointID"], it["status_code"], it["status"]))
	}
	m := r.JSON["meta"].(map[string]any)
	return strings.Join(items, "; "), fmt.Sprintf("page %v, %v a page, %v items, %v pages",
		m["current_page"], m["items_per_page"], m["total_items"], m["total_pages"])
}

func TestAlertsEmptyProject(t *testing.T) {
	e := newTestEnv(t)
	c := e.newCompany()
	pid, _ := e.newProject(c.Admin)
	// A virtual datapoint that is fine is no alert.
	e.do("POST", vdpPath(pid, "", "dataPointID", "ok", "type", "formula"), c.Admin, formulaConfig("P1;", map[string]string{"P1": "a"})).want(t, 200)
	e.do("POST", vdpPath(pid, "/run", "dataPointID", "ok", "run", "true"), c.Admin, nil).want(t, 200)
	r := e.do("GET", alertsPath(pid, ""), c.Admin, nil).want(t, 200)
	if !strings.Contains(string(r.Body), `"items":[]`) {
		t.Fatalf("items must be an empty array: %s", r.Body)
	}
	if _, meta := alSummary(t, r); meta != "page 1, 100 a page, 0 items, 0 pages" {
		t.Fatalf("meta: %s", meta)
	}
}

// alertsSetup drives, as the company admin, virtual datapoints into the
// states the alerts list reports, in this order:
//
//	broken  Start failed (its stored type is one the engine refuses)
//	hidden  Start failed, the same way
//	sick    Health check failed (recorded as the engine records it)
//	ratio   Running, with a calculation error (division by zero)
//	fine    Running, nothing wrong
//
// and a user whose project role holds the alerts endpoint with read on
// all of them but hidden.
func alertsSetup(t *testing.T) (*testEnv, company, int64, basic) {
	e := newTestEnv(t)
	c := e.newCompany()
	pid, _ := e.newProject(c.Admin)
	create := func(id, formula string, pins map[string]string) {
		e.do("POST", vdpPath(pid, "", "dataPointID", id, "type", "formula"), c.Admin, formulaConfig(formula, pins)).want(t, 200)
	}
	for _, id := range []string{"broken", "hidden", "sick", "fine"} {
		create(id, "P1;", map[string]string{"P1": "src"})
	}
	create("ratio", "P1 / P2;", map[string]string{"P1": "num", "P2": "den"})
	run := func(id, want string) {
		if r := e.do("POST", vdpPath(pid, "/run", "dataPointID", id, "run", "true"), c.Admin, nil).want(t, 200); r.JSON["status"] != want {
			t.Fatalf("%s after run=true: %s, want %s", id, r.Body, want)
		}
	}
	for _, id := range []string{"broken", "hidden"} {
		alExec(e, `UPDATE virtual_datapoints SET type = 'magic' WHERE project_id = $1 AND datapoint_id = $2`, pid, id)
		run(id, "Start failed")
	}
	actors.MarkUnhealthy(e.store, slog.New(slog.NewTextHandler(io.Discard, nil)))(
		actors.Key{ProjectID: pid, DataPointID: "sick"}, "more than 5 restarts within a minute")
	run("fine", "Running")
	run("ratio", "Running")
	upload := fmt.Sprintf("/v2/project/%d/timeseries", pid)
	e.do("POST", upload, c.Admin, map[string]any{"num": []map[string]any{{"time": "2026-07-02T00:00:00Z", "value": 1}}}).want(t, 200)
	e.do("POST", upload, c.Admin, map[string]any{"den": []map[string]any{{"time": "2026-07-02T00:01:00Z", "value": 0}}}).want(t, 200)
	for deadline := time.Now().Add(5 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		r := e.do("GET", alertsPath(pid, ""), c.Admin, nil).want(t, 200)
		if strings.Contains(string(r.Body), "calculation_error") {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("no calculation error among the alerts: %s", r.Body)
		}
	}
	u, uid := e.newUser(c)
	role := rbCreateProjectRole(e, c.Admin, pid, []int32{e.endpointID("GET", "/v2/project/{project_id}/alerts")},
		rbTag("name", "broken", true, false), rbTag("name", "sick", true, false), rbTag("name", "ratio", true, false),
		rbTag("name", "fine", true, false), rbTag("name", "hidden", false, true))
	rbAssignProjectRole(e, c.Admin, pid, role, uid)
	return e, c, pid, u
}

func TestAlertsFailuresAndCalculationErrors(t *testing.T) {
	e, c, pid, _ := alertsSetup(t)
	r := e.do("GET", alertsPath(pid, ""), c.Admin, nil).want(t, 200)
	items, meta := alSummary(t, r)
	const all = "calculation_error ratio 202 Running; virtual_datapoint_status sick 304 Health check failed; " +
		"virtual_datapoint_status hidden 201 Start failed; virtual_datapoint_status broken 201 Start failed"
	if items != all || meta != "page 1, 100 a page, 4 items, 1 pages" {
		t.Fatalf("alerts: %s (%s)\n%s", items, meta, r.Body)
	}
	list := adList(t, r.JSON, "items")
	last := int64(1<<63 - 1)
	for _, it := range list {
		ts, err := strconv.ParseInt(it["ts"].(string), 10, 64)
		if err != nil || ts > last || ts < time.Now().Add(-time.Minute).UnixNano() {
			t.Fatalf("ts must be recent unix nanoseconds as a string, newest first: %v", list)
		}
		last = ts
		if len(it) != 6 {
			t.Fatalf("item fields: want type, dataPointID, status_code, status, message, ts; got %v", it)
		}
	}
	for i, want := range []string{"division by zero", "more than 5 restarts", "magic", "magic"} {
		if msg, _ := list[i]["message"].(string); !strings.Contains(msg, want) {
			t.Errorf("message of %v does not say %q", list[i]["dataPointID"], want)
		}
	}
	// The log keeps what the list shows.
	v := e.do("GET", vdpPath(pid, "", "dataPointID", "broken"), c.Admin, nil).want(t, 200)
	logs := adList(t, v.JSON, "logs")
	if l := logs[len(logs)-1]; l["ts"] != list[3]["ts"] || l["message"] != list[3]["message"] || l["status_code"] != 201.0 {
		t.Fatalf("broken's alert %v is not its last log entry %v", list[3], l)
	}

	// Calculation errors count for 24 hours.
	alExec(e, `UPDATE virtual_datapoint_logs SET ts = ts - $1 WHERE type = 'calculation_error'`, (24*time.Hour + time.Minute).Nanoseconds())
	r = e.do("GET", alertsPath(pid, ""), c.Admin, nil).want(t, 200)
	if items, _ := alSummary(t, r); items != all[strings.Index(all, "virtual_datapoint_status sick"):] {
		t.Fatalf("an error older than 24 hours is still an alert: %s", items)
	}
	// A datapoint that leaves its failure state is no alert any more.
	alExec(e, `UPDATE virtual_datapoints SET type = 'formula' WHERE project_id = $1 AND datapoint_id = 'broken'`, pid)
	e.do("POST", vdpPath(pid, "/run", "dataPointID", "broken", "run", "true"), c.Admin, nil).want(t, 200)
	r = e.do("GET", alertsPath(pid, ""), c.Admin, nil).want(t, 200)
	if items, meta := alSummary(t, r); items != "virtual_datapoint_status sick 304 Health check failed; virtual_datapoint_status hidden 201 Start failed" ||
		meta != "page 1, 100 a page, 2 items, 1 pages" {
		t.Fatalf("after broken started: %s (%s)", items, meta)
	}
}

// A user limited by TagAuths sees the alerts of what they may read, and
// the pages count only those.
func TestAlertsTagAuthAndPages(t *testing.T) {
	e, c, pid, u := alertsSetup(t)
	for _, tt := range []struct {
		as          cred
		q           string
		items, meta string
	}{
		{c.Admin, "per_page=3", "calculation_error ratio 202 Running; virtual_datapoint_status sick 304 Health check failed; virtual_datapoint_status hidden 201 Start failed",
			"page 1, 3 a page, 4 items, 2 pages"},
		{c.Admin, "per_page=3&page=2", "virtual_datapoint_status broken 201 Start failed", "page 2, 3 a page, 4 items, 2 pages"},
		{c.Admin, "per_page=3&page=3", "", "page 3, 3 a page, 4 items, 2 pages"},
		{c.Admin, "page=9223372036854775807", "", "page 9.223372036854776e+18, 100 a page, 4 items, 1 pages"},
		{u, "", "calculation_error ratio 202 Running; virtual_datapoint_status sick 304 Health check failed; virtual_datapoint_status broken 201 Start failed",
			"page 1, 100 a page, 3 items, 1 pages"},
		{u, "per_page=2", "calculation_error ratio 202 Running; virtual_datapoint_status sick 304 Health check failed", "page 1, 2 a page, 3 items, 2 pages"},
		{u, "per_page=2&page=2", "virtual_datapoint_status broken 201 Start failed", "page 2, 2 a page, 3 items, 2 pages"},
		{u, "per_page=2&page=3", "", "page 3, 2 a page, 3 items, 2 pages"},
		{u, "per_page=1000&page=9223372036854775807", "", "page 9.223372036854776e+18, 1000 a page, 3 items, 1 pages"},
	} {
		r := e.do("GET", alertsPath(pid, tt.q), tt.as, nil).want(t, 200)
		if items, meta := alSummary(t, r); items != tt.items || meta != tt.meta {
			t.Errorf("%q: got %q (%s), want %q (%s)", tt.q, items, meta, tt.items, tt.meta)
		}
		if tt.as == cred(u) && strings.Contains(string(r.Body), "hidden") {
			t.Errorf("%q: the user sees what they may not read: %s", tt.q, r.Body)
		}
	}
	for _, q := range []string{"per_page=0", "per_page=1001", "page=0", "page=-1", "page=abc", "per_page=1.5"} {
		r := e.do("GET", alertsPath(pid, q), c.Admin, nil).wantError(t, 400)
		if name, _, _ := strings.Cut(q, "="); !strings.Contains(r.JSON["error"].(string), name) {
			t.Errorf("%s: error %q does not name the parameter", q, r.JSON["error"])
		}
	}
	// Without the endpoint grant: the endpoint's 403.
	v, vid := e.newUser(c)
	role := rbCreateProjectRole(e, c.Admin, pid, []int32{e.endpointID("GET", "/v2/project/{project_id}/virtual_datapoints")}, rbTag("name", "*", true, true))
	rbAssignProjectRole(e, c.Admin, pid, role, vid)
	rbDenied(t, e.do("GET", alertsPath(pid, ""), v, nil), e.endpointID("GET", "/v2/project/{project_id}/alerts"),
		"GET", "/v2/project/{project_id}/alerts")
}
