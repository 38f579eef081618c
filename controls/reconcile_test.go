package controls_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/openbdp/bdp/edge"
	"github.com/openbdp/bdp/edge/edgetest"
	"github.com/openbdp/bdp/store"
)

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
				unwatch, err := rt.WatchDevices(e.broker)
				if err != nil {
					t.Fatal(err)
				}
				defer unwatch()
				p, dev := e.project("back", "sp")
				room := e.component(p, "room", map[string]string{"temperature_setpoint": "sp"},
					map[string]string{"setpoint_schedule": weekdaySchedule, "setpoint_schedule_default": "17"})
				app, plan, err := e.app(p, room, "schedule", "room")
				if err != nil {
					t.Fatal(err)
				}
				e.start(rt, plan)
				e.waitFor("17 written", func() bool { return is(slot(dev, "sp", 13), 17) })
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

// A device that refuses the app it lost is not asked again at every
// heartbeat: the next try waits ReregisterRefusedAfter.
func TestRefusedReregistrationWaits(t *testing.T) {
	e := newEnv(t)
	rt := e.runtime(nil)
	unwatch, err := rt.WatchDevices(e.broker)
	if err != nil {
		t.Fatal(err)
	}
	defer unwatch()
	p, dev := e.project("refusing", "sp")
	room := e.component(p, "room", map[string]string{"temperature_setpoint": "sp"},
		map[string]string{"setpoint_schedule": weekdaySchedule, "setpoint_schedule_default": "17"})
	app, plan, err := e.app(p, room, "schedule", "room")
	if err != nil {
		t.Fatal(err)
	}
	e.start(rt, plan)
	e.waitFor("17 written", func() bool { return is(slot(dev, "sp", 13), 17) })
	dev.SetMode(edgetest.Refuse)
	dev.Reset()
	e.waitFor("app_start sent again", func() bool { return appStarts(dev, app.ID) == 2 })
	e.waitFor("the refusal logged", func() bool { return strings.Contains(e.logText(app.ID), "app_start: the edge device refused") })
	time.Sleep(time.Second) // ten heartbeats without the app
	if n := appStarts(dev, app.ID); n != 2 {
		t.Fatalf("%d app_start after a refusal within a second, want 2", n)
	}
}

// A write at a boundary while the device was off the network fails; when
// the device is online again (apps and priority arrays kept), the app
// writes its value again at once instead of at its next boundary.
func TestAppWritesAgainWhenTheDeviceIsBack(t *testing.T) {
	e := newEnv(t)
	rt := e.runtime(nil)
	stop := e.sp.WatchBackOnline(rt.DeviceBack)
	defer stop()
	p, dev := e.project("outage", "sp")
	room := e.component(p, "room", map[string]string{"temperature_setpoint": "sp"},
		map[string]string{"setpoint_schedule": weekdaySchedule, "setpoint_schedule_default": "17"})
	app, plan, err := e.app(p, room, "schedule", "room")
	if err != nil {
		t.Fatal(err)
	}
	e.start(rt, plan)
	e.waitFor("17 written", func() bool { return is(slot(dev, "sp", 13), 17) })
	e.waitFor("the timer of 08:00", func() bool { return e.clock.armed() == 1 })
	dev.SetLink(false)
	e.waitFor("the device offline", func() bool { return !e.m.Status(p).Online })
	e.clock.set(e.clock.Now().Add(time.Hour)) // Monday 08:00: 21, while the device is away
	e.waitFor("the write of 21 failed", func() bool {
		logs, _, err := e.st.ControlsAppLogs(context.Background(), app.ID, store.AppLogQuery{Page: 1, PerPage: 1}) // newest
		if err != nil {
			t.Fatal(err)
		}
		return len(logs) == 1 && strings.HasPrefix(logs[0].Message, "wrote 21 ") && logs[0].Write != nil && logs[0].Write.State == edge.StateFailed
	})
	dev.SetLink(true)
	e.waitFor("21 written once the device is back", func() bool { return is(slot(dev, "sp", 13), 21) })
	if !strings.Contains(e.logText(app.ID), "the edge device is online again") {
		t.Fatalf("the new write is not explained in the log:\n%s", e.logText(app.ID))
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
