package mqtt

import (
	"testing"

	"github.com/openbdp/bdp/store/pgcluster"
)

var testCluster *pgcluster.Cluster

func TestMain(m *testing.M) { pgcluster.RunTests(m, func(c *pgcluster.Cluster) { testCluster = c }) }
