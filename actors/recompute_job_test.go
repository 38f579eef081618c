package actors

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/openbdp/bdp/fault"
	"github.com/openbdp/bdp/store"
)

// recomputeJobEnv stores a virtual datapoint out = a (not started: a
// recompute needs no actor) and returns its definition and the jobs.
func recomputeJobEnv(t *testing.T) (*env, Definition, *RecomputeJobs) {
	const body = `{"pins": {"P1": {"dataPointID": "a"}}, "parameters": {"formula": "P1;"}}`
	e := newEnv(t)
	cfg, err := ParseConfig(TypeFormula, []byte(body))
	if err != nil {
		t.Fatal(err)
	}
	raw, err := json.Marshal(cfg)
	if err != nil {
		t.Fatal(err)
	}
	_, err = e.store.CreateVDP(context.Background(), store.VDP{ProjectID: e.project, DataPointID: "out", Type: TypeFormula, Config: raw},
		store.StatusChange{Code: store.StatusCreated})
	if err != nil {
		t.Fatal(err)
	}
	def := e.definition("out", TypeFormula, body)
	return e, def, NewRecomputeJobs(e.store, slog.New(slog.NewTextHandler(io.Discard, nil)))
}

// recomputeLog polls out's log until its last entry contains until, and
// returns the recompute entries.
func (e *env) recomputeLog(until string) []string {
	e.t.Helper()
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
		v, err := e.store.VDP(context.Background(), e.project, "out")
		if err != nil {
			e.t.Fatal(err)
		}
		var out []string
		for _, l := range v.Logs {
			if l.Type == store.LogRecompute {
				out = append(out, l.Message)
			}
		}
		if len(out) > 0 && strings.Contains(out[len(out)-1], until) {
			return out
		}
	}
	e.t.Fatalf("no recompute log entry with %q", until)
	return nil
}

// One job per datapoint at a time; Shutdown cancels a running one, which
// says so in the log, and refuses new ones.
func TestRecomputeJobs(t *testing.T) {
	e, def, jobs := recomputeJobEnv(t)
	release := make(chan struct{})
	jobs.SetBeforeRun(func(ctx context.Context) {
		select {
		case <-release:
		case <-ctx.Done():
		}
	})
	start, end := t0, t0.Add(time.Hour)
	if err := jobs.Start(def, start, end, "ada@example.com"); err != nil {
		t.Fatal(err)
	}
	if err := jobs.Start(def, start, end, "ada@example.com"); !fault.Is(err, fault.Conflict) {
		t.Fatalf("a second job of one datapoint: %v", err)
	}
	// Another node on the same database.
	other := NewRecomputeJobs(e.store, slog.New(slog.NewTextHandler(io.Discard, nil)))
	if err := other.Start(def, start, end, "bob@example.com"); !fault.Is(err, fault.Conflict) {
		t.Fatalf("a second job of one datapoint on another node: %v", err)
	}
	close(release)
	logs := e.recomputeLog("finished")
	if len(logs) != 2 || logs[0] != "recompute of [2026-06-01T00:00:00Z, 2026-06-01T01:00:00Z) started by ada@example.com" ||
		!strings.HasPrefix(logs[1], "recompute of [2026-06-01T00:00:00Z, 2026-06-01T01:00:00Z) finished: 0 outputs written in ") {
		t.Fatalf("log %q", logs)
	}

	jobs.SetBeforeRun(func(ctx context.Context) { <-ctx.Done() })
	if err := jobs.Start(def, start, end, "ada@example.com"); err != nil {
		t.Fatalf("the next job after the end: %v", err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := jobs.Shutdown(ctx); err != nil {
		t.Fatal(err)
	}
	if logs := e.recomputeLog("cancelled"); !strings.Contains(logs[len(logs)-1], "the server shut down; nothing was replaced") {
		t.Fatalf("log %q", logs)
	}
	if err := jobs.Start(def, start, end, "ada@example.com"); !fault.Is(err, fault.Unavailable) {
		t.Fatalf("a job after Shutdown: %v", err)
	}
}
