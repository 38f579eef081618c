package runner

import (
	"errors"

	"github.com/prometheus/client_golang/prometheus"
)

// metrics are the pool's and the schedule's series in /metrics.
type metrics struct {
	runs      *prometheus.CounterVec // by status
	queueWait prometheus.Histogram
	duration  prometheus.Histogram
	inFlight  prometheus.Gauge
	restarts  prometheus.Counter
}

// runBuckets span a run over a few hours of data (milliseconds) to the
// time limit (minutes); queue waits go from at once to a long weekly batch.
var (
	runBuckets  = []float64{0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 300}
	waitBuckets = []float64{0.01, 0.05, 0.1, 0.5, 1, 5, 10, 30, 60, 300, 900, 3600}
)

func newMetrics(reg prometheus.Registerer) (*metrics, error) {
	m := &metrics{
		runs: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "bdp_analysis_runs_total",
			Help: "Analysis runs finished on this node, by status (Success, Failed)."}, []string{"status"}),
		queueWait: prometheus.NewHistogram(prometheus.HistogramOpts{Name: "bdp_analysis_queue_wait_seconds",
			Help: "Time an analysis run waited in the queue, from its request or schedule to a worker's claim.", Buckets: waitBuckets}),
		duration: prometheus.NewHistogram(prometheus.HistogramOpts{Name: "bdp_analysis_run_duration_seconds",
			Help: "Time an analysis run took on its worker: reads, computation and the result's write.", Buckets: runBuckets}),
		inFlight: prometheus.NewGauge(prometheus.GaugeOpts{Name: "bdp_analysis_runs_in_flight",
			Help: "Analysis runs being computed on this node; at most the number of workers."}),
		restarts: prometheus.NewCounter(prometheus.CounterOpts{Name: "bdp_analysis_worker_restarts_total",
			Help: "Analysis workers restarted by their supervisor after a run panicked."}),
	}
	if reg == nil {
		return m, nil
	}
	var errs []error
	for _, c := range []prometheus.Collector{m.runs, m.queueWait, m.duration, m.inFlight, m.restarts} {
		errs = append(errs, reg.Register(c))
	}
	return m, errors.Join(errs...)
}
