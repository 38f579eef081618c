package http

import (
	"fmt"
	"math"
	"net/url"
	"strings"
	"testing"
	"time"
)

// GET /v2/datapoint/timeseries through real HTTP against a real database: windows, sampling, access.

var tsT0 = time.Date(2024, 3, 4, 10, 0, 0, 0, time.UTC)

func tsMinute(i int) time.Time { return tsT0.Add(time.Duration(i) * time.Minute) }

// tsUpload stores values[i] at at(i) through the JSON upload.
func tsUpload(e *testEnv, as cred, pid int64, dp string, at func(int) time.Time, values ...float64) {
	e.t.Helper()
	pts := make([]map[string]any, len(values))
	for i, v := range values {
		pts[i] = map[string]any{"time": at(i).Format(time.RFC3339Nano), "value": v}
	}
	e.do("POST", fmt.Sprintf("/v2/project/%d/timeseries", pid), as, map[string]any{dp: pts}).want(e.t, 200)
}

// tsUnits sets the system tag units of a datapoint.
func tsUnits(e *testEnv, pid int64, dp, unit string) {
	e.t.Helper()
	e.do("PUT", fmt.Sprintf("/operator/projects/%d/datapoints/%s/tags", pid, url.PathEscape(dp)), bearer(testOperatorToken),
		[]map[string]any{{"key": "units", "value": unit}}).want(e.t, 200)
}

// tsGet reads a datapoint with extra query parameters (key, value pairs).
func tsGet(e *testEnv, as cred, pid int64, dp string, kv ...string) resp {
	e.t.Helper()
	q := url.Values{"project_id": {itoa(pid)}, "dataPointID": {dp}}
	for i := 0; i+1 < len(kv); i += 2 {
		q.Set(kv[i], kv[i+1])
	}
	return e.do("GET", "/v2/datapoint/timeseries?"+q.Encode(), as, nil)
}

type tsPoint struct {
	Time  time.Time
	Value float64
}

// tsData decodes data, reading each value under key.
func tsData(t *testing.T, r resp, key string) []tsPoint {
	t.Helper()
	r.want(t, 200)
	raw, ok := r.JSON["data"].([]any)
	if !ok {
		t.Fatalf("no data array: %s", r.Body)
	}
	out := make([]tsPoint, len(raw))
	for i, x := range raw {
		m := x.(map[string]any)
		tm, err := time.Parse(time.RFC3339Nano, m["time"].(string))
		if err != nil {
			t.Fatal(err)
		}
		v, ok := m[key].(float64)
		if !ok || len(m) != 2 {
			t.Fatalf("point %d: want {time, %s}, got %v", i, key, m)
		}
		out[i] = tsPoint{tm, v}
	}
	return out
}

// tsWantMinutes checks raw values against minutes from..from+len(values).
func tsWantMinutes(t *testing.T, what string, got []tsPoint, from int, values ...float64) {
	t.Helper()
	if len(got) != len(values) {
		t.Fatalf("%s: %d points, want %d: %v", what, len(got), len(values), got)
	}
	for i, p := range got {
		if !p.Time.Equal(tsMinute(from+i)) || p.Value != values[i] {
			t.Fatalf("%s: point %d is %v, want %v %v", what, i, p, tsMinute(from+i), values[i])
		}
	}
}

func tsNear(got, want float64) bool { return math.Abs(got-want) <= 1e-9*math.Max(1, math.Abs(want)) }

// start inclusive, end exclusive; max only for open-ended windows.
func TestTimeseriesWindows(t *testing.T) {
	e := newTestEnv(t)
	c := e.newCompany()
	pid, _ := e.newProject(c.Admin)
	tsUpload(e, c.Admin, pid, "hall/temp", tsMinute, 0, 1, 2, 3, 4, 5, 6, 7, 8, 9)
	tsUpload(e, c.Admin, pid, "hall/other", tsMinute, 100)
	at := func(i int) string { return tsMinute(i).Format(time.RFC3339) }
	cases := []struct {
		name   string
		query  []string
		from   int
		values []float64
	}{
		{"neither: everything up to the default 1000", nil, 0, []float64{0, 1, 2, 3, 4, 5, 6, 7, 8, 9}},
		{"max only: newest", []string{"max", "3"}, 7, []float64{7, 8, 9}},
		{"max 0: all", []string{"max", "0"}, 0, []float64{0, 1, 2, 3, 4, 5, 6, 7, 8, 9}},
		{"start: first max from start, inclusive", []string{"start", at(2), "max", "3"}, 2, []float64{2, 3, 4}},
		{"start without max", []string{"start", at(8)}, 8, []float64{8, 9}},
		{"end: last max before end, exclusive", []string{"end", at(5), "max", "2"}, 3, []float64{3, 4}},
		{"end, max 0", []string{"end", at(2), "max", "0"}, 0, []float64{0, 1}},
		{"both: all between, max ignored", []string{"start", at(2), "end", at(6), "max", "1"}, 2, []float64{2, 3, 4, 5}},
		{"date-only start and end", []string{"start", "2024-03-04", "end", "2024-03-05"}, 0, []float64{0, 1, 2, 3, 4, 5, 6, 7, 8, 9}},
		{"offset +01:00 sent unencoded (a space)", []string{"start", "2024-03-04 11:07:00 01:00"}, 7, []float64{7, 8, 9}},
		{"offset +0100 and fractions", []string{"start", "2024-03-04T11:06:59.5+0100", "max", "1"}, 7, []float64{7}},
		{"nothing in the window", []string{"start", "2024-03-05"}, 0, nil},
	}
	for _, tc := range cases {
		r := tsGet(e, c.Admin, pid, "hall/temp", tc.query...)
		tsWantMinutes(t, tc.name, tsData(t, r, "value"), tc.from, tc.values...)
		if r.JSON["dataPointID"] != "hall/temp" || r.JSON["units"] != nil || r.JSON["samplerate"] != nil {
			t.Fatalf("%s: answer fields: %s", tc.name, r.Body)
		}
		if tags, ok := r.JSON["tags"].([]any); !ok || len(tags) != 0 {
			t.Fatalf("%s: tags: %s", tc.name, r.Body)
		}
	}
	// Tags come along.
	tsUnits(e, pid, "hall/temp", "celsius")
	r := tsGet(e, c.Admin, pid, "hall/temp", "max", "1").want(t, 200)
	tags := r.JSON["tags"].([]any)
	tag := tags[0].(map[string]any)
	if len(tags) != 1 || tag["key"] != "units" || tag["value"] != "celsius" || tag["source"] != "system" || tag["id"] == nil {
		t.Fatalf("tags: %s", r.Body)
	}
}

// Without start, end and max: the newest 1000, ascending (decisions.md 4).
func TestTimeseriesNewest1000(t *testing.T) {
	e := newTestEnv(t)
	c := e.newCompany()
	pid, _ := e.newProject(c.Admin)
	values := make([]float64, 1500)
	for i := range values {
		values[i] = float64(i)
	}
	tsUpload(e, c.Admin, pid, "m", func(i int) time.Time { return tsT0.Add(time.Duration(i) * time.Second) }, values...)
	got := tsData(t, tsGet(e, c.Admin, pid, "m"), "value")
	if len(got) != 1000 || got[0].Value != 500 || got[999].Value != 1499 {
		t.Fatalf("default: %d points from %v to %v", len(got), got[0], got[len(got)-1])
	}
	for i := 1; i < len(got); i++ {
		if !got[i].Time.After(got[i-1].Time) {
			t.Fatalf("not ascending at %d: %v then %v", i, got[i-1], got[i])
		}
	}
	if all := tsData(t, tsGet(e, c.Admin, pid, "m", "max", "0"), "value"); len(all) != 1500 || all[0].Value != 0 {
		t.Fatalf("max=0: %d points", len(all))
	}
	start := tsT0.Add(100 * time.Second).Format(time.RFC3339)
	if first := tsData(t, tsGet(e, c.Admin, pid, "m", "start", start), "value"); len(first) != 1000 || first[0].Value != 100 {
		t.Fatalf("start without max: %d points from %v", len(first), first[0])
	}
}

// Values on a boundary go to the interval starting there; intervals count
// from 2000-01-01 UTC; each aggregation has its own key.
func TestTimeseriesSampling(t *testing.T) {
	e := newTestEnv(t)
	c := e.newCompany()
	pid, _ := e.newProject(c.Admin)
	// 10:00 .. 10:09, values 1, 2, 4, ..., 512.
	tsUpload(e, c.Admin, pid, "p", tsMinute, 1, 2, 4, 8, 16, 32, 64, 128, 256, 512)
	window := []string{"start", tsMinute(0).Format(time.RFC3339), "end", tsMinute(10).Format(time.RFC3339)}
	for _, tc := range []struct {
		agg  string
		want [2]float64
	}{
		{"", [2]float64{31.0 / 5, 992.0 / 5}}, // mean by default
		{"mean", [2]float64{31.0 / 5, 992.0 / 5}},
		{"min", [2]float64{1, 32}},
		{"max", [2]float64{16, 512}},
		{"median", [2]float64{4, 128}},
		{"count", [2]float64{5, 5}},
	} {
		q := append([]string{"samplerate", "5m"}, window...)
		key := tc.agg
		if tc.agg != "" {
			q = append(q, "aggregation", tc.agg)
		} else {
			key = "mean"
		}
		r := tsGet(e, c.Admin, pid, "p", q...)
		got := tsData(t, r, key)
		if len(got) != 2 || !got[0].Time.Equal(tsMinute(0)) || !got[1].Time.Equal(tsMinute(5)) ||
			!tsNear(got[0].Value, tc.want[0]) || !tsNear(got[1].Value, tc.want[1]) {
			t.Fatalf("aggregation %q: %v, want %v at 10:00 and 10:05", tc.agg, got, tc.want)
		}
		if r.JSON["samplerate"] != "300s" {
			t.Fatalf("samplerate field: %s", r.Body)
		}
	}
	// The hour interval starts on the full hour, not at start; start and
	// end cut inside it.
	got := tsData(t, tsGet(e, c.Admin, pid, "p", "samplerate", "1h", "aggregation", "count",
		"start", tsMinute(3).Format(time.RFC3339), "end", tsMinute(6).Format(time.RFC3339)), "count")
	if len(got) != 1 || !got[0].Time.Equal(tsT0) || got[0].Value != 3 {
		t.Fatalf("cut hour: %v", got)
	}
	// Without start and end the stored range is sampled; empty intervals
	// are left out.
	got = tsData(t, tsGet(e, c.Admin, pid, "p", "samplerate", "2m", "aggregation", "count"), "count")
	if len(got) != 5 || got[0].Value != 2 || !got[4].Time.Equal(tsMinute(8)) {
		t.Fatalf("2m over everything: %v", got)
	}
	tsUpload(e, c.Admin, pid, "p", func(int) time.Time { return tsT0.Add(3 * time.Hour) }, 7)
	got = tsData(t, tsGet(e, c.Admin, pid, "p", "samplerate", "1h", "aggregation", "count"), "count")
	if len(got) != 2 || got[0].Value != 10 || !got[1].Time.Equal(tsT0.Add(3*time.Hour)) || got[1].Value != 1 {
		t.Fatalf("gaps: %v", got)
	}
	// A day starts at midnight UTC.
	got = tsData(t, tsGet(e, c.Admin, pid, "p", "samplerate", "1d", "aggregation", "max", "start", "2024-03-01", "end", "2024-03-08"), "max")
	if len(got) != 1 || !got[0].Time.Equal(time.Date(2024, 3, 4, 0, 0, 0, 0, time.UTC)) || got[0].Value != 512 {
		t.Fatalf("daily: %v", got)
	}
}

// samplerate=auto: interval = range / N with the project's N; fewer than N
// values are answered unsampled.
func TestTimeseriesAutoSampling(t *testing.T) {
	e := newTestEnv(t)
	c := e.newCompany()
	pid, _ := e.newProject(c.Admin)
	values := make([]float64, 40)
	for i := range values {
		values[i] = float64(i)
	}
	tsUpload(e, c.Admin, pid, "a", tsMinute, values...)

	// Default N is 200: 40 values are fewer, so they come back as they are.
	r := tsGet(e, c.Admin, pid, "a", "samplerate", "auto")
	if got := tsData(t, r, "value"); len(got) != 40 || r.JSON["samplerate"] != nil {
		t.Fatalf("fewer than N: %d points: %s", len(got), r.Body)
	}

	e.do("PUT", fmt.Sprintf("/operator/projects/%d/settings", pid), bearer(testOperatorToken),
		map[string]any{"autosampling_n": 4}).want(t, 200)
	// 10:00 to 10:40 over 4: 10-minute intervals of 10 values each.
	r = tsGet(e, c.Admin, pid, "a", "samplerate", "auto", "start", tsMinute(0).Format(time.RFC3339), "end", tsMinute(40).Format(time.RFC3339))
	got := tsData(t, r, "mean")
	if r.JSON["samplerate"] != "600s" || len(got) != 4 {
		t.Fatalf("N=4 over 40 minutes: %s", r.Body)
	}
	for i, p := range got {
		if want := float64(10*i) + 4.5; !p.Time.Equal(tsMinute(10*i)) || p.Value != want {
			t.Fatalf("interval %d: %v, want %v", i, p, want)
		}
	}
	// Without start and end the stored range (10:00 to 10:39 inclusive)
	// is used: 39 minutes and a microsecond over 4, rounded up to whole
	// seconds.
	r = tsGet(e, c.Admin, pid, "a", "samplerate", "auto", "aggregation", "count")
	if r.want(t, 200).JSON["samplerate"] != "586s" {
		t.Fatalf("auto over the stored range: %s", r.Body)
	}
	total := 0.0
	for _, p := range tsData(t, r, "count") {
		total += p.Value
	}
	if total != 40 {
		t.Fatalf("auto intervals count %v values, want 40", total)
	}
	// A window with fewer than N values is not sampled.
	got = tsData(t, tsGet(e, c.Admin, pid, "a", "samplerate", "auto", "start", tsMinute(10).Format(time.RFC3339), "end", tsMinute(13).Format(time.RFC3339)), "value")
	tsWantMinutes(t, "3 values, N=4", got, 10, 10, 11, 12)

	// Auto intervals are counted from start: a start off the full minute
	// still gives N intervals (not N+1), the first of them at start.
	from := tsMinute(0).Add(30 * time.Second)
	r = tsGet(e, c.Admin, pid, "a", "samplerate", "auto", "aggregation", "count",
		"start", from.Format(time.RFC3339), "end", from.Add(36*time.Minute).Format(time.RFC3339))
	got = tsData(t, r, "count")
	if r.JSON["samplerate"] != "540s" || len(got) != 4 || !got[0].Time.Equal(from) || !got[3].Time.Equal(from.Add(27*time.Minute)) {
		t.Fatalf("N=4 from 10:00:30: %s", r.Body)
	}
}

// Bad parameters answer 400 naming the parameter, and no error shows SQL.
func TestTimeseriesBadParameters(t *testing.T) {
	e := newTestEnv(t)
	c := e.newCompany()
	pid, _ := e.newProject(c.Admin)
	tsUpload(e, c.Admin, pid, "p", tsMinute, 1, 2, 3)
	for _, tc := range []struct {
		query []string
		names string
	}{
		{[]string{"max", "-1"}, "max"}, {[]string{"max", "ten"}, "max"},
		{[]string{"max", "99999999999"}, "max"}, {[]string{"start", "yesterday"}, "start"},
		{[]string{"start", "2024-13-01"}, "start"}, {[]string{"end", "2024-03-04T25:00:00Z"}, "end"},
		{[]string{"start", "2024-03-05", "end", "2024-03-04"}, "start"}, {[]string{"start", "2024-03-04", "end", "2024-03-04"}, "start"},
		{[]string{"samplerate", "fast"}, "samplerate"}, {[]string{"samplerate", "10"}, "samplerate"},
		{[]string{"samplerate", "1.5s"}, "samplerate"}, {[]string{"samplerate", "1w"}, "samplerate"},
		{[]string{"samplerate", "4000d"}, "samplerate"}, {[]string{"samplerate", "1s", "start", "2000-01-01", "end", "2024-01-01"}, "samplerate"},
		{[]string{"samplerate", "1h", "aggregation", "sum"}, "aggregation"}, {[]string{"aggregation", "max"}, "samplerate"},
		{[]string{"dataPointID", ""}, "dataPointID"}, {[]string{"dataPointID", `a\b`}, "dataPointID"},
		{[]string{"project_id", "x"}, "project_id"}, {[]string{"project_id", ""}, "project_id"},
	} {
		r := tsGet(e, c.Admin, pid, "p", tc.query...).wantError(t, 400)
		msg := r.JSON["error"].(string)
		if !strings.Contains(msg, tc.names) {
			t.Fatalf("%v: error does not name %s: %s", tc.query, tc.names, msg)
		}
		for _, leak := range []string{"SELECT", "observations", "SQLSTATE", "pgx", "timestamptz"} {
			if strings.Contains(msg, leak) {
				t.Fatalf("%v: error leaks %q: %s", tc.query, leak, msg)
			}
		}
	}
}

// 404 for an unknown datapoint in a permitted project; 403 for another
// company's project, a missing endpoint grant, or a TagAuth without read.
func TestTimeseriesAccess(t *testing.T) {
	e := newTestEnv(t)
	c := e.newCompany()
	pid, _ := e.newProject(c.Admin)
	tsUpload(e, c.Admin, pid, "sensor-1", tsMinute, 1)
	tsUpload(e, c.Admin, pid, "secret-1", tsMinute, 2)
	tsGet(e, c.Admin, pid, "sensor-9").wantError(t, 404)
	tsGet(e, nil, pid, "sensor-1").wantError(t, 401)

	other := e.newCompany()
	otherPID, _ := e.newProject(other.Admin)
	tsGet(e, other.Admin, pid, "sensor-1").wantError(t, 403)
	tsGet(e, c.Admin, otherPID, "sensor-1").wantError(t, 403)
	tsGet(e, c.Admin, 999999, "sensor-1").wantError(t, 403)

	read := e.endpointID("GET", "/v2/datapoint/timeseries")
	// No grant for the endpoint.
	u0, uid0 := e.newUser(c)
	rbAssignProjectRole(e, c.Admin, pid, rbCreateProjectRole(e, c.Admin, pid, []int32{e.endpointID("GET", "/v2/project/{project_id}")},
		rbTag("name", "*", true, false)), uid0)
	r := tsGet(e, u0, pid, "sensor-1").wantError(t, 403)
	if !strings.Contains(r.JSON["error"].(string), "/v2/datapoint/timeseries") {
		t.Fatalf("403 does not name the endpoint: %s", r.Body)
	}
	// The endpoint, but TagAuths for sensor* only, one of them write-only.
	u, uid := e.newUser(c)
	rbAssignProjectRole(e, c.Admin, pid, rbCreateProjectRole(e, c.Admin, pid, []int32{read},
		rbTag("name", "sensor*", true, false), rbTag("name", "secret*", false, true)), uid)
	if got := tsData(t, tsGet(e, u, pid, "sensor-1"), "value"); len(got) != 1 || got[0].Value != 1 {
		t.Fatalf("readable datapoint: %v", got)
	}
	tsGet(e, u, pid, "secret-1").wantError(t, 403)
	tsGet(e, u, pid, "sensor-9").wantError(t, 404)
	// An unknown datapoint the user could not read anyway: 403, so
	// existence does not leak.
	tsGet(e, u, pid, "secret-9").wantError(t, 403)
	// The role is of this project only.
	tsGet(e, u, otherPID, "sensor-1").wantError(t, 403)
}
