package pgcluster

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"testing"
	"time"
)

// StartForTests starts a throwaway cluster in a fresh temporary directory
// and returns it with a cleanup func that stops it and removes the
// directory. It is meant for TestMain, so that a test package pays for one
// cluster and gives each test its own database with CreateDatabase.
func StartForTests(ctx context.Context) (*Cluster, func(), error) {
	dir, err := os.MkdirTemp("", "bdp-pgcluster-")
	if err != nil {
		return nil, nil, fmt.Errorf("pgcluster: %w", err)
	}
	c, err := Start(ctx, Options{Dir: dir, Throwaway: true})
	if err != nil {
		os.RemoveAll(dir)
		return nil, nil, err
	}
	cleanup := func() {
		// Cleanup runs after the tests, when the caller's context may be
		// gone. A fast shutdown disconnects clients and takes well under a
		// second; the timeout only bounds a stuck server.
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		// The signature leaves no way to return these errors, and a failed
		// cleanup must not fail the tests that already passed: report only.
		if err := c.Stop(ctx); err != nil {
			fmt.Fprintln(os.Stderr, "pgcluster: cleanup:", err)
		}
		if err := os.RemoveAll(dir); err != nil {
			fmt.Fprintln(os.Stderr, "pgcluster: cleanup:", err)
		}
	}
	return c, cleanup, nil
}

// RunTests is a test package's TestMain body: it starts a throwaway
// cluster, hands it to use, runs the tests, stops the cluster and exits
// with the tests' code.
//
//	func TestMain(m *testing.M) { pgcluster.RunTests(m, func(c *pgcluster.Cluster) { testCluster = c }) }
func RunTests(m *testing.M, use func(*Cluster)) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	c, cleanup, err := StartForTests(ctx)
	cancel()
	if err != nil {
		fmt.Fprintln(os.Stderr, "start PostgreSQL for tests:", err)
		os.Exit(1)
	}
	use(c)
	code := m.Run()
	cleanup()
	os.Exit(code)
}

// TestDatabase creates a fresh, empty database for one test and returns
// its URL; a failure fails the test. Each test gets its own, so tests of a
// package share the cluster but never each other's rows.
func (c *Cluster) TestDatabase(t testing.TB) string {
	t.Helper()
	name := fmt.Sprintf("test_%d_%d", os.Getpid(), c.testDBs.Add(1))
	url, err := c.CreateDatabase(context.Background(), name)
	if err != nil {
		t.Fatal(err)
	}
	return url
}

// ProcessesIn lists the live processes whose working directory is dir:
// every PostgreSQL server process works in its data directory, so an
// empty answer after Stop means no server of that cluster is left.
func ProcessesIn(dir string) []int {
	entries, _ := os.ReadDir("/proc")
	var pids []int
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		if cwd, err := os.Readlink(filepath.Join("/proc", e.Name(), "cwd")); err == nil && cwd == dir && !isZombie(pid) {
			pids = append(pids, pid)
		}
	}
	return pids
}
