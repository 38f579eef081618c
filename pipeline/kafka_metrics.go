package pipeline

import (
	"fmt"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/segmentio/kafka-go"
)

type kafkaMetrics struct {
	consumed     prometheus.Counter
	written      prometheus.Counter
	dlq          *prometheus.CounterVec
	retries      *prometheus.CounterVec
	writeSeconds prometheus.Histogram
	lag          prometheus.Gauge
}

func newKafkaMetrics(reg prometheus.Registerer) (*kafkaMetrics, error) {
	m := &kafkaMetrics{
		consumed: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "bdp_kafka_messages_consumed_total", Help: "Kafka messages fetched from the ingest topic.",
		}),
		written: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "bdp_kafka_observations_written_total", Help: "Observations from Kafka that the sink committed.",
		}),
		dlq: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "bdp_kafka_dlq_messages_total", Help: "Kafka messages sent to the DLQ topic, by reason: malformed, invalid, unknown_project.",
		}, []string{"reason"}),
		retries: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "bdp_kafka_batch_retries_total", Help: "Retried batch steps, by step: resolve, write, dlq, commit.",
		}, []string{"step"}),
		writeSeconds: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name: "bdp_kafka_batch_write_seconds", Help: "Duration of the sink write of one Kafka batch, failed ones included.",
			Buckets: prometheus.ExponentialBuckets(0.0005, 2, 16),
		}),
		lag: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "bdp_kafka_consumer_lag", Help: "Messages not yet fetched, summed over the partitions this node consumes.",
		}),
	}
	for _, reason := range []string{KafkaMalformed, KafkaInvalid, KafkaUnknownProject} {
		m.dlq.WithLabelValues(reason)
	}
	if reg == nil {
		return m, nil
	}
	for _, c := range []prometheus.Collector{m.consumed, m.written, m.dlq, m.retries, m.writeSeconds, m.lag} {
		if err := reg.Register(c); err != nil {
			return nil, fmt.Errorf("register kafka metrics: %w", err)
		}
	}
	return m, nil
}

// partitionLags sums the lag of every partition this node consumes.
// kafka-go's reader reports the lag of whichever partition it fetched from
// last, which under a consumer group with several partitions says little.
// Each fetched message carries its partition's high-water mark; a
// partition not fetched from for lagExpiry has been assigned elsewhere or
// has nothing to fetch, and no longer counts. Owned by the fetching
// goroutine.
type partitionLags struct {
	byPartition map[int]partitionLag
}

type partitionLag struct {
	behind int64 // messages after the last one fetched
	seen   time.Time
}

const lagExpiry = 30 * time.Second

func (p *partitionLags) fetched(m kafka.Message, now time.Time) {
	if p.byPartition == nil {
		p.byPartition = map[int]partitionLag{}
	}
	p.byPartition[m.Partition] = partitionLag{behind: max(0, m.HighWaterMark-m.Offset-1), seen: now}
}

// total is the sum over the partitions fetched from within lagExpiry.
func (p *partitionLags) total(now time.Time) int64 {
	var sum int64
	for part, l := range p.byPartition {
		if now.Sub(l.seen) > lagExpiry {
			delete(p.byPartition, part)
			continue
		}
		sum += l.behind
	}
	return sum
}
