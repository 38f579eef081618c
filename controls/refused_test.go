package controls_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/openbdp/bdp/store"
)

// An app whose writes the safeguards refuse does not stay Running: it
// stops with status Health check failed and the reason when its first
// write since the start is refused, or when MaxRefusedWrites are refused
// in a row after accepted ones. Fewer refusals in a row leave it running:
// the next value may pass.
func TestAppWhoseFirstWriteIsRefusedStops(t *testing.T) {
	e := newEnv(t)
	rt := e.runtime(nil)
	{
		p, dev := e.project("refused-first", "hot_sp")
		// 40 °C outside the entries, at Monday 07:00: outside the bounds [15, 25].
		room := e.component(p, "room", map[string]string{"temperature_setpoint": "hot_sp"},
			map[string]string{"setpoint_schedule": weekdaySchedule, "setpoint_schedule_default": "40"})
		app, plan, err := e.app(p, room, "schedule", "room")
		if err != nil {
			t.Fatal(err)
		}
		e.start(rt, plan)
		e.waitFor("Health check failed", func() bool { return e.status(p, app.ID) == store.StatusHealthCheckFails })
		log := e.logText(app.ID)
		for _, want := range []string{"app stopped: its first write since it started was refused", "outside its setpoint bounds [15, 25]", "run the app again"} {
			if !strings.Contains(log, want) {
				t.Fatalf("log lacks %q:\n%s", want, log)
			}
		}
		e.waitFor("the actor gone", func() bool { return rt.Running() == 0 })
		if v := slot(dev, "hot_sp", 13); v != nil {
			t.Fatalf("the device holds %v", *v)
		}
	}
}

func TestAppWhoseWritesAreRefusedInARowStops(t *testing.T) {
	e := newEnv(t)
	rt := e.runtime(nil)
	{
		p, dev := e.project("refused-later", "office_sp")
		room := e.component(p, "room", map[string]string{"temperature_setpoint": "office_sp"},
			map[string]string{"setpoint_schedule": weekdaySchedule, "setpoint_schedule_default": "17"})
		app, plan, err := e.app(p, room, "schedule", "room")
		if err != nil {
			t.Fatal(err)
		}
		monday := e.clock.Now()
		e.start(rt, plan)
		e.waitFor("the default written", func() bool { return is(slot(dev, "office_sp", 13), 17) })
		e.waitFor("the next boundary armed", func() bool { return e.clock.Armed() == 1 })
		off := false
		if _, err := e.st.UpdateProjectSettings(context.Background(), p, store.SettingsPatch{SetpointWritingEnabled: &off}); err != nil {
			t.Fatal(err)
		}
		refusals := func() int { return strings.Count(e.logText(app.ID), "refused (schedule at") }
		// Monday 08:00 (21), Tuesday 08:00 (21.5), next Monday 08:00 (21): the
		// 17 of the evenings is on the device already, and not written again.
		for i, at := range []time.Duration{time.Hour, 25 * time.Hour, 7*24*time.Hour + time.Hour} {
			e.clock.Set(monday.Add(at))
			e.waitFor("the refusal logged", func() bool { return refusals() == i+1 })
			if i < 2 {
				e.waitFor("the next boundary armed", func() bool { return e.clock.Armed() == 1 })
				if s := e.status(p, app.ID); s != store.StatusRunning {
					t.Fatalf("after %d refusals the app has status %d, want Running", i+1, s)
				}
			}
		}
		e.waitFor("Health check failed", func() bool { return e.status(p, app.ID) == store.StatusHealthCheckFails })
		if log := e.logText(app.ID); !strings.Contains(log, "app stopped: 3 writes in a row were refused") ||
			!strings.Contains(log, "setpoint writing is not enabled") {
			t.Fatalf("log:\n%s", log)
		}
		e.waitFor("the actor gone", func() bool { return rt.Running() == 0 })
	}
}
