package http

import (
	"fmt"
	"net/url"
	"strings"
	"testing"
)

// PUT /v2/datapoint (api.md 4.6): the setpoint bounds of a datapoint.

func dpPath(pid int64, dp string) string {
	return fmt.Sprintf("/v2/datapoint?project_id=%d&dataPointID=%s", pid, url.QueryEscape(dp))
}

// dpBounds reads the stored bounds of a datapoint in SQL, NULL as NaN.
func dpBounds(e *testEnv, pid int64, dp string) string {
	e.t.Helper()
	q := func(col string) float64 {
		return e.sqlFloat(`SELECT COALESCE(`+col+`, 'NaN') FROM datapoints WHERE project_id = $1 AND datapoint_id = $2`, pid, dp)
	}
	return fmt.Sprintf("[%g, %g]", q("setpoint_min_value"), q("setpoint_max_value"))
}

// dpSetup creates a project with the datapoints valve, damper and other
// (one observation each) and a user whose project role holds PUT
// /v2/datapoint with write on valve and read only on other.
func dpSetup(t *testing.T) (*testEnv, company, int64, basic) {
	e := newTestEnv(t)
	c := e.newCompany()
	pid, _ := e.newProject(c.Admin)
	pt := []map[string]any{{"time": "2026-07-01T00:00:00Z", "value": 1}}
	e.do("POST", fmt.Sprintf("/v2/project/%d/timeseries", pid), c.Admin, map[string]any{"valve": pt, "damper": pt, "other": pt}).want(t, 200)
	u, uid := e.newUser(c)
	role := rbCreateProjectRole(e, c.Admin, pid, []int32{e.endpointID("PUT", "/v2/datapoint")},
		rbTag("name", "valve", true, true), rbTag("name", "other", true, false))
	rbAssignProjectRole(e, c.Admin, pid, role, uid)
	return e, c, pid, u
}

func TestDatapointSetBounds(t *testing.T) {
	e, c, pid, u := dpSetup(t)
	if got := dpBounds(e, pid, "valve"); got != "[NaN, NaN]" {
		t.Fatalf("bounds before: %s", got)
	}
	r := e.do("PUT", dpPath(pid, "valve"), c.Admin, map[string]any{"setpoint_min_value": -5, "setpoint_max_value": 40.5}).want(t, 200)
	res := adWantOp(t, r, "update")
	if res["dataPointID"] != "valve" || res["setpoint_min_value"] != -5.0 || res["setpoint_max_value"] != 40.5 ||
		num(t, res, "project_id") != pid || num(t, res, "id") <= 0 {
		t.Fatalf("resource: %s", r.Body)
	}
	if h, _ := res["hash_id"].(string); h == "" {
		t.Fatalf("no hash_id: %s", r.Body)
	}
	if len(res) != 6 {
		t.Fatalf("resource fields: want dataPointID, hash_id, id, project_id, setpoint_max_value, setpoint_min_value; got %s", r.Body)
	}
	if got := dpBounds(e, pid, "valve"); got != "[-5, 40.5]" {
		t.Fatalf("stored bounds: %s", got)
	}
	// The same id and hash_id as the export knows; the bounds are read by
	// the store's datapoint lookup too.
	dp, err := e.store.Datapoint(t.Context(), pid, "valve")
	if err != nil || dp.ID != num(t, res, "id") || dp.HashID != res["hash_id"] || *dp.SetpointMin != -5 || *dp.SetpointMax != 40.5 {
		t.Fatalf("stored datapoint %+v (%v), answered %s", dp, err, r.Body)
	}
	// A user with write access by TagAuth; min = max is a valid range.
	e.do("PUT", dpPath(pid, "valve"), u, map[string]any{"setpoint_min_value": 21, "setpoint_max_value": 21}).want(t, 200)
	if got := dpBounds(e, pid, "valve"); got != "[21, 21]" {
		t.Fatalf("stored bounds after the user's PUT: %s", got)
	}
	// The other datapoints did not change.
	for _, dp := range []string{"damper", "other"} {
		if got := dpBounds(e, pid, dp); got != "[NaN, NaN]" {
			t.Fatalf("%s changed: %s", dp, got)
		}
	}
}

// Bad input answers 400 naming the field and changes nothing.
func TestDatapointSetBoundsRefusesBadInput(t *testing.T) {
	e, c, pid, _ := dpSetup(t)
	e.do("PUT", dpPath(pid, "valve"), c.Admin, map[string]any{"setpoint_min_value": 1, "setpoint_max_value": 2}).want(t, 200)
	for _, tt := range []struct {
		name, path string
		body       any
		want       string
	}{
		{"no min", dpPath(pid, "valve"), map[string]any{"setpoint_max_value": 2}, "field setpoint_min_value is required"},
		{"no max", dpPath(pid, "valve"), map[string]any{"setpoint_min_value": 1}, "field setpoint_max_value is required"},
		{"empty body", dpPath(pid, "valve"), nil, "setpoint_min_value"},
		{"null min", dpPath(pid, "valve"), []byte(`{"setpoint_min_value":null,"setpoint_max_value":2}`), "set together or cleared together"},
		{"null max", dpPath(pid, "valve"), []byte(`{"setpoint_min_value":1,"setpoint_max_value":null}`), "set together or cleared together"},
		{"min as a string", dpPath(pid, "valve"), map[string]any{"setpoint_min_value": "a", "setpoint_max_value": 2}, "setpoint_min_value"},
		{"max as a boolean", dpPath(pid, "valve"), map[string]any{"setpoint_min_value": 1, "setpoint_max_value": true}, "setpoint_max_value"},
		{"max too large", dpPath(pid, "valve"), []byte(`{"setpoint_min_value":1,"setpoint_max_value":1e400}`), "setpoint_max_value"},
		{"min above max", dpPath(pid, "valve"), map[string]any{"setpoint_min_value": 5, "setpoint_max_value": 3}, "setpoint_min_value (5) must not be greater than setpoint_max_value (3)"},
		{"malformed", dpPath(pid, "valve"), []byte(`{"setpoint_min_value":1,`), "malformed JSON"},
		{"trailing data", dpPath(pid, "valve"), []byte(`{"setpoint_min_value":1,"setpoint_max_value":2}}`), "unexpected data"},
		{"an array", dpPath(pid, "valve"), []byte(`[1,2]`), "object"},
		{"no dataPointID", fmt.Sprintf("/v2/datapoint?project_id=%d", pid), map[string]any{"setpoint_min_value": 1, "setpoint_max_value": 2}, "dataPointID"},
		{"bad dataPointID", dpPath(pid, "va\\lve"), map[string]any{"setpoint_min_value": 1, "setpoint_max_value": 2}, "dataPointID"},
		{"no project_id", "/v2/datapoint?dataPointID=valve", map[string]any{"setpoint_min_value": 1, "setpoint_max_value": 2}, "project_id"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			r := e.do("PUT", tt.path, c.Admin, tt.body).wantError(t, 400)
			if msg := r.JSON["error"].(string); !strings.Contains(msg, tt.want) {
				t.Fatalf("error %q does not say %q", msg, tt.want)
			}
			if r.JSON["operation"] != "update" {
				t.Fatalf("operation: %s", r.Body)
			}
			if got := dpBounds(e, pid, "valve"); got != "[1, 2]" {
				t.Fatalf("a refused request changed the bounds: %s", got)
			}
		})
	}
}

// Clearing the bounds of an unknown datapoint is a 404 for a caller who
// may write it; a datapoint the caller may not write is a 403 with the
// wording of the datapoint check, whether it exists or not; neither
// changes anything.
func TestDatapointSetBoundsNotFoundAndForbidden(t *testing.T) {
	e, c, pid, u := dpSetup(t)
	e.do("PUT", dpPath(pid, "other"), c.Admin, map[string]any{"setpoint_min_value": 0, "setpoint_max_value": 10}).want(t, 200)
	body := map[string]any{"setpoint_min_value": 1, "setpoint_max_value": 2}
	clear := map[string]any{"setpoint_min_value": nil, "setpoint_max_value": nil}

	r := e.do("PUT", dpPath(pid, "nope"), c.Admin, clear).wantError(t, 404)
	if msg := r.JSON["error"].(string); !strings.Contains(msg, `"nope"`) {
		t.Fatalf("404 error %q does not name the datapoint", msg)
	}
	if n := e.sqlFloat(`SELECT count(*) FROM datapoints WHERE project_id = $1 AND datapoint_id = 'nope'`, pid); n != 0 {
		t.Fatalf("clearing created the unknown datapoint")
	}
	// Another project's datapoint of the same name is not this one's.
	pid2, _ := e.newProject(c.Admin)
	e.do("PUT", dpPath(pid2, "valve"), c.Admin, clear).wantError(t, 404)

	wantNoAccess(t, e.do("PUT", dpPath(pid, "other"), u, body), "write", "other")   // read only
	wantNoAccess(t, e.do("PUT", dpPath(pid, "damper"), u, body), "write", "damper") // no TagAuth
	wantNoAccess(t, e.do("PUT", dpPath(pid, "nope"), u, body), "write", "nope")     // not stored: no probing
	if n := e.sqlFloat(`SELECT count(*) FROM datapoints WHERE project_id = $1 AND datapoint_id = 'nope'`, pid); n != 0 {
		t.Fatalf("a refused PUT created the datapoint")
	}
	if got := dpBounds(e, pid, "other"); got != "[0, 10]" {
		t.Fatalf("a refused request changed other: %s", got)
	}
	if got := dpBounds(e, pid, "damper"); got != "[NaN, NaN]" {
		t.Fatalf("a refused request changed damper: %s", got)
	}
	// Without the endpoint grant: the endpoint's 403.
	v, vid := e.newUser(c)
	role := rbCreateProjectRole(e, c.Admin, pid, []int32{e.endpointID("GET", "/v2/datapoint/timeseries")}, rbTag("name", "*", true, true))
	rbAssignProjectRole(e, c.Admin, pid, role, vid)
	rbDenied(t, e.do("PUT", dpPath(pid, "valve"), v, body), e.endpointID("PUT", "/v2/datapoint"), "PUT", "/v2/datapoint")
}

// Bounds are set before a datapoint has data (a setpoint datapoint may
// report nothing until it is written): the datapoint is created with
// them. Both null clear them.
func TestDatapointBoundsWithoutDataAndCleared(t *testing.T) {
	e, c, pid, _ := dpSetup(t)
	r := e.do("PUT", dpPath(pid, "new_sp"), c.Admin, map[string]any{"setpoint_min_value": 16, "setpoint_max_value": 26}).want(t, 200)
	res := adWantOp(t, r, "update")
	if res["dataPointID"] != "new_sp" || res["setpoint_min_value"] != 16.0 || res["setpoint_max_value"] != 26.0 || res["hash_id"] == "" {
		t.Fatalf("resource: %s", r.Body)
	}
	if got := dpBounds(e, pid, "new_sp"); got != "[16, 26]" {
		t.Fatalf("stored bounds: %s", got)
	}
	// Listed like any datapoint, with the hash id it was created with.
	dp, err := e.store.Datapoint(t.Context(), pid, "new_sp")
	if err != nil || dp.HashID != res["hash_id"] {
		t.Fatalf("stored datapoint %+v (%v), answered %s", dp, err, r.Body)
	}

	for _, dp := range []string{"new_sp", "valve"} {
		e.do("PUT", dpPath(pid, dp), c.Admin, map[string]any{"setpoint_min_value": 1, "setpoint_max_value": 2}).want(t, 200)
		r = e.do("PUT", dpPath(pid, dp), c.Admin, []byte(`{"setpoint_min_value":null,"setpoint_max_value":null}`)).want(t, 200)
		res = adWantOp(t, r, "update")
		if v, ok := res["setpoint_min_value"]; !ok || v != nil || res["setpoint_max_value"] != nil {
			t.Fatalf("cleared bounds answered: %s", r.Body)
		}
		if got := dpBounds(e, pid, dp); got != "[NaN, NaN]" {
			t.Fatalf("%s: bounds after clearing: %s", dp, got)
		}
	}
}
