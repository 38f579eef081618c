package bench

import (
	"context"
	"fmt"
	"math"
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
	n := vdpWindow * f.sources
	if err := storeInBatches(ctx, b, n, func(k int) pipeline.Observation { return f.obs(k - n) }); err != nil {
		return err
	}
	return storeOutputRows(ctx, b, f.project, f.base, f.opts.VDPs, vdpName)
}

// storeInBatches stores obs(k) for every k in [0, n), 10,000 a write.
func storeInBatches(ctx context.Context, b *pipeline.Batcher, n int, obs func(k int) pipeline.Observation) error {
	const perWrite = 10_000
	for k := 0; k < n; k += perWrite {
		batch := make([]pipeline.Observation, min(perWrite, n-k)) // the batcher owns it once written
		for i := range batch {
			batch[i] = obs(k + i)
		}
		if err := b.Write(ctx, srcBench, batch); err != nil {
			return err
		}
	}
	return nil
}

// storeOutputRows stores one observation an hour before base of each of
// n output datapoints, named by name, so that their rows exist.
func storeOutputRows(ctx context.Context, b *pipeline.Batcher, project int64, base time.Time, n int, name func(int) string) error {
	old := base.Add(-time.Hour)
	return storeInBatches(ctx, b, n, func(i int) pipeline.Observation {
		return pipeline.Observation{ProjectID: project, DataPointID: name(i), Time: old, Value: 0}
	})
}

// run feeds opts.Rate observations a second for opts.Duration (feedPaced).
func (f *vdpFeed) run(ctx context.Context, b *pipeline.Batcher) error {
	total := int(f.opts.Duration.Seconds() * float64(f.opts.Rate))
	k := 0
	return feedPaced(ctx, b, f.opts, total, nil, f.fail, func(n int) []pipeline.Observation {
		obs := make([]pipeline.Observation, n)
		for i := range obs {
			obs[i] = f.obs(k + i)
		}
		k += n
		return obs
	})
}

// feedPaced writes opts.Rate observations a second in writes of PerWrite,
// total in all, or until stop is closed when total is 0, paced by the wall
// clock: write j is due at j·PerWrite/Rate after the start; next makes a
// write of n observations, on one goroutine, in order. Writers take the
// writes from a queue as deep as there are writers; when all are waiting
// for commits and the queue is full, the pacer blocks and falls behind,
// which shows as inputs_per_s below the target rather than as a burst
// later. It returns once every write is answered; failed writes go to
// fail.
func feedPaced(ctx context.Context, b *pipeline.Batcher, opts VDPOptions, total int, stop <-chan struct{},
	fail func(error), next func(n int) []pipeline.Observation) error {
	writes := (total + opts.PerWrite - 1) / opts.PerWrite
	if total == 0 {
		writes = math.MaxInt
	}
	queue := make(chan []pipeline.Observation, opts.Writers)
	var wg sync.WaitGroup
	for range opts.Writers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for obs := range queue {
				if err := b.Write(ctx, srcBench, obs); err != nil {
					fail(err)
				}
			}
		}()
	}
	interval := time.Duration(float64(time.Second) * float64(opts.PerWrite) / float64(opts.Rate))
	tick := time.NewTicker(min(interval, 10*time.Millisecond))
	defer tick.Stop()
	start := time.Now()
	k := 0
	stopped := false
	for j := 0; j < writes && ctx.Err() == nil && !stopped; {
		due := min(int(time.Since(start)/interval)+1, writes)
		for ; j < due; j++ {
			n := opts.PerWrite
			if total > 0 {
				n = min(n, total-k)
			}
			k += n
			select {
			case queue <- next(n):
			case <-stop:
				// Behind, the pacer would send its whole backlog first,
				// which grows while it does.
				stopped = true
			case <-ctx.Done():
			}
			if stopped {
				break
			}
		}
		if j == writes {
			break
		}
		select {
		case <-tick.C:
		case <-stop:
			stopped = true
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

// latencyTaps subscribe to the router beside the actors, for the
// sampled virtual datapoints: to their sources, noting when each
// observation was stored, and to their outputs, which close the interval.
// The router calls them on the batcher's writer goroutines, the inputs'
// lane and the outputs', right after each commit; a source's delivery
// reaches the tap right after the actor (one run, the same subscribers),
// before the output it causes can be committed. Entries leave the map
// when their output arrives, so it holds the in-flight ones only.
type latencyTaps struct {
	mu      sync.Mutex
	stored  map[int64]time.Time // input time (UnixNano) -> when it was stored
	samples []time.Duration
	at      []time.Time // when each sample's input was stored
	unsub   []func()
}

// tapped is one sampled virtual datapoint: its sources and its output.
type tapped struct {
	sources []string
	output  string
}

// uniformTaps are the sampled datapoints of the uniform scenario: every
// Sample-th, with its two sources.
func uniformTaps(opts VDPOptions) []tapped {
	var taps []tapped
	for i := 0; i < opts.VDPs; i += opts.Sample {
		taps = append(taps, tapped{[]string{sourceName(2 * i), sourceName(2*i + 1)}, vdpName(i)})
	}
	return taps
}

// newLatencyTaps taps the given datapoints; perS sizes the in-flight map
// and, over d, the samples.
func newLatencyTaps(router *pipeline.Router, project int64, taps []tapped, perS int, d time.Duration) *latencyTaps {
	l := &latencyTaps{stored: make(map[int64]time.Time, perS),
		samples: make([]time.Duration, 0, perS*int(d.Seconds()+1))}
	for _, t := range taps {
		for _, s := range t.sources {
			l.unsub = append(l.unsub, router.Subscribe(project, s, inputTap{l}))
		}
		l.unsub = append(l.unsub, router.Subscribe(project, t.output, outputTap{l}))
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
			t.l.at = append(t.l.at, at)
			delete(t.l.stored, k)
		}
	}
}

// percentiles are in milliseconds, over every sample so far.
func (l *latencyTaps) percentiles() (p50, p99 float64, n int) {
	l.mu.Lock()
	s := slices.Clone(l.samples)
	l.mu.Unlock()
	return quantileMS(s, 0.50), quantileMS(s, 0.99), len(s)
}

// p99BySlot is the p99 in milliseconds of the samples whose inputs were
// stored in each slot of length d from began on: where in the feed the
// tail lies (a minute boundary's ticks, a checkpoint).
func (l *latencyTaps) p99BySlot(began time.Time, d time.Duration) []float64 {
	l.mu.Lock()
	var slots [][]time.Duration
	for i, at := range l.at {
		k := max(0, int(at.Sub(began)/d))
		for len(slots) <= k {
			slots = append(slots, nil)
		}
		slots[k] = append(slots[k], l.samples[i])
	}
	l.mu.Unlock()
	out := make([]float64, len(slots))
	for i, s := range slots {
		out[i] = quantileMS(s, 0.99)
	}
	return out
}

// quantileMS is the q-quantile of s in milliseconds (0 for none); it
// sorts s.
func quantileMS(s []time.Duration, q float64) float64 {
	if len(s) == 0 {
		return 0
	}
	slices.Sort(s)
	return float64(s[min(int(q*float64(len(s))), len(s)-1)].Microseconds()) / 1000
}

// close unsubscribes and lets the samples go; safe to call twice.
func (l *latencyTaps) close() {
	l.mu.Lock()
	defer l.mu.Unlock()
	for _, u := range l.unsub {
		u()
	}
	l.unsub, l.stored, l.samples, l.at = nil, nil, nil, nil
}
