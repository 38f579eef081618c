package main

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"os/exec"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

func TestEdgeSimFlags(t *testing.T) {
	env := func(string) string { return "from-env" }
	cases := []struct {
		name    string
		args    string
		wantErr string
		check   func(t *testing.T, user, password string, points map[string]*float64)
	}{
		{name: "minimal", args: "-broker tcp://127.0.0.1:1883 -project 4",
			check: func(t *testing.T, user, password string, points map[string]*float64) {
				if user != "edge-4" || password != "from-env" || points != nil {
					t.Errorf("user %q password %q points %v", user, password, points)
				}
			}},
		{name: "datapoints", args: "-broker tcp://h:1 -project 4 -username u -password p -datapoints a,b=20.5,c",
			check: func(t *testing.T, user, password string, points map[string]*float64) {
				if user != "u" || password != "p" || len(points) != 3 || points["a"] != nil || *points["b"] != 20.5 {
					t.Errorf("user %q password %q points %v", user, password, points)
				}
			}},
		{name: "no broker", args: "-project 4", wantErr: "-broker must be tcp://host:port"},
		{name: "bad broker", args: "-broker http://x:1 -project 4", wantErr: "-broker must be tcp://host:port"},
		{name: "no project", args: "-broker tcp://h:1", wantErr: "-project must be a project id"},
		{name: "NaN default", args: "-broker tcp://h:1 -project 1 -datapoints a=NaN", wantErr: `relinquish default of "a" is not a finite number`},
		{name: "twice", args: "-broker tcp://h:1 -project 1 -datapoints a,a", wantErr: `datapoint "a" twice`},
		{name: "empty id", args: "-broker tcp://h:1 -project 1 -datapoints a,,b", wantErr: "empty datapoint id"},
		{name: "negative crash", args: "-broker tcp://h:1 -project 1 -crash-after -1s", wantErr: "-crash-after must not be negative"},
		{name: "stray argument", args: "-broker tcp://h:1 -project 1 extra", wantErr: `unexpected argument "extra"`},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			var stderr strings.Builder
			cfg, _, err := parseEdgeSimFlags(strings.Fields(c.args), env, &stderr)
			if c.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), c.wantErr) {
					t.Fatalf("error %v, want %q", err, c.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			c.check(t, cfg.Username, cfg.Password, cfg.Datapoints)
		})
	}
}

// TestEdgeSimCommandRefusesBadFlags: the binary exits 2 naming the flag.
func TestEdgeSimCommandRefusesBadFlags(t *testing.T) {
	out, err := exec.Command(bdpBinary, "edge-sim", "-broker", "tcp://127.0.0.1:1").CombinedOutput()
	var exit *exec.ExitError
	if !errors.As(err, &exit) || exit.ExitCode() != 2 || !strings.Contains(string(out), "bdp edge-sim: -project must be a project id") {
		t.Fatalf("exit %v, output %s", err, out)
	}
}

// metric reads one unlabelled metric from /metrics.
func metric(t *testing.T, s *server, name string) float64 {
	t.Helper()
	_, body := s.request("GET", "/metrics", nil, "")
	sc := bufio.NewScanner(strings.NewReader(string(body)))
	for sc.Scan() {
		if v, ok := strings.CutPrefix(sc.Text(), name+" "); ok {
			f, err := strconv.ParseFloat(v, 64)
			if err != nil {
				t.Fatal(err)
			}
			return f
		}
	}
	t.Fatalf("no metric %s", name)
	return 0
}

// TestServeEdgeSimulator: with BDP_EDGE_SIMULATOR=1, enabling setpoint
// writing on a project starts a simulated device that logs in to the
// platform's broker with the project's edge credentials and sends its
// heartbeat; the project's edge shows online, an acked setpoint write
// reaches written with the simulator's priority array, and the written
// value lands in the timeseries; disabling it stops the device; SIGTERM
// joins everything.
func TestServeEdgeSimulator(t *testing.T) {
	s := startServe(t, newDataDir(t), "BDP_EDGE_SIMULATOR=1", "BDP_LOG_LEVEL=info")
	pid, admin := vdpProject(t, s)
	if n := metric(t, s, "bdp_mqtt_clients_connected"); n != 0 {
		t.Fatalf("%v MQTT clients before setpoint writing is enabled", n)
	}
	settings := fmt.Sprintf("/operator/projects/%d/settings", pid)
	if status, body := s.request("PUT", settings, operator, `{"setpoint_writing_enabled":true}`); status != 200 {
		t.Fatalf("enable setpoint writing: %d %s", status, body)
	}
	waitMetric := func(name string, ok func(float64) bool, within time.Duration) float64 {
		t.Helper()
		deadline := time.Now().Add(within)
		for {
			v := metric(t, s, name)
			if ok(v) {
				return v
			}
			if time.Now().After(deadline) {
				t.Fatalf("%s = %v after %s\n%s", name, v, within, s.log)
			}
			time.Sleep(100 * time.Millisecond)
		}
	}
	waitMetric("bdp_mqtt_clients_connected", func(v float64) bool { return v == 1 }, 15*time.Second)
	started := regexp.MustCompile(`edge simulator started.*"project_id":` + strconv.FormatInt(pid, 10) + `\b`)
	if !started.MatchString(s.log.String()) {
		t.Errorf("no start logged:\n%s", s.log)
	}
	// Its heartbeats arrive: every 5 s, and one at once on connecting.
	received := waitMetric("bdp_mqtt_messages_received_total", func(v float64) bool { return v >= 1 }, 5*time.Second)
	waitMetric("bdp_mqtt_messages_received_total", func(v float64) bool { return v > received }, 7*time.Second)
	_, body := s.request("GET", "/metrics", nil, "")
	if refused := regexp.MustCompile(`(?m)^bdp_mqtt_(acl|connect)_refused_total\{.*\} [1-9]`).Find(body); refused != nil {
		t.Errorf("the broker refused the simulator: %s", refused)
	}

	writeThroughSimulator(t, s, pid, admin)

	if status, body := s.request("PUT", settings, operator, `{"setpoint_writing_enabled":false}`); status != 200 {
		t.Fatalf("disable setpoint writing: %d %s", status, body)
	}
	waitMetric("bdp_mqtt_clients_connected", func(v float64) bool { return v == 0 }, 15*time.Second)
	if status, body := s.request("PUT", settings, operator, `{"setpoint_writing_enabled":true}`); status != 200 {
		t.Fatalf("enable setpoint writing again: %d %s", status, body)
	}
	waitMetric("bdp_mqtt_clients_connected", func(v float64) bool { return v == 1 }, 15*time.Second)
	if err := s.stop(syscall.SIGTERM); err != nil {
		t.Fatalf("exit after SIGTERM: %v\n%s", err, s.log)
	}
}

func writeThroughSimulator(t *testing.T, s *server, pid int64, admin func(*http.Request)) {
	t.Helper()
	if status, body := s.request("POST", fmt.Sprintf("/v2/project/%d/timeseries", pid), admin,
		`{"room_sp":[{"time":"2026-01-01T00:00:00Z","value":20}]}`); status != 200 {
		t.Fatalf("upload: %d %s", status, body)
	}
	if status, body := s.request("PUT", fmt.Sprintf("/v2/datapoint?project_id=%d&dataPointID=room_sp", pid), admin,
		`{"setpoint_min_value":15,"setpoint_max_value":25}`); status != 200 {
		t.Fatalf("bounds: %d %s", status, body)
	}
	poll := func(what string, within time.Duration, done func() bool) {
		t.Helper()
		deadline := time.Now().Add(within)
		for !done() {
			if time.Now().After(deadline) {
				t.Fatalf("%s not within %s", what, within)
			}
			time.Sleep(200 * time.Millisecond)
		}
	}
	var status int
	var body []byte
	poll("edge online", 30*time.Second, func() bool {
		status, body = s.request("GET", fmt.Sprintf("/v2/project/%d/edge", pid), admin, "")
		return status == 200 && strings.Contains(string(body), `"online":true`)
	})
	status, body = s.request("POST", fmt.Sprintf("/v2/datapoint/setpoint?project_id=%d&dataPointID=room_sp&value=21.5&priority=13&acked=true", pid), admin, "")
	var created struct {
		Resource struct{ Reference string } `json:"resource"`
	}
	if status != 200 || json.Unmarshal(body, &created) != nil || created.Resource.Reference == "" {
		t.Fatalf("setpoint: %d %s", status, body)
	}
	var op struct {
		Status      string
		StateBefore map[string]any `json:"state_before"`
	}
	poll("written", 10*time.Second, func() bool {
		_, body = s.request("GET", "/v2/datapoint/setpoint/"+created.Resource.Reference, admin, "")
		return json.Unmarshal(body, &op) == nil && op.Status == "written"
	})
	if pa, _ := json.Marshal(op.StateBefore["priorityArray"]); !strings.Contains(string(pa), "null") {
		t.Errorf("written without the simulator's priority array: %s", body)
	}
	poll("21.5 in the timeseries", 10*time.Second, func() bool {
		_, body = s.request("GET", fmt.Sprintf("/v2/datapoint/timeseries?project_id=%d&dataPointID=room_sp&start=2026-01-01T00:00:00Z", pid), admin, "")
		return strings.Contains(string(body), "21.5")
	})
}
