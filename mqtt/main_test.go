package mqtt

import (
	"context"
	"os"
	"testing"

	"github.com/openbdp/bdp/store"
	"github.com/openbdp/bdp/store/pgcluster"
)

// The package's tests run against a real PostgreSQL cluster, one per
// package run, with a fresh database per test.
var testCluster *pgcluster.Cluster

func TestMain(m *testing.M) {
	if spec := os.Getenv(liveSubscribersEnv); spec != "" {
		os.Exit(runLiveSubscribers(spec)) // BenchmarkLiveDelivery's child
	}
	pgcluster.RunTests(m, func(c *pgcluster.Cluster) { testCluster = c })
}

// openTestStore opens a fresh, migrated database of the test cluster,
// closed when the test ends, and returns its URL too.
func openTestStore(t testing.TB) (*store.Store, string) {
	t.Helper()
	ctx := context.Background()
	url := testCluster.TestDatabase(t)
	st, err := store.Open(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(st.Close)
	if _, err := st.Migrate(ctx); err != nil {
		t.Fatal(err)
	}
	return st, url
}
