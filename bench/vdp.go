package bench

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"runtime"
	"runtime/pprof"
	"time"

	"github.com/openbdp/bdp/actors"
	"github.com/openbdp/bdp/node"
	"github.com/openbdp/bdp/pipeline"
)

// VDPOptions shape the virtual-datapoint scenario; zero values take the
// defaults of the figure.
type VDPOptions struct {
	VDPs     int           // running formula datapoints; default 10,000
	Rate     int           // source observations per second; default 50,000
	PerWrite int           // observations per Batcher.Write; default 1,000
	Writers  int           // goroutines feeding the batcher; default 8
	Duration time.Duration // how long the feed runs; default 60 s
	// Sample: the latency of every Sample-th virtual datapoint is
	// recorded (default 10). Every tap on the router is one more
	// subscriber the batcher's writer goroutine calls after each commit,
	// so tapping all of them would load the path being measured.
	Sample int
	// Drain bounds the wait for outputs still pending when the feed
	// stops; default 10 s.
	Drain time.Duration
	// BatchWait is the batcher's MaxWait; zero keeps the pipeline's
	// default, which is what bdp serve runs with.
	BatchWait time.Duration

	// Mix: "on" runs the mix of issue 18 (vdp_mixrun.go) instead of the
	// uniform formulas, "off" never, "auto" (the default) from 100,000
	// datapoints.
	Mix string
	// History is how many observations of each source the mix stores
	// before its datapoints start; default 10.
	History int
	// Down is how long the mix's feed goes on while its engine is
	// stopped for the restart; default 3 s.
	Down time.Duration
	// ResumeConcurrency is Resume's concurrency in the mix's restart;
	// default bdp serve's, actors.DefaultResumeConcurrency.
	ResumeConcurrency int
	// TickRate is the engines' actors.EngineConfig.TickRate; 0 for the
	// default.
	TickRate int
	// NoBurst leaves out the mix's minute burst, which feeds through two
	// minute boundaries (at least 2 minutes).
	NoBurst bool
	// OnlyBurst runs the minute burst alone, without the mix before it:
	// the way to measure a change to timed triggers in minutes.
	OnlyBurst bool

	Progress   io.Writer // progress lines; nil for none
	CPUProfile io.Writer // if set, a CPU profile of the feed and drain
	// RestartCPUProfile, if set, gets a CPU profile of the mix's restart,
	// from the new engine's making until every datapoint is Running.
	RestartCPUProfile io.Writer
	HeapProfile       io.Writer // if set, a heap profile taken when heap_bytes_per_vdp is measured
	// FeedHeapProfile, if set, gets a heap profile at the end of the
	// feed: its alloc_space minus HeapProfile's (pprof -base) is what the
	// feed allocated, which is what keeps the garbage collector busy.
	FeedHeapProfile io.Writer
	// gcPercent is the collector's target in effect (node.GCTuner), set
	// by VDP: the feed reports it.
	gcPercent func() string
}

func (o *VDPOptions) fill() error {
	def := func(p *int, v int) {
		if *p == 0 {
			*p = v
		}
	}
	def(&o.VDPs, 10_000)
	def(&o.Rate, 50_000)
	def(&o.PerWrite, 1_000)
	def(&o.Writers, 8)
	def(&o.Sample, 10)
	def(&o.History, 10)
	def(&o.ResumeConcurrency, actors.DefaultResumeConcurrency)
	if o.Down == 0 {
		o.Down = 3 * time.Second
	}
	if o.Mix == "" {
		o.Mix = "auto"
	}
	if o.Mix != "auto" && o.Mix != "on" && o.Mix != "off" {
		return fmt.Errorf("vdp: -mix must be auto, on or off, got %q", o.Mix)
	}
	if o.Duration == 0 {
		o.Duration = time.Minute
	}
	if o.Drain == 0 {
		o.Drain = 10 * time.Second
	}
	if o.Progress == nil {
		o.Progress = io.Discard
	}
	if o.VDPs < 1 || o.Rate < 1 || o.PerWrite < 1 || o.Writers < 1 || o.Sample < 1 || o.History < 1 || o.ResumeConcurrency < 1 || o.Down < 0 || o.Duration < 0 || o.Drain < 0 || o.BatchWait < 0 {
		return fmt.Errorf("vdp: every count must be positive: %+v", *o)
	}
	return nil
}

// The shape of every virtual datapoint: the issue's "two pins, count
// window 10, mean, every_value".
const (
	vdpWindow  = 10
	vdpFormula = "(P1 + P2) / 2"
)

// srcBench labels the fed observations in the pipeline's metrics, so
// inputs and outputs (source "vdp") are counted apart.
const srcBench pipeline.Source = "bench"

// VDP measures the virtual-datapoint engine under load (the issue's
// figure): opts.VDPs formula datapoints, each reading two sources of its
// own through a count-10 mean every_value pin, fed opts.Rate source
// observations per second through the pipeline.
//
// The engine runs in this process, over the real store, batcher and
// router and a throwaway PostgreSQL, rather than behind `bdp serve`: the
// latency asked for is from a source observation being stored to its
// output being stored, and the one place that sees both commits is the
// pipeline's router (it is handed every batch after its commit, in
// commit order). A subscriber there timestamps both ends exactly; an
// out-of-process bdp serve has no such hook, and polling the database
// would measure the poll. The heap per datapoint likewise needs the
// engine's own process.
//
// Each virtual datapoint i reads sources s(2i) and s(2i+1), which nobody
// else reads: one source observation then causes exactly one output, so
// "outputs keep pace with inputs" means outputs_per_s ≈ inputs_per_s, and
// outputs still pending are simply inputs stored − outputs stored. (Shared
// sources would make each input fan out to several outputs and blur that
// comparison.)
func VDP(ctx context.Context, opts VDPOptions) (map[string]any, error) {
	if err := opts.fill(); err != nil {
		return nil, err
	}
	progress := func(format string, args ...any) { fmt.Fprintf(opts.Progress, "vdp: "+format+"\n", args...) }
	// The engine runs with bdp serve's collector settings, and as bdp
	// serve does, a GOGC or GOMEMLIMIT in the environment rules instead.
	gc := node.TuneGC(os.Getenv)
	defer gc.Stop()
	opts.gcPercent = gc.Percent
	if opts.mixOn() {
		return vdpMix(ctx, opts, progress)
	}

	rig, err := newVDPRig(ctx, opts, progress)
	if err != nil {
		return nil, err
	}
	defer rig.close()
	project, reg, router, batcher := rig.project, rig.reg, rig.router, rig.batcher

	f := newVDPFeed(project, opts, rig.now)
	progress("storing %d observations of history (%d sources x %d)", f.sources*vdpWindow, f.sources, vdpWindow)
	if err := f.preload(ctx, batcher); err != nil {
		return nil, err
	}

	// Heap: a baseline once the engine exists without actors, then again
	// once every actor runs with full windows. The engine's fixed cost
	// (actor system, process registry) is not per datapoint and is
	// reported apart.
	beforeEngine := heapAfterGC()
	if opts.HeapProfile != nil {
		// Sampled finely (every 4 KiB rather than 512 KiB), so the profile
		// accounts for the delta per datapoint; kept for the feed, as a
		// profile scales its samples by the rate when it is written. Not
		// every byte (rate 1): each sampled object that stays live carries
		// a record every GC cycle walks, which would skew the latencies.
		// Profiled runs are for finding costs, not for the figures.
		defer func(rate int) { runtime.MemProfileRate = rate }(runtime.MemProfileRate)
		runtime.MemProfileRate = 4096
	}
	history := &countingHistory{SourceReader: rig.history()}
	engine, err := rig.newEngine(history)
	if err != nil {
		return nil, err
	}
	// Shutdown stops the actors before the deferred batcher.Stop runs.
	defer engine.Shutdown(context.Background())
	before := heapAfterGC()
	progress("starting %d virtual datapoints", opts.VDPs)
	startedAt := time.Now()
	if err := startVDPs(ctx, engine, project, opts.VDPs); err != nil {
		return nil, err
	}
	startSeconds := time.Since(startedAt).Seconds()
	// The windows are full when the history the actors read at start held
	// vdpWindow observations for every pin: count windows keep exactly
	// that, and nothing has been fed live yet.
	if got, want := history.points.Load(), int64(2*opts.VDPs*vdpWindow); got != want {
		return nil, fmt.Errorf("windows not full: the actors read %d observations of history, want %d", got, want)
	}
	after := heapAfterGC()
	heapPerVDP := float64(int64(after)-int64(before)) / float64(opts.VDPs)
	if opts.HeapProfile != nil {
		if err := pprof.Lookup("heap").WriteTo(opts.HeapProfile, 0); err != nil {
			return nil, err
		}
	}
	progress("started in %.1f s; heap %.0f bytes per virtual datapoint", startSeconds, heapPerVDP)

	n := (opts.VDPs + opts.Sample - 1) / opts.Sample
	lat := newLatencyTaps(router, project, uniformTaps(opts), 2*n*opts.Rate/f.sources, opts.Duration)
	defer lat.close()

	if opts.CPUProfile != nil {
		if err := pprof.StartCPUProfile(opts.CPUProfile); err != nil {
			return nil, err
		}
		defer pprof.StopCPUProfile()
	}
	progress("feeding %d observations/s for %s", opts.Rate, opts.Duration)
	load := loadAverage()
	inBase, outBase := storedCount(reg, srcBench), storedCount(reg, actors.SourceVDP)
	// 0.032 is a bucket bound of bdp_pipeline_flush_seconds.
	flushBase, flushSecondsBase, slowBase := histogram(reg, "bdp_pipeline_flush_seconds", 0.032)
	feedStart := time.Now()
	if err := f.run(ctx, batcher); err != nil {
		return nil, err
	}
	// The feed window: the configured duration, or longer when the last
	// write's commit came after it (the last write is due one interval
	// before the end, so usually it does not).
	feedSeconds := max(time.Since(feedStart).Seconds(), opts.Duration.Seconds())
	inputs := storedCount(reg, srcBench) - inBase
	outputs := storedCount(reg, actors.SourceVDP) - outBase
	backlog := inputs - outputs

	// Every stored input causes exactly one output, so the backlog is
	// drained when the two counts meet.
	drainStart := time.Now()
	drained := backlog == 0
	for !drained && time.Since(drainStart) < opts.Drain && ctx.Err() == nil {
		time.Sleep(5 * time.Millisecond)
		drained = storedCount(reg, actors.SourceVDP)-outBase >= inputs
	}
	drainMS := float64(time.Since(drainStart).Microseconds()) / 1000
	if backlog == 0 {
		drainMS = 0
	}
	pending := inputs - (storedCount(reg, actors.SourceVDP) - outBase)
	// How the batcher spent the run: what limits latency is mostly how
	// long one commit takes and how many there are.
	flushes, flushSeconds, slow := histogram(reg, "bdp_pipeline_flush_seconds", 0.032)
	flushes -= flushBase
	flushSeconds -= flushSecondsBase
	slow -= slowBase
	if opts.CPUProfile != nil {
		pprof.StopCPUProfile()
	}
	if opts.FeedHeapProfile != nil {
		if err := pprof.Lookup("heap").WriteTo(opts.FeedHeapProfile, 0); err != nil {
			return nil, err
		}
	}
	p50, p99, samples := lat.percentiles()
	lat.close()
	heapEnd := heapAfterGC()
	progress("fed %.0f inputs/s, %.0f outputs/s; p50 %.1f ms, p99 %.1f ms over %d samples; backlog %d drained in %.0f ms",
		inputs/feedSeconds, outputs/feedSeconds, p50, p99, samples, int64(backlog), drainMS)

	res := map[string]any{
		"scenario": "vdp", "vdps": opts.VDPs, "sources": f.sources, "duration_s": round(opts.Duration.Seconds()),
		"feed_s": round(feedSeconds), "target_inputs_per_s": opts.Rate,
		"inputs_per_s": int(inputs / feedSeconds), "outputs_per_s": int(outputs / feedSeconds),
		"latency_p50_ms": round(p50), "latency_p99_ms": round(p99), "latency_samples": samples,
		"heap_bytes_per_vdp": int(heapPerVDP), "engine_heap_bytes": int64(before) - int64(beforeEngine),
		// The same after the run: windows and mailboxes in their steady
		// state (the pipeline's garbage is collected, pools stay).
		"heap_bytes_per_vdp_after_feed": int(float64(int64(heapEnd)-int64(before)) / float64(opts.VDPs)),
		"start_s":                       round(startSeconds),
		// The host's 1-minute load average when the feed began: PostgreSQL
		// and the engine share its CPUs, so anything else running skews
		// the figures.
		"loadavg_at_start": load,
		"cpus":             runtime.NumCPU(),
		"gogc":             gc.Percent(), // at the end of the feed
		"backlog_at_end":   int64(backlog), "drain_ms": round(drainMS), "drained": drained,
	}
	if flushes > 0 {
		stored := storedCount(reg, srcBench) - inBase + storedCount(reg, actors.SourceVDP) - outBase
		res["flushes_per_s"] = round(float64(flushes) / feedSeconds)
		res["mean_batch_obs"] = int(stored / float64(flushes))
		res["mean_flush_ms"] = round(flushSeconds / float64(flushes) * 1000)
		res["batcher_busy"] = round(flushSeconds / (feedSeconds + drainMS/1000))
		// Every output queued behind a slow commit waits for it: these
		// make the latency tail.
		res["flushes_over_32ms"] = slow
	}
	if !drained {
		res["pending_after_drain"] = int64(pending)
	}
	if err := f.err(); err != nil {
		return res, err
	}
	return res, nil
}

func vdpName(i int) string    { return fmt.Sprintf("v%05d", i) }
func sourceName(i int) string { return fmt.Sprintf("s%05d", i) }

// vdpDefinition builds virtual datapoint i the way the HTTP layer does:
// the body validated and defaulted by ParseConfig, stored in its marshalled
// form, turned into a Definition by Engine.Definition (as Resume does).
func vdpDefinition(engine *actors.Engine, project int64, i int) (actors.Definition, error) {
	pin := func(src int) map[string]any {
		return map[string]any{"dataPointID": sourceName(src), "data_range": map[string]any{"count": vdpWindow},
			"aggregate": "mean", "trigger": "every_value"}
	}
	stored, err := storedConfig(actors.TypeFormula, map[string]any{
		"pins":       map[string]any{"P1": pin(2 * i), "P2": pin(2*i + 1)},
		"parameters": map[string]any{"formula": vdpFormula},
	})
	if err != nil {
		return actors.Definition{}, err
	}
	return engine.Definition(project, vdpName(i), actors.TypeFormula, stored)
}

// storedConfig is a configuration body as the HTTP layer stores it:
// validated and defaulted by ParseConfig, then marshalled.
func storedConfig(typ string, body map[string]any) (json.RawMessage, error) {
	raw, err := json.Marshal(body)
	if err != nil {
		return nil, err
	}
	cfg, err := actors.ParseConfig(typ, raw)
	if err != nil {
		return nil, err
	}
	return json.Marshal(cfg)
}
