package http

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"net"
	nethttp "net/http"
	"strings"
	"testing"
)

// Bad input answers 400, 404, 409 or 413 with the error envelope and
// changes nothing.

// biWorld is a company with a project, a role in it, a company role and a
// second user, plus a foreign company with its own user and roles.
type biWorld struct {
	c, other                  company
	pid, adminRole, role      int64
	companyRole               int64
	user                      basic
	uid, foreignUID           int64
	foreignPID, foreignRole   int64
	foreignCompanyRole        int64
	getProjectID, companyEPID int32
	unknownEndpoint           int32
	snapshotPaths             []string
}

func newBIWorld(e *testEnv) *biWorld {
	t := e.t
	t.Helper()
	w := &biWorld{c: e.newCompany(), other: e.newCompany()}
	w.pid, w.adminRole = e.newProject(w.c.Admin)
	w.user, w.uid = e.newUser(w.c)
	w.getProjectID = e.endpointID("GET", "/v2/project/{project_id}")
	w.companyEPID = e.endpointID("GET", "/v2/company")
	w.unknownEndpoint = 99999
	r := e.do("POST", "/v2/project/"+itoa(w.pid)+"/role", w.c.Admin, map[string]any{
		"name": "viewer", "authed_endpoints": []int32{w.getProjectID}}).want(t, 200)
	w.role = num(t, r.JSON, "resource.id")
	r = e.do("POST", "/v2/company/role", w.c.Admin, map[string]any{
		"name": "auditor", "authed_endpoints": []int32{w.companyEPID}}).want(t, 200)
	w.companyRole = num(t, r.JSON, "resource.id")
	_, w.foreignUID = e.newUser(w.other)
	w.foreignPID, w.foreignRole = e.newProject(w.other.Admin)
	w.foreignCompanyRole = w.other.AdminRoleID
	w.snapshotPaths = []string{"/v2/company", "/v2/company/roles", "/v2/project/" + itoa(w.pid),
		"/v2/project/" + itoa(w.pid) + "/roles", "/v2/user/projects", "/v2/user"}
	return w
}

// snapshot reads everything a bad request could have changed, as both the
// admin and the user see it, plus the other company.
func (w *biWorld) snapshot(e *testEnv) string {
	e.t.Helper()
	var b strings.Builder
	for _, p := range w.snapshotPaths {
		b.Write(e.do("GET", p, w.c.Admin, nil).want(e.t, 200).Body)
		b.WriteByte('\n')
	}
	b.Write(e.do("GET", "/v2/user", w.user, nil).want(e.t, 200).Body)
	b.WriteByte('\n')
	for _, p := range []string{"/v2/company", "/v2/company/roles", "/v2/project/" + itoa(w.foreignPID) + "/roles"} {
		b.Write(e.do("GET", p, w.other.Admin, nil).want(e.t, 200).Body)
		b.WriteByte('\n')
	}
	b.Write(e.do("GET", "/operator/projects/"+itoa(w.pid)+"/settings", opTok, nil).want(e.t, 200).Body)
	return b.String()
}

// biLeaks are fragments that must never reach a client: stack traces,
// SQL, driver and runtime internals.
var biLeaks = []string{"goroutine ", ".go:", "panic", "runtime.", "SQLSTATE", "pgx", "pgconn", "postgres",
	"SELECT ", "INSERT ", "UPDATE ", "DELETE FROM", "violates", "constraint", "duplicate key", "relation ", "syntax error at",
	"argon2", "$argon"}

func biCheckClean(t *testing.T, r resp) {
	t.Helper()
	for _, leak := range biLeaks {
		if strings.Contains(string(r.Body), leak) {
			t.Fatalf("error body leaks internals (%q): %s", leak, r.Body)
		}
	}
	if ct := r.Header.Get("Content-Type"); !strings.HasPrefix(ct, "application/json") {
		t.Fatalf("error body is not JSON (%s): %s", ct, r.Body)
	}
}

type biCase struct {
	name         string
	method, path string
	as           func(*biWorld) cred // nil: the company admin
	body         any
	status       int
	op           string // expected envelope operation
}

func biCases(w *biWorld) []biCase {
	p := "/v2/project/" + itoa(w.pid)
	long := strings.Repeat("x", 201)
	asUser := func(w *biWorld) cred { return w.user }
	user := func(fields map[string]any) map[string]any {
		m := map[string]any{"company_id": w.c.ID, "firstName": "F", "lastName": "L", "email": uniq("bad") + "@example.com", "password": "long-enough"}
		for k, v := range fields {
			if v == nil {
				delete(m, k)
			} else {
				m[k] = v
			}
		}
		return m
	}
	role := func(fields map[string]any) map[string]any {
		m := map[string]any{"name": "r", "authed_endpoints": []int32{w.getProjectID}}
		for k, v := range fields {
			if v == nil {
				delete(m, k)
			} else {
				m[k] = v
			}
		}
		return m
	}
	var cs []biCase
	add := func(c ...biCase) { cs = append(cs, c...) }

	// Project creation, both forms.
	for _, path := range []string{"/v2/company/project", "/v2/project"} {
		add(
			biCase{name: "malformed JSON", method: "POST", path: path, body: []byte(`{"name":`), status: 400, op: "create"},
			biCase{name: "not JSON at all", method: "POST", path: path, body: []byte(`name=x`), status: 400, op: "create"},
			biCase{name: "array body", method: "POST", path: path, body: []byte(`[{"name":"x"}]`), status: 400, op: "create"},
			biCase{name: "two objects", method: "POST", path: path, body: []byte(`{"name":"a"}{"name":"b"}`), status: 400, op: "create"},
			biCase{name: "name of wrong type", method: "POST", path: path, body: map[string]any{"name": 12345}, status: 400, op: "create"},
			biCase{name: "name null", method: "POST", path: path, body: map[string]any{"name": nil}, status: 400, op: "create"},
			biCase{name: "missing name", method: "POST", path: path, body: map[string]any{"description": "d"}, status: 400, op: "create"},
			biCase{name: "empty body", method: "POST", path: path, body: nil, status: 400, op: "create"},
			biCase{name: "empty name", method: "POST", path: path, body: map[string]any{"name": ""}, status: 400, op: "create"},
			biCase{name: "blank name", method: "POST", path: path, body: map[string]any{"name": "   "}, status: 400, op: "create"},
			biCase{name: "name too long", method: "POST", path: path, body: map[string]any{"name": long}, status: 400, op: "create"},
			biCase{name: "description of wrong type", method: "POST", path: path, body: map[string]any{"name": "n", "description": []int{1}}, status: 400, op: "create"},
			biCase{name: "NUL in name", method: "POST", path: path, body: map[string]any{"name": "a\x00b"}, status: 400, op: "create"},
			biCase{name: "company_id as string", method: "POST", path: path, body: map[string]any{"name": "n", "company_id": itoa(w.c.ID)}, status: 400, op: "create"},
			biCase{name: "foreign company_id", method: "POST", path: path, body: map[string]any{"name": "n", "company_id": w.other.ID}, status: 403, op: "create"},
		)
	}

	// Project update and delete.
	add(
		biCase{name: "update malformed", method: "PUT", path: p, body: []byte(`{"name":"x",}`), status: 400, op: "update"},
		biCase{name: "update with a stray brace after", method: "PUT", path: p, body: []byte(`{"name":"x"}}`), status: 400, op: "update"},
		biCase{name: "update with a stray bracket after", method: "PUT", path: p, body: []byte(`{"name":"x"}]`), status: 400, op: "update"},
		biCase{name: "update with a second object", method: "PUT", path: p, body: []byte(`{"name":"x"} {"name":"y"}`), status: 400, op: "update"},
		biCase{name: "update empty name", method: "PUT", path: p, body: map[string]any{"name": ""}, status: 400, op: "update"},
		biCase{name: "update name of wrong type", method: "PUT", path: p, body: map[string]any{"name": 12345}, status: 400, op: "update"},
		biCase{name: "update description of wrong type", method: "PUT", path: p, body: map[string]any{"description": false}, status: 400, op: "update"},
		biCase{name: "update NUL in description", method: "PUT", path: p, body: map[string]any{"description": "x\x00"}, status: 400, op: "update"},
		biCase{name: "update project abc", method: "PUT", path: "/v2/project/abc", body: map[string]any{"name": "x"}, status: 400, op: "update"},
		biCase{name: "update project 0", method: "PUT", path: "/v2/project/0", body: map[string]any{"name": "x"}, status: 400, op: "update"},
		biCase{name: "update project overflow", method: "PUT", path: "/v2/project/99999999999999999999", body: map[string]any{"name": "x"}, status: 400, op: "update"},
		biCase{name: "delete project abc", method: "DELETE", path: "/v2/project/abc", status: 400, op: "delete"},
		biCase{name: "delete project -1", method: "DELETE", path: "/v2/project/-1", status: 400, op: "delete"},
		biCase{name: "delete project 1.5", method: "DELETE", path: "/v2/project/1.5", status: 400, op: "delete"},
		biCase{name: "delete foreign project", method: "DELETE", path: "/v2/project/" + itoa(w.foreignPID), status: 403, op: "delete"},
		biCase{name: "get project abc", method: "GET", path: "/v2/project/abc", status: 400, op: ""},
	)

	// User creation, both forms.
	for _, path := range []string{"/v2/company/user", "/v2/user"} {
		add(
			biCase{name: "malformed JSON", method: "POST", path: path, body: []byte(`{"email":"a@b.c"`), status: 400, op: "create"},
			biCase{name: "missing password", method: "POST", path: path, body: user(map[string]any{"password": nil}), status: 400, op: "create"},
			biCase{name: "missing email", method: "POST", path: path, body: user(map[string]any{"email": nil}), status: 400, op: "create"},
			biCase{name: "missing firstName", method: "POST", path: path, body: user(map[string]any{"firstName": nil}), status: 400, op: "create"},
			biCase{name: "missing lastName", method: "POST", path: path, body: user(map[string]any{"lastName": nil}), status: 400, op: "create"},
			// Without company_id the user joins the caller's company;
			// another company's id is refused.
			biCase{name: "another company's id", method: "POST", path: path, body: user(map[string]any{"company_id": w.c.ID + 1000}), status: 403, op: "create"},
			biCase{name: "password of 4 characters in 8 bytes", method: "POST", path: path, body: user(map[string]any{"password": "üüüü"}), status: 400, op: "create"},
			biCase{name: "empty firstName", method: "POST", path: path, body: user(map[string]any{"firstName": " "}), status: 400, op: "create"},
			biCase{name: "empty email", method: "POST", path: path, body: user(map[string]any{"email": ""}), status: 400, op: "create"},
			biCase{name: "invalid email", method: "POST", path: path, body: user(map[string]any{"email": "not-an-email"}), status: 400, op: "create"},
			biCase{name: "email with display name", method: "POST", path: path, body: user(map[string]any{"email": "Eve <eve@example.com>"}), status: 400, op: "create"},
			biCase{name: "two emails", method: "POST", path: path, body: user(map[string]any{"email": "a@example.com, b@example.com"}), status: 400, op: "create"},
			biCase{name: "short password", method: "POST", path: path, body: user(map[string]any{"password": "1234567"}), status: 400, op: "create"},
			biCase{name: "password of wrong type", method: "POST", path: path, body: user(map[string]any{"password": 12345678}), status: 400, op: "create"},
			biCase{name: "firstName too long", method: "POST", path: path, body: user(map[string]any{"firstName": long}), status: 400, op: "create"},
			biCase{name: "NUL in lastName", method: "POST", path: path, body: user(map[string]any{"lastName": "a\x00"}), status: 400, op: "create"},
			biCase{name: "company_id as string", method: "POST", path: path, body: user(map[string]any{"company_id": "1"}), status: 400, op: "create"},
			biCase{name: "foreign company_id", method: "POST", path: path, body: user(map[string]any{"company_id": w.other.ID}), status: 403, op: "create"},
			biCase{name: "existing email", method: "POST", path: path, body: user(map[string]any{"email": strings.ToUpper(w.user.email)}), status: 409, op: "create"},
		)
	}

	// The calling user.
	add(
		biCase{name: "update self malformed", method: "PUT", path: "/v2/user", as: asUser, body: []byte(`{`), status: 400, op: "update"},
		biCase{name: "update self invalid email", method: "PUT", path: "/v2/user", as: asUser, body: map[string]any{"email": "nope", "firstName": "Changed"}, status: 400, op: "update"},
		biCase{name: "update self empty email", method: "PUT", path: "/v2/user", as: asUser, body: map[string]any{"email": ""}, status: 400, op: "update"},
		biCase{name: "update self empty firstName", method: "PUT", path: "/v2/user", as: asUser, body: map[string]any{"firstName": ""}, status: 400, op: "update"},
		biCase{name: "update self blank lastName", method: "PUT", path: "/v2/user", as: asUser, body: map[string]any{"lastName": "  "}, status: 400, op: "update"},
		biCase{name: "update self firstName of wrong type", method: "PUT", path: "/v2/user", as: asUser, body: map[string]any{"firstName": 1}, status: 400, op: "update"},
		biCase{name: "update self NUL in address", method: "PUT", path: "/v2/user", as: asUser, body: map[string]any{"address": "a\x00b", "firstName": "Changed"}, status: 400, op: "update"},
		biCase{name: "update self phone too long", method: "PUT", path: "/v2/user", as: asUser, body: map[string]any{"phone": long}, status: 400, op: "update"},
		biCase{name: "update self taken email", method: "PUT", path: "/v2/user", as: asUser, body: map[string]any{"email": w.c.Admin.email, "phone": "1"}, status: 409, op: "update"},
		biCase{name: "password malformed", method: "PUT", path: "/v2/user/password", as: asUser, body: []byte(`{"new_password"`), status: 400, op: "update"},
		biCase{name: "password short", method: "PUT", path: "/v2/user/password", as: asUser, body: map[string]any{"current_password": "user-password", "new_password": "short"}, status: 400, op: "update"},
		biCase{name: "password missing current", method: "PUT", path: "/v2/user/password", as: asUser, body: map[string]any{"new_password": "long-enough-new"}, status: 400, op: "update"},
		biCase{name: "password missing new", method: "PUT", path: "/v2/user/password", as: asUser, body: map[string]any{"current_password": "user-password"}, status: 400, op: "update"},
		biCase{name: "password wrong current", method: "PUT", path: "/v2/user/password", as: asUser, body: map[string]any{"current_password": "not-it-at-all", "new_password": "long-enough-new"}, status: 400, op: "update"},
		biCase{name: "password of wrong type", method: "PUT", path: "/v2/user/password", as: asUser, body: map[string]any{"current_password": "user-password", "new_password": 123456789}, status: 400, op: "update"},
	)

	// Project roles.
	rp := p + "/role"
	add(
		biCase{name: "role malformed", method: "POST", path: rp, body: []byte(`{"name": "r", "authed_endpoints": [1,}`), status: 400, op: "create"},
		biCase{name: "role missing name", method: "POST", path: rp, body: role(map[string]any{"name": nil}), status: 400, op: "create"},
		biCase{name: "role empty name", method: "POST", path: rp, body: role(map[string]any{"name": ""}), status: 400, op: "create"},
		biCase{name: "role NUL in name", method: "POST", path: rp, body: role(map[string]any{"name": "r\x00"}), status: 400, op: "create"},
		biCase{name: "role NUL in tag value", method: "POST", path: rp, body: role(map[string]any{"authed_tags": []map[string]any{{"key": "name", "value": "a\x00*", "read": true}}}), status: 400, op: "create"},
		biCase{name: "role missing endpoints", method: "POST", path: rp, body: role(map[string]any{"authed_endpoints": nil}), status: 400, op: "create"},
		biCase{name: "role endpoints of wrong type", method: "POST", path: rp, body: role(map[string]any{"authed_endpoints": "all"}), status: 400, op: "create"},
		biCase{name: "role endpoint as string", method: "POST", path: rp, body: role(map[string]any{"authed_endpoints": []string{"1"}}), status: 400, op: "create"},
		biCase{name: "role endpoint overflow", method: "POST", path: rp, body: role(map[string]any{"authed_endpoints": []int64{1 << 40}}), status: 400, op: "create"},
		biCase{name: "role unknown endpoint", method: "POST", path: rp, body: role(map[string]any{"authed_endpoints": []int32{w.unknownEndpoint}}), status: 400, op: "create"},
		biCase{name: "role company endpoint", method: "POST", path: rp, body: role(map[string]any{"authed_endpoints": []int32{w.companyEPID}}), status: 400, op: "create"},
		biCase{name: "role tag without value", method: "POST", path: rp, body: role(map[string]any{"authed_tags": []map[string]any{{"key": "name", "read": true}}}), status: 400, op: "create"},
		biCase{name: "role tag with empty key", method: "POST", path: rp, body: role(map[string]any{"authed_tags": []map[string]any{{"key": " ", "value": "*"}}}), status: 400, op: "create"},
		biCase{name: "role tags not an array", method: "POST", path: rp, body: role(map[string]any{"authed_tags": map[string]any{"key": "name", "value": "*"}}), status: 400, op: "create"},
		biCase{name: "role tag read of wrong type", method: "POST", path: rp, body: role(map[string]any{"authed_tags": []map[string]any{{"key": "name", "value": "*", "read": "yes"}}}), status: 400, op: "create"},
		biCase{name: "role in project abc", method: "POST", path: "/v2/project/abc/role", body: role(nil), status: 400, op: "create"},
		biCase{name: "update unknown role", method: "PUT", path: rp + "/999999", body: role(nil), status: 404, op: "update"},
		biCase{name: "update role abc", method: "PUT", path: rp + "/abc", body: role(nil), status: 400, op: "update"},
		biCase{name: "update foreign role", method: "PUT", path: rp + "/" + itoa(w.foreignRole), body: role(nil), status: 404, op: "update"},
		biCase{name: "update role empty name", method: "PUT", path: rp + "/" + itoa(w.role), body: role(map[string]any{"name": ""}), status: 400, op: "update"},
		biCase{name: "update role unknown endpoint", method: "PUT", path: rp + "/" + itoa(w.role), body: role(map[string]any{"authed_endpoints": []int32{w.getProjectID, w.unknownEndpoint}}), status: 400, op: "update"},
		biCase{name: "update role company endpoint", method: "PUT", path: rp + "/" + itoa(w.role), body: role(map[string]any{"authed_endpoints": []int32{w.companyEPID}}), status: 400, op: "update"},
		biCase{name: "update role malformed", method: "PUT", path: rp + "/" + itoa(w.role), body: []byte(`{"name":1`), status: 400, op: "update"},
		biCase{name: "delete unknown role", method: "DELETE", path: rp + "/999999", status: 404, op: "delete"},
		biCase{name: "delete role of another project", method: "DELETE", path: rp + "/" + itoa(w.foreignRole), status: 404, op: "delete"},
		biCase{name: "delete role 0", method: "DELETE", path: rp + "/0", status: 400, op: "delete"},
		biCase{name: "assign unknown role", method: "POST", path: fmt.Sprintf("%s/999999/user/%d", rp, w.uid), status: 404, op: "create"},
		biCase{name: "assign to unknown user", method: "POST", path: fmt.Sprintf("%s/%d/user/999999", rp, w.role), status: 404, op: "create"},
		biCase{name: "assign to user abc", method: "POST", path: fmt.Sprintf("%s/%d/user/abc", rp, w.role), status: 400, op: "create"},
		biCase{name: "assign to user of another company", method: "POST", path: fmt.Sprintf("%s/%d/user/%d", rp, w.role, w.foreignUID), status: 404, op: "create"},
		biCase{name: "assign admin role to user of another company", method: "POST", path: fmt.Sprintf("%s/%d/user/%d", rp, w.adminRole, w.foreignUID), status: 404, op: "create"},
		biCase{name: "unassign role not held", method: "DELETE", path: fmt.Sprintf("%s/%d/user/%d", rp, w.role, w.uid), status: 404, op: "delete"},
		biCase{name: "unassign unknown user", method: "DELETE", path: fmt.Sprintf("%s/%d/user/999999", rp, w.adminRole), status: 404, op: "delete"},
		biCase{name: "unassign from user of another company", method: "DELETE", path: fmt.Sprintf("%s/%d/user/%d", rp, w.adminRole, w.foreignUID), status: 404, op: "delete"},
	)

	// Company roles.
	cr := "/v2/company/role"
	add(
		biCase{name: "company role malformed", method: "POST", path: cr, body: []byte(`{"name":"r"`), status: 400, op: "create"},
		biCase{name: "company role missing name", method: "POST", path: cr, body: map[string]any{"authed_endpoints": []int32{w.companyEPID}}, status: 400, op: "create"},
		biCase{name: "company role NUL in description", method: "POST", path: cr, body: map[string]any{"name": "r", "description": "\x00", "authed_endpoints": []int32{w.companyEPID}}, status: 400, op: "create"},
		biCase{name: "company role missing endpoints", method: "POST", path: cr, body: map[string]any{"name": "r"}, status: 400, op: "create"},
		biCase{name: "company role name of wrong type", method: "POST", path: cr, body: map[string]any{"name": 12345, "authed_endpoints": []int32{w.companyEPID}}, status: 400, op: "create"},
		biCase{name: "company role unknown endpoint", method: "POST", path: cr, body: map[string]any{"name": "r", "authed_endpoints": []int32{w.unknownEndpoint}}, status: 400, op: "create"},
		biCase{name: "company role negative endpoint", method: "POST", path: cr, body: map[string]any{"name": "r", "authed_endpoints": []int32{-1}}, status: 400, op: "create"},
		biCase{name: "update unknown company role", method: "PUT", path: cr + "/999999", body: map[string]any{"name": "r", "authed_endpoints": []int32{w.companyEPID}}, status: 404, op: "update"},
		biCase{name: "update foreign company role", method: "PUT", path: cr + "/" + itoa(w.foreignCompanyRole), body: map[string]any{"name": "r", "authed_endpoints": []int32{w.companyEPID}}, status: 404, op: "update"},
		biCase{name: "update company role abc", method: "PUT", path: cr + "/abc", body: map[string]any{"name": "r", "authed_endpoints": []int32{w.companyEPID}}, status: 400, op: "update"},
		biCase{name: "update company role unknown endpoint", method: "PUT", path: cr + "/" + itoa(w.companyRole), body: map[string]any{"name": "r", "authed_endpoints": []int32{w.unknownEndpoint}}, status: 400, op: "update"},
		biCase{name: "update company role empty name", method: "PUT", path: cr + "/" + itoa(w.companyRole), body: map[string]any{"name": " ", "authed_endpoints": []int32{w.companyEPID}}, status: 400, op: "update"},
		biCase{name: "delete unknown company role", method: "DELETE", path: cr + "/999999", status: 404, op: "delete"},
		biCase{name: "delete unknown company role (plural)", method: "DELETE", path: "/v2/company/roles/999999", status: 404, op: "delete"},
		biCase{name: "delete foreign company role", method: "DELETE", path: cr + "/" + itoa(w.foreignCompanyRole), status: 404, op: "delete"},
		biCase{name: "delete foreign company role (plural)", method: "DELETE", path: "/v2/company/roles/" + itoa(w.foreignCompanyRole), status: 404, op: "delete"},
		biCase{name: "delete company role abc", method: "DELETE", path: "/v2/company/roles/abc", status: 400, op: "delete"},
		biCase{name: "assign unknown company role", method: "POST", path: fmt.Sprintf("%s/999999/user/%d", cr, w.uid), status: 404, op: "create"},
		biCase{name: "assign company role to unknown user", method: "POST", path: fmt.Sprintf("%s/%d/user/999999", cr, w.companyRole), status: 404, op: "create"},
		biCase{name: "assign company role to user of another company", method: "POST", path: fmt.Sprintf("%s/%d/user/%d", cr, w.companyRole, w.foreignUID), status: 404, op: "create"},
		biCase{name: "assign foreign company role", method: "POST", path: fmt.Sprintf("%s/%d/user/%d", cr, w.foreignCompanyRole, w.uid), status: 404, op: "create"},
		biCase{name: "unassign company role not held", method: "DELETE", path: fmt.Sprintf("%s/%d/user/%d", cr, w.companyRole, w.uid), status: 404, op: "delete"},
		biCase{name: "unassign company role from user of another company", method: "DELETE", path: fmt.Sprintf("%s/%d/user/%d", cr, w.foreignCompanyRole, w.foreignUID), status: 404, op: "delete"},
	)

	// Paths that do not exist.
	add(
		biCase{name: "unknown /v2 path", method: "GET", path: "/v2/nonexistent", status: 404, op: ""},
		biCase{name: "unknown /v2 path with POST", method: "POST", path: "/v2/company/projects", body: map[string]any{"name": "x"}, status: 404, op: ""},
		biCase{name: "unknown version", method: "GET", path: "/v3/company", status: 404, op: ""},
		biCase{name: "unknown method", method: "PATCH", path: p, body: map[string]any{"name": "x"}, status: 405, op: ""},
		biCase{name: "method of no route on the path", method: "DELETE", path: p + "/roles", status: 405, op: ""},
		biCase{name: "unknown sub-resource", method: "DELETE", path: p + "/rolez", status: 404, op: ""},
	)
	return cs
}

func TestBadInputChangesNothing(t *testing.T) {
	e := newTestEnv(t)
	w := newBIWorld(e)
	before := w.snapshot(e)
	for _, tc := range biCases(w) {
		t.Run(tc.method+" "+tc.name, func(t *testing.T) {
			as := cred(w.c.Admin)
			if tc.as != nil {
				as = tc.as(w)
			}
			r := e.do(tc.method, tc.path, as, tc.body)
			if r.Status != tc.status {
				t.Fatalf("%s %s: expected %d, got %d: %s", tc.method, tc.path, tc.status, r.Status, r.Body)
			}
			r.wantError(t, tc.status)
			if r.JSON["operation"] != tc.op {
				t.Errorf("operation: expected %q, got %v: %s", tc.op, r.JSON["operation"], r.Body)
			}
			biCheckClean(t, r)
			if after := w.snapshot(e); after != before {
				t.Fatalf("a rejected request changed state:\nbefore %s\nafter  %s", before, after)
			}
		})
	}
	// The credentials still work as before.
	e.do("GET", "/v2/user", w.user, nil).want(t, 200)
}

func TestBodyTooLarge(t *testing.T) {
	e := newTestEnv(t, func(c *Config) { c.BodyLimit = 1024 })
	c := e.newCompany()
	pid, _ := e.newProject(c.Admin)
	big := strings.Repeat("x", 4096)
	read := func() string {
		var b strings.Builder
		for _, p := range []string{"/v2/company", "/v2/project/" + itoa(pid), "/v2/project/" + itoa(pid) + "/roles"} {
			b.Write(e.do("GET", p, c.Admin, nil).want(t, 200).Body)
		}
		return b.String()
	}
	before := read()
	for _, tc := range []struct {
		method, path string
		body         any
	}{
		{"POST", "/v2/company/project", map[string]any{"name": "big", "description": big}},
		{"POST", "/v2/project", map[string]any{"name": "big", "description": big}},
		{"PUT", "/v2/project/" + itoa(pid), map[string]any{"description": big}},
		{"POST", "/v2/company/user", map[string]any{"firstName": big, "lastName": "L", "email": uniq("big") + "@example.com", "password": "long-enough"}},
		{"POST", "/v2/project/" + itoa(pid) + "/role", map[string]any{"name": "big", "description": big, "authed_endpoints": []int{0}}},
		{"PUT", "/v2/user", map[string]any{"address": big}},
		{"POST", "/operator/companies", map[string]any{"name": "big", "description": big}},
	} {
		cr := cred(c.Admin)
		if strings.HasPrefix(tc.path, "/operator") {
			cr = opTok
		}
		r := e.do(tc.method, tc.path, cr, tc.body)
		if r.Status != 413 {
			t.Fatalf("%s %s: expected 413, got %d: %s", tc.method, tc.path, r.Status, r.Body)
		}
		r.wantError(t, 413)
		if r.Header.Get("X-Request-Id") == "" {
			t.Fatalf("%s %s: the 413 carries no X-Request-Id", tc.method, tc.path)
		}
		biCheckClean(t, r)
	}
	if after := read(); after != before {
		t.Fatalf("an oversized request changed state:\nbefore %s\nafter  %s", before, after)
	}
	if me := e.do("GET", "/v2/user", c.Admin, nil).want(t, 200); adStr(t, me.JSON, "user.address") != "" {
		t.Fatalf("an oversized request changed the user: %s", me.Body)
	}
	// A body below the limit is fine.
	e.do("POST", "/v2/company/project", c.Admin, map[string]any{"name": "small", "description": strings.Repeat("y", 500)}).want(t, 200)
}

// A request the HTTP server refuses before any handler runs (headers
// beyond its read buffer) still gets the error envelope and a request id.
func TestRefusedBeforeHandlersGetsEnvelopeAndRequestID(t *testing.T) {
	e := newTestEnv(t)
	conn, err := net.Dial("tcp", strings.TrimPrefix(e.base, "http://"))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	fmt.Fprintf(conn, "GET /v2/user HTTP/1.1\r\nHost: bdp\r\nX-Padding: %s\r\n\r\n", strings.Repeat("p", 64<<10))
	res, err := nethttp.ReadResponse(bufio.NewReader(conn), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	body, _ := io.ReadAll(res.Body)
	var env map[string]any
	if res.StatusCode != 431 || json.Unmarshal(body, &env) != nil || env["success"] != false || res.Header.Get("X-Request-Id") == "" {
		t.Fatalf("HTTP %d, X-Request-Id %q: %s", res.StatusCode, res.Header.Get("X-Request-Id"), body)
	}
}
