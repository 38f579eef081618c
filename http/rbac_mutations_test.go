package http

import (
	"fmt"
	"regexp"
	"strings"
	"testing"

	"github.com/openbdp/bdp/store"
)

// Who may use each mutating route: the endpoint grant of every one, and
// the resource rule of the routes that change an existing MQTT user.

// catalogEndpoints lists the persisted catalog as a client reads it
// (GET /v2/meta/endpoints): the count the route tests check against, so
// that a filter that skips routes cannot pass unnoticed.
func catalogEndpoints(e *testEnv) []store.Endpoint {
	e.t.Helper()
	r := e.do("GET", "/v2/meta/endpoints", nil, nil).want(e.t, 200)
	out := make([]store.Endpoint, 0, len(r.List))
	for _, item := range r.List {
		m := item.(map[string]any)
		out = append(out, store.Endpoint{ID: int32(num(e.t, m, "id")), Method: m["request_method"].(string), Path: m["path"].(string), Tag: m["tag"].(string)})
	}
	return out
}

// catalogCount counts the catalog's endpoints with a tag.
func catalogCount(e *testEnv, tag string) int {
	n := 0
	for _, ep := range catalogEndpoints(e) {
		if ep.Tag == tag {
			n++
		}
	}
	return n
}

// mutFill turns a template into a path whose ids other than the
// project's name nothing: a request let through the grant finds nothing
// to change (404) or is refused for its empty body (400).
func mutFill(ep store.Endpoint, pid int64) string {
	p := strings.ReplaceAll(ep.Path, "{project_id}", itoa(pid))
	p = regexp.MustCompile(`\{[^}]+\}`).ReplaceAllString(p, "987654321")
	var q []string
	if ep.Tag == store.TagProject && !strings.Contains(ep.Path, "{project_id}") {
		q = append(q, "project_id="+itoa(pid))
	}
	if ep.Method == "DELETE" && ep.Path == "/v2/project/{project_id}" {
		q = append(q, "project_name=not-this-project") // the safeguard: nothing is deleted
	}
	if q != nil {
		p += "?" + strings.Join(q, "&")
	}
	return p
}

// TestRBACEveryMutatingRoute: for every POST, PUT and DELETE of the
// catalog that needs a grant, a role holding every endpoint but this one
// is refused with 403 naming it, and a role holding only this one gets
// past the grant. Project routes are tried with a project role, company
// routes with a company role.
func TestRBACEveryMutatingRoute(t *testing.T) {
	e := newTestEnv(t)
	c := e.newCompany()
	pid, _ := e.newProject(c.Admin)
	projectUser, projectUserID := e.newUser(c)
	companyUser, companyUserID := e.newUser(c)
	everything := rbTag("name", "*", true, true)
	projectRole := rbCreateProjectRole(e, c.Admin, pid, []int32{}, everything)
	rbAssignProjectRole(e, c.Admin, pid, projectRole, projectUserID)
	companyRole := rbCreateCompanyRole(e, c.Admin, []int32{})
	rbAssignCompanyRole(e, c.Admin, companyRole, companyUserID)
	projectBefore := string(e.do("GET", "/v2/project/"+itoa(pid), c.Admin, nil).want(t, 200).Body)

	catalog := catalogEndpoints(e)
	var projectIDs, allIDs []int32
	for _, ep := range catalog {
		allIDs = append(allIDs, ep.ID)
		if ep.Tag != store.TagCompany {
			projectIDs = append(projectIDs, ep.ID)
		}
	}
	without := func(ids []int32, id int32) []int32 {
		out := []int32{}
		for _, x := range ids {
			if x != id {
				out = append(out, x)
			}
		}
		return out
	}
	// grant sets the endpoints of the role the route is tried with.
	grant := func(t *testing.T, tag string, ids []int32) {
		t.Helper()
		path := fmt.Sprintf("/v2/project/%d/role/%d", pid, projectRole)
		if tag == store.TagCompany {
			path = fmt.Sprintf("/v2/company/role/%d", companyRole)
		}
		e.do("PUT", path, c.Admin, map[string]any{"authed_endpoints": ids}).want(t, 200)
	}

	checked, mutating := 0, 0
	for _, ep := range catalog {
		if ep.Method == "GET" || (ep.Tag != store.TagProject && ep.Tag != store.TagCompany && ep.Tag != store.TagGeneral) {
			continue
		}
		mutating++
		as, scope := cred(projectUser), projectIDs
		if ep.Tag == store.TagCompany {
			as, scope = companyUser, allIDs
		}
		path := mutFill(ep, pid)
		t.Run(ep.Method+" "+ep.Path, func(t *testing.T) {
			grant(t, ep.Tag, without(scope, ep.ID))
			rbDenied(t, e.do(ep.Method, path, as, nil), ep.ID, ep.Method, ep.Path)
			grant(t, ep.Tag, []int32{ep.ID})
			r := e.do(ep.Method, path, as, nil)
			if msg, _ := r.JSON["error"].(string); r.Status == 403 && strings.Contains(msg, "unauthorized access to endpoint") {
				t.Fatalf("a role granting only endpoint %d is refused: %s", ep.ID, r.Body)
			}
			checked++
		})
	}
	if mutating < 40 || checked != mutating {
		t.Fatalf("%d of %d mutating routes of the catalog checked", checked, mutating)
	}
	if got := string(e.do("GET", "/v2/project/"+itoa(pid), c.Admin, nil).want(t, 200).Body); got != projectBefore {
		t.Errorf("the project changed: %s -> %s", projectBefore, got)
	}
}

// TestMQTTUserChangeAndDeleteOneRule: PUT and DELETE on an MQTT user
// follow one rule (mayChangeMQTTUser): its creator or a company role
// holder, holding its rights by TagAuth. A read-only project user once
// deleted the company admin's write user that PUT refused them.
func TestMQTTUserChangeAndDeleteOneRule(t *testing.T) {
	e := newTestEnv(t)
	c := e.newCompany()
	pid, _ := e.newProject(c.Admin)
	member := func(read, write bool) (basic, int64) {
		u, uid := e.newUser(c)
		role := rbCreateProjectRole(e, c.Admin, pid, []int32{0}, rbTag("name", "*", read, write))
		rbAssignProjectRole(e, c.Admin, pid, role, uid)
		return u, role
	}
	reader, _ := member(true, false)
	writer, _ := member(true, true)
	demoted, demotedRole := member(true, true)

	cases := []struct {
		name    string
		creator basic
		rights  string
		caller  basic
		allowed bool
	}{
		{"read-only user on the admin's write user", c.Admin, "write", reader, false},
		{"read-only user on the admin's read user", c.Admin, "read", reader, false},
		{"write user on the admin's write user", c.Admin, "write", writer, false},
		{"creator on their own write user", writer, "write", writer, true},
		{"creator on their own read user", reader, "read", reader, true},
		{"creator who lost write on their write user", demoted, "write", demoted, false},
		{"company admin on another's write user", writer, "write", c.Admin, true},
	}
	// Every target exists before the demotion, created while its creator
	// held the rights.
	ids, names := map[string]int64{}, map[string]string{}
	for _, tc := range cases {
		for _, method := range []string{"PUT", "DELETE"} {
			name := uniq("mq")
			ids[tc.name+method] = num(t, e.do("POST", mqPath(pid), tc.creator, mqBody(name, "rights", tc.rights)).want(t, 201).resource(t), "id")
			names[tc.name+method] = name
		}
	}
	e.do("PUT", fmt.Sprintf("/v2/project/%d/role/%d", pid, demotedRole), c.Admin,
		map[string]any{"authed_tags": []any{rbTag("name", "*", true, false)}}).want(t, 200)

	for _, tc := range cases {
		for _, method := range []string{"PUT", "DELETE"} {
			t.Run(tc.name+" "+method, func(t *testing.T) {
				name := names[tc.name+method]
				before, _ := e.mqRow(name)
				var body any
				want := 200
				if method == "PUT" {
					body, want = map[string]any{"description": "changed"}, 201
				}
				r := e.do(method, mqUserPath(pid, ids[tc.name+method]), tc.caller, body)
				after, exists := e.mqRow(name)
				if !tc.allowed {
					r.wantError(t, 403)
					if !exists || after.Description != before.Description || after.Hash != before.Hash {
						t.Fatalf("a refused %s changed the MQTT user: %+v -> %+v (exists %v)", method, before, after, exists)
					}
					return
				}
				r.want(t, want)
				if method == "DELETE" && exists {
					t.Fatalf("DELETE answered %d but the MQTT user is still there", r.Status)
				}
				if method == "PUT" && after.Description != "changed" {
					t.Fatalf("PUT answered %d but did not change the description: %+v", r.Status, after)
				}
			})
		}
	}
}
