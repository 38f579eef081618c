// Package storetest is the database fixture of bdp's tests: a migrated
// store on a database of its own in the test cluster (pgcluster.RunTests),
// and a tenant, a company with its admin and a project, to own what a test
// writes.
package storetest

import (
	"context"
	"testing"

	"github.com/openbdp/bdp/store"
	"github.com/openbdp/bdp/store/pgcluster"
)

// Open returns a migrated store on a new database of cluster, closed when
// the test ends, and the database's URL.
func Open(tb testing.TB, cluster *pgcluster.Cluster) (*store.Store, string) {
	tb.Helper()
	ctx := context.Background()
	url := cluster.TestDatabase(tb)
	st, err := store.Open(ctx, url)
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(st.Close)
	if _, err := st.Migrate(ctx); err != nil {
		tb.Fatal(err)
	}
	return st, url
}

// Tenant is a company, its first user (the company admin) and a project of
// it named "p".
type Tenant struct {
	Company store.Company
	Admin   store.User
	Project store.Project
}

// NewTenant creates a company named name, its admin a@name.test, and a
// project whose admin role grants endpoint 1.
func NewTenant(tb testing.TB, st *store.Store, name string) Tenant {
	tb.Helper()
	ctx := context.Background()
	co, u, _, err := st.CreateCompany(ctx, store.Company{Name: name},
		store.NewUser{FirstName: "A", LastName: "B", Email: "a@" + name + ".test", PasswordHash: "h"}, nil)
	if err != nil {
		tb.Fatal(err)
	}
	p, _, err := st.CreateProject(ctx, u.ID, store.Project{CompanyID: co.ID, Name: "p"}, []int32{1})
	if err != nil {
		tb.Fatal(err)
	}
	return Tenant{Company: co, Admin: u, Project: p}
}
