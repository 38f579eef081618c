package bench

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/openbdp/bdp/pipeline"
)

// The two ends of the vdp scenario's measurement: the feed of source
// observations, paced by the wall clock, and the taps on the router that
// time each sampled input until its output is stored.

// vdpFeed generates the source observations. Observation k (k < 0 for the
// history stored before the actors start) belongs to source k mod sources
// and is at base + k·step: times increase per source, and no two
// observations share a time, so an output (whose time is its triggering
// observation's, for every_value) names its input by its time alone.
// step is 1/Rate, so event time runs at about the pace of the wall clock.
type vdpFeed struct {
	project  int64
	opts     VDPOptions
	sources  int
	names    []string // of the sources, made once
	base     time.Time
	step     time.Duration
	mu       sync.Mutex
	failures int
	firstErr error
}

func newVDPFeed(project int64, opts VDPOptions, now time.Time) *vdpFeed {
	f := &vdpFeed{project: project, opts: opts, sources: 2 * opts.VDPs, base: now.Truncate(time.Second)}
	// PostgreSQL keeps microseconds: a finer step would make two
	// observations equal once stored, and history differ from live.
	f.step = max(time.Second/time.Duration(opts.Rate)/time.Microsecond*time.Microsecond, time.Microsecond)
	f.names = make([]string, f.sources)
	for i := range f.names {
		f.names[i] = sourceName(i)
	}
	return f
}

func (f *vdpFeed) obs(k int) pipeline.Observation {
	s := ((k % f.sources) + f.sources) % f.sources
	return pipeline.Observation{ProjectID: f.project, DataPointID: f.names[s],
		Time: f.base.Add(time.Duration(k) * f.step), Value: float64(k%1000) / 10}
}

// preload stores vdpWindow observations of every source, for the actors
// to read as history, and one old observation of every output datapoint:
// in a platform that runs, an output datapoint exists and the batcher has
// its row id cached; without this the first second of the feed would
// create 10,000 datapoints and measure that instead.
func (f *vdpFeed) preload(ctx context.Context, b *pipeline.Batcher) error {
	var batch []pipeline.Observation
	flush := func() error {
		if len(batch) == 0 {
			return nil
		}
		err := b.Write(ctx, srcBench, batch)
		batch = nil // the batcher owns the slice now
		return err
	}
	for k := -vdpWindow * f.sources; k < 0; k++ {
		batch = append(batch, f.obs(k))
		if len(batch) == 10_000 {
			if err := flush(); err != nil {
				return err
			}
		}
	}
	if err := flush(); err != nil {
		return err
	}
	old := f.base.Add(-time.Hour)
	for i := range f.opts.VDPs {
		batch = append(batch, pipeline.Observation{ProjectID: f.project, DataPointID: vdpName(i), Time: old, Value: 0})
	}
	return flush()
}

// run feeds opts.Rate observations a second for opts.Duration in writes of
// PerWrite, paced by the wall clock: write j is due at j·PerWrite/Rate
// after the start. Writers take the writes from a queue as deep as there
// are writers; when all are waiting for commits and the queue is full, the
// pacer blocks and falls behind, which shows as inputs_per_s below the
// target rather than as a burst later. run returns once every write is
// answered.
func (f *vdpFeed) run(ctx context.Context, b *pipeline.Batcher) error {
	total := int(f.opts.Duration.Seconds() * float64(f.opts.Rate))
	writes := (total + f.opts.PerWrite - 1) / f.opts.PerWrite
	queue := make(chan []pipeline.Observation, f.opts.Writers)
	var wg sync.WaitGroup
	for range f.opts.Writers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for obs := range queue {
				if err := b.Write(ctx, srcBench, obs); err != nil {
					f.fail(err)
				}
			}
		}()
	}
	interval := time.Duration(float64(time.Second) * float64(f.opts.PerWrite) / float64(f.opts.Rate))
	tick := time.NewTicker(min(interval, 10*time.Millisecond))
	defer tick.Stop()
	start := time.Now()
	k := 0
	for j := 0; j < writes && ctx.Err() == nil; {
		due := min(int(time.Since(start)/interval)+1, writes)
		for ; j < due; j++ {
			n := min(f.opts.PerWrite, total-k)
			obs := make([]pipeline.Observation, n)
			for i := range obs {
				obs[i] = f.obs(k + i)
			}
			k += n
			select {
			case queue <- obs:
			case <-ctx.Done():
			}
		}
		if j == writes {
			break
		}
		select {
		case <-tick.C:
		case <-ctx.Done():
		}
	}
	close(queue)
	wg.Wait()
	return ctx.Err()
}

func (f *vdpFeed) fail(err error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.failures++; f.firstErr == nil {
		f.firstErr = err
	}
}

func (f *vdpFeed) err() error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.failures > 0 {
		return fmt.Errorf("%d writes of the feed failed; the first: %w", f.failures, f.firstErr)
	}
	return nil
}

// latencyTaps subscribe to the router beside the actors, for every
// Sample-th virtual datapoint: to its two sources, noting when each
// observation was stored, and to its output, which closes the interval.
// The router calls both on the batcher's writer goroutine, right after
// each commit; a source's delivery comes before the output it causes,
// which can only commit in a later batch. Entries leave the map when their
// output arrives, so it holds the in-flight ones only.
type latencyTaps struct {
	mu      sync.Mutex
	stored  map[int64]time.Time // input time (UnixNano) -> when it was stored
	samples []time.Duration
	unsub   []func()
}

func newLatencyTaps(router *pipeline.Router, project int64, opts VDPOptions, f *vdpFeed) *latencyTaps {
	n := (opts.VDPs + opts.Sample - 1) / opts.Sample
	perS := 2 * n * opts.Rate / f.sources
	l := &latencyTaps{stored: make(map[int64]time.Time, perS),
		samples: make([]time.Duration, 0, perS*int(opts.Duration.Seconds()+1))}
	for i := 0; i < opts.VDPs; i += opts.Sample {
		l.unsub = append(l.unsub,
			router.Subscribe(project, sourceName(2*i), inputTap{l}),
			router.Subscribe(project, sourceName(2*i+1), inputTap{l}),
			router.Subscribe(project, vdpName(i), outputTap{l}))
	}
	return l
}

type inputTap struct{ l *latencyTaps }

func (t inputTap) Deliver(obs []pipeline.Observation) {
	now := time.Now()
	t.l.mu.Lock()
	defer t.l.mu.Unlock()
	if t.l.stored == nil {
		return // closed; a delivery already under way when it was
	}
	for _, o := range obs {
		t.l.stored[o.Time.UnixNano()] = now
	}
}

type outputTap struct{ l *latencyTaps }

func (t outputTap) Deliver(obs []pipeline.Observation) {
	now := time.Now()
	t.l.mu.Lock()
	defer t.l.mu.Unlock()
	for _, o := range obs {
		k := o.Time.UnixNano()
		if at, ok := t.l.stored[k]; ok {
			t.l.samples = append(t.l.samples, now.Sub(at))
			delete(t.l.stored, k)
		}
	}
}

// percentiles are in milliseconds, over every sample so far.
func (l *latencyTaps) percentiles() (p50, p99 float64, n int) {
	l.mu.Lock()
	s := slices.Clone(l.samples)
	l.mu.Unlock()
	if len(s) == 0 {
		return 0, 0, 0
	}
	slices.Sort(s)
	at := func(q float64) float64 {
		return float64(s[min(int(q*float64(len(s))), len(s)-1)].Microseconds()) / 1000
	}
	return at(0.50), at(0.99), len(s)
}

// close unsubscribes and lets the samples go; safe to call twice.
func (l *latencyTaps) close() {
	l.mu.Lock()
	defer l.mu.Unlock()
	for _, u := range l.unsub {
		u()
	}
	l.unsub, l.stored, l.samples = nil, nil, nil
}
