package pipeline

import (
	"fmt"

	"github.com/prometheus/client_golang/prometheus"
)

type pipelineMetrics struct {
	stored       *prometheus.CounterVec
	failed       *prometheus.CounterVec
	batchSize    prometheus.Histogram
	flushSeconds prometheus.Histogram
	queue        prometheus.Gauge
}

func newPipelineMetrics(reg prometheus.Registerer) (*pipelineMetrics, error) {
	m := &pipelineMetrics{
		stored: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "bdp_pipeline_observations_stored_total", Help: "Observations committed, by source.",
		}, []string{"source"}),
		failed: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "bdp_pipeline_observations_failed_total", Help: "Observations whose batch failed to commit, by source.",
		}, []string{"source"}),
		batchSize: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name: "bdp_pipeline_batch_observations", Help: "Observations per committed batch.",
			Buckets: prometheus.ExponentialBuckets(1, 4, 10),
		}),
		flushSeconds: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name: "bdp_pipeline_flush_seconds", Help: "Time to store one batch.",
			Buckets: prometheus.ExponentialBuckets(0.0005, 2, 14),
		}),
		queue: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "bdp_pipeline_queued_requests", Help: "Write requests waiting for their batch to commit.",
		}),
	}
	for _, c := range []prometheus.Collector{m.stored, m.failed, m.batchSize, m.flushSeconds, m.queue} {
		if err := reg.Register(c); err != nil {
			return nil, fmt.Errorf("register pipeline metrics: %w", err)
		}
	}
	return m, nil
}
