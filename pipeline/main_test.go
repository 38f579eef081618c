package pipeline

import (
	"context"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/openbdp/bdp/store"
	"github.com/openbdp/bdp/store/pgcluster"
	"github.com/openbdp/bdp/store/storetest"
)

// The batcher's tests write to a real PostgreSQL cluster, one per package
// run, with a fresh database per test.

var testCluster *pgcluster.Cluster

func TestMain(m *testing.M) {
	pgcluster.RunTests(m, func(c *pgcluster.Cluster) { testCluster = c })
}

// testDB is a migrated database with one company and project.
type testDB struct {
	store     *store.Store
	url       string
	projectID int64
}

func newTestDB(t testing.TB) *testDB {
	t.Helper()
	st, url := storetest.Open(t, testCluster)
	return &testDB{store: st, url: url, projectID: storetest.NewTenant(t, st, "acme").Project.ID}
}

// startBatcher runs a batcher over st until the test ends.
func startBatcher(t *testing.T, cfg BatcherConfig, st ObservationStore, r *Router) *Batcher {
	t.Helper()
	b, err := NewBatcher(cfg, st, r, prometheus.NewRegistry())
	if err != nil {
		t.Fatal(err)
	}
	go b.Run()
	t.Cleanup(b.Stop)
	return b
}

// scalar runs a query returning one number against the test database.
func (d *testDB) scalar(t testing.TB, query string, args ...any) float64 {
	t.Helper()
	conn, err := pgx.Connect(context.Background(), d.url)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(context.Background())
	var v float64
	if err := conn.QueryRow(context.Background(), query, args...).Scan(&v); err != nil {
		t.Fatalf("%s: %v", query, err)
	}
	return v
}
