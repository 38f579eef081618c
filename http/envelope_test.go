package http

import (
	"bufio"
	"bytes"
	"log/slog"
	nethttp "net/http"
	"strings"
	"testing"

	"github.com/gofiber/fiber/v2"
	"github.com/openbdp/bdp/store"
)

// Operational endpoints and the cross-cutting parts of every answer:
// request ids, metrics, the 401 challenge and the envelope.

func TestHealthAndReadiness(t *testing.T) {
	e := newTestEnv(t)
	r := e.do("GET", "/healthz", nil, nil).want(t, 200)
	if r.JSON["status"] != "ok" {
		t.Fatalf("healthz: %s", r.Body)
	}
	r = e.do("GET", "/readyz", nil, nil).want(t, 200)
	if r.JSON["status"] != "ready" {
		t.Fatalf("readyz: %s", r.Body)
	}
}

// metricLines returns the bdp_http_requests_total samples of /metrics.
func metricLines(t *testing.T, e *testEnv) []string {
	t.Helper()
	r := e.do("GET", "/metrics", nil, nil).want(t, 200)
	var out []string
	sc := bufio.NewScanner(bytes.NewReader(r.Body))
	for sc.Scan() {
		if strings.HasPrefix(sc.Text(), "bdp_http_requests_total{") {
			out = append(out, sc.Text())
		}
	}
	return out
}

func findMetric(lines []string, parts ...string) string {
	for _, l := range lines {
		all := true
		for _, p := range parts {
			if !strings.Contains(l, p) {
				all = false
				break
			}
		}
		if all {
			return l
		}
	}
	return ""
}

func TestMetricsCountRequestsByRouteTemplate(t *testing.T) {
	e := newTestEnv(t)
	c := e.newCompany()
	pid, _ := e.newProject(c.Admin)
	e.do("GET", "/v2/project/"+itoa(pid), c.Admin, nil).want(t, 200)
	e.do("GET", "/v2/project/"+itoa(pid), c.Admin, nil).want(t, 200)
	e.do("GET", "/v2/project/"+itoa(pid), nil, nil).wantError(t, 401)
	e.do("GET", "/v2/no/such/path/12345", nil, nil).wantError(t, 404)

	lines := metricLines(t, e)
	l := findMetric(lines, `method="GET"`, `route="/v2/project/:project_id"`, `status="200"`)
	if l == "" {
		t.Fatalf("no sample for GET /v2/project/:project_id 200 in:\n%s", strings.Join(lines, "\n"))
	}
	if !strings.HasSuffix(l, " 2") {
		t.Fatalf("expected a count of 2: %s", l)
	}
	if findMetric(lines, `route="/v2/project/:project_id"`, `status="401"`) == "" {
		t.Fatalf("the 401 is not counted:\n%s", strings.Join(lines, "\n"))
	}
	if findMetric(lines, `method="POST"`, `route="/operator/companies"`, `status="201"`) == "" {
		t.Fatalf("operator requests are not counted:\n%s", strings.Join(lines, "\n"))
	}
	// Ids and unknown paths never become label values; methods stay what
	// the client sent (label values outlive the request's buffers).
	for _, l := range lines {
		if !strings.Contains(l, `method="GET"`) && !strings.Contains(l, `method="POST"`) &&
			!strings.Contains(l, `method="PUT"`) && !strings.Contains(l, `method="DELETE"`) {
			t.Fatalf("a sample with a corrupted method label: %s", l)
		}
		if strings.Contains(l, `route="/v2/project/`+itoa(pid)) || strings.Contains(l, "12345") {
			t.Fatalf("a concrete path became a label: %s", l)
		}
	}
	if findMetric(lines, `route="unmatched"`, `status="404"`) == "" {
		t.Fatalf("unknown paths should count as route unmatched:\n%s", strings.Join(lines, "\n"))
	}
}

func TestRequestIDEchoedOrGenerated(t *testing.T) {
	e := newTestEnv(t)
	send := func(path, id string) resp {
		t.Helper()
		return e.do("GET", path, rawHeader{"X-Request-Id", id}, nil)
	}
	for _, path := range []string{"/healthz", "/v2/meta/endpoints", "/v2/user", "/v2/nope"} {
		r := send(path, "client-chosen-id-42")
		if got := r.Header.Get("X-Request-Id"); got != "client-chosen-id-42" {
			t.Fatalf("%s (HTTP %d): X-Request-Id not echoed, got %q", path, r.Status, got)
		}
	}
	seen := map[string]bool{}
	for i := 0; i < 3; i++ {
		for _, path := range []string{"/healthz", "/v2/user"} {
			got := e.do("GET", path, nil, nil).Header.Get("X-Request-Id")
			if len(got) < 8 || seen[got] {
				t.Fatalf("%s: expected a fresh generated request id, got %q", path, got)
			}
			seen[got] = true
		}
	}
	// An absurdly long id is replaced, not echoed.
	long := strings.Repeat("a", 200)
	if got := send("/healthz", long).Header.Get("X-Request-Id"); got == long || got == "" {
		t.Fatalf("a 200-character request id should be replaced, got %q", got)
	}
}

// rawHeader sets one header verbatim.
type rawHeader struct{ name, value string }

func (h rawHeader) apply(r *nethttp.Request) { r.Header.Set(h.name, h.value) }

func TestUnauthenticatedAnswersCarryChallenge(t *testing.T) {
	// Ten wrong logins of the admin below: not enough to be throttled here
	// (throttle_test.go covers that).
	e := newTestEnv(t, func(c *Config) { c.LoginThrottle.AccountFailures = 100 })
	c := e.newCompany()
	var messages []string
	for _, tc := range []struct {
		name string
		cred cred
	}{
		{"no credentials", nil},
		{"wrong password", basic{c.Admin.email, "wrong-password"}},
		{"unknown email", basic{"nobody@example.com", "wrong-password"}},
		{"empty password", basic{c.Admin.email, ""}},
		{"malformed Basic", rawHeader{"Authorization", "Basic !!!not-base64"}},
		{"Basic without colon", rawHeader{"Authorization", "Basic bm8tY29sb24="}},
		{"unknown scheme", rawHeader{"Authorization", "Digest username=x"}},
		{"garbage bearer token", bearer("not.a.token")},
		{"operator token on /v2", bearer(testOperatorToken)},
	} {
		for _, call := range []struct{ method, path, op string }{
			{"GET", "/v2/user", ""},
			{"GET", "/v2/company", ""},
			{"POST", "/v2/company/project", "create"},
			{"PUT", "/v2/user", "update"},
			{"DELETE", "/v2/user", "delete"},
		} {
			r := e.do(call.method, call.path, tc.cred, map[string]any{"name": "x"}).wantError(t, 401)
			if got := r.Header.Get("WWW-Authenticate"); got != `Basic realm="bdp"` {
				t.Fatalf("%s, %s %s: WWW-Authenticate %q", tc.name, call.method, call.path, got)
			}
			if r.JSON["operation"] != call.op {
				t.Fatalf("%s %s: operation should be %q: %s", call.method, call.path, call.op, r.Body)
			}
			biCheckClean(t, r)
			if tc.name == "wrong password" || tc.name == "unknown email" {
				messages = append(messages, r.JSON["error"].(string))
			}
		}
	}
	// A wrong password and an unknown email read the same: the answer does
	// not tell which emails exist.
	for _, m := range messages {
		if m != messages[0] {
			t.Fatalf("error texts differ between wrong password and unknown email: %q vs %q", messages[0], m)
		}
	}
	// Nothing was created or deleted by the rejected calls.
	r := e.do("GET", "/v2/company", c.Admin, nil).want(t, 200)
	if len(adList(t, r.JSON, "projects")) != 0 || len(adList(t, r.JSON, "users")) != 1 {
		t.Fatalf("rejected calls changed the company: %s", r.Body)
	}
	// 403 is not a challenge.
	u, _ := e.newUser(c)
	if r := e.do("GET", "/v2/company", u, nil).wantError(t, 403); r.Header.Get("WWW-Authenticate") != "" {
		t.Fatalf("403 should not carry a challenge: %v", r.Header)
	}
}

func TestEnvelopeShape(t *testing.T) {
	e := newTestEnv(t)
	c := e.newCompany()

	// Success: exactly success, operation and resource.
	r := e.do("POST", "/v2/company/project", c.Admin, map[string]any{"name": "shape"}).want(t, 200)
	if len(r.JSON) != 3 || r.JSON["success"] != true || r.JSON["operation"] != "create" || r.JSON["resource"] == nil {
		t.Fatalf("success envelope: %s", r.Body)
	}
	if _, has := r.JSON["error"]; has {
		t.Fatalf("a success carries no error: %s", r.Body)
	}
	if ct := r.Header.Get("Content-Type"); !strings.HasPrefix(ct, "application/json") {
		t.Fatalf("Content-Type %q", ct)
	}
	// The password change has no resource to show: an empty object.
	u, _ := e.newUser(c)
	r = e.do("PUT", "/v2/user/password", u, map[string]any{"current_password": u.password, "new_password": "another-password"}).want(t, 200)
	if res, ok := r.JSON["resource"].(map[string]any); !ok || len(res) != 0 {
		t.Fatalf("resource should be an empty object: %s", r.Body)
	}

	// Failure: exactly success false, error and operation.
	r = e.do("POST", "/v2/company/project", c.Admin, map[string]any{}).wantError(t, 400)
	if len(r.JSON) != 3 || r.JSON["operation"] != "create" {
		t.Fatalf("failure envelope: %s", r.Body)
	}
	if ct := r.Header.Get("Content-Type"); !strings.HasPrefix(ct, "application/json") {
		t.Fatalf("Content-Type %q", ct)
	}
	r = e.do("GET", "/v2/nowhere", nil, nil).wantError(t, 404)
	if len(r.JSON) != 3 || r.JSON["operation"] != "" {
		t.Fatalf("404 envelope: %s", r.Body)
	}
}

// A panicking handler answers 500 with the envelope, is logged with the
// request id and its stack, and the server goes on serving.
func TestPanicAnswers500Envelope(t *testing.T) {
	var logs bytes.Buffer
	e := newTestEnv(t, func(c *Config) {
		c.extraRoutes = []*route{{Method: "GET", Path: "/v2/test/panic", Tag: store.TagMeta,
			Handle: func(*fiber.Ctx, *call) (any, error) { panic("handler bug: SELECT secret FROM users") }}}
	})
	e.srv.log = slog.New(slog.NewJSONHandler(&logs, nil))
	r := e.do("GET", "/v2/test/panic", nil, nil).wantError(t, 500)
	if strings.Contains(string(r.Body), "SELECT") || strings.Contains(string(r.Body), "goroutine") {
		t.Fatalf("panic details reach the client: %s", r.Body)
	}
	id := r.Header.Get("X-Request-Id")
	if id == "" || !strings.Contains(logs.String(), id) || !strings.Contains(logs.String(), "handler bug") ||
		!strings.Contains(logs.String(), "goroutine") {
		t.Fatalf("panic not logged with request id %q and stack:\n%s", id, logs.String())
	}
	e.do("GET", "/v2/meta/endpoints", nil, nil).want(t, 200)
}
