package mqtt

import (
	"errors"
	"fmt"
	"sync"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/openbdp/bdp/codec"
	"github.com/openbdp/bdp/pipeline"
)

// Publisher publishes one message as the platform (Broker.Publish): on
// the embedded broker its inline client, whose publishes reach each
// subscriber the ACL hook admits.
type Publisher interface {
	Publish(topic string, payload []byte, qos byte) error
}

// LiveConfig tunes the live publisher; zero values take the defaults.
type LiveConfig struct {
	// QueueObservations bounds what waits to be published; a stored
	// batch that does not fit is dropped whole and counted. Default
	// 200,000 (about a second of the fastest ingestion).
	QueueObservations int
	// Skip lists sources not to publish: an external broker already
	// carried what came in over MQTT to its subscribers.
	Skip []pipeline.Source
}

// Live publishes every stored observation of every project to its
// datapoint's topic (codec.DatapointTopic) as {"time", "value"}
// (codec.AppendObservationJSON), QoS 1, in time order per datapoint within
// each stored batch and batches in commit order within each of the
// batcher's two lanes (inputs, outputs). It is a router tap:
// storage is the system of record and live data is best effort, so a
// batch that finds the queue full is dropped (bdp_mqtt_live_dropped_total)
// rather than slowing ingestion. One goroutine publishes; Close joins it.
//
// When the publisher is an Audience (the embedded broker), observations of
// a datapoint no subscription matches are neither encoded nor published
// (bdp_mqtt_live_unsubscribed_total): live out costs nothing while nobody
// listens.
type Live struct {
	pub      Publisher
	audience Audience // nil: publish everything
	fan      *fanout  // the embedded broker's fast path; nil: Publish
	limit    int
	skip     map[pipeline.Source]bool

	// routes caches each datapoint's route, nil for one no subscription
	// matches, as of the audience's version; only run uses them.
	routes        map[liveDatapoint]*liveRoute
	routesVersion uint64

	mu     sync.Mutex
	queue  []pipeline.Stored
	queued int // observations in queue (those being published are not)
	closed bool
	wake   chan struct{} // 1-buffered: work arrived or closing
	done   chan struct{}

	dropped   prometheus.Counter
	published prometheus.Counter
	failed    prometheus.Counter
	unheard   prometheus.Counter
	length    prometheus.Gauge
}

// liveDatapoint names a datapoint's topic.
type liveDatapoint struct {
	projectID   int64
	dataPointID string
}

// maxCachedRoutes bounds Live's route cache; past it the cache starts
// over (a walk of the topic index a datapoint).
const maxCachedRoutes = 1 << 16

// NewLive starts a live publisher; add it to the router (AddTap) to feed
// it, and Close it after removing it.
func NewLive(pub Publisher, cfg LiveConfig, reg prometheus.Registerer) (*Live, error) {
	if pub == nil || reg == nil {
		return nil, errors.New("live: publisher and registry are required")
	}
	if cfg.QueueObservations == 0 {
		cfg.QueueObservations = 200_000
	}
	if cfg.QueueObservations < 0 {
		return nil, fmt.Errorf("live: QueueObservations %d is negative", cfg.QueueObservations)
	}
	l := &Live{pub: pub, limit: cfg.QueueObservations, skip: map[pipeline.Source]bool{}, routes: map[liveDatapoint]*liveRoute{},
		wake: make(chan struct{}, 1), done: make(chan struct{}),
		dropped: prometheus.NewCounter(prometheus.CounterOpts{Name: "bdp_mqtt_live_dropped_total",
			Help: "Stored observations not published live because the live queue was full."}),
		published: prometheus.NewCounter(prometheus.CounterOpts{Name: "bdp_mqtt_live_published_total",
			Help: "Stored observations published live to their datapoint's topic."}),
		failed: prometheus.NewCounter(prometheus.CounterOpts{Name: "bdp_mqtt_live_failed_total",
			Help: "Live publishes the broker refused (it was shutting down)."}),
		unheard: prometheus.NewCounter(prometheus.CounterOpts{Name: "bdp_mqtt_live_unsubscribed_total",
			Help: "Stored observations not published live because no subscription of the embedded broker matched their topic."}),
		length: prometheus.NewGauge(prometheus.GaugeOpts{Name: "bdp_mqtt_live_queue_observations",
			Help: "Stored observations waiting to be published live."}),
	}
	l.audience, _ = pub.(Audience)
	if e, ok := pub.(*Embedded); ok {
		l.fan = e.fan
	}
	for _, s := range cfg.Skip {
		l.skip[s] = true
	}
	for _, c := range []prometheus.Collector{l.dropped, l.published, l.failed, l.unheard, l.length} {
		if err := reg.Register(c); err != nil {
			return nil, fmt.Errorf("register live metrics: %w", err)
		}
	}
	go l.run()
	return l, nil
}

// DeliverStored queues a stored batch, or drops it when the queue is full;
// it never waits (pipeline.Tap).
func (l *Live) DeliverStored(s pipeline.Stored) {
	n := len(s.Obs)
	l.mu.Lock()
	if l.closed || l.queued+n > l.limit {
		l.mu.Unlock()
		l.dropped.Add(float64(n))
		return
	}
	l.queue = append(l.queue, s)
	l.queued += n
	l.length.Set(float64(l.queued))
	l.mu.Unlock()
	select {
	case l.wake <- struct{}{}:
	default: // already woken
	}
}

// Close publishes what is queued and stops. Remove the tap first: what
// comes after Close is dropped.
func (l *Live) Close() {
	l.mu.Lock()
	already := l.closed
	l.closed = true
	l.mu.Unlock()
	if !already {
		select {
		case l.wake <- struct{}{}:
		default:
		}
	}
	<-l.done
}

func (l *Live) run() {
	defer close(l.done)
	for {
		<-l.wake
		for {
			l.mu.Lock()
			batches, closed := l.queue, l.closed
			l.queue, l.queued = nil, 0
			l.length.Set(0)
			l.mu.Unlock()
			if len(batches) == 0 {
				if closed {
					return
				}
				break
			}
			for _, s := range batches {
				l.publish(s)
			}
		}
	}
}

// publish sends one stored batch: its observations are grouped by
// datapoint in time order, so one route serves each run of them. The
// payloads share one buffer, each capped: the broker keeps them in its
// clients' in-flight messages after they are sent, so the buffer is
// never reused. On the embedded broker the fast path (fanout) delivers
// them, and the batch's writes start together at its end.
func (l *Live) publish(s pipeline.Stored) {
	if l.audience != nil {
		if v := l.audience.SubscriptionsVersion(); v != l.routesVersion {
			clear(l.routes)
			l.routesVersion = v
		}
	}
	var batch liveBatch
	if l.fan != nil {
		batch = l.fan.begin()
		defer l.fan.flush()
	}
	var buf []byte
	var route *liveRoute
	var last pipeline.Observation
	first := true
	published, failed, unheard := 0, 0, 0
	for i, o := range s.Obs {
		if len(l.skip) > 0 && l.skip[s.Sources[i]] {
			continue
		}
		if first || o.ProjectID != last.ProjectID || o.DataPointID != last.DataPointID {
			route, last, first = l.route(o.ProjectID, o.DataPointID), o, false
		}
		if route == nil {
			unheard++
			continue
		}
		if buf == nil {
			buf = make([]byte, 0, 64*(len(s.Obs)-i))
		}
		start := len(buf)
		buf = codec.AppendObservationJSON(buf, o.Time, o.Value)
		payload := buf[start:len(buf):len(buf)]
		if !route.slow {
			l.fan.deliver(&batch, route, payload)
		} else if err := l.pub.Publish(route.topic, payload, 1); err != nil {
			failed++
			continue
		}
		published++
	}
	l.published.Add(float64(published))
	l.failed.Add(float64(failed))
	l.unheard.Add(float64(unheard))
}

// route is a datapoint's route, or nil when the audience knows no
// subscription that matches it.
func (l *Live) route(projectID int64, dataPointID string) *liveRoute {
	key := liveDatapoint{projectID, dataPointID}
	if r, ok := l.routes[key]; ok {
		return r
	}
	topic := codec.DatapointTopic(projectID, dataPointID)
	var r *liveRoute
	switch {
	case l.fan != nil:
		r = l.fan.route(topic, projectID, dataPointID)
	case l.audience == nil || l.audience.Subscribed(topic):
		r = &liveRoute{topic: topic, slow: true}
	}
	if len(l.routes) >= maxCachedRoutes {
		clear(l.routes)
	}
	l.routes[key] = r
	return r
}
