package node

import (
	"context"
	"io"
	"log/slog"
	"slices"
	"testing"
	"testing/synctest"
	"time"
)

// A node's parts stop in the reverse order of their start, and one
// that hangs is left behind when the shutdown deadline passes while the
// parts started before it still stop.
func TestPartsStopInReverseWithinTheDeadline(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var stopped []string
		running := &Parts{Log: slog.New(slog.NewTextHandler(io.Discard, nil))}
		for _, name := range []string{"database user", "pipeline", "engine"} {
			running.AddFunc(name, func() { stopped = append(stopped, name) })
		}
		hung := make(chan struct{})
		running.Add("hangs", func(ctx context.Context) { <-hung })
		running.AddFunc("http", func() { stopped = append(stopped, "http") })

		began := time.Now()
		running.Stop(15 * time.Second)
		took := time.Since(began)
		close(hung)

		if want := []string{"http", "engine", "pipeline", "database user"}; !slices.Equal(stopped, want) {
			t.Errorf("stopped %v, want %v", stopped, want)
		}
		if want := 15*time.Second + lateGrace; took != want {
			t.Errorf("stopping took %s with a part that hangs, want the deadline and the grace, %s", took, want)
		}
	})
}
