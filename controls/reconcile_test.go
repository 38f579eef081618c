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

// A device that refuses the app it lost is not asked again at every
// heartbeat: the next try waits ReregisterRefusedAfter.
func TestRefusedReregistrationWaits(t *testing.T) {
	e := newEnv(t)
	rt := e.runtime(nil)
	e.watchDevices(rt)
	_, dev, app := e.roomSchedule(rt, "refusing")
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
	p, dev, app := e.roomSchedule(rt, "outage")
	e.waitFor("the timer of 08:00", func() bool { return e.clock.Armed() == 1 })
	dev.SetLink(false)
	e.waitFor("the device offline", func() bool { return !e.m.Status(p).Online })
	e.clock.Set(e.clock.Now().Add(time.Hour)) // Monday 08:00: 21, while the device is away
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
