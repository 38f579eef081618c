package pipeline

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strconv"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/segmentio/kafka-go"

	"github.com/openbdp/bdp/codec/relay"
)

// DefaultRelayTopic is the Kafka topic of the relay of stored
// observations.
const DefaultRelayTopic = "bdp.stored"

// KafkaRelayConfig configures the relay over Kafka, for the publishing
// side (KafkaRelay) and the consuming one (StartRelayConsumer) alike;
// every node of a cluster has the same Brokers and Topic. Zero values
// take the defaults.
type KafkaRelayConfig struct {
	Brokers  []string // bootstrap addresses, host:port; required
	Topic    string   // default DefaultRelayTopic
	ClientID string   // default "bdp"

	// When the topic is missing, the first node to start creates it with
	// Partitions partitions (default 12) of ReplicationFactor replicas
	// (default -1: the broker's default). One project's messages all go
	// to one partition (keyed by project), which keeps their order; more
	// partitions spread the projects over the brokers.
	Partitions        int
	ReplicationFactor int

	// MaxMessageBytes bounds one message; a larger relay batch goes as
	// several in order (relay.Split). Default 900,000: under the broker's
	// default message.max.bytes (1 MiB) with room for the record around it.
	MaxMessageBytes int

	// WriteTimeout bounds one attempt to write a batch of messages
	// (default 10 s); a Publish makes up to 3.
	WriteTimeout time.Duration
}

func (c *KafkaRelayConfig) fill() error {
	if len(c.Brokers) == 0 || slices.Contains(c.Brokers, "") {
		return errors.New("kafka relay: no brokers, or an empty address")
	}
	if c.Topic == "" {
		c.Topic = DefaultRelayTopic
	}
	if c.ClientID == "" {
		c.ClientID = "bdp"
	}
	if c.Partitions == 0 {
		c.Partitions = 12
	}
	if c.ReplicationFactor == 0 {
		c.ReplicationFactor = -1
	}
	if c.MaxMessageBytes == 0 {
		c.MaxMessageBytes = 900_000
	}
	if c.WriteTimeout == 0 {
		c.WriteTimeout = 10 * time.Second
	}
	if c.Partitions < 1 || c.ReplicationFactor < -1 || c.MaxMessageBytes < 1024 || c.WriteTimeout < 0 {
		return fmt.Errorf("kafka relay: want Partitions >= 1, ReplicationFactor >= -1, MaxMessageBytes >= 1024, WriteTimeout >= 0: %+v", *c)
	}
	return nil
}

// relaySetupTimeout bounds making the topic and finding its partitions'
// leaders and offsets when a node starts.
const relaySetupTimeout = 30 * time.Second

// KafkaRelay is the Relay of a cluster: it publishes each relay batch as
// a message of the relay topic, keyed by project, so that one project's
// batches stay in order on one partition whichever node stored them.
// Publish returns once every broker in sync has the messages (acks all).
type KafkaRelay struct {
	cfg     KafkaRelayConfig
	tr      *kafka.Transport
	w       *kafka.Writer
	metrics *relayPublishMetrics
}

var _ Relay = (*KafkaRelay)(nil)

// NewKafkaRelay validates the configuration, creates the topic if it is
// missing and registers the metrics with reg (none when reg is nil); log
// may be nil. Close it after the batcher that publishes through it has
// stopped.
func NewKafkaRelay(ctx context.Context, cfg KafkaRelayConfig, log *slog.Logger, reg prometheus.Registerer) (*KafkaRelay, error) {
	if err := cfg.fill(); err != nil {
		return nil, err
	}
	k, err := newKafkaRelay(cfg, log, reg)
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithTimeout(ctx, relaySetupTimeout)
	defer cancel()
	// Through the writer's transport: creating the topic refreshes its
	// metadata, which the writer routes by.
	if _, err := ensureRelayTopic(ctx, cfg, k.tr); err != nil {
		_ = k.Close()
		return nil, err
	}
	return k, nil
}

// newKafkaRelay is NewKafkaRelay without the broker: cfg is filled.
func newKafkaRelay(cfg KafkaRelayConfig, log *slog.Logger, reg prometheus.Registerer) (*KafkaRelay, error) {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	log = log.With("component", "kafka relay", "topic", cfg.Topic)
	m, err := newRelayPublishMetrics(reg)
	if err != nil {
		return nil, err
	}
	tr := &kafka.Transport{ClientID: cfg.ClientID, Dial: (&kafka.Dialer{Timeout: 10 * time.Second, DualStack: true}).DialFunc,
		// Fresh metadata (kafka-go's default is 6 s old): a topic made a
		// moment ago has its leaders sooner, a moved leader is found sooner.
		MetadataTTL: time.Second}
	w := &kafka.Writer{
		Addr:         kafka.TCP(cfg.Brokers...),
		Topic:        cfg.Topic,
		Balancer:     &kafka.Hash{}, // the same partition for a project on every node
		RequiredAcks: kafka.RequireAll,
		// One Publish hands over all messages of a flush at once, and the
		// writer sends each partition's as one request: there is nothing
		// to wait for.
		BatchSize:       10_000,
		BatchBytes:      int64(cfg.MaxMessageBytes) + 100_000,
		BatchTimeout:    time.Millisecond,
		WriteTimeout:    cfg.WriteTimeout,
		MaxAttempts:     3,
		WriteBackoffMin: 50 * time.Millisecond,
		WriteBackoffMax: time.Second,
		// The topic is made with its partitions (ensureRelayTopic); one
		// made on first use would have the broker's default, mostly one.
		AllowAutoTopicCreation: false,
		Transport:              tr,
		ErrorLogger: kafka.LoggerFunc(func(msg string, args ...any) {
			log.Warn(fmt.Sprintf(msg, args...), "from", "kafka-go writer")
		}),
	}
	return &KafkaRelay{cfg: cfg, tr: tr, w: w, metrics: m}, nil
}

// Publish writes the batches, each as one message or, when too large, as
// several in order, with one call to the writer, and returns once the
// brokers acknowledged them all.
func (k *KafkaRelay) Publish(ctx context.Context, batches []relay.Batch) error {
	msgs := make([]kafka.Message, 0, len(batches))
	n := 0
	for _, b := range batches {
		parts, err := relay.Split(b, k.cfg.MaxMessageBytes)
		if err != nil {
			return fmt.Errorf("relay batch of project %d: %w", b.ProjectID, err)
		}
		key := strconv.AppendInt(nil, b.ProjectID, 10)
		for _, p := range parts {
			data, err := relay.Marshal(p)
			if err != nil {
				return fmt.Errorf("relay batch of project %d: %w", b.ProjectID, err)
			}
			msgs = append(msgs, kafka.Message{Key: key, Value: data})
		}
		n += b.Observations()
	}
	start := time.Now()
	err := k.w.WriteMessages(ctx, msgs...)
	k.metrics.seconds.Observe(time.Since(start).Seconds())
	if err != nil {
		k.metrics.failures.Inc()
		return fmt.Errorf("publish %d messages to %s: %w", len(msgs), k.cfg.Topic, err)
	}
	k.metrics.messages.Add(float64(len(msgs)))
	k.metrics.observations.Add(float64(n))
	return nil
}

// Close flushes nothing (Publish waits for its messages) and releases the
// connections; a Publish after Close fails.
func (k *KafkaRelay) Close() error {
	err := k.w.Close()
	k.tr.CloseIdleConnections()
	if err != nil {
		return fmt.Errorf("kafka relay: %w", err)
	}
	return nil
}

// ensureRelayTopic creates the topic unless it exists and returns its
// partitions once each has a leader. It asks whether the topic exists
// before creating it, so that a broker that lets this client read but not
// create topics serves a topic an operator made.
func ensureRelayTopic(ctx context.Context, cfg KafkaRelayConfig, tr *kafka.Transport) ([]int, error) {
	c := &kafka.Client{Addr: kafka.TCP(cfg.Brokers...), Transport: tr}
	for created := false; ; {
		meta, err := c.Metadata(ctx, &kafka.MetadataRequest{Topics: []string{cfg.Topic}})
		if err != nil {
			return nil, fmt.Errorf("kafka relay: metadata of %s: %w", cfg.Topic, err)
		}
		var topic kafka.Topic
		if len(meta.Topics) == 1 {
			topic = meta.Topics[0]
		}
		switch {
		case errors.Is(topic.Error, kafka.UnknownTopicOrPartition) && !created:
			res, err := c.CreateTopics(ctx, &kafka.CreateTopicsRequest{Topics: []kafka.TopicConfig{
				{Topic: cfg.Topic, NumPartitions: cfg.Partitions, ReplicationFactor: cfg.ReplicationFactor},
			}})
			if err == nil {
				err = res.Errors[cfg.Topic]
			}
			if err != nil && !errors.Is(err, kafka.TopicAlreadyExists) { // another node was first
				return nil, fmt.Errorf("kafka relay: create topic %s: %w", cfg.Topic, err)
			}
			created = true
			continue
		case topic.Error != nil && !errors.Is(topic.Error, kafka.UnknownTopicOrPartition) && !errors.Is(topic.Error, kafka.LeaderNotAvailable):
			return nil, fmt.Errorf("kafka relay: metadata of %s: %w", cfg.Topic, topic.Error)
		case topic.Error == nil && len(topic.Partitions) > 0 && allLed(topic.Partitions):
			ids := make([]int, len(topic.Partitions))
			for i, p := range topic.Partitions {
				ids[i] = p.ID
			}
			slices.Sort(ids)
			return ids, nil
		}
		// Just created: the partitions have no leader yet.
		if !kafkaSleep(ctx, 100*time.Millisecond) {
			return nil, fmt.Errorf("kafka relay: topic %s has partitions without a leader: %w", cfg.Topic, ctx.Err())
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

type relayPublishMetrics struct {
	messages, observations, failures prometheus.Counter
	seconds                          prometheus.Histogram
}

func newRelayPublishMetrics(reg prometheus.Registerer) (*relayPublishMetrics, error) {
	m := &relayPublishMetrics{
		messages: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "bdp_relay_published_messages_total", Help: "Messages this node published to the relay topic.",
		}),
		observations: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "bdp_relay_published_observations_total", Help: "Stored observations this node published to the relay topic.",
		}),
		failures: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "bdp_relay_publish_failures_total", Help: "Committed batches whose publication to the relay topic failed (their writers were answered with an error).",
		}),
		seconds: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name: "bdp_relay_publish_seconds", Help: "Time to publish one committed batch to the relay topic, until acknowledged.",
			Buckets: prometheus.ExponentialBuckets(0.0005, 2, 16),
		}),
	}
	if reg == nil {
		return m, nil
	}
	for _, c := range []prometheus.Collector{m.messages, m.observations, m.failures, m.seconds} {
		if err := reg.Register(c); err != nil {
			return nil, fmt.Errorf("register relay metrics: %w", err)
		}
	}
	return m, nil
}
