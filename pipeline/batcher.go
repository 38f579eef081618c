package pipeline

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/openbdp/bdp/fault"
	"github.com/openbdp/bdp/store"
)

// ObservationStore is the part of the store the batcher writes to.
type ObservationStore interface {
	EnsureDatapoints(ctx context.Context, projectID int64, ids []string) (map[string]int64, error)
	WriteObservations(ctx context.Context, rows []store.Row) error
}

// BatcherConfig tunes batching; zero values take the defaults.
type BatcherConfig struct {
	MaxBatch   int           // observations per transaction; default 10,000
	MaxWait    time.Duration // how long the first request of a batch waits for company; default 2 ms
	QueueDepth int           // requests waiting before Write blocks (backpressure); default 256

	// Relay, when set (a cluster), publishes every committed batch before
	// its writers are answered, and the router is left to the relay's
	// consumer (relay.go). Without it (a single node), the batcher routes
	// its batches itself.
	Relay Relay
}

func (c *BatcherConfig) fill() error {
	if c.MaxBatch == 0 {
		c.MaxBatch = 10_000
	}
	if c.MaxWait == 0 {
		c.MaxWait = 2 * time.Millisecond
	}
	if c.QueueDepth == 0 {
		c.QueueDepth = 256
	}
	if c.MaxBatch < 1 || c.MaxWait < 0 || c.QueueDepth < 1 {
		return fmt.Errorf("batcher: MaxBatch, QueueDepth must be positive and MaxWait not negative: %+v", *c)
	}
	return nil
}

// Batcher is the one pipeline of a node: it gathers the observations of
// concurrent writers into batches, stores each batch in one transaction,
// answers the writers, then hands the batch to the router (or, with a
// relay, publishes it before answering, relay.go). One goroutine
// collects while another writes, so collecting goes on during a write;
// when writes fall behind, the queue fills and Write blocks.
type Batcher struct {
	cfg     BatcherConfig
	store   ObservationStore
	router  *Router
	relay   Relay // nil on a single node
	metrics *pipelineMetrics

	in      chan *writeRequest
	batches chan []*writeRequest
	stop    chan struct{}
	done    chan struct{}
	once    sync.Once
	mu      sync.RWMutex
	stopped bool

	// ids caches datapoint row ids. The writer goroutine reads it, under
	// one lock per pass over a batch; ForgetProject deletes from it. A
	// plain map, not a sync.Map: the two lookups per observation of a
	// sync.Map, hashing an interface, were a fifth of the CPU of the
	// 10,000-datapoint benchmark.
	idsMu sync.Mutex
	ids   map[dpKey]int64

	rowBuf []store.Row // the writer goroutine's, reused by every flush
	keyBuf []rowKey    // likewise
	// relayRuns is relayBatches' working memory, the writer goroutine's.
	relayRuns []routeRun
	// published carries committed batches to the relay's publisher
	// (relay mode): the writer goes on with the next transaction while
	// the previous batch is published (relay.go).
	published chan publication
}

type writeRequest struct {
	src  Source
	obs  []Observation
	done chan error
}

// NewBatcher validates the configuration. Call Run to start it.
func NewBatcher(cfg BatcherConfig, st ObservationStore, router *Router, reg prometheus.Registerer) (*Batcher, error) {
	if err := cfg.fill(); err != nil {
		return nil, err
	}
	if st == nil || router == nil || reg == nil {
		return nil, errors.New("batcher: store, router and registry are required")
	}
	m, err := newPipelineMetrics(reg)
	if err != nil {
		return nil, err
	}
	return &Batcher{cfg: cfg, store: st, router: router, relay: cfg.Relay, metrics: m, ids: map[dpKey]int64{},
		in: make(chan *writeRequest, cfg.QueueDepth), batches: make(chan []*writeRequest, 1),
		stop: make(chan struct{}), done: make(chan struct{}), published: make(chan publication, publishQueue)}, nil
}

var _ Sink = (*Batcher)(nil)

// ErrStopped answers writes that come after Stop.
var ErrStopped = fault.Wrap(fault.Unavailable, errors.New("pipeline stopped"), "the platform is shutting down; try again")

// Write stores obs and returns once they are committed (or failed, all of
// them). The observations must be valid (Observation.Validate).
func (b *Batcher) Write(ctx context.Context, src Source, obs []Observation) error {
	done, err := b.Enqueue(ctx, src, obs)
	if err != nil {
		return err
	}
	select {
	case err := <-done:
		return err
	case <-ctx.Done():
		// The batch may still commit; the caller just stops waiting.
		return ctx.Err()
	}
}

// Enqueue is Write without the wait: it returns once obs are queued (it
// blocks only while the queue is full: backpressure), and the channel
// then receives Write's outcome, once. Requests are stored in the order
// they were enqueued, so a caller that enqueues one request after the
// other keeps its order (a later value of a datapoint and time wins)
// while many of its requests share a batch.
func (b *Batcher) Enqueue(ctx context.Context, src Source, obs []Observation) (<-chan error, error) {
	done := make(chan error, 1)
	if len(obs) == 0 {
		done <- nil
		return done, nil
	}
	req := &writeRequest{src: src, obs: obs, done: done}
	// The read lock makes "not stopped" and "enqueued" one step, so Stop
	// never leaves a request in the queue after the collector drained it.
	b.mu.RLock()
	if b.stopped {
		b.mu.RUnlock()
		return nil, ErrStopped
	}
	select {
	case b.in <- req:
		b.mu.RUnlock()
	case <-ctx.Done():
		b.mu.RUnlock()
		return nil, ctx.Err()
	}
	b.metrics.queue.Inc()
	return done, nil
}

// flushTimeout bounds one batch's transaction. Writes do not use the
// caller's context: a shutdown signal must not fail the batches accepted
// before it.
const flushTimeout = time.Minute

// Run collects and writes until Stop; it returns after every accepted
// request has been answered.
func (b *Batcher) Run() {
	publisherDone := make(chan struct{})
	if b.relay != nil {
		go func() { defer close(publisherDone); b.publishAll() }()
	} else {
		close(publisherDone)
	}
	writerDone := make(chan struct{})
	go func() {
		defer close(writerDone)
		for batch := range b.batches {
			ctx, cancel := context.WithTimeout(context.Background(), flushTimeout)
			b.flush(ctx, batch)
			cancel()
		}
		if b.relay != nil {
			close(b.published)
		}
	}()
	b.collect()
	close(b.batches)
	<-writerDone
	<-publisherDone
	close(b.done)
}

// Stop refuses new writes, finishes the accepted ones and waits for Run
// to return.
func (b *Batcher) Stop() {
	b.once.Do(func() {
		b.mu.Lock()
		b.stopped = true
		b.mu.Unlock()
		close(b.stop)
	})
	<-b.done
}

// collect forms batches: it waits for a first request, then takes more
// until MaxBatch observations or MaxWait have passed. A request is never
// split, so each one commits or fails as a whole.
func (b *Batcher) collect() {
	var held *writeRequest
	for {
		first := held
		held = nil
		if first == nil {
			select {
			case first = <-b.in:
			case <-b.stop:
				b.drain()
				return
			}
		}
		batch, n := []*writeRequest{first}, len(first.obs)
		deadline := time.NewTimer(b.cfg.MaxWait)
	gather:
		for n < b.cfg.MaxBatch {
			select {
			case r := <-b.in:
				if n+len(r.obs) > b.cfg.MaxBatch {
					held = r
					break gather
				}
				batch, n = append(batch, r), n+len(r.obs)
			case <-deadline.C:
				break gather
			}
		}
		deadline.Stop()
		b.batches <- batch
	}
}

// drain sends what is queued when Stop comes, so no accepted request is
// left without an answer.
func (b *Batcher) drain() {
	for {
		select {
		case r := <-b.in:
			b.batches <- []*writeRequest{r}
		default:
			return
		}
	}
}
