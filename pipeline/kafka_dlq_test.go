package pipeline

import (
	"context"
	"strconv"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/segmentio/kafka-go"

	"github.com/openbdp/bdp/pipeline/kafkatest"
)

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
