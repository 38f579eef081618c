package http

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
)

// analysisFixture is a project with a room and a heat pump mapped, the
// functions that fit a room and one that fits the heat pump but not a
// room.
type analysisFixture struct {
	cipFixture
	room, hp int64
	roomFns  []int64 // functions that fit a room, by catalog order
	notRoom  int64   // a function that fits a heat pump but not a room
}

func newAnalysisFixture(t *testing.T) analysisFixture {
	t.Helper()
	f := analysisFixture{cipFixture: newCIPFixture(t)}
	f.room = f.create(t, f.c.Admin, "room")
	f.hp = f.create(t, f.c.Admin, "heat_pump")
	for _, fn := range f.e.srv.components.Functions() {
		switch {
		case fn.Fits("room"):
			f.roomFns = append(f.roomFns, fn.ID)
		case f.notRoom == 0 && fn.Fits("heat_pump"):
			f.notRoom = fn.ID
		}
	}
	if len(f.roomFns) < 2 || f.notRoom == 0 {
		t.Fatalf("the catalog needs two functions that fit a room and one that fits a heat pump but not a room: %v, %d", f.roomFns, f.notRoom)
	}
	return f
}

// instPath is an analytics path of the fixture's project.
func (f analysisFixture) instPath(path string, query ...string) string {
	q := fmt.Sprintf("project_id=%d", f.pid)
	for i := 0; i+1 < len(query); i += 2 {
		q += "&" + query[i] + "=" + query[i+1]
	}
	return path + "?" + q
}

// createInstance answers the new instance's id.
func (f analysisFixture) createInstance(t *testing.T, fn, cip int64, enabled bool) int64 {
	t.Helper()
	res := f.e.do("POST", f.instPath("/v2/analytics/instance"), f.c.Admin, map[string]any{"analysisfunction_id": fn,
		"componentinproject_id": cip, "name": "n", "enabled": enabled}).want(t, 200).resource(t)
	return int64(res["id"].(float64))
}

// run queues a manual run and answers its result id.
func (f analysisFixture) run(t *testing.T, instance int64, start, end time.Time) string {
	t.Helper()
	res := f.e.do("POST", f.instPath(fmt.Sprintf("/v2/analytics/instance/%d/run", instance),
		"start", start.Format(time.RFC3339), "end", end.Format(time.RFC3339)), f.c.Admin, nil).want(t, 200).resource(t)
	return res["result_id"].(string)
}

// sqlExec changes the test's database directly: what a runner would write.
func (e *testEnv) sqlExec(query string, args ...any) {
	e.t.Helper()
	conn, err := pgx.Connect(context.Background(), e.dbURL)
	if err != nil {
		e.t.Fatal(err)
	}
	defer conn.Close(context.Background())
	if _, err := conn.Exec(context.Background(), query, args...); err != nil {
		e.t.Fatalf("%s: %v", query, err)
	}
}

func TestAnalysisInstanceLifecycle(t *testing.T) {
	f := newAnalysisFixture(t)
	e, admin, fn := f.e, f.c.Admin, f.roomFns[0]
	r := e.do("POST", f.instPath("/v2/analytics/instance"), admin, map[string]any{"analysisfunction_id": fn,
		"componentinproject_id": f.room, "description": "air of room 1", "enabled": true, "name": "air"}).want(t, 200)
	if r.JSON["operation"] != "create" {
		t.Fatalf("operation: %s", r.Body)
	}
	inst := r.resource(t)
	id := int64(inst["id"].(float64))
	cfg := inst["config"].(map[string]any)
	if int64(inst["project_id"].(float64)) != f.pid || int64(cfg["analysisfunction_id"].(float64)) != fn ||
		int64(cfg["componentinproject_id"].(float64)) != f.room || cfg["description"] != "air of room 1" || cfg["enabled"] != true || cfg["name"] != "air" {
		t.Fatalf("created: %s", r.Body)
	}
	got := e.do("GET", f.instPath(fmt.Sprintf("/v2/analytics/instance/%d", id)), admin, nil).want(t, 200).JSON
	if fmt.Sprint(got) != fmt.Sprint(inst) {
		t.Fatalf("GET answers %v, POST answered %v", got, inst)
	}

	// One instance per function and component: the answer names both.
	r = e.do("POST", f.instPath("/v2/analytics/instance"), admin, map[string]any{"analysisfunction_id": fn, "componentinproject_id": f.room}).wantError(t, 409)
	msg := r.JSON["error"].(string)
	if !strings.Contains(msg, "already exists") || !strings.Contains(msg, fmt.Sprint(fn)) || !strings.Contains(msg, fmt.Sprint(f.room)) {
		t.Fatalf("duplicate instance: %q must say 'already exists' and name %d and %d", msg, f.room, fn)
	}
	other := f.createInstance(t, f.roomFns[1], f.room, false)

	list := e.do("GET", f.instPath("/v2/analytics/instances"), admin, nil).want(t, 200).JSON["items"].([]any)
	if len(list) != 2 || int64(list[0].(map[string]any)["id"].(float64)) != id || int64(list[1].(map[string]any)["id"].(float64)) != other {
		t.Fatalf("list: %v", list)
	}

	// PUT changes name, description and enabled; function and component
	// may be repeated, not changed.
	r = e.do("PUT", f.instPath(fmt.Sprintf("/v2/analytics/instance/%d", id)), admin, map[string]any{"name": "air quality",
		"enabled": false, "analysisfunction_id": fn, "componentinproject_id": f.room}).want(t, 200)
	cfg = r.resource(t)["config"].(map[string]any)
	if r.JSON["operation"] != "update" || cfg["name"] != "air quality" || cfg["enabled"] != false || cfg["description"] != "air of room 1" {
		t.Fatalf("update: %s", r.Body)
	}
	e.do("PUT", f.instPath(fmt.Sprintf("/v2/analytics/instance/%d", id)), admin, map[string]any{"analysisfunction_id": f.roomFns[1]}).wantError(t, 400)

	r = e.do("DELETE", f.instPath(fmt.Sprintf("/v2/analytics/instance/%d", id)), admin, nil).want(t, 200)
	if r.JSON["operation"] != "delete" || int64(r.resource(t)["id"].(float64)) != id {
		t.Fatalf("delete: %s", r.Body)
	}
	e.do("GET", f.instPath(fmt.Sprintf("/v2/analytics/instance/%d", id)), admin, nil).wantError(t, 404)
	// Deleting the mapped component takes its instances along.
	e.do("DELETE", fmt.Sprintf("/v2/project/%d/componentInProject/%d", f.pid, f.room), admin, nil).want(t, 200)
	e.do("GET", f.instPath(fmt.Sprintf("/v2/analytics/instance/%d", other)), admin, nil).wantError(t, 404)
}

// A run is queued as one 'running' row and answered at once: nothing in
// the request computes it (these tests run no runner), and its insertion
// wakes the runners through bdp_analysis_runs.
func TestAnalysisRunQueuesOneRunningRow(t *testing.T) {
	f := newAnalysisFixture(t)
	e := f.e
	inst := f.createInstance(t, f.roomFns[0], f.room, false)
	ctx := context.Background()
	listener, err := pgx.Connect(ctx, e.dbURL)
	if err != nil {
		t.Fatal(err)
	}
	defer listener.Close(ctx)
	if _, err := listener.Exec(ctx, "LISTEN bdp_analysis_runs"); err != nil {
		t.Fatal(err)
	}

	start := time.Date(2024, 3, 4, 0, 0, 0, 0, time.UTC)
	r := e.do("POST", f.instPath(fmt.Sprintf("/v2/analytics/instance/%d/run", inst), "start", "2024-03-04T01:00:00%2B01:00",
		"end", "2024-03-11T00:00:00Z"), f.c.Admin, nil).want(t, 200)
	res := r.resource(t)
	id, _ := res["result_id"].(string)
	if r.JSON["operation"] != "create" || res["status"] != "running" || !isUUID(id) || len(res) != 2 {
		t.Fatalf("run answer: %s", r.Body)
	}
	if n := e.sqlFloat(`SELECT count(*) FROM analysis_results`); n != 1 {
		t.Fatalf("%v result rows, want 1", n)
	}
	if n := e.sqlFloat(`SELECT count(*) FROM analysis_results WHERE id = $1::uuid AND instance_id = $2 AND project_id = $3
		AND status = 'running' AND NOT weekly AND claimed_at IS NULL AND outcome IS NULL AND period_start = $4 AND period_end = $5`,
		id, inst, f.pid, start, start.Add(7*24*time.Hour)); n != 1 {
		t.Fatal("the row is not the queued run asked for")
	}
	wait, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	n, err := listener.WaitForNotification(wait)
	if err != nil || n.Payload != id {
		t.Fatalf("runners were not woken with the result id: %v, %v", n, err)
	}

	// Until a runner takes it, the result says it is running.
	d := e.do("GET", f.instPath(fmt.Sprintf("/v2/analytics/instance/%d/result/%s", inst, id)), f.c.Admin, nil).want(t, 200).JSON
	if d["status"] != "running" || len(d["kpi"].([]any)) != 0 || len(d["plots"].([]any)) != 0 || d["summary_kpi"] != nil ||
		d["interpretation"] != "The analysis is running." || d["start"] != "2024-03-04T00:00:00Z" {
		t.Fatalf("running result: %v", d)
	}
	list := e.do("GET", f.instPath(fmt.Sprintf("/v2/analytics/instance/%d/results", inst)), f.c.Admin, nil).want(t, 200).List
	if len(list) != 1 || list[0].(map[string]any)["result_id"] != id || list[0].(map[string]any)["status"] != "running" {
		t.Fatalf("results list: %v", list)
	}
}

// Bad input (issue 10): each case answers its status with a message that
// says what is wrong, and changes nothing.
func TestAnalysisBadInput(t *testing.T) {
	f := newAnalysisFixture(t)
	e, admin := f.e, f.c.Admin
	inst := f.createInstance(t, f.roomFns[0], f.room, false)
	result := f.run(t, inst, time.Date(2024, 3, 4, 0, 0, 0, 0, time.UTC), time.Date(2024, 3, 11, 0, 0, 0, 0, time.UTC))
	otherPid, _ := e.newProject(admin)
	foreignCIP := int64(e.do("POST", fmt.Sprintf("/v2/project/%d/componentInProject", otherPid), admin,
		map[string]any{"component_id": f.components["room"]}).want(t, 200).resource(t)["id"].(float64))
	stranger := e.newCompany()
	strangerPid, _ := e.newProject(stranger.Admin)

	instance := fmt.Sprintf("/v2/analytics/instance/%d", inst)
	runPath := func(start, end string) string {
		return f.instPath(instance+"/run", "start", start, "end", end)
	}
	body := func(fn, cip int64) map[string]any {
		return map[string]any{"analysisfunction_id": fn, "componentinproject_id": cip}
	}
	for _, tc := range []struct {
		name, method, path string
		as                 cred
		body               any
		status             int
		want               string
	}{
		{"unknown function", "POST", f.instPath("/v2/analytics/instance"), admin, body(999999, f.room), 404, "no analysis function with id 999999"},
		{"unknown component in project", "POST", f.instPath("/v2/analytics/instance"), admin, body(f.roomFns[1], 999999), 404, "component in project 999999 not found"},
		{"component of another project", "POST", f.instPath("/v2/analytics/instance"), admin, body(f.roomFns[1], foreignCIP), 404, "not found"},
		{"function that does not fit", "POST", f.instPath("/v2/analytics/instance"), admin, body(f.notRoom, f.room), 400, "does not fit component room"},
		{"function missing", "POST", f.instPath("/v2/analytics/instance"), admin, map[string]any{"componentinproject_id": f.room}, 400, "analysisfunction_id is required"},
		{"aedifion's auto_execution", "POST", f.instPath("/v2/analytics/instance"), admin,
			map[string]any{"analysisfunction_id": f.roomFns[1], "componentinproject_id": f.room, "auto_execution": true}, 400, "auto_execution is not supported"},
		{"project_id missing", "GET", "/v2/analytics/instances", admin, nil, 400, "project_id is required"},
		{"unknown instance", "GET", f.instPath("/v2/analytics/instance/999999"), admin, nil, 404, "analysis instance 999999 not found"},
		{"instance through another project", "GET", fmt.Sprintf("%s?project_id=%d", instance, otherPid), admin, nil, 404, "not found"},
		{"change the function", "PUT", f.instPath(instance), admin, map[string]any{"analysisfunction_id": f.roomFns[1]}, 400, "analysisfunction_id cannot change"},
		{"change the component", "PUT", f.instPath(instance), admin, map[string]any{"componentinproject_id": f.hp}, 400, "componentinproject_id cannot change"},
		{"start after end", "POST", runPath("2024-03-11T00:00:00Z", "2024-03-04T00:00:00Z"), admin, nil, 400, "must be before end"},
		{"start equal to end", "POST", runPath("2024-03-04T00:00:00Z", "2024-03-04T00:00:00Z"), admin, nil, 400, "must be before end"},
		{"period longer than 366 days", "POST", runPath("2023-01-01T00:00:00Z", "2024-01-02T00:00:01Z"), admin, nil, 400, "at most 366 days"},
		{"time not RFC 3339", "POST", runPath("2024-03-04", "2024-03-11T00:00:00Z"), admin, nil, 400, "start must be an RFC 3339 time"},
		{"end missing", "POST", f.instPath(instance+"/run", "start", "2024-03-04T00:00:00Z"), admin, nil, 400, "end is required"},
		{"run an unknown instance", "POST", f.instPath("/v2/analytics/instance/999999/run", "start", "2024-03-04T00:00:00Z",
			"end", "2024-03-05T00:00:00Z"), admin, nil, 404, "analysis instance 999999 not found"},
		{"unknown result", "GET", f.instPath(instance + "/result/00000000-0000-0000-0000-000000000000"), admin, nil, 404, "not found"},
		{"result id not a uuid", "GET", f.instPath(instance + "/result/latest"), admin, nil, 400, "result_id must be a uuid"},
		{"result of another instance", "GET", f.instPath("/v2/analytics/instance/999999/result/" + result), admin, nil, 404, "not found"},
		{"result_language fr", "GET", f.instPath(instance+"/result/"+result, "result_language", "fr"), admin, nil, 400, "result_language must be en or de"},
		{"unknown units_system", "GET", f.instPath(instance+"/result/"+result, "units_system", "metric"), admin, nil, 400, "units_system must be one of"},
		{"unknown currency_system", "GET", f.instPath(instance+"/result/"+result, "currency_system", "XBT"), admin, nil, 400, "currency_system must be one of"},
		{"units_system on the results list", "GET", f.instPath(instance+"/results", "units_system", "SI"), admin, nil, 400, "units_system is not supported"},
		{"language fr on the grouped results", "GET", f.instPath("/v2/analytics/results", "language", "fr"), admin, nil, 400, "language must be en or de"},
		{"search on componentsInProject", "GET", f.instPath("/v2/analytics/componentsInProject", "search", "room"), admin, nil, 400, "search is not supported"},
		{"per_page above 1000", "GET", f.instPath("/v2/analytics/results", "per_page", "1001"), admin, nil, 400, "per_page at most 1000"},
		{"unknown component's results", "GET", f.instPath("/v2/analytics/componentInProject/999999/results"), admin, nil, 404, "not found"},
		// Another company's project answers 403 whoever asks, whether or
		// not the instance exists there.
		{"another company reads the instance", "GET", fmt.Sprintf("%s?project_id=%d", instance, f.pid), stranger.Admin, nil, 403, "unauthorized access to project"},
		{"another company runs the instance", "POST", fmt.Sprintf("%s/run?project_id=%d&start=2024-03-04T00:00:00Z&end=2024-03-05T00:00:00Z", instance, f.pid),
			stranger.Admin, nil, 403, "unauthorized access to project"},
		{"another company deletes the instance", "DELETE", fmt.Sprintf("%s?project_id=%d", instance, f.pid), stranger.Admin, nil, 403, "unauthorized access to project"},
		{"another company's result", "GET", fmt.Sprintf("%s/result/%s?project_id=%d", instance, result, f.pid), stranger.Admin, nil, 403, "unauthorized access to project"},
		{"an instance into another company's project", "POST", fmt.Sprintf("/v2/analytics/instance?project_id=%d", strangerPid), admin,
			body(f.roomFns[1], f.room), 403, "unauthorized access to project"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := e.do(tc.method, tc.path, tc.as, tc.body).wantError(t, tc.status)
			if msg, _ := r.JSON["error"].(string); !strings.Contains(msg, tc.want) {
				t.Fatalf("error %q, want it to say %q", msg, tc.want)
			}
		})
	}
	// Nothing was created, changed or queued by any refusal.
	if n := e.sqlFloat(`SELECT count(*) FROM analysis_instances`); n != 1 {
		t.Fatalf("%v instances after the refusals, want 1", n)
	}
	if n := e.sqlFloat(`SELECT count(*) FROM analysis_results`); n != 1 {
		t.Fatalf("%v results after the refusals, want 1", n)
	}
	cfg := e.do("GET", f.instPath(instance), admin, nil).want(t, 200).JSON["config"].(map[string]any)
	if int64(cfg["analysisfunction_id"].(float64)) != f.roomFns[0] || int64(cfg["componentinproject_id"].(float64)) != f.room {
		t.Fatalf("a refused update changed the instance: %v", cfg)
	}
}

// Results are derived from the datapoints mapped on the component: a
// caller whose TagAuths do not let them read every one of them may neither
// run nor read that component's analyses, and the grouped lists leave the
// component out; a component whose datapoints they may read is theirs.
func TestAnalysisNeedsReadAccessToTheMappedDatapoints(t *testing.T) {
	f := newAnalysisFixture(t)
	e, admin := f.e, f.c.Admin
	tsUpload(e, admin, f.pid, "visible", tsMinute, 1)
	tsUpload(e, admin, f.pid, "secret", tsMinute, 1)
	open := f.create(t, admin, "room")
	for cip, dp := range map[int64]string{f.room: "secret", open: "visible"} {
		e.do("POST", f.path("/pin/datapoint"), admin, map[string]any{"componentinproject_id": cip,
			"pin_id": f.pins["room"]["operative_temperature"], "dataPointID": dp}).want(t, 200)
	}
	hidden, shown := f.createInstance(t, f.roomFns[0], f.room, false), f.createInstance(t, f.roomFns[0], open, false)
	hiddenResult, shownResult := f.run(t, hidden, analysisWeek, analysisWeek2), f.run(t, shown, analysisWeek, analysisWeek2)
	f.finish(t, hiddenResult, storedOutcome(ptrFloat(80), ptrFloat(100)))
	f.finish(t, shownResult, storedOutcome(ptrFloat(80), ptrFloat(100)))

	var grants []int32
	for _, r := range [][2]string{{"POST", "/v2/analytics/instance/{instance_id}/run"}, {"GET", "/v2/analytics/instance/{instance_id}/results"},
		{"GET", "/v2/analytics/instance/{instance_id}/result/{result_id}"}, {"GET", "/v2/analytics/componentsInProject"},
		{"GET", "/v2/analytics/componentInProject/{componentinproject_id}/results"}, {"GET", "/v2/analytics/results"}} {
		grants = append(grants, e.endpointID(r[0], r[1]))
	}
	u, uid := e.newUser(f.c)
	rbAssignProjectRole(e, admin, f.pid, rbCreateProjectRole(e, admin, f.pid, grants, rbTag("name", "visible", true, false)), uid)

	for _, path := range []string{
		fmt.Sprintf("/v2/analytics/instance/%d/results", hidden),
		fmt.Sprintf("/v2/analytics/instance/%d/result/%s", hidden, hiddenResult),
		fmt.Sprintf("/v2/analytics/componentInProject/%d/results", f.room),
	} {
		r := e.do("GET", f.instPath(path), u, nil).wantError(t, 403)
		if msg := r.JSON["error"].(string); !strings.Contains(msg, "no read access") || strings.Contains(msg, "secret") {
			t.Errorf("GET %s: %q must refuse without naming the datapoint", path, msg)
		}
	}
	e.do("POST", f.instPath(fmt.Sprintf("/v2/analytics/instance/%d/run", hidden), "start", "2024-03-04T00:00:00Z",
		"end", "2024-03-05T00:00:00Z"), u, nil).wantError(t, 403)

	e.do("GET", f.instPath(fmt.Sprintf("/v2/analytics/instance/%d/result/%s", shown, shownResult)), u, nil).want(t, 200)
	e.do("GET", f.instPath(fmt.Sprintf("/v2/analytics/componentInProject/%d/results", open)), u, nil).want(t, 200)
	e.do("POST", f.instPath(fmt.Sprintf("/v2/analytics/instance/%d/run", shown), "start", "2024-03-04T00:00:00Z",
		"end", "2024-03-05T00:00:00Z"), u, nil).want(t, 200)
	for _, path := range []string{"/v2/analytics/componentsInProject", "/v2/analytics/results"} {
		items := e.do("GET", f.instPath(path), u, nil).want(t, 200).JSON["items"].([]any)
		if len(items) != 1 || int64(items[0].(map[string]any)["componentinproject_id"].(float64)) != open {
			t.Errorf("GET %s shows %v, want only component %d", path, items, open)
		}
		if all := e.do("GET", f.instPath(path), admin, nil).want(t, 200).JSON["items"].([]any); len(all) != 2 {
			t.Errorf("GET %s as the admin shows %d components, want 2", path, len(all))
		}
	}
}
