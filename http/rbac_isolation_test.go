package http

import (
	"fmt"
	"regexp"
	"strings"
	"testing"

	"github.com/openbdp/bdp/store"
)

// RBAC through real HTTP: other companies, missing projects and users without roles.

// rbFill turns a path template into a concrete path; a project route
// without {project_id} in its path gets it as a query parameter.
func rbFill(rt *route, pid, roleID, userID int64) string {
	p := strings.NewReplacer("{project_id}", itoa(pid), "{role_id}", itoa(roleID), "{user_id}", itoa(userID)).Replace(rt.Path)
	p = regexp.MustCompile(`\{[^}]+\}`).ReplaceAllString(p, "1")
	if rt.Tag == store.TagProject && !strings.Contains(rt.Path, "{project_id}") {
		p += "?project_id=" + itoa(pid)
	}
	return p
}

// TestRBACOtherCompanyProjects: a company admin holds everything in their
// own company and nothing in another; another company's project and a
// project that does not exist look alike.
func TestRBACOtherCompanyProjects(t *testing.T) {
	e := newTestEnv(t)
	a, b := e.newCompany(), e.newCompany()
	pa, _ := e.newProject(a.Admin)
	pb, pbAdminRole := e.newProject(b.Admin)
	bUser, bUserID := e.newUser(b)
	missing := pb + 1_000_000
	before := e.do("GET", "/v2/project/"+itoa(pb), b.Admin, nil).want(t, 200)
	rolesBefore := rbProjectRoles(e, b.Admin, pb)
	aToken := rbToken(e, a.Admin)

	// The admin of A may use their own project.
	e.do("GET", "/v2/project/"+itoa(pa), a.Admin, nil).want(t, 200)
	e.do("GET", "/v2/project/"+itoa(pa), aToken, nil).want(t, 200)

	normalize := func(msg string, id int64) string {
		return regexp.MustCompile(`\b`+itoa(id)+`\b`).ReplaceAllString(msg, "N")
	}
	checked := 0
	for _, rt := range e.srv.routes {
		if rt.Tag != store.TagProject {
			continue
		}
		for _, as := range []cred{a.Admin, aToken} {
			var body any
			if rt.Method == "POST" || rt.Method == "PUT" {
				body = rbRoleBody("stolen", []int32{0}, rbTag("name", "*", true, true))
			}
			other := e.do(rt.Method, rbFill(rt, pb, pbAdminRole, bUserID), as, body).wantError(t, 403)
			none := e.do(rt.Method, rbFill(rt, missing, pbAdminRole, bUserID), as, body).wantError(t, 403)
			om, nm := other.JSON["error"].(string), none.JSON["error"].(string)
			if normalize(om, pb) != normalize(nm, missing) {
				t.Errorf("%s %s: another company's project answers %q, a missing one %q: existence leaks", rt.Method, rt.Path, om, nm)
			}
			checked++
		}
	}
	if want := 2 * catalogCount(e, store.TagProject); checked != want {
		t.Fatalf("%d checks of project routes, want %d: every project route of the catalog, with both credentials", checked, want)
	}

	// Nothing of B changed: the project, its roles, its users' roles.
	after := e.do("GET", "/v2/project/"+itoa(pb), b.Admin, nil).want(t, 200)
	if string(after.Body) != string(before.Body) {
		t.Errorf("B's project changed: %s -> %s", before.Body, after.Body)
	}
	if got := rbProjectRoles(e, b.Admin, pb); got != rolesBefore {
		t.Errorf("B's project roles changed: %s -> %s", rolesBefore, got)
	}
	u := e.do("GET", "/v2/user", bUser, nil).want(t, 200)
	if roles, _ := u.JSON["roles"].([]any); len(roles) != 0 {
		t.Errorf("B's user got roles: %s", u.Body)
	}
	// A's project listing does not show B's project.
	for _, as := range []cred{a.Admin, aToken} {
		ps := e.do("GET", "/v2/user/projects", as, nil).want(t, 200)
		if len(ps.List) != 1 || num(t, ps.List[0], "id") != pa {
			t.Errorf("A's admin should see exactly project %d: %s", pa, ps.Body)
		}
	}
}

// TestRBACNoRoles: a new user may use the meta and user endpoints only;
// every other endpoint answers 403 naming the endpoint.
func TestRBACNoRoles(t *testing.T) {
	e := newTestEnv(t)
	c := e.newCompany()
	pid, adminRole := e.newProject(c.Admin)
	u, uid := e.newUser(c)
	tok := rbToken(e, u)

	for _, as := range []cred{u, tok} {
		e.do("GET", "/v2/meta/endpoints", as, nil).want(t, 200)
		r := e.do("GET", "/v2/user", as, nil).want(t, 200)
		if num(t, r.JSON, "user.id") != uid {
			t.Fatalf("GET /v2/user answers another user: %s", r.Body)
		}
		e.do("PUT", "/v2/user", as, map[string]any{"firstName": "Nora", "phone": "+41 00"}).want(t, 200)
		ps := e.do("GET", "/v2/user/projects", as, nil).want(t, 200)
		if ps.List == nil || len(ps.List) != 0 {
			t.Fatalf("a user without roles sees projects: %s", ps.Body)
		}
	}
	if r := e.do("GET", "/v2/user", u, nil).want(t, 200); r.JSON["user"].(map[string]any)["firstName"] != "Nora" {
		t.Fatalf("PUT /v2/user did not change the profile: %s", r.Body)
	}
	e.do("GET", "/v2/meta/endpoints", nil, nil).want(t, 200)

	rolesBefore := rbProjectRoles(e, c.Admin, pid)
	companyRolesBefore := rbCompanyRoles(e, c.Admin)
	projectBefore := string(e.do("GET", "/v2/project/"+itoa(pid), c.Admin, nil).want(t, 200).Body)
	denied := 0
	for _, rt := range e.srv.routes {
		if rt.Tag != store.TagCompany && rt.Tag != store.TagProject {
			continue
		}
		var body any
		switch {
		case strings.Contains(rt.Path, "role"):
			body = rbRoleBody("mine", []int32{0}, rbTag("name", "*", true, true))
		case rt.Method == "POST" || rt.Method == "PUT":
			body = map[string]any{"name": "mine", "firstName": "X", "lastName": "Y", "email": uniq("x") + "@example.com", "password": "long-enough-pw"}
		}
		for _, as := range []cred{u, tok} {
			r := e.do(rt.Method, rbFill(rt, pid, adminRole, uid), as, body)
			rbDenied(t, r, rt.ID, rt.Method, rt.Path)
			denied++
		}
	}
	if want := 2 * (catalogCount(e, store.TagCompany) + catalogCount(e, store.TagProject)); denied != want {
		t.Fatalf("%d checks of company and project routes, want %d: every one of the catalog, with both credentials", denied, want)
	}
	// The decisions.md example, verbatim.
	r := e.do("POST", fmt.Sprintf("/v2/project/%d/role", pid), u, rbRoleBody("x", nil))
	want := fmt.Sprintf("unauthorized access to endpoint %d: POST /v2/project/{project_id}/role", e.endpointID("POST", "/v2/project/{project_id}/role"))
	if r.JSON["error"] != want {
		t.Fatalf("error %q, want %q", r.JSON["error"], want)
	}

	// Nothing happened: no roles, no project change, no new users.
	if got := rbProjectRoles(e, c.Admin, pid); got != rolesBefore {
		t.Errorf("project roles changed: %s -> %s", rolesBefore, got)
	}
	if got := rbCompanyRoles(e, c.Admin); got != companyRolesBefore {
		t.Errorf("company roles changed: %s -> %s", companyRolesBefore, got)
	}
	if got := string(e.do("GET", "/v2/project/"+itoa(pid), c.Admin, nil).want(t, 200).Body); got != projectBefore {
		t.Errorf("project changed: %s -> %s", projectBefore, got)
	}
	co := e.do("GET", "/v2/company", c.Admin, nil).want(t, 200)
	if users, _ := co.JSON["users"].([]any); len(users) != 2 {
		t.Errorf("company has %d users, want 2 (admin and the roleless user): %s", len(users), co.Body)
	}
	if projects, _ := co.JSON["projects"].([]any); len(projects) != 1 {
		t.Errorf("company has %d projects, want 1: %s", len(projects), co.Body)
	}
	me := e.do("GET", "/v2/user", u, nil).want(t, 200)
	if roles, _ := me.JSON["roles"].([]any); len(roles) != 0 {
		t.Errorf("the roleless user got project roles: %s", me.Body)
	}
	if roles, _ := me.JSON["companyroles"].([]any); len(roles) != 0 {
		t.Errorf("the roleless user got company roles: %s", me.Body)
	}
}

// TestRBACAssignAcrossCompanies: users of another company are as unknown
// as users that do not exist.
func TestRBACAssignAcrossCompanies(t *testing.T) {
	e := newTestEnv(t)
	a, b := e.newCompany(), e.newCompany()
	pa, paAdmin := e.newProject(a.Admin)
	bUser, bUserID := e.newUser(b)
	missing := bUserID + 1_000_000

	for _, uid := range []int64{bUserID, b.AdminID, missing} {
		e.do("POST", fmt.Sprintf("/v2/project/%d/role/%d/user/%d", pa, paAdmin, uid), a.Admin, nil).wantError(t, 404)
		e.do("POST", fmt.Sprintf("/v2/company/role/%d/user/%d", a.AdminRoleID, uid), a.Admin, nil).wantError(t, 404)
		e.do("DELETE", fmt.Sprintf("/v2/project/%d/role/%d/user/%d", pa, paAdmin, uid), a.Admin, nil).wantError(t, 404)
		e.do("DELETE", fmt.Sprintf("/v2/company/role/%d/user/%d", a.AdminRoleID, uid), a.Admin, nil).wantError(t, 404)
	}
	for _, as := range []basic{bUser, b.Admin} {
		e.do("GET", "/v2/project/"+itoa(pa), as, nil).wantError(t, 403)
		me := e.do("GET", "/v2/user", as, nil).want(t, 200)
		for _, r := range append(me.JSON["roles"].([]any), me.JSON["companyroles"].([]any)...) {
			if m := r.(map[string]any); int64(m["id"].(float64)) == paAdmin || int64(m["id"].(float64)) == a.AdminRoleID {
				t.Fatalf("a user of B holds a role of A: %s", me.Body)
			}
		}
	}
	e.do("GET", "/v2/company", bUser, nil).wantError(t, 403)
	co := e.do("GET", "/v2/company", b.Admin, nil).want(t, 200)
	if num(t, co.JSON, "company.id") != b.ID {
		t.Fatalf("B's admin sees company %s", co.Body)
	}
	// A's roles cannot be handed out by B's admin either.
	e.do("POST", fmt.Sprintf("/v2/company/role/%d/user/%d", a.AdminRoleID, b.AdminID), b.Admin, nil).wantError(t, 404)
}
