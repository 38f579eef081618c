package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"time"

	"github.com/openbdp/bdp/actors"
	"github.com/openbdp/bdp/bench"
)

// vdpScenario is `bdp-bench vdp`: running formula datapoints under a
// stream of source observations (bench/vdp.go). Unlike the other
// scenarios it runs the engine in this process: latency is taken at the
// pipeline's router, which bdp serve does not expose.
func vdpScenario() scenario {
	return scenario{
		doc: "virtual datapoints: 10,000 formulas (2 pins, count 10, mean, every_value) fed 50,000 obs/s (goals: outputs keep pace, p99 <= 50 ms, <= 4 KiB heap each); from -vdps 100000 (or -mix on) the mix of issue 18 with a restart, a recompute check and a minute burst",
		run: runVDP,
	}
}

func runVDP(ctx context.Context, args []string) (_ map[string]any, err error) {
	fs := flag.NewFlagSet("vdp", flag.ContinueOnError)
	var o bench.VDPOptions
	fs.IntVar(&o.VDPs, "vdps", 10_000, "running virtual datapoints (two sources each)")
	fs.IntVar(&o.Rate, "rate", 50_000, "source observations per second")
	fs.IntVar(&o.PerWrite, "per-write", 1_000, "observations per pipeline write")
	fs.IntVar(&o.Writers, "writers", 8, "goroutines feeding the pipeline")
	fs.DurationVar(&o.Duration, "duration", time.Minute, "how long the feed runs")
	fs.IntVar(&o.Sample, "sample", 10, "record the latency of every n-th virtual datapoint")
	fs.DurationVar(&o.BatchWait, "batch-wait", 0, "the batcher's MaxWait (0: the pipeline's default, as bdp serve runs)")
	fs.DurationVar(&o.Drain, "drain", 10*time.Second, "how long to wait for outputs pending when the feed stops")
	fs.StringVar(&o.Mix, "mix", "auto", "auto, on or off: the mix of issue 18 (types, windows, triggers; restart; recompute check; minute burst) instead of uniform formulas; auto: on from 100,000 vdps")
	fs.IntVar(&o.History, "history", 10, "mix: stored observations per source before the datapoints start")
	fs.DurationVar(&o.Down, "down", 3*time.Second, "mix: how long the feed goes on while the engine is stopped for the restart")
	fs.IntVar(&o.ResumeConcurrency, "resume-concurrency", actors.DefaultResumeConcurrency, "mix: datapoints Resume starts at once (bdp serve's BDP_RESUME_CONCURRENCY)")
	fs.IntVar(&o.TickRate, "tick-rate", actors.DefaultTickRate, "timed-trigger ticks a second at most at one boundary (bdp serve's BDP_TICK_RATE)")
	burst := fs.String("burst", "on", "mix: on, off or only: the minute burst (every_minute datapoints through two minute boundaries, about 3 minutes) after the mix, not at all, or alone")
	cpu := fs.String("cpuprofile", "", "write a CPU profile of the feed and drain to this file")
	restartCPU := fs.String("restart-cpuprofile", "", "mix: write a CPU profile of the restart, from the new engine until all are Running, to this file")
	mem := fs.String("memprofile", "", "write a heap profile, taken once all datapoints run, to this file, and one at the end of the feed to FILE.feed")
	if err := fs.Parse(args); err != nil {
		return nil, err
	}
	switch *burst {
	case "on", "off", "only":
		o.NoBurst, o.OnlyBurst = *burst == "off", *burst == "only"
	default:
		return nil, fmt.Errorf("vdp: -burst is on, off or only, not %q", *burst)
	}
	o.Progress = os.Stderr
	for _, p := range []struct {
		path string
		dst  *io.Writer
	}{{*cpu, &o.CPUProfile}, {*restartCPU, &o.RestartCPUProfile}, {*mem, &o.HeapProfile}, {feedProfile(*mem), &o.FeedHeapProfile}} {
		if p.path == "" {
			continue
		}
		f, err := os.Create(p.path)
		if err != nil {
			return nil, err
		}
		// A profile cut short by a failed close is worth an error.
		defer func() { err = errors.Join(err, f.Close()) }()
		*p.dst = f
	}
	return bench.VDP(ctx, o)
}

// feedProfile names the heap profile taken at the end of the feed.
func feedProfile(mem string) string {
	if mem == "" {
		return ""
	}
	return mem + ".feed"
}
