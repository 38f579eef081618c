package mqtt

import (
	"os"
	"testing"

	"github.com/openbdp/bdp/store"
	"github.com/openbdp/bdp/store/pgcluster"
	"github.com/openbdp/bdp/store/storetest"
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
	return storetest.Open(t, testCluster)
}
