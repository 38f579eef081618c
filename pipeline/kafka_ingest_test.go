package pipeline

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/segmentio/kafka-go"

	"github.com/openbdp/bdp/pipeline/kafkatest"
)

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
