package sim

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/openbdp/bdp/edge"
)

// The device's rules without MQTT, with a clock the test moves.

var t0 = time.Date(2026, 11, 24, 11, 0, 0, 0, time.UTC)

func app(id string, timeout int) *edge.App {
	return &edge.App{ID: id, AliveTimeout: timeout, Writes: []edge.AppWrite{{DataPointID: "sp", Priority: 10, ResetValue: num(18)}}}
}

func running(d *device) string {
	var out []string
	for _, a := range d.alive(t0).Apps {
		out = append(out, fmt.Sprintf("%s=%v", a.ID, a.Running))
	}
	return strings.Join(out, " ")
}

func TestDeviceAliveTimeouts(t *testing.T) {
	d := newDevice(map[string]*float64{"sp": num(20)}, t0)
	d.handle(t0, edge.Request{Operation: edge.OpAppStart, App: app("short", 10)})
	d.handle(t0, edge.Request{Operation: edge.OpAppStart, App: app("never", 0)})
	d.handle(t0, edge.Request{Operation: edge.OpAppStart, App: app("long", 60)})

	steps := []struct {
		at          time.Duration
		wantRunning string
		wantEvents  string
	}{
		{10 * time.Second, "long=true never=true short=true", ""}, // not longer than the time-out yet
		{11 * time.Second, "long=true never=true short=false", "reset:short"},
		{30 * time.Second, "long=true never=true short=false", ""}, // reset once
		{61 * time.Second, "long=false never=true short=false", "reset:long"},
		{24 * time.Hour, "long=false never=true short=false", ""}, // 0: never
	}
	for _, s := range steps {
		d.expire(t0.Add(s.at))
		var events []string
		for _, e := range d.events {
			events = append(events, e.Kind+":"+e.AppID)
		}
		d.takeEvents(len(d.events))
		if got := running(d); got != s.wantRunning || strings.Join(events, ",") != s.wantEvents {
			t.Errorf("at %s: running %s events %v, want %s and %s", s.at, got, events, s.wantRunning, s.wantEvents)
		}
	}
	if pv := d.points["sp"].present(); pv == nil || *pv != 18 {
		t.Errorf("present value %s after the resets, want the reset value 18", show(pv))
	}
	// The platform is back: both apps restart.
	d.handle(t0.Add(25*time.Hour), edge.Request{Operation: edge.OpPing})
	if got := running(d); got != "long=true never=true short=true" || len(d.events) != 2 || d.events[0].Kind != edge.EventRecovered {
		t.Errorf("after the platform came back: %s %+v", got, d.events)
	}
}

func TestDeviceCrashKeepsDefinitionsAndLog(t *testing.T) {
	d := newDevice(map[string]*float64{"sp": num(20)}, t0)
	d.handle(t0, edge.Request{Operation: edge.OpAppStart, App: app("a", 10)})
	d.handle(t0, edge.Request{Operation: edge.OpAppStart, App: app("b", 10)})
	d.handle(t0, edge.Request{Operation: edge.OpAppStop, App: &edge.App{ID: "b"}})
	d.handle(t0, edge.Request{Operation: edge.OpWrite, DataPointID: "sp", Value: num(23), Priority: 10})
	d.crash(t0.Add(time.Second), "test")
	if got := running(d); got != "a=false b=false" {
		t.Errorf("after the crash: %s", got)
	}
	if pv := d.points["sp"].present(); pv == nil || *pv != 20 {
		t.Errorf("present value %s after the crash, want the relinquish default", show(pv))
	}
	d.reload(t0.Add(11 * time.Second))
	if got := running(d); got != "a=true b=false" {
		t.Errorf("after the reload: %s", got)
	}
	if len(d.events) != 2 || d.events[0].Kind != edge.EventCrash || d.events[1].Kind != edge.EventReload || d.events[1].AppID != "a" {
		t.Errorf("events %+v", d.events)
	}
	// The boot counts as hearing from the platform: no reset right away.
	d.expire(t0.Add(5 * time.Second))
	if got := running(d); got != "a=true b=false" {
		t.Errorf("reset right after the reload: %s", got)
	}
}

func TestDeviceLimits(t *testing.T) {
	d := newDevice(nil, t0)
	for i := range edge.MaxEvents + 5 {
		d.logEvent(t0, edge.EventReset, fmt.Sprint(i), "")
	}
	if len(d.events) != edge.MaxEvents || d.events[0].AppID != "5" {
		t.Errorf("%d events, first %q: want the newest %d", len(d.events), d.events[0].AppID, edge.MaxEvents)
	}
	if err := d.alive(t0).Validate(); err != nil {
		t.Errorf("a full log does not make a valid heartbeat: %v", err)
	}
	for i := range maxAutoPoints {
		if r, _ := d.handle(t0, edge.Request{Operation: edge.OpRead, DataPointID: fmt.Sprint("p", i)}); r.Status != edge.StatusOK {
			t.Fatalf("read %d: %+v", i, r)
		}
	}
	if r, _ := d.handle(t0, edge.Request{Operation: edge.OpRead, DataPointID: "one-more"}); r.Status != edge.StatusError {
		t.Errorf("datapoint beyond the limit: %+v", r)
	}
	for i := range edge.MaxApps {
		if r, _ := d.handle(t0, edge.Request{Operation: edge.OpAppStart, App: &edge.App{ID: fmt.Sprint(i)}}); r.Status != edge.StatusOK {
			t.Fatalf("app %d: %+v", i, r)
		}
	}
	if r, _ := d.handle(t0, edge.Request{Operation: edge.OpAppStart, App: &edge.App{ID: "one-more"}}); r.Status != edge.StatusError {
		t.Errorf("app beyond the limit: %+v", r)
	}
	if r, _ := d.handle(t0, edge.Request{Operation: edge.OpAppConfig, App: &edge.App{ID: "unknown"}}); r.Status != edge.StatusError ||
		!strings.Contains(r.Error, "app_start defines it") {
		t.Errorf("app_config of an unknown app: %+v", r)
	}
}
