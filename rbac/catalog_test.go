package rbac

import (
	"slices"
	"strings"
	"testing"

	"github.com/openbdp/bdp/fault"
	"github.com/openbdp/bdp/store"
)

// Endpoint ids of the test catalog. Some lie beyond 64 so that the bitmap
// needs more than one word.
const (
	epMetaEndpoints int32 = 1  // GET /v2/meta/endpoints
	epGetUser       int32 = 2  // GET /v2/user
	epGetCompany    int32 = 3  // GET /v2/company
	epCreateCRole   int32 = 4  // POST /v2/company/role
	epCreateUser    int32 = 5  // POST /v2/company/user
	epGetProject    int32 = 10 // GET /v2/project/{project_id}
	epPutProject    int32 = 11 // PUT /v2/project/{project_id}
	epCreatePRole   int32 = 12 // POST /v2/project/{project_id}/role
	epAssignPRole   int32 = 13 // POST /v2/project/{project_id}/role/{role_id}/user/{user_id}
	epListRoles     int32 = 70 // GET /v2/project/{project_id}/roles
	epDeleteProject int32 = 71 // DELETE /v2/project/{project_id}
	epAssignCRole   int32 = 90 // POST /v2/company/role/{role_id}/user/{user_id}
)

func testEndpoints() []store.Endpoint {
	return []store.Endpoint{
		{ID: epMetaEndpoints, Method: "GET", Path: "/v2/meta/endpoints", Tag: store.TagMeta},
		{ID: epGetUser, Method: "GET", Path: "/v2/user", Tag: store.TagUser},
		{ID: epGetCompany, Method: "GET", Path: "/v2/company", Tag: store.TagCompany},
		{ID: epCreateCRole, Method: "POST", Path: "/v2/company/role", Tag: store.TagCompany},
		{ID: epCreateUser, Method: "POST", Path: "/v2/company/user", Tag: store.TagCompany},
		{ID: epGetProject, Method: "GET", Path: "/v2/project/{project_id}", Tag: store.TagProject},
		{ID: epPutProject, Method: "PUT", Path: "/v2/project/{project_id}", Tag: store.TagProject},
		{ID: epCreatePRole, Method: "POST", Path: "/v2/project/{project_id}/role", Tag: store.TagProject},
		{ID: epAssignPRole, Method: "POST", Path: "/v2/project/{project_id}/role/{role_id}/user/{user_id}", Tag: store.TagProject},
		{ID: epListRoles, Method: "GET", Path: "/v2/project/{project_id}/roles", Tag: store.TagProject},
		{ID: epDeleteProject, Method: "DELETE", Path: "/v2/project/{project_id}", Tag: store.TagProject},
		{ID: epAssignCRole, Method: "POST", Path: "/v2/company/role/{role_id}/user/{user_id}", Tag: store.TagCompany},
	}
}

func testCatalog() *Catalog { return NewCatalog(testEndpoints()) }

func TestCatalogIDs(t *testing.T) {
	c := testCatalog()
	wantAll := []int32{1, 2, 3, 4, 5, 10, 11, 12, 13, 70, 71, 90}
	if got := c.AllIDs(); !slices.Equal(got, wantAll) {
		t.Errorf("AllIDs = %v, want %v", got, wantAll)
	}
	wantProject := []int32{1, 2, 10, 11, 12, 13, 70, 71}
	if got := c.ProjectIDs(); !slices.Equal(got, wantProject) {
		t.Errorf("ProjectIDs = %v, want %v (everything but company endpoints)", got, wantProject)
	}
	if e, ok := c.Endpoint(epListRoles); !ok || e.Path != "/v2/project/{project_id}/roles" || e.Method != "GET" {
		t.Errorf("Endpoint(%d) = %+v, %v", epListRoles, e, ok)
	}
	if _, ok := c.Endpoint(6); ok {
		t.Errorf("Endpoint(6) found, but no such id exists")
	}
}

func TestValidateProjectRole(t *testing.T) {
	c := testCatalog()
	tests := []struct {
		name    string
		ids     []int32
		wantErr string // substring of the message; "" means accepted
	}{
		{"empty", nil, ""},
		{"project endpoints", []int32{epGetProject, epPutProject, epListRoles}, ""},
		{"meta and user endpoints", []int32{epMetaEndpoints, epGetUser}, ""},
		{"zero shorthand", []int32{AllEndpoints}, ""},
		{"zero among others", []int32{epGetProject, AllEndpoints}, ""},
		{"unknown id", []int32{epGetProject, 6}, "unknown endpoint id 6"},
		{"unknown id beyond the catalog", []int32{100000}, "unknown endpoint id 100000"},
		{"negative id", []int32{-3}, "unknown endpoint id -3"},
		{"company endpoint", []int32{epGetProject, epCreateCRole}, "endpoint 4 (POST /v2/company/role) is a company endpoint"},
		{"company endpoint beyond 64", []int32{epAssignCRole}, "endpoint 90"},
		{"company endpoint after zero", []int32{AllEndpoints, epGetCompany}, "endpoint 3"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := c.ValidateProjectRole(tt.ids)
			checkInvalid(t, err, tt.wantErr)
		})
	}
}

func TestValidateCompanyRole(t *testing.T) {
	c := testCatalog()
	tests := []struct {
		name    string
		ids     []int32
		wantErr string
	}{
		{"empty", nil, ""},
		{"company and project endpoints", []int32{epGetCompany, epAssignCRole, epGetProject, epListRoles}, ""},
		{"zero", []int32{AllEndpoints}, ""},
		{"unknown", []int32{epGetCompany, 7}, "unknown endpoint id 7"},
		{"negative", []int32{-1}, "unknown endpoint id -1"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			checkInvalid(t, c.ValidateCompanyRole(tt.ids), tt.wantErr)
		})
	}
}

func checkInvalid(t *testing.T, err error, wantErr string) {
	t.Helper()
	if wantErr == "" {
		if err != nil {
			t.Fatalf("refused: %v", err)
		}
		return
	}
	if err == nil {
		t.Fatalf("accepted, want an error containing %q", wantErr)
	}
	if k := fault.KindOf(err); k != fault.Invalid {
		t.Fatalf("kind %v, want invalid (400): %v", k, err)
	}
	if !strings.Contains(fault.Message(err), wantErr) {
		t.Fatalf("message %q does not contain %q", fault.Message(err), wantErr)
	}
}
