package http

import (
	"fmt"
	"testing"
)

// GET of one app carries its newest log entries as aedifion's ControlsApp
// has them (logs: a list of EntityLog objects: id, created_at, log_level,
// log_message), newest first; the list of apps (ControlsAppShort) does not.
func TestControlsAppCarriesItsLogs(t *testing.T) {
	f := newAppFixture(t, "sp")
	e, admin := f.e, f.c.Admin
	f.bounds(t, "sp")
	id := f.createApp(f.room(t, "sp", allWeek(20)), "schedule", "", nil).want(t, 200).resource(t)["id"].(string)

	logsOf := func() []map[string]any {
		raw, ok := e.do("GET", f.app(id, ""), admin, nil).want(t, 200).JSON["logs"].([]any)
		if !ok {
			t.Fatal("GET of the app has no logs list")
		}
		out := make([]map[string]any, len(raw))
		for i, l := range raw {
			out[i] = l.(map[string]any)
			for _, field := range []string{"id", "created_at", "log_level", "log_message"} {
				if s, _ := out[i][field].(string); s == "" {
					t.Fatalf("log entry without %s: %v", field, out[i])
				}
			}
		}
		return out
	}
	if l := logsOf(); len(l) != 1 || l[0]["log_message"] != "created by "+admin.email || l[0]["log_level"] != "info" {
		t.Fatalf("logs of a new app: %v", l)
	}
	e.do("POST", f.app(id, "/run")+"&run=true", admin, nil).want(t, 200)
	f.waitStatus(t, id, 202)
	e.do("POST", f.app(id, "/run")+"&run=false", admin, nil).want(t, 200)
	l := logsOf()
	if len(l) < 4 || l[len(l)-1]["log_message"] != "created by "+admin.email || l[0]["log_message"] != "app actor stopped" {
		t.Fatalf("logs after a run and a stop, newest first: %v", l)
	}
	for _, item := range e.do("GET", fmt.Sprintf("/v2/controls/apps?project_id=%d", f.pid), admin, nil).want(t, 200).JSON["items"].([]any) {
		if _, ok := item.(map[string]any)["logs"]; ok {
			t.Fatalf("the list carries logs: %v", item)
		}
	}
}
