package controls_test

import (
	"context"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/openbdp/bdp/controls"
	"github.com/openbdp/bdp/edge"
	"github.com/openbdp/bdp/edge/edgetest"
	"github.com/openbdp/bdp/store"
)

// Two runtimes, two nodes of a cluster with complementary ownership of
// two projects: Reconcile runs each active app on the node that owns its
// project, and only there. When ownership moves, the node that lost a
// project releases its app (no status change, no app_stop at the device:
// the app goes on) and the one that won it starts it, registers it on the
// device again and takes over the value written before the move instead
// of writing it twice; at the next boundary each app writes once, from
// its new node.
func TestReconcileRunsOwnedAppsAndReleasesOthers(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	a, b := e.runtime(nil), e.runtime(nil)
	type placed struct {
		project int64
		dev     *edgetest.Device
		app     store.ControlsApp
	}
	var apps []placed
	for _, name := range []string{"first", "second"} {
		p, dev := e.project(name, "sp")
		room := e.component(p, "room", map[string]string{"temperature_setpoint": "sp"},
			map[string]string{"setpoint_schedule": weekdaySchedule, "setpoint_schedule_default": "17"})
		app, plan, err := e.app(p, room, "schedule", "room")
		if err != nil {
			t.Fatal(err)
		}
		// Starting in the store, as a run leaves it; no node runs it yet.
		if _, changed, err := e.st.ChangeControlsApp(ctx, p, app.ID, store.AppChange{Code: store.StatusStarting,
			Message: "started by the test", Targets: plan.Targets()}); err != nil || !changed {
			t.Fatalf("Starting: %v %v", changed, err)
		}
		apps = append(apps, placed{p, dev, app})
	}
	var flipped atomic.Bool
	ownsA := func(p int64) bool { return (p == apps[0].project) != flipped.Load() }
	ownsB := func(p int64) bool { return !ownsA(p) }
	runtimes := []struct {
		name string
		rt   *controls.Runtime
		owns func(int64) bool
	}{{"a", a, ownsA}, {"b", b, ownsB}}

	for _, step := range []struct {
		name   string
		flip   bool
		starts int // app_start each device got by now: one per start
	}{
		{"start", false, 1},
		{"move", true, 2},
	} {
		t.Run(step.name, func(t *testing.T) {
			if step.flip {
				flipped.Store(true)
			}
			for _, n := range runtimes {
				if err := n.rt.Reconcile(ctx, n.owns); err != nil {
					t.Fatalf("%s: %v", n.name, err)
				}
			}
			for _, x := range apps {
				for _, n := range runtimes {
					if n.rt.Runs(x.app.ID) != n.owns(x.project) {
						t.Fatalf("app of project %d runs on %s: %v, owned %v", x.project, n.name, n.rt.Runs(x.app.ID), n.owns(x.project))
					}
				}
				e.waitFor("Running", func() bool { return e.status(x.project, x.app.ID) == store.StatusRunning })
				e.waitFor("the app registered on the device", func() bool { return appStarts(x.dev, x.app.ID) == step.starts })
				if step.flip {
					e.waitFor("the moved app taking over its value", func() bool { return strings.Contains(e.logText(x.app.ID), "continues on this node") })
				}
				e.waitFor("the app's value written once", func() bool { return writesOf(x.dev, 17) == 1 })
				// The device has the write before its acknowledgement is
				// recorded; a move before that would rightly write again.
				e.waitFor("the write recorded as written", func() bool {
					op, ok, err := e.st.LastSetpointWrite(ctx, x.project, "app:"+x.app.ID)
					return err == nil && ok && op.State == edge.StateWritten
				})
				if n := appStarts(x.dev, x.app.ID); n != step.starts {
					t.Fatalf("%d app_start, want %d", n, step.starts)
				}
			}
			if a.Running() != 1 || b.Running() != 1 {
				t.Fatalf("a runs %d apps, b %d; want one each", a.Running(), b.Running())
			}
		})
	}
	for _, x := range apps {
		if n := writesOf(x.dev, 17); n != 1 {
			t.Fatalf("the device of project %d got %d writes of 17 over the move, want 1", x.project, n)
		}
	}
	// The release sent nothing: an app_stop would have reached each
	// device before the new node's app_start, which has arrived.
	for _, x := range apps {
		for _, r := range x.dev.Requests() {
			if r.Operation == edge.OpAppStop {
				t.Fatalf("the device of project %d got app_stop: the release stopped the app there", x.project)
			}
		}
		log := e.logText(x.app.ID)
		if !strings.Contains(log, "released by this node") || strings.Contains(log, "Stopp") {
			t.Fatalf("app log of a released app:\n%s", log)
		}
		logs, _, err := e.st.ControlsAppLogs(ctx, x.app.ID, store.AppLogQuery{Ascending: true, Page: 1, PerPage: 100})
		if err != nil {
			t.Fatal(err)
		}
		running := false // Running once, it stays so through the move
		for _, l := range logs {
			if running && l.StatusCode != store.StatusRunning {
				t.Fatalf("the app's status moved to %d: %s", l.StatusCode, l.Message)
			}
			running = running || l.StatusCode == store.StatusRunning
		}
	}
	// The released actors' timers are gone: at 08:00 each app writes 21
	// once, from the node that owns its project now.
	e.waitFor("one timer per app", func() bool { return e.clock.Armed() == 2 })
	e.clock.Set(e.clock.Now().Add(time.Hour))
	for _, x := range apps {
		e.waitFor("21 at 08:00", func() bool { return is(slot(x.dev, "sp", 13), 21) })
	}
	time.Sleep(200 * time.Millisecond) // a second writer would have written by now
	for _, x := range apps {
		if n := writesOf(x.dev, 21); n != 1 {
			t.Fatalf("the device of project %d got %d writes of 21, want 1", x.project, n)
		}
	}
}

// writesOf counts the writes of v a device received.
func writesOf(d *edgetest.Device, v float64) int {
	n := 0
	for _, r := range d.Requests() {
		if r.Operation == edge.OpWrite && r.Value != nil && *r.Value == v {
			n++
		}
	}
	return n
}
