package bench

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/openbdp/bdp/pipeline/kafkatest"
)

// The sources are shared in proportion to the rates, each path with one
// at least, interleaved.
func TestAssignPaths(t *testing.T) {
	rates, err := ParseRates("http=2000,kafka=2000,mqtt=1000")
	if err != nil {
		t.Fatal(err)
	}
	paths, err := assignPaths(rates, 10)
	if err != nil {
		t.Fatal(err)
	}
	if got := fmt.Sprint(paths); got != "[http kafka mqtt http kafka http kafka mqtt http kafka]" {
		t.Errorf("paths %s", got)
	}
	paths, err = assignPaths(map[Path]int{PathHTTP: 10_000, PathMQTT: 1}, 3)
	if err != nil || countPath(paths, PathMQTT) != 1 || countPath(paths, PathHTTP) != 2 {
		t.Errorf("a small rate's path has a source: %v, %v", paths, err)
	}
	if _, err := assignPaths(rates, 2); err == nil {
		t.Error("two sources for three paths")
	}
	for _, bad := range []string{"http", "ftp=1", "http=0", "kafka=x"} {
		if _, err := ParseRates(bad); err == nil {
			t.Errorf("ParseRates(%q) took it", bad)
		}
	}
	if _, err := ParseVDPMix("formula=1,sine=2"); err == nil {
		t.Error("ParseVDPMix took an unknown kind")
	}
}

// The expected outputs follow the windows from an empty start.
func TestLoadExpected(t *testing.T) {
	mix := map[VDPKind]int{VDPFormula: 1, VDPFormulaCount: 1, VDPFormulaTime: 1, VDPGradient: 1, VDPHumidity: 1}
	l := &Load{opts: LoadOptions{Sources: 1}, kinds: layOutKinds(mix, 0), bounded: true, start: time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)}
	// Values 0, 10, 20, ..., 90, 0, 10, ...
	for _, c := range []struct {
		i, r int
		want float64
		ok   bool
	}{
		{0, 3, 30, true},           // formula: 30 × 1
		{1, 1, (0 + 10) * 2, true}, // count 5, sum, fewer at the start
		{1, 6, (20 + 30 + 40 + 50 + 60) * 2, true},
		{2, 6, (20 + 30 + 40 + 50 + 60) / 5.0 * 3, true}, // (t-5m, t] mean
		{3, 0, 0, false},                                 // gradient: none before the second input
		{3, 10, (0 - 90) / 60.0 * 60, true},
	} {
		got, ok := l.expected(c.i, c.r)
		if ok != c.ok || got != c.want {
			t.Errorf("VDP %d (%s) round %d: %v, %t; want %v, %t", c.i, l.kinds[c.i], c.r, got, ok, c.want, c.ok)
		}
	}
	if v, ok := l.expected(4, 5); !ok || v < 7.70 || v > 7.72 {
		t.Errorf("humidity at 50 %%, 21 °C: %v g/kg, %t", v, ok)
	}
}

// TestLoadOverEveryPath runs the harness against one bdp serve, as
// bdp-bench load does: a mix of every kind of datapoint fed over HTTP,
// Kafka and MQTT at once, a live subscriber and setpoint writes to a
// simulated device; every acknowledged observation is stored, every
// output is what it should be, and Close leaves nothing behind.
func TestLoadOverEveryPath(t *testing.T) {
	brokers := kafkatest.Brokers(t)
	topic := kafkatest.Topic(t, 4)
	bin := filepath.Join(t.TempDir(), "bdp")
	if out, err := exec.Command("go", "build", "-o", bin, "../cmd/bdp").CombinedOutput(); err != nil {
		t.Fatalf("build bdp: %v\n%s", err, out)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	p, err := Start(ctx, Options{Binary: bin, Env: []string{"BDP_KAFKA_BROKERS=" + strings.Join(brokers, ","),
		"BDP_KAFKA_TOPIC=" + topic, "BDP_KAFKA_GROUP=" + topic}})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	broker := "tcp://" + platformAddress(t, p, "mqtt")

	const rounds, sources = 300, 12
	mix := map[VDPKind]int{VDPFormula: 6, VDPFormulaCount: 3, VDPFormulaTime: 3, VDPGradient: 3, VDPHumidity: 3}
	load, err := StartLoad(ctx, LoadOptions{HTTP: []string{p.Base}, OperatorToken: operatorToken, Sources: sources, Mix: mix,
		Rates:        map[Path]int{PathHTTP: 240, PathKafka: 240, PathMQTT: 120}, // 50 rounds a second
		KafkaBrokers: brokers, KafkaTopic: topic, MQTT: []string{broker}, Span: rounds})
	if err != nil {
		t.Fatal(err)
	}
	closed := false
	defer func() {
		if !closed {
			_ = load.Close(context.Background())
		}
	}()
	live, err := load.SubscribeLive(ctx, broker)
	if err != nil {
		t.Fatal(err)
	}
	defer live.Close()
	writer, err := load.StartSetpoints(ctx)
	if err != nil {
		t.Fatal(err)
	}
	sideCtx, stopSide := context.WithCancel(ctx)
	go load.Progress(sideCtx, 2*time.Second, func(format string, a ...any) { t.Logf(format, a...) })
	writes := make(chan struct{})
	go func() { defer close(writes); writer.Run(sideCtx, 5) }()
	err = load.FeedRate(ctx, rounds)
	stopSide()
	<-writes
	if err != nil {
		t.Fatal(err)
	}
	verdict, err := load.Verify(ctx, time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	if verdict != (Verdict{}) {
		t.Errorf("verdict %+v", verdict)
	}
	figures := load.PathFigures()
	for _, path := range Paths() {
		n, _ := figures[string(path)+"_sources"].(int)
		if obs := figures[string(path)+"_observations"]; n == 0 || obs != rounds*n {
			t.Errorf("%s: %v observations acknowledged of %d sources × %d rounds", path, obs, n, rounds)
		}
	}
	t.Logf("paths: %v", figures)
	if ratio := live.Ratio(0, load.Rounds(), 10*time.Second); ratio != 1 {
		t.Errorf("live ratio %v", ratio)
	}
	sp := writer.Figures(30 * time.Second)
	t.Logf("setpoints: %v", sp)
	if sent := sp["setpoints_sent"].(int); sent == 0 || sp["setpoints_written"] != sent || sp["setpoints_http_errors"] != 0 {
		t.Errorf("setpoints %v", sp)
	}
	// The admin of the harness's company may no longer see the project.
	pid := load.ProjectID()
	closed = true
	if err := load.Close(ctx); err != nil {
		t.Fatalf("close: %v", err)
	}
	if err := load.Do(ctx, "GET", fmt.Sprintf("/v2/project/%d", pid), nil, nil, false); err == nil || !strings.Contains(err.Error(), "HTTP 403") {
		t.Errorf("the project after Close: %v", err)
	}
}

// platformAddress is one of the addresses bdp serve wrote (http, mqtt,
// s3).
func platformAddress(t *testing.T, p *Platform, key string) string {
	t.Helper()
	raw, err := os.ReadFile(filepath.Join(p.dir, "addresses.json"))
	if err != nil {
		t.Fatal(err)
	}
	var addrs map[string]string
	if err := json.Unmarshal(raw, &addrs); err != nil || addrs[key] == "" {
		t.Fatalf("addresses.json has no %s address: %s (%v)", key, raw, err)
	}
	return addrs[key]
}
