package http

import (
	"context"
	"encoding/json"
	"fmt"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/openbdp/bdp/edge"
)

// recordingWriter stands in for the edge device's write path (edge.Writer)
// in these tests: it records every write and answers written. The real
// path (safeguards, device) is tested with the edge package.
type recordingWriter struct {
	mu     sync.Mutex
	writes []edge.Write
}

func (w *recordingWriter) Write(_ context.Context, wr edge.Write) (edge.Operation, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.writes = append(w.writes, wr)
	return edge.Operation{Reference: fmt.Sprintf("00000000-0000-4000-8000-%012d", len(w.writes)), ProjectID: wr.ProjectID,
		DataPointID: wr.DataPointID, Value: wr.Value, Priority: wr.Priority, Acked: wr.Acked, State: edge.StateWritten}, nil
}

// to lists the writes to one datapoint.
func (w *recordingWriter) to(dp string) []edge.Write {
	w.mu.Lock()
	defer w.mu.Unlock()
	var out []edge.Write
	for _, wr := range w.writes {
		if wr.DataPointID == dp {
			out = append(out, wr)
		}
	}
	return out
}

// allWeek is a schedule of value v all week long.
func allWeek(v float64) string {
	var entries []string
	for _, d := range []string{"monday", "tuesday", "wednesday", "thursday", "friday", "saturday", "sunday"} {
		entries = append(entries, fmt.Sprintf(`{"day":%q,"start":"00:00","end":"24:00","value":%g}`, d, v))
	}
	return "[" + strings.Join(entries, ",") + "]"
}

// appFixture is a project with rooms whose setpoint pins are mapped.
type appFixture struct {
	cipFixture
}

func newAppFixture(t *testing.T, datapoints ...string) appFixture {
	return appFixture{newCIPFixture(t, datapoints...)}
}

// room maps a room whose temperature_setpoint is dp, with a schedule
// attribute (none when empty), and answers its id.
func (f appFixture) room(t *testing.T, dp, schedule string) int64 {
	t.Helper()
	id := f.create(t, f.c.Admin, "room")
	f.e.do("POST", f.path("/pin/datapoint"), f.c.Admin, map[string]any{"componentinproject_id": id,
		"pin_id": f.pins["room"]["temperature_setpoint"], "dataPointID": dp}).want(t, 200)
	if schedule != "" {
		f.e.do("POST", f.path("/attribute"), f.c.Admin, map[string]any{"componentinproject_id": id, "key": "setpoint_schedule",
			"value": json.RawMessage(schedule)}).want(t, 200)
	}
	return id
}

func (f appFixture) bounds(t *testing.T, dp string) {
	t.Helper()
	f.e.do("PUT", dpPath(f.pid, dp), f.c.Admin, map[string]any{"setpoint_min_value": 5, "setpoint_max_value": 30}).want(t, 200)
}

func (f appFixture) createApp(cip int64, algorithm, extra string, body any) resp {
	return f.e.do("POST", fmt.Sprintf("/v2/controls/app?project_id=%d&componentinproject_id=%d&algorithm=%s%s", f.pid, cip, algorithm, extra),
		f.c.Admin, body)
}

func (f appFixture) app(id, suffix string) string {
	return fmt.Sprintf("/v2/controls/app/%s%s?project_id=%d", id, suffix, f.pid)
}

// waitStatus polls an app until it has the status code.
func (f appFixture) waitStatus(t *testing.T, id string, code float64) map[string]any {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		a := f.e.do("GET", f.app(id, ""), f.c.Admin, nil).want(t, 200).JSON
		if a["status"].(map[string]any)["code"] == code {
			return a
		}
		if time.Now().After(deadline) {
			t.Fatalf("app %s never reached status %v: %v", id, code, a["status"])
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func TestControlsAppCreateBadInput(t *testing.T) {
	f := newAppFixture(t, "sp1")
	good := f.room(t, "sp1", allWeek(21))
	loop := f.create(t, f.c.Admin, "thermal_control_loop")
	cases := []struct {
		name      string
		cip       int64
		algorithm string
		extra     string
		body      any
		status    int
		want      string
	}{
		{"algorithm missing", good, "", "", nil, 400, "algorithm is required"},
		{"algorithm unknown", good, "frog", "", nil, 400, `algorithm "frog" is unknown`},
		{"unknown component", 999999, "schedule", "", nil, 404, "component in project 999999 not found"},
		{"component id not a number", 0, "schedule", "", nil, 400, "componentinproject_id must be a positive integer"},
		{"algorithm does not fit", good, "heating_curve", "", nil, 400, "does not fit component room"},
		{"unknown variation", good, "schedule", "&variation=eco", nil, 400, "variation"},
		{"alive_timeout zero", good, "schedule", "&alive_timeout=0", nil, 400, "alive_timeout"},
		{"params for another pin", good, "schedule", "", map[string]any{"setpoint_writing_params": map[string]any{"co2_setpoint": map[string]any{"priority": 13}}}, 400, "writes pin temperature_setpoint only"},
		{"priority 0", good, "schedule", "", map[string]any{"setpoint_writing_params": map[string]any{"temperature_setpoint": map[string]any{"priority": 0}}}, 400, "priority must be 1 to 16"},
		{"priority 17", good, "schedule", "", map[string]any{"setpoint_writing_params": map[string]any{"temperature_setpoint": map[string]any{"priority": 17}}}, 400, "priority must be 1 to 16"},
		{"reset value not a number", good, "schedule", "", map[string]any{"setpoint_writing_params": map[string]any{"temperature_setpoint": map[string]any{"reset_value": "warm"}}}, 400, "number or null"},
		{"unknown body field", good, "schedule", "", map[string]any{"setpoints": 1}, 400, "setpoint_writing_params"},
		{"heating curve on a loop without attributes is fine at create", loop, "heating_curve", "", nil, 200, ""},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			r := f.createApp(tc.cip, tc.algorithm, tc.extra, tc.body)
			if tc.status != 200 {
				r.wantError(t, tc.status)
				if !strings.Contains(r.JSON["error"].(string), tc.want) {
					t.Fatalf("error %q lacks %q", r.JSON["error"], tc.want)
				}
				return
			}
			r.want(t, 200)
		})
	}
	// Only the last case created an app.
	list := f.e.do("GET", fmt.Sprintf("/v2/controls/apps?project_id=%d", f.pid), f.c.Admin, nil).want(t, 200).JSON
	if n := len(list["items"].([]any)); n != 1 {
		t.Fatalf("refused creations left apps behind: %d", n)
	}
}

func TestControlsAppLifecycle(t *testing.T) {
	f := newAppFixture(t, "office_sp", "hall_sp")
	e, admin := f.e, f.c.Admin
	office := f.room(t, "office_sp", allWeek(21.5))

	res := f.createApp(office, "schedule", "&name=Office%20week", map[string]any{"setpoint_writing_params": map[string]any{
		"temperature_setpoint": map[string]any{"priority": 12, "reset_value": "null", "keep_out_of_service": true}}}).want(t, 200)
	if res.JSON["operation"] != "create" {
		t.Fatalf("operation: %s", res.Body)
	}
	app := res.resource(t)
	id := app["id"].(string)
	if app["status"].(map[string]any)["code"] != 100.0 || app["status"].(map[string]any)["message"] != "Created" ||
		app["algorithm"] != "schedule" || app["name"] != "Office week" || app["component_in_project_id"] != float64(office) {
		t.Fatalf("created app: %s", res.Body)
	}

	// Run before the setpoint datapoint has bounds: 400, nothing changes.
	r := e.do("POST", f.app(id, "/run")+"&run=true", admin, nil).wantError(t, 400)
	if !strings.Contains(r.JSON["error"].(string), `datapoint "office_sp" has no setpoint bounds`) {
		t.Fatalf("bounds error: %s", r.Body)
	}
	f.waitStatus(t, id, 100)

	f.bounds(t, "office_sp")
	run := e.do("POST", f.app(id, "/run")+"&run=true", admin, nil).want(t, 200).JSON
	if run["affected"] != true || run["controls_app_id"] != id || run["status"].(map[string]any)["code"] != 200.0 {
		t.Fatalf("run answer: %v", run)
	}
	f.waitStatus(t, id, 202)
	deadline := time.Now().Add(5 * time.Second)
	for len(e.writes.to("office_sp")) == 0 && time.Now().Before(deadline) {
		time.Sleep(20 * time.Millisecond)
	}
	w := e.writes.to("office_sp")
	if len(w) != 1 || w[0].Value == nil || *w[0].Value != 21.5 || w[0].Priority != 12 || !w[0].KeepOutOfService || w[0].Source != "app:"+id {
		t.Fatalf("writes of the app: %+v", w)
	}
	again := e.do("POST", f.app(id, "/run")+"&run=true", admin, nil).want(t, 200).JSON
	if again["affected"] != false || again["status"].(map[string]any)["code"] != 202.0 {
		t.Fatalf("second run: %v", again)
	}

	// Running: deletion refused, by query and by path, and so is the
	// deletion of its component.
	e.do("DELETE", fmt.Sprintf("/v2/controls/app?project_id=%d&controls_app_id=%s", f.pid, id), admin, nil).wantError(t, 409)
	e.do("DELETE", f.app(id, ""), admin, nil).wantError(t, 409)
	if r := e.do("DELETE", f.path(fmt.Sprintf("/%d", office)), admin, nil).wantError(t, 409); !strings.Contains(r.JSON["error"].(string), id) {
		t.Fatalf("component deletion: %s", r.Body)
	}

	// One writer per datapoint and priority.
	rival := f.createApp(office, "schedule", "&name=Rival", map[string]any{"setpoint_writing_params": map[string]any{
		"temperature_setpoint": map[string]any{"priority": 12}}}).want(t, 200).resource(t)["id"].(string)
	r = e.do("POST", f.app(rival, "/run")+"&run=true", admin, nil).wantError(t, 409)
	if !strings.Contains(r.JSON["error"].(string), id) {
		t.Fatalf("409 does not name the running app %s: %s", id, r.Body)
	}
	f.waitStatus(t, rival, 100)

	// Logs: when it ran, what it wrote, what came back.
	logs := e.do("GET", f.app(id, "/logs")+"&sort_order=asc", admin, nil).want(t, 200).JSON
	var text []string
	for _, it := range logs["items"].([]any) {
		text = append(text, it.(map[string]any)["log_message"].(string))
	}
	joined := strings.Join(text, "\n")
	for _, want := range []string{"created by " + f.c.Admin.email, "started by " + f.c.Admin.email, "app actor running",
		`wrote 21.5 to "office_sp" at priority 12`, "written"} {
		if !strings.Contains(joined, want) {
			t.Fatalf("logs lack %q:\n%s", want, joined)
		}
	}
	if e.do("GET", f.app(id, "/logs")+"&log_level=error", admin, nil).want(t, 200).JSON["meta"].(map[string]any)["total_items"] != 0.0 {
		t.Fatal("error level shows info entries")
	}

	// Stop, then delete: status 500 Deleting in the answer.
	stop := e.do("POST", f.app(id, "/run")+"&run=false", admin, nil).want(t, 200).JSON
	if stop["affected"] != true || stop["status"].(map[string]any)["code"] != 302.0 {
		t.Fatalf("stop answer: %v", stop)
	}
	if s := e.do("POST", f.app(id, "/run")+"&run=false", admin, nil).want(t, 200).JSON; s["affected"] != false {
		t.Fatalf("second stop: %v", s)
	}
	del := e.do("DELETE", f.app(id, ""), admin, nil).want(t, 200)
	if del.JSON["operation"] != "delete" || del.resource(t)["status"].(map[string]any)["code"] != 500.0 {
		t.Fatalf("delete answer: %s", del.Body)
	}
	e.do("GET", f.app(id, ""), admin, nil).wantError(t, 404)
	// With the first gone the rival may run.
	e.do("POST", f.app(rival, "/run")+"&run=true", admin, nil).want(t, 200)
	f.waitStatus(t, rival, 202)
	e.do("POST", f.app(rival, "/run")+"&run=false", admin, nil).want(t, 200)
	del = e.do("DELETE", fmt.Sprintf("/v2/controls/app?project_id=%d&controls_app_id=%s", f.pid, rival), admin, nil).want(t, 200)
	if del.resource(t)["status"].(map[string]any)["code"] != 500.0 {
		t.Fatalf("delete by query: %s", del.Body)
	}
}

func TestControlsAppRoutesBadInput(t *testing.T) {
	f := newAppFixture(t, "sp")
	missing := "6f1c3e0b-9a4d-4c55-8d0e-2f3b1a7c9e21"
	cases := []struct {
		method, path string
		status       int
		want         string
	}{
		{"GET", f.app("not-a-uuid", ""), 400, "must be a uuid"},
		{"GET", f.app(missing, ""), 404, "not found"},
		{"GET", f.app(missing, "/logs"), 404, "not found"},
		{"POST", f.app(missing, "/run") + "&run=true", 404, "not found"},
		{"POST", f.app(missing, "/run") + "&run=maybe", 400, "run must be true or false"},
		{"DELETE", f.app(missing, ""), 404, "not found"},
		{"DELETE", fmt.Sprintf("/v2/controls/app?project_id=%d", f.pid), 400, "controls_app_id"},
		{"GET", fmt.Sprintf("/v2/controls/apps?project_id=%d&filter=%s", f.pid, url.QueryEscape("colour=red")), 400, "filter key"},
		{"GET", f.app(missing, "/logs") + "&log_level=debug", 400, "log_level"},
		{"GET", fmt.Sprintf("/v2/controls/apps?project_id=%d&language=de", f.pid), 400, "language"},
	}
	for _, tc := range cases {
		t.Run(tc.method+" "+tc.path, func(t *testing.T) {
			r := f.e.do(tc.method, tc.path, f.c.Admin, nil).wantError(t, tc.status)
			if !strings.Contains(r.JSON["error"].(string), tc.want) {
				t.Fatalf("error %q lacks %q", r.JSON["error"], tc.want)
			}
		})
	}
}

func TestControlsAppsBulkRunAndList(t *testing.T) {
	f := newAppFixture(t, "a_sp", "b_sp", "c_sp")
	e, admin := f.e, f.c.Admin
	var ids []string
	for _, dp := range []string{"a_sp", "b_sp", "c_sp"} {
		f.bounds(t, dp)
		cip := f.room(t, dp, allWeek(20))
		ids = append(ids, f.createApp(cip, "schedule", "&name=room%20"+dp, nil).want(t, 200).resource(t)["id"].(string))
	}
	bulk := fmt.Sprintf("/v2/controls/apps/run?project_id=%d", f.pid)
	e.do("POST", bulk, admin, map[string]any{"controls_app_ids": ids[:2]}).wantError(t, 400)
	e.do("POST", bulk, admin, map[string]any{"controls_app_ids": []string{ids[0], "6f1c3e0b-9a4d-4c55-8d0e-2f3b1a7c9e21"}, "run": true}).wantError(t, 404)
	f.waitStatus(t, ids[0], 100) // the refusal changed nothing
	res := e.do("POST", bulk, admin, map[string]any{"controls_app_ids": ids[:2], "run": true}).want(t, 200)
	if len(res.List) != 2 {
		t.Fatalf("bulk answer: %s", res.Body)
	}
	for i, item := range res.List {
		m := item.(map[string]any)
		if m["controls_app_id"] != ids[i] || m["affected"] != true {
			t.Fatalf("bulk result %d: %v", i, m)
		}
	}
	f.waitStatus(t, ids[0], 202)
	f.waitStatus(t, ids[1], 202)

	list := func(query string) []any {
		return e.do("GET", fmt.Sprintf("/v2/controls/apps?project_id=%d%s", f.pid, query), admin, nil).want(t, 200).JSON["items"].([]any)
	}
	if n := len(list("")); n != 3 {
		t.Fatalf("list: %d apps", n)
	}
	if n := len(list("&filter=" + url.QueryEscape("status_code=202"))); n != 2 {
		t.Fatalf("running: %d apps", n)
	}
	if n := len(list("&filter=" + url.QueryEscape("status_code=202;status_code=100"))); n != 3 {
		t.Fatalf("running or created: %d apps", n)
	}
	if n := len(list("&filter=" + url.QueryEscape("status_code=202;algorithm=heating_curve"))); n != 0 {
		t.Fatalf("running heating curves: %d apps", n)
	}
	if got := list("&search=C_SP"); len(got) != 1 || got[0].(map[string]any)["id"] != ids[2] {
		t.Fatalf("search: %v", got)
	}

	// No ids: every app of the project, here stopped.
	res = e.do("POST", bulk+"&run=false", admin, nil).want(t, 200)
	affected := 0
	for _, item := range res.List {
		if item.(map[string]any)["affected"] == true {
			affected++
		}
	}
	if len(res.List) != 3 || affected != 2 {
		t.Fatalf("bulk stop: %s", res.Body)
	}
	if n := len(list("&filter=" + url.QueryEscape("status_code=302"))); n != 2 {
		t.Fatalf("stopped: %d apps", n)
	}
}

// Running an app needs write access by TagAuth to the datapoint it
// writes; a refused run changes nothing.
func TestControlsAppRunNeedsWriteAccess(t *testing.T) {
	f := newAppFixture(t, "ok_sp", "ro_sp")
	e := f.e
	f.bounds(t, "ok_sp")
	f.bounds(t, "ro_sp")
	okApp := f.createApp(f.room(t, "ok_sp", allWeek(20)), "schedule", "", nil).want(t, 200).resource(t)["id"].(string)
	roApp := f.createApp(f.room(t, "ro_sp", allWeek(20)), "schedule", "", nil).want(t, 200).resource(t)["id"].(string)
	u, uid := e.newUser(f.c)
	run := e.endpointID("POST", "/v2/controls/app/{controls_app_id}/run")
	get := e.endpointID("GET", "/v2/controls/app/{controls_app_id}")
	role := rbCreateProjectRole(e, f.c.Admin, f.pid, []int32{run, get}, rbTag("name", "ok_sp", true, true), rbTag("name", "ro_sp", true, false))
	rbAssignProjectRole(e, f.c.Admin, f.pid, role, uid)

	wantNoAccess(t, e.do("POST", f.app(roApp, "/run")+"&run=true", u, nil), "write", "ro_sp")
	f.waitStatus(t, roApp, 100)
	e.do("POST", f.app(okApp, "/run")+"&run=true", u, nil).want(t, 200)
	f.waitStatus(t, okApp, 202)
}
