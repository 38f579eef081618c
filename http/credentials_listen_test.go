package http

import (
	"context"
	"fmt"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/openbdp/bdp/auth"
	"github.com/openbdp/bdp/store"
)

// A password reset by another process (bdp admin) reaches a running
// server at once: the old password, cached, and the tokens issued with it
// stop working, and the new password works.
func TestPasswordResetElsewhereTakesEffectAtOnce(t *testing.T) {
	e := newTestEnv(t) // credentials cached for a minute
	c := e.newCompany()
	e.do("GET", "/v2/user", c.Admin, nil).want(t, 200) // now in the cache
	tok := bearer(e.do("POST", "/v2/auth/token", c.Admin, nil).want(t, 200).JSON["access_token"].(string))
	e.do("GET", "/v2/user", tok, nil).want(t, 200)

	ctx := context.Background()
	other, err := store.Open(ctx, e.dbURL) // as bdp admin does: its own pool
	if err != nil {
		t.Fatal(err)
	}
	defer other.Close()
	_, err = ResetPassword(ctx, other, auth.NewHasher(fastHash, 1), c.Admin.email, "a-brand-new-password")
	if err != nil {
		t.Fatal(err)
	}
	e.do("GET", "/v2/user", basic{c.Admin.email, "a-brand-new-password"}, nil).want(t, 200)
	// The notice travels asynchronously; "at once" is well under a second.
	deadline := time.Now().Add(2 * time.Second)
	for {
		oldPw := e.do("GET", "/v2/user", c.Admin, nil).Status
		oldTok := e.do("GET", "/v2/user", tok, nil).Status
		if oldPw == 401 && oldTok == 401 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("2 s after the reset: old password %d, old token %d; want 401 for both", oldPw, oldTok)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// A change made through one server reaches a second server on the same
// database at once: its cached password, the tokens issued before and the
// roles it holds stop working there too, well before its caches expire
// (credentials a minute, roles five seconds).
func TestAccessChangesReachEveryServerAtOnce(t *testing.T) {
	a := newTestEnv(t)
	b := a.twin()
	cases := []struct {
		name string
		// change is made through server a; refused then lists what b
		// must refuse at once, each as request, credentials and status.
		change func(t *testing.T, c company, u basic, uid, pid, rid int64) []check
	}{
		{"password change", func(t *testing.T, c company, u basic, _, _, _ int64) []check {
			tok := b.token(u)
			a.do("PUT", "/v2/user/password", u, map[string]any{"current_password": u.password, "new_password": "a-new-password"}).want(t, 200)
			return []check{{"/v2/user", u, 401}, {"/v2/user", tok, 401}, {"/v2/user", basic{u.email, "a-new-password"}, 200}}
		}},
		{"password change as a form", func(t *testing.T, c company, u basic, _, _, _ int64) []check {
			tok := b.token(u)
			a.doForm("PUT", "/v2/user/password", u, url.Values{"current_password": {u.password}, "new_password": {"a-new-password"}}).want(t, 200)
			return []check{{"/v2/user", u, 401}, {"/v2/user", tok, 401}}
		}},
		{"user deleted", func(t *testing.T, c company, u basic, _, _, _ int64) []check {
			tok := b.token(u)
			a.do("DELETE", "/v2/user", u, nil).want(t, 200)
			return []check{{"/v2/user", u, 401}, {"/v2/user", tok, 401}}
		}},
		{"email changed", func(t *testing.T, c company, u basic, _, _, _ int64) []check {
			a.do("PUT", "/v2/user", u, map[string]any{"email": "moved-" + u.email}).want(t, 200)
			return []check{{"/v2/user", u, 401}, {"/v2/user", basic{"moved-" + u.email, u.password}, 200}}
		}},
		{"project role taken", func(t *testing.T, c company, u basic, uid, pid, rid int64) []check {
			a.do("DELETE", fmt.Sprintf("/v2/project/%d/role/%d/user/%d", pid, rid, uid), c.Admin, nil).want(t, 200)
			return []check{{fmt.Sprintf("/v2/project/%d", pid), u, 403}}
		}},
		{"project role deleted", func(t *testing.T, c company, u basic, uid, pid, rid int64) []check {
			a.do("DELETE", fmt.Sprintf("/v2/project/%d/role/%d", pid, rid), c.Admin, nil).want(t, 200)
			return []check{{fmt.Sprintf("/v2/project/%d", pid), u, 403}}
		}},
		{"project role narrowed", func(t *testing.T, c company, u basic, uid, pid, rid int64) []check {
			none := []int32{a.endpointID("GET", "/v2/user")}
			a.do("PUT", fmt.Sprintf("/v2/project/%d/role/%d", pid, rid), c.Admin, map[string]any{"authed_endpoints": none}).want(t, 200)
			return []check{{fmt.Sprintf("/v2/project/%d", pid), u, 403}}
		}},
		{"company role taken", func(t *testing.T, c company, u basic, uid, pid, rid int64) []check {
			crid := rbCreateCompanyRole(a, c.Admin, []int32{0})
			a.do("POST", fmt.Sprintf("/v2/company/role/%d/user/%d", crid, uid), c.Admin, nil).want(t, 200)
			b.soon(t, []check{{"/v2/company", u, 200}}) // b caches the company role
			a.do("DELETE", fmt.Sprintf("/v2/company/role/%d/user/%d", crid, uid), c.Admin, nil).want(t, 200)
			return []check{{"/v2/company", u, 403}}
		}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			c := a.newCompany()
			u, uid := a.newUser(c)
			pid, _ := a.newProject(c.Admin)
			rid := rbCreateProjectRole(a, c.Admin, pid, []int32{0})
			rbAssignProjectRole(a, c.Admin, pid, rid, uid)
			// b has the password verified and the roles loaded.
			b.do("GET", "/v2/user", u, nil).want(t, 200)
			b.do("GET", fmt.Sprintf("/v2/project/%d", pid), u, nil).want(t, 200)

			b.soon(t, tc.change(t, c, u, uid, pid, rid))
		})
	}
}

type check struct {
	path string
	as   cred
	want int
}

// soon fails t unless every check is answered as it wants within a
// second: a notice travels asynchronously, and "at once" is well under
// the caches' lifetimes.
func (e *testEnv) soon(t *testing.T, checks []check) {
	t.Helper()
	deadline := time.Now().Add(time.Second)
	for {
		var wrong []string
		for _, ck := range checks {
			if got := e.do("GET", ck.path, ck.as, nil).Status; got != ck.want {
				wrong = append(wrong, fmt.Sprintf("GET %s as %v: %d, want %d", ck.path, ck.as, got, ck.want))
			}
		}
		if len(wrong) == 0 {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("1 s after the change, the other server answers: %s", strings.Join(wrong, "; "))
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// token issues a bearer token through this server.
func (e *testEnv) token(u basic) bearer {
	e.t.Helper()
	return bearer(e.do("POST", "/v2/auth/token", u, nil).want(e.t, 200).JSON["access_token"].(string))
}

// A project deleted through one server is gone on another at once: an
// upload there is refused as on the server that deleted it (403: a project
// that does not exist is nobody's business, decisions.md 3) and stores
// nothing, instead of being taken under the project and datapoint ids
// that server had cached.
func TestProjectDeletedReachesEveryServerAtOnce(t *testing.T) {
	a := newTestEnv(t)
	b := a.twin()
	c := a.newCompany()
	pid, _ := a.newProject(c.Admin)
	upload := fmt.Sprintf("/v2/project/%d/timeseries", pid)
	obs := map[string]any{"src": []map[string]any{{"time": "2026-01-05T10:00:00Z", "value": 1}}}
	b.do("POST", upload, c.Admin, obs).want(t, 200) // b caches the project and src's id
	src := a.sqlFloat(`SELECT id FROM datapoints WHERE project_id = $1 AND datapoint_id = 'src'`, pid)
	a.do("DELETE", fmt.Sprintf("/v2/project/%d", pid), c.Admin, nil).want(t, 200)
	a.do("POST", upload, c.Admin, obs).wantError(t, 403)
	for deadline := time.Now().Add(time.Second); ; time.Sleep(20 * time.Millisecond) {
		r := b.do("POST", upload, c.Admin, obs)
		if r.Status == 403 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("1 s after the project's deletion through another server, an upload answers %d %s, want 403 as there", r.Status, r.Body)
		}
	}
	if n := a.sqlFloat(`SELECT count(*) FROM observations WHERE datapoint = $1`, int64(src)); n != 0 {
		t.Fatalf("%v observations stored under the deleted project's datapoint id", n)
	}
}
