package http

import (
	"fmt"
	"strings"
	"testing"
)

// Helpers of the RBAC tests: roles created, assigned and listed through real HTTP.

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
