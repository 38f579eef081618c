package http

import (
	"fmt"
	"sort"
	"testing"
)

// Project and company role endpoints (api.md 4.1-4.3) answer as documented, with visible effects.

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
