package http

import (
	"fmt"
	"strings"
	"testing"
)

// RBAC through real HTTP: nobody can hand out more than they hold, nor lock a company out.

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

// A lesser user may not take grants from a greater one: changing,
// deleting or unassigning a role that holds more than they do is refused
// as creating or assigning it would be. What every user may call (the
// user and meta routes) counts as held, so roles may list it.
func TestRBACLesserUsersCannotTakeGrants(t *testing.T) {
	e := newTestEnv(t)
	c := e.newCompany()
	pid, adminRole := e.newProject(c.Admin)
	ep := func(method, path string) int32 { return e.endpointID(method, path) }
	manage := []int32{
		ep("POST", "/v2/project/{project_id}/role"), ep("PUT", "/v2/project/{project_id}/role/{role_id}"),
		ep("DELETE", "/v2/project/{project_id}/role/{role_id}"), ep("GET", "/v2/project/{project_id}/roles"),
		ep("POST", "/v2/project/{project_id}/role/{role_id}/user/{user_id}"),
		ep("DELETE", "/v2/project/{project_id}/role/{role_id}/user/{user_id}"),
	}
	getProject, getUser := ep("GET", "/v2/project/{project_id}"), ep("GET", "/v2/user")
	m, mid := e.newUser(c)
	rbAssignProjectRole(e, c.Admin, pid, rbCreateProjectRole(e, c.Admin, pid, manage, rbTag("name", "sensor*", true, false)), mid)
	big := rbCreateProjectRole(e, c.Admin, pid, []int32{getProject}, rbTag("name", "*", true, true))
	holder, holderID := e.newUser(c)
	rbAssignProjectRole(e, c.Admin, pid, big, holderID)

	before := rbProjectRoles(e, c.Admin, pid)
	role := fmt.Sprintf("/v2/project/%d/role/%d", pid, big)
	e.do("PUT", role, m, rbRoleBody("smaller", []int32{}, rbTag("name", "sensor*", true, false))).wantError(t, 403)
	e.do("DELETE", role, m, nil).wantError(t, 403)
	e.do("DELETE", fmt.Sprintf("%s/user/%d", role, holderID), m, nil).wantError(t, 403)
	e.do("DELETE", fmt.Sprintf("/v2/project/%d/role/%d/user/%d", pid, adminRole, c.AdminID), m, nil).wantError(t, 403)
	if after := rbProjectRoles(e, c.Admin, pid); after != before {
		t.Fatalf("refused requests changed the roles:\nbefore %s\nafter  %s", before, after)
	}
	e.do("GET", fmt.Sprintf("/v2/project/%d", pid), holder, nil).want(t, 200)

	// Within their own grants, plus what everyone may call, all is allowed.
	own := rbCreateProjectRole(e, m, pid, []int32{getUser, manage[3]}, rbTag("name", "sensor-1", true, false))
	rbAssignProjectRole(e, m, pid, own, holderID)
	ownRole := fmt.Sprintf("/v2/project/%d/role/%d", pid, own)
	e.do("PUT", ownRole, m, rbRoleBody("renamed", []int32{getUser})).want(t, 200)
	e.do("DELETE", fmt.Sprintf("%s/user/%d", ownRole, holderID), m, nil).want(t, 200)
	e.do("DELETE", ownRole, m, nil).want(t, 200)

	// The same for company roles.
	companyRoles := []int32{ep("PUT", "/v2/company/role/{role_id}"), ep("DELETE", "/v2/company/role/{role_id}"),
		ep("DELETE", "/v2/company/role/{role_id}/user/{user_id}")}
	u, uid := e.newUser(c)
	rbAssignCompanyRole(e, c.Admin, rbCreateCompanyRole(e, c.Admin, companyRoles), uid)
	wide := rbCreateCompanyRole(e, c.Admin, []int32{0})
	rbAssignCompanyRole(e, c.Admin, wide, holderID)
	before = rbCompanyRoles(e, c.Admin)
	e.do("PUT", fmt.Sprintf("/v2/company/role/%d", wide), u, map[string]any{"authed_endpoints": []int32{companyRoles[0]}}).wantError(t, 403)
	e.do("DELETE", fmt.Sprintf("/v2/company/role/%d", wide), u, nil).wantError(t, 403)
	e.do("DELETE", fmt.Sprintf("/v2/company/role/%d/user/%d", wide, holderID), u, nil).wantError(t, 403)
	if after := rbCompanyRoles(e, c.Admin); after != before {
		t.Fatalf("refused requests changed the company roles:\nbefore %s\nafter  %s", before, after)
	}
}
