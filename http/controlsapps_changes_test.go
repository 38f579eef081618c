package http

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/openbdp/bdp/edge"
)

// A running app keeps the pins and attributes it started with, so every
// change to its component is refused with 409 naming the app, and the
// component stays as it was; stopped, the change is taken and the next
// run writes it.
func TestControlsAppComponentChangesRefusedWhileRunning(t *testing.T) {
	f := newAppFixture(t, "office_sp", "other_sp")
	e, admin := f.e, f.c.Admin
	f.bounds(t, "office_sp")
	office := f.room(t, "office_sp", allWeek(21))
	id := f.createApp(office, "schedule", "", nil).want(t, 200).resource(t)["id"].(string)
	e.do("POST", f.app(id, "/run")+"&run=true", admin, nil).want(t, 200)
	f.waitStatus(t, id, 202)
	waitWrites(t, e.writes, "office_sp", 1)
	before := e.do("GET", f.path(fmt.Sprintf("/%d", office)), admin, nil).want(t, 200).Body

	setpoint := f.pins["room"]["temperature_setpoint"]
	cases := []struct {
		name, method, suffix string
		body                 map[string]any
	}{
		{"change the schedule", "PUT", "/attribute", map[string]any{"componentinproject_id": office, "key": "setpoint_schedule", "value": json.RawMessage(allWeek(19))}},
		{"set the default", "POST", "/attribute", map[string]any{"componentinproject_id": office, "key": "setpoint_schedule_default", "value": 17}},
		{"remove the schedule", "DELETE", "/attribute", map[string]any{"componentinproject_id": office, "key": "setpoint_schedule"}},
		{"unmap the setpoint pin", "DELETE", "/pin/datapoint", map[string]any{"componentinproject_id": office, "pin_id": setpoint}},
		{"remap the setpoint pin", "PUT", "/pin/datapoint", map[string]any{"componentinproject_id": office, "pin_id": setpoint, "dataPointID": "other_sp"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			r := e.do(tc.method, f.path(tc.suffix), admin, tc.body).wantError(t, 409)
			if msg := r.JSON["error"].(string); !strings.Contains(msg, id) || !strings.Contains(msg, "run=false") {
				t.Fatalf("409 does not name the running app and how to stop it: %s", msg)
			}
		})
	}
	if after := e.do("GET", f.path(fmt.Sprintf("/%d", office)), admin, nil).want(t, 200).Body; string(after) != string(before) {
		t.Fatalf("refused changes changed the component:\nbefore %s\nafter  %s", before, after)
	}

	// Stopped, the change is taken, and the next run writes it.
	e.do("POST", f.app(id, "/run")+"&run=false", admin, nil).want(t, 200)
	e.do("PUT", f.path("/attribute"), admin, map[string]any{"componentinproject_id": office, "key": "setpoint_schedule",
		"value": json.RawMessage(allWeek(19))}).want(t, 200)
	e.do("POST", f.app(id, "/run")+"&run=true", admin, nil).want(t, 200)
	f.waitStatus(t, id, 202)
	w := waitWrites(t, e.writes, "office_sp", 2)
	if v := w[len(w)-1].Value; v == nil || *v != 19 {
		t.Fatalf("the run after the change wrote %v, want 19", v)
	}
}

// waitWrites waits until the recording writer holds n writes to dp and
// answers them.
func waitWrites(t *testing.T, w *recordingWriter, dp string, n int) []edge.Write {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for len(w.to(dp)) < n {
		if time.Now().After(deadline) {
			t.Fatalf("%d writes to %s, want %d", len(w.to(dp)), dp, n)
		}
		time.Sleep(20 * time.Millisecond)
	}
	return w.to(dp)
}

// The attributes controls apps read are checked when they are written,
// with the rules a run applies: the mistake is named at once, the value
// is not stored.
func TestControlsAttributesCheckedWhenWritten(t *testing.T) {
	f := newAppFixture(t)
	e, admin := f.e, f.c.Admin
	room := f.create(t, admin, "room")
	loop := f.create(t, admin, "thermal_control_loop")
	f.e.do("POST", f.path("/attribute"), admin, map[string]any{"componentinproject_id": loop, "key": "heating_curve_max", "value": 60}).want(t, 200)
	cases := []struct {
		name  string
		cip   int64
		key   string
		value any
		want  string
	}{
		{"overlapping entries", room, "setpoint_schedule", json.RawMessage(`[{"day":"monday","start":"08:00","end":"12:00","value":21},` +
			`{"day":"monday","start":"11:00","end":"13:00","value":20}]`), "overlap"},
		{"a time past 24:00", room, "setpoint_schedule", json.RawMessage(`[{"day":"monday","start":"08:00","end":"25:00","value":21}]`), "HH:MM"},
		{"an unknown day", room, "setpoint_schedule", json.RawMessage(`[{"day":"funday","start":"08:00","end":"12:00","value":21}]`), "monday..sunday"},
		{"an unknown field", room, "setpoint_schedule", json.RawMessage(`[{"day":"monday","begin":"08:00","end":"12:00","value":21}]`), "not a JSON list"},
		{"an unknown time zone", room, "schedule_timezone", "Europe/Atlantis", "not an IANA time zone"},
		{"a curve minimum above its maximum", loop, "heating_curve_min", 70, "above heating_curve_max"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			r := e.do("POST", f.path("/attribute"), admin, map[string]any{"componentinproject_id": tc.cip, "key": tc.key, "value": tc.value}).wantError(t, 400)
			if msg := r.JSON["error"].(string); !strings.Contains(msg, tc.want) || !strings.Contains(msg, tc.key) {
				t.Fatalf("error %q lacks %q or the attribute %s", msg, tc.want, tc.key)
			}
			d := e.do("GET", f.path(fmt.Sprintf("/%d", tc.cip)), admin, nil).want(t, 200).JSON
			for _, a := range d["attributes"].([]any) {
				if a.(map[string]any)["key"] == tc.key {
					t.Fatalf("the refused value was stored: %v", a)
				}
			}
		})
	}
	// Valid values are taken.
	e.do("POST", f.path("/attribute"), admin, map[string]any{"componentinproject_id": room, "key": "schedule_timezone", "value": "Europe/Berlin"}).want(t, 200)
	e.do("POST", f.path("/attribute"), admin, map[string]any{"componentinproject_id": room, "key": "setpoint_schedule", "value": json.RawMessage(allWeek(20))}).want(t, 200)
	e.do("POST", f.path("/attribute"), admin, map[string]any{"componentinproject_id": loop, "key": "heating_curve_min", "value": 25}).want(t, 200)
}
