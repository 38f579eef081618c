package edge_test

import (
	"context"
	"io"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/openbdp/bdp/analytics"
	"github.com/openbdp/bdp/edge"
	"github.com/openbdp/bdp/edge/sim"
	"github.com/openbdp/bdp/store"
)

// TestEventLogReachesAppLogs: the simulator's crash and reload events,
// delivered in its heartbeats over the platform's broker with its edge
// credentials, land in the log of the controls app they concern (api.md
// 4.6), once although two nodes of a cluster hear every heartbeat, and
// only in that project's app.
func TestEventLogReachesAppLogs(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	p := e.project("events", 8)
	other := e.project("others", 8)
	catalog, err := analytics.LoadCatalog(ctx, e.st)
	if err != nil {
		t.Fatal(err)
	}
	newApp := func(project int64) store.ControlsApp {
		t.Helper()
		cip, err := e.st.CreateComponentInProject(ctx, project, catalog.Components()[0].ID, store.ComponentInProjectNames{})
		if err != nil {
			t.Fatal(err)
		}
		a, err := e.st.CreateControlsApp(ctx, store.ControlsApp{ProjectID: project, ComponentInProjectID: cip.ID, Algorithm: "schedule"}, "created")
		if err != nil {
			t.Fatal(err)
		}
		return a
	}
	app, foreign := newApp(p), newApp(other)

	// Two nodes of a cluster hear the same heartbeats and log their
	// events; each event lands once.
	for range 2 {
		events, err := edge.StartEventLog(e.broker, e.st, slog.New(slog.NewTextHandler(io.Discard, nil)))
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(events.Close)
	}

	h, err := e.hasher.Hash(ctx, "device-secret")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := e.st.PutEdgeCredentials(ctx, p, h); err != nil {
		t.Fatal(err)
	}
	if err := e.m.Sync(ctx); err != nil {
		t.Fatal(err)
	}
	s, err := sim.New(sim.Config{Broker: "tcp://" + e.broker.Addr, Username: store.EdgeUsername(p), Password: "device-secret",
		ProjectID: p, AliveInterval: 100 * time.Millisecond, BootDelay: 100 * time.Millisecond, ReloadDelay: 200 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	runCtx, cancel := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- s.Run(runCtx) }()
	t.Cleanup(func() { cancel(); <-done })
	e.waitFor("device online", func() bool { return e.m.Status(p).Online })

	// The platform starts the app on the device (and, to try the project
	// check, the other project's app id, which the device takes as any id).
	for _, id := range []string{app.ID, foreign.ID} {
		if _, err := e.m.Request(ctx, p, edge.Request{Operation: edge.OpAppStart, App: &edge.App{ID: id, Algorithm: "schedule"}}); err != nil {
			t.Fatal(err)
		}
	}
	e.waitFor("apps running on the device", func() bool { return len(s.Apps()) == 2 })
	s.Crash("test power loss")

	deviceLogs := func(id string) []store.ControlsAppLog {
		logs, _, err := e.st.ControlsAppLogs(ctx, id, store.AppLogQuery{Ascending: true, Page: 1, PerPage: 100})
		if err != nil {
			t.Fatal(err)
		}
		var out []store.ControlsAppLog
		for _, l := range logs {
			if l.Kind == "device" {
				out = append(out, l)
			}
		}
		return out
	}
	e.waitFor("crash and reload in the app's log", func() bool { return len(deviceLogs(app.ID)) >= 2 })
	// The reload comes with a later heartbeat than the crash: both
	// nodes have handled the crash's by now.
	logs := deviceLogs(app.ID)
	if len(logs) != 2 {
		t.Fatalf("each event logged once, want 2 entries: %+v", logs)
	}
	if logs[0].Level != store.LogWarning || !strings.Contains(logs[0].Message, "crashed") || !strings.Contains(logs[0].Message, "test power loss") ||
		logs[1].Level != store.LogInfo || !strings.Contains(logs[1].Message, "reloaded") {
		t.Errorf("device log entries: %+v", logs)
	}
	if got := deviceLogs(foreign.ID); len(got) != 0 {
		t.Errorf("another project's app got the device's events: %+v", got)
	}
}
