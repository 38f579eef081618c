package mqtt

import (
	"hash/maphash"
	"sync"
	"time"

	"github.com/openbdp/bdp/codec"
	"github.com/openbdp/bdp/pipeline"
)

// ingestShare is the ingestion subscription: shared, so that the nodes of
// one deployment split what gateways publish instead of each storing all
// of it (Mosquitto 2 supports $share with MQTT 5 and 3.1.1 clients).
const ingestShare = "$share/bdp/project/+/datapoint/#"

// Ingestion: ingestWorkers goroutines, each owning the topics that hash to
// it (so one datapoint's messages are stored in the order they came), each
// writing what has queued up for it in one Sink.Write and acknowledging
// those messages once it returns.
const (
	ingestWorkers  = 4
	ingestQueue    = 1024 // messages per worker; a full queue holds back the connection
	ingestMaxBatch = 256  // messages per Sink.Write
)

type ingestMsg struct {
	obs []pipeline.Observation
	ack func()
}

// externalIngest stores what gateways publish. Mosquitto has checked the
// publisher's ACL (its role allows publishing only to the datapoints its
// creator may write), so every message that reaches it is the publisher's
// to send; it checks only the topic and payload.
type externalIngest struct {
	e      *External
	sink   pipeline.Sink
	seed   maphash.Seed
	queues []chan ingestMsg
	wg     sync.WaitGroup
}

func newExternalIngest(e *External, sink pipeline.Sink) *externalIngest {
	in := &externalIngest{e: e, sink: sink, seed: maphash.MakeSeed()}
	for range ingestWorkers {
		q := make(chan ingestMsg, ingestQueue)
		in.queues = append(in.queues, q)
		in.wg.Add(1)
		go func() { defer in.wg.Done(); in.work(q) }()
	}
	return in
}

// take decodes one publish and queues it for storage. A message that is
// not observations is acknowledged and dropped: sent again it would be
// as wrong.
func (in *externalIngest) take(topic string, payload []byte, ack func()) {
	projectID, id, err := codec.ParseDatapointTopic(topic)
	if err != nil {
		in.e.metrics.dropped.WithLabelValues(dropTopic).Inc()
		ack()
		return
	}
	obs, reason, _ := observationsOf(projectID, id, payload)
	if reason != "" {
		in.e.metrics.dropped.WithLabelValues(reason).Inc()
		ack()
		return
	}
	select {
	case in.queues[maphash.String(in.seed, topic)%uint64(len(in.queues))] <- ingestMsg{obs: obs, ack: ack}:
	case <-in.e.ctx.Done(): // not acknowledged: the broker sends it again
	}
}

func (in *externalIngest) work(q chan ingestMsg) {
	for {
		var batch []ingestMsg
		select {
		case m := <-q:
			batch = append(batch, m)
		case <-in.e.ctx.Done():
			return
		}
	more:
		for len(batch) < ingestMaxBatch {
			select {
			case m := <-q:
				batch = append(batch, m)
			default:
				break more
			}
		}
		n := 0
		for _, m := range batch {
			n += len(m.obs)
		}
		obs := make([]pipeline.Observation, 0, n)
		for _, m := range batch {
			obs = append(obs, m.obs...)
		}
		if !in.store(obs, len(batch)) {
			return // closing: not acknowledged, the broker sends them again
		}
		for _, m := range batch {
			m.ack()
		}
		in.e.metrics.ingested.Add(float64(len(batch)))
	}
}

// store writes until the sink takes the observations or the layer closes.
// It retries rather than skipping: acknowledgements go out in the order
// the messages came, so one left unacknowledged would hold back all later
// ones, and storage being down is no reason to lose what a gateway sent.
func (in *externalIngest) store(obs []pipeline.Observation, messages int) bool {
	backoff := 50 * time.Millisecond
	for {
		err := in.sink.Write(in.e.ctx, pipeline.SourceMQTT, obs)
		if err == nil {
			return true
		}
		in.e.metrics.storeRetries.Inc()
		in.e.log.Warn("store MQTT observations; retrying", "messages", messages, "err", err)
		select {
		case <-in.e.ctx.Done():
			return false
		case <-time.After(backoff):
		}
		backoff = min(2*backoff, 5*time.Second)
	}
}

func (in *externalIngest) close() { in.wg.Wait() }
