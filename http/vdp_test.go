package http

import (
	"fmt"
	"net/url"
	"strings"
	"testing"
	"time"
)

func vdpPath(pid int64, suffix string, q ...string) string {
	v := url.Values{}
	for i := 0; i+1 < len(q); i += 2 {
		v.Set(q[i], q[i+1])
	}
	return fmt.Sprintf("/v2/project/%d/virtual_datapoint%s?%s", pid, suffix, v.Encode())
}

func formulaConfig(formula string, pins map[string]string) map[string]any {
	ps := map[string]any{}
	for name, src := range pins {
		ps[name] = map[string]any{"dataPointID": src}
	}
	return map[string]any{"pins": ps, "parameters": map[string]any{"formula": formula}}
}

func TestVDPCreateFillsDefaultsAndLogs(t *testing.T) {
	e := newTestEnv(t)
	c := e.newCompany()
	pid, _ := e.newProject(c.Admin)
	r := e.do("POST", vdpPath(pid, "", "dataPointID", "sum", "type", "formula", "description", "a sum"), c.Admin,
		map[string]any{"pins": map[string]any{"P1": map[string]any{"dataPointID": "a"},
			"P2": map[string]any{"dataPointID": "b", "data_range": map[string]any{"count": "3"}, "aggregate": "mean"}},
			"parameters": map[string]any{"formula": "P1 + P2;"}}).want(t, 200)
	res := r.resource(t)
	if res["status"] != "Ready to start" || res["dataPointID"] != "sum" || res["description"] != "a sum" {
		t.Fatalf("created: %s", r.Body)
	}
	p1 := res["pins"].(map[string]any)["P1"].(map[string]any)
	if p1["aggregate"] != "max" || p1["trigger"] != "every_value" || p1["data_range"].(map[string]any)["count"] != float64(1) {
		t.Fatalf("defaults not filled in: %v", p1)
	}
	p2 := res["pins"].(map[string]any)["P2"].(map[string]any)
	if p2["data_range"].(map[string]any)["count"] != float64(3) || p2["aggregate"] != "mean" {
		t.Fatalf("given values not kept: %v", p2)
	}
	logs := res["logs"].([]any)
	if len(logs) != 2 || logs[0].(map[string]any)["status_code"] != float64(100) || logs[1].(map[string]any)["status_text"] != "Ready to start" ||
		logs[0].(map[string]any)["type"] != "status_change" {
		t.Fatalf("logs: %v", logs)
	}
	if ts, _ := logs[0].(map[string]any)["ts"].(string); len(ts) < 18 {
		t.Fatalf("ts must be unix nanoseconds as a string: %v", logs[0])
	}
	e.do("POST", vdpPath(pid, "", "dataPointID", "sum", "type", "formula"), c.Admin, formulaConfig("P1;", map[string]string{"P1": "a"})).wantError(t, 409)
}

// Anything invalid answers 400 naming the field, and creates nothing.
func TestVDPCreateRefusesBadConfigs(t *testing.T) {
	e := newTestEnv(t)
	c := e.newCompany()
	pid, _ := e.newProject(c.Admin)
	six := map[string]string{}
	for i := 1; i <= 6; i++ {
		six[fmt.Sprintf("P%d", i)] = "a"
	}
	tests := []struct {
		name, typ string
		body      any
		want      string
	}{
		{"unknown type", "magic", formulaConfig("P1;", map[string]string{"P1": "a"}), "type"},
		{"pin name", "formula", formulaConfig("P1;", map[string]string{"X1": "a"}), "X1"},
		{"six pins", "formula", formulaConfig("P1;", six), "5"},
		{"formula syntax", "formula", formulaConfig("((((;", map[string]string{"P1": "a"}), "formula"},
		{"unknown pin in formula", "formula", formulaConfig("P1 + P3;", map[string]string{"P1": "a"}), "P3"},
		{"no formula", "formula", map[string]any{"pins": map[string]any{"P1": map[string]any{"dataPointID": "a"}}}, "formula"},
		{"bad count", "formula", map[string]any{"pins": map[string]any{"P1": map[string]any{"dataPointID": "a", "data_range": map[string]any{"count": "abc"}}},
			"parameters": map[string]any{"formula": "P1;"}}, "config.pins.P1.data_range.count: "},
		{"two ranges", "formula", map[string]any{"pins": map[string]any{"P1": map[string]any{"dataPointID": "a", "data_range": map[string]any{"count": 3, "time": "5m"}}},
			"parameters": map[string]any{"formula": "P1;"}}, "config.pins.P1.data_range: give only one of count, time or start/end"},
		{"cron start without end", "formula", map[string]any{"pins": map[string]any{"P1": map[string]any{"dataPointID": "a", "data_range": map[string]any{"start": "0 * * * *"}}},
			"parameters": map[string]any{"formula": "P1;"}}, "config.pins.P1.data_range.end: is required"},
		{"bad aggregate", "formula", map[string]any{"pins": map[string]any{"P1": map[string]any{"dataPointID": "a", "aggregate": "mode"}},
			"parameters": map[string]any{"formula": "P1;"}}, "aggregate"},
		{"bad trigger", "formula", map[string]any{"pins": map[string]any{"P1": map[string]any{"dataPointID": "a", "trigger": "sometimes"}},
			"parameters": map[string]any{"formula": "P1;"}}, "trigger"},
		{"bad duration", "formula", map[string]any{"pins": map[string]any{"P1": map[string]any{"dataPointID": "a", "data_range": map[string]any{"time": "5 minutes"}}},
			"parameters": map[string]any{"formula": "P1;"}}, "time"},
		{"gradient pin", "gradient", formulaConfig("", map[string]string{"P1": "a"}), "P1"},
		{"humidity without temperature", "absolute_humidity", map[string]any{"pins": map[string]any{"relative_humidity": map[string]any{"dataPointID": "rh"}}}, "temperature"},
		{"missing source", "formula", map[string]any{"pins": map[string]any{"P1": map[string]any{}}, "parameters": map[string]any{"formula": "P1;"}}, "dataPointID"},
		{"loop", "formula", formulaConfig("P1;", map[string]string{"P1": "self"}), "self"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := e.do("POST", vdpPath(pid, "", "dataPointID", "self", "type", tt.typ), c.Admin, tt.body).wantError(t, 400)
			if !strings.Contains(r.JSON["error"].(string), tt.want) {
				t.Fatalf("error %q does not name %q", r.JSON["error"], tt.want)
			}
			wantNoVDPs(t, e, c.Admin, pid)
		})
	}
}

// A loop through another virtual datapoint is refused too.
func TestVDPLoopThroughAnotherIsRefused(t *testing.T) {
	e := newTestEnv(t)
	c := e.newCompany()
	pid, _ := e.newProject(c.Admin)
	e.do("POST", vdpPath(pid, "", "dataPointID", "A", "type", "formula"), c.Admin, formulaConfig("P1;", map[string]string{"P1": "B"})).want(t, 200)
	r := e.do("POST", vdpPath(pid, "", "dataPointID", "B", "type", "formula"), c.Admin, formulaConfig("P1 x 2;", map[string]string{"P1": "A"})).wantError(t, 400)
	if !strings.Contains(r.JSON["error"].(string), "A") {
		t.Fatalf("loop error: %s", r.Body)
	}
}

func TestVDPRunComputesAndLifecycle(t *testing.T) {
	e := newTestEnv(t)
	c := e.newCompany()
	pid, _ := e.newProject(c.Admin)
	e.do("POST", vdpPath(pid, "", "dataPointID", "sum", "type", "formula"), c.Admin,
		formulaConfig("a = P1 + P2; a x 2;", map[string]string{"P1": "a", "P2": "b"})).want(t, 200)
	r := e.do("POST", vdpPath(pid, "/run", "dataPointID", "sum", "run", "true"), c.Admin, nil).want(t, 200)
	if r.JSON["status"] != "Running" {
		t.Fatalf("after run=true: %s", r.Body)
	}
	logs := r.JSON["logs"].([]any)
	starting := logs[len(logs)-2].(map[string]any)
	if starting["status_code"] != float64(200) || !strings.Contains(starting["message"].(string), c.Admin.email) {
		t.Fatalf("the Starting log must name the requesting user: %v", logs)
	}
	upload := fmt.Sprintf("/v2/project/%d/timeseries", pid)
	at := time.Date(2026, 7, 1, 12, 0, 0, 0, time.UTC)
	e.do("POST", upload, c.Admin, map[string]any{"a": []map[string]any{{"time": at.Format(time.RFC3339), "value": 1}}}).want(t, 200)
	e.do("POST", upload, c.Admin, map[string]any{"b": []map[string]any{{"time": at.Add(time.Minute).Format(time.RFC3339), "value": 10}}}).want(t, 200)
	e.do("POST", upload, c.Admin, map[string]any{"a": []map[string]any{{"time": at.Add(2 * time.Minute).Format(time.RFC3339), "value": 5}}}).want(t, 200)
	// Outputs: none until both pins emitted; then (1+10)x2 at 12:01 and (5+10)x2 at 12:02.
	var body string
	for deadline := time.Now().Add(5 * time.Second); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		got := e.do("GET", fmt.Sprintf("/v2/datapoint/timeseries?project_id=%d&dataPointID=sum", pid), c.Admin, nil)
		body = string(got.Body)
		if got.Status == 200 && strings.Count(body, `"value"`) == 2 {
			break
		}
	}
	if !strings.Contains(body, `"2026-07-01T12:01:00Z","value":22`) || !strings.Contains(body, `"2026-07-01T12:02:00Z","value":30`) {
		st := e.do("GET", vdpPath(pid, "", "dataPointID", "sum"), c.Admin, nil)
		src := e.do("GET", fmt.Sprintf("/v2/datapoint/timeseries?project_id=%d&dataPointID=a", pid), c.Admin, nil)
		t.Fatalf("outputs: %s\nvdp: %s\nsource a: %s", body, st.Body, src.Body)
	}
	e.do("DELETE", vdpPath(pid, "", "dataPointID", "sum"), c.Admin, nil).wantError(t, 409)
	r = e.do("PUT", vdpPath(pid, "", "dataPointID", "sum"), c.Admin, map[string]any{"description": "doubled sum"}).want(t, 200)
	if r.JSON["status"] != "Running" || r.JSON["description"] != "doubled sum" {
		t.Fatalf("description update must keep the status: %s", r.Body)
	}
	list := e.do("GET", fmt.Sprintf("/v2/project/%d/virtual_datapoints?search=doubled&filter=status_code=202", pid), c.Admin, nil).want(t, 200)
	if list.JSON["meta"].(map[string]any)["total_items"] != float64(1) {
		t.Fatalf("list: %s", list.Body)
	}
	r = e.do("POST", vdpPath(pid, "/run", "dataPointID", "sum", "run", "false"), c.Admin, nil).want(t, 200)
	if r.JSON["status"] != "Stopped" {
		t.Fatalf("after run=false: %s", r.Body)
	}
	r = e.do("DELETE", vdpPath(pid, "", "dataPointID", "sum"), c.Admin, nil).want(t, 200)
	if r.JSON["status"] != "Deleting" {
		t.Fatalf("delete: %s", r.Body)
	}
	e.do("GET", vdpPath(pid, "", "dataPointID", "sum"), c.Admin, nil).wantError(t, 404)
}

// A calculation error (division by zero) emits nothing and adds one log
// entry, not one per value.
func TestVDPCalculationErrorIsLoggedOnce(t *testing.T) {
	e := newTestEnv(t)
	c := e.newCompany()
	pid, _ := e.newProject(c.Admin)
	e.do("POST", vdpPath(pid, "", "dataPointID", "ratio", "type", "formula"), c.Admin,
		formulaConfig("P1 / P2;", map[string]string{"P1": "num", "P2": "den"})).want(t, 200)
	e.do("POST", vdpPath(pid, "/run", "dataPointID", "ratio", "run", "true"), c.Admin, nil).want(t, 200)
	upload := fmt.Sprintf("/v2/project/%d/timeseries", pid)
	at := time.Date(2026, 7, 2, 0, 0, 0, 0, time.UTC)
	e.do("POST", upload, c.Admin, map[string]any{"num": []map[string]any{{"time": at.Format(time.RFC3339), "value": 1}}}).want(t, 200)
	for i := 1; i <= 3; i++ {
		e.do("POST", upload, c.Admin, map[string]any{"den": []map[string]any{{"time": at.Add(time.Duration(i) * time.Minute).Format(time.RFC3339), "value": 0}}}).want(t, 200)
	}
	var logs []any
	for deadline := time.Now().Add(5 * time.Second); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		r := e.do("GET", vdpPath(pid, "", "dataPointID", "ratio"), c.Admin, nil).want(t, 200)
		logs = r.JSON["logs"].([]any)
		if strings.Contains(string(r.Body), "calculation_error") {
			break
		}
	}
	errorsLogged := 0
	for _, l := range logs {
		m := l.(map[string]any)
		if m["type"] == "calculation_error" {
			errorsLogged++
			if !strings.Contains(m["message"].(string), "division by zero") || m["status_text"] != "Running" {
				t.Fatalf("log entry: %v", m)
			}
		}
	}
	if errorsLogged != 1 {
		t.Fatalf("%d calculation_error entries, want 1: %v", errorsLogged, logs)
	}
	got := e.do("GET", fmt.Sprintf("/v2/datapoint/timeseries?project_id=%d&dataPointID=ratio", pid), c.Admin, nil)
	if got.Status == 200 && strings.Contains(string(got.Body), `"value"`) {
		t.Fatalf("a failed calculation emitted: %s", got.Body)
	}
}

// readValues polls GET /v2/datapoint/timeseries until n values are there.
func (e *testEnv) readValues(a cred, pid int64, dp string, n int) string {
	e.t.Helper()
	var body string
	for deadline := time.Now().Add(5 * time.Second); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		r := e.do("GET", fmt.Sprintf("/v2/datapoint/timeseries?project_id=%d&dataPointID=%s", pid, url.QueryEscape(dp)), a, nil)
		body = string(r.Body)
		if r.Status == 200 && strings.Count(body, `"value"`) >= n {
			break
		}
	}
	return body
}

func TestVDPGradientAndHumidityEndToEnd(t *testing.T) {
	e := newTestEnv(t)
	c := e.newCompany()
	pid, _ := e.newProject(c.Admin)
	e.do("POST", vdpPath(pid, "", "dataPointID", "rate", "type", "gradient"), c.Admin, map[string]any{
		"pins": map[string]any{"input": map[string]any{"dataPointID": "meter"}}, "parameters": map[string]any{"factorization": 60}}).want(t, 200)
	e.do("POST", vdpPath(pid, "", "dataPointID", "x", "type", "absolute_humidity"), c.Admin, map[string]any{
		"pins":       map[string]any{"relative_humidity": map[string]any{"dataPointID": "rh"}, "temperature": map[string]any{"dataPointID": "temp"}},
		"parameters": map[string]any{"relative_humidity_unit": "percent"}}).want(t, 200)
	for _, dp := range []string{"rate", "x"} {
		e.do("POST", vdpPath(pid, "/run", "dataPointID", dp, "run", "true"), c.Admin, nil).want(t, 200)
	}
	upload := fmt.Sprintf("/v2/project/%d/timeseries", pid)
	at := time.Date(2026, 7, 3, 8, 0, 0, 0, time.UTC)
	point := func(min int, v float64) []map[string]any {
		return []map[string]any{{"time": at.Add(time.Duration(min) * time.Minute).Format(time.RFC3339), "value": v}}
	}
	e.do("POST", upload, c.Admin, map[string]any{"meter": point(0, 100)}).want(t, 200)
	e.do("POST", upload, c.Admin, map[string]any{"meter": point(2, 106)}).want(t, 200)
	// (106 - 100) / 120 s x 60 = 3 per minute, at the second observation.
	if got := e.readValues(c.Admin, pid, "rate", 1); !strings.Contains(got, `"time":"2026-07-03T08:02:00Z","value":3}`) {
		t.Fatalf("gradient: %s", got)
	}
	e.do("POST", upload, c.Admin, map[string]any{"temp": point(0, 20)}).want(t, 200)
	e.do("POST", upload, c.Admin, map[string]any{"rh": point(1, 50)}).want(t, 200)
	// 20 °C, 50 %, 101325 Pa: 7.24 g/kg (Magnus, decisions.md 5).
	got := e.readValues(c.Admin, pid, "x", 1)
	if !strings.Contains(got, `"time":"2026-07-03T08:01:00Z","value":7.24`) {
		t.Fatalf("absolute humidity: %s", got)
	}
}

// Data after the config object is refused like PUT refuses it, and
// creates nothing.
func TestVDPCreateRefusesTrailingData(t *testing.T) {
	e := newTestEnv(t)
	c := e.newCompany()
	pid, _ := e.newProject(c.Admin)
	const cfg = `{"pins":{"P1":{"dataPointID":"a"}},"parameters":{"formula":"P1;"}}`
	for name, body := range map[string]string{
		"text":          cfg + ` trailing`,
		"second object": cfg + cfg,
		"closing brace": cfg + `}`,
		"closing array": cfg + `]`,
	} {
		t.Run(name, func(t *testing.T) {
			r := e.do("POST", vdpPath(pid, "", "dataPointID", "out", "type", "formula"), c.Admin, []byte(body)).wantError(t, 400)
			if msg := r.JSON["error"].(string); !strings.Contains(msg, "unexpected data after the object") {
				t.Fatalf("error %q", msg)
			}
			list := e.do("GET", fmt.Sprintf("/v2/project/%d/virtual_datapoints", pid), c.Admin, nil).want(t, 200)
			if n := list.JSON["meta"].(map[string]any)["total_items"]; n != float64(0) {
				t.Fatalf("a refused body created something: %s", list.Body)
			}
		})
	}
	e.do("POST", vdpPath(pid, "", "dataPointID", "out", "type", "formula"), c.Admin, []byte(cfg+" \n\t")).want(t, 200)
}

// createRefused posts a config that must be refused with a 400 naming
// want, in the client's terms, and checks that nothing was created.
func createRefused(t *testing.T, e *testEnv, as cred, pid int64, typ string, body []byte, want string) {
	t.Helper()
	r := e.do("POST", vdpPath(pid, "", "dataPointID", "out", "type", typ), as, body).wantError(t, 400)
	msg := r.JSON["error"].(string)
	if !strings.Contains(msg, want) {
		t.Fatalf("error %q does not say %q", msg, want)
	}
	for _, internal := range []string{"Go struct", "map[", "struct {", "rawConfig", "json:", "json."} {
		if strings.Contains(msg, internal) {
			t.Fatalf("error %q shows Go internals (%s)", msg, internal)
		}
	}
	wantNoVDPs(t, e, as, pid)
}

// wantNoVDPs checks that a refused create left the project without
// virtual datapoints.
func wantNoVDPs(t *testing.T, e *testEnv, as cred, pid int64) {
	t.Helper()
	list := e.do("GET", fmt.Sprintf("/v2/project/%d/virtual_datapoints", pid), as, nil).want(t, 200)
	if n := list.JSON["meta"].(map[string]any)["total_items"]; n != float64(0) {
		t.Fatalf("a refused config created something: %s", list.Body)
	}
}

// A value of the wrong JSON type is a 400 naming the field and what it
// must be, not the Go types behind it.
func TestVDPCreateRefusesWrongShapes(t *testing.T) {
	e := newTestEnv(t)
	c := e.newCompany()
	pid, _ := e.newProject(c.Admin)
	const formula = `"parameters":{"formula":"P1;"}`
	for _, tt := range []struct{ name, body, want string }{
		{"pins as an array", `{"pins":[],` + formula + `}`, "config.pins: want an object, got an array"},
		{"a pin as a string", `{"pins":{"P1":"a"},` + formula + `}`, "config.pins.P1: want an object, got a string"},
		{"data_range as a number", `{"pins":{"P1":{"dataPointID":"a","data_range":5}},` + formula + `}`, "config.pins.P1.data_range: want an object, got a number"},
		{"parameters as a string", `{"pins":{"P1":{"dataPointID":"a"}},"parameters":"P1;"}`, "config.parameters: want an object, got a string"},
		{"the config as an array", `[{"pins":{"P1":{"dataPointID":"a"}}}]`, "config: want an object, got an array"},
		{"dataPointID as a number", `{"pins":{"P1":{"dataPointID":5}},` + formula + `}`, "config.pins.P1.dataPointID: want a string, got a number"},
		{"aggregate as a boolean", `{"pins":{"P1":{"dataPointID":"a","aggregate":true}},` + formula + `}`, "config.pins.P1.aggregate: want a string, got a boolean"},
		{"time as an object", `{"pins":{"P1":{"dataPointID":"a","data_range":{"time":{}}}},` + formula + `}`, "config.pins.P1.data_range.time: want a string, got an object"},
	} {
		t.Run(tt.name, func(t *testing.T) { createRefused(t, e, c.Admin, pid, "formula", []byte(tt.body), tt.want) })
	}
}

// A key the config does not know inside a pin, a data_range or the
// parameters is a typo that would silently change the calculation: 400.
// Beside pins and parameters, the members of the GET answer are ignored
// (clients send back what they got); any other member is refused.
func TestVDPCreateRefusesUnknownKeys(t *testing.T) {
	e := newTestEnv(t)
	c := e.newCompany()
	pid, _ := e.newProject(c.Admin)
	const formula = `"parameters":{"formula":"P1;"}`
	for _, tt := range []struct{ name, typ, body, want string }{
		{"misspelt pin keys", "formula", `{"pins":{"P1":{"dataPointID":"a","agregate":"min","data_rang":{"count":5}}},` + formula + `}`,
			"config.pins.P1.agregate: unknown field"},
		{"a pin key in another case", "formula", `{"pins":{"P1":{"DataPointID":"a"}},` + formula + `}`, "config.pins.P1.DataPointID: unknown field"},
		{"in data_range", "formula", `{"pins":{"P1":{"dataPointID":"a","data_range":{"count":5,"cnt":3}}},` + formula + `}`,
			"config.pins.P1.data_range.cnt: unknown field"},
		{"formula parameter", "formula", `{"pins":{"P1":{"dataPointID":"a"}},"parameters":{"formula":"P1;","formule":"P1 x 2;"}}`,
			"config.parameters.formule: unknown field"},
		{"gradient parameter", "gradient", `{"pins":{"input":{"dataPointID":"a"}},"parameters":{"factorisation":5}}`,
			"config.parameters.factorisation: unknown field"},
		{"another type's parameter", "gradient", `{"pins":{"input":{"dataPointID":"a"}},"parameters":{"formula":"P1;"}}`,
			"config.parameters.formula: unknown field"},
		{"humidity parameter", "absolute_humidity", `{"pins":{"relative_humidity":{"dataPointID":"rh"},"temperature":{"dataPointID":"t"}},"parameters":{"pressure_units":"hPa"}}`,
			"config.parameters.pressure_units: unknown field"},
	} {
		t.Run(tt.name, func(t *testing.T) { createRefused(t, e, c.Admin, pid, tt.typ, []byte(tt.body), tt.want) })
	}
	createRefused(t, e, c.Admin, pid, "formula", []byte(`{"pins":{"P1":{"dataPointID":"a"}},`+formula+`,"type":"formula","comment":"not a member"}`),
		`unknown field "comment"`)
	e.do("POST", vdpPath(pid, "", "dataPointID", "out", "type", "formula"), c.Admin,
		[]byte(`{"pins":{"P1":{"dataPointID":"a"}},`+formula+`,"type":"formula","status":"Running","logs":[]}`)).want(t, 200)
}

// What GET answers (defaults filled in) is a valid config: posting it,
// whole or as {pins, parameters}, creates the same configuration.
func TestVDPConfigRoundTrip(t *testing.T) {
	e := newTestEnv(t)
	c := e.newCompany()
	pid, _ := e.newProject(c.Admin)
	for typ, cfg := range map[string]map[string]any{
		"formula": {"pins": map[string]any{
			"P1": map[string]any{"dataPointID": "a", "data_range": map[string]any{"count": "3"}},
			"P2": map[string]any{"dataPointID": "b", "data_range": map[string]any{"time": "1h"}, "aggregate": "mean", "trigger": "every_minute"},
			"P3": map[string]any{"dataPointID": "c", "data_range": map[string]any{"start": "0 8 * * *", "end": "0 18 * * *"}, "aggregate": "integral"},
		}, "parameters": map[string]any{"formula": "P1 + P2 + P3;"}},
		"gradient": {"pins": map[string]any{"input": map[string]any{"dataPointID": "meter"}}, "parameters": map[string]any{"factorization": 60}},
		"absolute_humidity": {"pins": map[string]any{"relative_humidity": map[string]any{"dataPointID": "rh"},
			"temperature": map[string]any{"dataPointID": "t"}, "pressure": map[string]any{"dataPointID": "p"}},
			"parameters": map[string]any{"relative_humidity_unit": "percent"}},
	} {
		t.Run(typ, func(t *testing.T) {
			orig := e.do("POST", vdpPath(pid, "", "dataPointID", typ, "type", typ), c.Admin, cfg).want(t, 200).resource(t)
			got := e.do("GET", vdpPath(pid, "", "dataPointID", typ), c.Admin, nil).want(t, 200).JSON
			for i, body := range []any{got, map[string]any{"pins": got["pins"], "parameters": got["parameters"]}} {
				id := fmt.Sprintf("%s_again%d", typ, i)
				again := e.do("POST", vdpPath(pid, "", "dataPointID", id, "type", typ), c.Admin, body).want(t, 200).resource(t)
				for _, k := range []string{"pins", "parameters"} {
					if a, b := fmt.Sprint(again[k]), fmt.Sprint(orig[k]); a != b {
						t.Fatalf("%s after the round trip: %s, was %s", k, a, b)
					}
				}
				// The stored form starts.
				if r := e.do("POST", vdpPath(pid, "/run", "dataPointID", id, "run", "true"), c.Admin, nil).want(t, 200); r.JSON["status"] != "Running" {
					t.Fatalf("start: %s", r.Body)
				}
			}
		})
	}
}
