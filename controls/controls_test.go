package controls_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/openbdp/bdp/controls"
	"github.com/openbdp/bdp/edge"
	"github.com/openbdp/bdp/edge/edgetest"
	"github.com/openbdp/bdp/fault"
	"github.com/openbdp/bdp/pipeline"
	"github.com/openbdp/bdp/store"
)

const weekdaySchedule = `[{"day":"monday","start":"08:00","end":"18:00","value":21},{"day":"tuesday","start":"08:00","end":"18:00","value":21.5}]`

// A schedule app writes its value when it starts and at each boundary
// after, with one timer armed at a time, through the real write path to
// the device's priority array; the device got the app with its reset
// value and alive time-out first.
func TestScheduleWritesAtEachBoundary(t *testing.T) {
	e := newEnv(t)
	rt := e.runtime(nil)
	p, dev := e.project("sched", "office_sp")
	room := e.component(p, "room", map[string]string{"temperature_setpoint": "office_sp"},
		map[string]string{"setpoint_schedule": weekdaySchedule, "setpoint_schedule_default": "17"})
	app, plan, err := e.app(p, room, "schedule", "room")
	if err != nil {
		t.Fatal(err)
	}
	e.start(rt, plan)
	e.waitFor("Running", func() bool { return e.status(p, app.ID) == store.StatusRunning })
	e.waitFor("the default written at 07:00", func() bool { return is(slot(dev, "office_sp", 13), 17) })
	var start *edge.Request
	for _, r := range dev.Requests() {
		if r.Operation == edge.OpAppStart {
			start = &r
		}
	}
	if start == nil || start.App.ID != app.ID || start.App.AliveTimeout != 900 || len(start.App.Writes) != 1 ||
		start.App.Writes[0].DataPointID != "office_sp" || start.App.Writes[0].Priority != 13 || start.App.Writes[0].ResetValue != nil {
		t.Fatalf("app_start: %+v", start)
	}
	e.waitFor("the one timer of the next boundary", func() bool { return e.clock.Armed() == 1 })

	monday := e.clock.Now()
	for _, step := range []struct {
		at   time.Duration // after Monday 07:00
		want float64
	}{
		{1 * time.Hour, 21},              // Monday 08:00
		{11 * time.Hour, 17},             // Monday 18:00
		{25 * time.Hour, 21.5},           // Tuesday 08:00
		{35 * time.Hour, 17},             // Tuesday 18:00
		{7*24*time.Hour + time.Hour, 21}, // next Monday 08:00
	} {
		e.clock.Set(monday.Add(step.at))
		e.waitFor("the value at "+e.clock.Now().Format(time.RFC3339), func() bool { return is(slot(dev, "office_sp", 13), step.want) })
		e.waitFor("one timer armed", func() bool { return e.clock.Armed() == 1 })
	}
	e.waitFor("the write logged with the device's answer", func() bool {
		return strings.Contains(e.logText(app.ID), `wrote 21 to "office_sp" at priority 13`)
	})
	log := e.logText(app.ID)
	for _, want := range []string{"app actor running", "app_start: the edge device confirmed", `wrote 17 to "office_sp" at priority 13`} {
		if !strings.Contains(log, want) {
			t.Fatalf("log lacks %q:\n%s", want, log)
		}
	}
	// The log shows what the device answered to each write: the
	// setpoint operation's state, with the value it overwrote.
	e.waitFor("every write logged as written by the device", func() bool {
		logs, _, err := e.st.ControlsAppLogs(context.Background(), app.ID, store.AppLogQuery{Ascending: true, Page: 1, PerPage: 100})
		if err != nil {
			t.Fatal(err)
		}
		writes := 0
		for _, l := range logs {
			if l.Kind == "write" {
				if l.Write == nil || l.Write.State != edge.StateWritten {
					return false
				}
				writes++
			}
		}
		return writes == 6
	})
	logs, _, _ := e.st.ControlsAppLogs(context.Background(), app.ID, store.AppLogQuery{Page: 1, PerPage: 1}) // newest
	if w := logs[0].Write; w == nil || !is(w.OldValue, 17) {
		t.Fatalf("the last write (21 over 17) reports %+v", w)
	}
	if err := rt.Stop(context.Background(), p, app.ID); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(e.logText(app.ID), "app_stop: the edge device confirmed") {
		t.Fatalf("app_stop not confirmed:\n%s", e.logText(app.ID))
	}
	if rt.Running() != 0 {
		t.Fatalf("%d apps still running", rt.Running())
	}
}

// heating_curve writes offset + slope × (20 − outdoor) within [min, max]
// when it starts (from the newest stored outdoor temperature) and when
// the outdoor temperature moves it by 0.1 K or more.
func TestHeatingCurveFollowsOutdoorTemperature(t *testing.T) {
	e := newEnv(t)
	rt := e.runtime(nil)
	p, dev := e.project("curve", "supply_sp")
	ctx := context.Background()
	write := func(at time.Time, v float64) {
		t.Helper()
		if err := e.batcher.Write(ctx, "test", []pipeline.Observation{{ProjectID: p, DataPointID: "outdoor", Time: at, Value: v}}); err != nil {
			t.Fatal(err)
		}
	}
	t0 := time.Now().UTC().Truncate(time.Second)
	write(t0, 10) // before the start: 18 + 0.5 × 10 = 23
	loop := e.component(p, "thermal_control_loop", map[string]string{"outlet_temperature_setpoint": "supply_sp", "outside_air_temperature": "outdoor"},
		map[string]string{"heating_curve_slope": "0.5", "heating_curve_offset": "18", "heating_curve_min": "16", "heating_curve_max": "24"})
	app, plan, err := e.app(p, loop, "heating_curve", "thermal_control_loop")
	if err != nil {
		t.Fatal(err)
	}
	e.start(rt, plan)
	e.waitFor("23 from the stored outdoor temperature", func() bool { return is(slot(dev, "supply_sp", 13), 23) })
	for i, step := range []struct{ outdoor, want float64 }{
		{14, 21},   // moves
		{14.1, 21}, // 20.95: less than 0.1 K, not written
		{-20, 24},  // held at max
		{40, 16},   // held at min
	} {
		write(t0.Add(time.Duration(i+1)*time.Minute), step.outdoor)
		e.waitFor("the curve's setpoint", func() bool { return is(slot(dev, "supply_sp", 13), step.want) })
	}
	// The log line of a write follows the device's answer: wait for it.
	e.waitFor("the last write logged", func() bool { return strings.Count(e.logText(app.ID), `to "supply_sp"`) >= 4 })
	log := e.logText(app.ID)
	if strings.Contains(log, "20.95") {
		t.Fatalf("a move below 0.1 K was written:\n%s", log)
	}
	if n := strings.Count(log, `to "supply_sp"`); n != 4 {
		t.Fatalf("%d writes logged, want 4:\n%s", n, log)
	}
}

// What a run needs is refused with 400 naming it; a schedule that does
// not parse or overlaps itself too.
func TestPrepareRefusals(t *testing.T) {
	e := newEnv(t)
	p, _ := e.project("refuse", "sp")
	ctx := context.Background()
	if _, err := e.st.SetSystemTags(ctx, p, "unbounded", []store.DatapointTag{{Key: "units", Value: "degC"}}); err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		name      string
		component string
		algorithm string
		pins      map[string]string
		attrs     map[string]string
		want      string
	}{
		{"setpoint pin unmapped", "room", "schedule", nil, map[string]string{"setpoint_schedule": weekdaySchedule}, "setpoint pin temperature_setpoint"},
		{"no bounds", "room", "schedule", map[string]string{"temperature_setpoint": "unbounded"}, map[string]string{"setpoint_schedule": weekdaySchedule}, "has no setpoint bounds"},
		{"no schedule", "room", "schedule", map[string]string{"temperature_setpoint": "sp"}, nil, "setpoint_schedule of component in project"},
		{"schedule does not parse", "room", "schedule", map[string]string{"temperature_setpoint": "sp"}, map[string]string{"setpoint_schedule": `{"monday": 21}`}, "not a JSON list"},
		{"schedule overlaps", "room", "schedule", map[string]string{"temperature_setpoint": "sp"},
			map[string]string{"setpoint_schedule": `[{"day":"friday","start":"08:00","end":"18:00","value":21},{"day":"friday","start":"17:30","end":"19:00","value":19}]`}, "overlap"},
		{"bad zone", "room", "schedule", map[string]string{"temperature_setpoint": "sp"},
			map[string]string{"setpoint_schedule": weekdaySchedule, "schedule_timezone": "Mars/Olympus"}, "not an IANA time zone"},
		{"outdoor unmapped", "thermal_control_loop", "heating_curve", map[string]string{"outlet_temperature_setpoint": "sp"}, nil, "outside_air_temperature"},
		{"curve attribute missing", "thermal_control_loop", "heating_curve", map[string]string{"outlet_temperature_setpoint": "sp", "outside_air_temperature": "unbounded"},
			map[string]string{"heating_curve_slope": "1"}, "is not set"},
		{"curve limits reversed", "thermal_control_loop", "heating_curve", map[string]string{"outlet_temperature_setpoint": "sp", "outside_air_temperature": "unbounded"},
			map[string]string{"heating_curve_slope": "1", "heating_curve_offset": "20", "heating_curve_min": "30", "heating_curve_max": "20"}, "is above"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			cip := e.component(p, tc.component, tc.pins, tc.attrs)
			_, _, err := e.app(p, cip, tc.algorithm, tc.component)
			if !fault.Is(err, fault.Invalid) || !strings.Contains(fault.Message(err), tc.want) {
				t.Fatalf("got %v, want 400 containing %q", err, tc.want)
			}
		})
	}
}

// panicky makes an app's actor fail on its first n writes, then writes
// through the real path.
type panicky struct {
	edge.Writer
	left atomic.Int32
}

func (w *panicky) Write(ctx context.Context, wr edge.Write) (edge.Operation, error) {
	if w.left.Add(-1) >= 0 {
		panic("injected failure")
	}
	return w.Writer.Write(ctx, wr)
}

// An app actor that fails is restarted and writes again; more than five
// failures within a minute stop it with Health check failed.
func TestAppActorFailureRestartsThenHealthCheckFails(t *testing.T) {
	e := newEnv(t)
	p, dev := e.project("crash", "a_sp", "b_sp")
	w := &panicky{Writer: e.sp}
	w.left.Store(2)
	rt := e.runtime(w)
	a := e.component(p, "room", map[string]string{"temperature_setpoint": "a_sp"}, map[string]string{"setpoint_schedule": weekdaySchedule})
	appA, plan, err := e.app(p, a, "schedule", "room")
	if err != nil {
		t.Fatal(err)
	}
	e.start(rt, plan)
	// Monday 07:00 is outside the entries and no default is set: the
	// app clears its slot; then at 08:00 it writes 21.
	e.waitFor("the restarted actor's write", func() bool { return strings.Contains(e.logText(appA.ID), `wrote null to "a_sp"`) })
	if got := strings.Count(e.logText(appA.ID), "restarted after a failure"); got != 2 {
		t.Fatalf("%d restarts logged, want 2:\n%s", got, e.logText(appA.ID))
	}
	e.clock.Set(e.clock.Now().Add(time.Hour))
	e.waitFor("21 at 08:00", func() bool { return is(slot(dev, "a_sp", 13), 21) })
	if s := e.status(p, appA.ID); s != store.StatusRunning {
		t.Fatalf("status %d after restarts", s)
	}

	w.left.Store(100)
	b := e.component(p, "room", map[string]string{"temperature_setpoint": "b_sp"}, map[string]string{"setpoint_schedule": weekdaySchedule})
	appB, plan, err := e.app(p, b, "schedule", "room")
	if err != nil {
		t.Fatal(err)
	}
	e.start(rt, plan)
	e.waitFor("Health check failed", func() bool { return e.status(p, appB.ID) == store.StatusHealthCheckFails })
	if !strings.Contains(e.logText(appB.ID), "more than 5 failures") {
		t.Fatalf("log:\n%s", e.logText(appB.ID))
	}
	// Its target is free again.
	if _, changed, err := e.st.ChangeControlsApp(context.Background(), p, appB.ID, store.AppChange{Code: store.StatusStarting,
		Targets: plan.Targets()}); err != nil || !changed {
		t.Fatalf("the failed app's target stayed reserved: %v", err)
	}
}

// A restart of bdp serve (a new runtime on the same store) resumes the
// apps that were running; one that can no longer run moves to Start
// failed with the reason.
func TestResumeAfterRestart(t *testing.T) {
	e := newEnv(t)
	p, dev := e.project("resume", "a_sp", "b_sp")
	first := e.runtime(nil)
	a := e.component(p, "room", map[string]string{"temperature_setpoint": "a_sp"},
		map[string]string{"setpoint_schedule": weekdaySchedule, "setpoint_schedule_default": "16"})
	b := e.component(p, "room", map[string]string{"temperature_setpoint": "b_sp"},
		map[string]string{"setpoint_schedule": weekdaySchedule, "setpoint_schedule_default": "16"})
	appA, planA, errA := e.app(p, a, "schedule", "room")
	appB, planB, errB := e.app(p, b, "schedule", "room")
	if err := errors.Join(errA, errB); err != nil {
		t.Fatal(err)
	}
	e.start(first, planA)
	e.start(first, planB)
	e.waitFor("both written", func() bool { return is(slot(dev, "a_sp", 13), 16) && is(slot(dev, "b_sp", 13), 16) })
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	first.Shutdown(ctx)
	if e.status(p, appA.ID) != store.StatusRunning {
		t.Fatal("a shutdown changed the desired state")
	}
	// While bdp is down, b's datapoint loses its setpoint bounds (a running
	// app's pins cannot change) and the device loses a's value.
	if _, err := e.st.ClearDatapointSetpoints(ctx, p, "b_sp"); err != nil {
		t.Fatal(err)
	}
	dev.SetSlot("a_sp", 13, nil)

	second := e.runtime(nil)
	e.clock.Set(e.clock.Now().Add(time.Hour)) // 08:00: the resumed app writes 21 at once
	if err := second.Resume(ctx); err != nil {
		t.Fatal(err)
	}
	e.waitFor("a resumed", func() bool { return is(slot(dev, "a_sp", 13), 21) })
	e.waitFor("b refused", func() bool { return e.status(p, appB.ID) == store.StatusStartFailed })
	if !strings.Contains(e.logText(appB.ID), `not resumed after a restart: datapoint "b_sp" has no setpoint bounds`) {
		t.Fatalf("b's log:\n%s", e.logText(appB.ID))
	}
	if second.Running() != 1 {
		t.Fatalf("%d apps running after the resume", second.Running())
	}
}

// An app whose project is deleted while it runs stops its actor at its
// next boundary instead of writing for a project that is gone.
func TestAppStopsWhenItsProjectIsDeleted(t *testing.T) {
	e := newEnv(t)
	rt := e.runtime(nil)
	p, dev := e.project("gone", "sp")
	room := e.component(p, "room", map[string]string{"temperature_setpoint": "sp"}, map[string]string{"setpoint_schedule": weekdaySchedule})
	_, plan, err := e.app(p, room, "schedule", "room")
	if err != nil {
		t.Fatal(err)
	}
	e.start(rt, plan)
	e.waitFor("the first write", func() bool { return len(dev.Requests()) >= 2 }) // app_start, write
	// The timer for the next boundary is armed after the write returns:
	// moved before, the clock would leave it an hour ahead.
	e.waitFor("the next boundary's timer", func() bool { return e.clock.Armed() == 1 })
	if _, err := e.st.DeleteProject(context.Background(), p); err != nil {
		t.Fatal(err)
	}
	e.clock.Set(e.clock.Now().Add(time.Hour))
	e.waitFor("the actor stopped", func() bool { return rt.Running() == 0 })
	if n := e.clock.Armed(); n != 0 {
		t.Fatalf("%d timers still armed", n)
	}
}

// A device that reports it reloaded the app after a crash (its priority
// arrays lost) gets the app's value again at once, not at the next
// boundary; another project's device cannot trigger it.
func TestReloadedAppWritesItsValueAgain(t *testing.T) {
	e := newEnv(t)
	rt := e.runtime(nil)
	e.watchDevices(rt)
	p, dev, app := e.roomSchedule(rt, "reload")
	dev.SetSlot("sp", 13, nil) // the crash: the priority array is gone
	alive := func(project int64) {
		payload := fmt.Sprintf(`{"time":%q,"apps":[{"id":%q,"running":true}],"events":[{"time":%q,"kind":"reload","app_id":%q}]}`,
			time.Now().UTC().Format(time.RFC3339Nano), app.ID, time.Now().UTC().Format(time.RFC3339Nano), app.ID)
		if err := e.broker.Publish(edge.AliveTopic(project), []byte(payload), edge.QoS); err != nil {
			t.Fatal(err)
		}
	}
	alive(p + 1000) // not its project: nothing (delivered first, so it would be counted below)
	alive(p)
	e.waitFor("17 written again", func() bool { return is(slot(dev, "sp", 13), 17) })
	if n := strings.Count(e.logText(app.ID), "written again"); n != 1 {
		t.Fatalf("%d rewrites logged, want 1:\n%s", n, e.logText(app.ID))
	}
}

// A device that comes back without the running app (replaced by a new
// one, or factory reset) gets it back: the platform sees the app missing
// from the heartbeat's list, sends app_start again and writes the app's
// value again, logged; the app stays Running, and a device that has the
// app is not asked again.
func TestDeviceWithoutTheRunningAppGetsItBack(t *testing.T) {
	for _, tc := range []struct {
		name   string
		lose   func(e *env, p int64, dev *edgetest.Device) *edgetest.Device // the device that must get the app back
		before int                                                          // the app_start it had before
	}{
		{"replaced", func(e *env, p int64, dev *edgetest.Device) *edgetest.Device {
			dev.Close()
			e.waitFor("the old device offline", func() bool { return !e.m.Status(p).Online })
			return edgetest.Start(e.t, e.broker.Addr, p, "device-secret", 100*time.Millisecond)
		}, 0},
		{"factory reset", func(_ *env, _ int64, dev *edgetest.Device) *edgetest.Device {
			dev.Reset()
			return dev
		}, 1},
	} {
		for _, broker := range []struct {
			name      string
			mosquitto bool
		}{{"embedded", false}, {"mosquitto", true}} {
			t.Run(tc.name+"/"+broker.name, func(t *testing.T) {
				e := newEnvOn(t, broker.mosquitto)
				rt := e.runtime(nil)
				e.watchDevices(rt)
				p, dev, app := e.roomSchedule(rt, "back")
				time.Sleep(500 * time.Millisecond) // heartbeats that list the app: nothing to do
				if n := appStarts(dev, app.ID); n != 1 {
					t.Fatalf("a device running the app got %d app_start, want 1", n)
				}

				now := tc.lose(e, p, dev)
				e.waitFor("the app registered on the device again", func() bool { return appStarts(now, app.ID) > tc.before })
				e.waitFor("17 written again", func() bool { return is(slot(now, "sp", 13), 17) })
				time.Sleep(500 * time.Millisecond) // heartbeats that list the app again
				if n := appStarts(now, app.ID) - tc.before; n != 1 {
					t.Fatalf("the device got %d app_start after it lost the app, want 1", n)
				}
				if got := e.status(p, app.ID); got != store.StatusRunning {
					t.Fatalf("status %d, want Running", got)
				}
				log := e.logText(app.ID)
				if !strings.Contains(log, "the edge device does not run the app") || strings.Count(log, "app_start: the edge device confirmed") < 2 {
					t.Fatalf("the new start is not logged:\n%s", log)
				}
			})
		}
	}
}

// appStarts counts the app_start requests for app a device received.
func appStarts(d *edgetest.Device, app string) int {
	n := 0
	for _, r := range d.Requests() {
		if r.Operation == edge.OpAppStart && r.App.ID == app {
			n++
		}
	}
	return n
}

func TestCurve(t *testing.T) {
	c := controls.Curve{Slope: 1.2, Offset: 25, Min: 22, Max: 60}
	for _, tc := range []struct{ outdoor, want float64 }{{20, 25}, {0, 49}, {-15, 60}, {25, 22}} {
		if got := c.At(tc.outdoor); got < tc.want-1e-9 || got > tc.want+1e-9 {
			t.Errorf("At(%g) = %g, want %g", tc.outdoor, got, tc.want)
		}
	}
}
