package main

import (
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"
)

// The README's walk to a first setpoint ("Writing a first setpoint"), as
// a new user takes it: the refusal says how to enable writing; `bdp admin
// project-settings` enables it on the running server; bounds are set on a
// datapoint that has no data yet; an acked setpoint reaches written on
// the (simulated) edge device. Bad flags and an unknown project are clear
// refusals.
func TestSetpointWalkthroughFromTheReadme(t *testing.T) {
	dir := newDataDir(t)
	s := startServe(t, dir, "BDP_EDGE_SIMULATOR=1")
	pid := companyProject(t, s, "walk", "w@walk.test", "walk-pw-12")
	user := basicAuth("w@walk.test", "walk-pw-12")
	project := strconv.FormatInt(pid, 10)
	write := fmt.Sprintf("/v2/datapoint/setpoint?project_id=%d&dataPointID=boiler_sp&value=55&priority=13&acked=true", pid)

	status, body := s.request("POST", write, user, "")
	if hint := "bdp admin project-settings --project " + project + " --setpoint-writing on"; status != 403 || !strings.Contains(string(body), hint) {
		t.Fatalf("the refusal does not say how to enable writing (%q): %d %s", hint, status, body)
	}

	for _, r := range []struct {
		args []string
		code int
		say  string
	}{
		{[]string{"project-settings", "--project", project, "--setpoint-writing", "yes"}, 2, "on or off"},
		{[]string{"project-settings", "--setpoint-writing", "on"}, 2, "--project"},
		{[]string{"project-settings", "--project", project, "--setpoint-max-priority", "17"}, 1, "setpoint_max_priority"},
		{[]string{"project-settings", "--project", "999999", "--setpoint-writing", "on"}, 1, "not found"},
	} {
		out, errOut, code := admin(t, dir, "", r.args...)
		if code != r.code || !strings.Contains(errOut, r.say) {
			t.Errorf("bdp admin %v: exit %d, want %d saying %q:\n%s%s", r.args, code, r.code, r.say, out, errOut)
		}
	}
	if status, body := s.request("POST", write, user, ""); status != 403 {
		t.Fatalf("a refused command enabled writing: %d %s", status, body)
	}

	out, errOut, code := admin(t, dir, "", "project-settings", "--project", project, "--setpoint-writing", "on")
	if code != 0 || !strings.Contains(out, "setpoint_writing_enabled: true") || !strings.Contains(out, "setpoint_max_priority: 8") {
		t.Fatalf("enable writing: exit %d\n%s%s", code, out, errOut)
	}
	// boiler_sp has no data yet: its bounds create it.
	if status, body := s.request("PUT", fmt.Sprintf("/v2/datapoint?project_id=%d&dataPointID=boiler_sp", pid), user,
		`{"setpoint_min_value":20,"setpoint_max_value":70}`); status != 200 {
		t.Fatalf("bounds: %d %s", status, body)
	}
	poll := func(what string, within time.Duration, done func() bool) {
		t.Helper()
		for deadline := time.Now().Add(within); !done(); time.Sleep(200 * time.Millisecond) {
			if time.Now().After(deadline) {
				t.Fatalf("%s not within %s:\n%s", what, within, s.log)
			}
		}
	}
	poll("the simulated edge device online", 30*time.Second, func() bool {
		status, body = s.request("GET", fmt.Sprintf("/v2/project/%d/edge", pid), user, "")
		return status == 200 && strings.Contains(string(body), `"online":true`)
	})
	status, body = s.request("POST", write, user, "")
	var created struct {
		Resource struct{ Reference string } `json:"resource"`
	}
	if status != 200 || json.Unmarshal(body, &created) != nil || created.Resource.Reference == "" {
		t.Fatalf("setpoint: %d %s", status, body)
	}
	poll("written", 15*time.Second, func() bool {
		_, body = s.request("GET", "/v2/datapoint/setpoint/"+created.Resource.Reference, user, "")
		return strings.Contains(string(body), `"status":"written"`)
	})
}
