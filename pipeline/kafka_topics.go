package pipeline

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/segmentio/kafka-go"
)

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
