// Package kafkatest gives tests a real Kafka broker: the one whose
// bootstrap address is in BDP_TEST_KAFKA_BROKERS (comma-separated), which
// `make test` starts with scripts/kafka.sh. Without it the tests fail;
// they never skip.
package kafkatest

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"net"
	"os"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/segmentio/kafka-go"
)

// EnvBrokers names the environment variable with the brokers.
const EnvBrokers = "BDP_TEST_KAFKA_BROKERS"

// Brokers returns the test brokers, or fails the test when there are none.
func Brokers(t testing.TB) []string {
	t.Helper()
	v := strings.TrimSpace(os.Getenv(EnvBrokers))
	if v == "" {
		t.Fatalf("%s is not set: this test needs a Kafka broker. Run the tests with `make test`, "+
			"or start one with `bash scripts/kafka.sh start /tmp/kt` and run "+
			"`%s=$(cat /tmp/kt/bootstrap) go test ...` (stop it with `bash scripts/kafka.sh stop /tmp/kt`)",
			EnvBrokers, EnvBrokers)
	}
	var bs []string
	for _, b := range strings.Split(v, ",") {
		if b = strings.TrimSpace(b); b != "" {
			bs = append(bs, b)
		}
	}
	return bs
}

var unsafeTopicChars = regexp.MustCompile(`[^a-zA-Z0-9_-]+`)

// Topic creates a topic with the given number of partitions, unique to
// this call, waits until every partition has a leader and returns its
// name. The topic and its ".dlq" companion are deleted when the test ends.
func Topic(t testing.TB, partitions int) string {
	t.Helper()
	brokers := Brokers(t)
	name := unsafeTopicChars.ReplaceAllString(t.Name(), "-")
	if len(name) > 150 {
		name = name[:150]
	}
	suffix := make([]byte, 4)
	_, _ = rand.Read(suffix)
	topic := "test-" + name + "-" + hex.EncodeToString(suffix)

	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := createTopic(ctx, brokers[0], topic, partitions); err != nil {
		t.Fatalf("create topic %s: %v", topic, err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		c := &kafka.Client{Addr: kafka.TCP(brokers...)}
		_, _ = c.DeleteTopics(ctx, &kafka.DeleteTopicsRequest{Topics: []string{topic, topic + ".dlq"}})
	})
	return topic
}

func createTopic(ctx context.Context, broker, topic string, partitions int) error {
	var d kafka.Dialer
	conn, err := d.DialContext(ctx, "tcp", broker)
	if err != nil {
		return err
	}
	defer conn.Close()
	// Topics are created through the controller.
	ctrl, err := conn.Controller()
	if err != nil {
		return err
	}
	cc, err := d.DialContext(ctx, "tcp", net.JoinHostPort(ctrl.Host, strconv.Itoa(ctrl.Port)))
	if err != nil {
		return err
	}
	defer cc.Close()
	if err := cc.CreateTopics(kafka.TopicConfig{Topic: topic, NumPartitions: partitions, ReplicationFactor: 1}); err != nil {
		return err
	}
	for {
		ps, err := conn.ReadPartitions(topic)
		if err == nil && len(ps) == partitions && allLed(ps) {
			return nil
		}
		select {
		case <-ctx.Done():
			if err == nil {
				err = errors.New("partitions without a leader")
			}
			return errors.Join(ctx.Err(), err)
		case <-time.After(20 * time.Millisecond):
		}
	}
}

func allLed(ps []kafka.Partition) bool {
	for _, p := range ps {
		if p.Leader.Host == "" {
			return false
		}
	}
	return true
}

// Writer returns a batching producer for topic (RequiredAcks all; one
// WriteMessages call with many messages sends them in large batches),
// closed when the test ends.
func Writer(t testing.TB, topic string) *kafka.Writer {
	t.Helper()
	// An own transport: kafka-go's shared one serves metadata from a cache
	// that does not know the topics created since its last refresh.
	tr := &kafka.Transport{}
	w := &kafka.Writer{
		Addr:         kafka.TCP(Brokers(t)...),
		Topic:        topic,
		Balancer:     &kafka.Hash{},
		RequiredAcks: kafka.RequireAll,
		BatchSize:    10_000,
		BatchBytes:   900 << 10, // under the broker's 1 MiB message.max.bytes
		BatchTimeout: time.Millisecond,
		Transport:    tr,
	}
	t.Cleanup(func() {
		_ = w.Close()
		tr.CloseIdleConnections()
	})
	return w
}

// Produce writes msgs to topic in one batched call, partitioned by key
// (round robin for messages without a key), or fails the test.
func Produce(t testing.TB, topic string, msgs ...kafka.Message) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if err := Writer(t, topic).WriteMessages(ctx, msgs...); err != nil {
		t.Fatalf("produce %d messages to %s: %v", len(msgs), topic, err)
	}
}

// Consume reads n messages of every partition of topic with a fresh
// consumer group, or fails the test after timeout.
func Consume(t testing.TB, topic string, n int, timeout time.Duration) []kafka.Message {
	t.Helper()
	suffix := make([]byte, 4)
	_, _ = rand.Read(suffix)
	r := kafka.NewReader(kafka.ReaderConfig{
		Brokers:          Brokers(t),
		GroupID:          "kafkatest-" + hex.EncodeToString(suffix),
		Topic:            topic,
		StartOffset:      kafka.FirstOffset,
		MaxWait:          50 * time.Millisecond,
		JoinGroupBackoff: time.Second,
	})
	defer r.Close()
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	var out []kafka.Message
	for len(out) < n {
		m, err := r.FetchMessage(ctx)
		if err != nil {
			t.Fatalf("consume %s: got %d of %d messages: %v", topic, len(out), n, err)
		}
		out = append(out, m)
	}
	return out
}

// Committed returns the offsets that group committed on topic, by
// partition; partitions without a commit are absent.
func Committed(t testing.TB, group, topic string, partitions int) map[int]int64 {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	ps := make([]int, partitions)
	for i := range ps {
		ps[i] = i
	}
	c := &kafka.Client{Addr: kafka.TCP(Brokers(t)...)}
	res, err := c.OffsetFetch(ctx, &kafka.OffsetFetchRequest{GroupID: group, Topics: map[string][]int{topic: ps}})
	if err == nil {
		err = res.Error
	}
	if err != nil {
		t.Fatalf("committed offsets of %s on %s: %v", group, topic, err)
	}
	out := map[int]int64{}
	for _, p := range res.Topics[topic] {
		if p.Error != nil {
			t.Fatalf("committed offset of %s on %s/%d: %v", group, topic, p.Partition, p.Error)
		}
		if p.CommittedOffset >= 0 {
			out[p.Partition] = p.CommittedOffset
		}
	}
	return out
}

// EndOffsets returns the offset after the last message of each partition
// of topic that holds any.
func EndOffsets(t testing.TB, topic string, partitions int) map[int]int64 {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	reqs := make([]kafka.OffsetRequest, partitions)
	for i := range reqs {
		reqs[i] = kafka.LastOffsetOf(i)
	}
	c := &kafka.Client{Addr: kafka.TCP(Brokers(t)...)}
	res, err := c.ListOffsets(ctx, &kafka.ListOffsetsRequest{Topics: map[string][]kafka.OffsetRequest{topic: reqs}})
	if err != nil {
		t.Fatalf("end offsets of %s: %v", topic, err)
	}
	out := map[int]int64{}
	for _, p := range res.Topics[topic] {
		if p.Error != nil {
			t.Fatalf("end offset of %s/%d: %v", topic, p.Partition, p.Error)
		}
		if p.LastOffset > 0 {
			out[p.Partition] = p.LastOffset
		}
	}
	return out
}
