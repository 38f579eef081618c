package pipeline

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/segmentio/kafka-go"

	"github.com/openbdp/bdp/codec/relay"
)

// RelayConsumer delivers every node's stored observations, as the relay
// topic has them, into this node's router (DeliverRelayed). It reads all
// partitions without a consumer group, since every node needs
// everything, and starts at the newest offset: a node that (re)starts
// catches its actors up from the store, so it needs no replay. It reads
// the partitions the topic had when it started; partitions added to the
// topic later are not read (and would move projects between partitions,
// out of order), so the partition count is fixed once a cluster runs.
type RelayConsumer struct {
	cfg     KafkaRelayConfig
	router  *Router
	log     *slog.Logger
	metrics *relayConsumeMetrics
	readers []*kafka.Reader
	done    chan struct{}
}

// StartRelayConsumer positions a reader on every partition of the relay
// topic (created if missing) at its newest offset and returns once they
// all are: every message published after it returns reaches the router,
// none published before does. So a node starts its actors after it. It
// then consumes until ctx ends; Wait returns once it has stopped. log may
// be nil; the metrics go to reg (none when reg is nil).
func StartRelayConsumer(ctx context.Context, cfg KafkaRelayConfig, router *Router, log *slog.Logger, reg prometheus.Registerer) (*RelayConsumer, error) {
	if err := cfg.fill(); err != nil {
		return nil, err
	}
	if router == nil {
		return nil, errors.New("kafka relay: a router is required")
	}
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	log = log.With("component", "kafka relay consumer", "topic", cfg.Topic)
	m, err := newRelayConsumeMetrics(reg)
	if err != nil {
		return nil, err
	}
	offsets, err := relayEndOffsets(ctx, cfg)
	if err != nil {
		return nil, err
	}
	c := &RelayConsumer{cfg: cfg, router: router, log: log, metrics: m, done: make(chan struct{})}
	dialer := &kafka.Dialer{ClientID: cfg.ClientID, Timeout: 10 * time.Second, DualStack: true}
	for _, p := range offsets {
		r := kafka.NewReader(kafka.ReaderConfig{
			Brokers:   cfg.Brokers,
			Topic:     cfg.Topic,
			Partition: p.partition,
			Dialer:    dialer,
			MinBytes:  1, // a message goes out as soon as it is there
			MaxBytes:  10 << 20,
			MaxWait:   time.Second,
			ErrorLogger: kafka.LoggerFunc(func(msg string, args ...any) {
				log.Warn(fmt.Sprintf(msg, args...), "from", "kafka-go reader")
			}),
		})
		// An absolute offset, not kafka.LastOffset, which the reader would
		// resolve only at its first fetch: a message published in between
		// would be lost to this node.
		if err := r.SetOffset(p.offset); err != nil {
			c.readers = append(c.readers, r)
			c.close()
			return nil, fmt.Errorf("kafka relay: position partition %d: %w", p.partition, err)
		}
		c.readers = append(c.readers, r)
	}
	log.Info("consuming", "brokers", cfg.Brokers, "partitions", len(offsets))
	go c.run(ctx)
	return c, nil
}

// Wait returns once the consumer has stopped, after its context ended:
// its goroutines have returned and its readers are closed.
func (c *RelayConsumer) Wait() { <-c.done }

type partitionOffset struct {
	partition int
	offset    int64
}

// relayEndOffsets makes sure the topic exists and returns the end offset
// of each of its partitions, the offset its next message will have.
func relayEndOffsets(ctx context.Context, cfg KafkaRelayConfig) ([]partitionOffset, error) {
	ctx, cancel := context.WithTimeout(ctx, relaySetupTimeout)
	defer cancel()
	// A transport of its own, whose metadata is fresh: the shared one's
	// may not know a topic made a moment ago.
	tr := &kafka.Transport{ClientID: cfg.ClientID, MetadataTTL: time.Second,
		Dial: (&kafka.Dialer{Timeout: 10 * time.Second, DualStack: true}).DialFunc}
	defer tr.CloseIdleConnections()
	partitions, err := ensureRelayTopic(ctx, cfg, tr)
	if err != nil {
		return nil, err
	}
	reqs := make([]kafka.OffsetRequest, len(partitions))
	for i, p := range partitions {
		reqs[i] = kafka.LastOffsetOf(p)
	}
	c := &kafka.Client{Addr: kafka.TCP(cfg.Brokers...), Transport: tr}
	for {
		res, err := c.ListOffsets(ctx, &kafka.ListOffsetsRequest{Topics: map[string][]kafka.OffsetRequest{cfg.Topic: reqs}})
		if err == nil {
			out := make([]partitionOffset, 0, len(partitions))
			for _, p := range res.Topics[cfg.Topic] {
				if err = p.Error; err != nil {
					break
				}
				out = append(out, partitionOffset{p.Partition, p.LastOffset})
			}
			if err == nil && len(out) != len(partitions) {
				err = fmt.Errorf("offsets of %d partitions, want %d", len(out), len(partitions))
			}
			if err == nil {
				return out, nil
			}
		}
		// A leader may just have moved; try again until the setup times out.
		if !kafkaSleep(ctx, 100*time.Millisecond) {
			return nil, fmt.Errorf("kafka relay: end offsets of %s: %w", cfg.Topic, err)
		}
	}
}

// run fetches with one goroutine per partition and delivers with one:
// route is called from one goroutine, so subscribers never get two
// deliveries at once, and each partition's messages, among them each
// project's, keep their order.
func (c *RelayConsumer) run(ctx context.Context) {
	defer close(c.done)
	defer c.close()
	msgs := make(chan kafka.Message, 64)
	var fetchers sync.WaitGroup
	for _, r := range c.readers {
		fetchers.Go(func() { c.fetch(ctx, r, msgs) })
	}
	fetched := make(chan struct{})
	go func() {
		defer close(fetched)
		fetchers.Wait()
		close(msgs)
	}()
	var lags partitionLags
	for m := range msgs {
		lags.fetched(m, time.Now())
		c.metrics.lag.Set(float64(lags.total(time.Now())))
		if ctx.Err() == nil {
			c.deliver(m)
		}
	}
	<-fetched
	c.log.Info("stopped")
}

// fetch reads one partition until ctx ends. The reader retries by
// itself; what it reports is logged and the fetch goes on.
func (c *RelayConsumer) fetch(ctx context.Context, r *kafka.Reader, msgs chan<- kafka.Message) {
	backoff := 100 * time.Millisecond
	for {
		m, err := r.ReadMessage(ctx) // without a group, nothing to commit
		if err != nil {
			if ctx.Err() != nil || errors.Is(err, io.EOF) {
				return
			}
			c.log.Warn("fetching", "partition", r.Config().Partition, "err", err, "retry_in", backoff)
			if !kafkaSleep(ctx, backoff) {
				return
			}
			backoff = min(2*backoff, 5*time.Second)
			continue
		}
		backoff = 100 * time.Millisecond
		select {
		case msgs <- m:
		case <-ctx.Done():
			return
		}
	}
}

// deliver decodes one message into the router. A message that does not
// decode, which no node of this release sends, is counted and skipped.
func (c *RelayConsumer) deliver(m kafka.Message) {
	b, err := relay.Unmarshal(m.Value)
	if err != nil {
		c.metrics.malformed.Inc()
		c.log.Error("a relayed message does not decode; skipped", "partition", m.Partition, "offset", m.Offset, "err", err)
		return
	}
	c.router.DeliverRelayed(b)
	c.metrics.messages.Inc()
	c.metrics.observations.Add(float64(b.Observations()))
}

func (c *RelayConsumer) close() {
	for _, r := range c.readers {
		if err := r.Close(); err != nil {
			c.log.Warn("closing a reader", "err", err)
		}
	}
}

type relayConsumeMetrics struct {
	messages, observations, malformed prometheus.Counter
	lag                               prometheus.Gauge
}

func newRelayConsumeMetrics(reg prometheus.Registerer) (*relayConsumeMetrics, error) {
	m := &relayConsumeMetrics{
		messages: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "bdp_relay_received_messages_total", Help: "Messages of the relay topic delivered into this node's router.",
		}),
		observations: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "bdp_relay_received_observations_total", Help: "Stored observations (of every node) delivered into this node's router through the relay topic.",
		}),
		malformed: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "bdp_relay_malformed_messages_total", Help: "Messages of the relay topic that did not decode and were skipped.",
		}),
		lag: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "bdp_relay_consumer_lag", Help: "Messages of the relay topic not yet fetched by this node, summed over its partitions.",
		}),
	}
	if reg == nil {
		return m, nil
	}
	for _, c := range []prometheus.Collector{m.messages, m.observations, m.malformed, m.lag} {
		if err := reg.Register(c); err != nil {
			return nil, fmt.Errorf("register relay metrics: %w", err)
		}
	}
	return m, nil
}
