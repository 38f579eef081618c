package http

import (
	"bufio"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"net"
	nethttp "net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/openbdp/bdp/pipeline/formula"
	"github.com/openbdp/bdp/pipeline/window"
)

// Bounds on what a request may carry: text without control characters,
// documented lengths, small bodies where bodies are small, numbers the
// columns hold, and error messages that do not echo a large input.

type boundsCase struct {
	name         string
	method, path string
	as           cred   // nil: the company admin
	body         any    // nil, []byte verbatim, or a value sent as JSON
	contentType  string // for a []byte body; JSON otherwise
	status       int
	want         string // in the error message
}

func (e *testEnv) doCase(tc boundsCase, admin cred) resp {
	e.t.Helper()
	as := tc.as
	if as == nil {
		as = admin
	}
	if tc.contentType == "" {
		return e.do(tc.method, tc.path, as, tc.body)
	}
	req, err := nethttp.NewRequest(tc.method, e.base+tc.path, strings.NewReader(string(tc.body.([]byte))))
	if err != nil {
		e.t.Fatal(err)
	}
	req.Header.Set("Content-Type", tc.contentType)
	as.apply(req)
	res, err := nethttp.DefaultClient.Do(req)
	if err != nil {
		e.t.Fatal(err)
	}
	defer res.Body.Close()
	r := resp{Status: res.StatusCode, Header: res.Header}
	r.Body, _ = io.ReadAll(res.Body)
	_ = json.Unmarshal(r.Body, &r.JSON)
	return r
}

func runBoundsCases(t *testing.T, e *testEnv, admin cred, cases []boundsCase) {
	t.Helper()
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			r := e.doCase(tc, admin)
			if r.Status != tc.status {
				t.Fatalf("%s %s: expected %d, got %d: %s", tc.method, tc.path, tc.status, r.Status, r.Body)
			}
			if tc.status >= 400 {
				r.wantError(t, tc.status)
				biCheckClean(t, r)
				if msg, _ := r.JSON["error"].(string); !strings.Contains(msg, tc.want) {
					t.Fatalf("error %q does not say %q", msg, tc.want)
				}
			}
		})
	}
}

// Every string input is checked for control characters before it reaches
// PostgreSQL, whichever way it comes: query, path, JSON (keys too), form.
func TestControlCharactersAreRefused(t *testing.T) {
	e := newTestEnv(t)
	c := e.newCompany()
	pid, _ := e.newProject(c.Admin)
	p := "/v2/project/" + itoa(pid)
	tsUpload(e, c.Admin, pid, "src", tsMinute, 1)
	vdpBody := func(src string) map[string]any { return formulaConfig("P1", map[string]string{"P1": src}) }
	cases := []boundsCase{
		{name: "NUL in search", method: "GET", path: p + "/virtual_datapoints?search=a%00b", status: 400, want: "U+0000"},
		{name: "C1 in search", method: "GET", path: p + "/virtual_datapoints?search=%C2%85", status: 400, want: "U+0085"},
		{name: "DEL in search", method: "GET", path: p + "/virtual_datapoints?search=%7F", status: 400, want: "U+007F"},
		{name: "invalid UTF-8 in search", method: "GET", path: p + "/virtual_datapoints?search=%FF", status: 400, want: "UTF-8"},
		{name: "tab in search is text", method: "GET", path: p + "/virtual_datapoints?search=a%09b", status: 200},
		{name: "NUL in a parameter name", method: "GET", path: p + "/virtual_datapoints?a%00=1", status: 400, want: "U+0000"},
		{name: "C1 in dataPointID (query)", method: "GET", path: p + "/virtual_datapoint?dataPointID=a%C2%80", status: 400, want: "U+0080"},
		{name: "tab in dataPointID (query)", method: "GET", path: p + "/virtual_datapoint?dataPointID=a%09", status: 400, want: "control character"},
		{name: "NUL in export dataPointID", method: "GET", path: "/v2/datapoint/timeseries?project_id=" + itoa(pid) + "&dataPointID=src%00", status: 400, want: "U+0000"},
		{name: "NUL in VDP description (query)", method: "POST", path: vdpPath(pid, "", "dataPointID", "out", "type", "formula", "description", "a\x00"),
			body: vdpBody("src"), status: 400, want: "U+0000"},
		{name: "C1 in a pin's dataPointID", method: "POST", path: vdpPath(pid, "", "dataPointID", "out", "type", "formula"),
			body: vdpBody("src\u009b"), status: 400, want: "U+009B"},
		{name: "C1 in the path", method: "PUT", path: "/operator/projects/" + itoa(pid) + "/datapoints/a%C2%85b/tags", as: opTok,
			body: []map[string]any{{"key": "units", "value": "K"}}, status: 400, want: "U+0085"},
		{name: "NUL in the path", method: "PUT", path: "/operator/projects/" + itoa(pid) + "/datapoints/a%00b/tags", as: opTok,
			body: []map[string]any{{"key": "units", "value": "K"}}, status: 400, want: "U+0000"},
		{name: "C1 in an upload's dataPointID", method: "POST", path: p + "/timeseries",
			body: map[string]any{"a\u0085": []map[string]any{{"time": "2024-01-01T00:00:00Z", "value": 1}}}, status: 400, want: "U+0085"},
		{name: "NUL in an upload's dataPointID", method: "POST", path: p + "/timeseries",
			body: map[string]any{"a\x00": []map[string]any{{"time": "2024-01-01T00:00:00Z", "value": 1}}}, status: 400, want: "U+0000"},
		{name: "C1 in a description", method: "PUT", path: p, body: map[string]any{"description": "a\u009fb"}, status: 400, want: "U+009F"},
		{name: "raw DEL in a description", method: "PUT", path: p, body: []byte("{\"description\": \"a\x7fb\"}"),
			contentType: "application/json", status: 400, want: "U+007F"},
		{name: "escaped NUL in a key", method: "PUT", path: p, body: []byte(`{"name\u0000": "x"}`),
			contentType: "application/json", status: 400, want: "U+0000"},
		{name: "escaped backslash then u0000 is text", method: "PUT", path: p, body: []byte(`{"description": "a\\u0000"}`),
			contentType: "application/json", status: 200},
		{name: "line breaks and tabs in a description", method: "PUT", path: p, body: map[string]any{"description": "one\r\ntwo\tthree"}, status: 200},
		{name: "NUL in a tag value", method: "PUT", path: "/operator/projects/" + itoa(pid) + "/datapoints/src/tags", as: opTok,
			body: []map[string]any{{"key": "units", "value": "K\x00"}}, status: 400, want: "U+0000"},
		{name: "NUL in the token form", method: "POST", path: "/v2/auth/token", as: noCred{},
			body: []byte("grant_type=password&username=a%00b&password=x"), contentType: "application/x-www-form-urlencoded", status: 400, want: "U+0000"},
	}
	runBoundsCases(t, e, c.Admin, cases)
	// Nothing was stored under a refused name.
	r := e.do("GET", p+"/virtual_datapoints", c.Admin, nil).want(t, 200)
	if n := num(t, r.JSON, "meta.total_items"); n != 0 {
		t.Fatalf("a refused virtual datapoint was stored: %s", r.Body)
	}
}

// noCred sends no Authorization header.
type noCred struct{}

func (noCred) apply(*nethttp.Request) {}

// Free text has documented limits, in characters, enforced and shown in
// the OpenAPI document as maxLength.
func TestTextLengthLimits(t *testing.T) {
	e := newTestEnv(t)
	c := e.newCompany()
	pid, _ := e.newProject(c.Admin)
	p := "/v2/project/" + itoa(pid)
	tsUpload(e, c.Admin, pid, "src", tsMinute, 1)
	long := func(n int) string { return strings.Repeat("ü", n) } // 2 bytes each: limits count characters
	// The largest formula: P1 + 1 padded with spaces to formula.MaxLength.
	largest := "P1" + strings.Repeat(" ", formula.MaxLength-6) + " + 1"
	cronPin := func(start string) map[string]any {
		return map[string]any{"pins": map[string]any{"P1": map[string]any{"dataPointID": "src",
			"data_range": map[string]any{"start": start, "end": "0 * * * *"}}}, "parameters": map[string]any{"formula": "P1"}}
	}
	create := func(dp string) string { return vdpPath(pid, "", "dataPointID", dp, "type", "formula") }
	cases := []boundsCase{
		{name: "project name of 201", method: "POST", path: "/v2/company/project", body: map[string]any{"name": long(201)}, status: 400, want: "at most 200 characters"},
		{name: "project name of 200", method: "POST", path: "/v2/company/project", body: map[string]any{"name": long(200)}, status: 200},
		{name: "description of 2001", method: "PUT", path: p, body: map[string]any{"description": long(2001)}, status: 400, want: "at most 2000"},
		{name: "email of 255", method: "POST", path: "/v2/company/user", body: map[string]any{"company_id": c.ID, "firstName": "F",
			"lastName": "L", "email": strings.Repeat("a", 243) + "@example.com", "password": "long-enough"}, status: 400, want: "at most 254"},
		{name: "TagAuth value of 1025", method: "POST", path: p + "/role", body: map[string]any{"name": "r", "authed_endpoints": []int{0},
			"authed_tags": []map[string]any{{"key": "name", "value": long(1025), "read": true}}}, status: 400, want: "authed_tags[0].value: at most 1024"},
		{name: "search of 2001", method: "GET", path: p + "/virtual_datapoints?search=" + url.QueryEscape(strings.Repeat("a", 2001)), status: 400, want: "at most 2000"},
		{name: "formula one over", method: "POST", path: create("f1"), body: formulaConfig(largest+" ", map[string]string{"P1": "src"}),
			status: 400, want: fmt.Sprintf("at most %d", formula.MaxLength)},
		{name: "largest formula", method: "POST", path: create("f2"), body: formulaConfig(largest, map[string]string{"P1": "src"}), status: 200},
		{name: "cron expression one over", method: "POST", path: create("f3"), body: cronPin("0 * * * *" + strings.Repeat(" ", window.MaxCronLength-8)),
			status: 400, want: fmt.Sprintf("at most %d characters", window.MaxCronLength)},
	}
	runBoundsCases(t, e, c.Admin, cases)

	var doc struct {
		Paths map[string]map[string]struct {
			Parameters []struct {
				Name   string
				Schema map[string]any
			}
			RequestBody struct {
				Description string
				Content     map[string]struct{ Schema map[string]any }
			}
		}
	}
	if err := json.Unmarshal(e.do("GET", "/v2/openapi.json", nil, nil).want(t, 200).Body, &doc); err != nil {
		t.Fatal(err)
	}
	body := func(path, method string) map[string]any {
		return doc.Paths[path][method].RequestBody.Content["application/json"].Schema
	}
	at := func(m map[string]any, keys ...string) any {
		var v any = m
		for _, k := range keys {
			v = v.(map[string]any)[k]
		}
		return v
	}
	for _, c := range []struct {
		what string
		got  any
		want float64
	}{
		{"project name", at(body("/v2/company/project", "post"), "properties", "name", "maxLength"), 200},
		{"project description", at(body("/v2/project/{project_id}", "put"), "properties", "description", "maxLength"), 2000},
		{"cron start", at(body("/v2/project/{project_id}/virtual_datapoint", "post"), "properties", "pins", "additionalProperties",
			"properties", "data_range", "properties", "start", "maxLength"), window.MaxCronLength},
		{"duration", at(body("/v2/project/{project_id}/virtual_datapoint", "post"), "properties", "pins", "additionalProperties",
			"properties", "data_range", "properties", "time", "maxLength"), window.MaxDurationLength},
	} {
		if c.got != c.want {
			t.Errorf("OpenAPI maxLength of %s: %v, want %v", c.what, c.got, c.want)
		}
	}
	if d := doc.Paths["/v2/project/{project_id}/virtual_datapoint"]["post"].RequestBody.Description; d != "at most 262144 bytes" {
		t.Errorf("OpenAPI body limit of the VDP create: %q", d)
	}
	if d := at(body("/v2/project/{project_id}/virtual_datapoint", "post"), "properties", "parameters", "description").(string); !strings.Contains(d, "at most 4000 characters") {
		t.Errorf("OpenAPI does not document the formula limit: %q", d)
	}
}

// A body is read only for a caller who may use the route, and only up to
// the route's own limit: small for everything but the JSON upload.
func TestBodyReadAfterPermissionWithinRouteLimit(t *testing.T) {
	e := newTestEnv(t)
	c := e.newCompany()
	pid, _ := e.newProject(c.Admin)
	p := "/v2/project/" + itoa(pid)
	reader, _ := e.newUser(c) // no role in the project
	// sourceReader may call every route but write no datapoint.
	sourceReader, uid := e.newUser(c)
	rr := e.do("POST", p+"/role", c.Admin, map[string]any{"name": "src-reader", "authed_endpoints": []int{0},
		"authed_tags": []map[string]any{{"key": "name", "value": "src", "read": true}}}).want(t, 200)
	e.do("POST", fmt.Sprintf("%s/role/%d/user/%d", p, num(t, rr.JSON, "resource.id"), uid), c.Admin, nil).want(t, 200)
	tsUpload(e, c.Admin, pid, "src", tsMinute, 1)
	padded := func(obj string, size int) []byte { // a valid object padded with spaces inside to size bytes
		return []byte(obj[:len(obj)-1] + strings.Repeat(" ", size-len(obj)) + "}")
	}
	upload := func(size int) []byte {
		var b strings.Builder
		b.WriteString(`{"bulk":[`)
		for i := 0; b.Len() < size-100; i++ {
			if i > 0 {
				b.WriteByte(',')
			}
			fmt.Fprintf(&b, `{"time":"%s","value":%d}`, tsMinute(i).Format(time.RFC3339), i)
		}
		b.WriteString("]}")
		return padded(b.String(), size)
	}
	over := smallBodyLimit + 1
	cases := []boundsCase{
		{name: "over the small limit", method: "POST", path: "/v2/company/project", body: padded(`{"name":"big"}`, over),
			contentType: "application/json", status: 413, want: "at most 262144 bytes"},
		{name: "at the small limit", method: "POST", path: "/v2/company/project", body: padded(`{"name":"at-limit"}`, smallBodyLimit),
			contentType: "application/json", status: 200},
		{name: "upload beyond the small limit", method: "POST", path: p + "/timeseries", body: upload(4 << 20),
			contentType: "application/json", status: 200},
		{name: "wrong password before an oversized body", method: "POST", path: "/v2/company/project", as: basic{email: c.Admin.email, password: "wrong-password"},
			body: padded(`{"name":"big"}`, 2*over), contentType: "application/json", status: 401, want: "wrong"},
		{name: "no grant before an oversized body", method: "POST", path: p + "/role", as: reader,
			body: padded(`{"name":"big"}`, 2*over), contentType: "application/json", status: 403, want: "unauthorized"},
		{name: "no grant on the output before the formula is parsed", method: "POST", path: vdpPath(pid, "", "dataPointID", "out", "type", "formula"), as: sourceReader,
			body: formulaConfig(strings.Repeat("P1+", formula.MaxLength), map[string]string{"P1": "src"}), status: 403, want: "no write access"},
	}
	runBoundsCases(t, e, c.Admin, cases)
	if r := e.do("GET", "/v2/company", c.Admin, nil).want(t, 200); strings.Contains(string(r.Body), `"big"`) {
		t.Fatalf("an oversized or refused body created a project: %s", r.Body)
	}
}

// An error quotes at most about 100 characters of what it refuses.
func TestErrorsDoNotEchoLargeInput(t *testing.T) {
	e := newTestEnv(t)
	c := e.newCompany()
	pid, _ := e.newProject(c.Admin)
	p := "/v2/project/" + itoa(pid)
	huge := strings.Repeat("x", 5<<20)
	pin := func(field, value string) map[string]any {
		return map[string]any{"pins": map[string]any{"P1": map[string]any{"dataPointID": "src", field: value}},
			"parameters": map[string]any{"formula": "P1"}}
	}
	cases := []boundsCase{
		{name: "a time of 5 MB", method: "POST", path: p + "/timeseries",
			body: map[string]any{"dp": []map[string]any{{"time": huge, "value": 1}}}, status: 400, want: "is not RFC 3339"},
		{name: "a dataPointID over its limit", method: "POST", path: p + "/timeseries",
			body: map[string]any{huge[:600]: []map[string]any{{"time": "2024-01-01T00:00:00Z", "value": 1}}}, status: 400, want: "512 bytes"},
		{name: "an aggregate of 200 KB", method: "POST", path: vdpPath(pid, "", "dataPointID", "out", "type", "formula"),
			body: pin("aggregate", huge[:200<<10]), status: 400, want: "aggregate"},
		{name: "a type of 7 KB", method: "POST", path: vdpPath(pid, "", "dataPointID", "out", "type", huge[:7<<10]),
			body: pin("trigger", "every_value"), status: 400, want: "type must be"},
		{name: "an export start of 7 KB", method: "GET", path: "/v2/datapoint/timeseries?project_id=" + itoa(pid) + "&dataPointID=src&start=" + huge[:7<<10],
			status: 400, want: "start"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			r := e.doCase(tc, c.Admin).wantError(t, tc.status)
			msg, _ := r.JSON["error"].(string)
			if !strings.Contains(msg, tc.want) || strings.Contains(msg, strings.Repeat("x", maxQuoted+1)) || len([]rune(msg)) > maxMessage+1 {
				t.Fatalf("%d characters: %.300s", len([]rune(msg)), msg)
			}
		})
	}
}

func TestClipMessage(t *testing.T) {
	long := strings.Repeat("é", 150)
	for _, tc := range []struct{ in, want string }{
		{`short "as is"`, `short "as is"`},
		{fmt.Sprintf("value %q is bad", long), fmt.Sprintf("value %q is bad", strings.Repeat("é", 100)+"…")},
		{fmt.Sprintf("a %q and %q", long, "b"), fmt.Sprintf("a %q and %q", strings.Repeat("é", 100)+"…", "b")},
		{"x" + strings.Repeat("y", 1000), "x" + strings.Repeat("y", maxMessage-1) + "…"},
	} {
		if got := clipMessage(tc.in); got != tc.want {
			t.Errorf("clipMessage(%.40q…) = %.200q, want %.200q", tc.in, got, tc.want)
		}
	}
}

// Numbers the API admits are stored as given; those it does not are a 400.
func TestNumbersBeyond32Bits(t *testing.T) {
	e := newTestEnv(t)
	c := e.newCompany()
	pid, _ := e.newProject(c.Admin)
	p := "/v2/project/" + itoa(pid)
	quota := "/operator/companies/" + itoa(c.ID) + "/quota"
	cases := []boundsCase{
		{name: "quota above 2^31-1", method: "PUT", path: quota, as: opTok, body: []byte(`{"files": 3000000000, "space_bytes": 9223372036854775807, "file_size_bytes": 4611686018427387904}`),
			contentType: "application/json", status: 200},
		{name: "quota above 2^63-1", method: "PUT", path: quota, as: opTok, body: []byte(`{"files": 9223372036854775808}`),
			contentType: "application/json", status: 400, want: "files"},
		{name: "project quota above 2^31-1", method: "PUT", path: "/operator/projects/" + itoa(pid) + "/quota", as: opTok,
			body: map[string]any{"file_size_bytes": int64(1) << 40}, status: 200},
		{name: "status filter above 2^31-1", method: "GET", path: p + "/virtual_datapoints?filter=status_code%3D99999999999", status: 200},
		{name: "page at 2^63-1", method: "GET", path: p + "/virtual_datapoints?page=9223372036854775807", status: 200},
		{name: "alerts page at 2^63-1", method: "GET", path: p + "/alerts?page=9223372036854775807", status: 200},
		{name: "export max above 2^31-1", method: "GET", path: "/v2/datapoint/timeseries?project_id=" + itoa(pid) + "&dataPointID=src&max=99999999999", status: 400, want: "max"},
		{name: "role id above 2^63-1", method: "DELETE", path: p + "/role/99999999999999999999", status: 400, want: "role_id"},
	}
	tsUpload(e, c.Admin, pid, "src", tsMinute, 1)
	runBoundsCases(t, e, c.Admin, cases)
	r := e.do("PUT", quota, opTok, map[string]any{}).want(t, 200)
	if num(t, r.JSON, "resource.files") != 3000000000 || !strings.Contains(string(r.Body), `"space_bytes":9223372036854775807`) ||
		!strings.Contains(string(r.Body), `"file_size_bytes":4611686018427387904`) {
		t.Fatalf("the quota changed on its way: %s", r.Body)
	}
}

// Aggregates of values near the float64 maximum are computed, not 500.
func TestExportAggregatesDoNotOverflow(t *testing.T) {
	e := newTestEnv(t)
	c := e.newCompany()
	pid, _ := e.newProject(c.Admin)
	const big = 1.7e308
	hour := func(i int) time.Time { return tsT0.Add(time.Duration(i/2)*time.Hour + time.Duration(i%2)*time.Minute) }
	// hour 0: big, big; hour 1: -big, big; hour 2: 0, 1e200 (a sum of squares beyond float8)
	tsUpload(e, c.Admin, pid, "huge", hour, big, big, -big, big, 0, 1e200)
	for _, tc := range []struct {
		agg  string
		want []float64
	}{
		{"mean", []float64{big, 0, 5e199}},
		{"median", []float64{big, 0, 5e199}},
		{"max", []float64{big, big, 1e200}},
		{"min", []float64{big, -big, 0}},
		{"count", []float64{2, 2, 2}},
	} {
		t.Run(tc.agg, func(t *testing.T) {
			r := tsGet(e, c.Admin, pid, "huge", "start", tsT0.Format(time.RFC3339), "end", tsT0.Add(3*time.Hour).Format(time.RFC3339),
				"samplerate", "1h", "aggregation", tc.agg)
			got := tsData(t, r, tc.agg)
			if len(got) != len(tc.want) {
				t.Fatalf("%d intervals, want %d: %s", len(got), len(tc.want), r.Body)
			}
			for i, w := range tc.want {
				if !tsNear(got[i].Value, w) {
					t.Errorf("hour %d: %g, want %g", i, got[i].Value, w)
				}
			}
		})
	}
	// Linear interpolation across an empty hour, from -big to big.
	tsUpload(e, c.Admin, pid, "span", func(i int) time.Time { return tsT0.Add(time.Duration(2*i) * time.Hour) }, -big, big)
	r := tsGet(e, c.Admin, pid, "span", "start", tsT0.Format(time.RFC3339), "end", tsT0.Add(3*time.Hour).Format(time.RFC3339),
		"samplerate", "1h", "interpolation", "linear")
	if got := tsData(t, r, "mean"); len(got) != 3 || got[1].Value != 0 {
		t.Fatalf("linear interpolation from -big to big: %s", r.Body)
	}
}

// The HTTP layer's own refusals keep their statuses, with the envelope.
func TestTransportErrors(t *testing.T) {
	e := newTestEnv(t, func(c *Config) { c.ReadTimeout = 500 * time.Millisecond })
	c := e.newCompany()
	pid, _ := e.newProject(c.Admin)
	addr := strings.TrimPrefix(e.base, "http://")
	raw := func(t *testing.T, send string, wait time.Duration) *nethttp.Response {
		t.Helper()
		conn, err := net.Dial("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { conn.Close() })
		if _, err := io.WriteString(conn, send); err != nil {
			t.Fatal(err)
		}
		time.Sleep(wait)
		_ = conn.SetReadDeadline(time.Now().Add(10 * time.Second))
		res, err := nethttp.ReadResponse(bufio.NewReader(conn), nil)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { res.Body.Close() })
		return res
	}
	long := func(n int) string { return "/v2/user?pad=" + strings.Repeat("p", n) }
	for _, tc := range []struct {
		name   string
		send   string
		wait   time.Duration
		status int
		allow  string
	}{
		{name: "headers that stop coming", send: "GET /v2/user HTTP/1.1\r\nHost: bdp\r\nX-Slow: 1\r\n", status: 408},
		{name: "headers over the read buffer", send: "GET /v2/user HTTP/1.1\r\nHost: bdp\r\nX-Pad: " + strings.Repeat("p", 20<<10) + "\r\n\r\n", status: 431},
		{name: "many headers over the read buffer", send: "GET /v2/user HTTP/1.1\r\nHost: bdp\r\n" + strings.Repeat("X-Pad: pppppppppppppppppppp\r\n", 1000) + "\r\n", status: 431},
		{name: "URI over its limit", send: "GET " + long(maxURILength) + " HTTP/1.1\r\nHost: bdp\r\n\r\n", status: 414},
		{name: "URI over the read buffer", send: "GET " + long(4*readBufferSize) + " HTTP/1.1\r\nHost: bdp\r\n\r\n", status: 414},
		{name: "URI at its limit", send: "GET " + long(maxURILength-len(long(0))) + " HTTP/1.1\r\nHost: bdp\r\n\r\n", status: 401},
		{name: "PATCH on a project", send: fmt.Sprintf("PATCH /v2/project/%d HTTP/1.1\r\nHost: bdp\r\nContent-Length: 0\r\n\r\n", pid), status: 405, allow: "DELETE, GET, HEAD, PUT"},
		{name: "GET on a POST-only route", send: "GET /v2/company/project HTTP/1.1\r\nHost: bdp\r\n\r\n", status: 405, allow: "POST"},
		{name: "POST on /healthz", send: "POST /healthz HTTP/1.1\r\nHost: bdp\r\nContent-Length: 0\r\n\r\n", status: 405, allow: "GET, HEAD"},
		{name: "unknown path", send: "PATCH /v2/nothing/here HTTP/1.1\r\nHost: bdp\r\nContent-Length: 0\r\n\r\n", status: 404},
	} {
		t.Run(tc.name, func(t *testing.T) {
			res := raw(t, tc.send, tc.wait)
			body, _ := io.ReadAll(res.Body)
			var env map[string]any
			if res.StatusCode != tc.status || json.Unmarshal(body, &env) != nil || env["success"] != false || res.Header.Get("X-Request-Id") == "" {
				t.Fatalf("HTTP %d (want %d), X-Request-Id %q: %.300s", res.StatusCode, tc.status, res.Header.Get("X-Request-Id"), body)
			}
			if got := res.Header.Get("Allow"); got != tc.allow {
				t.Fatalf("Allow %q, want %q", got, tc.allow)
			}
		})
	}
}

// A body read whole leaves the connection open for the next request: the
// connection is closed only after a body left unread (a refusal before
// reading it, one over its limit).
func TestConnectionKeptAfterABodyReadWhole(t *testing.T) {
	e := newTestEnv(t)
	c := e.newCompany()
	addr := strings.TrimPrefix(e.base, "http://")
	conn, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	br := bufio.NewReader(conn)
	auth := "Basic " + basicToken(c.Admin)
	large := `{"name":"kept-3"` + strings.Repeat(" ", 200<<10) + `}` // beyond what fasthttp reads with the headers
	for i, body := range []string{`{"name":"kept-1"}`, large, `{"name":"kept-2"}`} {
		fmt.Fprintf(conn, "POST /v2/company/project HTTP/1.1\r\nHost: bdp\r\nAuthorization: %s\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n%s",
			auth, len(body), body)
		res, err := nethttp.ReadResponse(br, nil)
		if err != nil {
			t.Fatalf("request %d on the same connection: %v", i+1, err)
		}
		b, _ := io.ReadAll(res.Body)
		res.Body.Close()
		if res.StatusCode != 200 || res.Close {
			t.Fatalf("request %d: HTTP %d, Connection: close %v: %s", i+1, res.StatusCode, res.Close, b)
		}
	}
}

func basicToken(b basic) string {
	return base64.StdEncoding.EncodeToString([]byte(b.email + ":" + b.password))
}

// A client still sending a body the server refuses before reading it (a
// wrong password, no grant) gets the answer, not a connection reset: the
// server reads the rest, up to refusedBodyDrain, before it answers. The
// client here sends its body in two halves with a pause between, as a
// slow link would; had the server closed after answering, the second
// half would meet a reset.
func TestEarlyAnswerReachesAClientStillSending(t *testing.T) {
	e := newTestEnv(t)
	c := e.newCompany()
	half := strings.Repeat(" ", 1<<20)
	body := `{"name":"big"` + half + half + `}`
	conn, err := net.Dial("tcp", strings.TrimPrefix(e.base, "http://"))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	auth := base64.StdEncoding.EncodeToString([]byte(c.Admin.email + ":wrong-password"))
	head := fmt.Sprintf("POST /v2/company/project HTTP/1.1\r\nHost: bdp\r\nAuthorization: Basic %s\r\n"+
		"Content-Type: application/json\r\nContent-Length: %d\r\n\r\n", auth, len(body))
	first, second := body[:len(body)/2], body[len(body)/2:]
	if _, err := io.WriteString(conn, head+first); err != nil {
		t.Fatal(err)
	}
	time.Sleep(300 * time.Millisecond) // the server has answered by now, had it not waited
	if _, err := io.WriteString(conn, second); err != nil {
		t.Fatalf("the rest of the body: %v", err)
	}
	_ = conn.SetReadDeadline(time.Now().Add(10 * time.Second))
	res, err := nethttp.ReadResponse(bufio.NewReader(conn), nil)
	if err != nil {
		t.Fatalf("no answer: %v", err)
	}
	res.Body.Close()
	if res.StatusCode != 401 {
		t.Fatalf("HTTP %d, want 401", res.StatusCode)
	}
}
