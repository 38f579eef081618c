package pipeline

import (
	"fmt"

	"github.com/prometheus/client_golang/prometheus"
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
			Name: "bdp_kafka_consumer_lag", Help: "Messages behind the end of the partition last fetched (kafka-go reader stats).",
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
