package http

import (
	"encoding/json"
	"fmt"
	"math"
	"strings"
	"testing"
	"time"
)

// The export parameters aedifion documents (decisions.md 10, issue 8
// item 11): interpolation, the mode and distinct aggregations, short,
// closed_interval and samplerate 0s, each doing what it says.

// tsCells decodes data as "minute:value" cells (value null for null), the
// value under key; minutes count from tsT0, seconds shown when not whole.
func tsCells(t *testing.T, r resp, key string) string {
	t.Helper()
	r.want(t, 200)
	var a struct {
		Data []map[string]json.RawMessage `json:"data"`
	}
	if err := json.Unmarshal(r.Body, &a); err != nil {
		t.Fatalf("%v: %s", err, r.Body)
	}
	cells := make([]string, len(a.Data))
	for i, m := range a.Data {
		raw, ok := m[key]
		var at time.Time
		var v *float64
		if !ok || len(m) != 2 || json.Unmarshal(m["time"], &at) != nil || json.Unmarshal(raw, &v) != nil {
			t.Fatalf("point %d: want {time, %s}: %s", i, key, r.Body)
		}
		cells[i] = tsCell(at, v)
	}
	return strings.Join(cells, " ")
}

func tsCell(at time.Time, v *float64) string {
	d := at.Sub(tsT0)
	when := fmt.Sprint(int(d / time.Minute))
	if d%time.Minute != 0 {
		when = fmt.Sprintf("%gm", d.Minutes())
	}
	if v == nil {
		return when + ":null"
	}
	return fmt.Sprintf("%s:%g", when, *v)
}

func TestExportInterpolation(t *testing.T) {
	e := newTestEnv(t)
	c := e.newCompany()
	pid, _ := e.newProject(c.Admin)
	// Minutes 0, 1 and 4 hold values; 2, 3 and 5 are empty.
	at := func(i int) time.Time { return tsMinute([]int{0, 1, 4}[i]) }
	tsUpload(e, c.Admin, pid, "p", at, 1, 2, 8)
	window := []string{"samplerate", "1m", "start", tsT0.Format(time.RFC3339), "end", tsMinute(6).Format(time.RFC3339)}
	for _, tc := range []struct {
		interpolation, key, want string
	}{
		{"", "mean", "0:1 1:2 4:8"}, // the default leaves empty intervals out, as before
		{"none", "mean", "0:1 1:2 4:8"},
		{"null", "mean", "0:1 1:2 2:null 3:null 4:8 5:null"},
		{"previous", "mean", "0:1 1:2 2:2 3:2 4:8 5:8"},
		{"linear", "mean", "0:1 1:2 2:4 3:6 4:8 5:null"},
		{"LINEAR", "mean", "0:1 1:2 2:4 3:6 4:8 5:null"},
		{"previous", "count", "0:1 1:1 2:1 3:1 4:1 5:1"},
		{"null", "distinct", "0:1 1:2 2:null 3:null 4:8 5:null"},
	} {
		t.Run(tc.interpolation+" "+tc.key, func(t *testing.T) {
			q := append([]string{"aggregation", tc.key}, window...)
			if tc.interpolation != "" {
				q = append(q, "interpolation", tc.interpolation)
			}
			if got := tsCells(t, tsGet(e, c.Admin, pid, "p", q...), tc.key); got != tc.want {
				t.Fatalf("got %s, want %s", got, tc.want)
			}
		})
	}
	// Before the first value there is nothing to carry: null.
	early := []string{"samplerate", "1m", "interpolation", "previous", "start", tsMinute(-2).Format(time.RFC3339), "end", tsMinute(2).Format(time.RFC3339)}
	if got := tsCells(t, tsGet(e, c.Admin, pid, "p", early...), "mean"); got != "-2:null -1:null 0:1 1:2" {
		t.Fatalf("previous before the first value: %s", got)
	}
	// Without samplerate there are no intervals: the observations as they are.
	if got := tsCells(t, tsGet(e, c.Admin, pid, "p", "interpolation", "linear"), "value"); got != "0:1 1:2 4:8" {
		t.Fatalf("unsampled with interpolation: %s", got)
	}
	for _, bad := range [][]string{
		{"samplerate", "1m", "interpolation", "spline"},
		{"samplerate", "1m", "interpolation", "previous", "aggregation", "distinct"},
		{"samplerate", "1m", "interpolation", "linear", "aggregation", "distinct"},
	} {
		r := tsGet(e, c.Admin, pid, "p", bad...).wantError(t, 400)
		if !strings.Contains(r.JSON["error"].(string), "interpolation") {
			t.Errorf("%v: error does not name interpolation: %s", bad, r.Body)
		}
	}
}

func TestExportModeAndDistinct(t *testing.T) {
	e := newTestEnv(t)
	c := e.newCompany()
	pid, _ := e.newProject(c.Admin)
	// Interval 0: 3, 2, 2, 3, 1 (2 and 3 tie: the smaller wins). Interval
	// 10: 7, 5, 5.
	minutes := []int{0, 1, 2, 3, 4, 10, 11, 12}
	tsUpload(e, c.Admin, pid, "p", func(i int) time.Time { return tsMinute(minutes[i]) }, 3, 2, 2, 3, 1, 7, 5, 5)
	for _, tc := range []struct{ agg, want string }{
		{"mode", "0:2 10:5"},
		{"distinct", "0:1 0:2 0:3 10:5 10:7"},
		{"median", "0:2 10:5"},
		{"count", "0:5 10:3"},
	} {
		t.Run(tc.agg, func(t *testing.T) {
			r := tsGet(e, c.Admin, pid, "p", "samplerate", "10m", "aggregation", tc.agg, "start", tsT0.Format(time.RFC3339))
			if got := tsCells(t, r, tc.agg); got != tc.want {
				t.Fatalf("got %s, want %s", got, tc.want)
			}
		})
	}
	r := tsGet(e, c.Admin, pid, "p", "samplerate", "10m", "aggregation", "spread").wantError(t, 400)
	for _, name := range []string{"mode", "distinct", "spread"} {
		if !strings.Contains(r.JSON["error"].(string), name) {
			t.Errorf("error does not list %s: %s", name, r.Body)
		}
	}
}

func TestExportShortAndZeroSamplerate(t *testing.T) {
	e := newTestEnv(t)
	c := e.newCompany()
	pid, _ := e.newProject(c.Admin)
	tsUpload(e, c.Admin, pid, "p", func(i int) time.Time { return tsMinute([]int{0, 1, 4}[i]) }, 1, 2.5, 8)
	for _, tc := range []struct {
		name  string
		query []string
		want  string
	}{
		{"raw", []string{"short", "true"},
			`[["2024-03-04T10:00:00Z",1],["2024-03-04T10:01:00Z",2.5],["2024-03-04T10:04:00Z",8]]`},
		{"sampled with nulls", []string{"short", "1", "samplerate", "2m", "interpolation", "null", "start", tsT0.Format(time.RFC3339), "end", tsMinute(6).Format(time.RFC3339)},
			`[["2024-03-04T10:00:00Z",1.75],["2024-03-04T10:02:00Z",null],["2024-03-04T10:04:00Z",8]]`},
		{"short=false", []string{"short", "false", "max", "1"},
			`{"data":[{"time":"2024-03-04T10:04:00Z","value":8}],"dataPointID":"p","tags":[]}`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := string(tsGet(e, c.Admin, pid, "p", tc.query...).want(t, 200).Body); got != tc.want {
				t.Fatalf("got  %s\nwant %s", got, tc.want)
			}
		})
	}
	tsGet(e, c.Admin, pid, "p", "short", "yes").wantError(t, 400)
	// samplerate 0s is aedifion's "highest rate available": the observations.
	for _, zero := range []string{"0s", "0m", "0h", "0d"} {
		if got := tsCells(t, tsGet(e, c.Admin, pid, "p", "samplerate", zero), "value"); got != "0:1 1:2.5 4:8" {
			t.Fatalf("samplerate %s: %s", zero, got)
		}
	}
	tsGet(e, c.Admin, pid, "p", "samplerate", "0s", "aggregation", "max").wantError(t, 400)
}

func TestExportClosedInterval(t *testing.T) {
	e := newTestEnv(t)
	c := e.newCompany()
	pid, _ := e.newProject(c.Admin)
	tsUpload(e, c.Admin, pid, "p", tsMinute, 1, 2, 3, 4, 5) // minutes 0..4
	half := func(m int) string { return tsMinute(m).Add(30 * time.Second).Format(time.RFC3339) }
	whole := func(m int) string { return tsMinute(m).Format(time.RFC3339) }
	for _, tc := range []struct {
		name  string
		query []string
		want  string
	}{
		{"between observations", []string{"start", half(1), "end", half(3)}, "1.5m:2 2:3 3:4 3.5m:4"},
		{"on observations", []string{"start", whole(1), "end", whole(3)}, "1:2 2:3 3:4"},
		{"nothing before start", []string{"start", whole(-60), "end", half(1)}, "0:1 1:2 1.5m:2"},
		{"after the last", []string{"start", whole(10), "end", whole(20)}, "10:5 20:5"},
		{"start only", []string{"start", half(2), "max", "1"}, "2.5m:3 3:4"},
		{"end only", []string{"end", half(1), "max", "1"}, "1:2 1.5m:2"},
		{"before everything", []string{"start", whole(-60), "end", whole(-30)}, ""},
		{"false", []string{"start", half(1), "end", half(3), "closed_interval", "false"}, "2:3 3:4"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			q := tc.query
			if tc.name != "false" {
				q = append(q, "closed_interval", "true")
			}
			if got := tsCells(t, tsGet(e, c.Admin, pid, "p", q...), "value"); got != tc.want {
				t.Fatalf("got %s, want %s", got, tc.want)
			}
		})
	}
	// Converted like the rest of the answer.
	tsUnits(e, pid, "p", "celsius")
	end := tsMinute(1).Add(45 * time.Second).Format(time.RFC3339)
	r := tsGet(e, c.Admin, pid, "p", "start", half(1), "end", end, "closed_interval", "true", "units", "fahrenheit", "short", "true").want(t, 200)
	var pairs [][2]any
	if err := json.Unmarshal(r.Body, &pairs); err != nil || len(pairs) != 2 {
		t.Fatalf("converted bounds: %s", r.Body)
	}
	for i, want := range []string{half(1), end} {
		if v, _ := pairs[i][1].(float64); pairs[i][0] != want || math.Abs(v-35.6) > 1e-9 {
			t.Fatalf("converted bound %d: %v, want %s at 35.6 °F", i, pairs[i], want)
		}
	}
	for _, bad := range [][]string{
		{"closed_interval", "true"},
		{"closed_interval", "true", "start", whole(0), "samplerate", "1m"},
		{"closed_interval", "maybe", "start", whole(0)},
	} {
		r := tsGet(e, c.Admin, pid, "p", bad...).wantError(t, 400)
		if !strings.Contains(r.JSON["error"].(string), "closed_interval") {
			t.Errorf("%v: error does not name closed_interval: %s", bad, r.Body)
		}
	}
}

// The OpenAPI document offers the new parameters, the short answer and
// the aliases.
func TestOpenAPIDocumentsAedifionCompatibility(t *testing.T) {
	e := newTestEnv(t)
	var doc struct {
		Paths map[string]map[string]struct {
			Parameters  []struct{ Name, In string } `json:"parameters"`
			RequestBody struct {
				Content map[string]any `json:"content"`
			} `json:"requestBody"`
			Responses map[string]struct {
				Content map[string]struct {
					Schema map[string]any `json:"schema"`
				} `json:"content"`
			} `json:"responses"`
		} `json:"paths"`
	}
	if err := json.Unmarshal(e.do("GET", "/v2/openapi.json", nil, nil).want(t, 200).Body, &doc); err != nil {
		t.Fatal(err)
	}
	has := func(path, method string, names ...string) {
		t.Helper()
		for _, n := range names {
			found := false
			for _, p := range doc.Paths[path][method].Parameters {
				found = found || p.Name == n && p.In == "query"
			}
			if !found {
				t.Errorf("%s %s: no query parameter %s", method, path, n)
			}
		}
	}
	has("/v2/datapoint/timeseries", "get", "interpolation", "short", "closed_interval", "aggregation", "samplerate")
	has("/v2/project/{project_id}", "delete", "project_name")
	if _, ok := doc.Paths["/v2/user/token"]["post"]; !ok {
		t.Error("POST /v2/user/token is not documented")
	}
	if _, ok := doc.Paths["/v2/user/password"]["put"].RequestBody.Content["application/x-www-form-urlencoded"]; !ok {
		t.Error("PUT /v2/user/password: no form body documented")
	}
	ts := doc.Paths["/v2/datapoint/timeseries"]["get"].Responses["200"].Content["application/json"].Schema
	if oneOf, _ := ts["oneOf"].([]any); len(oneOf) != 2 {
		t.Errorf("timeseries answer: want the object and the short array as oneOf, got %v", ts)
	}
}
