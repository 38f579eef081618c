package bench

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"runtime/pprof"
	"time"

	"github.com/openbdp/bdp/actors"
)

// mixOn tells whether the scenario runs the mix: "on", or "auto" (the
// default) from 100,000 datapoints, so that the issue's `bdp-bench vdp
// -vdps 100000 -rate 100000` runs it while the 10,000 default stays the
// uniform scenario that `make bench-compare` runs against old revisions.
func (o VDPOptions) mixOn() bool {
	return o.Mix == "on" || (o.Mix == "auto" && o.VDPs >= 100_000)
}

// vdpMix is the scenario of issue 18 items 3 to 6, in phases:
//
//  1. history (opts.History observations a source) and the mix of
//     mixTable created in the store and started, then fed opts.Rate
//     observations a second for opts.Duration: rate_sustained,
//     latency_p99_ms (every_value datapoints, sampled), and the heap after
//     the feed (windows in their steady state);
//  2. a restart while the feed goes on: restart_all_running_s;
//  3. every output of phases 1 and 2 compared with a recompute:
//     outputs_different, verify_s;
//  4. unless opts.NoBurst, the minute burst (vdp_burst.go).
//
// Sources hold opts.History stored points each, not the 10,000:
// at 100,000 datapoints of about 1.7 sources each that would be 1.7e9
// rows, more than the disk of the machine this was written on holds; how
// the restart scales with history depth is measured apart.
func vdpMix(ctx context.Context, opts VDPOptions, progress func(string, ...any)) (map[string]any, error) {
	l := newMixLayout(opts.VDPs)
	// Each source's observations must be stored in their order
	// (mixFeed): the writes in flight must not hold one source twice.
	if inFlight := 2 * opts.PerWrite * opts.Writers; l.sources < inFlight {
		return nil, fmt.Errorf("vdp mix: %d sources, fewer than 2 x per-write x writers (%d): a source's observations could be stored out of order", l.sources, inFlight)
	}
	rig, err := newVDPRig(ctx, opts, progress)
	if err != nil {
		return nil, err
	}
	defer rig.close()
	if opts.OnlyBurst {
		return minuteBurst(ctx, rig, opts, progress)
	}
	names := make([]string, l.sources)
	for i := range names {
		names[i] = mixSourceName(i)
	}
	feed := newMixFeed(rig.project, names, l.guarded, l.leads, opts.Rate)
	interval := time.Duration(l.sources) * feed.step // between two observations of one source
	histEnd := time.Now().UTC()
	progress("mix: %d datapoints of %d shapes over %d sources; storing %d observations of history each",
		opts.VDPs, len(mixTable), l.sources, opts.History)
	if err := rig.st.EnsurePartitions(ctx, histEnd.Add(-time.Duration(opts.History)*interval-time.Hour), histEnd); err != nil {
		return nil, err
	}
	if err := storeInBatches(ctx, rig.batcher, opts.History*l.sources, feed.history(histEnd, opts.History)); err != nil {
		return nil, err
	}
	if err := storeOutputRows(ctx, rig.batcher, rig.project, histEnd, opts.VDPs, vdpName); err != nil {
		return nil, err
	}

	engine, err := rig.newEngine(rig.history())
	if err != nil {
		return nil, err
	}
	// live is the engine running, if any, for the deferred Shutdown to
	// stop before the rig; engine stays usable for Definition once stopped.
	live := engine
	defer func() {
		if live != nil {
			live.Shutdown(context.Background())
		}
	}()
	before := heapAfterGC()
	progress("mix: creating and starting %d virtual datapoints", opts.VDPs)
	startedAt := time.Now()
	cursors, err := startMix(ctx, rig.st, engine, rig.project, l, progress)
	if err != nil {
		return nil, err
	}
	res := map[string]any{"scenario": "vdp", "mix": true, "vdps": opts.VDPs, "shapes": len(mixTable), "sources": l.sources,
		"history_per_source": opts.History, "target_inputs_per_s": opts.Rate, "duration_s": round(opts.Duration.Seconds()),
		"start_s": round(time.Since(startedAt).Seconds()), "loadavg_at_start": loadAverage(), "cpus": runtime.NumCPU()}
	progress("mix: started in %.1f s", res["start_s"])
	// The first minute boundary after every datapoint runs: the run goes
	// on past it, so that the every_minute datapoints' outputs are
	// compared too, however short the feed.
	firstMinute := time.Now().Truncate(time.Minute).Add(time.Minute)

	if err := mixFeedPhase(ctx, rig, engine, opts, l, feed, before, interval, res, progress); err != nil {
		return res, err
	}

	fd := &feeder{ctx: ctx, b: rig.batcher, opts: opts, f: feed}
	fd.start()
	live = nil // restartMix stops it
	inBase := storedCount(rig.reg, srcBench)
	engine, res["restart_all_running_s"], err = restartMix(ctx, rig, engine, opts, progress)
	if s, ok := res["restart_all_running_s"].(float64); ok && s > 0 {
		// What the feed stored meanwhile: the restart shares the machine
		// with it, and the more the pipeline takes, the less is left for
		// the resume.
		res["restart_inputs_per_s"] = int((storedCount(rig.reg, srcBench) - inBase) / (s + opts.Down.Seconds()))
		progress("restart: the feed stored %d inputs/s meanwhile", res["restart_inputs_per_s"])
	}
	live = engine
	if err == nil {
		res["running_after_restart"], err = rig.running(ctx)
	}
	if err != nil {
		return res, errors.Join(err, fd.halt())
	}
	// Live data through the resumed actors before the feed stops, and
	// past the first minute boundary.
	time.Sleep(max(2*time.Second, time.Until(firstMinute.Add(timedGuard+time.Second))))
	if err := fd.halt(); err != nil {
		return res, err
	}
	end := time.Now().UTC()
	settleOutputs(rig, opts.Drain)
	// Every boundary before end fires before the engine stops.
	time.Sleep(time.Until(end.Add(time.Second)))
	engine.Shutdown(ctx)
	live = nil

	progress("mix: comparing every output with a recompute")
	began := time.Now()
	check, err := verifyMix(ctx, rig.st, engine, rig.project, l, cursors, end, progress)
	if err != nil {
		return res, err
	}
	res["verify_s"], res["outputs_compared"], res["outputs_different"] = round(time.Since(began).Seconds()), check.compared, check.different
	res["outputs_compared_by_shape"] = check.byShape
	if check.different > 0 {
		res["first_difference"], res["outputs_different_by_shape"] = check.first, check.diffShape
	}
	progress("mix: %d of %d outputs differ from a recompute %s", check.different, check.compared, check.first)

	if !opts.NoBurst {
		burst, err := minuteBurst(ctx, rig, opts, progress)
		if err != nil {
			return res, err
		}
		for k, v := range burst {
			res[k] = v
		}
	}
	return res, nil
}

// mixFeedPhase is phase 1: the feed with the latency taps, then the heap.
func mixFeedPhase(ctx context.Context, rig *vdpRig, engine *actors.Engine, opts VDPOptions, l mixLayout, feed *mixFeed, before uint64,
	interval time.Duration, res map[string]any, progress func(string, ...any)) error {
	taps := l.taps(opts.Sample)
	perS := 0
	for _, t := range taps {
		perS += len(t.sources)
	}
	lat := newLatencyTaps(rig.router, rig.project, taps, perS*opts.Rate/l.sources, opts.Duration)
	defer lat.close()
	progress("mix: feeding %d observations/s for %s", opts.Rate, opts.Duration)
	inBase := storedCount(rig.reg, srcBench)
	if opts.CPUProfile != nil {
		if err := pprof.StartCPUProfile(opts.CPUProfile); err != nil {
			return err
		}
		defer pprof.StopCPUProfile()
	}
	stop := make(chan struct{})
	began := time.Now()
	fed := runFeed(ctx, rig.batcher, opts, stop, feed)
	select {
	case <-time.After(opts.Duration):
	case <-ctx.Done():
	}
	close(stop)
	if err := <-fed; err != nil {
		return err
	}
	if opts.CPUProfile != nil {
		pprof.StopCPUProfile()
	}
	seconds := time.Since(began).Seconds()
	inputs := storedCount(rig.reg, srcBench) - inBase
	settleOutputs(rig, opts.Drain)
	p50, p99, samples := lat.percentiles()
	bySlot := lat.p99BySlot(began, 10*time.Second)
	lat.close()
	res["latency_p99_ms_by_10s"] = bySlot
	res["gogc"] = opts.gcPercent() // at the end of the feed
	progress("mix: p99 by 10 s of the feed from %s: %v", began.UTC().Format(time.TimeOnly), bySlot)
	res["feed_s"], res["rate_sustained"] = round(seconds), int(inputs/seconds)
	res["latency_p50_ms"], res["latency_p99_ms"], res["latency_samples"] = round(p50), round(p99), samples

	// The heap after the feed: windows hold what the rate puts in them,
	// up to their span (full once the feed lasted the longest span, a
	// minute), rather than the few observations of history. What is
	// beside them is the total less what the windows hold, asked of each
	// actor (Engine.WindowBytes); the budget's estimate of the windows,
	// an upper bound, is reported beside it.
	total := float64(int64(heapAfterGC())-int64(before)) / float64(opts.VDPs)
	if opts.HeapProfile != nil {
		if err := pprof.Lookup("heap").WriteTo(opts.HeapProfile, 0); err != nil {
			return err
		}
	}
	held, err := engine.WindowBytes(ctx)
	if err != nil {
		return err
	}
	est, err := l.windowEstimate(interval)
	if err != nil {
		return err
	}
	windows, estimate := float64(held)/float64(opts.VDPs), float64(est)/float64(opts.VDPs)
	res["heap_total_bytes_per_vdp"], res["window_bytes_per_vdp"], res["window_estimate_bytes_per_vdp"] = int(total), int(windows), int(estimate)
	res["heap_bytes_per_vdp"] = int(total - windows)
	res["windows_full"] = opts.Duration >= time.Minute
	progress("mix: fed %.0f inputs/s; p50 %.1f ms, p99 %.1f ms over %d samples; heap %.0f bytes per datapoint, %.0f beside its windows' %.0f (estimated %.0f)",
		inputs/seconds, p50, p99, samples, total, total-windows, windows, estimate)
	return nil
}

// settleOutputs waits until no output was stored for a second, at most
// limit: outputs do not match inputs one to one in the mix, so the
// backlog is drained when they stop coming.
func settleOutputs(rig *vdpRig, limit time.Duration) {
	deadline := time.Now().Add(limit)
	last, since := storedCount(rig.reg, actors.SourceVDP), time.Now()
	for time.Since(since) < time.Second && time.Now().Before(deadline) {
		time.Sleep(50 * time.Millisecond)
		if n := storedCount(rig.reg, actors.SourceVDP); n != last {
			last, since = n, time.Now()
		}
	}
}
