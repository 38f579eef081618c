package http

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"mime/multipart"
	"strings"
	"testing"
	"time"

	"github.com/openbdp/bdp/pipeline"
)

// POST /v2/project/{project_id}/importTimeseries through the real server
// into the test's own PostgreSQL database; what is stored is checked in
// SQL, not through the API.

const (
	imCount = `SELECT count(*) FROM observations o JOIN datapoints d ON d.id = o.datapoint WHERE d.project_id = $1`
	imSum   = `SELECT coalesce(sum(value), 0) FROM observations o JOIN datapoints d ON d.id = o.datapoint WHERE d.project_id = $1`
	imEpoch = `SELECT extract(epoch FROM o.time) FROM observations o JOIN datapoints d ON d.id = o.datapoint
		WHERE d.project_id = $1 AND d.datapoint_id = $2`
)

func imPath(pid int64, query string) string {
	return fmt.Sprintf("/v2/project/%d/importTimeseries?%s", pid, query)
}

// imSend posts body with the given content type; length -1 sends it
// chunked.
func (e *testEnv) imSend(as cred, path, contentType string, body io.Reader) resp {
	e.t.Helper()
	return e.send("POST", path, as, contentType, body)
}

// imForm is a multipart form with the file in field.
func imForm(field, csv string) (string, []byte) {
	var b bytes.Buffer
	mw := multipart.NewWriter(&b)
	_ = mw.WriteField("comment", "a field before the file")
	fw, _ := mw.CreateFormFile(field, "data.csv")
	_, _ = fw.Write([]byte(csv))
	_ = mw.Close()
	return mw.FormDataContentType(), b.Bytes()
}

func (e *testEnv) importCSV(as cred, pid int64, mode, csv string) resp {
	e.t.Helper()
	ct, body := imForm("import_file", csv)
	return e.imSend(as, imPath(pid, "format=csv&on_error="+mode), ct, bytes.NewReader(body))
}

// importStream uploads what gen writes, through a pipe: neither the test
// nor the client holds the file.
func (e *testEnv) importStream(as cred, pid int64, mode string, gen func(w io.Writer) error) resp {
	e.t.Helper()
	pr, pw := io.Pipe()
	mw := multipart.NewWriter(pw)
	go func() {
		fw, err := mw.CreateFormFile("import_file", "big.csv")
		if err == nil {
			err = gen(fw)
		}
		if err == nil {
			err = mw.Close()
		}
		pw.CloseWithError(err)
	}()
	return e.imSend(as, imPath(pid, "on_error="+mode), mw.FormDataContentType(), pr)
}

// imErrors returns the errors of a continue answer as "line: reason".
func imErrors(t *testing.T, r resp) []string {
	t.Helper()
	out := []string{}
	for _, v := range r.resource(t)["errors"].([]any) {
		m := v.(map[string]any)
		out = append(out, fmt.Sprintf("%v: %v", m["line_no"], m["error"]))
	}
	return out
}

func imWantTotals(t *testing.T, r resp, pid, success, failed int64) {
	t.Helper()
	res := r.resource(t)
	if r.JSON["operation"] != "create" || num(t, res, "total_lines_success") != success ||
		num(t, res, "total_lines_error") != failed || num(t, res, "project_id") != pid {
		t.Fatalf("want %d good and %d failing lines: %s", success, failed, r.Body)
	}
}

const imGood = "dp-1,1.5,2024-01-31T10:00:00Z\n"

// Every failing-line rule (api.md 4.7 rule 2 and the additions), in both
// modes: abort stores nothing and names the line; continue stores the
// good lines and lists the bad one.
func TestImportFailingLines(t *testing.T) {
	e := newTestEnv(t)
	c := e.newCompany()
	tests := []struct{ name, line, reason string }{
		{"backslash", `dp\x,1,2024-01-31`, `identifier "dp\\x" contains a backslash`},
		{"timestamp", "dp-2,1,31/01/2024", `timestamp "31/01/2024" cannot be parsed`},
		{"value", "dp-2,abc,2024-01-31", `value "abc" is not a number`},
		{"extra field", "dp-2,1,2024-01-31,x", "extra field: 4 fields, expected 3 (identifier, value, timestamp)"},
		{"empty identifier", ",1,2024-01-31", "identifier is empty"},
		{"NaN", "dp-2,NaN,2024-01-31", `value "NaN" is not a finite number`},
		{"Inf", "dp-2,-Inf,2024-01-31", `value "-Inf" is not a finite number`},
		{"missing field", "dp-2,1", "missing field: 2 fields, expected 3 (identifier, value, timestamp)"},
		{"control character", "dp\x07,1,2024-01-31", `identifier "dp\a" contains a control character`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			file := imGood + tt.line + "\n" + "dp-3,2.5,2024-01-31T11:00:00Z\n"
			pid, _ := e.newProject(c.Admin)
			r := e.importCSV(c.Admin, pid, "abort", file).wantError(t, 400)
			if r.JSON["error"] != "2: "+tt.reason || r.JSON["operation"] != "create" {
				t.Fatalf("abort: %s", r.Body)
			}
			if n := e.sqlFloat(imCount, pid); n != 0 {
				t.Fatalf("abort stored %v observations", n)
			}
			r = e.importCSV(c.Admin, pid, "continue", file).want(t, 200)
			imWantTotals(t, r, pid, 2, 1)
			if got := imErrors(t, r); len(got) != 1 || got[0] != "2: "+tt.reason {
				t.Fatalf("errors %v", got)
			}
			if n, sum := e.sqlFloat(imCount, pid), e.sqlFloat(imSum, pid); n != 2 || sum != 4 {
				t.Fatalf("continue stored %v observations, sum %v", n, sum)
			}
		})
	}
}

// Each timestamp form is stored at its instant.
func TestImportTimestampForms(t *testing.T) {
	e := newTestEnv(t)
	c := e.newCompany()
	pid, _ := e.newProject(c.Admin)
	at := time.Date(2024, 1, 31, 10, 0, 0, 0, time.UTC)
	forms := []struct {
		in   string
		want time.Time
	}{
		{"2024-01-31", time.Date(2024, 1, 31, 0, 0, 0, 0, time.UTC)},
		{"2024-01-31T10:00:00Z", at},
		{"2024-01-31 10:00:00Z", at},
		{"2024-01-31T10:00:00", at}, // no offset: UTC
		{"2024-01-31 10:00", at},
		{"2024-01-31T10:00:00.25Z", at.Add(250 * time.Millisecond)},
		{"2024-01-31T10:00:00.123456Z", at.Add(123456 * time.Microsecond)},
		{"2024-01-31T11:00:00+01", at},
		{"2024-01-31T11:00:00+01:00", at},
		{"2024-01-31T11:00:00+0100", at},
		{"2024-01-31T04:30:00-05:30", at},
		{"31.01.2024 10:00:00", at},
		{"2024/01/31 10:00:00", at},
		// One-digit hours, as people write them (issue 8 item 12).
		{"2024-01-31 8:00:00", at.Add(-2 * time.Hour)},
		{"2024-01-31 1:00:00.000", at.Add(-9 * time.Hour)},
		{"2024-01-31T3:00:00+01", at.Add(-8 * time.Hour)},
	}
	var file strings.Builder
	for i, f := range forms {
		fmt.Fprintf(&file, "form-%d,%d,\"%s\"\n", i, i, f.in)
	}
	r := e.importCSV(c.Admin, pid, "abort", file.String()).want(t, 200)
	imWantTotals(t, r, pid, int64(len(forms)), 0)
	if len(imErrors(t, r)) != 0 {
		t.Fatalf("full success must list no errors: %s", r.Body)
	}
	for i, f := range forms {
		got := e.sqlFloat(imEpoch, pid, fmt.Sprintf("form-%d", i))
		if want := float64(f.want.UnixMicro()) / 1e6; got != want {
			t.Errorf("%s stored at %v, want %v (%s)", f.in, got, want, f.want)
		}
	}
}

// Dialects, a header, quoted fields with delimiters, blank lines and line
// numbers that count the header.
func TestImportDialectsAndHeader(t *testing.T) {
	e := newTestEnv(t)
	c := e.newCompany()
	files := []struct {
		name, file string
		badLine    int
	}{
		{"semicolon, single quotes, header", "id;value;time\n'a;b';1;2024-01-31\n\nc;2;2024-01-31T10:00:00Z\nbad;x;2024-01-31\n", 5},
		{"tab, double quotes, CRLF", "\"a;b\"\t1\t2024-01-31\r\nc\t2\t2024-01-31T10:00:00Z\r\n\r\nbad\tx\t2024-01-31\r\n", 4},
		{"pipe, header", "dataPointID|value|timestamp\n\"a;b\"|1|2024-01-31\nc|2|2024-01-31\nbad|x|2024-01-31\n", 4},
		{"comma, quoted delimiter", "\"a;b\",1,2024-01-31\n\"c\",\"2\",\"2024-01-31 10:00\"\nbad,x,2024-01-31", 3},
	}
	for _, f := range files {
		t.Run(f.name, func(t *testing.T) {
			pid, _ := e.newProject(c.Admin)
			r := e.importCSV(c.Admin, pid, "continue", f.file).want(t, 200)
			imWantTotals(t, r, pid, 2, 1)
			if got := imErrors(t, r); len(got) != 1 || got[0] != fmt.Sprintf(`%d: value "x" is not a number`, f.badLine) {
				t.Fatalf("errors %v", got)
			}
			if n := e.sqlFloat(`SELECT count(*) FROM datapoints WHERE project_id = $1 AND datapoint_id = 'a;b'`, pid); n != 1 {
				t.Fatalf("the quoted identifier was not kept whole")
			}
		})
	}
	// The header does not count as a failing line; line numbers include it.
	pid, _ := e.newProject(c.Admin)
	r := e.importCSV(c.Admin, pid, "abort", "id,value,time\na,1,2024-01-31\na,x,2024-01-31\n").wantError(t, 400)
	if r.JSON["error"] != `3: value "x" is not a number` {
		t.Fatalf("%s", r.Body)
	}
}

// Refused requests: on_error, format, the form. Nothing is stored, and
// the connection serves the next request.
func TestImportBadRequests(t *testing.T) {
	e := newTestEnv(t)
	c := e.newCompany()
	pid, _ := e.newProject(c.Admin)
	ct, body := imForm("import_file", imGood)
	for _, q := range []string{"format=csv", "on_error=", "on_error=ignore", "on_error=abort&format=json"} {
		r := e.imSend(c.Admin, imPath(pid, q), ct, bytes.NewReader(body)).wantError(t, 400)
		if r.JSON["operation"] != "create" {
			t.Fatalf("%s: %s", q, r.Body)
		}
	}
	ct2, body2 := imForm("file", imGood)
	r := e.imSend(c.Admin, imPath(pid, "on_error=abort"), ct2, bytes.NewReader(body2)).wantError(t, 400)
	if !strings.Contains(r.JSON["error"].(string), "import_file") {
		t.Fatalf("%s", r.Body)
	}
	e.imSend(c.Admin, imPath(pid, "on_error=abort"), "text/csv", strings.NewReader(imGood)).wantError(t, 400)
	e.imSend(c.Admin, imPath(pid, "on_error=abort"), ct, strings.NewReader(string(body[:len(body)/2]))).wantError(t, 400)
	e.imSend(nil, imPath(pid, "on_error=abort"), ct, bytes.NewReader(body)).wantError(t, 401)
	if n := e.sqlFloat(imCount, pid); n != 0 {
		t.Fatalf("a refused import stored %v observations", n)
	}
	// An empty file is a success with nothing in it.
	imWantTotals(t, e.importCSV(c.Admin, pid, "abort", "").want(t, 200), pid, 0, 0)
	e.do("GET", "/v2/user", c.Admin, nil).want(t, 200)
}

// Write access by TagAuth: abort answers 403 for the first datapoint
// without it and stores nothing; continue lists its lines.
func TestImportForbiddenDatapoint(t *testing.T) {
	e := newTestEnv(t)
	c := e.newCompany()
	pid, _ := e.newProject(c.Admin)
	u, uid := e.newUser(c)
	imp := e.endpointID("POST", "/v2/project/{project_id}/importTimeseries")
	rid := rbCreateProjectRole(e, c.Admin, pid, []int32{imp}, rbTag("name", "allowed*", true, true), rbTag("name", "readonly*", true, false))
	rbAssignProjectRole(e, c.Admin, pid, rid, uid)
	file := "allowed-1,1,2024-01-31\nsecret-1,2,2024-01-31\nreadonly-1,3,2024-01-31\nallowed-2,4,2024-01-31\nsecret-1,5,2024-01-31T01:00:00Z\n"

	r := e.importCSV(u, pid, "abort", file).wantError(t, 403)
	if r.JSON["error"] != `2: no write access to datapoint "secret-1"` {
		t.Fatalf("%s", r.Body)
	}
	// A failing line before the forbidden datapoint comes first; one after
	// it does not.
	r = e.importCSV(u, pid, "abort", "allowed-1,x,2024-01-31\n"+file).wantError(t, 400)
	if !strings.HasPrefix(r.JSON["error"].(string), "1: ") {
		t.Fatalf("%s", r.Body)
	}
	e.importCSV(u, pid, "abort", file+"allowed-1,x,2024-01-31\n").wantError(t, 403)
	if n := e.sqlFloat(imCount, pid); n != 0 {
		t.Fatalf("abort stored %v observations", n)
	}

	r = e.importCSV(u, pid, "continue", file).want(t, 200)
	imWantTotals(t, r, pid, 2, 3)
	want := `[2: no write access to datapoint "secret-1" 3: no write access to datapoint "readonly-1" 5: no write access to datapoint "secret-1"]`
	if got := fmt.Sprint(imErrors(t, r)); got != want {
		t.Fatalf("errors %s", got)
	}
	if n, sum := e.sqlFloat(imCount, pid), e.sqlFloat(imSum, pid); n != 2 || sum != 5 {
		t.Fatalf("stored %v observations, sum %v", n, sum)
	}
	// The company admin may write them all.
	imWantTotals(t, e.importCSV(c.Admin, pid, "abort", file).want(t, 200), pid, 5, 0)
}

// The errors list stops at 1000 and says how many more there were.
func TestImportErrorsCapped(t *testing.T) {
	e := newTestEnv(t)
	c := e.newCompany()
	pid, _ := e.newProject(c.Admin)
	var file strings.Builder
	for i := 0; i < 1500; i++ {
		fmt.Fprintf(&file, "dp,%d,2024-01-31T00:00:%02dZ\nbad,x,2024-01-31\n", i, i%60)
	}
	r := e.importCSV(c.Admin, pid, "continue", file.String()).want(t, 200)
	imWantTotals(t, r, pid, 1500, 1500)
	errs := imErrors(t, r)
	if len(errs) != 1000 || errs[0] != `2: value "x" is not a number` || errs[999] != `2000: value "x" is not a number` ||
		num(t, r.resource(t), "errors_omitted") != 500 {
		t.Fatalf("%d errors, first %q, last %q, omitted %v", len(errs), errs[0], errs[len(errs)-1], r.resource(t)["errors_omitted"])
	}
	// Same time replaces: 60 distinct times of one datapoint.
	if n := e.sqlFloat(imCount, pid); n != 60 {
		t.Fatalf("stored %v", n)
	}
}

// ImportLimit holds the import; BodyLimit does not, and still holds the
// other routes.
func TestImportLimit(t *testing.T) {
	e := newTestEnv(t, func(c *Config) { c.BodyLimit = 1024; c.ImportLimit = 64 << 10 })
	c := e.newCompany()
	pid, _ := e.newProject(c.Admin)
	line := func(i int) string { return fmt.Sprintf("datapoint-%d,%d,2024-01-31T10:00:00Z\n", i, i) }
	var small, big strings.Builder
	for i := 0; small.Len() < 10<<10; i++ {
		small.WriteString(line(i))
	}
	for i := 0; big.Len() < 200<<10; i++ {
		big.WriteString(line(i))
	}
	r := e.importCSV(c.Admin, pid, "abort", small.String()).want(t, 200) // above BodyLimit, below ImportLimit
	n := num(t, r.resource(t), "total_lines_success")
	// By Content-Length, then (chunked, no length) by the bytes read.
	r = e.importCSV(c.Admin, pid, "abort", big.String()).wantError(t, 413)
	if !strings.Contains(r.JSON["error"].(string), "import limit") {
		t.Fatalf("%s", r.Body)
	}
	e.importStream(c.Admin, pid, "continue", func(w io.Writer) error {
		_, err := io.WriteString(w, big.String())
		return err
	}).wantError(t, 413)
	if got := e.sqlFloat(imCount, pid); int64(got) != n {
		t.Fatalf("stored %v, want the %d of the small file", got, n)
	}
	e.do("POST", "/v2/company/project", c.Admin, map[string]any{"name": strings.Repeat("x", 2000)}).wantError(t, 413)
	e.do("GET", "/v2/user", c.Admin, nil).want(t, 200)
}

// Past the limit, continue mode says what it stored before.
func TestImportLimitContinueSaysWhatStays(t *testing.T) {
	e := newTestEnv(t, func(c *Config) { c.ImportLimit = 3 << 20 })
	c := e.newCompany()
	pid, _ := e.newProject(c.Admin)
	r := e.importStream(c.Admin, pid, "continue", func(w io.Writer) error { return imGenerate(w, 150_000) }).wantError(t, 413)
	stored := e.sqlFloat(imCount, pid)
	if stored < pipeline.ImportChunk || !strings.Contains(r.JSON["error"].(string), fmt.Sprintf("(%d lines were stored before;", int(stored))) {
		t.Fatalf("stored %v: %s", stored, r.Body)
	}
}

// Abort mode past its memory chunks (into the spool file): all or nothing.
func TestImportAbortSpool(t *testing.T) {
	e := newTestEnv(t)
	c := e.newCompany()
	pid, _ := e.newProject(c.Admin)
	const n = pipeline.ImportMemChunks*pipeline.ImportChunk + pipeline.ImportChunk/2
	gen := func(bad bool) func(w io.Writer) error {
		return func(w io.Writer) error {
			bw := bytes.NewBuffer(nil)
			for i := 0; i < n; i++ {
				fmt.Fprintf(bw, "dp-%d,%d,2024-01-31T%02d:%02d:00Z\n", i%5000, i%7, i/5000/60, i/5000%60)
				if bad && i == n-1 {
					bw.WriteString("dp-1,oops,2024-01-31\n")
				}
				if bw.Len() > 64<<10 {
					if _, err := w.Write(bw.Bytes()); err != nil {
						return err
					}
					bw.Reset()
				}
			}
			_, err := w.Write(bw.Bytes())
			return err
		}
	}
	r := e.importStream(c.Admin, pid, "abort", gen(true)).wantError(t, 400)
	if r.JSON["error"] != fmt.Sprintf(`%d: value "oops" is not a number`, n+1) {
		t.Fatalf("%s", r.Body)
	}
	if got := e.sqlFloat(imCount, pid); got != 0 {
		t.Fatalf("a failed abort import stored %v", got)
	}
	imWantTotals(t, e.importStream(c.Admin, pid, "abort", gen(false)).want(t, 200), pid, n, 0)
	want := 0
	for i := 0; i < n; i++ {
		want += i % 7
	}
	if got, sum := e.sqlFloat(imCount, pid), e.sqlFloat(imSum, pid); got != n || sum != float64(want) {
		t.Fatalf("stored %v, sum %v; want %d, %d", got, sum, n, want)
	}
}

// A million lines, streamed: stored whole.
func TestImportMillionLines(t *testing.T) {
	if testing.Short() {
		t.Skip("a million lines")
	}
	e := newTestEnv(t)
	c := e.newCompany()
	pid, _ := e.newProject(c.Admin)
	const n = 1_000_000
	start := time.Now()
	r := e.importStream(c.Admin, pid, "abort", func(w io.Writer) error { return imGenerate(w, n) }).want(t, 200)
	imWantTotals(t, r, pid, n, 0)
	t.Logf("%d lines in %s", n, time.Since(start))
	if got, sum := e.sqlFloat(imCount, pid), e.sqlFloat(imSum, pid); got != n || sum != float64(n/1000*(999*1000/2)) {
		t.Fatalf("stored %v, sum %v", got, sum)
	}
}

// imGenerate writes n lines: 10,000 datapoints, one value a minute each,
// values i%1000.
func imGenerate(w io.Writer, n int) error {
	base := time.Date(2024, 1, 1, 0, 0, 0, 0, time.UTC)
	buf := make([]byte, 0, 64<<10)
	for i := 0; i < n; i++ {
		buf = fmt.Appendf(buf, "site/sensor-%d,%d,%s\n", i%10_000, i%1000, base.Add(time.Duration(i/10_000)*time.Minute).Format(time.RFC3339))
		if len(buf) > 60<<10 {
			if _, err := w.Write(buf); err != nil {
				return err
			}
			buf = buf[:0]
		}
	}
	_, err := w.Write(buf)
	return err
}

// The OpenAPI document describes the multipart body.
func TestImportOpenAPI(t *testing.T) {
	e := newTestEnv(t)
	r := e.do("GET", "/v2/openapi.json", nil, nil).want(t, 200)
	var doc struct {
		Paths map[string]map[string]struct {
			RequestBody struct {
				Content map[string]any `json:"content"`
			} `json:"requestBody"`
			Parameters []map[string]any `json:"parameters"`
		} `json:"paths"`
	}
	if err := json.Unmarshal(r.Body, &doc); err != nil {
		t.Fatal(err)
	}
	op := doc.Paths["/v2/project/{project_id}/importTimeseries"]["post"]
	if op.RequestBody.Content["multipart/form-data"] == nil || len(op.Parameters) != 3 {
		t.Fatalf("%+v", op)
	}
}
