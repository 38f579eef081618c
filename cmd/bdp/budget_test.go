package main

import (
	"fmt"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/openbdp/bdp/pipeline/window"
)

// The window budget in the real binary, configured by BDP_WINDOW_*: a
// configuration over the per-datapoint budget is refused (400), a start
// over the node's (503), /metrics shows what the running ones hold, and a
// restart with a smaller node budget resumes only what fits; the other
// ends Start failed with the reason.
func TestWindowBudgetInTheBinary(t *testing.T) {
	dir := newDataDir(t)
	s := startServe(t, dir, "BDP_WINDOW_BUDGET_DATAPOINT=64KiB", "BDP_WINDOW_BUDGET_NODE=96KiB")
	status, body := s.request("POST", "/operator/companies", operator,
		`{"name":"budget","admin":{"firstName":"B","lastName":"U","email":"b@budget.test","password":"budget-pw-1"}}`)
	if status != 201 {
		t.Fatalf("company: %d %s", status, body)
	}
	admin := basicAuth("b@budget.test", "budget-pw-1")
	if status, body = s.request("POST", "/v2/company/project", admin, `{"name":"p"}`); status != 200 {
		t.Fatalf("project: %d %s", status, body)
	}
	pid := regexp.MustCompile(`"project":\{"id":(\d+)`).FindSubmatch(body)
	if pid == nil {
		t.Fatalf("no project id in %s", body)
	}
	vdp := fmt.Sprintf("/v2/project/%s/virtual_datapoint", pid[1])
	create := func(id string, count int) (int, string) {
		status, body := s.request("POST", vdp+"?type=formula&dataPointID="+id, admin,
			fmt.Sprintf(`{"pins":{"P1":{"dataPointID":"temp","data_range":{"count":%d}}},"parameters":{"formula":"P1"}}`, count))
		return status, string(body)
	}
	run := func(s *server, id string) (int, string) {
		status, body := s.request("POST", vdp+"/run?run=true&dataPointID="+id, admin, "")
		return status, string(body)
	}
	one := window.EstimateBytes(window.Range{Count: 1000}, window.Max, time.Second)
	if status, body := create("big", 2000); status != 400 || !strings.Contains(body, "(65536 bytes)") || !strings.Contains(body, "BDP_WINDOW_BUDGET_DATAPOINT") {
		t.Fatalf("create over the per-datapoint budget: %d %s", status, body)
	}
	for _, id := range []string{"a", "b", "c"} {
		if status, body := create(id, 1000); status != 200 {
			t.Fatalf("create %s: %d %s", id, status, body)
		}
	}
	for _, id := range []string{"a", "b"} {
		if status, body := run(s, id); status != 200 || !strings.Contains(body, `"status":"Running"`) {
			t.Fatalf("run %s: %d %s", id, status, body)
		}
	}
	if status, body := run(s, "c"); status != 503 || !strings.Contains(body, "(98304 bytes)") || !strings.Contains(body, "BDP_WINDOW_BUDGET_NODE") {
		t.Fatalf("run over the node budget: %d %s", status, body)
	}
	if got, limit := gauge(t, s, "bdp_window_estimated_bytes"), gauge(t, s, "bdp_window_budget_bytes"); got != fmt.Sprint(2*one) || limit != "98304" {
		t.Fatalf("/metrics: bdp_window_estimated_bytes %s, bdp_window_budget_bytes %s; want %d and 98304", got, limit, 2*one)
	}
	if err := s.stop(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}

	// Room for one only: the other resumes to Start failed, saying why.
	s = startServe(t, dir, "BDP_WINDOW_BUDGET_DATAPOINT=64KiB", "BDP_WINDOW_BUDGET_NODE=64KiB")
	var statuses []string
	for deadline := time.Now().Add(30 * time.Second); time.Now().Before(deadline); time.Sleep(100 * time.Millisecond) {
		statuses = statuses[:0]
		for _, id := range []string{"a", "b"} {
			_, body := s.request("GET", vdp+"?dataPointID="+id, admin, "")
			statuses = append(statuses, regexp.MustCompile(`"status":"([^"]*)"`).FindStringSubmatch(string(body))[1])
			if strings.Contains(string(body), "Start failed") && !strings.Contains(string(body), "BDP_WINDOW_BUDGET_NODE") {
				t.Fatalf("Start failed without the reason: %s", body)
			}
		}
		if !strings.Contains(strings.Join(statuses, ","), "Starting") {
			break
		}
	}
	if got := strings.Join(statuses, ","); got != "Running,Start failed" && got != "Start failed,Running" {
		t.Fatalf("after a restart with room for one: %s", got)
	}
	if got := gauge(t, s, "bdp_window_estimated_bytes"); got != fmt.Sprint(one) {
		t.Fatalf("bdp_window_estimated_bytes after the restart: %s, want %d", got, one)
	}
}

// gauge reads an unlabelled sample of /metrics.
func gauge(t *testing.T, s *server, name string) string {
	t.Helper()
	_, body := s.request("GET", "/metrics", nil, "")
	m := regexp.MustCompile(`(?m)^` + name + ` (\S+)$`).FindSubmatch(body)
	if m == nil {
		t.Fatalf("/metrics has no %s", name)
	}
	return string(m[1])
}
