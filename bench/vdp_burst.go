package bench

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/openbdp/bdp/actors"
	"github.com/openbdp/bdp/pipeline"
)

// The minute burst (issue 18 item 6): opts.VDPs every_minute datapoints,
// each the mean of a 1-minute time window of a source of its own, fed
// opts.Rate observations a second through two minute boundaries, with 20 s
// of feed before each to compare ingestion with.

const (
	burstBefore = 20 * time.Second // the rate before a boundary: the median of its 1-s rates
	burstAfter  = 5 * time.Second  // the rate after it: the lowest 1-s rate beginning in it
	burstSlide  = 100 * time.Millisecond
)

func burstSource(i int) string { return fmt.Sprintf("bs%05d", i) }
func burstOutput(i int) string { return fmt.Sprintf("bv%05d", i) }

// minuteBurst runs the burst phase on its own engine, after the mix's has
// stopped, and returns its keys.
//
// minute_burst_p99_ms: over the outputs of every Sample-th datapoint, the
// wall time its output was stored (at the router, as the latency of the
// mix) minus its boundary, the output's time; sampled like the mix, as a
// tap is one more subscriber the batcher calls after each commit.
//
// ingest_min_ratio_burst: the stored inputs are counted every 100 ms; the
// rate after a boundary is the lowest over the 1-s windows that begin in
// the 5 s after it, sliding by 100 ms, and it is divided by the median of
// the twenty 1-s rates before the boundary; the lowest ratio of the
// boundaries. 1-s windows, not 100-ms ones: the batcher commits in
// batches, and a 100-ms window may hold one commit or none when nothing
// is wrong.
func minuteBurst(ctx context.Context, rig *vdpRig, opts VDPOptions, progress func(string, ...any)) (map[string]any, error) {
	n := opts.VDPs
	names := make([]string, n)
	for i := range names {
		names[i] = burstSource(i)
	}
	feed := newMixFeed(rig.project, names, nil, nil, opts.Rate)
	// One observation of each source and of each output: the rows exist,
	// as they do in a platform that runs, and the first boundary finds
	// every window holding data.
	progress("burst: storing one observation of each of %d sources and outputs", n)
	now := time.Now().UTC()
	if err := storeInBatches(ctx, rig.batcher, n, feed.history(now, 1)); err != nil {
		return nil, err
	}
	if err := storeOutputRows(ctx, rig.batcher, rig.project, now, n, burstOutput); err != nil {
		return nil, err
	}
	engine, err := rig.newEngine(rig.history())
	if err != nil {
		return nil, err
	}
	defer engine.Shutdown(context.Background())
	progress("burst: starting %d every_minute datapoints", n)
	var started atomic.Int64
	stopReport := reportEvery(progress, "burst: started", n, &started)
	err = forEach(ctx, n, startParallel, func(ctx context.Context, i int) error {
		defer started.Add(1)
		raw, err := storedConfig(actors.TypeFormula, map[string]any{
			"pins": map[string]any{"P1": map[string]any{"dataPointID": burstSource(i), "data_range": span("1m"),
				"aggregate": "mean", "trigger": "every_minute"}},
			"parameters": map[string]any{"formula": "P1"}})
		if err != nil {
			return err
		}
		def, err := engine.Definition(rig.project, burstOutput(i), actors.TypeFormula, raw)
		if err == nil {
			_, err = engine.Start(ctx, def)
		}
		return err
	})
	stopReport()
	if err != nil {
		return nil, fmt.Errorf("burst: %w", err)
	}

	taps := &boundaryTaps{}
	for i := 0; i < n; i += opts.Sample {
		taps.unsub = append(taps.unsub, rig.router.Subscribe(rig.project, burstOutput(i), taps))
	}
	defer taps.close()
	counts := sampleCount(func() float64 { return storedCount(rig.reg, srcBench) }, burstSlide)
	defer counts.stop()

	stop := make(chan struct{})
	fed := runFeed(ctx, rig.batcher, opts, stop, feed)
	began := time.Now()
	first := began.Add(burstBefore + 2*time.Second).Truncate(time.Minute).Add(time.Minute)
	boundaries := []time.Time{first, first.Add(time.Minute)}
	progress("burst: feeding %d observations/s through the boundaries %s and %s", opts.Rate,
		boundaries[0].Format("15:04:05"), boundaries[1].Format("15:04:05"))
	select {
	case <-time.After(time.Until(boundaries[1].Add(burstAfter + 2*time.Second))):
	case <-ctx.Done():
	}
	close(stop)
	if err := <-fed; err != nil {
		return nil, err
	}
	counts.stop()
	taps.close()

	minRatio := -1.0
	for _, b := range boundaries {
		if r := counts.ratio(b); minRatio < 0 || r < minRatio {
			minRatio = r
		}
		progress("burst: boundary %s: inputs stored in each 0.5 s from 1 s before it: %v", b.Format("15:04:05"), counts.rates(b.Add(-time.Second), 500*time.Millisecond, 14))
	}
	// The same measure half-way between the boundaries, where nothing
	// fires: how far ingestion dips on this machine without a burst.
	quiet := counts.ratio(boundaries[0].Add(30 * time.Second))
	samples := taps.take()
	p50, p99 := quantileMS(samples, 0.50), quantileMS(samples, 0.99)
	progress("burst: output p50 %.0f ms, p99 %.0f ms after the boundary over %d samples; ingestion at least %.2f of its rate (%.2f without a burst)",
		p50, p99, len(samples), minRatio, quiet)
	return map[string]any{"burst_vdps": n, "minute_burst_p50_ms": round(p50), "minute_burst_p99_ms": round(p99),
		"minute_burst_samples": len(samples), "ingest_min_ratio_burst": round(minRatio),
		"ingest_min_ratio_quiet": round(quiet),
		"burst_feed_s":           round(time.Since(began).Seconds())}, nil
}

// runFeed runs feedPaced with the mix's feed in the background until stop
// is closed; the channel answers its error, a failed write included.
func runFeed(ctx context.Context, b *pipeline.Batcher, opts VDPOptions, stop <-chan struct{}, f *mixFeed) <-chan error {
	done := make(chan error, 1)
	go func() {
		var mu sync.Mutex
		var first error
		err := feedPaced(ctx, b, opts, 0, stop, func(err error) {
			mu.Lock()
			defer mu.Unlock()
			if first == nil {
				first = fmt.Errorf("a write of the feed failed: %w", err)
			}
		}, f.next)
		if err == nil {
			err = first
		}
		done <- err
	}()
	return done
}

// boundaryTaps time the outputs of timed datapoints from their boundary,
// which is the output's time.
type boundaryTaps struct {
	mu      sync.Mutex
	samples []time.Duration
	unsub   []func()
}

func (t *boundaryTaps) Deliver(obs []pipeline.Observation) {
	now := time.Now()
	t.mu.Lock()
	defer t.mu.Unlock()
	for _, o := range obs {
		t.samples = append(t.samples, now.Sub(o.Time))
	}
}

func (t *boundaryTaps) take() []time.Duration {
	t.mu.Lock()
	defer t.mu.Unlock()
	return slices.Clone(t.samples)
}

// close unsubscribes; safe to call twice.
func (t *boundaryTaps) close() {
	t.mu.Lock()
	unsub := t.unsub
	t.unsub = nil
	t.mu.Unlock()
	for _, u := range unsub {
		u()
	}
}

// countSamples are a counter's values taken every interval.
type countSamples struct {
	mu    sync.Mutex
	at    []time.Time
	value []float64
	done  chan struct{}
	once  sync.Once
	ended sync.WaitGroup
}

func sampleCount(read func() float64, every time.Duration) *countSamples {
	c := &countSamples{done: make(chan struct{})}
	c.ended.Add(1)
	go func() {
		defer c.ended.Done()
		tick := time.NewTicker(every)
		defer tick.Stop()
		for {
			v, now := read(), time.Now()
			c.mu.Lock()
			c.at, c.value = append(c.at, now), append(c.value, v)
			c.mu.Unlock()
			select {
			case <-tick.C:
			case <-c.done:
				return
			}
		}
	}()
	return c
}

func (c *countSamples) stop() {
	c.once.Do(func() { close(c.done) })
	c.ended.Wait()
}

// valueAt interpolates the counter linearly between the samples around t.
func (c *countSamples) valueAt(t time.Time) float64 {
	i, _ := slices.BinarySearchFunc(c.at, t, func(a, t time.Time) int { return a.Compare(t) })
	switch {
	case len(c.at) == 0:
		return 0
	case i == 0:
		return c.value[0]
	case i == len(c.at):
		return c.value[len(c.value)-1]
	}
	t0, t1 := c.at[i-1], c.at[i]
	f := float64(t.Sub(t0)) / float64(t1.Sub(t0))
	return c.value[i-1] + f*(c.value[i]-c.value[i-1])
}

// rates are the counts of n intervals of the given length from from.
func (c *countSamples) rates(from time.Time, every time.Duration, n int) []int {
	c.mu.Lock()
	defer c.mu.Unlock()
	out := make([]int, n)
	for i := range out {
		t := from.Add(time.Duration(i) * every)
		out[i] = int(c.valueAt(t.Add(every)) - c.valueAt(t))
	}
	return out
}

// ratio is the lowest 1-s rate beginning in the burstAfter after b over
// the median 1-s rate of the burstBefore before it.
func (c *countSamples) ratio(b time.Time) float64 {
	c.mu.Lock()
	defer c.mu.Unlock()
	perS := func(from time.Time) float64 { return c.valueAt(from.Add(time.Second)) - c.valueAt(from) }
	var before []float64
	for s := b.Add(-burstBefore); s.Before(b); s = s.Add(time.Second) {
		before = append(before, perS(s))
	}
	lowest := -1.0
	for s := b; s.Before(b.Add(burstAfter - time.Second + time.Nanosecond)); s = s.Add(burstSlide) {
		if r := perS(s); lowest < 0 || r < lowest {
			lowest = r
		}
	}
	base := Median(before)
	if base <= 0 {
		return 0
	}
	return lowest / base
}
