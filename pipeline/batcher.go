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
//
// It does so in two lanes, each with its own queue, collector and writer:
// one for the observations that come in, one for virtual datapoints'
// outputs (SourceVDP). An output is caused by an input already stored
// and routed; in one lane it waited behind the next inputs' transaction,
// and at 100,000 inputs a second a node's one writer could not keep up
// with both (issue 18: COPY alone took most of a core). Two lanes commit
// on two connections at once. Order is kept within a lane, which is what
// Enqueue promises: one caller writes from one source.
type Batcher struct {
	cfg     BatcherConfig
	store   ObservationStore
	router  *Router
	relay   Relay // nil on a single node
	metrics *pipelineMetrics

	inputs  *writer // every source but SourceVDP
	outputs *writer // SourceVDP
	stop    chan struct{}
	done    chan struct{}
	once    sync.Once
	mu      sync.RWMutex
	stopped bool

	// ids caches datapoint row ids. The lanes' writer goroutines read it,
	// under one read lock per pass over a batch; resolve adds to it and
	// ForgetProject deletes from it. A plain map, not a sync.Map: the two
	// lookups per observation of a sync.Map, hashing an interface, were a
	// fifth of the CPU of the 10,000-datapoint benchmark.
	idsMu sync.RWMutex
	ids   map[dpKey]int64

	// published carries committed batches to the relay's publisher
	// (relay mode): the writers go on with their next transaction while
	// a previous batch is published (relay.go).
	published chan publication
}

// writer is one lane of the batcher: its queue, the batches its collector
// formed, and its writer goroutine's working memory, reused by every
// flush.
type writer struct {
	b       *Batcher
	in      chan *writeRequest
	batches chan []*writeRequest

	rowBuf       []store.Row
	keyBuf       []rowKey
	relayScratch runScratch // relayBatches'
	routeScratch runScratch // the router's, for this lane's deliveries
}

func newWriter(b *Batcher) *writer {
	return &writer{b: b, in: make(chan *writeRequest, b.cfg.QueueDepth), batches: make(chan []*writeRequest, 1)}
}

// lane is the writer of a source's requests.
func (b *Batcher) lane(src Source) *writer {
	if src == SourceVDP {
		return b.outputs
	}
	return b.inputs
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
	b := &Batcher{cfg: cfg, store: st, router: router, relay: cfg.Relay, metrics: m, ids: map[dpKey]int64{},
		stop: make(chan struct{}), done: make(chan struct{}), published: make(chan publication, publishQueue)}
	b.inputs, b.outputs = newWriter(b), newWriter(b)
	return b, nil
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
	case b.lane(src).in <- req:
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
	var lanes sync.WaitGroup
	for _, w := range []*writer{b.inputs, b.outputs} {
		lanes.Go(func() {
			w.collect()
			close(w.batches)
		})
		lanes.Go(func() {
			for batch := range w.batches {
				ctx, cancel := context.WithTimeout(context.Background(), flushTimeout)
				w.flush(ctx, batch)
				cancel()
			}
		})
	}
	lanes.Wait()
	if b.relay != nil {
		close(b.published)
	}
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
func (w *writer) collect() {
	b := w.b
	var held *writeRequest
	for {
		first := held
		held = nil
		if first == nil {
			select {
			case first = <-w.in:
			case <-b.stop:
				w.drain()
				return
			}
		}
		batch, n := []*writeRequest{first}, len(first.obs)
		deadline := time.NewTimer(b.cfg.MaxWait)
	gather:
		for n < b.cfg.MaxBatch {
			select {
			case r := <-w.in:
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
		w.batches <- batch
	}
}

// drain sends what is queued when Stop comes, so no accepted request is
// left without an answer.
func (w *writer) drain() {
	for {
		select {
		case r := <-w.in:
			w.batches <- []*writeRequest{r}
		default:
			return
		}
	}
}
