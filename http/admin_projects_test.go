package http

import (
	"fmt"
	"strings"
	"testing"
)

// Company and project endpoints (api.md 4.1-4.3) answer as documented, with visible effects.

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
	if ids := adIDs(t, adList(t, e.do("GET", "/v2/user/projects", c.Admin, nil).want(t, 200).List, "")); len(ids) != 1 || ids[0] != keep {
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
	items := adList(t, r.List, "")
	if ids := adIDs(t, items); len(ids) != 2 || !adHas(ids, p1) || !adHas(ids, p2) {
		t.Fatalf("admin should see both projects: %s", r.Body)
	}
	for _, p := range items {
		if num(t, p, "company_id") != c.ID || p["name"] == "" {
			t.Fatalf("project entries need company_id and name: %s", r.Body)
		}
	}

	// A user without roles sees none; with a role in p2, just p2.
	if items := adList(t, e.do("GET", "/v2/user/projects", u, nil).want(t, 200).List, ""); len(items) != 0 {
		t.Fatalf("a user without roles should see no project: %v", items)
	}
	r = e.do("POST", "/v2/project/"+itoa(p2)+"/role", c.Admin, map[string]any{
		"name": "reader", "authed_endpoints": []int32{e.endpointID("GET", "/v2/project/{project_id}")}}).want(t, 200)
	e.do("POST", fmt.Sprintf("/v2/project/%d/role/%d/user/%d", p2, num(t, r.JSON, "resource.id"), uid), c.Admin, nil).want(t, 200)
	if ids := adIDs(t, adList(t, e.do("GET", "/v2/user/projects", u, nil).want(t, 200).List, "")); len(ids) != 1 || ids[0] != p2 {
		t.Fatalf("the user should see just project %d: %v", p2, ids)
	}

	// Another company's admin sees none of them.
	other := e.newCompany()
	if items := adList(t, e.do("GET", "/v2/user/projects", other.Admin, nil).want(t, 200).List, ""); len(items) != 0 {
		t.Fatalf("another company sees projects: %v", items)
	}
}
