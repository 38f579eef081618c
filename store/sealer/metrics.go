package sealer

import (
	"github.com/prometheus/client_golang/prometheus"

	"github.com/openbdp/bdp/store"
)

// metrics are the sealer's and the storage's figures on /metrics.
type metrics struct {
	rows, chunks, seconds, errors prometheus.Counter
	weeksDue                      prometheus.Gauge
	observations, bytes, perObs   *prometheus.GaugeVec
}

func newMetrics() metrics {
	return metrics{
		rows: prometheus.NewCounter(prometheus.CounterOpts{Name: "bdp_sealer_rows_sealed_total",
			Help: "Head rows the sealer moved into compressed chunks."}),
		chunks: prometheus.NewCounter(prometheus.CounterOpts{Name: "bdp_sealer_chunks_written_total",
			Help: "Chunks the sealer wrote (a week is rewritten whole when late writes joined it)."}),
		seconds: prometheus.NewCounter(prometheus.CounterOpts{Name: "bdp_sealer_seconds_total",
			Help: "Time the sealer spent in seal transactions (its pauses aside)."}),
		errors: prometheus.NewCounter(prometheus.CounterOpts{Name: "bdp_sealer_errors_total",
			Help: "Seal passes that ended with an error (the next pass starts over)."}),
		weeksDue: prometheus.NewGauge(prometheus.GaugeOpts{Name: "bdp_sealer_weeks_due",
			Help: "Closed weeks past the grace period whose head still holds rows: the sealer's work left."}),
		observations: prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: "bdp_storage_observations",
			Help: "Observations stored, by state: head (rows; PostgreSQL's estimate) or sealed (in chunks)."}, []string{"state"}),
		bytes: prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: "bdp_storage_bytes",
			Help: "Bytes on disk, by state: the head's partitions or the chunks (heap, TOAST and indexes)."}, []string{"state"}),
		perObs: prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: "bdp_storage_bytes_per_observation",
			Help: "Bytes on disk per observation, by state."}, []string{"state"}),
	}
}

func (m metrics) register(reg prometheus.Registerer) error {
	for _, c := range []prometheus.Collector{m.rows, m.chunks, m.seconds, m.errors, m.weeksDue, m.observations, m.bytes, m.perObs} {
		if err := reg.Register(c); err != nil {
			return err
		}
	}
	return nil
}

func (m metrics) set(f store.StorageFigures) {
	for state, s := range map[string]store.StateFigures{"head": f.Head, "sealed": f.Sealed} {
		m.observations.WithLabelValues(state).Set(float64(s.Observations))
		m.bytes.WithLabelValues(state).Set(float64(s.Bytes))
		m.perObs.WithLabelValues(state).Set(s.BytesPerObservation())
	}
}
