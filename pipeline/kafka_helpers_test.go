package pipeline

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"log/slog"
	"maps"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/segmentio/kafka-go"

	"github.com/openbdp/bdp/pipeline/kafkatest"
)

// recordingSink keeps every observation it was asked to write. before,
// when set, runs first and fails the write when it returns an error.
type recordingSink struct {
	before func(attempt int, obs []Observation) error

	mu       sync.Mutex
	attempts [][]Observation
	stored   []Observation
}

func (s *recordingSink) Write(_ context.Context, _ Source, obs []Observation) error {
	obs = slices.Clone(obs)
	s.mu.Lock()
	n := len(s.attempts)
	s.attempts = append(s.attempts, obs)
	s.mu.Unlock()
	if s.before != nil {
		if err := s.before(n, obs); err != nil {
			return err
		}
	}
	s.mu.Lock()
	s.stored = append(s.stored, obs...)
	s.mu.Unlock()
	return nil
}

func (s *recordingSink) Stored() []Observation {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.stored)
}

func (s *recordingSink) Len() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.stored)
}

// kafkaObsKey makes observations comparable; times in UTC nanoseconds.
type kafkaObsKey struct {
	p  int64
	dp string
	t  int64
	v  float64
}

func kafkaKeys(obs []Observation) []kafkaObsKey {
	ks := make([]kafkaObsKey, len(obs))
	for i, o := range obs {
		ks[i] = kafkaObsKey{o.ProjectID, o.DataPointID, o.Time.UnixNano(), o.Value}
	}
	slices.SortFunc(ks, func(a, b kafkaObsKey) int {
		return cmpKeys(a, b)
	})
	return ks
}

func cmpKeys(a, b kafkaObsKey) int {
	switch {
	case a.p != b.p:
		return int(a.p - b.p)
	case a.dp != b.dp:
		return strings.Compare(a.dp, b.dp)
	case a.t != b.t:
		if a.t < b.t {
			return -1
		}
		return 1
	}
	return 0
}

// assertSameObservations fails unless got and want hold the same
// observations, each as often.
func assertSameObservations(t *testing.T, got, want []Observation) {
	t.Helper()
	g, w := kafkaKeys(got), kafkaKeys(want)
	if slices.Equal(g, w) {
		return
	}
	missing, extra := 0, 0
	i, j := 0, 0
	for i < len(g) || j < len(w) {
		switch {
		case i == len(g):
			missing++
			j++
		case j == len(w):
			extra++
			i++
		case g[i] == w[j]:
			i++
			j++
		case cmpKeys(g[i], w[j]) < 0 || (cmpKeys(g[i], w[j]) == 0 && g[i].v < w[j].v):
			extra++
			i++
		default:
			missing++
			j++
		}
	}
	t.Fatalf("got %d observations, want %d: %d missing, %d extra (duplicates or unexpected)", len(g), len(w), missing, extra)
}

// kafkaValue is the JSON of one observation as a producer sends it; the
// time in the zone given.
func kafkaValue(o Observation, zone *time.Location) map[string]any {
	return map[string]any{
		"project_id": o.ProjectID, "dataPointID": o.DataPointID,
		"time": o.Time.In(zone).Format(time.RFC3339Nano), "value": o.Value,
	}
}

func kafkaMessage(t testing.TB, v any) kafka.Message {
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	var key string
	switch v := v.(type) {
	case map[string]any:
		key = fmt.Sprintf("%v/%v", v["project_id"], v["dataPointID"])
	case []map[string]any:
		key = fmt.Sprintf("%v/%v", v[0]["project_id"], v[0]["dataPointID"])
	}
	return kafka.Message{Key: []byte(key), Value: b}
}

// kafkaWorkload returns n messages, objects and arrays of 1 to 4
// observations of projects 1 to 3, and the observations they hold.
func kafkaWorkload(t testing.TB, n int, seed string) ([]kafka.Message, []Observation) {
	base := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	zones := []*time.Location{time.UTC, time.FixedZone("", 2*3600), time.FixedZone("", -5*3600-1800)}
	dps := []string{"temp", "room 1/°C", `Tä "x"`, "a.b.c", "x" + seed}
	var msgs []kafka.Message
	var all []Observation
	k := 0
	next := func() Observation {
		k++
		return Observation{
			ProjectID:   int64(1 + k%3),
			DataPointID: dps[k%len(dps)] + "-" + seed,
			Time:        base.Add(time.Duration(k) * 1001 * time.Millisecond).Add(time.Duration(k % 1000)),
			Value:       float64(k)*0.5 - 17,
		}
	}
	for i := range n {
		if i%3 == 0 {
			arr := make([]map[string]any, 1+i%4)
			for j := range arr {
				o := next()
				all = append(all, o)
				arr[j] = kafkaValue(o, zones[j%len(zones)])
			}
			msgs = append(msgs, kafkaMessage(t, arr))
			continue
		}
		o := next()
		all = append(all, o)
		msgs = append(msgs, kafkaMessage(t, kafkaValue(o, zones[i%len(zones)])))
	}
	return msgs, all
}

func projectsUpTo(max int64) ProjectExists {
	return func(_ context.Context, id int64) (bool, error) { return id >= 1 && id <= max, nil }
}

func randomGroup() string {
	b := make([]byte, 4)
	_, _ = rand.Read(b)
	return "test-group-" + hex.EncodeToString(b)
}

// runKafkaIngest runs an ingest until the returned stop is called (or the
// test ends); stop fails the test unless Run returns nil within 30 s.
func runKafkaIngest(t *testing.T, cfg KafkaConfig, sink Sink, exists ProjectExists) (*KafkaIngest, func()) {
	t.Helper()
	log := slog.New(slog.NewTextHandler(t.Output(), &slog.HandlerOptions{Level: slog.LevelInfo}))
	k, err := NewKafkaIngest(cfg, sink, exists, log, prometheus.NewRegistry())
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- k.Run(ctx) }()
	var once sync.Once
	stop := func() {
		once.Do(func() {
			cancel()
			select {
			case err := <-done:
				if err != nil {
					t.Errorf("Run: %v", err)
				}
			case <-time.After(30 * time.Second):
				t.Errorf("Run did not return within 30 s of the cancel")
			}
		})
	}
	t.Cleanup(stop)
	return k, stop
}

func waitFor(t *testing.T, timeout time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out after %v waiting for %s", timeout, what)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// waitCommitted waits until group committed every message of topic.
func waitCommitted(t *testing.T, group, topic string, partitions int) {
	t.Helper()
	end := kafkatest.EndOffsets(t, topic, partitions)
	var got map[int]int64
	waitFor(t, 30*time.Second, "the offsets to be committed", func() bool {
		got = kafkatest.Committed(t, group, topic, partitions)
		return maps.Equal(got, end)
	})
}
