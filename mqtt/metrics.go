package mqtt

import (
	"fmt"
	"sync/atomic"

	"github.com/mochi-mqtt/server/v2/system"
	"github.com/prometheus/client_golang/prometheus"
)

// Reasons a CONNECT is refused, as counted on /metrics.
const (
	refusedBadPassword = "bad_password"
	refusedUnknownUser = "unknown_user"
	refusedExpired     = "expired"
	refusedThrottled   = "throttled"
	refusedReserved    = "reserved"        // the platform's client id
	refusedClientID    = "client_id_taken" // the client id's session belongs to another MQTT user
	refusedWill        = "will"            // a will message the account may not publish
	refusedUnavailable = "unavailable"     // the database failed
)

// metrics are the broker's counters on /metrics: mochi's own, read when
// scraped, and the refusals of the auth hook.
type metrics struct {
	refused    *prometheus.CounterVec // CONNECTs, by reason
	aclRefused *prometheus.CounterVec // SUBSCRIBE filters and PUBLISHes, by action
	hashes     prometheus.Counter     // password verifications that ran the slow hash
}

func newMetrics(reg prometheus.Registerer, info *system.Info) (*metrics, error) {
	m := &metrics{
		refused: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "bdp_mqtt_connect_refused_total",
			Help: "MQTT CONNECTs refused, by reason (bad_password, unknown_user, expired, throttled, reserved, client_id_taken, will, unavailable)."},
			[]string{"reason"}),
		aclRefused: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "bdp_mqtt_acl_refused_total",
			Help: "MQTT subscriptions (action subscribe) and publishes (action publish) refused as outside the client's topics or rights."},
			[]string{"action"}),
		hashes: prometheus.NewCounter(prometheus.CounterOpts{Name: "bdp_mqtt_password_hashes_total",
			Help: "MQTT passwords verified with the slow hash (a CONNECT whose credentials were verified recently skips it)."}),
	}
	for _, r := range []string{refusedBadPassword, refusedUnknownUser, refusedExpired, refusedThrottled, refusedReserved,
		refusedClientID, refusedWill, refusedUnavailable} {
		m.refused.WithLabelValues(r)
	}
	m.aclRefused.WithLabelValues("subscribe")
	m.aclRefused.WithLabelValues("publish")
	read := func(v *int64) func() float64 { return func() float64 { return float64(atomic.LoadInt64(v)) } }
	cs := []prometheus.Collector{m.refused, m.aclRefused, m.hashes,
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "bdp_mqtt_clients_connected",
			Help: "MQTT clients connected to the embedded broker over the network."}, read(&info.ClientsConnected)),
		prometheus.NewCounterFunc(prometheus.CounterOpts{Name: "bdp_mqtt_messages_received_total",
			Help: "PUBLISH packets the embedded broker received."}, read(&info.MessagesReceived)),
		prometheus.NewCounterFunc(prometheus.CounterOpts{Name: "bdp_mqtt_messages_sent_total",
			Help: "PUBLISH packets the embedded broker sent to subscribers."}, read(&info.MessagesSent)),
		prometheus.NewCounterFunc(prometheus.CounterOpts{Name: "bdp_mqtt_messages_dropped_total",
			Help: "Messages to a subscriber dropped because its write queue was full (a slow subscriber)."}, read(&info.MessagesDropped)),
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "bdp_mqtt_inflight",
			Help: "QoS 1 and 2 messages awaiting acknowledgement."}, read(&info.Inflight)),
		prometheus.NewCounterFunc(prometheus.CounterOpts{Name: "bdp_mqtt_inflight_dropped_total",
			Help: "QoS 1 and 2 messages to a subscriber dropped because too many were unacknowledged."}, read(&info.InflightDropped)),
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "bdp_mqtt_subscriptions",
			Help: "Subscriptions held by the embedded broker."}, read(&info.Subscriptions)),
		prometheus.NewCounterFunc(prometheus.CounterOpts{Name: "bdp_mqtt_received_bytes_total",
			Help: "Bytes the embedded broker received."}, read(&info.BytesReceived)),
		prometheus.NewCounterFunc(prometheus.CounterOpts{Name: "bdp_mqtt_sent_bytes_total",
			Help: "Bytes the embedded broker sent."}, read(&info.BytesSent)),
	}
	for _, c := range cs {
		if err := reg.Register(c); err != nil {
			return nil, fmt.Errorf("register metrics: %w", err)
		}
	}
	return m, nil
}
