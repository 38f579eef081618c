package pipeline

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/segmentio/kafka-go"

	"github.com/openbdp/bdp/codec"
)

// The Kafka defaults (decisions.md 9).
const (
	DefaultKafkaTopic   = "bdp.observations"
	DefaultKafkaGroupID = "bdp"
)

// Headers of a dead-lettered message, besides the original ones.
const (
	KafkaHeaderError           = "bdp-error"            // why the message was refused
	KafkaHeaderErrorKind       = "bdp-error-kind"       // malformed, invalid or unknown_project
	KafkaHeaderSourceTopic     = "bdp-source-topic"     // where it was read
	KafkaHeaderSourcePartition = "bdp-source-partition" // decimal
	KafkaHeaderSourceOffset    = "bdp-source-offset"    // decimal
	// KafkaHeaderTruncated marks a message cut to fit the DLQ topic and
	// gives the original sizes.
	KafkaHeaderTruncated = "bdp-truncated"
)

// Kinds of refused messages, the values of KafkaHeaderErrorKind and of the
// reason label of bdp_kafka_dlq_messages_total.
const (
	KafkaMalformed      = string(codec.Malformed) // not JSON, or not the shape of an observation
	KafkaInvalid        = string(codec.Invalid)   // well-formed, but Observation.Validate refuses it
	KafkaUnknownProject = "unknown_project"       // its project does not exist
)

// KafkaConfig configures the Kafka ingestion. Zero values take the
// defaults.
type KafkaConfig struct {
	Brokers []string // bootstrap addresses, host:port; required
	Topic   string   // default DefaultKafkaTopic
	GroupID string   // consumer group; default DefaultKafkaGroupID
	// DLQTopic receives the messages that cannot be ingested; default
	// Topic + ".dlq".
	DLQTopic string
	ClientID string // default "bdp"

	// A batch is stored (one Sink.Write), dead-lettered and committed
	// once it holds BatchSize messages or BatchSize observations (a
	// message is never split), or BatchWait after its first message.
	// Large batches matter: one Write is one transaction, and at 10,000
	// the fixed cost per batch held ingestion to 0.77 of a raw COPY; at
	// 50,000 it reaches 0.83-0.98 (bdp-bench ingest).
	BatchSize int           // default 50,000
	BatchWait time.Duration // default 20 ms

	// Fetching: each fetch waits up to MaxWait for MinBytes and returns at
	// most MaxBytes per partition; up to QueueCapacity fetched messages
	// wait for the batch loop.
	MinBytes      int           // default 1
	MaxBytes      int           // default 10 MiB
	MaxWait       time.Duration // default 50 ms
	QueueCapacity int           // default 5,000 messages (bounds memory: a gateway message may hold hundreds of observations)

	// A failed step (resolving projects, Sink.Write, the DLQ write, the
	// commit) is retried with a backoff doubling from RetryMin to RetryMax
	// until it succeeds or the context ends.
	RetryMin time.Duration // default 100 ms
	RetryMax time.Duration // default 5 s
}

func (c *KafkaConfig) fill() error {
	if len(c.Brokers) == 0 {
		return errors.New("kafka: no brokers")
	}
	for _, b := range c.Brokers {
		if b == "" {
			return errors.New("kafka: empty broker address")
		}
	}
	if c.Topic == "" {
		c.Topic = DefaultKafkaTopic
	}
	if c.GroupID == "" {
		c.GroupID = DefaultKafkaGroupID
	}
	if c.DLQTopic == "" {
		c.DLQTopic = c.Topic + ".dlq"
	}
	if c.DLQTopic == c.Topic {
		return fmt.Errorf("kafka: the DLQ topic must differ from the topic %q", c.Topic)
	}
	if c.ClientID == "" {
		c.ClientID = "bdp"
	}
	if c.BatchSize == 0 {
		c.BatchSize = 50_000
	}
	if c.BatchWait == 0 {
		c.BatchWait = 20 * time.Millisecond
	}
	if c.MinBytes == 0 {
		c.MinBytes = 1
	}
	if c.MaxBytes == 0 {
		c.MaxBytes = 10 << 20
	}
	if c.MaxWait == 0 {
		c.MaxWait = 50 * time.Millisecond
	}
	if c.QueueCapacity == 0 {
		c.QueueCapacity = 5_000
	}
	if c.RetryMin == 0 {
		c.RetryMin = 100 * time.Millisecond
	}
	if c.RetryMax == 0 {
		c.RetryMax = 5 * time.Second
	}
	switch {
	case c.BatchSize < 1, c.BatchWait < 0, c.QueueCapacity < 1:
		return fmt.Errorf("kafka: BatchSize and QueueCapacity must be positive and BatchWait not negative")
	case c.MinBytes < 1, c.MaxBytes < c.MinBytes, c.MaxWait < time.Millisecond:
		return fmt.Errorf("kafka: want 1 <= MinBytes <= MaxBytes and MaxWait >= 1ms")
	case c.RetryMin <= 0, c.RetryMax < c.RetryMin:
		return fmt.Errorf("kafka: want 0 < RetryMin <= RetryMax")
	}
	return nil
}

// ProjectExists answers whether a project exists; an error is retried.
type ProjectExists func(ctx context.Context, projectID int64) (bool, error)

// KafkaIngest consumes observations from a Kafka topic with a consumer
// group and writes them to a Sink (decisions.md 9). A message is a JSON
// object {"project_id", "dataPointID", "time" (RFC 3339), "value"} or a
// JSON array of those; its key is not used. Delivery is at least once:
// the offsets of a batch are committed only after Sink.Write returned nil
// for its observations and its refused messages are in the DLQ topic, so
// nothing acknowledged is lost; after a crash or a rebalance the
// uncommitted messages come again (storing them twice is idempotent,
// decisions.md 4). A message that cannot be ingested goes to the DLQ topic
// with its key, value and headers and the headers KafkaHeader*, and never
// holds up its partition.
type KafkaIngest struct {
	cfg     KafkaConfig
	sink    Sink
	exists  ProjectExists
	log     *slog.Logger
	metrics *kafkaMetrics
}

// NewKafkaIngest validates the configuration and registers the metrics
// with reg (none when reg is nil). exists tells whether a project exists;
// log may be nil. Call Run to consume.
func NewKafkaIngest(cfg KafkaConfig, sink Sink, exists ProjectExists, log *slog.Logger, reg prometheus.Registerer) (*KafkaIngest, error) {
	if err := cfg.fill(); err != nil {
		return nil, err
	}
	if sink == nil || exists == nil {
		return nil, errors.New("kafka: a sink and a project lookup are required")
	}
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	log = log.With("component", "kafka", "topic", cfg.Topic, "group", cfg.GroupID)
	k := &KafkaIngest{cfg: cfg, sink: sink, exists: exists, log: log}
	rc := k.readerConfig()
	if err := rc.Validate(); err != nil {
		return nil, fmt.Errorf("kafka: %w", err)
	}
	var err error
	if k.metrics, err = newKafkaMetrics(reg); err != nil {
		return nil, err
	}
	return k, nil
}

// Config returns the configuration with the defaults filled in.
func (k *KafkaIngest) Config() KafkaConfig { return k.cfg }

// Run joins the consumer group and ingests until ctx ends. One goroutine
// fetches and decodes the next batch while another stores, dead-letters
// and commits the previous one, in order. When ctx ends Run abandons,
// uncommitted, the batch being gathered and the one being delivered unless
// its Sink.Write already returned nil (so the next consumer gets them
// again), leaves the group and returns nil. Run returns an error only when
// the reader stops by itself.
func (k *KafkaIngest) Run(ctx context.Context) error {
	if err := k.ensureDLQTopic(ctx); err != nil {
		k.log.Warn("the DLQ topic could not be made; dead letters rely on the broker creating it", "err", err)
	}
	r := kafka.NewReader(k.readerConfig())
	w := k.dlqWriter()
	k.log.Info("consuming", "brokers", k.cfg.Brokers, "dlq", k.cfg.DLQTopic)

	batches := make(chan *kafkaBatch, 1)
	delivered := make(chan struct{})
	go func() {
		defer close(delivered)
		for b := range batches {
			if ctx.Err() == nil {
				k.deliver(ctx, r, w, b)
			}
		}
	}()
	err := k.gatherLoop(ctx, r, batches)
	close(batches)
	<-delivered
	if cerr := w.Close(); cerr != nil {
		k.log.Warn("closing the DLQ writer", "err", cerr)
	}
	w.Transport.(*kafka.Transport).CloseIdleConnections()
	if cerr := r.Close(); cerr != nil {
		k.log.Warn("closing the reader", "err", cerr)
	}
	if err == nil {
		k.log.Info("stopped")
	}
	return err
}

// gatherLoop hands batches to the delivering goroutine until ctx ends.
func (k *KafkaIngest) gatherLoop(ctx context.Context, r *kafka.Reader, batches chan<- *kafkaBatch) error {
	backoff := k.cfg.RetryMin
	size := 64
	var lags partitionLags
	for {
		b := newKafkaBatch(size)
		err := k.gather(ctx, r, b)
		for _, m := range b.msgs {
			lags.fetched(m, time.Now())
		}
		k.metrics.lag.Set(float64(lags.total(time.Now())))
		if len(b.msgs) > 0 && ctx.Err() == nil {
			size = max(64, len(b.msgs)) // the next batch is likely alike
			select {
			case batches <- b:
			case <-ctx.Done():
			}
		}
		if ctx.Err() != nil {
			return nil
		}
		if err == nil {
			backoff = k.cfg.RetryMin
			continue
		}
		if errors.Is(err, io.EOF) {
			return fmt.Errorf("kafka: the reader stopped: %w", err)
		}
		k.log.Warn("fetching", "err", err, "retry_in", backoff)
		if !kafkaSleep(ctx, backoff) {
			return nil
		}
		backoff = min(2*backoff, k.cfg.RetryMax)
	}
}

func (k *KafkaIngest) readerConfig() kafka.ReaderConfig {
	c := kafka.ReaderConfig{
		Brokers:               k.cfg.Brokers,
		GroupID:               k.cfg.GroupID,
		Topic:                 k.cfg.Topic,
		Dialer:                &kafka.Dialer{ClientID: k.cfg.ClientID, Timeout: 10 * time.Second, DualStack: true},
		QueueCapacity:         k.cfg.QueueCapacity,
		MinBytes:              k.cfg.MinBytes,
		MaxBytes:              k.cfg.MaxBytes,
		MaxWait:               k.cfg.MaxWait,
		CommitInterval:        0, // CommitMessages commits synchronously
		StartOffset:           kafka.FirstOffset,
		WatchPartitionChanges: true,
		// kafka-go waits 5 s by default before joining again, e.g. while a
		// new cluster creates its offsets topic.
		JoinGroupBackoff: time.Second,
		// A node that dies (kill -9) leaves the group when its session
		// times out; its partitions then move to the others. kafka-go's
		// 30 s default stalled them that long; 6 s is the broker's least
		// (group.min.session.timeout.ms), with a heartbeat every 2 s.
		SessionTimeout:    6 * time.Second,
		HeartbeatInterval: 2 * time.Second,
		IsolationLevel:    kafka.ReadCommitted,
		ErrorLogger: kafka.LoggerFunc(func(msg string, args ...any) {
			k.log.Warn(fmt.Sprintf(msg, args...), "from", "kafka-go")
		}),
	}
	if k.log.Enabled(context.Background(), slog.LevelDebug) {
		c.Logger = kafka.LoggerFunc(func(msg string, args ...any) {
			k.log.Debug(fmt.Sprintf(msg, args...), "from", "kafka-go")
		})
	}
	return c
}

// kafkaBatch is what one round of gather and deliver handles.
type kafkaBatch struct {
	msgs     []kafka.Message
	items    []kafkaItem   // one per message
	obs      []Observation // of all messages that decoded
	dec      kafkaDecoder
	projects map[int64]bool
	last     map[int]int // partition → index in msgs of its highest offset
}

// kafkaItem is one message's outcome: its observations are obs[lo:hi],
// or it goes to the DLQ when kind is set.
type kafkaItem struct {
	lo, hi int
	kind   string
	reason string
}

// newKafkaBatch makes a batch for about n messages. Each batch is new:
// the sink may keep the observations of the last one after Write returns
// (the Batcher routes them after answering).
func newKafkaBatch(n int) *kafkaBatch {
	return &kafkaBatch{
		msgs:     make([]kafka.Message, 0, n),
		items:    make([]kafkaItem, 0, n),
		obs:      make([]Observation, 0, n),
		projects: map[int64]bool{},
		last:     map[int]int{},
	}
}

func (b *kafkaBatch) add(m kafka.Message) {
	i := len(b.msgs)
	b.msgs = append(b.msgs, m)
	if j, ok := b.last[m.Partition]; !ok || b.msgs[j].Offset < m.Offset {
		b.last[m.Partition] = i
	}
	lo := len(b.obs)
	var kind string
	var err error
	b.obs, kind, err = b.dec.decode(m.Value, b.obs)
	if err != nil {
		b.items = append(b.items, kafkaItem{lo: lo, hi: lo, kind: kind, reason: err.Error()})
		return
	}
	for _, o := range b.obs[lo:] {
		b.projects[o.ProjectID] = false
	}
	b.items = append(b.items, kafkaItem{lo: lo, hi: len(b.obs)})
}

// gather fetches and decodes messages into b until it is full, BatchWait
// passed since its first message, or fetching fails.
func (k *KafkaIngest) gather(ctx context.Context, r *kafka.Reader, b *kafkaBatch) error {
	m, err := r.FetchMessage(ctx)
	if err != nil {
		return err
	}
	k.metrics.consumed.Inc()
	b.add(m)
	wctx, cancel := context.WithTimeout(ctx, k.cfg.BatchWait)
	defer cancel()
	for len(b.msgs) < k.cfg.BatchSize && len(b.obs) < k.cfg.BatchSize {
		m, err := r.FetchMessage(wctx)
		if err != nil {
			if ctx.Err() == nil && wctx.Err() != nil {
				return nil // BatchWait is over
			}
			return err
		}
		k.metrics.consumed.Inc()
		b.add(m)
	}
	return nil
}

// deliver resolves, stores, dead-letters and commits b, retrying each
// failed step until it succeeds or ctx ends.
func (k *KafkaIngest) deliver(ctx context.Context, r *kafka.Reader, w *kafka.Writer, b *kafkaBatch) {
	var (
		resolved, written bool
		obs               []Observation
		dlq               []kafka.Message
		backoff           = k.cfg.RetryMin
	)
	retry := func(step string, err error) bool {
		if ctx.Err() != nil {
			k.log.Info("batch abandoned uncommitted", "step", step, "messages", len(b.msgs))
			return false
		}
		k.metrics.retries.WithLabelValues(step).Inc()
		k.log.Warn("batch step failed, retrying", "step", step, "err", err, "messages", len(b.msgs), "retry_in", backoff)
		if !kafkaSleep(ctx, backoff) {
			k.log.Info("batch abandoned uncommitted", "step", step, "messages", len(b.msgs))
			return false
		}
		backoff = min(2*backoff, k.cfg.RetryMax)
		return true
	}

	for !resolved {
		err := k.resolve(ctx, b)
		if err == nil {
			obs, dlq = k.split(b)
			resolved = true
		} else if !retry("resolve", err) {
			return
		}
	}
	for !written && len(obs) > 0 {
		start := time.Now()
		err := k.sink.Write(ctx, SourceKafka, obs)
		k.metrics.writeSeconds.Observe(time.Since(start).Seconds())
		if err == nil {
			k.metrics.written.Add(float64(len(obs)))
			written = true
		} else if !retry("write", err) {
			return
		}
	}
	for len(dlq) > 0 {
		var err error
		dlq, err = k.writeDLQ(ctx, w, dlq)
		if err != nil && !retry("dlq", err) {
			return
		}
	}
	// Stored: commit even when ctx ends now, so that the next consumer
	// does not get the batch again.
	commits := make([]kafka.Message, 0, len(b.last))
	for _, i := range b.last {
		commits = append(commits, b.msgs[i])
	}
	for {
		cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
		err := r.CommitMessages(cctx, commits...)
		cancel()
		if err == nil {
			return
		}
		if !retry("commit", err) {
			return
		}
	}
}

// resolve asks which of the batch's projects exist.
func (k *KafkaIngest) resolve(ctx context.Context, b *kafkaBatch) error {
	for id, known := range b.projects {
		if known {
			continue
		}
		ok, err := k.exists(ctx, id)
		if err != nil {
			return fmt.Errorf("looking up project %d: %w", id, err)
		}
		if !ok {
			delete(b.projects, id)
			continue
		}
		b.projects[id] = true
	}
	return nil
}

// split refuses the messages with an observation of an unknown project and
// returns the observations to store and the messages for the DLQ.
func (k *KafkaIngest) split(b *kafkaBatch) ([]Observation, []kafka.Message) {
	var dlq []kafka.Message
	unknown := false
	for i := range b.items {
		it := &b.items[i]
		if it.kind == "" {
			for _, o := range b.obs[it.lo:it.hi] {
				if !b.projects[o.ProjectID] {
					it.kind = KafkaUnknownProject
					it.reason = fmt.Sprintf("project %d does not exist", o.ProjectID)
					unknown = true
					break
				}
			}
		}
		if it.kind != "" {
			dlq = append(dlq, k.dlqMessage(b.msgs[i], it))
		}
	}
	if !unknown {
		return b.obs, dlq
	}
	obs := make([]Observation, 0, len(b.obs))
	for _, it := range b.items {
		if it.kind == "" {
			obs = append(obs, b.obs[it.lo:it.hi]...)
		}
	}
	return obs, dlq
}

func kafkaSleep(ctx context.Context, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return false
	case <-t.C:
		return true
	}
}
