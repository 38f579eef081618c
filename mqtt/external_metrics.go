package mqtt

import (
	"fmt"

	"github.com/prometheus/client_golang/prometheus"
)

// externalMetrics are the external mode's counters on /metrics. The
// dropped counter has the embedded ingestion's name and reasons, so that a
// dashboard reads both modes alike.
type externalMetrics struct {
	connected     prometheus.Gauge
	ingested      prometheus.Counter
	dropped       *prometheus.CounterVec
	storeRetries  prometheus.Counter
	publishFailed prometheus.Counter
	publishFull   prometheus.Counter
}

func newExternalMetrics(reg prometheus.Registerer) (*externalMetrics, error) {
	m := &externalMetrics{
		connected: prometheus.NewGauge(prometheus.GaugeOpts{Name: "bdp_mqtt_external_connected",
			Help: "1 while bdp's connection to the external MQTT broker is up."}),
		ingested: prometheus.NewCounter(prometheus.CounterOpts{Name: "bdp_mqtt_external_ingested_total",
			Help: "Messages from the external broker's ingestion subscription stored and acknowledged."}),
		dropped: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "bdp_mqtt_ingest_dropped_total",
			Help: "MQTT publishes for ingestion dropped, by reason (topic, payload, invalid)."}, []string{"reason"}),
		storeRetries: prometheus.NewCounter(prometheus.CounterOpts{Name: "bdp_mqtt_external_store_retries_total",
			Help: "Writes of ingested MQTT messages that failed and were retried (they stay unacknowledged meanwhile)."}),
		publishFailed: prometheus.NewCounter(prometheus.CounterOpts{Name: "bdp_mqtt_external_publish_failed_total",
			Help: "Publishes (live data) the external broker did not acknowledge."}),
		publishFull: prometheus.NewCounter(prometheus.CounterOpts{Name: "bdp_mqtt_external_publish_queue_full_total",
			Help: "Publishes (live data) refused because the queue to the external broker was full."}),
	}
	for _, r := range []string{dropTopic, dropPayload, dropInvalid} {
		m.dropped.WithLabelValues(r) // present at 0 from the start
	}
	for _, c := range []prometheus.Collector{m.connected, m.ingested, m.dropped, m.storeRetries, m.publishFailed, m.publishFull} {
		if err := reg.Register(c); err != nil {
			return nil, fmt.Errorf("register external MQTT metrics: %w", err)
		}
	}
	return m, nil
}
