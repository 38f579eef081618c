package bench

import (
	"bufio"
	"bytes"
	"context"
	"encoding/base64"
	"fmt"
	"io"
	"mime/multipart"
	"net"
	"net/http"
	"net/url"
	"os"
	"strconv"
	"strings"
	"time"
)

// The routes' body limits of this build (http/handler.go smallBodyLimit,
// BDP_BODY_LIMIT's default) and the longest formula (formula.MaxLength).
const (
	SmallBodyLimit = 256 << 10
	UploadLimit    = 32 << 20
	FormulaLimit   = 4000
)

// BodyCost is what one request carrying the largest body its route
// accepts cost `bdp serve`: how far its peak resident memory (VmHWM, reset
// before the request) rose above its resident memory before it.
type BodyCost struct {
	Route      string  `json:"route"`
	BodyBytes  int64   `json:"body_bytes"`
	Status     int     `json:"status"`
	PeakGrowth int64   `json:"peak_growth_bytes"`
	Multiple   float64 `json:"multiple"` // PeakGrowth / BodyBytes
	// Fixed is the cost the route has whatever its body (argon2id hashes
	// a password in 46 MiB), which a bound adds to the multiple.
	Fixed int64 `json:"fixed_bytes"`
	// Streamed bodies are never held: their cost is bounded by a
	// constant, not by a multiple.
	Streamed bool `json:"streamed"`
}

// bodyCase is one route with its largest accepted body.
type bodyCase struct {
	route, method, path string
	contentType         string
	operator            bool
	fixed               int64
	// dropsCredentials: the route makes bdp forget the caller's cached
	// Basic credentials (a password change, through NOTIFY), so the next
	// request would pay the hash, or not, as the notification's timing
	// and the runtime's scavenger fell; Bodies re-verifies them unmeasured.
	dropsCredentials bool
	body             func() []byte
	stream           func(w io.Writer) error // a streamed multipart CSV import instead of body
}

const argon2Cost = 64 << 20

// Bodies is `bdp-bench bodies`: it sends each route with a body the
// largest body it accepts, smallest cost first (the Go runtime keeps the
// memory a request took, so a later, smaller one would reuse it), and
// measures the peak memory each took. csvBytes sizes the streamed CSV
// import, which has no multiple: it is never held.
func Bodies(ctx context.Context, opts Options, csvBytes int64) ([]BodyCost, error) {
	p, err := Start(ctx, opts)
	if err != nil {
		return nil, err
	}
	defer p.Close()
	var out []BodyCost
	for _, bc := range bodyCases(p, csvBytes) {
		cost, err := p.measure(ctx, bc)
		if err != nil {
			return out, fmt.Errorf("%s: %w", bc.route, err)
		}
		out = append(out, cost)
		if bc.dropsCredentials {
			if err := p.warmCredentials(ctx); err != nil {
				return out, fmt.Errorf("%s: %w", bc.route, err)
			}
		}
	}
	return out, nil
}

// warmCredentials waits for bdp to forget the caller's credentials and
// has them verified and cached again by a request that is not measured.
func (p *Platform) warmCredentials(ctx context.Context) error {
	time.Sleep(500 * time.Millisecond)
	req, err := http.NewRequestWithContext(ctx, "GET", p.Base+"/v2/user", nil)
	if err != nil {
		return err
	}
	req.SetBasicAuth(p.Email, p.Password)
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		return err
	}
	io.Copy(io.Discard, res.Body)
	res.Body.Close()
	if res.StatusCode != http.StatusOK {
		return fmt.Errorf("re-verifying the credentials: HTTP %d", res.StatusCode)
	}
	return nil
}

func bodyCases(p *Platform, csvBytes int64) []bodyCase {
	pr := "/v2/project/" + strconv.FormatInt(p.ProjectID, 10)
	op := "/operator/projects/" + strconv.FormatInt(p.ProjectID, 10)
	small := func(obj string) func() []byte { return func() []byte { return padObject(obj, SmallBodyLimit) } }
	list := func(prefix, item string, suffix string) func() []byte { // a JSON array of items filling the limit
		return func() []byte {
			var b bytes.Buffer
			b.WriteString(prefix)
			for i := 0; b.Len() < SmallBodyLimit-len(item)-len(suffix)-64; i++ {
				if i > 0 {
					b.WriteByte(',')
				}
				fmt.Fprintf(&b, item, i)
			}
			b.WriteString(suffix)
			return padObjectOrArray(b.Bytes(), SmallBodyLimit)
		}
	}
	formula := "P1" + strings.Repeat(" ", FormulaLimit-6) + " + 1"
	vdp := fmt.Sprintf(`{"pins":{"P1":{"dataPointID":"dp-tags"}},"parameters":{"formula":%q}}`, formula)
	return []bodyCase{
		// The streamed import goes first, on a fresh heap: after a request
		// that held tens of MiB (argon2id, the upload), the Go runtime's
		// heap goal stays that high until the next collection, and the
		// import's short-lived buffers would fill it, measuring the
		// previous request's goal rather than the import's own cost.
		{route: "POST /v2/project/{id}/importTimeseries (streamed)", method: "POST", path: pr + "/importTimeseries?on_error=abort",
			stream: func(w io.Writer) error { return generateCSV(w, int(csvBytes/48)) }},
		{route: "POST /operator/companies", method: "POST", path: "/operator/companies", operator: true, fixed: argon2Cost,
			body: small(`{"name":"pad","admin":{"firstName":"P","lastName":"Ad","email":"pad@example.com","password":"pad-password-1"}}`)},
		{route: "PUT /operator/projects/{id}/settings", method: "PUT", path: op + "/settings", operator: true, body: small(`{"autosampling_n":100}`)},
		{route: "PUT /operator/projects/{id}/quota", method: "PUT", path: op + "/quota", operator: true, body: small(`{"files":3000000000}`)},
		{route: "PUT /operator/projects/{id}/datapoints/{dp}/tags", method: "PUT", path: op + "/datapoints/dp-tags/tags", operator: true,
			body: list(`[`, `{"key":"k%d","value":"v"}`, `]`)},
		{route: "PUT /operator/currency-rates", method: "PUT", path: "/operator/currency-rates", operator: true, body: small(`{"USD":0.9}`)},
		{route: "POST /v2/auth/token", method: "POST", path: "/v2/auth/token", contentType: "application/x-www-form-urlencoded", fixed: argon2Cost,
			body: func() []byte {
				form := "grant_type=password&username=" + url.QueryEscape(p.Email) + "&password=" + url.QueryEscape(p.Password) + "&pad="
				return []byte(form + strings.Repeat("x", SmallBodyLimit-len(form)))
			}},
		{route: "PUT /v2/user", method: "PUT", path: "/v2/user", body: small(`{"phone":"1"}`)},
		{route: "PUT /v2/user/password", method: "PUT", path: "/v2/user/password", fixed: 2 * argon2Cost, dropsCredentials: true,
			// two hashes, the current password checked and the new one hashed: the
			// runtime may hold the first one's memory until it collects
			body: small(fmt.Sprintf(`{"current_password":%q,"new_password":%q}`, p.Password, p.Password))},
		{route: "POST /v2/company/project", method: "POST", path: "/v2/company/project", body: small(`{"name":"pad-project"}`)},
		{route: "POST /v2/company/user", method: "POST", path: "/v2/company/user", fixed: argon2Cost,
			body: func() []byte {
				return padObject(`{"company_id":`+strconv.FormatInt(p.CompanyID, 10)+`,"firstName":"F","lastName":"L","email":"pad-user@example.com","password":"pad-password-1"}`, SmallBodyLimit)
			}},
		{route: "POST /v2/company/role", method: "POST", path: "/v2/company/role", body: small(`{"name":"pad-role","authed_endpoints":[0]}`)},
		{route: "PUT /v2/project/{id}", method: "PUT", path: pr, body: small(`{"description":"padded"}`)},
		{route: "POST /v2/project/{id}/role (TagAuths)", method: "POST", path: pr + "/role",
			body: list(`{"name":"pad-tags","authed_endpoints":[0],"authed_tags":[`, `{"key":"name","value":"dp-%d*","read":true}`, `]}`)},
		{route: "PUT /v2/datapoint", method: "PUT", path: "/v2/datapoint?project_id=" + strconv.FormatInt(p.ProjectID, 10) + "&dataPointID=dp-tags",
			body: small(`{"setpoint_min_value":0,"setpoint_max_value":1}`)},
		{route: "POST /v2/project/{id}/virtual_datapoint (largest formula)", method: "POST", path: pr + "/virtual_datapoint?type=formula&dataPointID=pad-vdp",
			body: small(vdp)},
		{route: "PUT /v2/project/{id}/virtual_datapoint", method: "PUT", path: pr + "/virtual_datapoint?dataPointID=pad-vdp", body: small(`{"description":"d"}`)},
		{route: "POST /v2/project/{id}/timeseries", method: "POST", path: pr + "/timeseries", body: func() []byte { return uploadBody(UploadLimit) }},
	}
}

// padObject pads a JSON object with spaces before its closing brace to
// exactly size bytes: the server reads every byte, the decoder skips them.
func padObject(obj string, size int) []byte { return padObjectOrArray([]byte(obj), size) }

func padObjectOrArray(b []byte, size int) []byte {
	if len(b) >= size {
		return b
	}
	out := make([]byte, 0, size)
	out = append(out, b[:len(b)-1]...)
	out = append(out, bytes.Repeat([]byte(" "), size-len(b))...)
	return append(out, b[len(b)-1])
}

// uploadBody is a JSON upload of size bytes: observations of 100
// datapoints, a minute apart.
func uploadBody(size int) []byte {
	var b bytes.Buffer
	b.Grow(size)
	base := time.Date(2026, 1, 5, 0, 0, 0, 0, time.UTC)
	b.WriteByte('{')
	const perDP = 8000
	for dp := 0; ; dp++ {
		if dp > 0 {
			b.WriteByte(',')
		}
		fmt.Fprintf(&b, `"upload-%d":[`, dp)
		for i := 0; i < perDP; i++ {
			if i > 0 {
				b.WriteByte(',')
			}
			b.WriteString(`{"time":"`)
			b.Write(base.Add(time.Duration(i)*time.Minute).AppendFormat(nil, time.RFC3339))
			b.WriteString(`","value":`)
			b.WriteString(strconv.Itoa(i % 1000))
			b.WriteByte('}')
		}
		b.WriteByte(']')
		if b.Len() > size-perDP*50-64 {
			break
		}
	}
	b.WriteByte('}')
	return padObjectOrArray(b.Bytes(), size)
}

// measure sends one case and reads the peak memory it took.
func (p *Platform) measure(ctx context.Context, bc bodyCase) (BodyCost, error) {
	cost := BodyCost{Route: bc.route, Fixed: bc.fixed, Streamed: bc.stream != nil}
	var body io.Reader
	var size countingWriter
	contentType := bc.contentType
	if bc.stream != nil {
		pr, pw := io.Pipe()
		mw := multipart.NewWriter(pw)
		contentType = mw.FormDataContentType()
		go func() {
			fw, err := mw.CreateFormFile("import_file", "bodies.csv")
			if err == nil {
				err = bc.stream(io.MultiWriter(fw, &size))
			}
			if err == nil {
				err = mw.Close()
			}
			pw.CloseWithError(err)
		}()
		body = pr
	} else {
		b := bc.body()
		size.n = int64(len(b))
		body = bytes.NewReader(b)
	}
	if contentType == "" {
		contentType = "application/json"
	}
	req, err := http.NewRequestWithContext(ctx, bc.method, p.Base+bc.path, body)
	if err != nil {
		return cost, err
	}
	req.Header.Set("Content-Type", contentType)
	if bc.operator {
		req.Header.Set("Authorization", "Bearer "+operatorToken)
	} else if !strings.Contains(bc.path, "/auth/token") {
		req.SetBasicAuth(p.Email, p.Password)
	}
	time.Sleep(500 * time.Millisecond) // the previous request's goroutines end
	pid := p.cmd.Process.Pid
	if err := ResetPeakMemory(pid); err != nil {
		return cost, err
	}
	_, before, err := ProcessMemory(pid)
	if err != nil {
		return cost, err
	}
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		return cost, err
	}
	answer, _ := io.ReadAll(res.Body)
	res.Body.Close()
	peak, _, err := ProcessMemory(pid)
	if err != nil {
		return cost, err
	}
	cost.Status, cost.BodyBytes, cost.PeakGrowth = res.StatusCode, size.n, peak-before
	cost.Multiple = float64(cost.PeakGrowth) / float64(size.n)
	if res.StatusCode/100 != 2 {
		return cost, fmt.Errorf("HTTP %d: %.300s", res.StatusCode, answer)
	}
	return cost, nil
}

// ProcessMemory reads a process's peak (VmHWM) and current (VmRSS)
// resident memory, in bytes.
func ProcessMemory(pid int) (peak, current int64, err error) {
	f, err := os.Open(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0, 0, err
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		name, value, _ := strings.Cut(sc.Text(), ":")
		kb, perr := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(value), " kB"), 10, 64)
		switch {
		case name == "VmHWM" && perr == nil:
			peak = kb << 10
		case name == "VmRSS" && perr == nil:
			current = kb << 10
		}
	}
	if peak == 0 || current == 0 {
		return 0, 0, fmt.Errorf("no VmHWM or VmRSS in /proc/%d/status", pid)
	}
	return peak, current, sc.Err()
}

// ResetPeakMemory sets a process's VmHWM back to its current resident
// memory (proc(5), clear_refs: 5).
func ResetPeakMemory(pid int) error {
	return os.WriteFile(fmt.Sprintf("/proc/%d/clear_refs", pid), []byte("5"), 0)
}

// FormulaPeak is `bdp-bench formula`: the peak resident memory of `bdp
// serve` (VmHWM, reset just before the request) while creating a virtual
// datapoint whose formula has formulaBytes characters, and the answer's
// status. terms makes it "P1+1+1…", a token every character, rather than
// "P1 + 1" padded with spaces: before issue 8 such a formula of 30 MB was
// lexed whole before the parser's node limit refused it.
func FormulaPeak(ctx context.Context, opts Options, formulaBytes int, terms bool) (map[string]any, error) {
	p, err := Start(ctx, opts)
	if err != nil {
		return nil, err
	}
	defer p.Close()
	if err := p.Do(ctx, "PUT", "/operator/projects/"+strconv.FormatInt(p.ProjectID, 10)+"/datapoints/src/tags", []map[string]string{{"key": "units", "value": "K"}}, nil, true); err != nil {
		return nil, err
	}
	formula := "P1 + 1"
	switch {
	case formulaBytes > len(formula) && terms:
		formula = "P1" + strings.Repeat("+1", (formulaBytes-2)/2)
	case formulaBytes > len(formula):
		formula = "P1" + strings.Repeat(" ", formulaBytes-6) + " + 1"
	}
	body := fmt.Sprintf(`{"pins":{"P1":{"dataPointID":"src"}},"parameters":{"formula":%q}}`, formula)
	pid := p.cmd.Process.Pid
	if err := ResetPeakMemory(pid); err != nil {
		return nil, err
	}
	_, before, err := ProcessMemory(pid)
	if err != nil {
		return nil, err
	}
	// A raw connection: the server may answer a body over its limit before
	// reading it (and then close), which net/http's client, still
	// writing, reports as a reset rather than as the answer.
	start := time.Now()
	status, err := postRaw(ctx, p, fmt.Sprintf("/v2/project/%d/virtual_datapoint?type=formula&dataPointID=out", p.ProjectID), []byte(body))
	if err != nil {
		return nil, err
	}
	elapsed := time.Since(start)
	peak, _, err := ProcessMemory(pid)
	if err != nil {
		return nil, err
	}
	return map[string]any{"scenario": "formula", "formula_chars": len(formula), "terms": terms, "body_bytes": len(body), "status": status,
		"rss_before_bytes": before, "peak_rss_bytes": peak, "peak_rss_mib": float64(peak) / (1 << 20), "seconds": elapsed.Seconds()}, nil
}

// postRaw sends a JSON POST as the admin on a connection of its own,
// writing the body while it reads the answer, and returns the status.
func postRaw(ctx context.Context, p *Platform, path string, body []byte) (int, error) {
	var d net.Dialer
	conn, err := d.DialContext(ctx, "tcp", strings.TrimPrefix(p.Base, "http://"))
	if err != nil {
		return 0, err
	}
	defer conn.Close()
	auth := base64.StdEncoding.EncodeToString([]byte(p.Email + ":" + p.Password))
	head := fmt.Sprintf("POST %s HTTP/1.1\r\nHost: bdp\r\nAuthorization: Basic %s\r\nContent-Type: application/json\r\nContent-Length: %d\r\nConnection: close\r\n\r\n",
		path, auth, len(body))
	go func() {
		if _, err := conn.Write(append([]byte(head), body...)); err != nil {
			return // the server answered and closed before the end: its answer is read below
		}
	}()
	_ = conn.SetReadDeadline(time.Now().Add(5 * time.Minute))
	res, err := http.ReadResponse(bufio.NewReader(conn), nil)
	if err != nil {
		return 0, fmt.Errorf("read the answer: %w", err)
	}
	_, _ = io.Copy(io.Discard, res.Body)
	res.Body.Close()
	return res.StatusCode, nil
}
