package mqtt

import (
	"context"
	"errors"
	"hash/maphash"
	"sync"
	"time"

	"github.com/eclipse/paho.golang/paho"
)

// ErrPublishQueueFull refuses a publish to the external broker while its
// queue is full: the broker is slower than live data comes, or away.
var ErrPublishQueueFull = errors.New("the queue of publishes to the external MQTT broker is full")

// Publishing to the external broker: publishWorkers goroutines, each
// owning the topics that hash to it (so one datapoint's messages keep
// their order), each with a bounded queue; together they keep up to
// publishWorkers QoS 1 messages in flight.
const (
	publishWorkers = 16
	publishQueue   = 4096 // messages per worker
)

type outgoing struct {
	topic   string
	payload []byte
	qos     byte
}

type externalPublisher struct {
	e      *External
	seed   maphash.Seed
	queues []chan outgoing
	wg     sync.WaitGroup
}

func newExternalPublisher(e *External) *externalPublisher {
	p := &externalPublisher{e: e, seed: maphash.MakeSeed()}
	for range publishWorkers {
		q := make(chan outgoing, publishQueue)
		p.queues = append(p.queues, q)
		p.wg.Add(1)
		go func() { defer p.wg.Done(); p.work(q) }()
	}
	return p
}

func (p *externalPublisher) enqueue(topic string, payload []byte, qos byte) error {
	if p.e.ctx.Err() != nil {
		return errors.New("the external MQTT connection is closed")
	}
	select {
	case p.queues[maphash.String(p.seed, topic)%uint64(len(p.queues))] <- outgoing{topic, payload, qos}:
		return nil
	default:
		p.e.metrics.publishFull.Inc()
		return ErrPublishQueueFull
	}
}

func (p *externalPublisher) work(q chan outgoing) {
	marker := paho.UserProperties{{Key: liveMarker, Value: "1"}}
	for {
		var m outgoing
		select {
		case m = <-q:
		case <-p.e.ctx.Done():
			return
		}
		ctx, cancel := context.WithTimeout(p.e.ctx, 10*time.Second)
		p.e.users.sawTopic(ctx, m.topic)
		pctx, pcancel := p.e.onConnection(ctx)
		_, err := p.e.cm.Publish(pctx, &paho.Publish{QoS: m.qos, Topic: m.topic, Payload: m.payload,
			Properties: &paho.PublishProperties{User: marker}})
		pcancel()
		cancel()
		if err != nil {
			p.e.metrics.publishFailed.Inc()
			if p.e.ctx.Err() == nil {
				p.e.log.Debug("publish to the external MQTT broker", "topic", m.topic, "err", err)
			}
		}
	}
}

func (p *externalPublisher) close() { p.wg.Wait() }
