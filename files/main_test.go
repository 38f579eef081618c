package files_test

import (
	"testing"

	"github.com/openbdp/bdp/store/pgcluster"
)

// testCluster is the throwaway PostgreSQL of the package's tests that need
// file rows beside the objects (the repair).
var testCluster *pgcluster.Cluster

func TestMain(m *testing.M) {
	pgcluster.RunTests(m, func(c *pgcluster.Cluster) { testCluster = c })
}
