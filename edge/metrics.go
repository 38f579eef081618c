package edge

import (
	"strconv"

	"github.com/prometheus/client_golang/prometheus"
)

// metrics of the edge connections (/metrics).
type metrics struct {
	m           *Manager
	online      *prometheus.Desc
	pending     *prometheus.Desc
	garbage     *prometheus.CounterVec
	dataDropped prometheus.Counter
	operations  *prometheus.CounterVec
	fenced      prometheus.Counter
}

func newMetrics(m *Manager, reg prometheus.Registerer) (*metrics, error) {
	x := &metrics{m: m,
		online: prometheus.NewDesc("bdp_edge_online", "1 while the project's edge device sends heartbeats (offline after 15 s without).",
			[]string{"project_id"}, nil),
		pending: prometheus.NewDesc("bdp_edge_pending_operations", "Requests to the project's edge device not answered yet.",
			[]string{"project_id"}, nil),
		garbage: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "bdp_edge_bad_messages_total",
			Help: "Messages from edge devices that failed the protocol's checks, dropped, by topic."}, []string{"topic"}),
		dataDropped: prometheus.NewCounter(prometheus.CounterOpts{Name: "bdp_edge_data_dropped_total",
			Help: "Data messages from edge devices dropped: the device's queue was full, or storing failed."}),
		operations: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "bdp_edge_setpoint_operations_total",
			Help: "Acked setpoint operations finished, by state (written, failed)."}, []string{"state"}),
		fenced: prometheus.NewCounter(prometheus.CounterOpts{Name: "bdp_edge_fenced_total",
			Help: "Setpoint writes and requests to edge devices refused because another node took the project's edge connection over (the fence)."}),
	}
	for _, c := range []prometheus.Collector{x, x.garbage, x.dataDropped, x.operations, x.fenced} {
		if err := reg.Register(c); err != nil {
			return nil, err
		}
	}
	return x, nil
}

func (x *metrics) Describe(ch chan<- *prometheus.Desc) {
	ch <- x.online
	ch <- x.pending
}

// Collect reports each running connection's state.
func (x *metrics) Collect(ch chan<- prometheus.Metric) {
	x.m.mu.Lock()
	conns := make([]*conn, 0, len(x.m.conns))
	for _, c := range x.m.conns {
		conns = append(conns, c)
	}
	x.m.mu.Unlock()
	for _, c := range conns {
		p := strconv.FormatInt(c.projectID, 10)
		online := 0.0
		if c.online.Load() {
			online = 1
		}
		ch <- prometheus.MustNewConstMetric(x.online, prometheus.GaugeValue, online, p)
		ch <- prometheus.MustNewConstMetric(x.pending, prometheus.GaugeValue, float64(c.pending.Load()), p)
	}
}
