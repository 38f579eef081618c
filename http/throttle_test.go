package http

import (
	nethttp "net/http"
	"net/url"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/openbdp/bdp/auth"
	"github.com/openbdp/bdp/clock"
)

// tokenGrant posts the OAuth2 password grant form.
func (e *testEnv) tokenGrant(email, password string) resp {
	e.t.Helper()
	form := url.Values{"grant_type": {"password"}, "username": {email}, "password": {password}}
	res, err := nethttp.Post(e.base+"/v2/auth/token", "application/x-www-form-urlencoded", strings.NewReader(form.Encode()))
	if err != nil {
		e.t.Fatal(err)
	}
	res.Body.Close()
	return resp{Status: res.StatusCode, Header: res.Header}
}

// wantThrottled checks a 429 with the envelope and a Retry-After within
// the window, and returns the wait.
func wantThrottled(t *testing.T, r resp) time.Duration {
	t.Helper()
	r.wantError(t, 429)
	secs, err := strconv.Atoi(r.Header.Get("Retry-After"))
	if err != nil || secs < 1 || secs > 60 {
		t.Fatalf("Retry-After %q, want 1 to 60 seconds", r.Header.Get("Retry-After"))
	}
	return time.Duration(secs) * time.Second
}

// Wrong passwords beyond the limit answer 429 with Retry-After, for Basic
// and the token grant alike, and then even the right password waits (a
// bearer token does not); once the wait is over, the right password works.
func TestFailedLoginsAreThrottled(t *testing.T) {
	tests := []struct {
		name    string
		limits  auth.ThrottleConfig
		wrongAs func(c company, i int) basic // the i-th wrong login
		scope   string
	}{
		{"one account", auth.ThrottleConfig{}, func(c company, _ int) basic { return basic{c.Admin.email, "wrong"} }, "account"},
		{"one address, many names", auth.ThrottleConfig{AddressFailures: 30},
			func(company, int) basic { return basic{uniq("nobody") + "@example.com", "wrong"} }, "address"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			clk := clock.NewFake(time.Date(2026, 11, 24, 8, 0, 0, 0, time.UTC))
			tt.limits.Now = clk.Now
			e := newTestEnv(t, func(c *Config) { c.LoginThrottle = tt.limits })
			c := e.newCompany()
			tok := e.do("POST", "/v2/auth/token", c.Admin, nil).want(t, 200).JSON["access_token"].(string)

			limit := e.srv.throttle.Config().AccountFailures
			if tt.scope == "address" {
				limit = e.srv.throttle.Config().AddressFailures
			}
			for i := range limit {
				e.do("GET", "/v2/user", tt.wrongAs(c, i), nil).wantError(t, 401)
			}
			wait := wantThrottled(t, e.do("GET", "/v2/user", tt.wrongAs(c, limit), nil))
			wantThrottled(t, e.do("GET", "/v2/user", c.Admin, nil))        // the right password, cached or not
			wantThrottled(t, e.do("POST", "/v2/auth/token", c.Admin, nil)) // Basic at the token grant
			if r := e.tokenGrant(c.Admin.email, c.Admin.password); r.Status != 429 || r.Header.Get("Retry-After") == "" {
				t.Fatalf("password grant while throttled: %d, Retry-After %q", r.Status, r.Header.Get("Retry-After"))
			}
			e.do("GET", "/v2/user", bearer(tok), nil).want(t, 200)

			m := string(e.do("GET", "/metrics", nil, nil).want(t, 200).Body)
			if !strings.Contains(m, `bdp_auth_throttled_total{scope="`+tt.scope+`"} 4`) {
				t.Fatalf("metrics do not count the 4 refused logins by %s:\n%s", tt.scope, grepLines(m, "bdp_auth_throttled"))
			}

			clk.Advance(wait)
			e.do("GET", "/v2/user", c.Admin, nil).want(t, 200)
			e.do("POST", "/v2/auth/token", c.Admin, nil).want(t, 200)
		})
	}
}

func grepLines(s, substr string) string {
	var out []string
	for _, l := range strings.Split(s, "\n") {
		if strings.Contains(l, substr) {
			out = append(out, l)
		}
	}
	return strings.Join(out, "\n")
}

// Every route that takes a password documents its 429.
func TestOpenAPIDocumentsThrottling(t *testing.T) {
	e := newTestEnv(t)
	doc := e.do("GET", "/v2/openapi.json", nil, nil).want(t, 200).JSON
	paths := doc["paths"].(map[string]any)
	checked := 0
	for path, ops := range paths {
		for method, op := range ops.(map[string]any) {
			o := op.(map[string]any)
			_, secured := o["security"]
			if strings.HasPrefix(path, "/operator/") || (!secured && !strings.HasSuffix(path, "/token")) {
				continue
			}
			checked++
			r, ok := o["responses"].(map[string]any)["429"].(map[string]any)
			if !ok {
				t.Errorf("%s %s does not document 429", method, path)
				continue
			}
			if _, ok := r["headers"].(map[string]any)["Retry-After"]; !ok {
				t.Errorf("%s %s: 429 without Retry-After", method, path)
			}
		}
	}
	if checked < 20 {
		t.Fatalf("only %d operations checked", checked)
	}
}

// The current password of a password change is a login attempt too: a
// stolen token does not let its holder guess the password unthrottled.
func TestPasswordChangeGuessesAreThrottled(t *testing.T) {
	clk := clock.NewFake(time.Date(2026, 11, 24, 8, 0, 0, 0, time.UTC))
	e := newTestEnv(t, func(c *Config) { c.LoginThrottle = auth.ThrottleConfig{Now: clk.Now} })
	c := e.newCompany()
	tok := bearer(e.do("POST", "/v2/auth/token", c.Admin, nil).want(t, 200).JSON["access_token"].(string))
	guess := func(current string) resp {
		return e.do("PUT", "/v2/user/password", tok, map[string]any{"current_password": current, "new_password": "another-long-password"})
	}
	for range 10 {
		guess("not-the-password").wantError(t, 400)
	}
	wait := wantThrottled(t, guess("not-the-password"))
	wantThrottled(t, guess(c.Admin.password))               // the right one waits too
	wantThrottled(t, e.do("GET", "/v2/user", c.Admin, nil)) // as do logins of the account
	e.do("GET", "/v2/user", tok, nil).want(t, 200)          // the token itself still works

	clk.Advance(wait)
	guess(c.Admin.password).want(t, 200)
}
