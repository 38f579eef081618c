package edge_test

import (
	"testing"

	"github.com/openbdp/bdp/store/pgcluster"
)

// The package's tests run against a real PostgreSQL cluster, one per
// package run, with a fresh database per test.
var testCluster *pgcluster.Cluster

func TestMain(m *testing.M) {
	pgcluster.RunTests(m, func(c *pgcluster.Cluster) { testCluster = c })
}
