package store

import (
	"context"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/openbdp/bdp/fault"
	"github.com/openbdp/bdp/store/pgcluster"
)

var testCluster *pgcluster.Cluster

func TestMain(m *testing.M) {
	pgcluster.RunTests(m, func(c *pgcluster.Cluster) { testCluster = c })
}

func newTestStore(t testing.TB) *Store {
	t.Helper()
	ctx := context.Background()
	url := testCluster.TestDatabase(t)
	s, err := Open(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(s.Close)
	if _, err := s.Migrate(ctx); err != nil {
		t.Fatal(err)
	}
	return s
}

func TestMigrateIsIdempotent(t *testing.T) {
	s := newTestStore(t)
	v1, err := s.Migrate(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if v1 < 1 {
		t.Fatalf("schema version %d", v1)
	}
}

// Nodes that start together on a fresh database (each its own pool, as
// each its own process) all migrate without an error and reach the same
// version: the migrations run under a lock, one node after the other.
func TestMigrateConcurrentlyFromSeveralNodes(t *testing.T) {
	ctx := context.Background()
	url := testCluster.TestDatabase(t)
	const nodes = 4
	versions := make([]int64, nodes)
	errs := make([]error, nodes)
	var wg sync.WaitGroup
	for i := range nodes {
		wg.Go(func() {
			s, err := Open(ctx, url)
			if err != nil {
				errs[i] = err
				return
			}
			defer s.Close()
			versions[i], errs[i] = s.Migrate(ctx)
		})
	}
	wg.Wait()
	for i := range nodes {
		if errs[i] != nil || versions[i] != versions[0] || versions[0] < 1 {
			t.Fatalf("node %d: version %d, %v (node 0: %d)", i, versions[i], errs[i], versions[0])
		}
	}
}

// Ids survive restarts and releases; a new route gets a new id and lands
// in every admin role that may hold it.
func TestSyncEndpointsKeepsIDsAndExtendsAdminRoles(t *testing.T) {
	ctx := context.Background()
	s := newTestStore(t)
	v1 := []Endpoint{
		{Method: "GET", Path: "/v2/user", Tag: TagUser},
		{Method: "GET", Path: "/v2/company", Tag: TagCompany},
		{Method: "GET", Path: "/v2/project/{project_id}", Tag: TagProject},
	}
	first, err := s.SyncEndpoints(ctx, v1)
	if err != nil {
		t.Fatal(err)
	}
	all := []int32{first[0].ID, first[1].ID, first[2].ID}
	projectIDs := []int32{first[0].ID, first[2].ID}
	co, u, crole, err := s.CreateCompany(ctx, Company{Name: "acme"},
		NewUser{FirstName: "A", LastName: "B", Email: "a@acme.test", PasswordHash: "h"}, all)
	if err != nil {
		t.Fatal(err)
	}
	_, prole, err := s.CreateProject(ctx, u.ID, Project{CompanyID: co.ID, Name: "p"}, projectIDs)
	if err != nil {
		t.Fatal(err)
	}
	// A custom role must not be extended.
	custom, err := s.CreateCompanyRole(ctx, CompanyRole{CompanyID: co.ID, Name: "reader", AuthedEndpoints: []int32{first[1].ID}})
	if err != nil {
		t.Fatal(err)
	}

	// The next release reorders the routes and adds two.
	v2 := []Endpoint{
		{Method: "POST", Path: "/v2/company/role", Tag: TagCompany},
		v1[2], v1[0],
		{Method: "GET", Path: "/v2/project/{project_id}/roles", Tag: TagProject},
		v1[1],
	}
	second, err := s.SyncEndpoints(ctx, v2)
	if err != nil {
		t.Fatal(err)
	}
	if second[1].ID != first[2].ID || second[2].ID != first[0].ID || second[4].ID != first[1].ID {
		t.Fatalf("ids changed across releases: %v then %v", first, second)
	}
	newCompanyEP, newProjectEP := second[0].ID, second[3].ID
	if slices.Contains(all, newCompanyEP) || slices.Contains(all, newProjectEP) || newCompanyEP == newProjectEP {
		t.Fatalf("new routes reuse ids: %v", second)
	}

	gotC, err := s.CompanyRole(ctx, co.ID, crole.ID)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Contains(gotC.AuthedEndpoints, newCompanyEP) || !slices.Contains(gotC.AuthedEndpoints, newProjectEP) {
		t.Fatalf("company admin role not extended: %v", gotC.AuthedEndpoints)
	}
	gotP, err := s.ProjectRole(ctx, prole.ProjectID, prole.ID)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Contains(gotP.AuthedEndpoints, newProjectEP) || slices.Contains(gotP.AuthedEndpoints, newCompanyEP) {
		t.Fatalf("project admin role: want the new project route and not the company route, got %v", gotP.AuthedEndpoints)
	}
	gotCustom, _ := s.CompanyRole(ctx, co.ID, custom.ID)
	if !slices.Equal(gotCustom.AuthedEndpoints, []int32{first[1].ID}) {
		t.Fatalf("custom role changed: %v", gotCustom.AuthedEndpoints)
	}
	// Syncing the same release again changes nothing.
	third, err := s.SyncEndpoints(ctx, v2)
	if err != nil || !slices.Equal(third, second) {
		t.Fatalf("second sync of one release: %v %v", third, err)
	}
	again, _ := s.CompanyRole(ctx, co.ID, crole.ID)
	if len(again.AuthedEndpoints) != len(gotC.AuthedEndpoints) {
		t.Fatalf("admin role grew on a repeated sync: %v", again.AuthedEndpoints)
	}
}

func TestErrorsAreTranslated(t *testing.T) {
	ctx := context.Background()
	s := newTestStore(t)
	co, u, _, err := s.CreateCompany(ctx, Company{Name: "acme"},
		NewUser{FirstName: "A", LastName: "B", Email: "Ada@acme.test", PasswordHash: "h"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	_, err = s.CreateUser(ctx, NewUser{CompanyID: co.ID, FirstName: "C", LastName: "D", Email: "ada@ACME.test", PasswordHash: "h"})
	if !fault.Is(err, fault.Conflict) {
		t.Fatalf("duplicate email (other case): %v", err)
	}
	if _, err := s.User(ctx, u.ID+1000); !fault.Is(err, fault.NotFound) {
		t.Fatalf("unknown user: %v", err)
	}
	if _, _, _, err := s.CreateCompany(ctx, Company{Name: "acme"},
		NewUser{FirstName: "X", LastName: "Y", Email: "x@acme.test", PasswordHash: "h"}, nil); !fault.Is(err, fault.Conflict) {
		t.Fatalf("duplicate company: %v", err)
	}
	// The failed company creation left no user behind.
	if _, err := s.UserByEmail(ctx, "x@acme.test"); !fault.Is(err, fault.NotFound) {
		t.Fatalf("half-created company left its admin: %v", err)
	}
	if _, err := s.UpdateProjectSettings(ctx, 999, SettingsPatch{}); !fault.Is(err, fault.NotFound) {
		t.Fatalf("settings of unknown project: %v", err)
	}
	if _, err := s.UpdateProjectQuota(ctx, 999, QuotaPatch{}); !fault.Is(err, fault.NotFound) {
		t.Fatalf("quota of unknown project: %v", err)
	}
}

func TestDeleteProjectRemovesEverything(t *testing.T) {
	ctx := context.Background()
	s := newTestStore(t)
	co, u, _, err := s.CreateCompany(ctx, Company{Name: "acme"},
		NewUser{FirstName: "A", LastName: "B", Email: "a@acme.test", PasswordHash: "h"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	p, _, err := s.CreateProject(ctx, u.ID, Project{CompanyID: co.ID, Name: "p"}, []int32{1})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.SetSystemTags(ctx, p.ID, "sensor/1", []DatapointTag{{Key: "units", Value: "°C"}}); err != nil {
		t.Fatal(err)
	}
	if _, err := s.DeleteProject(ctx, p.ID); err != nil {
		t.Fatal(err)
	}
	pr, err := s.Principal(ctx, u.ID)
	if err != nil {
		t.Fatal(err)
	}
	if len(pr.ProjectRoles) != 0 {
		t.Fatalf("roles of the deleted project remain: %+v", pr.ProjectRoles)
	}
	var n int
	if err := s.pool.QueryRow(ctx, `SELECT (SELECT count(*) FROM datapoints) + (SELECT count(*) FROM datapoint_tags)
		+ (SELECT count(*) FROM project_settings) + (SELECT count(*) FROM project_quotas)`).Scan(&n); err != nil {
		t.Fatal(err)
	}
	if n != 0 {
		t.Fatalf("%d rows of the deleted project remain", n)
	}
}

// Partitions of the coming weeks exist before data arrives; an old week
// gets its partition when its data comes.
func TestPartitionsAheadAndOnDemand(t *testing.T) {
	ctx := context.Background()
	s := newTestStore(t)
	now := time.Date(2026, 11, 18, 15, 0, 0, 0, time.UTC) // a Wednesday
	if err := s.EnsureUpcomingPartitions(ctx, now); err != nil {
		t.Fatal(err)
	}
	partitions := func() []string {
		rows, err := s.pool.Query(ctx, `SELECT c.relname FROM pg_inherits i JOIN pg_class c ON c.oid = i.inhrelid
			WHERE i.inhparent = 'observations'::regclass ORDER BY 1`)
		if err != nil {
			t.Fatal(err)
		}
		names, err := pgx.CollectRows(rows, pgx.RowTo[string])
		if err != nil {
			t.Fatal(err)
		}
		return names
	}
	got := partitions()
	want := []string{"observations_w20261109", "observations_w20261116", "observations_w20261123",
		"observations_w20261130", "observations_w20261207", "observations_w20261214"}
	if !slices.Equal(got, want) {
		t.Fatalf("partitions ahead: %v, want %v", got, want)
	}
	if err := s.WriteObservations(ctx, []Row{{Datapoint: 1, Time: time.Date(1999, 12, 31, 23, 0, 0, 0, time.UTC), Value: 1}}); err != nil {
		t.Fatal(err)
	}
	if got := partitions(); !slices.Contains(got, "observations_w19991227") {
		t.Fatalf("no partition made on demand for old data: %v", got)
	}
}
