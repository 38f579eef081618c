package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/openbdp/bdp/cluster/localcluster"
	"github.com/openbdp/bdp/files/filestest"
	"github.com/openbdp/bdp/pipeline/kafkatest"
)

// clusterPlatform is three bdp serve nodes on the shared services of
// localcluster, the test's Kafka broker among them.
type clusterPlatform struct {
	t     *testing.T
	svc   *localcluster.Services
	dir   string
	env   []string
	nodes map[string]*localcluster.Node
	// kafkaTopic is the topic the nodes ingest from (BDP_KAFKA_TOPIC).
	kafkaTopic string
}

func newClusterPlatform(t *testing.T) *clusterPlatform {
	t.Helper()
	dir := newDataDir(t) // traversable: PostgreSQL runs as postgres under root
	svc, err := localcluster.StartServices(context.Background(), localcluster.Config{Dir: dir,
		KafkaBrokers: strings.Join(kafkatest.Brokers(t), ","), S3: filestest.Start(t), Log: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(svc.Stop)
	p := &clusterPlatform{t: t, svc: svc, dir: dir, nodes: map[string]*localcluster.Node{}, kafkaTopic: kafkatest.Topic(t, 3)}
	p.env = []string{"BDP_OPERATOR_TOKEN=" + operatorToken, "BDP_CLUSTER_RELAY_TOPIC=" + kafkatest.Topic(t, 6),
		"BDP_KAFKA_TOPIC=" + p.kafkaTopic, "BDP_LOG_LEVEL=info"}
	return p
}

// start runs node name (again, on its data directory after a stop).
func (p *clusterPlatform) start(name string) *server {
	p.t.Helper()
	n, err := localcluster.StartNode(context.Background(), bdpBinary, p.svc, name, filepath.Join(p.dir, "node-"+name), p.env...)
	if err != nil {
		p.t.Fatal(err)
	}
	p.nodes[name] = n
	p.t.Cleanup(func() {
		if n.Running() {
			_ = n.Stop(30 * time.Second)
		}
		if p.t.Failed() {
			b, _ := os.ReadFile(n.LogFile)
			p.t.Logf("log of node %s:\n%s", name, tail(string(b), 60))
		}
	})
	return &server{t: p.t, base: n.HTTP}
}

// startDevice runs a simulated edge device (bdp edge-sim) for the project
// on the cluster's broker, with credentials from the operator route.
func (p *clusterPlatform) startDevice(s *server, pid int64) {
	p.t.Helper()
	status, body := s.request("POST", fmt.Sprintf("/operator/projects/%d/edge", pid), operator, "")
	var creds struct {
		Resource struct{ Username, Password string } `json:"resource"`
	}
	if status != 201 || json.Unmarshal(body, &creds) != nil {
		p.t.Fatalf("edge credentials: %d %s", status, body)
	}
	simLog := &syncBuffer{}
	cmd := exec.Command(bdpBinary, "edge-sim", "-broker", p.svc.MQTT.URL, "-project", strconv.FormatInt(pid, 10),
		"-username", creds.Resource.Username, "-datapoints", "room_sp=20")
	cmd.Env = append(os.Environ(), "BDP_EDGE_SIM_PASSWORD="+creds.Resource.Password)
	cmd.Stdout, cmd.Stderr = simLog, simLog
	if err := cmd.Start(); err != nil {
		p.t.Fatal(err)
	}
	p.t.Cleanup(func() {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
		if p.t.Failed() {
			p.t.Logf("bdp edge-sim:\n%s", simLog)
		}
	})
}

func tail(s string, lines int) string {
	all := strings.Split(s, "\n")
	return strings.Join(all[max(0, len(all)-lines):], "\n")
}

// clusterView is GET /operator/cluster.
type clusterView struct {
	Resource struct {
		Members []struct {
			NodeID            string `json:"node_id"`
			Answered          bool   `json:"answered"`
			VirtualDatapoints int    `json:"virtual_datapoints"`
			EdgeConnections   int    `json:"edge_connections"`
		} `json:"members"`
	} `json:"resource"`
}

func view(t *testing.T, s *server) clusterView {
	t.Helper()
	status, body := s.request("GET", "/operator/cluster", operator, "")
	var v clusterView
	if status != 200 || json.Unmarshal(body, &v) != nil {
		t.Fatalf("GET /operator/cluster: %d %s", status, body)
	}
	return v
}

// waitMembers waits until s sees exactly the named members, answering,
// running want virtual datapoints among them; it returns how long that
// took.
func waitMembers(t *testing.T, s *server, names []string, want int, within time.Duration) time.Duration {
	t.Helper()
	began := time.Now()
	var v clusterView
	for deadline := began.Add(within); time.Now().Before(deadline); time.Sleep(100 * time.Millisecond) {
		v = view(t, s)
		running, seen := 0, []string{}
		for _, m := range v.Resource.Members {
			if m.Answered {
				seen = append(seen, m.NodeID)
				running += m.VirtualDatapoints
			}
		}
		slices.Sort(seen) // the view lists members by address
		if slices.Equal(seen, names) && (want < 0 || running == want) {
			return time.Since(began)
		}
	}
	t.Fatalf("not within %s: members %v running %d virtual datapoints; the view: %+v", within, names, want, v.Resource.Members)
	return 0
}

// waitOneEdgeConnection waits until exactly one answering member holds
// the project's edge connection, and returns its name.
func waitOneEdgeConnection(t *testing.T, s *server, within time.Duration) string {
	t.Helper()
	var v clusterView
	for deadline := time.Now().Add(within); time.Now().Before(deadline); time.Sleep(100 * time.Millisecond) {
		v = view(t, s)
		holders := []string{}
		for _, m := range v.Resource.Members {
			for range m.EdgeConnections {
				if m.Answered {
					holders = append(holders, m.NodeID)
				}
			}
		}
		if len(holders) == 1 {
			return holders[0]
		}
	}
	t.Fatalf("not within %s: one member holding the edge connection; the view: %+v", within, v.Resource.Members)
	return ""
}

// The cluster test of issue 20: three nodes on one PostgreSQL, Kafka,
// Mosquitto, etcd and S3 store. Virtual datapoints created and run
// through any node run on exactly one; observations uploaded through any
// node reach them; a node killed with kill -9 has its datapoints running
// elsewhere within seconds, with nothing missed; a stop answered by one
// node stops the actor on another; a rejoining node takes its share back;
// a node stopped gracefully hands its share over. Every output is checked
// against the value it must have, for every observation.
func TestServeCluster(t *testing.T) {
	p := newClusterPlatform(t)
	a, b, c := p.start("a"), p.start("b"), p.start("c")
	waitMembers(t, a, []string{"a", "b", "c"}, 0, 30*time.Second)
	pid := companyProject(t, a, "cluster", "ops@cluster.test", "cluster-pw-12")
	admin := basicAuth("ops@cluster.test", "cluster-pw-12")
	nodes := []*server{a, b, c}
	// Failed logins count on every node: ten spread over the three reach
	// the account's limit (BDP_LOGIN_ACCOUNT_FAILURES, 10) on each. Three
	// more tries on c find it throttled; on its own count (three
	// failures, then up to six) it would not be.
	guess := basicAuth("nobody@cluster.test", "a-wrong-guess")
	for i := range 10 {
		if status, body := nodes[i%3].request("GET", "/v2/user", guess, ""); status != 401 {
			t.Fatalf("failed login %d: %d %s", i, status, body)
		}
	}
	for try := 0; ; try++ {
		status, body := c.request("GET", "/v2/user", guess, "")
		if status == 429 {
			break
		}
		if try == 2 {
			t.Fatalf("c answers %d %s after ten failed logins over three nodes, want 429", status, body)
		}
		time.Sleep(500 * time.Millisecond) // the other nodes' notices are on their way
	}
	// The project's edge connection runs on one member (the owner of
	// project/<id>), and moves with it. A simulated device serves it;
	// setpoint writes, dry runs and the connection's state asked of the
	// other nodes are carried to that member.
	if status, body := a.request("PUT", fmt.Sprintf("/operator/projects/%d/settings", pid), operator, `{"setpoint_writing_enabled":true}`); status != 200 {
		t.Fatalf("enable setpoint writing: %d %s", status, body)
	}
	p.startDevice(a, pid)
	edgeHolder := waitOneEdgeConnection(t, c, 30*time.Second)
	other := map[string]*server{"a": b, "b": c, "c": a}[edgeHolder] // a node that does not hold it
	writeThroughSimulator(t, other, pid, admin)
	if got := dryrunSlots(t, other, pid, admin); got != "[- - - - - - - - - - - - 21.5 - - - 20]" {
		t.Fatalf("dry run through %s, a node without the connection: %s", edgeHolder, got)
	}

	const vdps, sources = 24, 6
	vdpPath := fmt.Sprintf("/v2/project/%d/virtual_datapoint", pid)
	for i := range vdps {
		via, run := nodes[i%3], nodes[(i+1)%3]
		cfg := fmt.Sprintf(`{"pins":{"P1":{"dataPointID":"s%d"}},"parameters":{"formula":"P1 * %d;"}}`, i%sources, i+1)
		if status, body := via.request("POST", vdpPath+fmt.Sprintf("?dataPointID=out%d&type=formula", i), admin, cfg); status != 200 {
			t.Fatalf("create out%d: %d %s", i, status, body)
		}
		if status, body := run.request("POST", vdpPath+fmt.Sprintf("/run?dataPointID=out%d&run=true", i), admin, ""); status != 200 || !strings.Contains(string(body), `"Running"`) {
			t.Fatalf("run out%d: %d %s", i, status, body)
		}
	}
	// Datapoints of the other types and windows (no timed trigger: its
	// boundaries are the wall clock's), each compared with an exact
	// recompute at the end.
	mixed := []struct{ id, typ, cfg string }{
		{"mix-gradient", "gradient", `{"pins":{"input":{"dataPointID":"s0"}},"parameters":{"factorization":60}}`},
		{"mix-humidity", "absolute_humidity", `{"pins":{"relative_humidity":{"dataPointID":"s1"},"temperature":{"dataPointID":"s2"}},"parameters":{"relative_humidity_unit":"percent"}}`},
		{"mix-count", "formula", `{"pins":{"P1":{"dataPointID":"s3","data_range":{"count":3},"aggregate":"mean"}},"parameters":{"formula":"P1;"}}`},
		{"mix-time", "formula", `{"pins":{"P1":{"dataPointID":"s4","data_range":{"time":"10m"},"aggregate":"max"}},"parameters":{"formula":"P1;"}}`},
		{"mix-two", "formula", `{"pins":{"P1":{"dataPointID":"s0"},"P2":{"dataPointID":"s5","data_range":{"count":2},"aggregate":"sum"}},"parameters":{"formula":"P1 + P2;"}}`},
	}
	for i, m := range mixed {
		via, run := nodes[i%3], nodes[(i+2)%3]
		if status, body := via.request("POST", vdpPath+"?dataPointID="+m.id+"&type="+m.typ, admin, m.cfg); status != 200 {
			t.Fatalf("create %s: %d %s", m.id, status, body)
		}
		if status, body := run.request("POST", vdpPath+"/run?dataPointID="+m.id+"&run=true", admin, ""); status != 200 || !strings.Contains(string(body), `"Running"`) {
			t.Fatalf("run %s: %d %s", m.id, status, body)
		}
	}
	all := vdps + len(mixed)
	waitMembers(t, c, []string{"a", "b", "c"}, all, 10*time.Second)

	// Rounds of uploads: round r stores value r*10+source at minute r for
	// every source, through the given node.
	at := time.Date(2026, 9, 1, 0, 0, 0, 0, time.UTC)
	rounds := 0
	upload := func(via *server, n int) {
		t.Helper()
		for range n {
			var sb strings.Builder
			sb.WriteString("{")
			for s := range sources {
				if s > 0 {
					sb.WriteString(",")
				}
				fmt.Fprintf(&sb, `"s%d":[{"time":%q,"value":%d}]`, s, at.Add(time.Duration(rounds)*time.Minute).Format(time.RFC3339), rounds*10+s)
			}
			sb.WriteString("}")
			if status, body := via.request("POST", fmt.Sprintf("/v2/project/%d/timeseries", pid), admin, sb.String()); status != 200 {
				t.Fatalf("upload round %d: %d %s", rounds, status, body)
			}
			rounds++
		}
	}
	stopped := map[int]int{} // datapoint -> rounds it had when stopped
	// check waits until every datapoint has an output for every round
	// (the stopped ones: for the rounds before their stop, and no more),
	// each the value it must have.
	check := func(via *server, within time.Duration) {
		t.Helper()
		deadline := time.Now().Add(within)
		for i := range vdps {
			want := rounds
			if r, ok := stopped[i]; ok {
				want = r
			}
			for {
				var got struct {
					Data []struct {
						Time  string  `json:"time"`
						Value float64 `json:"value"`
					} `json:"data"`
				}
				_, body := via.request("GET", fmt.Sprintf("/v2/datapoint/timeseries?project_id=%d&dataPointID=out%d", pid, i), admin, "")
				if err := json.Unmarshal(body, &got); err != nil {
					t.Fatalf("outputs of out%d: %v: %s", i, err, body)
				}
				if len(got.Data) > want {
					t.Fatalf("out%d has %d outputs, want %d (stopped: %v)", i, len(got.Data), want, stopped)
				}
				if len(got.Data) == want {
					for r, o := range got.Data {
						wantAt, wantValue := at.Add(time.Duration(r)*time.Minute).Format(time.RFC3339), float64((r*10+i%sources)*(i+1))
						if o.Time != wantAt || o.Value != wantValue {
							t.Fatalf("out%d output %d: %s = %v, want %s = %v", i, r, o.Time, o.Value, wantAt, wantValue)
						}
					}
					break
				}
				if time.Now().After(deadline) {
					t.Fatalf("out%d: %d outputs, want %d", i, len(got.Data), want)
				}
				time.Sleep(50 * time.Millisecond)
			}
		}
	}

	upload(b, 3)
	upload(c, 2)
	check(a, 20*time.Second)
	// Rounds through Kafka and MQTT: whichever node stores them, every
	// datapoint gets them in order. A gateway's round is one message per
	// source, stored one by one (a Kafka message is acknowledged once
	// produced, stored later); the next round goes once every source of
	// this one is stored, as an HTTP upload's round is stored whole, so
	// that the datapoints of two sources see the rounds as a recompute
	// does.
	gw := p.gateways(c, pid, admin)
	storedRound := func(via *server, r int) {
		t.Helper()
		from, to := at.Add(time.Duration(r)*time.Minute).Format(time.RFC3339), at.Add(time.Duration(r+1)*time.Minute).Format(time.RFC3339)
		for s := range sources {
			for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(20 * time.Millisecond) {
				_, body := via.request("GET", fmt.Sprintf("/v2/datapoint/timeseries?project_id=%d&dataPointID=s%d&start=%s&end=%s", pid, s, from, to), admin, "")
				if strings.Contains(string(body), `"value"`) {
					break
				}
				if time.Now().After(deadline) {
					t.Fatalf("round %d of s%d not stored: %s", r, s, body)
				}
			}
		}
	}
	viaGateways := func(kafkaRounds, mqttRounds int, via *server) {
		t.Helper()
		for range kafkaRounds {
			gw.kafka(at, rounds, sources)
			storedRound(via, rounds)
			rounds++
		}
		for range mqttRounds {
			gw.publish(at, rounds, sources)
			storedRound(via, rounds)
			rounds++
		}
		check(via, 30*time.Second)
	}
	viaGateways(2, 3, b)

	// kill -9 of a: its datapoints run on b and c, and the edge
	// connection on one of them.
	p.nodes["a"].Kill()
	moved := waitMembers(t, b, []string{"b", "c"}, all, 30*time.Second)
	t.Logf("kill -9: every datapoint running on b and c %s later", moved.Round(100*time.Millisecond))
	if holder := waitOneEdgeConnection(t, b, 30*time.Second); holder == "a" {
		t.Fatalf("the edge connection is still on the killed node (held by %s before)", edgeHolder)
	}
	upload(b, 3)
	check(c, 20*time.Second)
	viaGateways(1, 3, c) // MQTT ingestion's session on b or c now

	// A stop answered by a node that may not run the datapoint.
	for _, i := range []int{0, 5, 10, 15} {
		if status, body := c.request("POST", vdpPath+fmt.Sprintf("/run?dataPointID=out%d&run=false", i), admin, ""); status != 200 || !strings.Contains(string(body), `"Stopped"`) {
			t.Fatalf("stop out%d: %d %s", i, status, body)
		}
		stopped[i] = rounds
	}
	waitMembers(t, b, []string{"b", "c"}, all-len(stopped), 5*time.Second)
	upload(c, 2)
	check(b, 20*time.Second)

	// a rejoins and takes its share back; then b stops gracefully.
	a = p.start("a")
	waitMembers(t, c, []string{"a", "b", "c"}, all-len(stopped), 30*time.Second)
	upload(a, 2)
	check(c, 20*time.Second)
	if err := p.nodes["b"].Stop(30 * time.Second); err != nil {
		t.Fatalf("graceful stop of b: %v", err)
	}
	waitMembers(t, a, []string{"a", "c"}, all-len(stopped), 30*time.Second)
	upload(c, 2)
	check(a, 20*time.Second)
	viaGateways(1, 2, a)

	// What the mixed datapoints stored through all of it, moves included,
	// is what an exact recompute of the whole period stores.
	for _, m := range mixed {
		before := series(t, c, pid, admin, m.id)
		if len(before) == 0 {
			t.Fatalf("%s stored no output", m.id)
		}
		end := at.Add(time.Duration(rounds) * time.Minute).Format(time.RFC3339)
		if status, body := a.request("POST", vdpPath+"/recompute?dataPointID="+m.id+"&start="+at.Format(time.RFC3339)+"&end="+end, admin, ""); status != 202 {
			t.Fatalf("recompute %s: %d %s", m.id, status, body)
		}
		var body []byte
		for deadline := time.Now().Add(30 * time.Second); !strings.Contains(string(body), "finished"); time.Sleep(100 * time.Millisecond) {
			if time.Now().After(deadline) {
				t.Fatalf("the recompute of %s did not finish: %s", m.id, body)
			}
			_, body = c.request("GET", vdpPath+"?dataPointID="+m.id, admin, "")
		}
		if after := series(t, c, pid, admin, m.id); !slices.Equal(before, after) {
			t.Fatalf("%s: live outputs differ from a recompute:\nlive      %v\nrecompute %v", m.id, before, after)
		}
	}
}

// series is a datapoint's stored observations, as "time=value".
func series(t *testing.T, s *server, pid int64, admin func(*http.Request), id string) []string {
	t.Helper()
	var got struct {
		Data []struct {
			Time  string  `json:"time"`
			Value float64 `json:"value"`
		} `json:"data"`
	}
	_, body := s.request("GET", fmt.Sprintf("/v2/datapoint/timeseries?project_id=%d&dataPointID=%s&max=0", pid, id), admin, "")
	if err := json.Unmarshal(body, &got); err != nil {
		t.Fatalf("outputs of %s: %v: %s", id, err, body)
	}
	out := make([]string, len(got.Data))
	for i, p := range got.Data {
		out[i] = fmt.Sprintf("%s=%v", p.Time, p.Value)
	}
	return out
}
