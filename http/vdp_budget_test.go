package http

import (
	"context"
	"encoding/json"
	"fmt"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/openbdp/bdp/actors"
	"github.com/openbdp/bdp/pipeline/window"
	"github.com/openbdp/bdp/store"
)

// countPins is a one-pin formula configuration with a count window of n.
func countPins(n int) map[string]any {
	return map[string]any{"pins": map[string]any{"P1": map[string]any{"dataPointID": "src", "data_range": map[string]any{"count": n}}},
		"parameters": map[string]any{"formula": "P1"}}
}

// metricValue reads one unlabelled sample of /metrics.
func metricValue(t *testing.T, e *testEnv, name string) string {
	t.Helper()
	body := string(e.do("GET", "/metrics", nil, nil).want(t, 200).Body)
	m := regexp.MustCompile(`(?m)^` + name + ` (\S+)$`).FindStringSubmatch(body)
	if m == nil {
		t.Fatalf("/metrics has no %s", name)
	}
	return m[1]
}

// The window budget, as a user meets it: a configuration over the
// per-datapoint budget is refused at create and at run with a 400 naming
// the estimate and the limit; a start over the node's budget is refused
// with a 503; a refusal changes nothing; /metrics shows what the running
// ones hold and the limit.
func TestVDPWindowBudget(t *testing.T) {
	per := window.EstimateBytes(window.Range{Count: 1000}, window.Max, time.Second)
	big := window.EstimateBytes(window.Range{Count: 2000}, window.Max, time.Second)
	node := 2*per + per/2
	e := newTestEnvEngine(t, func(c *actors.EngineConfig) {
		c.Budget = actors.Budget{PerDatapoint: per, Node: node}
	})
	c := e.newCompany()
	pid, _ := e.newProject(c.Admin)
	status := func(id string) (string, int) {
		r := e.do("GET", vdpPath(pid, "", "dataPointID", id), c.Admin, nil).want(t, 200)
		return r.JSON["status"].(string), len(r.JSON["logs"].([]any))
	}
	wantBudgetError := func(r resp, code int, names ...string) {
		t.Helper()
		r.wantError(t, code)
		msg := r.JSON["error"].(string)
		for _, n := range names {
			if !strings.Contains(msg, n) {
				t.Fatalf("error %q does not name %s", msg, n)
			}
		}
	}

	// Create: over the per-datapoint budget, nothing is stored.
	r := e.do("POST", vdpPath(pid, "", "dataPointID", "big", "type", "formula"), c.Admin, countPins(2000))
	wantBudgetError(r, 400, fmt.Sprintf("(%d bytes)", big), fmt.Sprintf("(%d bytes)", per), "BDP_WINDOW_BUDGET_DATAPOINT")
	e.do("GET", vdpPath(pid, "", "dataPointID", "big"), c.Admin, nil).wantError(t, 404)

	// Run: a configuration stored before the budget was lowered.
	cfg, err := actors.ParseConfig(actors.TypeFormula, toJSON(t, countPins(2000)))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := e.store.CreateVDP(context.Background(), store.VDP{ProjectID: pid, DataPointID: "old", Type: actors.TypeFormula, Config: toJSON(t, cfg)},
		store.StatusChange{Code: store.StatusReadyToStart, Message: "stored under a larger budget"}); err != nil {
		t.Fatal(err)
	}
	_, logsBefore := status("old")
	r = e.do("POST", vdpPath(pid, "/run", "dataPointID", "old", "run", "true"), c.Admin, nil)
	wantBudgetError(r, 400, fmt.Sprintf("(%d bytes)", big), fmt.Sprintf("(%d bytes)", per), "BDP_WINDOW_BUDGET_DATAPOINT")
	if st, logs := status("old"); st != "Ready to start" || logs != logsBefore {
		t.Fatalf("a refused start changed it: %s, %d logs (was %d)", st, logs, logsBefore)
	}

	// The node: two fit, the third waits until one stops.
	for _, id := range []string{"a", "b", "c"} {
		e.do("POST", vdpPath(pid, "", "dataPointID", id, "type", "formula"), c.Admin, countPins(1000)).want(t, 200)
	}
	for _, id := range []string{"a", "b"} {
		e.do("POST", vdpPath(pid, "/run", "dataPointID", id, "run", "true"), c.Admin, nil).want(t, 200)
	}
	if got := metricValue(t, e, "bdp_window_estimated_bytes"); got != fmt.Sprint(2*per) {
		t.Fatalf("bdp_window_estimated_bytes %s, want %d", got, 2*per)
	}
	if got := metricValue(t, e, "bdp_window_budget_bytes"); got != fmt.Sprint(node) {
		t.Fatalf("bdp_window_budget_bytes %s, want %d", got, node)
	}
	_, logsBefore = status("c")
	r = e.do("POST", vdpPath(pid, "/run", "dataPointID", "c", "run", "true"), c.Admin, nil)
	wantBudgetError(r, 503, fmt.Sprintf("(%d bytes)", 2*per), fmt.Sprintf("(%d bytes)", node), fmt.Sprintf("(%d bytes)", per), "BDP_WINDOW_BUDGET_NODE")
	if st, logs := status("c"); st != "Ready to start" || logs != logsBefore {
		t.Fatalf("a refused start changed it: %s, %d logs (was %d)", st, logs, logsBefore)
	}
	e.do("POST", vdpPath(pid, "/run", "dataPointID", "a", "run", "false"), c.Admin, nil).want(t, 200)
	if r := e.do("POST", vdpPath(pid, "/run", "dataPointID", "c", "run", "true"), c.Admin, nil).want(t, 200); r.JSON["status"] != "Running" {
		t.Fatalf("start once a share was given back: %s", r.Body)
	}
	if got := metricValue(t, e, "bdp_window_estimated_bytes"); got != fmt.Sprint(2*per) {
		t.Fatalf("bdp_window_estimated_bytes %s after a stop and a start, want %d", got, 2*per)
	}
}

func toJSON(t *testing.T, v any) []byte {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// Deleting a project stops its running virtual datapoints, so their
// windows' share of the node budget comes back at once.
func TestProjectDeleteGivesBackTheWindowBudget(t *testing.T) {
	e := newTestEnvEngine(t, func(c *actors.EngineConfig) { c.Budget = actors.Budget{Node: 1 << 20} })
	c := e.newCompany()
	pid, _ := e.newProject(c.Admin)
	e.do("POST", vdpPath(pid, "", "dataPointID", "out", "type", "formula"), c.Admin, countPins(1000)).want(t, 200)
	e.do("POST", vdpPath(pid, "/run", "dataPointID", "out", "run", "true"), c.Admin, nil).want(t, 200)
	want := window.EstimateBytes(window.Range{Count: 1000}, window.Max, time.Second)
	if got := metricValue(t, e, "bdp_window_estimated_bytes"); got != fmt.Sprint(want) {
		t.Fatalf("running: bdp_window_estimated_bytes %s, want %d", got, want)
	}
	e.do("DELETE", "/v2/project/"+itoa(pid), c.Admin, nil).want(t, 200)
	if got := metricValue(t, e, "bdp_window_estimated_bytes"); got != "0" {
		t.Fatalf("after the project's deletion: bdp_window_estimated_bytes %s, want 0", got)
	}
}
