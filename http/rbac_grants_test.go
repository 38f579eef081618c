package http

import (
	"fmt"
	"slices"
	"testing"
)

// RBAC through real HTTP: what a role grants, in which projects, and from when.

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
		items := ps.List
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
		if ps.List == nil || len(ps.List) != 0 {
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
		for _, it := range ps.List {
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
