package main

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestServeControlsAppResumesAfterRestart: with the simulated edge device
// of BDP_EDGE_SIMULATOR=1, a schedule app on a mapped room writes its
// value into the device's priority array (priority 13), its log shows
// the write as written by the device; after SIGTERM and a new bdp serve
// on the same data directory (a fresh simulator, its priority array
// empty) the app is Running again and writes its value again.
func TestServeControlsAppResumesAfterRestart(t *testing.T) {
	dir := newDataDir(t)
	s := startServe(t, dir, "BDP_EDGE_SIMULATOR=1")
	pid, admin := vdpProject(t, s)
	must := func(status int, body []byte, want int, what string) []byte {
		t.Helper()
		if status != want {
			t.Fatalf("%s: %d %s", what, status, body)
		}
		return body
	}
	st, b := s.request("PUT", fmt.Sprintf("/operator/projects/%d/settings", pid), operator, `{"setpoint_writing_enabled":true}`)
	must(st, b, 200, "enable setpoint writing")
	st, b = s.request("POST", fmt.Sprintf("/v2/project/%d/timeseries", pid), admin, `{"room_sp":[{"time":"2026-01-01T00:00:00Z","value":20}]}`)
	must(st, b, 200, "upload")
	st, b = s.request("PUT", fmt.Sprintf("/v2/datapoint?project_id=%d&dataPointID=room_sp", pid), admin, `{"setpoint_min_value":15,"setpoint_max_value":25}`)
	must(st, b, 200, "bounds")

	// A room with its setpoint pin mapped and a schedule of 21.5 all week.
	var comps []struct {
		ID             int64  `json:"id"`
		AlphanumericID string `json:"alphanumeric_id"`
	}
	st, b = s.request("GET", "/v2/components", admin, "")
	if json.Unmarshal(must(st, b, 200, "components"), &comps) != nil {
		t.Fatalf("components: %s", b)
	}
	var roomID, pinID int64
	for _, c := range comps {
		if c.AlphanumericID == "room" {
			roomID = c.ID
		}
	}
	var pins []struct {
		ID             int64  `json:"id"`
		AlphanumericID string `json:"alphanumeric_id"`
	}
	st, b = s.request("GET", fmt.Sprintf("/v2/component/%d/pins", roomID), admin, "")
	if json.Unmarshal(must(st, b, 200, "pins"), &pins) != nil {
		t.Fatalf("pins: %s", b)
	}
	for _, p := range pins {
		if p.AlphanumericID == "temperature_setpoint" {
			pinID = p.ID
		}
	}
	var cip struct {
		Resource struct{ ID int64 } `json:"resource"`
	}
	st, b = s.request("POST", fmt.Sprintf("/v2/project/%d/componentInProject", pid), admin, fmt.Sprintf(`{"component_id":%d,"nameEN":"Office"}`, roomID))
	if json.Unmarshal(must(st, b, 200, "map the room"), &cip) != nil {
		t.Fatalf("room: %s", b)
	}
	st, b = s.request("POST", fmt.Sprintf("/v2/project/%d/componentInProject/pin/datapoint", pid), admin,
		fmt.Sprintf(`{"componentinproject_id":%d,"pin_id":%d,"dataPointID":"room_sp"}`, cip.Resource.ID, pinID))
	must(st, b, 200, "map the pin")
	var entries []string
	for _, d := range []string{"monday", "tuesday", "wednesday", "thursday", "friday", "saturday", "sunday"} {
		entries = append(entries, fmt.Sprintf(`{"day":%q,"start":"00:00","end":"24:00","value":21.5}`, d))
	}
	attr, _ := json.Marshal(map[string]any{"componentinproject_id": cip.Resource.ID, "key": "setpoint_schedule",
		"value": json.RawMessage("[" + strings.Join(entries, ",") + "]")})
	st, b = s.request("POST", fmt.Sprintf("/v2/project/%d/componentInProject/attribute", pid), admin, string(attr))
	must(st, b, 200, "schedule attribute")

	poll := func(s *server, what string, within time.Duration, done func() bool) {
		t.Helper()
		deadline := time.Now().Add(within)
		for !done() {
			if time.Now().After(deadline) {
				t.Fatalf("%s not within %s\n%s", what, within, s.log)
			}
			time.Sleep(200 * time.Millisecond)
		}
	}
	online := func(s *server) {
		poll(s, "edge online", 30*time.Second, func() bool {
			st, b := s.request("GET", fmt.Sprintf("/v2/project/%d/edge", pid), admin, "")
			return st == 200 && strings.Contains(string(b), `"online":true`)
		})
	}
	online(s)
	var app struct {
		Resource struct{ ID string } `json:"resource"`
	}
	st, b = s.request("POST", fmt.Sprintf("/v2/controls/app?project_id=%d&componentinproject_id=%d&algorithm=schedule&name=office", pid, cip.Resource.ID), admin, "")
	if json.Unmarshal(must(st, b, 200, "create the app"), &app) != nil {
		t.Fatalf("app: %s", b)
	}
	appPath := fmt.Sprintf("/v2/controls/app/%s", app.Resource.ID)
	st, b = s.request("POST", appPath+fmt.Sprintf("/run?project_id=%d&run=true", pid), admin, "")
	if !strings.Contains(string(must(st, b, 200, "run")), `"affected":true`) {
		t.Fatalf("run: %s", b)
	}
	written := func(s *server, admin func(*http.Request)) {
		t.Helper()
		poll(s, "Running", 10*time.Second, func() bool {
			_, b := s.request("GET", appPath+fmt.Sprintf("?project_id=%d", pid), admin, "")
			return strings.Contains(string(b), `"code":202`)
		})
		poll(s, "21.5 at priority 13 in the simulator", 20*time.Second, func() bool {
			st, b := s.request("POST", fmt.Sprintf("/v2/datapoint/setpoint?project_id=%d&dataPointID=room_sp&value=22&priority=13&dryrun=true", pid), admin, "")
			var r struct {
				Resource struct {
					PriorityArray []*float64 `json:"priority_array"`
				} `json:"resource"`
			}
			return st == 200 && json.Unmarshal(b, &r) == nil && len(r.Resource.PriorityArray) == 17 &&
				r.Resource.PriorityArray[12] != nil && *r.Resource.PriorityArray[12] == 21.5
		})
	}
	written(s, admin)
	if v := metric(t, s, "bdp_controls_apps_running"); v != 1 {
		t.Fatalf("bdp_controls_apps_running %v", v)
	}
	st, b = s.request("GET", appPath+fmt.Sprintf("/logs?project_id=%d&sort_order=asc", pid), admin, "")
	logs := string(must(st, b, 200, "logs"))
	for _, want := range []string{"app_start: the edge device confirmed", `wrote 21.5 to \"room_sp\" at priority 13`} {
		if !strings.Contains(logs, want) {
			t.Fatalf("logs lack %s: %s", want, logs)
		}
	}
	poll(s, "the write reported written", 10*time.Second, func() bool {
		_, b := s.request("GET", appPath+fmt.Sprintf("/logs?project_id=%d", pid), admin, "")
		return strings.Contains(string(b), `"state":"written"`)
	})

	if err := s.stop(syscall.SIGTERM); err != nil {
		t.Fatalf("exit after SIGTERM: %v\n%s", err, s.log)
	}
	s = startServe(t, dir, "BDP_EDGE_SIMULATOR=1")
	online(s)
	written(s, admin)
	st, b = s.request("GET", appPath+fmt.Sprintf("/logs?project_id=%d", pid), admin, "")
	if !strings.Contains(string(must(st, b, 200, "logs after the restart")), "resumed after a restart of bdp serve") {
		t.Fatalf("no resume logged: %s", b)
	}
	// Stopped, it may be deleted; the answer shows Deleting.
	st, b = s.request("POST", appPath+fmt.Sprintf("/run?project_id=%d&run=false", pid), admin, "")
	must(st, b, 200, "stop")
	if v := metric(t, s, "bdp_controls_apps_running"); v != 0 {
		t.Fatalf("bdp_controls_apps_running %v after the stop", v)
	}
	st, b = s.request("DELETE", appPath+fmt.Sprintf("?project_id=%d", pid), admin, "")
	if !strings.Contains(string(must(st, b, 200, "delete")), `"code":500`) {
		t.Fatalf("delete: %s", b)
	}
	if err := s.stop(syscall.SIGTERM); err != nil {
		t.Fatalf("exit after SIGTERM: %v\n%s", err, s.log)
	}
}
