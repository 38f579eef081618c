package rbac

import (
	"slices"
	"strings"
	"testing"

	"github.com/openbdp/bdp/fault"
	"github.com/openbdp/bdp/store"
)

const (
	project1 int64 = 100
	project2 int64 = 200
)

func companyRole(ids ...int32) store.CompanyRole {
	return store.CompanyRole{CompanyID: 1, AuthedEndpoints: ids}
}

func projectRole(projectID int64, ids []int32, tags ...store.TagAuth) store.ProjectRole {
	return store.ProjectRole{ProjectID: projectID, AuthedEndpoints: ids, AuthedTags: tags}
}

func tagAuth(key, value string, read, write bool) store.TagAuth {
	return store.TagAuth{Key: key, Value: value, Read: read, Write: write}
}

func ids(v ...int32) []int32 { return v }

func perms(company []store.CompanyRole, project ...store.ProjectRole) *Permissions {
	return Compute(testCatalog(), store.Principal{
		User:         store.User{ID: 7, CompanyID: 1},
		CompanyRoles: company,
		ProjectRoles: project,
	})
}

func TestComputeIdentity(t *testing.T) {
	p := perms(nil, projectRole(project1, ids(epGetProject)), projectRole(project2, nil))
	if p.UserID != 7 || p.CompanyID != 1 {
		t.Fatalf("UserID, CompanyID = %d, %d; want 7, 1", p.UserID, p.CompanyID)
	}
	if p.HasCompanyRole() {
		t.Fatalf("HasCompanyRole without company roles")
	}
	got := p.ProjectIDs()
	slices.Sort(got)
	if !slices.Equal(got, []int64{project1, project2}) {
		t.Fatalf("ProjectIDs = %v", got)
	}
	if !perms([]store.CompanyRole{companyRole()}).HasCompanyRole() {
		t.Fatalf("HasCompanyRole false with a company role")
	}
}

func TestAllows(t *testing.T) {
	none := perms(nil)
	companyAdmin := perms([]store.CompanyRole{companyRole(AllEndpoints)})
	companyLimited := perms([]store.CompanyRole{companyRole(epGetCompany, epGetProject)})
	projectViewer := perms(nil, projectRole(project1, ids(epGetProject)))
	projectAdmin := perms(nil, projectRole(project1, ids(AllEndpoints)))
	// Union: grants spread over several roles, plus roles that grant
	// nothing, which must not take anything away.
	spread := perms([]store.CompanyRole{companyRole()},
		projectRole(project1, ids(epGetProject)),
		projectRole(project1, nil),
		projectRole(project1, ids(epPutProject), tagAuth("name", "x", false, false)),
		projectRole(project2, ids(epListRoles)),
	)
	// A stored project role holding a company endpoint (validation is
	// bypassed here) must still not grant it.
	smuggled := perms(nil, projectRole(project1, ids(epGetCompany, epAssignCRole, epGetProject)))

	tests := []struct {
		name    string
		p       *Permissions
		id      int32
		project int64
		want    bool
	}{
		{"no roles: meta", none, epMetaEndpoints, 0, true},
		{"no roles: user", none, epGetUser, 0, true},
		{"no roles: company", none, epGetCompany, 0, false},
		{"no roles: project", none, epGetProject, project1, false},
		{"unknown endpoint, even for the company admin", companyAdmin, 6, project1, false},
		{"negative endpoint", companyAdmin, -1, project1, false},

		{"company admin: company endpoint", companyAdmin, epGetCompany, 0, true},
		{"company admin: company endpoint beyond 64", companyAdmin, epAssignCRole, 0, true},
		{"company admin: project endpoint in project 1", companyAdmin, epDeleteProject, project1, true},
		{"company admin: project endpoint in project 2", companyAdmin, epListRoles, project2, true},
		{"company admin: project endpoint in a project without roles", companyAdmin, epGetProject, 999, true},

		{"limited company role: granted company endpoint", companyLimited, epGetCompany, 0, true},
		{"limited company role: other company endpoint", companyLimited, epCreateCRole, 0, false},
		{"limited company role: granted project endpoint, any project", companyLimited, epGetProject, project2, true},
		{"limited company role: other project endpoint", companyLimited, epPutProject, project1, false},

		{"project viewer: granted in its project", projectViewer, epGetProject, project1, true},
		{"project viewer: not in another project", projectViewer, epGetProject, project2, false},
		{"project viewer: not without a project", projectViewer, epGetProject, 0, false},
		{"project viewer: not another endpoint", projectViewer, epPutProject, project1, false},
		{"project viewer: no company endpoint", projectViewer, epGetCompany, project1, false},
		{"project viewer: still user endpoints", projectViewer, epGetUser, 0, true},

		{"project zero: every project endpoint", projectAdmin, epGetProject, project1, true},
		{"project zero: endpoint beyond 64", projectAdmin, epDeleteProject, project1, true},
		{"project zero: role endpoints", projectAdmin, epAssignPRole, project1, true},
		{"project zero: not in another project", projectAdmin, epDeleteProject, project2, false},
		{"project zero: no company endpoint", projectAdmin, epGetCompany, project1, false},
		{"project zero: no company endpoint beyond 64", projectAdmin, epAssignCRole, project1, false},

		{"union: from the first role", spread, epGetProject, project1, true},
		{"union: from the third role", spread, epPutProject, project1, true},
		{"union: other project's grant stays there", spread, epListRoles, project2, true},
		{"union: no leak across projects", spread, epListRoles, project1, false},
		{"union: no leak across projects (2)", spread, epGetProject, project2, false},
		{"union: empty company role grants no company endpoint", spread, epGetCompany, 0, false},

		{"smuggled company endpoint is not granted", smuggled, epGetCompany, project1, false},
		{"smuggled company endpoint beyond 64 is not granted", smuggled, epAssignCRole, 0, false},
		{"smuggled role still grants its project endpoint", smuggled, epGetProject, project1, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := tt.p.Allows(tt.id, tt.project); got != tt.want {
				t.Fatalf("Allows(%d, %d) = %v, want %v", tt.id, tt.project, got, tt.want)
			}
			err := tt.p.Check(tt.id, tt.project)
			if tt.want != (err == nil) {
				t.Fatalf("Check(%d, %d) = %v, but Allows = %v", tt.id, tt.project, err, tt.want)
			}
			if err != nil && !fault.Is(err, fault.Forbidden) {
				t.Fatalf("Check error kind %v, want forbidden", fault.KindOf(err))
			}
		})
	}
}

func TestCheckNamesTheEndpoint(t *testing.T) {
	err := perms(nil).Check(epCreatePRole, project1)
	want := "unauthorized access to endpoint 12: POST /v2/project/{project_id}/role"
	if fault.Message(err) != want {
		t.Fatalf("message %q, want %q", fault.Message(err), want)
	}
	err = perms(nil).Check(epAssignCRole, 0)
	if msg := fault.Message(err); !strings.Contains(msg, "endpoint 90: POST /v2/company/role/{role_id}/user/{user_id}") {
		t.Fatalf("message %q does not name endpoint 90", msg)
	}
}

func TestCoversProjectRole(t *testing.T) {
	maintainer := perms(nil,
		projectRole(project1, ids(epCreatePRole, epAssignPRole, epListRoles), tagAuth("name", "sensor*", true, false)),
		projectRole(project1, nil, tagAuth("name", "sensor1", false, true), tagAuth("site", "north*", true, true)),
	)
	projectAdmin := perms(nil, projectRole(project1, ids(AllEndpoints), tagAuth("name", "*", true, true)))
	companyLimited := perms([]store.CompanyRole{companyRole(epGetProject, epCreatePRole)})
	companyAdmin := perms([]store.CompanyRole{companyRole(AllEndpoints)})
	mixed := perms([]store.CompanyRole{companyRole(epGetProject)}, projectRole(project1, ids(epListRoles)))

	tests := []struct {
		name    string
		p       *Permissions
		project int64
		ids     []int32
		tags    []store.TagAuth
		wantErr string // substring; "" means covered
	}{
		{"empty role", maintainer, project1, nil, nil, ""},
		{"subset of endpoints", maintainer, project1, ids(epCreatePRole, epListRoles), nil, ""},
		{"all held endpoints", maintainer, project1, ids(epCreatePRole, epAssignPRole, epListRoles), nil, ""},
		{"extra endpoint", maintainer, project1, ids(epCreatePRole, epGetProject), nil, "endpoint 10: GET /v2/project/{project_id}"},
		{"extra endpoint beyond 64", maintainer, project1, ids(epDeleteProject), nil, "endpoint 71"},
		{"zero is more than held", maintainer, project1, ids(AllEndpoints), nil, "which you do not hold"},
		{"held endpoints in another project", maintainer, project2, ids(epListRoles), nil, "endpoint 70"},
		{"exact read", maintainer, project1, nil, []store.TagAuth{tagAuth("name", "sensor1", true, false)}, ""},
		{"same read pattern", maintainer, project1, nil, []store.TagAuth{tagAuth("name", "sensor*", true, false)}, ""},
		{"narrower read pattern", maintainer, project1, nil, []store.TagAuth{tagAuth("name", "sensor-a*", true, false)}, ""},
		{"write on the one writable name", maintainer, project1, nil, []store.TagAuth{tagAuth("name", "sensor1", true, true)}, ""},
		{"neither read nor write", maintainer, project1, nil, []store.TagAuth{tagAuth("name", "*", false, false)}, ""},
		{"read on other key held", maintainer, project1, nil, []store.TagAuth{tagAuth("site", "north-1", true, true)}, ""},
		{"extra read: everything", maintainer, project1, nil, []store.TagAuth{tagAuth("name", "*", true, false)}, "read on name=*"},
		{"extra read: other names", maintainer, project1, nil, []store.TagAuth{tagAuth("name", "meter*", true, false)}, "read on name=meter*"},
		{"extra read: broader pattern", maintainer, project1, nil, []store.TagAuth{tagAuth("name", "sens*", true, false)}, "read on name=sens*"},
		{"extra write", maintainer, project1, nil, []store.TagAuth{tagAuth("name", "sensor*", true, true)}, "write on name=sensor*"},
		{"extra write on a readable name", maintainer, project1, nil, []store.TagAuth{tagAuth("name", "sensor2", false, true)}, "write on name=sensor2"},
		{"extra read via another key", maintainer, project1, nil, []store.TagAuth{tagAuth("floor", "1", true, false)}, "read on floor=1"},
		{"name pattern does not cover other keys", maintainer, project1, nil, []store.TagAuth{tagAuth("site", "sensor1", true, false)}, "read on site=sensor1"},
		{"tags in a project without grants", maintainer, project2, nil, []store.TagAuth{tagAuth("name", "sensor1", true, false)}, "read on name=sensor1"},
		{"one good, one bad tag", maintainer, project1, nil, []store.TagAuth{tagAuth("name", "sensor1", true, false), tagAuth("name", "x", true, false)}, "read on name=x"},

		{"project admin: everything", projectAdmin, project1, ids(AllEndpoints), []store.TagAuth{tagAuth("name", "*", true, true), tagAuth("site", "*", true, true)}, ""},
		{"project admin: nothing in another project", projectAdmin, project2, ids(epGetProject), nil, "endpoint 10"},

		{"company role: held endpoints, any tags", companyLimited, project2, ids(epGetProject), []store.TagAuth{tagAuth("name", "*", true, true)}, ""},
		{"company role: extra endpoint", companyLimited, project1, ids(epGetProject, epPutProject), nil, "endpoint 11"},
		{"company admin: all of a project role", companyAdmin, project2, ids(AllEndpoints), []store.TagAuth{tagAuth("name", "*", true, true)}, ""},
		{"company and project roles combine", mixed, project1, ids(epGetProject, epListRoles), nil, ""},
		{"company and project roles: project part stays in its project", mixed, project2, ids(epGetProject, epListRoles), nil, "endpoint 70"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := tt.p.CoversProjectRole(tt.project, tt.ids, tt.tags)
			checkForbidden(t, err, tt.wantErr)
		})
	}
}

func TestCoversCompanyRole(t *testing.T) {
	limited := perms([]store.CompanyRole{companyRole(epGetCompany, epCreateCRole), companyRole(epGetProject)})
	admin := perms([]store.CompanyRole{companyRole(AllEndpoints)})
	projectOnly := perms(nil, projectRole(project1, ids(AllEndpoints), tagAuth("name", "*", true, true)))
	tests := []struct {
		name    string
		p       *Permissions
		ids     []int32
		wantErr string
	}{
		{"empty", limited, nil, ""},
		{"subset", limited, ids(epGetCompany), ""},
		{"union of two roles", limited, ids(epGetCompany, epCreateCRole, epGetProject), ""},
		{"extra company endpoint", limited, ids(epGetCompany, epCreateUser), "endpoint 5: POST /v2/company/user"},
		{"extra company endpoint beyond 64", limited, ids(epAssignCRole), "endpoint 90"},
		{"extra project endpoint", limited, ids(epPutProject), "endpoint 11"},
		{"zero", limited, ids(AllEndpoints), "which you do not hold"},
		{"admin: zero", admin, ids(AllEndpoints), ""},
		{"admin: anything", admin, ids(epAssignCRole, epCreateUser, epDeleteProject), ""},
		{"project roles do not count", projectOnly, ids(epGetProject), "endpoint 10"},
		{"project roles: empty role", projectOnly, nil, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			checkForbidden(t, tt.p.CoversCompanyRole(tt.ids), tt.wantErr)
		})
	}
}

func checkForbidden(t *testing.T, err error, wantErr string) {
	t.Helper()
	if wantErr == "" {
		if err != nil {
			t.Fatalf("refused: %v", err)
		}
		return
	}
	if err == nil {
		t.Fatalf("covered, want a refusal containing %q", wantErr)
	}
	if k := fault.KindOf(err); k != fault.Forbidden {
		t.Fatalf("kind %v, want forbidden: %v", k, err)
	}
	if !strings.Contains(fault.Message(err), wantErr) {
		t.Fatalf("message %q does not contain %q", fault.Message(err), wantErr)
	}
}

func TestTagCovered(t *testing.T) {
	read := func(h store.TagAuth) bool { return h.Read }
	tests := []struct {
		holder, want string // "key=value"
		covered      bool
	}{
		{"name=a*", "name=ab*", true},
		{"name=a*", "name=abc", true},
		{"name=a*", "name=a", true},
		{"name=a*", "name=a*", true},
		{"name=a*", "name=a*b*", true},
		{"name=a*", "name=*", false},
		{"name=a*", "name=b*", false},
		{"name=a*", "name=ba", false},
		{"name=a*", "name=*a", false},
		{"name=a*c", "name=abc", true},
		{"name=a*c", "name=a*c", true},
		{"name=a*c", "name=a*", false},
		{"name=a*c", "name=a*cd", false},
		{"name=*c", "name=x*c", true},
		{"name=*c", "name=c*", false},
		{"name=abc", "name=abc", true},
		{"name=abc", "name=ab*", false},
		{"name=abc", "name=abcd", false},
		{"name=*", "name=*", true},
		{"name=*", "name=anything", true},
		{"name=*", "site=north", true}, // every datapoint has a name
		{"name=*", "floor=*", true},
		{"site=*", "site=north", true},
		{"site=*", "name=x", false},
		{"site=n*", "floor=n1", false},
	}
	for _, tt := range tests {
		hk, hv, _ := strings.Cut(tt.holder, "=")
		wk, wv, _ := strings.Cut(tt.want, "=")
		got := tagCovered([]store.TagAuth{tagAuth(hk, hv, true, false)}, tagAuth(wk, wv, true, false), read)
		if got != tt.covered {
			t.Errorf("holder %s covers %s = %v, want %v", tt.holder, tt.want, got, tt.covered)
		}
	}
	// Only held TagAuths with the right flag count.
	held := []store.TagAuth{tagAuth("name", "*", false, true)}
	if tagCovered(held, tagAuth("name", "x", true, false), read) {
		t.Errorf("a write-only TagAuth covered a read")
	}
	if tagCovered(nil, tagAuth("name", "x", true, false), read) {
		t.Errorf("nothing held covered a read")
	}
}
