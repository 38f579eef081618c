package http

import (
	"fmt"
	"strings"
	"testing"
	"time"
)

const countObs = `SELECT count(*) FROM observations o JOIN datapoints d ON d.id = o.datapoint WHERE d.project_id = $1`

func TestUploadStoresAndCreatesDatapoints(t *testing.T) {
	e := newTestEnv(t)
	c := e.newCompany()
	pid, _ := e.newProject(c.Admin)
	path := fmt.Sprintf("/v2/project/%d/timeseries", pid)
	r := e.do("POST", path, c.Admin, map[string]any{
		"room/1 temp °C": []map[string]any{{"time": "2026-01-05T10:00:00Z", "value": 21.5}, {"time": "2026-01-05T10:01:00+01:00", "value": -3}},
		"meter":          []map[string]any{{"time": "2025-03-01T00:00:00.123456Z", "value": 1e9}},
	}).want(t, 200)
	if r.JSON["success"] != true || r.JSON["operation"] != "" {
		t.Fatalf("answer: %s", r.Body)
	}
	if res, ok := r.JSON["resource"].(map[string]any); !ok || len(res) != 0 {
		t.Fatalf("resource must be an empty object: %s", r.Body)
	}
	if n := e.sqlFloat(countObs, pid); n != 3 {
		t.Fatalf("stored %v observations, want 3", n)
	}
	// The offset is honoured: 10:01+01:00 is 09:01Z.
	if v := e.sqlFloat(`SELECT value FROM observations WHERE time = '2026-01-05T09:01:00Z'`); v != -3 {
		t.Fatalf("value at 09:01Z = %v", v)
	}
	got := e.do("GET", fmt.Sprintf("/v2/project/%d", pid), c.Admin, nil).want(t, 200)
	if !strings.Contains(string(got.Body), `"room/1 temp °C"`) || !strings.Contains(string(got.Body), `"meter"`) {
		t.Fatalf("the first observation must create the datapoint: %s", got.Body)
	}
	keys := e.do("GET", fmt.Sprintf("/v2/project/%d/datapointkeys", pid), c.Admin, nil).want(t, 200)
	if len(keys.List) == 0 || adStr(t, keys.List[0], "name") != "name" {
		t.Fatalf("datapointkeys: %s", keys.Body)
	}
}

func TestUploadSameTimeReplaces(t *testing.T) {
	e := newTestEnv(t)
	c := e.newCompany()
	pid, _ := e.newProject(c.Admin)
	path := fmt.Sprintf("/v2/project/%d/timeseries", pid)
	at := "2026-02-02T12:00:00Z"
	e.do("POST", path, c.Admin, map[string]any{"dp": []map[string]any{{"time": at, "value": 1}}}).want(t, 200)
	e.do("POST", path, c.Admin, map[string]any{"dp": []map[string]any{{"time": at, "value": 2}}}).want(t, 200)
	// Within one request the last value wins too.
	e.do("POST", path, c.Admin, map[string]any{"dp": []map[string]any{{"time": at, "value": 3}, {"time": at, "value": 4}}}).want(t, 200)
	if n := e.sqlFloat(countObs, pid); n != 1 {
		t.Fatalf("%v rows for one (datapoint, time)", n)
	}
	if v := e.sqlFloat(`SELECT value FROM observations`); v != 4 {
		t.Fatalf("value %v, want the last written 4", v)
	}
	// Times within one microsecond (what PostgreSQL keeps) are the same
	// time, and a lowercase t and z are RFC 3339 too (its section 5.6).
	e.do("POST", path, c.Admin, map[string]any{"dp": []map[string]any{
		{"time": "2026-02-02t12:00:00.0000001z", "value": 5}, {"time": "2026-02-02T12:00:00.0000004Z", "value": 6}}}).want(t, 200)
	if n, v := e.sqlFloat(countObs, pid), e.sqlFloat(`SELECT value FROM observations`); n != 1 || v != 6 {
		t.Fatalf("%v rows, value %v; want the one row, now 6", n, v)
	}
}

// Any bad value or time answers 400 naming the datapoint and index, and
// stores nothing of the request.
func TestUploadIsAllOrNothing(t *testing.T) {
	e := newTestEnv(t)
	c := e.newCompany()
	pid, _ := e.newProject(c.Admin)
	path := fmt.Sprintf("/v2/project/%d/timeseries", pid)
	good := `{"time": "2026-01-01T00:00:00Z", "value": 1}`
	tests := []struct {
		name, body, wantText string
	}{
		{"string value", `{"a": [` + good + `, {"time": "2026-01-01T00:01:00Z", "value": "2"}]}`, `"a", index 1`},
		{"null value", `{"a": [` + good + `, {"time": "2026-01-01T00:01:00Z", "value": null}]}`, `"a", index 1`},
		{"missing value", `{"a": [{"time": "2026-01-01T00:01:00Z"}]}`, `"a", index 0`},
		{"huge value", `{"a": [{"time": "2026-01-01T00:01:00Z", "value": 1e999}]}`, `"a", index 0`},
		{"bad time", `{"a": [` + good + `], "b": [` + good + `, ` + good + `, {"time": "yesterday", "value": 1}]}`, `"b", index 2`},
		{"date only", `{"a": [{"time": "2026-01-01", "value": 1}]}`, `"a", index 0`},
		{"year 0001", `{"a": [{"time": "0001-01-01T00:00:00Z", "value": 1}]}`, `"a", index 0`},
		{"not an array", `{"a": {"time": "2026-01-01T00:00:00Z", "value": 1}}`, `"a"`},
		{"null instead of an array", `{"b": [` + good + `], "a": null}`, `"a"`},
		{"a null point", `{"a": [null]}`, `"a", index 0`},
		{"backslash id", `{"a\\b": [` + good + `]}`, `backslash`},
		{"control char id", `{"a\u0007": [` + good + `]}`, `control`},
		{"array body", `[1, 2, 3]`, `JSON object`},
		{"malformed", `{"a": [`, `malformed`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := e.do("POST", path, c.Admin, []byte(tt.body)).wantError(t, 400)
			if !strings.Contains(r.JSON["error"].(string), tt.wantText) {
				t.Fatalf("error %q does not name %s", r.JSON["error"], tt.wantText)
			}
			if n := e.sqlFloat(countObs, pid); n != 0 {
				t.Fatalf("a refused upload stored %v observations", n)
			}
		})
	}
}

// Project roles upload only to datapoints a TagAuth lets them write.
func TestUploadNeedsWriteAccess(t *testing.T) {
	e := newTestEnv(t)
	c := e.newCompany()
	pid, _ := e.newProject(c.Admin)
	u, uid := e.newUser(c)
	upload := e.endpointID("POST", "/v2/project/{project_id}/timeseries")
	r := e.do("POST", fmt.Sprintf("/v2/project/%d/role", pid), c.Admin, map[string]any{
		"name": "writer", "authed_endpoints": []int32{upload},
		"authed_tags": []map[string]any{{"key": "name", "value": "sensor*", "read": true, "write": true},
			{"key": "name", "value": "meter*", "read": true, "write": false}},
	}).want(t, 200)
	e.do("POST", fmt.Sprintf("/v2/project/%d/role/%d/user/%d", pid, num(t, r.JSON, "resource.id"), uid), c.Admin, nil).want(t, 200)
	path := fmt.Sprintf("/v2/project/%d/timeseries", pid)
	point := []map[string]any{{"time": "2026-01-01T00:00:00Z", "value": 1}}
	e.do("POST", path, u, map[string]any{"sensor1": point}).want(t, 200)
	for _, dp := range []string{"meter1", "other"} {
		r := e.do("POST", path, u, map[string]any{"sensor2": point, dp: point}).wantError(t, 403)
		if !strings.Contains(r.JSON["error"].(string), dp) {
			t.Fatalf("403 does not name %s: %s", dp, r.Body)
		}
	}
	if n := e.sqlFloat(countObs, pid); n != 1 {
		t.Fatalf("refused uploads stored data: %v observations", n)
	}
}

// An upload larger than one write chunk is stored whole, every datapoint
// and observation of it, in each datapoint's values.
func TestUploadLargerThanAChunkIsStoredWhole(t *testing.T) {
	e := newTestEnv(t)
	c := e.newCompany()
	pid, _ := e.newProject(c.Admin)
	const perDP = uploadChunk/2 + 17 // three datapoints: the chunks cut inside the second and third
	base := time.Date(2026, 1, 5, 0, 0, 0, 0, time.UTC)
	body := map[string]any{}
	for _, dp := range []string{"a", "b", "c"} {
		points := make([]map[string]any, perDP)
		for i := range points {
			points[i] = map[string]any{"time": base.Add(time.Duration(i) * time.Second).Format(time.RFC3339), "value": float64(i)}
		}
		body[dp] = points
	}
	e.do("POST", fmt.Sprintf("/v2/project/%d/timeseries", pid), c.Admin, body).want(t, 200)
	if n := e.sqlFloat(countObs, pid); n != 3*perDP {
		t.Fatalf("stored %v observations, want %d", n, 3*perDP)
	}
	sum := e.sqlFloat(`SELECT sum(o.value) FROM observations o JOIN datapoints d ON d.id = o.datapoint WHERE d.project_id = $1`, pid)
	if want := 3 * float64(perDP-1) * perDP / 2; sum != want {
		t.Fatalf("sum of stored values %v, want %v", sum, want)
	}
}
