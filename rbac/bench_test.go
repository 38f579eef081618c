package rbac

import (
	"fmt"
	"testing"

	"github.com/openbdp/bdp/store"
)

// benchCatalog is a catalog of realistic size: 40 company endpoints and
// 160 project endpoints, ids 1..200.
func benchCatalog() *Catalog {
	eps := make([]store.Endpoint, 0, 200)
	for id := int32(1); id <= 200; id++ {
		tag := store.TagProject
		if id <= 40 {
			tag = store.TagCompany
		}
		eps = append(eps, store.Endpoint{ID: id, Method: "GET", Path: fmt.Sprintf("/v2/bench/%d", id), Tag: tag})
	}
	return NewCatalog(eps)
}

// benchPrincipal holds 10 roles: 3 company roles and 7 project roles with
// 50 TagAuths in all, all in the checked project, the last TagAuth the
// only one matching the checked datapoint. The checked endpoint is granted
// only by the last project role.
func benchPrincipal(withCompanyRoles bool) (store.Principal, int64, int32, Datapoint) {
	const project int64 = 4242
	const endpoint int32 = 190
	p := store.Principal{User: store.User{ID: 1, CompanyID: 1}}
	projectRoles := 7
	if withCompanyRoles {
		for i := 0; i < 3; i++ {
			p.CompanyRoles = append(p.CompanyRoles, store.CompanyRole{
				AuthedEndpoints: []int32{int32(1 + i), int32(10 + i), int32(41 + i)},
			})
		}
	} else {
		projectRoles = 10
	}
	tags := 0
	for i := 0; i < projectRoles; i++ {
		r := store.ProjectRole{ProjectID: project, AuthedEndpoints: []int32{int32(50 + i), int32(100 + i)}}
		if i == projectRoles-1 {
			r.AuthedEndpoints = append(r.AuthedEndpoints, endpoint)
		}
		n := 50 / projectRoles
		if i == projectRoles-1 {
			n = 50 - tags
		}
		for j := 0; j < n; j++ {
			r.AuthedTags = append(r.AuthedTags, store.TagAuth{Key: "name", Value: fmt.Sprintf("building-%d/floor-*/sensor-*", tags), Read: true, Write: true})
			tags++
		}
		p.ProjectRoles = append(p.ProjectRoles, r)
	}
	// A realistic datapoint name matched by building-49 only.
	return p, project, endpoint, Datapoint{ID: "building-49/floor-3/sensor-temperature-supply-air"}
}

func BenchmarkPermissionCheck(b *testing.B) {
	for _, mixed := range []bool{true, false} {
		name := "company+project-roles"
		if !mixed {
			name = "project-roles-only"
		}
		b.Run(name, func(b *testing.B) {
			cat := benchCatalog()
			pr, project, endpoint, point := benchPrincipal(mixed)
			roles, tags := len(pr.CompanyRoles)+len(pr.ProjectRoles), 0
			for _, r := range pr.ProjectRoles {
				tags += len(r.AuthedTags)
			}
			if roles != 10 || tags != 50 {
				b.Fatalf("fixture has %d roles and %d TagAuths, want 10 and 50", roles, tags)
			}
			matching := 0
			for _, r := range pr.ProjectRoles {
				for _, t := range r.AuthedTags {
					if tagMatches(t, point) {
						matching++
					}
				}
			}
			last := pr.ProjectRoles[len(pr.ProjectRoles)-1].AuthedTags
			if matching != 1 || !tagMatches(last[len(last)-1], point) {
				b.Fatalf("the datapoint must match only the last TagAuth (%d match)", matching)
			}
			p := Compute(cat, pr)
			if !p.Allows(endpoint, project) || p.DatapointAccess(project, point) != (Access{true, true}) {
				b.Fatal("the checked grant is missing")
			}
			b.ReportAllocs()
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				if !p.Allows(endpoint, project) {
					b.Fatal("denied")
				}
				if a := p.DatapointAccess(project, point); !a.Read {
					b.Fatal("denied")
				}
			}
		})
	}
}
