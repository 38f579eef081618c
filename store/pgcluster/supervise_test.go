package pgcluster

import (
	"context"
	"path/filepath"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
)

// A postmaster killed with SIGKILL is restarted on the same port, so the
// URL stays valid; Stop afterwards stops the new server and leaves no
// PostgreSQL process behind.
func TestSuperviseRestartsAKilledServer(t *testing.T) {
	dir := filepath.Join(traversableTempDir(t), "pg")
	c := startCluster(t, Options{Dir: dir, Throwaway: true, Logger: testLogger(t)})
	url := c.URL()

	var mu sync.Mutex
	var changes []bool
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		c.Supervise(ctx, SuperviseOptions{Poll: 20 * time.Millisecond, MinBackoff: 20 * time.Millisecond, OnChange: func(up bool) {
			mu.Lock()
			defer mu.Unlock()
			changes = append(changes, up)
		}})
	}()
	defer func() { cancel(); <-done }()

	for round := range 2 { // a second death is handled like the first
		old := c.currentPID()
		if err := syscall.Kill(old, syscall.SIGKILL); err != nil {
			t.Fatal(err)
		}
		deadline := time.Now().Add(60 * time.Second)
		for c.currentPID() == old || !answers(url) {
			if time.Now().After(deadline) {
				t.Fatalf("round %d: server not back within 60 s", round)
			}
			time.Sleep(20 * time.Millisecond)
		}
		if got := queryString(t, url, "SELECT 1::text"); got != "1" {
			t.Fatalf("round %d: select 1 = %q through the same URL", round, got)
		}
	}
	mu.Lock()
	if len(changes) != 4 || changes[0] || !changes[1] || changes[2] || !changes[3] {
		t.Errorf("OnChange saw %v, want [false true false true]", changes)
	}
	mu.Unlock()

	cancel()
	<-done
	if err := c.Stop(context.Background()); err != nil {
		t.Fatal(err)
	}
	if procs := ProcessesIn(dir); len(procs) > 0 {
		t.Fatalf("PostgreSQL processes left in %s after Stop: %v", dir, procs)
	}
}

func answers(url string) bool {
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	conn, err := pgx.Connect(ctx, url)
	if err != nil {
		return false
	}
	conn.Close(ctx)
	return true
}
