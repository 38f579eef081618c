package http

import (
	"fmt"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/openbdp/bdp/store"
)

// The RBAC matrix through real HTTP: who may call what, in which project,
// and that nobody can hand out more than they hold.

// rbTag is a TagAuth in a role request.
func rbTag(key, value string, read, write bool) map[string]any {
	return map[string]any{"key": key, "value": value, "read": read, "write": write}
}

func rbRoleBody(name string, endpoints []int32, tags ...map[string]any) map[string]any {
	if endpoints == nil {
		endpoints = []int32{}
	}
	if tags == nil {
		tags = []map[string]any{}
	}
	return map[string]any{"name": name, "description": "rbac test role", "authed_endpoints": endpoints, "authed_tags": tags}
}

// rbCreateProjectRole creates a project role as the given caller and
// returns its id.
func rbCreateProjectRole(e *testEnv, as cred, pid int64, endpoints []int32, tags ...map[string]any) int64 {
	e.t.Helper()
	r := e.do("POST", fmt.Sprintf("/v2/project/%d/role", pid), as, rbRoleBody(uniq("role"), endpoints, tags...)).want(e.t, 200)
	return num(e.t, r.resource(e.t), "id")
}

func rbCreateCompanyRole(e *testEnv, as cred, endpoints []int32) int64 {
	e.t.Helper()
	r := e.do("POST", "/v2/company/role", as, map[string]any{"name": uniq("crole"), "authed_endpoints": endpoints}).want(e.t, 200)
	return num(e.t, r.resource(e.t), "id")
}

func rbAssignProjectRole(e *testEnv, as cred, pid, roleID, userID int64) {
	e.t.Helper()
	e.do("POST", fmt.Sprintf("/v2/project/%d/role/%d/user/%d", pid, roleID, userID), as, nil).want(e.t, 200)
}

func rbAssignCompanyRole(e *testEnv, as cred, roleID, userID int64) {
	e.t.Helper()
	e.do("POST", fmt.Sprintf("/v2/company/role/%d/user/%d", roleID, userID), as, nil).want(e.t, 200)
}

// rbToken issues a bearer token for Basic credentials.
func rbToken(e *testEnv, b basic) bearer {
	e.t.Helper()
	r := e.do("POST", "/v2/auth/token", b, nil).want(e.t, 200)
	tok, _ := r.JSON["access_token"].(string)
	if tok == "" {
		e.t.Fatalf("no access_token: %s", r.Body)
	}
	return bearer(tok)
}

// rbProjectRoles lists the roles of a project (as someone allowed to),
// as a canonical JSON text for before/after comparisons.
func rbProjectRoles(e *testEnv, as cred, pid int64) string {
	e.t.Helper()
	r := e.do("GET", fmt.Sprintf("/v2/project/%d/roles", pid), as, nil).want(e.t, 200)
	return string(r.Body)
}

func rbCompanyRoles(e *testEnv, as cred) string {
	e.t.Helper()
	return string(e.do("GET", "/v2/company/roles", as, nil).want(e.t, 200).Body)
}

// rbProjectRole returns one role from the project's role list.
func rbProjectRole(e *testEnv, as cred, pid, roleID int64) map[string]any {
	e.t.Helper()
	r := e.do("GET", fmt.Sprintf("/v2/project/%d/roles", pid), as, nil).want(e.t, 200)
	for _, v := range r.List {
		m, _ := v.(map[string]any)
		if m != nil && int64(m["id"].(float64)) == roleID {
			return m
		}
	}
	e.t.Fatalf("role %d not in project %d: %s", roleID, pid, r.Body)
	return nil
}

// rbDenied checks a 403 whose error names the endpoint (decisions.md 3).
func rbDenied(t *testing.T, r resp, id int32, method, template string) {
	t.Helper()
	r.wantError(t, 403)
	msg, _ := r.JSON["error"].(string)
	want := fmt.Sprintf("endpoint %d: %s %s", id, method, template)
	if !strings.Contains(msg, "unauthorized access") || !strings.Contains(msg, want) {
		t.Fatalf("error %q does not say unauthorized access to %q", msg, want)
	}
}

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
	if checked < 2*9 {
		t.Fatalf("only %d project routes checked", checked)
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
		items, _ := ps.JSON["items"].([]any)
		if len(items) != 1 || num(t, items[0], "id") != pa {
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
		if items, _ := ps.JSON["items"].([]any); len(items) != 0 {
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
	if denied < 2*20 {
		t.Fatalf("only %d company and project routes checked", denied)
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

// TestRBACProjectRoleScope: a project role grants its endpoints in its
// project only.
func TestRBACProjectRoleScope(t *testing.T) {
	e := newTestEnv(t)
	c := e.newCompany()
	p1, _ := e.newProject(c.Admin)
	p2, p2Admin := e.newProject(c.Admin)
	u, uid := e.newUser(c)
	getProject := e.endpointID("GET", "/v2/project/{project_id}")
	putProject := e.endpointID("PUT", "/v2/project/{project_id}")
	listRoles := e.endpointID("GET", "/v2/project/{project_id}/roles")
	viewer := rbCreateProjectRole(e, c.Admin, p1, []int32{getProject})
	rbAssignProjectRole(e, c.Admin, p1, viewer, uid)

	for _, as := range []cred{u, rbToken(e, u)} {
		r := e.do("GET", "/v2/project/"+itoa(p1), as, nil).want(t, 200)
		if num(t, r.JSON, "id") != p1 {
			t.Fatalf("wrong project: %s", r.Body)
		}
		rbDenied(t, e.do("PUT", "/v2/project/"+itoa(p1), as, map[string]any{"name": "renamed"}), putProject, "PUT", "/v2/project/{project_id}")
		rbDenied(t, e.do("GET", "/v2/project/"+itoa(p2), as, nil), getProject, "GET", "/v2/project/{project_id}")
		rbDenied(t, e.do("GET", fmt.Sprintf("/v2/project/%d/roles", p1), as, nil), listRoles, "GET", "/v2/project/{project_id}/roles")
		e.do("GET", "/v2/company", as, nil).wantError(t, 403)
		ps := e.do("GET", "/v2/user/projects", as, nil).want(t, 200)
		items, _ := ps.JSON["items"].([]any)
		if len(items) != 1 || num(t, items[0], "id") != p1 {
			t.Fatalf("projects of the viewer: %s, want only %d", ps.Body, p1)
		}
	}
	if r := e.do("GET", "/v2/project/"+itoa(p1), c.Admin, nil).want(t, 200); r.JSON["name"] == "renamed" {
		t.Fatalf("the refused PUT renamed the project")
	}

	// A role of one project cannot be assigned, changed or deleted through
	// another project's path, not even by that project's admin.
	p1AdminUser, p1AdminUserID := e.newUser(c)
	p1Admin := rbCreateProjectRole(e, c.Admin, p1, []int32{0}, rbTag("name", "*", true, true))
	rbAssignProjectRole(e, c.Admin, p1, p1Admin, p1AdminUserID)
	e.do("GET", fmt.Sprintf("/v2/project/%d/roles", p1), p1AdminUser, nil).want(t, 200)
	p2Roles := rbProjectRoles(e, c.Admin, p2)
	e.do("POST", fmt.Sprintf("/v2/project/%d/role/%d/user/%d", p1, p2Admin, p1AdminUserID), p1AdminUser, nil).wantError(t, 404)
	e.do("PUT", fmt.Sprintf("/v2/project/%d/role/%d", p1, p2Admin), p1AdminUser, rbRoleBody("x", nil)).wantError(t, 404)
	e.do("DELETE", fmt.Sprintf("/v2/project/%d/role/%d", p1, p2Admin), p1AdminUser, nil).wantError(t, 404)
	e.do("GET", "/v2/project/"+itoa(p2), p1AdminUser, nil).wantError(t, 403)
	if got := rbProjectRoles(e, c.Admin, p2); got != p2Roles {
		t.Fatalf("project %d roles changed through project %d: %s -> %s", p2, p1, p2Roles, got)
	}
}

// TestRBACProjectRoleEndpointValidation: project roles cannot hold company
// endpoints or unknown ids; 0 stands for every project endpoint.
func TestRBACProjectRoleEndpointValidation(t *testing.T) {
	e := newTestEnv(t)
	c := e.newCompany()
	pid, _ := e.newProject(c.Admin)
	getProject := e.endpointID("GET", "/v2/project/{project_id}")
	companyRole := e.endpointID("POST", "/v2/company/role")
	putCompanyRole := e.endpointID("PUT", "/v2/company/role/{role_id}")
	before := rbProjectRoles(e, c.Admin, pid)

	for _, eps := range [][]int32{{getProject, companyRole}, {putCompanyRole}, {0, putCompanyRole}, {getProject, 999999}, {-1}} {
		r := e.do("POST", fmt.Sprintf("/v2/project/%d/role", pid), c.Admin, rbRoleBody(uniq("bad"), eps)).wantError(t, 400)
		if r.JSON["operation"] != "create" {
			t.Errorf("operation %v, want create", r.JSON["operation"])
		}
	}
	if got := rbProjectRoles(e, c.Admin, pid); got != before {
		t.Fatalf("a refused role was created: %s -> %s", before, got)
	}

	// Changing an existing role to hold a company endpoint is refused too.
	rid := rbCreateProjectRole(e, c.Admin, pid, []int32{getProject})
	before = rbProjectRoles(e, c.Admin, pid)
	e.do("PUT", fmt.Sprintf("/v2/project/%d/role/%d", pid, rid), c.Admin, rbRoleBody("changed", []int32{getProject, companyRole})).wantError(t, 400)
	if got := rbProjectRoles(e, c.Admin, pid); got != before {
		t.Fatalf("a refused update changed the role: %s -> %s", before, got)
	}

	// 0 is every project endpoint, and no company endpoint.
	all := rbCreateProjectRole(e, c.Admin, pid, []int32{0}, rbTag("name", "*", true, true))
	u, uid := e.newUser(c)
	rbAssignProjectRole(e, c.Admin, pid, all, uid)
	e.do("PUT", "/v2/project/"+itoa(pid), u, map[string]any{"description": "by the zero role"}).want(t, 200)
	e.do("GET", fmt.Sprintf("/v2/project/%d/roles", pid), u, nil).want(t, 200)
	rbDenied(t, e.do("GET", "/v2/company", u, nil), e.endpointID("GET", "/v2/company"), "GET", "/v2/company")
	rbDenied(t, e.do("POST", "/v2/company/role", u, map[string]any{"name": "x", "authed_endpoints": []int32{}}), companyRole, "POST", "/v2/company/role")
}

// TestRBACProjectEscalation: a maintainer may create and assign roles, but
// never one that holds more than they do.
func TestRBACProjectEscalation(t *testing.T) {
	e := newTestEnv(t)
	c := e.newCompany()
	pid, adminRole := e.newProject(c.Admin)
	p2, _ := e.newProject(c.Admin)
	createRole := e.endpointID("POST", "/v2/project/{project_id}/role")
	updateRole := e.endpointID("PUT", "/v2/project/{project_id}/role/{role_id}")
	assignRole := e.endpointID("POST", "/v2/project/{project_id}/role/{role_id}/user/{user_id}")
	listRoles := e.endpointID("GET", "/v2/project/{project_id}/roles")
	getProject := e.endpointID("GET", "/v2/project/{project_id}")

	maintainerRole := rbCreateProjectRole(e, c.Admin, pid, []int32{createRole, updateRole, assignRole, listRoles},
		rbTag("name", "sensor*", true, false))
	m, mid := e.newUser(c)
	rbAssignProjectRole(e, c.Admin, pid, maintainerRole, mid)
	target, targetID := e.newUser(c)

	for _, as := range []cred{m, rbToken(e, m)} {
		// What they hold, they may hand out.
		sub := rbCreateProjectRole(e, as, pid, []int32{listRoles}, rbTag("name", "sensor-1*", true, false))
		rbCreateProjectRole(e, as, pid, []int32{createRole, updateRole, assignRole, listRoles}, rbTag("name", "sensor*", true, false))

		before := rbProjectRoles(e, c.Admin, pid)
		url := fmt.Sprintf("/v2/project/%d/role", pid)
		refused := []map[string]any{
			rbRoleBody("more endpoints", []int32{listRoles, getProject}),
			rbRoleBody("zero", []int32{0}),
			rbRoleBody("read all", []int32{listRoles}, rbTag("name", "*", true, false)),
			rbRoleBody("read more", []int32{}, rbTag("name", "sens*", true, false)),
			rbRoleBody("read by another key", []int32{}, rbTag("site", "*", true, false)),
			rbRoleBody("write", []int32{}, rbTag("name", "sensor*", true, true)),
			rbRoleBody("write only", []int32{}, rbTag("name", "sensor-1", false, true)),
		}
		for _, body := range refused {
			r := e.do("POST", url, as, body).wantError(t, 403)
			if body["name"] == "more endpoints" {
				if msg := r.JSON["error"].(string); !strings.Contains(msg, fmt.Sprintf("endpoint %d", getProject)) {
					t.Errorf("refusal %q does not name the missing endpoint %d", msg, getProject)
				}
			}
		}
		// Updating a role to hold more is refused, also for their own role.
		for _, rid := range []int64{sub, maintainerRole} {
			rurl := fmt.Sprintf("/v2/project/%d/role/%d", pid, rid)
			e.do("PUT", rurl, as, rbRoleBody("grown", []int32{createRole, updateRole, assignRole, listRoles, getProject},
				rbTag("name", "sensor*", true, false))).wantError(t, 403)
			e.do("PUT", rurl, as, rbRoleBody("grown", []int32{listRoles}, rbTag("name", "*", true, false))).wantError(t, 403)
			e.do("PUT", rurl, as, rbRoleBody("grown", []int32{listRoles}, rbTag("name", "sensor*", true, true))).wantError(t, 403)
		}
		// Rewriting the admin role is refused: admin roles never change.
		e.do("PUT", fmt.Sprintf("/v2/project/%d/role/%d", pid, adminRole), as,
			rbRoleBody("mine now", []int32{0}, rbTag("name", "*", true, true))).wantError(t, 409)
		// Assigning the admin role, to someone else or to themself.
		e.do("POST", fmt.Sprintf("/v2/project/%d/role/%d/user/%d", pid, adminRole, targetID), as, nil).wantError(t, 403)
		e.do("POST", fmt.Sprintf("/v2/project/%d/role/%d/user/%d", pid, adminRole, mid), as, nil).wantError(t, 403)
		if got := rbProjectRoles(e, c.Admin, pid); got != before {
			t.Fatalf("refused requests changed the roles:\n%s\n->\n%s", before, got)
		}
		rbDenied(t, e.do("GET", "/v2/project/"+itoa(pid), target, nil), getProject, "GET", "/v2/project/{project_id}")
		rbDenied(t, e.do("GET", "/v2/project/"+itoa(pid), m, nil), getProject, "GET", "/v2/project/{project_id}")

		// Their grant does not reach another project.
		e.do("POST", fmt.Sprintf("/v2/project/%d/role", p2), as, rbRoleBody("elsewhere", nil)).wantError(t, 403)

		// A role within their rights may be assigned, and works at once.
		rbAssignProjectRole(e, as, pid, sub, targetID)
		e.do("GET", fmt.Sprintf("/v2/project/%d/roles", pid), target, nil).want(t, 200)
		e.do("DELETE", fmt.Sprintf("/v2/project/%d/role/%d/user/%d", pid, sub, targetID), c.Admin, nil).want(t, 200)
	}

	got := rbProjectRole(e, c.Admin, pid, maintainerRole)
	eps, _ := got["authed_endpoints"].([]any)
	if len(eps) != 4 {
		t.Fatalf("the maintainer role changed: %v", got)
	}
}

// TestRBACCompanyEscalation: a user with a limited company role cannot
// create, grow or assign a company role holding more.
func TestRBACCompanyEscalation(t *testing.T) {
	e := newTestEnv(t)
	c := e.newCompany()
	createRole := e.endpointID("POST", "/v2/company/role")
	updateRole := e.endpointID("PUT", "/v2/company/role/{role_id}")
	assignRole := e.endpointID("POST", "/v2/company/role/{role_id}/user/{user_id}")
	listRoles := e.endpointID("GET", "/v2/company/roles")
	createUser := e.endpointID("POST", "/v2/company/user")
	getProject := e.endpointID("GET", "/v2/project/{project_id}")

	limitedRole := rbCreateCompanyRole(e, c.Admin, []int32{createRole, updateRole, assignRole, listRoles})
	l, lid := e.newUser(c)
	rbAssignCompanyRole(e, c.Admin, limitedRole, lid)
	other, otherID := e.newUser(c)

	for _, as := range []cred{l, rbToken(e, l)} {
		sub := rbCreateCompanyRole(e, as, []int32{listRoles})
		before := rbCompanyRoles(e, c.Admin)
		for _, eps := range [][]int32{{createRole, createUser}, {0}, {listRoles, getProject}} {
			r := e.do("POST", "/v2/company/role", as, map[string]any{"name": "more", "authed_endpoints": eps}).wantError(t, 403)
			if eps[0] == createRole && !strings.Contains(r.JSON["error"].(string), fmt.Sprintf("endpoint %d", createUser)) {
				t.Errorf("refusal %q does not name endpoint %d", r.JSON["error"], createUser)
			}
		}
		for _, rid := range []int64{sub, limitedRole} {
			e.do("PUT", fmt.Sprintf("/v2/company/role/%d", rid), as, map[string]any{"name": "grown",
				"authed_endpoints": []int32{createRole, updateRole, assignRole, listRoles, createUser}}).wantError(t, 403)
		}
		e.do("PUT", fmt.Sprintf("/v2/company/role/%d", c.AdminRoleID), as,
			map[string]any{"name": "mine now", "authed_endpoints": []int32{0}}).wantError(t, 409)
		e.do("POST", fmt.Sprintf("/v2/company/role/%d/user/%d", c.AdminRoleID, lid), as, nil).wantError(t, 403)
		e.do("POST", fmt.Sprintf("/v2/company/role/%d/user/%d", c.AdminRoleID, otherID), as, nil).wantError(t, 403)
		if got := rbCompanyRoles(e, c.Admin); got != before {
			t.Fatalf("refused requests changed the company roles:\n%s\n->\n%s", before, got)
		}
		rbDenied(t, e.do("POST", "/v2/company/user", l, map[string]any{"firstName": "A", "lastName": "B",
			"email": uniq("x") + "@example.com", "password": "long-enough-pw"}), createUser, "POST", "/v2/company/user")
		e.do("GET", "/v2/company/roles", other, nil).wantError(t, 403)

		// Within their rights: assign works at once.
		rbAssignCompanyRole(e, as, sub, otherID)
		e.do("GET", "/v2/company/roles", other, nil).want(t, 200)
		e.do("DELETE", fmt.Sprintf("/v2/company/role/%d/user/%d", sub, otherID), c.Admin, nil).want(t, 200)
	}
	me := e.do("GET", "/v2/user", l, nil).want(t, 200)
	if roles, _ := me.JSON["companyroles"].([]any); len(roles) != 1 || num(t, roles[0], "id") != limitedRole {
		t.Fatalf("company roles of the limited user: %s", me.Body)
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

// TestRBACGrantsTakeEffectAtOnce: assigning, unassigning, changing and
// deleting roles change what a user may do with the very next request,
// with Basic credentials and bearer tokens alike.
func TestRBACGrantsTakeEffectAtOnce(t *testing.T) {
	e := newTestEnv(t)
	c := e.newCompany()
	pid, _ := e.newProject(c.Admin)
	u, uid := e.newUser(c)
	tok := rbToken(e, u)
	both := []cred{u, tok}
	projectPath := "/v2/project/" + itoa(pid)
	rolesPath := projectPath + "/roles"
	expect := func(path string, status int) {
		t.Helper()
		for _, as := range both {
			r := e.do("GET", path, as, nil)
			if status == 200 {
				r.want(t, 200)
			} else {
				r.wantError(t, status)
			}
		}
	}

	// Project role.
	expect(projectPath, 403) // also fills the caches
	rid := rbCreateProjectRole(e, c.Admin, pid, []int32{e.endpointID("GET", "/v2/project/{project_id}")})
	expect(projectPath, 403)
	rbAssignProjectRole(e, c.Admin, pid, rid, uid)
	expect(projectPath, 200)
	e.do("DELETE", fmt.Sprintf("/v2/project/%d/role/%d/user/%d", pid, rid, uid), c.Admin, nil).want(t, 200)
	expect(projectPath, 403)
	rbAssignProjectRole(e, c.Admin, pid, rid, uid)
	expect(projectPath, 200)
	expect(rolesPath, 403)
	e.do("PUT", fmt.Sprintf("/v2/project/%d/role/%d", pid, rid), c.Admin,
		rbRoleBody("changed", []int32{e.endpointID("GET", "/v2/project/{project_id}/roles")})).want(t, 200)
	expect(projectPath, 403)
	expect(rolesPath, 200)
	e.do("DELETE", fmt.Sprintf("/v2/project/%d/role/%d", pid, rid), c.Admin, nil).want(t, 200)
	expect(rolesPath, 403)
	e.do("POST", fmt.Sprintf("/v2/project/%d/role/%d/user/%d", pid, rid, uid), c.Admin, nil).wantError(t, 404)

	// Company role.
	expect("/v2/company", 403)
	crid := rbCreateCompanyRole(e, c.Admin, []int32{e.endpointID("GET", "/v2/company")})
	rbAssignCompanyRole(e, c.Admin, crid, uid)
	expect("/v2/company", 200)
	expect(projectPath, 403)
	e.do("DELETE", fmt.Sprintf("/v2/company/role/%d/user/%d", crid, uid), c.Admin, nil).want(t, 200)
	expect("/v2/company", 403)
	rbAssignCompanyRole(e, c.Admin, crid, uid)
	expect("/v2/company", 200)
	e.do("PUT", fmt.Sprintf("/v2/company/role/%d", crid), c.Admin,
		map[string]any{"name": "changed", "authed_endpoints": []int32{e.endpointID("GET", "/v2/project/{project_id}")}}).want(t, 200)
	expect("/v2/company", 403)
	expect(projectPath, 200)
	e.do("DELETE", fmt.Sprintf("/v2/company/role/%d", crid), c.Admin, nil).want(t, 200)
	expect(projectPath, 403)
	// The alias path deletes as well.
	crid = rbCreateCompanyRole(e, c.Admin, []int32{e.endpointID("GET", "/v2/company")})
	rbAssignCompanyRole(e, c.Admin, crid, uid)
	expect("/v2/company", 200)
	e.do("DELETE", fmt.Sprintf("/v2/company/roles/%d", crid), c.Admin, nil).want(t, 200)
	expect("/v2/company", 403)

	// Deleting a project takes its grants with it.
	all := rbCreateProjectRole(e, c.Admin, pid, []int32{0}, rbTag("name", "*", true, true))
	rbAssignProjectRole(e, c.Admin, pid, all, uid)
	expect(projectPath, 200)
	e.do("DELETE", projectPath, c.Admin, nil).want(t, 200)
	expect(projectPath, 403)
	for _, as := range both {
		ps := e.do("GET", "/v2/user/projects", as, nil).want(t, 200)
		if items, _ := ps.JSON["items"].([]any); len(items) != 0 {
			t.Fatalf("deleted project still listed: %s", ps.Body)
		}
	}
}

// TestRBACCompanyRoleCoversAllProjects: a company role applies to every
// project of its company, also to projects created after it was assigned,
// and to no project of another company.
func TestRBACCompanyRoleCoversAllProjects(t *testing.T) {
	e := newTestEnv(t)
	c, other := e.newCompany(), e.newCompany()
	p1, _ := e.newProject(c.Admin)
	po, _ := e.newProject(other.Admin)
	getProject := e.endpointID("GET", "/v2/project/{project_id}")
	putProject := e.endpointID("PUT", "/v2/project/{project_id}")
	deleteProject := e.endpointID("DELETE", "/v2/project/{project_id}")
	rid := rbCreateCompanyRole(e, c.Admin, []int32{getProject, putProject})
	u, uid := e.newUser(c)
	rbAssignCompanyRole(e, c.Admin, rid, uid)
	tok := rbToken(e, u)

	for _, as := range []cred{u, tok} {
		e.do("GET", "/v2/project/"+itoa(p1), as, nil).want(t, 200)
	}
	p2, _ := e.newProject(c.Admin)
	p3, _ := e.newProject(c.Admin)
	for _, as := range []cred{u, tok} {
		for _, pid := range []int64{p1, p2, p3} {
			e.do("GET", "/v2/project/"+itoa(pid), as, nil).want(t, 200)
			e.do("PUT", "/v2/project/"+itoa(pid), as, map[string]any{"description": "seen by a company role"}).want(t, 200)
			rbDenied(t, e.do("DELETE", "/v2/project/"+itoa(pid), as, nil), deleteProject, "DELETE", "/v2/project/{project_id}")
		}
		e.do("GET", "/v2/project/"+itoa(po), as, nil).wantError(t, 403)
		e.do("PUT", "/v2/project/"+itoa(po), as, map[string]any{"description": "no"}).wantError(t, 403)
		ps := e.do("GET", "/v2/user/projects", as, nil).want(t, 200)
		var got []int64
		for _, it := range ps.JSON["items"].([]any) {
			got = append(got, num(t, it, "id"))
		}
		slices.Sort(got)
		if !slices.Equal(got, []int64{p1, p2, p3}) {
			t.Fatalf("projects of the company-role user: %v, want %v", got, []int64{p1, p2, p3})
		}
	}
	if r := e.do("GET", "/v2/project/"+itoa(po), other.Admin, nil).want(t, 200); r.JSON["description"] == "no" {
		t.Fatalf("the other company's project was changed")
	}
}

// TestRBACProjectDatapointsFollowTagAuths: the datapoint identifiers a
// project shows are the ones the caller's TagAuths let them read; a
// company role sees them all.
func TestRBACProjectDatapointsFollowTagAuths(t *testing.T) {
	e := newTestEnv(t)
	c := e.newCompany()
	pid, _ := e.newProject(c.Admin)
	for dp, tags := range map[string][]map[string]string{
		"sensor-1":      nil,
		"sensor-2":      {{"key": "site", "value": "south"}},
		"valve-1":       nil,
		"meter-north-1": {{"key": "site", "value": "north"}},
		"secret-1":      {{"key": "site", "value": "hq"}},
	} {
		if tags == nil {
			tags = []map[string]string{}
		}
		e.do("PUT", fmt.Sprintf("/operator/projects/%d/datapoints/%s/tags", pid, dp), bearer(testOperatorToken), tags).want(t, 200)
	}
	getProject := e.endpointID("GET", "/v2/project/{project_id}")
	datapoints := func(as cred) []string {
		t.Helper()
		r := e.do("GET", "/v2/project/"+itoa(pid), as, nil).want(t, 200)
		out := []string{}
		for _, v := range r.JSON["datapoints"].([]any) {
			out = append(out, v.(string))
		}
		slices.Sort(out)
		return out
	}
	if got, want := datapoints(c.Admin), []string{"meter-north-1", "secret-1", "sensor-1", "sensor-2", "valve-1"}; !slices.Equal(got, want) {
		t.Fatalf("company admin sees %v, want %v", got, want)
	}

	tests := []struct {
		name string
		tags []map[string]any
		want []string
	}{
		{"name prefix", []map[string]any{rbTag("name", "sensor*", true, false)}, []string{"sensor-1", "sensor-2"}},
		{"write-only does not show", []map[string]any{rbTag("name", "valve*", false, true)}, []string{}},
		{"by tag and by name", []map[string]any{rbTag("site", "north", true, false), rbTag("name", "valve-1", true, true)}, []string{"meter-north-1", "valve-1"}},
		{"no TagAuths", nil, []string{}},
		{"everything", []map[string]any{rbTag("name", "*", true, false)}, []string{"meter-north-1", "secret-1", "sensor-1", "sensor-2", "valve-1"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			u, uid := e.newUser(c)
			rid := rbCreateProjectRole(e, c.Admin, pid, []int32{getProject}, tt.tags...)
			rbAssignProjectRole(e, c.Admin, pid, rid, uid)
			if got := datapoints(u); !slices.Equal(got, tt.want) {
				t.Fatalf("sees %v, want %v", got, tt.want)
			}
		})
	}
	// A company role without TagAuths sees every datapoint.
	u, uid := e.newUser(c)
	rbAssignCompanyRole(e, c.Admin, rbCreateCompanyRole(e, c.Admin, []int32{getProject}), uid)
	if got := datapoints(u); len(got) != 5 {
		t.Fatalf("a company role sees %v, want all 5", got)
	}
}

// PUT replaces only what it names: a description-only update keeps the
// name and every grant.
func TestRoleUpdateKeepsWhatItDoesNotName(t *testing.T) {
	e := newTestEnv(t)
	c := e.newCompany()
	pid, _ := e.newProject(c.Admin)
	get := e.endpointID("GET", "/v2/project/{project_id}")
	r := e.do("POST", "/v2/project/"+itoa(pid)+"/role", c.Admin, map[string]any{
		"name": "reader", "authed_endpoints": []int32{get},
		"authed_tags": []map[string]any{{"key": "name", "value": "s*", "read": true}},
	}).want(t, 200)
	rid := num(t, r.JSON, "resource.id")
	r = e.do("PUT", "/v2/project/"+itoa(pid)+"/role/"+itoa(rid), c.Admin, map[string]any{"description": "only this"}).want(t, 200)
	res := r.resource(t)
	eps, _ := res["authed_endpoints"].([]any)
	tags, _ := res["authed_tags"].([]any)
	if res["name"] != "reader" || res["description"] != "only this" || len(eps) != 1 || len(tags) != 1 {
		t.Fatalf("project role after a description-only PUT: %s", r.Body)
	}
	cr := e.do("POST", "/v2/company/role", c.Admin, map[string]any{"name": "viewer",
		"authed_endpoints": []int32{e.endpointID("GET", "/v2/company")}}).want(t, 200)
	crid := num(t, cr.JSON, "resource.id")
	cr = e.do("PUT", "/v2/company/role/"+itoa(crid), c.Admin, map[string]any{"name": "viewer2"}).want(t, 200)
	cres := cr.resource(t)
	ceps, _ := cres["authed_endpoints"].([]any)
	if cres["name"] != "viewer2" || len(ceps) != 1 {
		t.Fatalf("company role after a name-only PUT: %s", cr.Body)
	}
}

// Admin roles stay whole, and a company always keeps one admin: otherwise
// one request could lock a company out for good.
func TestAdminRolesAndTheLastAdminAreProtected(t *testing.T) {
	e := newTestEnv(t)
	c := e.newCompany()
	pid, projectAdmin := e.newProject(c.Admin)
	companyRole := "/v2/company/role/" + itoa(c.AdminRoleID)
	projectRole := fmt.Sprintf("/v2/project/%d/role/%d", pid, projectAdmin)

	e.do("PUT", companyRole, c.Admin, map[string]any{"authed_endpoints": []int32{}}).wantError(t, 409)
	e.do("DELETE", companyRole, c.Admin, nil).wantError(t, 409)
	e.do("DELETE", "/v2/company/roles/"+itoa(c.AdminRoleID), c.Admin, nil).wantError(t, 409)
	e.do("PUT", projectRole, c.Admin, map[string]any{"description": "x"}).wantError(t, 409)
	e.do("DELETE", projectRole, c.Admin, nil).wantError(t, 409)

	// The only company admin can neither give up the role nor leave.
	e.do("DELETE", fmt.Sprintf("%s/user/%d", companyRole, c.AdminID), c.Admin, nil).wantError(t, 409)
	e.do("DELETE", "/v2/user", c.Admin, nil).wantError(t, 409)
	e.do("GET", "/v2/company", c.Admin, nil).want(t, 200)

	// With a second admin, the first may go.
	second, secondID := e.newUser(c)
	e.do("POST", fmt.Sprintf("%s/user/%d", companyRole, secondID), c.Admin, nil).want(t, 200)
	e.do("DELETE", fmt.Sprintf("%s/user/%d", companyRole, c.AdminID), second, nil).want(t, 200)
	e.do("GET", "/v2/company", c.Admin, nil).wantError(t, 403)
	e.do("DELETE", "/v2/user", second, nil).wantError(t, 409)
	e.do("GET", "/v2/company", second, nil).want(t, 200)
}
