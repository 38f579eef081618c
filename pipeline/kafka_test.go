package pipeline

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/segmentio/kafka-go"

	"github.com/openbdp/bdp/pipeline/kafkatest"
)

func TestKafkaDecode(t *testing.T) {
	t0 := time.Date(2026, 3, 1, 12, 30, 0, 0, time.UTC)
	obs := func(p int64, dp string, tm time.Time, v float64) Observation {
		return Observation{ProjectID: p, DataPointID: dp, Time: tm, Value: v}
	}
	for _, tc := range []struct {
		name  string
		value string
		want  []Observation
		kind  string // "" when it decodes
		err   string // part of the reason
	}{
		{name: "object", value: `{"project_id": 7, "dataPointID": "room 1/temp", "time": "2026-03-01T12:30:00Z", "value": 21.5}`,
			want: []Observation{obs(7, "room 1/temp", t0, 21.5)}},
		{name: "object with an offset and nanoseconds", value: `{"project_id":7,"dataPointID":"a","time":"2026-03-01T14:30:00.123456789+02:00","value":-1e-3}`,
			want: []Observation{obs(7, "a", t0.Add(123456789), -0.001)}},
		{name: "leading whitespace, unknown fields, integer value", value: " \n{\"project_id\":1,\"dataPointID\":\"a\",\"time\":\"2026-03-01T12:30:00Z\",\"value\":3,\"unit\":\"K\"}",
			want: []Observation{obs(1, "a", t0, 3)}},
		{name: "escaped and unicode dataPointID", value: `{"project_id":1,"dataPointID":"T\u00e4 \"x\"/°C","time":"2026-03-01T12:30:00Z","value":1}`,
			want: []Observation{obs(1, `Tä "x"/°C`, t0, 1)}},
		{name: "array", value: `[{"project_id":1,"dataPointID":"a","time":"2026-03-01T12:30:00Z","value":1},{"project_id":2,"dataPointID":"b","time":"2026-03-01T12:30:01Z","value":2}]`,
			want: []Observation{obs(1, "a", t0, 1), obs(2, "b", t0.Add(time.Second), 2)}},
		{name: "empty array", value: `[]`, want: nil},

		{name: "empty", value: ``, kind: KafkaMalformed, err: "empty message"},
		{name: "not JSON", value: `hello`, kind: KafkaMalformed, err: "not a JSON object or array"},
		{name: "truncated", value: `{"project_id":1,`, kind: KafkaMalformed, err: "not valid JSON"},
		{name: "NaN literal", value: `{"project_id":1,"dataPointID":"a","time":"2026-03-01T12:30:00Z","value":NaN}`, kind: KafkaMalformed, err: "not valid JSON"},
		{name: "NaN string", value: `{"project_id":1,"dataPointID":"a","time":"2026-03-01T12:30:00Z","value":"NaN"}`, kind: KafkaMalformed, err: "value: want a number"},
		{name: "numeric string value", value: `{"project_id":1,"dataPointID":"a","time":"2026-03-01T12:30:00Z","value":"1.5"}`, kind: KafkaMalformed, err: "value: want a number"},
		{name: "infinite value", value: `{"project_id":1,"dataPointID":"a","time":"2026-03-01T12:30:00Z","value":1e999}`, kind: KafkaMalformed, err: "not a finite"},
		{name: "null", value: `null`, kind: KafkaMalformed, err: "not a JSON object or array"},
		{name: "number", value: `42`, kind: KafkaMalformed, err: "not a JSON object or array"},
		{name: "array of numbers", value: `[1]`, kind: KafkaMalformed, err: "got a JSON number"},
		{name: "nested array", value: `[[]]`, kind: KafkaMalformed, err: "got a JSON array"},
		{name: "missing project_id", value: `{"dataPointID":"a","time":"2026-03-01T12:30:00Z","value":1}`, kind: KafkaMalformed, err: "project_id is missing"},
		{name: "missing dataPointID", value: `{"project_id":1,"time":"2026-03-01T12:30:00Z","value":1}`, kind: KafkaMalformed, err: "dataPointID is missing"},
		{name: "missing time", value: `{"project_id":1,"dataPointID":"a","value":1}`, kind: KafkaMalformed, err: "time is missing"},
		{name: "missing value", value: `{"project_id":1,"dataPointID":"a","time":"2026-03-01T12:30:00Z"}`, kind: KafkaMalformed, err: "value is missing"},
		{name: "null value", value: `{"project_id":1,"dataPointID":"a","time":"2026-03-01T12:30:00Z","value":null}`, kind: KafkaMalformed, err: "value is missing"},
		{name: "string project_id", value: `{"project_id":"1","dataPointID":"a","time":"2026-03-01T12:30:00Z","value":1}`, kind: KafkaMalformed, err: "project_id: want an integer"},
		{name: "fractional project_id", value: `{"project_id":1.5,"dataPointID":"a","time":"2026-03-01T12:30:00Z","value":1}`, kind: KafkaMalformed, err: "project_id: want an integer"},
		{name: "numeric time", value: `{"project_id":1,"dataPointID":"a","time":1700000000,"value":1}`, kind: KafkaMalformed, err: "want a string"},
		{name: "zero project_id", value: `{"project_id":0,"dataPointID":"a","time":"2026-03-01T12:30:00Z","value":1}`, kind: KafkaInvalid, err: "not positive"},
		{name: "time without zone", value: `{"project_id":1,"dataPointID":"a","time":"2026-03-01T12:30:00","value":1}`, kind: KafkaInvalid, err: "not RFC 3339"},
		{name: "bad time", value: `{"project_id":1,"dataPointID":"a","time":"yesterday","value":1}`, kind: KafkaInvalid, err: "not RFC 3339"},
		{name: "year out of range", value: `{"project_id":1,"dataPointID":"a","time":"1800-01-01T00:00:00Z","value":1}`, kind: KafkaInvalid, err: "outside the years"},
		{name: "empty dataPointID", value: `{"project_id":1,"dataPointID":"","time":"2026-03-01T12:30:00Z","value":1}`, kind: KafkaInvalid, err: "1 to 512 bytes"},
		{name: "backslash in dataPointID", value: `{"project_id":1,"dataPointID":"a\\b","time":"2026-03-01T12:30:00Z","value":1}`, kind: KafkaInvalid, err: "backslash"},
		{name: "one bad element refuses the array", value: `[{"project_id":1,"dataPointID":"a","time":"2026-03-01T12:30:00Z","value":1},{"project_id":1,"dataPointID":"a","time":"bad","value":1}]`,
			kind: KafkaInvalid, err: "element 1: time"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			prefix := []Observation{obs(99, "before", t0, 0)}
			got, kind, err := decodeKafkaValue([]byte(tc.value), slices.Clone(prefix))
			if kind != tc.kind {
				t.Fatalf("kind %q (err %v), want %q", kind, err, tc.kind)
			}
			if tc.kind != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("err %v, want one containing %q", err, tc.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if !slices.Equal(got[:1], prefix) {
				t.Fatalf("the observations before were changed: %v", got[:1])
			}
			if got := got[1:]; !slices.EqualFunc(got, tc.want, sameObservation) {
				t.Fatalf("got %v, want %v", got, tc.want)
			}
		})
	}
}

func sameObservation(a, b Observation) bool {
	return a.ProjectID == b.ProjectID && a.DataPointID == b.DataPointID && a.Time.Equal(b.Time) &&
		a.Value == b.Value && a.Time.Location() == time.UTC
}

func TestKafkaConfig(t *testing.T) {
	sink := &recordingSink{}
	exists := func(context.Context, int64) (bool, error) { return true, nil }
	if _, err := NewKafkaIngest(KafkaConfig{}, sink, exists, nil, nil); err == nil {
		t.Fatal("no brokers: want an error")
	}
	if _, err := NewKafkaIngest(KafkaConfig{Brokers: []string{"127.0.0.1:9092"}}, nil, exists, nil, nil); err == nil {
		t.Fatal("no sink: want an error")
	}
	if _, err := NewKafkaIngest(KafkaConfig{Brokers: []string{"127.0.0.1:9092"}, BatchSize: -1}, sink, exists, nil, nil); err == nil {
		t.Fatal("negative BatchSize: want an error")
	}
	if _, err := NewKafkaIngest(KafkaConfig{Brokers: []string{"b:1"}, Topic: "x", DLQTopic: "x"}, sink, exists, nil, nil); err == nil {
		t.Fatal("DLQ topic = topic: want an error")
	}
	k, err := NewKafkaIngest(KafkaConfig{Brokers: []string{"127.0.0.1:9092"}}, sink, exists, nil, prometheus.NewRegistry())
	if err != nil {
		t.Fatal(err)
	}
	c := k.Config()
	if c.Topic != "bdp.observations" || c.DLQTopic != "bdp.observations.dlq" || c.GroupID != "bdp" ||
		c.BatchSize != 50_000 || c.BatchWait != 20*time.Millisecond || c.MaxBytes != 10<<20 ||
		c.MaxWait != 50*time.Millisecond || c.QueueCapacity != 5_000 {
		t.Fatalf("defaults: %+v", c)
	}
}

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

func TestKafkaIngestWritesEveryMessage(t *testing.T) {
	topic := kafkatest.Topic(t, 4)
	msgs, want := kafkaWorkload(t, 3000, "all")
	kafkatest.Produce(t, topic, msgs...)

	sink := &recordingSink{}
	group := randomGroup()
	k, _ := runKafkaIngest(t, KafkaConfig{Brokers: kafkatest.Brokers(t), Topic: topic, GroupID: group, BatchSize: 500},
		sink, projectsUpTo(3))
	waitFor(t, 60*time.Second, "every observation", func() bool { return sink.Len() >= len(want) })
	waitCommitted(t, group, topic, 4)
	assertSameObservations(t, sink.Stored(), want)
	if got := testutil.ToFloat64(k.metrics.consumed); got != float64(len(msgs)) {
		t.Errorf("consumed metric %v, want %d", got, len(msgs))
	}
	if got := testutil.ToFloat64(k.metrics.written); got != float64(len(want)) {
		t.Errorf("written metric %v, want %d", got, len(want))
	}
	sink.mu.Lock()
	writes := sink.attempts
	sink.mu.Unlock()
	if n := len(writes); n < 2 {
		t.Errorf("%d writes for %d messages with BatchSize 500: want several", n, len(msgs))
	}
	for i, a := range writes {
		if len(a) > 500+3 {
			t.Errorf("write %d has %d observations, more than BatchSize (and the last message)", i, len(a))
		}
	}
}

func TestKafkaIngestDeadLetters(t *testing.T) {
	topic := kafkatest.Topic(t, 1) // one partition: the good messages come after the poison
	good1 := Observation{ProjectID: 1, DataPointID: "good", Time: time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC), Value: 1}
	good2 := Observation{ProjectID: 2, DataPointID: "good", Time: good1.Time.Add(time.Minute), Value: 2}
	good3 := Observation{ProjectID: 1, DataPointID: "good", Time: good1.Time.Add(2 * time.Minute), Value: 3}
	poison := []struct {
		value string
		kind  string
	}{
		{`not json`, KafkaMalformed},
		{`{"project_id":1,"dataPointID":"a","time":"2026-01-01T00:00:00Z","value":NaN}`, KafkaMalformed},
		{`{"project_id":1,"dataPointID":"a","time":"2026-01-01T00:00:00Z","value":"NaN"}`, KafkaMalformed},
		{`{"project_id":1,"dataPointID":"a","time":"yesterday","value":1}`, KafkaInvalid},
		{`{"project_id":999,"dataPointID":"a","time":"2026-01-01T00:00:00Z","value":1}`, KafkaUnknownProject},
		{`[{"project_id":1,"dataPointID":"a","time":"2026-01-01T00:00:00Z","value":1},{"project_id":998,"dataPointID":"a","time":"2026-01-01T00:00:00Z","value":1}]`, KafkaUnknownProject},
		{`{"project_id":1,"dataPointID":"a","time":"2026-01-01T00:00:00Z"}`, KafkaMalformed},
	}
	msgs := []kafka.Message{kafkaMessage(t, kafkaValue(good1, time.UTC))}
	for i, p := range poison {
		msgs = append(msgs, kafka.Message{Key: []byte("poison-" + strconv.Itoa(i)), Value: []byte(p.value),
			Headers: []kafka.Header{{Key: "origin", Value: []byte("test")}}})
	}
	msgs = append(msgs, kafkaMessage(t, []map[string]any{kafkaValue(good2, time.UTC), kafkaValue(good3, time.UTC)}))
	kafkatest.Produce(t, topic, msgs...)

	sink := &recordingSink{}
	group := randomGroup()
	k, _ := runKafkaIngest(t, KafkaConfig{Brokers: kafkatest.Brokers(t), Topic: topic, GroupID: group},
		sink, projectsUpTo(2))
	waitFor(t, 60*time.Second, "the good observations", func() bool { return sink.Len() >= 3 })
	waitCommitted(t, group, topic, 1)
	assertSameObservations(t, sink.Stored(), []Observation{good1, good2, good3})

	dlq := kafkatest.Consume(t, topic+".dlq", len(poison), 30*time.Second)
	byKey := map[string]kafka.Message{}
	for _, m := range dlq {
		byKey[string(m.Key)] = m
	}
	kinds := map[string]float64{}
	for i, p := range poison {
		kinds[p.kind]++
		m, ok := byKey["poison-"+strconv.Itoa(i)]
		if !ok {
			t.Errorf("poison %d (%s) is not in the DLQ", i, p.value)
			continue
		}
		h := func(key string) string { return string(kafkaHeader(m.Headers, key)) }
		if string(m.Value) != p.value {
			t.Errorf("poison %d: DLQ value %q, want the original %q", i, m.Value, p.value)
		}
		if h(KafkaHeaderError) == "" || h(KafkaHeaderErrorKind) != p.kind {
			t.Errorf("poison %d: reason %q kind %q, want a reason and kind %q", i, h(KafkaHeaderError), h(KafkaHeaderErrorKind), p.kind)
		}
		if h(KafkaHeaderSourceTopic) != topic || h(KafkaHeaderSourcePartition) != "0" || h(KafkaHeaderSourceOffset) != strconv.Itoa(i+1) {
			t.Errorf("poison %d: source %s/%s@%s, want %s/0@%d", i, h(KafkaHeaderSourceTopic),
				h(KafkaHeaderSourcePartition), h(KafkaHeaderSourceOffset), topic, i+1)
		}
		if h("origin") != "test" {
			t.Errorf("poison %d: the original header is lost: %v", i, m.Headers)
		}
		t.Logf("poison %d → %s: %s", i, h(KafkaHeaderErrorKind), h(KafkaHeaderError))
	}
	for kind, n := range kinds {
		if got := testutil.ToFloat64(k.metrics.dlq.WithLabelValues(kind)); got != n {
			t.Errorf("DLQ metric %s = %v, want %v", kind, got, n)
		}
	}
}

func TestKafkaIngestRetriesAFailedWrite(t *testing.T) {
	const partitions = 2
	topic := kafkatest.Topic(t, partitions)
	msgs, want := kafkaWorkload(t, 200, "retry")
	kafkatest.Produce(t, topic, msgs...)
	group := randomGroup()

	// The first two writes fail; each time, the test checks that nothing is
	// committed yet before it lets the write answer.
	type attempt struct {
		n     int
		reply chan error
	}
	attempts := make(chan attempt)
	sink := &recordingSink{before: func(n int, _ []Observation) error {
		if n >= 3 {
			return nil
		}
		a := attempt{n, make(chan error)}
		attempts <- a
		return <-a.reply
	}}
	k, _ := runKafkaIngest(t, KafkaConfig{Brokers: kafkatest.Brokers(t), Topic: topic, GroupID: group,
		BatchWait: 200 * time.Millisecond, RetryMin: 20 * time.Millisecond}, sink, projectsUpTo(3))
	for i := range 3 {
		var a attempt
		select {
		case a = <-attempts:
		case <-time.After(60 * time.Second):
			t.Fatalf("write %d did not come", i)
		}
		if c := kafkatest.Committed(t, group, topic, partitions); len(c) != 0 {
			t.Errorf("before write %d succeeded, offsets %v are committed", a.n, c)
		}
		if a.n < 2 {
			a.reply <- errors.New("storage is down")
		} else {
			a.reply <- nil
		}
	}
	waitFor(t, 60*time.Second, "every observation", func() bool { return sink.Len() >= len(want) })
	waitCommitted(t, group, topic, partitions)
	assertSameObservations(t, sink.Stored(), want)

	sink.mu.Lock()
	first := sink.attempts[:3]
	sink.mu.Unlock()
	for i := 1; i < 3; i++ {
		if !slices.EqualFunc(first[i], first[0], sameObservation) {
			t.Errorf("write %d has %d observations, not the same batch as the failed write 0 (%d)", i, len(first[i]), len(first[0]))
		}
	}
	if got := testutil.ToFloat64(k.metrics.retries.WithLabelValues("write")); got != 2 {
		t.Errorf("write retries metric %v, want 2", got)
	}
}

func TestKafkaIngestResumesFromCommittedOffsets(t *testing.T) {
	const partitions = 4
	topic := kafkatest.Topic(t, partitions)
	group := randomGroup()
	cfg := KafkaConfig{Brokers: kafkatest.Brokers(t), Topic: topic, GroupID: group, BatchSize: 300}

	msgsA, wantA := kafkaWorkload(t, 1000, "A")
	kafkatest.Produce(t, topic, msgsA...)
	sink1 := &recordingSink{}
	_, stop1 := runKafkaIngest(t, cfg, sink1, projectsUpTo(3))
	waitFor(t, 60*time.Second, "batch A", func() bool { return sink1.Len() >= len(wantA) })
	waitCommitted(t, group, topic, partitions)
	start := time.Now()
	stop1()
	t.Logf("the first consumer stopped in %v", time.Since(start))
	assertSameObservations(t, sink1.Stored(), wantA)

	msgsB, wantB := kafkaWorkload(t, 1000, "B")
	kafkatest.Produce(t, topic, msgsB...)
	sink2 := &recordingSink{}
	runKafkaIngest(t, cfg, sink2, projectsUpTo(3))
	waitFor(t, 60*time.Second, "batch B", func() bool { return sink2.Len() >= len(wantB) })
	waitCommitted(t, group, topic, partitions)
	assertSameObservations(t, sink2.Stored(), wantB)
}

// TestKafkaIngestAbandonsOnShutdown: a write still failing when the
// context ends leaves the batch uncommitted, and Run returns.
func TestKafkaIngestAbandonsOnShutdown(t *testing.T) {
	topic := kafkatest.Topic(t, 1)
	msgs, want := kafkaWorkload(t, 50, "down")
	kafkatest.Produce(t, topic, msgs...)
	group := randomGroup()
	var calls atomic.Int32
	sink := &recordingSink{before: func(int, []Observation) error {
		calls.Add(1)
		return errors.New("storage is down")
	}}
	cfg := KafkaConfig{Brokers: kafkatest.Brokers(t), Topic: topic, GroupID: group, RetryMin: 10 * time.Millisecond}
	_, stop := runKafkaIngest(t, cfg, sink, projectsUpTo(3))
	waitFor(t, 60*time.Second, "failed writes", func() bool { return calls.Load() >= 3 })
	start := time.Now()
	stop()
	if d := time.Since(start); d > 5*time.Second {
		t.Errorf("Run took %v to return", d)
	}
	if c := kafkatest.Committed(t, group, topic, 1); len(c) != 0 {
		t.Fatalf("offsets %v committed although no write succeeded", c)
	}
	// The next consumer gets everything.
	sink2 := &recordingSink{}
	runKafkaIngest(t, cfg, sink2, projectsUpTo(3))
	waitFor(t, 60*time.Second, "every observation", func() bool { return sink2.Len() >= len(want) })
	waitCommitted(t, group, topic, 1)
	assertSameObservations(t, sink2.Stored(), want)
}

// countingSink stores nothing and counts.
type countingSink struct{ n atomic.Int64 }

func (s *countingSink) Write(_ context.Context, _ Source, obs []Observation) error {
	s.n.Add(int64(len(obs)))
	return nil
}

// BenchmarkKafkaIngest consumes b.N single-observation messages from 4
// partitions into a sink that does nothing; the producing is not timed.
//
//	go test ./pipeline -run '^$' -bench KafkaIngest -benchtime 1000000x
func BenchmarkKafkaIngest(b *testing.B) {
	topic := kafkatest.Topic(b, 4)
	w := kafkatest.Writer(b, topic)
	w.Balancer = &kafka.RoundRobin{}
	base := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	start := time.Now()
	const chunk = 100_000
	msgs := make([]kafka.Message, 0, chunk)
	for i := 0; i < b.N; i += chunk {
		msgs = msgs[:0]
		for j := i; j < min(b.N, i+chunk); j++ {
			v := fmt.Appendf(nil, `{"project_id":%d,"dataPointID":"dp-%d","time":%q,"value":%g}`,
				1+j%3, j%100, base.Add(time.Duration(j)*time.Millisecond).Format(time.RFC3339Nano), float64(j)*0.5)
			msgs = append(msgs, kafka.Message{Value: v})
		}
		if err := w.WriteMessages(context.Background(), msgs...); err != nil {
			b.Fatal(err)
		}
	}
	produced := time.Since(start)

	sink := &countingSink{}
	k, err := NewKafkaIngest(KafkaConfig{Brokers: kafkatest.Brokers(b), Topic: topic, GroupID: randomGroup()},
		sink, projectsUpTo(3), nil, nil)
	if err != nil {
		b.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	b.ResetTimer()
	start = time.Now()
	done := make(chan error, 1)
	go func() { done <- k.Run(ctx) }()
	for sink.n.Load() < int64(b.N) {
		time.Sleep(time.Millisecond)
	}
	elapsed := time.Since(start)
	b.StopTimer()
	cancel()
	if err := <-done; err != nil {
		b.Fatal(err)
	}
	b.ReportMetric(float64(b.N)/elapsed.Seconds(), "msg/s")
	b.ReportMetric(float64(b.N)/produced.Seconds(), "produced-msg/s")
}

// The DLQ topic exists as soon as ingestion runs, before any dead letter:
// it does not wait for the broker to create it on first use. (The
// metadata request asks the broker not to create topics.)
func TestKafkaIngestCreatesItsDLQTopic(t *testing.T) {
	topic := kafkatest.Topic(t, 1)
	dlqExists := func() bool {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		c := &kafka.Client{Addr: kafka.TCP(kafkatest.Brokers(t)...)}
		md, err := c.Metadata(ctx, &kafka.MetadataRequest{Topics: []string{topic + ".dlq"}})
		if err != nil {
			t.Fatal(err)
		}
		return len(md.Topics) == 1 && md.Topics[0].Error == nil && len(md.Topics[0].Partitions) > 0
	}
	if dlqExists() {
		t.Fatal("the DLQ topic exists before ingestion started")
	}
	runKafkaIngest(t, KafkaConfig{Brokers: kafkatest.Brokers(t), Topic: topic, GroupID: randomGroup()}, &recordingSink{}, projectsUpTo(1))
	waitFor(t, 30*time.Second, "the DLQ topic", dlqExists)
}
