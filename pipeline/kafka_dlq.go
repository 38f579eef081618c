package pipeline

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/segmentio/kafka-go"
)

// The dead-letter side of the Kafka ingest: the DLQ topic, its writer, and
// the messages it gets (the original value and headers, plus why).

// ensureDLQTopic creates the dead-letter topic unless it exists, with the
// broker's default partitions and replication, so that dead letters do
// not depend on the broker creating topics on first use (many production
// clusters turn that off). A broker that refuses (no permission, say) is
// reported by the caller and does not stop ingestion: the topic may have
// been made by an operator, or be created on first use after all.
func (k *KafkaIngest) ensureDLQTopic(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	c := &kafka.Client{Addr: kafka.TCP(k.cfg.Brokers...), Transport: &kafka.Transport{ClientID: k.cfg.ClientID}}
	res, err := c.CreateTopics(ctx, &kafka.CreateTopicsRequest{Topics: []kafka.TopicConfig{
		{Topic: k.cfg.DLQTopic, NumPartitions: -1, ReplicationFactor: -1},
	}})
	if err != nil {
		return fmt.Errorf("create DLQ topic %s: %w", k.cfg.DLQTopic, err)
	}
	if err := res.Errors[k.cfg.DLQTopic]; err != nil && !errors.Is(err, kafka.TopicAlreadyExists) {
		return fmt.Errorf("create DLQ topic %s: %w", k.cfg.DLQTopic, err)
	}
	return nil
}

// kafkaMaxDLQValue bounds the value of a dead-lettered message so that it
// fits the broker's default message size (1 MiB) with its headers.
const kafkaMaxDLQValue = 900_000

func (k *KafkaIngest) dlqWriter() *kafka.Writer {
	return &kafka.Writer{
		Addr:                   kafka.TCP(k.cfg.Brokers...),
		Topic:                  k.cfg.DLQTopic,
		Balancer:               &kafka.Hash{},
		RequiredAcks:           kafka.RequireAll,
		BatchSize:              k.cfg.BatchSize,
		BatchBytes:             1_000_000,
		BatchTimeout:           time.Millisecond, // a whole batch is handed over at once
		WriteTimeout:           10 * time.Second,
		MaxAttempts:            3,
		AllowAutoTopicCreation: true,
		Transport:              &kafka.Transport{ClientID: k.cfg.ClientID, Dial: (&kafka.Dialer{Timeout: 10 * time.Second, DualStack: true}).DialFunc},
		ErrorLogger: kafka.LoggerFunc(func(msg string, args ...any) {
			k.log.Warn(fmt.Sprintf(msg, args...), "from", "kafka-go writer")
		}),
	}
}

func (k *KafkaIngest) dlqMessage(m kafka.Message, it *kafkaItem) kafka.Message {
	reason := it.reason
	if len(reason) > 1024 {
		reason = reason[:1024]
	}
	h := make([]kafka.Header, 0, len(m.Headers)+6)
	h = append(h, m.Headers...)
	h = append(h,
		kafka.Header{Key: KafkaHeaderError, Value: []byte(reason)},
		kafka.Header{Key: KafkaHeaderErrorKind, Value: []byte(it.kind)},
		kafka.Header{Key: KafkaHeaderSourceTopic, Value: []byte(m.Topic)},
		kafka.Header{Key: KafkaHeaderSourcePartition, Value: strconv.AppendInt(nil, int64(m.Partition), 10)},
		kafka.Header{Key: KafkaHeaderSourceOffset, Value: strconv.AppendInt(nil, m.Offset, 10)},
	)
	key, value := m.Key, m.Value
	if len(key)+len(value) > kafkaMaxDLQValue {
		// Too large for the DLQ topic with the headers: keep the start.
		key = key[:min(len(key), 64<<10)]
		value = value[:min(len(value), kafkaMaxDLQValue-len(key))]
		h = append(h, kafka.Header{Key: KafkaHeaderTruncated,
			Value: fmt.Appendf(nil, "key %d bytes, value %d bytes", len(m.Key), len(m.Value))})
	}
	return kafka.Message{Key: key, Value: value, Headers: h, Time: m.Time}
}

// writeDLQ writes msgs to the DLQ topic in one call and returns the ones
// that failed.
func (k *KafkaIngest) writeDLQ(ctx context.Context, w *kafka.Writer, msgs []kafka.Message) ([]kafka.Message, error) {
	err := w.WriteMessages(ctx, msgs...)
	var failed []kafka.Message
	var werrs kafka.WriteErrors
	switch {
	case err == nil:
	case errors.As(err, &werrs) && len(werrs) == len(msgs):
		for i, e := range werrs {
			if e != nil {
				failed = append(failed, msgs[i])
			}
		}
	default:
		failed = msgs
	}
	for i := range msgs {
		if err == nil || (werrs != nil && werrs[i] == nil) {
			k.metrics.dlq.WithLabelValues(string(kafkaHeader(msgs[i].Headers, KafkaHeaderErrorKind))).Inc()
		}
	}
	if err != nil {
		return failed, fmt.Errorf("writing %d of %d messages to %s: %w", len(failed), len(msgs), k.cfg.DLQTopic, err)
	}
	return nil, nil
}

// kafkaHeader returns the value of the last header named key.
func kafkaHeader(hs []kafka.Header, key string) []byte {
	for i := len(hs) - 1; i >= 0; i-- {
		if hs[i].Key == key {
			return hs[i].Value
		}
	}
	return nil
}
