package main

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"os"
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
	if got := dryrunSlots(t, s, pid, admin); got != "[- - - - - - - - - - - - 21.5 - - - -]" {
		t.Fatalf("before the crash: %s", got)
	}
	// SIGUSR1 crashes the simulators: back after the boot delay, the
	// priority array is lost.
	if err := s.cmd.Process.Signal(syscall.SIGUSR1); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(20 * time.Second)
	for strings.Count(s.log.String(), "edge-sim: connected") < 2 {
		if time.Now().After(deadline) {
			t.Fatalf("simulator not back after SIGUSR1:\n%s", s.log)
		}
		time.Sleep(100 * time.Millisecond)
	}
	waitEdgeOnline(t, s, pid, admin)
	if got := dryrunSlots(t, s, pid, admin); got != "[- - - - - - - - - - - - - - - - -]" {
		t.Errorf("after the crash: %s, want the priority array lost", got)
	}

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

// TestEdgeSimCommand: the standalone `bdp edge-sim` with the credentials
// of the operator route serves the platform's setpoint writes; SIGUSR1
// crashes it (the priority array is lost, as a dry run shows); SIGTERM
// stops it with exit status 0.
func TestEdgeSimCommand(t *testing.T) {
	s := startServe(t, newDataDir(t))
	pid, admin := vdpProject(t, s)
	if status, body := s.request("PUT", fmt.Sprintf("/operator/projects/%d/settings", pid), operator, `{"setpoint_writing_enabled":true}`); status != 200 {
		t.Fatalf("enable setpoint writing: %d %s", status, body)
	}
	status, body := s.request("POST", fmt.Sprintf("/operator/projects/%d/edge", pid), operator, "")
	var creds struct {
		Resource struct{ Username, Password string } `json:"resource"`
	}
	if status != 201 || json.Unmarshal(body, &creds) != nil {
		t.Fatalf("edge credentials: %d %s", status, body)
	}
	simLog := &syncBuffer{}
	cmd := exec.Command(bdpBinary, "edge-sim", "-broker", mqttAddr(t, s), "-project", strconv.FormatInt(pid, 10),
		"-username", creds.Resource.Username, "-datapoints", "room_sp=20")
	cmd.Env = append(os.Environ(), "BDP_EDGE_SIM_PASSWORD="+creds.Resource.Password)
	cmd.Stdout, cmd.Stderr = simLog, simLog
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	t.Cleanup(func() {
		if cmd.ProcessState == nil {
			_ = cmd.Process.Kill()
			<-exited
		}
	})
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("bdp edge-sim:\n%s", simLog)
		}
	})
	writeThroughSimulator(t, s, pid, admin)

	dryrun := func() string { return dryrunSlots(t, s, pid, admin) }
	if got := dryrun(); got != "[- - - - - - - - - - - - 21.5 - - - 20]" {
		t.Fatalf("before the crash: %s", got)
	}
	if err := cmd.Process.Signal(syscall.SIGUSR1); err != nil {
		t.Fatal(err)
	}
	// Back on the network after the boot delay (requests sent before are
	// lost: the device subscribes with a clean session); the write is gone.
	deadline := time.Now().Add(20 * time.Second)
	for strings.Count(simLog.String(), "edge-sim: connected") < 2 {
		if time.Now().After(deadline) {
			t.Fatalf("not connected again after the crash:\n%s", simLog)
		}
		time.Sleep(100 * time.Millisecond)
	}
	waitEdgeOnline(t, s, pid, admin)
	if got := dryrun(); got != "[- - - - - - - - - - - - - - - - 20]" {
		t.Errorf("after the crash: %s, want the priority array lost", got)
	}
	if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-exited:
		if err != nil {
			t.Errorf("bdp edge-sim after SIGTERM: %v\n%s", err, simLog)
		}
	case <-time.After(15 * time.Second):
		t.Fatalf("bdp edge-sim did not stop after SIGTERM\n%s", simLog)
	}
}

func showSlots(a []*float64) string {
	out := make([]string, len(a))
	for i, v := range a {
		out[i] = "-"
		if v != nil {
			out[i] = strconv.FormatFloat(*v, 'g', -1, 64)
		}
	}
	return "[" + strings.Join(out, " ") + "]"
}

// waitEdgeOnline waits for the project's edge device to be online: after
// a crash its connection's end made it offline at once, and a dry run
// needs its first heartbeat after it connected again.
func waitEdgeOnline(t *testing.T, s *server, pid int64, admin func(*http.Request)) {
	t.Helper()
	var body []byte
	for deadline := time.Now().Add(20 * time.Second); time.Now().Before(deadline); time.Sleep(50 * time.Millisecond) {
		_, body = s.request("GET", fmt.Sprintf("/v2/project/%d/edge", pid), admin, "")
		if strings.Contains(string(body), `"online":true`) {
			return
		}
	}
	t.Fatalf("the edge device is not online again: %s", body)
}

// dryrunSlots asks the device for room_sp's priority array through a dry
// run, shown as [slot ...] with - for null.
func dryrunSlots(t *testing.T, s *server, pid int64, admin func(*http.Request)) string {
	t.Helper()
	status, body := s.request("POST", fmt.Sprintf("/v2/datapoint/setpoint?project_id=%d&dataPointID=room_sp&value=22&priority=13&dryrun=true", pid), admin, "")
	if status != 200 {
		t.Fatalf("dry run: %d %s", status, body)
	}
	var r struct {
		Resource struct {
			PriorityArray []*float64 `json:"priority_array"`
		} `json:"resource"`
	}
	if err := json.Unmarshal(body, &r); err != nil || len(r.Resource.PriorityArray) != 17 {
		t.Fatalf("dry run: %s", body)
	}
	return showSlots(r.Resource.PriorityArray)
}
