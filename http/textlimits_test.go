package http

import (
	"context"
	"strings"
	"testing"

	"github.com/openbdp/bdp/auth"
)

// Every text field a handler trims keeps its length limit: the field's
// maxLength tag, enforced once by decode (or the query parameter's, by
// checkParams), names the field and the limit, counts characters, and
// lets the limit itself pass. The handlers no longer check lengths again.
func TestTrimmedTextFieldsKeepTheirLimits(t *testing.T) {
	e := newTestEnv(t)
	c := e.newCompany()
	pid, _ := e.newProject(c.Admin)
	p := "/v2/project/" + itoa(pid)
	tsUpload(e, c.Admin, pid, "src", tsMinute, 1)
	e.do("POST", vdpPath(pid, "", "dataPointID", "v", "type", "formula"), c.Admin, formulaConfig("P1;", map[string]string{"P1": "src"})).want(t, 200)
	prole := rbCreateProjectRole(e, c.Admin, pid, []int32{0})
	crole := rbCreateCompanyRole(e, c.Admin, []int32{0})
	long := func(n int) string { return strings.Repeat("ü", n) } // 2 bytes each: limits count characters
	op := bearer(testOperatorToken)
	company := func(name, desc string) map[string]any {
		return map[string]any{"name": name, "description": desc,
			"admin": map[string]any{"firstName": "F", "lastName": "L", "email": uniq("op") + "@example.com", "password": "long-enough"}}
	}
	user := func(first string) map[string]any {
		return map[string]any{"company_id": c.ID, "firstName": first, "lastName": "L", "email": uniq("u") + "@example.com", "password": "long-enough"}
	}
	cases := []boundsCase{
		{name: "project name", method: "POST", path: "/v2/company/project", body: map[string]any{"name": long(201)}, status: 400, want: "field name: at most 200 characters"},
		{name: "project description", method: "POST", path: "/v2/company/project", body: map[string]any{"name": "n", "description": long(2001)}, status: 400, want: "field description: at most 2000 characters"},
		{name: "project description at the limit", method: "POST", path: "/v2/company/project", body: map[string]any{"name": "n", "description": long(2000)}, status: 200},
		{name: "project rename", method: "PUT", path: p, body: map[string]any{"name": long(201)}, status: 400, want: "field name: at most 200 characters"},
		{name: "project role name", method: "POST", path: p + "/role", body: map[string]any{"name": long(201), "authed_endpoints": []int{0}}, status: 400, want: "field name: at most 200 characters"},
		{name: "project role description", method: "PUT", path: p + "/role/" + itoa(prole), body: map[string]any{"description": long(2001)}, status: 400, want: "field description: at most 2000 characters"},
		{name: "project role name at the limit", method: "PUT", path: p + "/role/" + itoa(prole), body: map[string]any{"name": long(200)}, status: 200},
		{name: "company role name", method: "POST", path: "/v2/company/role", body: map[string]any{"name": long(201), "authed_endpoints": []int{0}}, status: 400, want: "field name: at most 200 characters"},
		{name: "company role description", method: "PUT", path: "/v2/company/role/" + itoa(crole), body: map[string]any{"description": long(2001)}, status: 400, want: "field description: at most 2000 characters"},
		{name: "own first name", method: "PUT", path: "/v2/user", body: map[string]any{"firstName": long(201)}, status: 400, want: "field firstName: at most 200 characters"},
		{name: "own last name", method: "PUT", path: "/v2/user", body: map[string]any{"lastName": long(201)}, status: 400, want: "field lastName: at most 200 characters"},
		{name: "own phone", method: "PUT", path: "/v2/user", body: map[string]any{"phone": long(201)}, status: 400, want: "field phone: at most 200 characters"},
		{name: "own address", method: "PUT", path: "/v2/user", body: map[string]any{"address": long(2001)}, status: 400, want: "field address: at most 2000 characters"},
		{name: "own address at the limit", method: "PUT", path: "/v2/user", body: map[string]any{"address": long(2000)}, status: 200},
		{name: "new user's first name", method: "POST", path: "/v2/company/user", body: user(long(201)), status: 400, want: "field firstName: at most 200 characters"},
		{name: "new user's first name at the limit", method: "POST", path: "/v2/company/user", body: user(long(200)), status: 200},
		{name: "virtual datapoint description at create", method: "POST", path: vdpPath(pid, "", "dataPointID", "w", "type", "formula", "description", strings.Repeat("a", 2001)), // ASCII: the URI stays under 8 KiB
			body: formulaConfig("P1;", map[string]string{"P1": "src"}), status: 400, want: "query parameter description: at most 2000 characters"},
		{name: "virtual datapoint description", method: "PUT", path: vdpPath(pid, "", "dataPointID", "v"), body: map[string]any{"description": long(2001)}, status: 400, want: "field description: at most 2000 characters"},
		{name: "virtual datapoint description at the limit", method: "PUT", path: vdpPath(pid, "", "dataPointID", "v"), body: map[string]any{"description": long(2000)}, status: 200},
		{name: "company name (operator)", method: "POST", path: "/operator/companies", as: op, body: company(long(201), ""), status: 400, want: "field name: at most 200 characters"},
		{name: "company description (operator)", method: "POST", path: "/operator/companies", as: op, body: company(uniq("co"), long(2001)), status: 400, want: "field description: at most 2000 characters"},
	}
	runBoundsCases(t, e, c.Admin, cases)
}

// bdp admin create-company takes names outside a request body, where no
// maxLength tag applies: CreateCompany keeps their limits itself.
func TestCreateCompanyNameLimits(t *testing.T) {
	e := newTestEnv(t)
	hasher := auth.NewHasher(fastHash, 1)
	long := strings.Repeat("ü", 201)
	for _, tt := range []struct {
		name, company, first, last, want string
	}{
		{"company name", long, "F", "L", "field name: at most 200 characters"},
		{"blank company name", "  ", "F", "L", "field name: must not be empty"},
		{"first name", uniq("co"), long, "L", "field firstName: at most 200 characters"},
		{"last name", uniq("co"), "F", long, "field lastName: at most 200 characters"},
		{"at the limits", uniq("co") + strings.Repeat("ü", 190), strings.Repeat("ü", 200), strings.Repeat("ü", 200), ""},
	} {
		t.Run(tt.name, func(t *testing.T) {
			_, _, err := CreateCompany(context.Background(), e.store, hasher, tt.company,
				CompanyAdmin{FirstName: tt.first, LastName: tt.last, Email: uniq("a") + "@example.com", Password: "long-enough"})
			switch {
			case tt.want == "" && err != nil:
				t.Fatalf("refused: %v", err)
			case tt.want != "" && (err == nil || !strings.Contains(err.Error(), tt.want)):
				t.Fatalf("error %v, want %q", err, tt.want)
			}
		})
	}
}
