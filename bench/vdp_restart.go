package bench

import (
	"context"
	"fmt"
	"runtime/pprof"
	"time"

	"github.com/openbdp/bdp/actors"
	"github.com/openbdp/bdp/store"
)

// restartMix is issue 18 item 5: the engine stops while the feed goes on
// (opts.Down), then a new engine starts and actors.Resume runs in the
// background, as bdp serve does at start, the feed going on. It returns
// the new engine and the time from its making until every datapoint is Running again in the
// store: Resume returns once the last one's status is committed, after
// which no datapoint may be anything but Running.
//
// bdp serve answers HTTP before Resume is done (cmd/bdp, bench resume);
// this scenario has no HTTP server, so that half of item 5 is measured by
// `make bench-resume`, not here.
func restartMix(ctx context.Context, rig *vdpRig, old *actors.Engine, opts VDPOptions,
	progress func(string, ...any)) (*actors.Engine, float64, error) {
	progress("restart: stopping the engine; the feed goes on for %s", opts.Down)
	old.Shutdown(ctx)
	select {
	case <-time.After(opts.Down):
	case <-ctx.Done():
		return nil, 0, ctx.Err()
	}
	if opts.RestartCPUProfile != nil {
		if err := pprof.StartCPUProfile(opts.RestartCPUProfile); err != nil {
			return nil, 0, err
		}
		defer pprof.StopCPUProfile()
	}
	began := time.Now()
	engine, err := rig.newEngine(rig.history())
	if err != nil {
		return nil, 0, err
	}
	done := make(chan error, 1)
	go func() { done <- actors.Resume(ctx, engine, rig.st, rig.log, opts.ResumeConcurrency) }()
	every := time.NewTicker(5 * time.Second)
	defer every.Stop()
	for waiting := true; waiting; {
		select {
		case err = <-done:
			waiting = false
		case <-every.C:
			n, _ := rig.running(ctx)
			progress("restart: %d of %d Running after %.0f s", n, opts.VDPs, time.Since(began).Seconds())
		}
	}
	allRunning := time.Since(began).Seconds()
	if err != nil {
		return engine, 0, fmt.Errorf("resume: %w", err)
	}
	n, err := rig.running(ctx)
	if err != nil {
		return engine, 0, err
	}
	if n != opts.VDPs {
		return engine, 0, fmt.Errorf("resume: %d of %d virtual datapoints Running", n, opts.VDPs)
	}
	progress("restart: all %d Running after %.1f s", n, allRunning)
	return engine, allRunning, nil
}

// running counts the project's virtual datapoints that are Running.
func (r *vdpRig) running(ctx context.Context) (int, error) {
	code := store.StatusRunning
	_, n, err := r.st.ListVDPs(ctx, r.project, "", &code, 1, 1)
	return n, err
}
