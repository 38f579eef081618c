package http

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"log/slog"
	"sort"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
)

// Integration tests of api.md 4.1-4.3 (company, projects, users, roles):
// every endpoint answers as documented and its effect is visible through
// another endpoint.

// adAt walks a dotted path ("resource.project.name") through decoded JSON.
func adAt(t *testing.T, v any, path string) any {
	t.Helper()
	cur := v
	for _, seg := range strings.Split(path, ".") {
		m, ok := cur.(map[string]any)
		if !ok {
			t.Fatalf("%s: not an object at %q in %v", path, seg, v)
		}
		if cur, ok = m[seg]; !ok {
			t.Fatalf("%s: no field %q in %v", path, seg, m)
		}
	}
	return cur
}

// adStr reads a string at a dotted path.
func adStr(t *testing.T, v any, path string) string {
	t.Helper()
	s, ok := adAt(t, v, path).(string)
	if !ok {
		t.Fatalf("%s: not a string in %v", path, v)
	}
	return s
}

// adList reads an array of objects at a dotted path; path "" means v
// itself is the array.
func adList(t *testing.T, v any, path string) []map[string]any {
	t.Helper()
	cur := v
	if path != "" {
		cur = adAt(t, v, path)
	}
	raw, ok := cur.([]any)
	if !ok {
		t.Fatalf("%s: not an array: %v", path, cur)
	}
	out := make([]map[string]any, 0, len(raw))
	for _, x := range raw {
		m, ok := x.(map[string]any)
		if !ok {
			t.Fatalf("%s: element is not an object: %v", path, x)
		}
		out = append(out, m)
	}
	return out
}

// adIDs lists the id fields of objects.
func adIDs(t *testing.T, list []map[string]any) []int64 {
	t.Helper()
	ids := make([]int64, 0, len(list))
	for _, m := range list {
		ids = append(ids, num(t, m, "id"))
	}
	return ids
}

func adHas(ids []int64, id int64) bool {
	for _, x := range ids {
		if x == id {
			return true
		}
	}
	return false
}

// adInts reads an array of integers at a dotted path, sorted.
func adInts(t *testing.T, v any, path string) []int64 {
	t.Helper()
	raw, ok := adAt(t, v, path).([]any)
	if !ok {
		t.Fatalf("%s: not an array in %v", path, v)
	}
	out := make([]int64, 0, len(raw))
	for _, x := range raw {
		f, ok := x.(float64)
		if !ok {
			t.Fatalf("%s: element is not a number: %v", path, x)
		}
		out = append(out, int64(f))
	}
	sort.Slice(out, func(i, j int) bool { return out[i] < out[j] })
	return out
}

func adSameInts(a, b []int64) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

// adCatalog is GET /v2/meta/endpoints.
func (e *testEnv) adCatalog() []map[string]any {
	e.t.Helper()
	return adList(e.t, e.do("GET", "/v2/meta/endpoints", nil, nil).want(e.t, 200).List, "")
}

// adRole finds a role by id in a list, nil when absent.
func adRole(t *testing.T, roles []map[string]any, id int64) map[string]any {
	t.Helper()
	for _, r := range roles {
		if num(t, r, "id") == id {
			return r
		}
	}
	return nil
}

// adWantOp checks a success envelope with the given operation.
func adWantOp(t *testing.T, r resp, op string) map[string]any {
	t.Helper()
	res := r.resource(t)
	if r.JSON["operation"] != op {
		t.Fatalf("expected operation %q, got %v: %s", op, r.JSON["operation"], r.Body)
	}
	return res
}

func TestGetCompanyShowsCompanyProjectsAndUsers(t *testing.T) {
	e := newTestEnv(t)
	c := e.newCompany()

	r := e.do("GET", "/v2/company", c.Admin, nil).want(t, 200)
	if num(t, r.JSON, "company.id") != c.ID || !strings.HasPrefix(adStr(t, r.JSON, "company.name"), "company") ||
		adStr(t, r.JSON, "company.description") != "test company" {
		t.Fatalf("wrong company: %s", r.Body)
	}
	if ps := adList(t, r.JSON, "projects"); len(ps) != 0 {
		t.Fatalf("a new company has no projects: %s", r.Body)
	}
	users := adList(t, r.JSON, "users")
	if len(users) != 1 || num(t, users[0], "id") != c.AdminID || users[0]["email"] != c.Admin.email ||
		users[0]["firstName"] != "Ada" || users[0]["lastName"] != "Admin" || num(t, users[0], "company_id") != c.ID {
		t.Fatalf("users should list the admin: %s", r.Body)
	}

	pid, _ := e.newProject(c.Admin)
	u, uid := e.newUser(c)
	r = e.do("GET", "/v2/company", c.Admin, nil).want(t, 200)
	if ids := adIDs(t, adList(t, r.JSON, "projects")); len(ids) != 1 || ids[0] != pid {
		t.Fatalf("projects should list %d: %s", pid, r.Body)
	}
	users = adList(t, r.JSON, "users")
	if ids := adIDs(t, users); len(ids) != 2 || !adHas(ids, uid) {
		t.Fatalf("users should list %d: %s", uid, r.Body)
	}
	if strings.Contains(string(r.Body), "password") || strings.Contains(string(r.Body), u.password) {
		t.Fatalf("company listing leaks passwords: %s", r.Body)
	}

	// Another company sees only its own data.
	other := e.newCompany()
	r = e.do("GET", "/v2/company", other.Admin, nil).want(t, 200)
	if num(t, r.JSON, "company.id") != other.ID || len(adList(t, r.JSON, "projects")) != 0 || len(adList(t, r.JSON, "users")) != 1 {
		t.Fatalf("companies must be separated: %s", r.Body)
	}
}

func TestCreateProjectBothForms(t *testing.T) {
	for _, path := range []string{"/v2/company/project", "/v2/project"} {
		t.Run(path, func(t *testing.T) {
			e := newTestEnv(t)
			c := e.newCompany()
			name := uniq("Project ")
			r := e.do("POST", path, c.Admin, map[string]any{"name": name, "description": "a building"}).want(t, 200)
			res := adWantOp(t, r, "create")
			pid := num(t, res, "project.id")
			if pid <= 0 || num(t, res, "project.company_id") != c.ID || adStr(t, res, "project.name") != name ||
				adStr(t, res, "project.description") != "a building" {
				t.Fatalf("wrong project: %s", r.Body)
			}
			roleID := num(t, res, "role.id")
			if adStr(t, res, "role.name") != "admin" || num(t, res, "role.project_id") != pid {
				t.Fatalf("wrong admin role: %s", r.Body)
			}

			// The admin role holds every project endpoint of the catalog,
			// no company endpoint, and TagAuth name=* read+write.
			held := adInts(t, res, "role.authed_endpoints")
			for _, ep := range e.adCatalog() {
				id := num(t, ep, "id")
				switch ep["tag"] {
				case "project":
					if !adHas(held, id) {
						t.Errorf("admin role lacks project endpoint %v %v", ep["request_method"], ep["path"])
					}
				case "company":
					if adHas(held, id) {
						t.Errorf("admin role holds company endpoint %v %v", ep["request_method"], ep["path"])
					}
				}
			}
			tags := adList(t, res, "role.authed_tags")
			if len(tags) != 1 || tags[0]["key"] != "name" || tags[0]["value"] != "*" || tags[0]["read"] != true ||
				tags[0]["write"] != true || num(t, tags[0], "id") <= 0 {
				t.Fatalf("admin role needs TagAuth name=* read+write: %s", r.Body)
			}

			// Effects: the project exists, the role is listed and assigned
			// to the creator.
			got := e.do("GET", "/v2/project/"+itoa(pid), c.Admin, nil).want(t, 200)
			if got.JSON["name"] != name || got.JSON["description"] != "a building" || num(t, got.JSON, "company_id") != c.ID {
				t.Fatalf("GET project: %s", got.Body)
			}
			if ids := adIDs(t, adList(t, e.do("GET", "/v2/company", c.Admin, nil).want(t, 200).JSON, "projects")); !adHas(ids, pid) {
				t.Fatalf("company does not list the new project")
			}
			roles := adList(t, e.do("GET", "/v2/project/"+itoa(pid)+"/roles", c.Admin, nil).want(t, 200).List, "")
			if len(roles) != 1 || adRole(t, roles, roleID) == nil {
				t.Fatalf("project roles should be just the admin role %d: %v", roleID, roles)
			}
			me := e.do("GET", "/v2/user", c.Admin, nil).want(t, 200)
			if adRole(t, adList(t, me.JSON, "roles"), roleID) == nil {
				t.Fatalf("the creator should hold the admin role: %s", me.Body)
			}

			// Without a description it is empty.
			r = e.do("POST", path, c.Admin, map[string]any{"name": uniq("bare")}).want(t, 200)
			if adStr(t, r.JSON, "resource.project.description") != "" {
				t.Fatalf("description should default to empty: %s", r.Body)
			}
		})
	}
}

func TestCreateProjectCompanyIDMustBeOwn(t *testing.T) {
	e := newTestEnv(t)
	c, other := e.newCompany(), e.newCompany()
	r := e.do("POST", "/v2/project", c.Admin, map[string]any{"name": uniq("p"), "company_id": c.ID}).want(t, 200)
	if num(t, r.JSON, "resource.project.company_id") != c.ID {
		t.Fatalf("wrong company: %s", r.Body)
	}
	e.do("POST", "/v2/project", c.Admin, map[string]any{"name": uniq("p"), "company_id": other.ID}).wantError(t, 403)
	if n := len(adList(t, e.do("GET", "/v2/company", other.Admin, nil).want(t, 200).JSON, "projects")); n != 0 {
		t.Fatalf("a project was created in another company")
	}
	if n := len(adList(t, e.do("GET", "/v2/company", c.Admin, nil).want(t, 200).JSON, "projects")); n != 1 {
		t.Fatalf("expected 1 project, got %d", n)
	}
}

func TestUpdateProject(t *testing.T) {
	e := newTestEnv(t)
	c := e.newCompany()
	pid, _ := e.newProject(c.Admin)
	path := "/v2/project/" + itoa(pid)

	r := e.do("PUT", path, c.Admin, map[string]any{"name": "Renamed", "description": "new text"}).want(t, 200)
	res := adWantOp(t, r, "update")
	if num(t, res, "id") != pid || res["name"] != "Renamed" || res["description"] != "new text" || num(t, res, "company_id") != c.ID {
		t.Fatalf("wrong update answer: %s", r.Body)
	}
	got := e.do("GET", path, c.Admin, nil).want(t, 200)
	if got.JSON["name"] != "Renamed" || got.JSON["description"] != "new text" {
		t.Fatalf("GET does not show the update: %s", got.Body)
	}

	// Only the given field changes.
	e.do("PUT", path, c.Admin, map[string]any{"description": "only this"}).want(t, 200)
	got = e.do("GET", path, c.Admin, nil).want(t, 200)
	if got.JSON["name"] != "Renamed" || got.JSON["description"] != "only this" {
		t.Fatalf("partial update changed the wrong fields: %s", got.Body)
	}

	// An empty body (no body, or {}) is accepted and changes nothing.
	for _, body := range []any{nil, map[string]any{}} {
		r = e.do("PUT", path, c.Admin, body).want(t, 200)
		if adStr(t, r.JSON, "resource.name") != "Renamed" || adStr(t, r.JSON, "resource.description") != "only this" {
			t.Fatalf("empty update changed the project: %s", r.Body)
		}
	}

	// The company listing shows the new name as well.
	for _, p := range adList(t, e.do("GET", "/v2/company", c.Admin, nil).want(t, 200).JSON, "projects") {
		if num(t, p, "id") == pid && p["name"] != "Renamed" {
			t.Fatalf("company listing shows the old name: %v", p)
		}
	}
}

func TestDeleteProjectRemovesEverything(t *testing.T) {
	e := newTestEnv(t)
	c := e.newCompany()
	pid, adminRole := e.newProject(c.Admin)
	keep, _ := e.newProject(c.Admin)
	path := "/v2/project/" + itoa(pid)

	// A second role, assigned to another user, and a datapoint with a tag.
	u, uid := e.newUser(c)
	r := e.do("POST", path+"/role", c.Admin, map[string]any{
		"name": "viewer", "authed_endpoints": []int32{e.endpointID("GET", "/v2/project/{project_id}")},
		"authed_tags": []map[string]any{{"key": "name", "value": "*", "read": true}},
	}).want(t, 200)
	viewer := num(t, r.JSON, "resource.id")
	e.do("POST", fmt.Sprintf("%s/role/%d/user/%d", path, viewer, uid), c.Admin, nil).want(t, 200)
	e.do("GET", path, u, nil).want(t, 200)
	e.do("PUT", "/operator/projects/"+itoa(pid)+"/datapoints/temp1/tags", bearer(testOperatorToken),
		[]map[string]any{{"key": "units", "value": "degC"}}).want(t, 200)

	r = e.do("DELETE", path, c.Admin, nil).want(t, 200)
	res := adWantOp(t, r, "delete")
	if num(t, res, "id") != pid || num(t, res, "company_id") != c.ID {
		t.Fatalf("DELETE should answer the deleted project: %s", r.Body)
	}

	// Gone for everyone: 403 whether or not it exists (decisions.md 3).
	e.do("GET", path, c.Admin, nil).wantError(t, 403)
	e.do("GET", path+"/roles", c.Admin, nil).wantError(t, 403)
	e.do("GET", path, u, nil).wantError(t, 403)
	e.do("DELETE", path, c.Admin, nil).wantError(t, 403)

	// Role assignments are gone from both users.
	me := e.do("GET", "/v2/user", c.Admin, nil).want(t, 200)
	if adRole(t, adList(t, me.JSON, "roles"), adminRole) != nil {
		t.Fatalf("the creator still lists the deleted project's admin role: %s", me.Body)
	}
	if n := len(adList(t, me.JSON, "roles")); n != 1 {
		t.Fatalf("the creator should keep only the other project's admin role: %s", me.Body)
	}
	other := e.do("GET", "/v2/user", u, nil).want(t, 200)
	if len(adList(t, other.JSON, "roles")) != 0 {
		t.Fatalf("the user still lists a role of the deleted project: %s", other.Body)
	}

	// Lists no longer show it; the other project is untouched.
	if ids := adIDs(t, adList(t, e.do("GET", "/v2/company", c.Admin, nil).want(t, 200).JSON, "projects")); len(ids) != 1 || ids[0] != keep {
		t.Fatalf("company projects should be just %d: %v", keep, ids)
	}
	if ids := adIDs(t, adList(t, e.do("GET", "/v2/user/projects", c.Admin, nil).want(t, 200).JSON, "items")); len(ids) != 1 || ids[0] != keep {
		t.Fatalf("user projects should be just %d: %v", keep, ids)
	}
	e.do("GET", "/v2/project/"+itoa(keep), c.Admin, nil).want(t, 200)

	// Settings, quotas and datapoints went with it.
	e.do("GET", "/operator/projects/"+itoa(pid)+"/settings", bearer(testOperatorToken), nil).wantError(t, 404)
	e.do("PUT", "/operator/projects/"+itoa(pid)+"/datapoints/temp1/tags", bearer(testOperatorToken),
		[]map[string]any{{"key": "units", "value": "degC"}}).wantError(t, 404)
}

func TestUserProjects(t *testing.T) {
	e := newTestEnv(t)
	c := e.newCompany()
	p1, _ := e.newProject(c.Admin)
	p2, _ := e.newProject(c.Admin)
	u, uid := e.newUser(c)

	// A company role sees every project of the company.
	r := e.do("GET", "/v2/user/projects", c.Admin, nil).want(t, 200)
	items := adList(t, r.JSON, "items")
	if ids := adIDs(t, items); len(ids) != 2 || !adHas(ids, p1) || !adHas(ids, p2) {
		t.Fatalf("admin should see both projects: %s", r.Body)
	}
	for _, p := range items {
		if num(t, p, "company_id") != c.ID || p["name"] == "" {
			t.Fatalf("project entries need company_id and name: %s", r.Body)
		}
	}

	// A user without roles sees none; with a role in p2, just p2.
	if items := adList(t, e.do("GET", "/v2/user/projects", u, nil).want(t, 200).JSON, "items"); len(items) != 0 {
		t.Fatalf("a user without roles should see no project: %v", items)
	}
	r = e.do("POST", "/v2/project/"+itoa(p2)+"/role", c.Admin, map[string]any{
		"name": "reader", "authed_endpoints": []int32{e.endpointID("GET", "/v2/project/{project_id}")}}).want(t, 200)
	e.do("POST", fmt.Sprintf("/v2/project/%d/role/%d/user/%d", p2, num(t, r.JSON, "resource.id"), uid), c.Admin, nil).want(t, 200)
	if ids := adIDs(t, adList(t, e.do("GET", "/v2/user/projects", u, nil).want(t, 200).JSON, "items")); len(ids) != 1 || ids[0] != p2 {
		t.Fatalf("the user should see just project %d: %v", p2, ids)
	}

	// Another company's admin sees none of them.
	other := e.newCompany()
	if items := adList(t, e.do("GET", "/v2/user/projects", other.Admin, nil).want(t, 200).JSON, "items"); len(items) != 0 {
		t.Fatalf("another company sees projects: %v", items)
	}
}

func TestMetaEndpointsCatalog(t *testing.T) {
	e := newTestEnv(t)

	// No credentials needed; bad ones do not matter either.
	for _, c := range []cred{nil, basic{"nobody@example.com", "wrong-password"}, bearer("garbage")} {
		r := e.do("GET", "/v2/meta/endpoints", c, nil).want(t, 200)
		if len(r.List) == 0 {
			t.Fatalf("empty catalog: %s", r.Body)
		}
	}

	eps := e.adCatalog()
	seen := map[int64]string{}
	byRoute := map[string]int64{}
	for _, ep := range eps {
		id := num(t, ep, "id")
		method, _ := ep["request_method"].(string)
		path, _ := ep["path"].(string)
		key := method + " " + path
		if prev, dup := seen[id]; dup {
			t.Fatalf("endpoint id %d used twice: %s and %s", id, prev, key)
		}
		seen[id] = key
		if id <= 0 {
			t.Fatalf("endpoint ids must be positive (0 means all): %v", ep)
		}
		switch method {
		case "GET", "POST", "PUT", "DELETE":
		default:
			t.Fatalf("bad request_method: %v", ep)
		}
		if !strings.HasPrefix(path, "/v2/") {
			t.Fatalf("path should be a /v2 template: %v", ep)
		}
		if _, dup := byRoute[key]; dup {
			t.Fatalf("route listed twice: %s", key)
		}
		byRoute[key] = id
	}
	for _, want := range []string{
		"GET /v2/company", "POST /v2/company/project", "POST /v2/project", "PUT /v2/project/{project_id}",
		"DELETE /v2/project/{project_id}", "GET /v2/user/projects", "GET /v2/project/{project_id}",
		"POST /v2/company/user", "POST /v2/user", "PUT /v2/user/password", "PUT /v2/user", "GET /v2/user", "DELETE /v2/user",
		"GET /v2/meta/endpoints", "POST /v2/project/{project_id}/role", "POST /v2/company/role",
		"PUT /v2/project/{project_id}/role/{role_id}", "PUT /v2/company/role/{role_id}",
		"POST /v2/project/{project_id}/role/{role_id}/user/{user_id}", "POST /v2/company/role/{role_id}/user/{user_id}",
		"DELETE /v2/project/{project_id}/role/{role_id}/user/{user_id}", "DELETE /v2/company/role/{role_id}/user/{user_id}",
		"DELETE /v2/project/{project_id}/role/{role_id}", "DELETE /v2/company/role/{role_id}", "DELETE /v2/company/roles/{role_id}",
		"GET /v2/project/{project_id}/roles",
	} {
		if _, ok := byRoute[want]; !ok {
			t.Errorf("catalog lacks %s", want)
		}
	}
	// Ids are stable: a second server on the same database (a restart)
	// hands out the same ones, so role grants survive restarts.
	srv2, err := New(context.Background(), Config{TokenSecret: bytes.Repeat([]byte("k"), 32), HashParams: fastHash},
		Deps{Store: e.store, Ingest: e.srv.ingest, Engine: e.srv.engine, Log: slog.New(slog.NewTextHandler(io.Discard, nil)), Registry: prometheus.NewRegistry()})
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range srv2.routes {
		if id, ok := byRoute[r.Method+" "+r.Path]; !ok || id != int64(r.ID) {
			t.Errorf("after a restart %s %s has id %d, before %d", r.Method, r.Path, r.ID, id)
		}
	}
}

func TestCreateUserBothForms(t *testing.T) {
	for _, path := range []string{"/v2/company/user", "/v2/user"} {
		t.Run(path, func(t *testing.T) {
			e := newTestEnv(t)
			c := e.newCompany()
			email := uniq("new.user") + "@example.com"
			r := e.do("POST", path, c.Admin, map[string]any{
				"company_id": c.ID, "firstName": "Nora", "lastName": "New", "email": email, "password": "nora-password",
			}).want(t, 200)
			res := adWantOp(t, r, "create")
			uid := num(t, res, "id")
			if uid <= 0 || num(t, res, "company_id") != c.ID || res["firstName"] != "Nora" || res["lastName"] != "New" || res["email"] != email {
				t.Fatalf("wrong user: %s", r.Body)
			}
			if strings.Contains(string(r.Body), "password") {
				t.Fatalf("the password must never be returned: %s", r.Body)
			}

			// The company lists the user; the user can log in and has no roles.
			if ids := adIDs(t, adList(t, e.do("GET", "/v2/company", c.Admin, nil).want(t, 200).JSON, "users")); !adHas(ids, uid) {
				t.Fatalf("company does not list user %d", uid)
			}
			u := basic{email, "nora-password"}
			me := e.do("GET", "/v2/user", u, nil).want(t, 200)
			if num(t, me.JSON, "user.id") != uid || adStr(t, me.JSON, "user.email") != email ||
				len(adList(t, me.JSON, "roles")) != 0 || len(adList(t, me.JSON, "companyroles")) != 0 {
				t.Fatalf("a new user has no roles: %s", me.Body)
			}
			e.do("GET", "/v2/company", u, nil).wantError(t, 403)

			// company_id may be left out: the caller's company.
			r = e.do("POST", path, c.Admin, map[string]any{
				"firstName": "Otto", "lastName": "Omitted", "email": uniq("otto") + "@example.com", "password": "otto-password",
			}).want(t, 200)
			if num(t, r.JSON, "resource.company_id") != c.ID {
				t.Fatalf("company_id should default to the caller's: %s", r.Body)
			}
		})
	}
}

func TestCreateUserDuplicateEmail(t *testing.T) {
	e := newTestEnv(t)
	c := e.newCompany()
	other := e.newCompany()
	u, _ := e.newUser(c)
	before := e.do("GET", "/v2/company", c.Admin, nil).want(t, 200).Body

	for _, tc := range []struct{ path, email string }{
		{"/v2/company/user", u.email},
		{"/v2/user", u.email},
		{"/v2/company/user", strings.ToUpper(u.email)},
		{"/v2/company/user", " " + u.email + " "},
		{"/v2/company/user", strings.ToUpper(c.Admin.email[:1]) + c.Admin.email[1:]},
	} {
		r := e.do("POST", tc.path, c.Admin, map[string]any{
			"firstName": "Dup", "lastName": "Licate", "email": tc.email, "password": "dup-password"}).wantError(t, 409)
		if r.JSON["operation"] != "create" {
			t.Fatalf("operation should be create: %s", r.Body)
		}
	}
	// Unique across companies as well.
	e.do("POST", "/v2/company/user", other.Admin, map[string]any{
		"firstName": "Dup", "lastName": "Licate", "email": strings.ToUpper(u.email), "password": "dup-password"}).wantError(t, 409)

	if after := e.do("GET", "/v2/company", c.Admin, nil).want(t, 200).Body; string(after) != string(before) {
		t.Fatalf("a rejected duplicate changed the company:\nbefore %s\nafter  %s", before, after)
	}
	// The original credentials still belong to the original user.
	e.do("GET", "/v2/user", u, nil).want(t, 200)
	e.do("GET", "/v2/user", basic{u.email, "dup-password"}, nil).wantError(t, 401)
	// Emails are one address regardless of case, for logging in as well.
	me := e.do("GET", "/v2/user", basic{strings.ToUpper(u.email), u.password}, nil).want(t, 200)
	if adStr(t, me.JSON, "user.email") != u.email {
		t.Fatalf("logged in as someone else: %s", me.Body)
	}
}

func TestUpdateUserChangesOnlyTheCaller(t *testing.T) {
	e := newTestEnv(t)
	c := e.newCompany()
	u, uid := e.newUser(c)
	v, vid := e.newUser(c)

	newEmail := uniq("renamed") + "@example.com"
	r := e.do("PUT", "/v2/user", u, map[string]any{
		"id": vid, "company_id": c.ID + 1000, // ignored: a user changes only themself
		"firstName": "Ulla", "lastName": "Updated", "email": newEmail, "address": "Main St 1", "phone": "+49 30 123",
	}).want(t, 200)
	res := adWantOp(t, r, "update")
	if num(t, res, "id") != uid || num(t, res, "company_id") != c.ID || res["firstName"] != "Ulla" ||
		res["lastName"] != "Updated" || res["email"] != newEmail {
		t.Fatalf("wrong update answer: %s", r.Body)
	}

	// The new email logs in, the old one no longer does.
	u2 := basic{newEmail, u.password}
	me := e.do("GET", "/v2/user", u2, nil).want(t, 200)
	if adStr(t, me.JSON, "user.address") != "Main St 1" || adStr(t, me.JSON, "user.phone") != "+49 30 123" ||
		adStr(t, me.JSON, "user.firstName") != "Ulla" || num(t, me.JSON, "user.id") != uid {
		t.Fatalf("GET /v2/user does not show the update: %s", me.Body)
	}
	e.do("GET", "/v2/user", u, nil).wantError(t, 401)

	// A partial update keeps the other fields.
	e.do("PUT", "/v2/user", u2, map[string]any{"phone": "555"}).want(t, 200)
	me = e.do("GET", "/v2/user", u2, nil).want(t, 200)
	if adStr(t, me.JSON, "user.phone") != "555" || adStr(t, me.JSON, "user.address") != "Main St 1" || adStr(t, me.JSON, "user.lastName") != "Updated" {
		t.Fatalf("partial update lost fields: %s", me.Body)
	}

	// The other user is untouched.
	them := e.do("GET", "/v2/user", v, nil).want(t, 200)
	if num(t, them.JSON, "user.id") != vid || adStr(t, them.JSON, "user.firstName") != "Uma" || adStr(t, them.JSON, "user.email") != v.email {
		t.Fatalf("another user was changed: %s", them.Body)
	}

	// Taking someone else's email, in any case, is a conflict and changes nothing.
	e.do("PUT", "/v2/user", u2, map[string]any{"email": strings.ToUpper(v.email), "firstName": "Thief"}).wantError(t, 409)
	me = e.do("GET", "/v2/user", u2, nil).want(t, 200)
	if adStr(t, me.JSON, "user.email") != newEmail || adStr(t, me.JSON, "user.firstName") != "Ulla" {
		t.Fatalf("a rejected update changed the user: %s", me.Body)
	}

	// There is no way to address another user.
	e.do("PUT", "/v2/user/"+itoa(vid), u2, map[string]any{"firstName": "Thief"}).wantError(t, 404)
	e.do("DELETE", "/v2/user/"+itoa(vid), u2, nil).wantError(t, 404)
	e.do("GET", "/v2/user", v, nil).want(t, 200)
}

func TestDeleteUserDeletesOnlyTheCaller(t *testing.T) {
	e := newTestEnv(t)
	c := e.newCompany()
	pid, _ := e.newProject(c.Admin)
	u, uid := e.newUser(c)
	v, vid := e.newUser(c)

	// Give u a project role and a token, so all of it must go.
	r := e.do("POST", "/v2/project/"+itoa(pid)+"/role", c.Admin, map[string]any{
		"name": "r", "authed_endpoints": []int32{e.endpointID("GET", "/v2/project/{project_id}")}}).want(t, 200)
	roleID := num(t, r.JSON, "resource.id")
	e.do("POST", fmt.Sprintf("/v2/project/%d/role/%d/user/%d", pid, roleID, uid), c.Admin, nil).want(t, 200)
	tok := e.do("POST", "/v2/auth/token", u, nil).want(t, 200).JSON["access_token"].(string)
	e.do("GET", "/v2/user", bearer(tok), nil).want(t, 200)

	r = e.do("DELETE", "/v2/user", u, nil).want(t, 200)
	res := adWantOp(t, r, "delete")
	if num(t, res, "id") != uid || res["email"] != u.email {
		t.Fatalf("DELETE should answer the deleted user: %s", r.Body)
	}

	e.do("GET", "/v2/user", u, nil).wantError(t, 401)
	e.do("GET", "/v2/user", bearer(tok), nil).wantError(t, 401)
	ids := adIDs(t, adList(t, e.do("GET", "/v2/company", c.Admin, nil).want(t, 200).JSON, "users"))
	if adHas(ids, uid) || !adHas(ids, vid) || !adHas(ids, c.AdminID) {
		t.Fatalf("company users after delete: %v", ids)
	}
	// The role stays, without the user.
	roles := adList(t, e.do("GET", "/v2/project/"+itoa(pid)+"/roles", c.Admin, nil).want(t, 200).List, "")
	if adRole(t, roles, roleID) == nil {
		t.Fatalf("deleting a user must not delete their roles")
	}
	e.do("GET", "/v2/user", v, nil).want(t, 200)
	e.do("GET", "/v2/user", c.Admin, nil).want(t, 200)

	// The email is free again.
	e.do("POST", "/v2/company/user", c.Admin, map[string]any{
		"firstName": "Re", "lastName": "Born", "email": u.email, "password": "another-password"}).want(t, 200)
}

func TestChangePassword(t *testing.T) {
	e := newTestEnv(t)
	c := e.newCompany()
	u, _ := e.newUser(c)
	oldTok := e.do("POST", "/v2/auth/token", u, nil).want(t, 200).JSON["access_token"].(string)
	e.do("GET", "/v2/user", bearer(oldTok), nil).want(t, 200)

	// Wrong current password or a short new one: refused, nothing changes.
	e.do("PUT", "/v2/user/password", u, map[string]any{"current_password": "not-the-password", "new_password": "brand-new-password"}).wantError(t, 400)
	e.do("PUT", "/v2/user/password", u, map[string]any{"current_password": u.password, "new_password": "short"}).wantError(t, 400)
	e.do("GET", "/v2/user", u, nil).want(t, 200)
	e.do("GET", "/v2/user", basic{u.email, "brand-new-password"}, nil).wantError(t, 401)
	e.do("GET", "/v2/user", bearer(oldTok), nil).want(t, 200)

	r := e.do("PUT", "/v2/user/password", u, map[string]any{"current_password": u.password, "new_password": "brand-new-password"}).want(t, 200)
	adWantOp(t, r, "update")
	if strings.Contains(string(r.Body), "brand-new-password") {
		t.Fatalf("the password must never be returned: %s", r.Body)
	}

	// Old password: 401 with the challenge; new password works.
	old := e.do("GET", "/v2/user", u, nil).wantError(t, 401)
	if old.Header.Get("WWW-Authenticate") != `Basic realm="bdp"` {
		t.Fatalf("401 without challenge: %v", old.Header)
	}
	nu := basic{u.email, "brand-new-password"}
	e.do("GET", "/v2/user", nu, nil).want(t, 200)

	// A token issued before the change is rejected; a new one works.
	e.do("GET", "/v2/user", bearer(oldTok), nil).wantError(t, 401)
	e.do("POST", "/v2/auth/token", u, nil).wantError(t, 401)
	newTok := e.do("POST", "/v2/auth/token", nu, nil).want(t, 200).JSON["access_token"].(string)
	e.do("GET", "/v2/user", bearer(newTok), nil).want(t, 200)

	// The admin's password is untouched.
	e.do("GET", "/v2/user", c.Admin, nil).want(t, 200)
}

func TestProjectRoleLifecycle(t *testing.T) {
	e := newTestEnv(t)
	c := e.newCompany()
	pid, adminRole := e.newProject(c.Admin)
	u, uid := e.newUser(c)
	base := "/v2/project/" + itoa(pid)
	getProject := e.endpointID("GET", "/v2/project/{project_id}")
	listRoles := e.endpointID("GET", "/v2/project/{project_id}/roles")
	putProject := e.endpointID("PUT", "/v2/project/{project_id}")

	// Create.
	r := e.do("POST", base+"/role", c.Admin, map[string]any{
		"name": "operator", "description": "reads rooms",
		"authed_endpoints": []int32{getProject, listRoles},
		"authed_tags":      []map[string]any{{"key": "name", "value": "room*", "read": true, "write": false}},
	}).want(t, 200)
	res := adWantOp(t, r, "create")
	roleID := num(t, res, "id")
	if roleID <= 0 || roleID == adminRole || res["name"] != "operator" || res["description"] != "reads rooms" || num(t, res, "project_id") != pid {
		t.Fatalf("wrong role: %s", r.Body)
	}
	if got := adInts(t, res, "authed_endpoints"); !adSameInts(got, adSorted(getProject, listRoles)) {
		t.Fatalf("wrong endpoints: %v", got)
	}
	tags := adList(t, res, "authed_tags")
	if len(tags) != 1 || tags[0]["key"] != "name" || tags[0]["value"] != "room*" || tags[0]["read"] != true ||
		tags[0]["write"] != false || num(t, tags[0], "id") <= 0 {
		t.Fatalf("wrong tags: %s", r.Body)
	}
	roles := adList(t, e.do("GET", base+"/roles", c.Admin, nil).want(t, 200).List, "")
	if len(roles) != 2 || adRole(t, roles, roleID) == nil || adRole(t, roles, adminRole) == nil {
		t.Fatalf("roles should list admin and the new role: %v", roles)
	}
	if listed := adRole(t, roles, roleID); listed["name"] != "operator" || listed["description"] != "reads rooms" ||
		!adSameInts(adInts(t, listed, "authed_endpoints"), adSorted(getProject, listRoles)) || len(adList(t, listed, "authed_tags")) != 1 {
		t.Fatalf("listed role differs from the created one: %v", listed)
	}

	// Update: both lists are replaced, not merged.
	r = e.do("PUT", fmt.Sprintf("%s/role/%d", base, roleID), c.Admin, map[string]any{
		"name": "editor", "description": "edits the project",
		"authed_endpoints": []int32{getProject, putProject},
		"authed_tags":      []map[string]any{{"key": "name", "value": "ahu*", "read": true, "write": true}},
	}).want(t, 200)
	res = adWantOp(t, r, "update")
	if num(t, res, "id") != roleID || res["name"] != "editor" || res["description"] != "edits the project" {
		t.Fatalf("wrong update answer: %s", r.Body)
	}
	roles = adList(t, e.do("GET", base+"/roles", c.Admin, nil).want(t, 200).List, "")
	listed := adRole(t, roles, roleID)
	if listed["name"] != "editor" || !adSameInts(adInts(t, listed, "authed_endpoints"), adSorted(getProject, putProject)) {
		t.Fatalf("endpoints not replaced: %v", listed)
	}
	tags = adList(t, listed, "authed_tags")
	if len(tags) != 1 || tags[0]["value"] != "ahu*" || tags[0]["write"] != true {
		t.Fatalf("tags not replaced: %v", listed)
	}
	// An empty list replaces as well.
	e.do("PUT", fmt.Sprintf("%s/role/%d", base, roleID), c.Admin, map[string]any{
		"name": "editor", "authed_endpoints": []int32{getProject, putProject}, "authed_tags": []any{}}).want(t, 200)
	listed = adRole(t, adList(t, e.do("GET", base+"/roles", c.Admin, nil).want(t, 200).List, ""), roleID)
	if len(adList(t, listed, "authed_tags")) != 0 || listed["description"] != "edits the project" {
		t.Fatalf("empty authed_tags should clear the tags and keep the description: %v", listed)
	}

	// Assign: the user holds the role and may use its endpoints.
	e.do("PUT", base, u, map[string]any{"name": "x"}).wantError(t, 403)
	assign := fmt.Sprintf("%s/role/%d/user/%d", base, roleID, uid)
	r = e.do("POST", assign, c.Admin, nil).want(t, 200)
	res = adWantOp(t, r, "create")
	if num(t, res, "role.id") != roleID || num(t, res, "user.id") != uid || adStr(t, res, "user.email") != u.email ||
		adStr(t, res, "role.name") != "editor" {
		t.Fatalf("wrong assignment answer: %s", r.Body)
	}
	me := e.do("GET", "/v2/user", u, nil).want(t, 200)
	if mine := adList(t, me.JSON, "roles"); len(mine) != 1 || num(t, mine[0], "id") != roleID {
		t.Fatalf("the user should hold the role: %s", me.Body)
	}
	e.do("PUT", base, u, map[string]any{"name": "by the editor"}).want(t, 200)
	if got := e.do("GET", base, c.Admin, nil).want(t, 200); got.JSON["name"] != "by the editor" {
		t.Fatalf("the editor's change is not visible: %s", got.Body)
	}
	e.do("GET", base+"/roles", u, nil).wantError(t, 403) // no longer granted after the update

	// Unassign: the role stays, the user loses it.
	r = e.do("DELETE", assign, c.Admin, nil).want(t, 200)
	res = adWantOp(t, r, "delete")
	if num(t, res, "role.id") != roleID || num(t, res, "user.id") != uid {
		t.Fatalf("wrong unassignment answer: %s", r.Body)
	}
	if mine := adList(t, e.do("GET", "/v2/user", u, nil).want(t, 200).JSON, "roles"); len(mine) != 0 {
		t.Fatalf("the user still holds the role: %v", mine)
	}
	e.do("GET", base, u, nil).wantError(t, 403)
	if adRole(t, adList(t, e.do("GET", base+"/roles", c.Admin, nil).want(t, 200).List, ""), roleID) == nil {
		t.Fatalf("unassigning must keep the role")
	}
	e.do("DELETE", assign, c.Admin, nil).wantError(t, 404) // not assigned any more

	// Delete: the role and its assignments go.
	e.do("POST", assign, c.Admin, nil).want(t, 200)
	e.do("GET", base, u, nil).want(t, 200)
	r = e.do("DELETE", fmt.Sprintf("%s/role/%d", base, roleID), c.Admin, nil).want(t, 200)
	res = adWantOp(t, r, "delete")
	if num(t, res, "id") != roleID || res["name"] != "editor" {
		t.Fatalf("DELETE should answer the deleted role: %s", r.Body)
	}
	roles = adList(t, e.do("GET", base+"/roles", c.Admin, nil).want(t, 200).List, "")
	if len(roles) != 1 || adRole(t, roles, adminRole) == nil {
		t.Fatalf("only the admin role should remain: %v", roles)
	}
	if mine := adList(t, e.do("GET", "/v2/user", u, nil).want(t, 200).JSON, "roles"); len(mine) != 0 {
		t.Fatalf("the deleted role is still assigned: %v", mine)
	}
	e.do("GET", base, u, nil).wantError(t, 403)
	e.do("DELETE", fmt.Sprintf("%s/role/%d", base, roleID), c.Admin, nil).wantError(t, 404)
	e.do("POST", assign, c.Admin, nil).wantError(t, 404)
}

func TestProjectRoleAllEndpointsShorthand(t *testing.T) {
	e := newTestEnv(t)
	c := e.newCompany()
	pid, _ := e.newProject(c.Admin)
	u, uid := e.newUser(c)
	base := "/v2/project/" + itoa(pid)
	r := e.do("POST", base+"/role", c.Admin, map[string]any{"name": "all", "authed_endpoints": []int32{0}}).want(t, 200)
	roleID := num(t, r.JSON, "resource.id")
	e.do("POST", fmt.Sprintf("%s/role/%d/user/%d", base, roleID, uid), c.Admin, nil).want(t, 200)
	e.do("GET", base, u, nil).want(t, 200)
	e.do("GET", base+"/roles", u, nil).want(t, 200)
	e.do("PUT", base, u, map[string]any{"description": "by all"}).want(t, 200)
	// 0 covers project endpoints only: company endpoints stay closed.
	e.do("GET", "/v2/company", u, nil).wantError(t, 403)
}

func TestCompanyRoleLifecycle(t *testing.T) {
	e := newTestEnv(t)
	c := e.newCompany()
	u, uid := e.newUser(c)
	getCompany := e.endpointID("GET", "/v2/company")
	listRoles := e.endpointID("GET", "/v2/company/roles")
	createProject := e.endpointID("POST", "/v2/company/project")

	// The company admin role exists and is listed.
	roles := adList(t, e.do("GET", "/v2/company/roles", c.Admin, nil).want(t, 200).List, "")
	if len(roles) != 1 || num(t, roles[0], "id") != c.AdminRoleID || roles[0]["name"] != "admin" || num(t, roles[0], "company_id") != c.ID {
		t.Fatalf("company roles should be just the admin role: %v", roles)
	}

	// Create.
	r := e.do("POST", "/v2/company/role", c.Admin, map[string]any{
		"name": "auditor", "description": "reads the company", "authed_endpoints": []int32{getCompany}}).want(t, 200)
	res := adWantOp(t, r, "create")
	roleID := num(t, res, "id")
	if roleID <= 0 || res["name"] != "auditor" || res["description"] != "reads the company" || num(t, res, "company_id") != c.ID ||
		!adSameInts(adInts(t, res, "authed_endpoints"), adSorted(getCompany)) {
		t.Fatalf("wrong company role: %s", r.Body)
	}
	if _, has := res["authed_tags"]; has {
		t.Fatalf("company roles have no authed_tags: %s", r.Body)
	}
	roles = adList(t, e.do("GET", "/v2/company/roles", c.Admin, nil).want(t, 200).List, "")
	if len(roles) != 2 || adRole(t, roles, roleID) == nil {
		t.Fatalf("roles should list the new role: %v", roles)
	}

	// Assign.
	e.do("GET", "/v2/company", u, nil).wantError(t, 403)
	assign := fmt.Sprintf("/v2/company/role/%d/user/%d", roleID, uid)
	r = e.do("POST", assign, c.Admin, nil).want(t, 200)
	res = adWantOp(t, r, "create")
	if num(t, res, "role.id") != roleID || num(t, res, "user.id") != uid || adStr(t, res, "user.email") != u.email {
		t.Fatalf("wrong assignment answer: %s", r.Body)
	}
	me := e.do("GET", "/v2/user", u, nil).want(t, 200)
	if mine := adList(t, me.JSON, "companyroles"); len(mine) != 1 || num(t, mine[0], "id") != roleID {
		t.Fatalf("the user should hold the company role: %s", me.Body)
	}
	e.do("GET", "/v2/company", u, nil).want(t, 200)
	e.do("GET", "/v2/company/roles", u, nil).wantError(t, 403)

	// Update replaces the endpoint list: the old grant is gone, the new one works.
	r = e.do("PUT", fmt.Sprintf("/v2/company/role/%d", roleID), c.Admin, map[string]any{
		"name": "lister", "description": "lists roles", "authed_endpoints": []int32{listRoles, createProject}}).want(t, 200)
	res = adWantOp(t, r, "update")
	if num(t, res, "id") != roleID || res["name"] != "lister" || res["description"] != "lists roles" ||
		!adSameInts(adInts(t, res, "authed_endpoints"), adSorted(listRoles, createProject)) {
		t.Fatalf("wrong update answer: %s", r.Body)
	}
	listed := adRole(t, adList(t, e.do("GET", "/v2/company/roles", c.Admin, nil).want(t, 200).List, ""), roleID)
	if listed["name"] != "lister" || !adSameInts(adInts(t, listed, "authed_endpoints"), adSorted(listRoles, createProject)) {
		t.Fatalf("GET does not show the update: %v", listed)
	}
	e.do("GET", "/v2/company", u, nil).wantError(t, 403)
	e.do("GET", "/v2/company/roles", u, nil).want(t, 200)
	// A company role holder may create projects; the project admin role goes to them.
	r = e.do("POST", "/v2/company/project", u, map[string]any{"name": uniq("by-lister")}).want(t, 200)
	if mine := adList(t, e.do("GET", "/v2/user", u, nil).want(t, 200).JSON, "roles"); len(mine) != 1 ||
		num(t, mine[0], "id") != num(t, r.JSON, "resource.role.id") {
		t.Fatalf("the creator should hold the new project's admin role: %v", mine)
	}

	// Unassign keeps the role.
	r = e.do("DELETE", assign, c.Admin, nil).want(t, 200)
	res = adWantOp(t, r, "delete")
	if num(t, res, "role.id") != roleID || num(t, res, "user.id") != uid {
		t.Fatalf("wrong unassignment answer: %s", r.Body)
	}
	if mine := adList(t, e.do("GET", "/v2/user", u, nil).want(t, 200).JSON, "companyroles"); len(mine) != 0 {
		t.Fatalf("the user still holds the company role: %v", mine)
	}
	e.do("GET", "/v2/company/roles", u, nil).wantError(t, 403)
	if adRole(t, adList(t, e.do("GET", "/v2/company/roles", c.Admin, nil).want(t, 200).List, ""), roleID) == nil {
		t.Fatalf("unassigning must keep the role")
	}
	e.do("DELETE", assign, c.Admin, nil).wantError(t, 404)
}

func TestDeleteCompanyRoleBothForms(t *testing.T) {
	for _, prefix := range []string{"/v2/company/role/", "/v2/company/roles/"} {
		t.Run(prefix, func(t *testing.T) {
			e := newTestEnv(t)
			c := e.newCompany()
			u, uid := e.newUser(c)
			r := e.do("POST", "/v2/company/role", c.Admin, map[string]any{
				"name": "auditor", "authed_endpoints": []int32{e.endpointID("GET", "/v2/company")}}).want(t, 200)
			roleID := num(t, r.JSON, "resource.id")
			e.do("POST", fmt.Sprintf("/v2/company/role/%d/user/%d", roleID, uid), c.Admin, nil).want(t, 200)
			e.do("GET", "/v2/company", u, nil).want(t, 200)

			r = e.do("DELETE", prefix+itoa(roleID), c.Admin, nil).want(t, 200)
			res := adWantOp(t, r, "delete")
			if num(t, res, "id") != roleID || res["name"] != "auditor" {
				t.Fatalf("DELETE should answer the deleted role: %s", r.Body)
			}
			roles := adList(t, e.do("GET", "/v2/company/roles", c.Admin, nil).want(t, 200).List, "")
			if len(roles) != 1 || num(t, roles[0], "id") != c.AdminRoleID {
				t.Fatalf("only the admin role should remain: %v", roles)
			}
			if mine := adList(t, e.do("GET", "/v2/user", u, nil).want(t, 200).JSON, "companyroles"); len(mine) != 0 {
				t.Fatalf("the deleted role is still assigned: %v", mine)
			}
			e.do("GET", "/v2/company", u, nil).wantError(t, 403)
			e.do("DELETE", prefix+itoa(roleID), c.Admin, nil).wantError(t, 404)
			// The admin is unaffected.
			e.do("GET", "/v2/company", c.Admin, nil).want(t, 200)
		})
	}
}

func adSorted(ids ...int32) []int64 {
	out := make([]int64, len(ids))
	for i, id := range ids {
		out[i] = int64(id)
	}
	sort.Slice(out, func(i, j int) bool { return out[i] < out[j] })
	return out
}

func TestRolePartialUpdateKeepsOmittedFields(t *testing.T) {
	e := newTestEnv(t)
	c := e.newCompany()
	pid, _ := e.newProject(c.Admin)
	base := "/v2/project/" + itoa(pid)
	getProject := e.endpointID("GET", "/v2/project/{project_id}")
	listRoles := e.endpointID("GET", "/v2/project/{project_id}/roles")
	r := e.do("POST", base+"/role", c.Admin, map[string]any{
		"name": "reader", "description": "reads", "authed_endpoints": []int32{getProject, listRoles},
		"authed_tags": []map[string]any{{"key": "name", "value": "a*", "read": true}, {"key": "name", "value": "b*", "read": true}},
	}).want(t, 200)
	roleID := num(t, r.JSON, "resource.id")
	rolePath := fmt.Sprintf("%s/role/%d", base, roleID)
	listed := func() map[string]any {
		t.Helper()
		return adRole(t, adList(t, e.do("GET", base+"/roles", c.Admin, nil).want(t, 200).List, ""), roleID)
	}

	e.do("PUT", rolePath, c.Admin, map[string]any{"description": "still reads"}).want(t, 200)
	got := listed()
	if got["name"] != "reader" || got["description"] != "still reads" ||
		!adSameInts(adInts(t, got, "authed_endpoints"), adSorted(getProject, listRoles)) || len(adList(t, got, "authed_tags")) != 2 {
		t.Fatalf("a description-only update changed other fields: %v", got)
	}
	e.do("PUT", rolePath, c.Admin, map[string]any{"authed_tags": []map[string]any{{"key": "name", "value": "c*", "read": true}}}).want(t, 200)
	got = listed()
	if tags := adList(t, got, "authed_tags"); len(tags) != 1 || tags[0]["value"] != "c*" ||
		!adSameInts(adInts(t, got, "authed_endpoints"), adSorted(getProject, listRoles)) || got["name"] != "reader" {
		t.Fatalf("a tags-only update should replace the tags and keep the rest: %v", got)
	}
	e.do("PUT", rolePath, c.Admin, map[string]any{"authed_endpoints": []int32{listRoles}}).want(t, 200)
	got = listed()
	if !adSameInts(adInts(t, got, "authed_endpoints"), adSorted(listRoles)) || len(adList(t, got, "authed_tags")) != 1 {
		t.Fatalf("an endpoints-only update should replace the endpoints and keep the tags: %v", got)
	}
	e.do("PUT", rolePath, c.Admin, nil).want(t, 200)
	after := listed()
	tags := adList(t, after, "authed_tags")
	if after["name"] != "reader" || after["description"] != "still reads" || !adSameInts(adInts(t, after, "authed_endpoints"), adSorted(listRoles)) ||
		len(tags) != 1 || tags[0]["value"] != "c*" || tags[0]["read"] != true || tags[0]["write"] != false {
		t.Fatalf("an empty update changed the role: %v -> %v", got, after)
	}

	// The same for company roles.
	getCompany := e.endpointID("GET", "/v2/company")
	companyRoles := e.endpointID("GET", "/v2/company/roles")
	r = e.do("POST", "/v2/company/role", c.Admin, map[string]any{"name": "auditor", "description": "audits", "authed_endpoints": []int32{getCompany}}).want(t, 200)
	cr := num(t, r.JSON, "resource.id")
	e.do("PUT", "/v2/company/role/"+itoa(cr), c.Admin, map[string]any{"authed_endpoints": []int32{companyRoles}}).want(t, 200)
	cgot := adRole(t, adList(t, e.do("GET", "/v2/company/roles", c.Admin, nil).want(t, 200).List, ""), cr)
	if cgot["name"] != "auditor" || cgot["description"] != "audits" || !adSameInts(adInts(t, cgot, "authed_endpoints"), adSorted(companyRoles)) {
		t.Fatalf("company role after an endpoints-only update: %v", cgot)
	}
	e.do("PUT", "/v2/company/role/"+itoa(cr), c.Admin, map[string]any{"name": "inspector"}).want(t, 200)
	cgot = adRole(t, adList(t, e.do("GET", "/v2/company/roles", c.Admin, nil).want(t, 200).List, ""), cr)
	if cgot["name"] != "inspector" || !adSameInts(adInts(t, cgot, "authed_endpoints"), adSorted(companyRoles)) {
		t.Fatalf("company role after a name-only update: %v", cgot)
	}
}
