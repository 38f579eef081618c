// Package runner runs analyses off the request path: a bounded pool of
// supervised worker actors takes the waiting runs (analysis_results rows
// with status 'running', the queue) from PostgreSQL, computes each with
// its analysis function over the stored series of the mapped pins, and
// writes the result; a schedule makes every enabled instance's weekly
// run (schedule.go).
//
// The queue stays in PostgreSQL: the pool claims only as many runs as it
// has idle workers, so a thousand requested runs wait there, not in
// memory, and several nodes share them (store.ClaimAnalysisRuns). A run
// ends as Success (its outcome stored, with a note "no data in the
// period" in info when the period held none) or as Failed with the reason
// in info:
//
//   - the function's own error: a required pin not mapped
//     (analytics.ErrMissingPin, naming the pin), an unusable attribute
//     (analytics.ErrBadAttribute);
//   - "analysis function N no longer exists in this release";
//   - "the run took longer than the time limit of 5m0s";
//   - "the analysis failed with an internal error: ..." (a panic: its
//     worker is restarted, bdp goes on);
//   - "not run again: N workers took it and none finished it" (every
//     claim of it ended in a crash of its node);
//   - "reading the stored data failed: ..." (the database).
//
// The pool's actors are protoactor-go's, kept behind Pool.
package runner

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"runtime"
	"sync"
	"time"

	"github.com/asynkron/protoactor-go/actor"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/openbdp/bdp/store"
)

const (
	// DefaultTimeLimit bounds one run: its reads are cut short and the
	// run fails when it passes. A run over the longest period the API
	// allows (366 days) of 1-minute data on five pins reads about 2.6
	// million observations, a few seconds' work; five minutes leaves room
	// for a busy database without letting a stuck run hold a worker for
	// long.
	DefaultTimeLimit = 5 * time.Minute
	// DefaultPollInterval is how often the pool looks for waiting runs
	// without being told of one: runs whose claim went stale (their node
	// crashed) are found so.
	DefaultPollInterval = time.Minute
	// MaxWorkers bounds Config.Workers.
	MaxWorkers = 64
	// MaxAttempts is how many claims a run gets: one whose workers all
	// vanished without finishing it (a node crashing on it, say) fails
	// instead of crashing node after node.
	MaxAttempts = 3
	// staleMargin is added to the time limit to tell a claim whose worker
	// is gone from one still running: a live worker finishes or fails its
	// run within the time limit.
	staleMargin = time.Minute
	// finishTimeout bounds the write of a result, also at shutdown.
	finishTimeout = 10 * time.Second
)

// DefaultWorkers is half the CPUs Go may use, at least one: analyses must
// not starve ingestion on a small node.
func DefaultWorkers() int { return max(1, runtime.GOMAXPROCS(0)/2) }

// Config is what the pool needs.
type Config struct {
	// System is the process's actor system (actors.NewSystem); nil for
	// one of the pool's own.
	System    *actor.ActorSystem
	Store     *store.Store
	Functions Functions
	// Version is written into every result (analytics_version): the
	// binary's version.
	Version string
	// Workers is how many runs are computed at once on this node; 0 means
	// DefaultWorkers.
	Workers int
	// TimeLimit bounds one run; 0 means DefaultTimeLimit.
	TimeLimit time.Duration
	// PollInterval: 0 means DefaultPollInterval.
	PollInterval time.Duration
	Log          *slog.Logger
	Registry     prometheus.Registerer // nil: no metrics registered
}

// Pool is the bounded, supervised pool of analysis workers. Run it with
// Run.
type Pool struct {
	cfg     Config
	metrics *metrics

	system     *actor.ActorSystem
	supervisor *actor.PID
	workers    []*actor.PID

	idle chan *actor.PID // a worker ready for a run; capacity: every worker
	wake chan struct{}   // a run may be waiting; capacity 1: wake-ups coalesce

	// runCtx ends when Run stops: reads of runs in progress are cut short
	// and their runs given back to the queue.
	runCtx     context.Context
	cancelRuns context.CancelFunc

	mu      sync.Mutex
	claimed map[string]store.AnalysisRun // handed to a worker, not yet finished

	// finishing counts the results written off a worker (a panic's, a
	// time limit's): stop waits for them.
	finishing sync.WaitGroup
}

// New starts the pool's actors; Run dispatches runs to them.
func New(cfg Config) (*Pool, error) {
	if cfg.Store == nil || cfg.Functions == nil || cfg.Log == nil {
		return nil, errors.New("runner: Store, Functions and Log are required")
	}
	if cfg.Workers == 0 {
		cfg.Workers = DefaultWorkers()
	}
	if cfg.Workers < 1 || cfg.Workers > MaxWorkers {
		return nil, fmt.Errorf("runner: %d workers; want 1 to %d", cfg.Workers, MaxWorkers)
	}
	if cfg.TimeLimit <= 0 {
		cfg.TimeLimit = DefaultTimeLimit
	}
	if cfg.PollInterval <= 0 {
		cfg.PollInterval = DefaultPollInterval
	}
	m, err := newMetrics(cfg.Registry)
	if err != nil {
		return nil, fmt.Errorf("runner: metrics: %w", err)
	}
	runCtx, cancel := context.WithCancel(context.Background())
	p := &Pool{cfg: cfg, metrics: m, idle: make(chan *actor.PID, cfg.Workers), wake: make(chan struct{}, 1),
		runCtx: runCtx, cancelRuns: cancel, claimed: map[string]store.AnalysisRun{}}
	if err := p.startActors(); err != nil {
		cancel()
		return nil, fmt.Errorf("runner: %w", err)
	}
	return p, nil
}

// Wake tells the pool that a run may be waiting. It never blocks.
func (p *Pool) Wake() {
	select {
	case p.wake <- struct{}{}:
	default:
	}
}

// Workers is the number of runs the pool computes at once.
func (p *Pool) Workers() int { return p.cfg.Workers }

// Run takes waiting runs, as many as there are idle workers, until ctx
// ends: at once (runs left waiting or stale by a crash are taken again at
// start), whenever a run is announced on bdp_analysis_runs, after every
// reconnection of that LISTEN, and every PollInterval. When ctx ends it
// waits for the runs in progress, whose reads are cut short: those go
// back to the queue for another node or the next start. The pool is done
// then; Run is called once.
func (p *Pool) Run(ctx context.Context) {
	listenCtx, stopListening := context.WithCancel(ctx)
	listening := make(chan struct{})
	go func() {
		defer close(listening)
		p.cfg.Store.ListenAnalysisRuns(listenCtx, p.Wake)
	}()
	p.Wake()
	p.dispatch(ctx)
	stopListening()
	<-listening
	p.stop()
}

// dispatch hands claimed runs to idle workers until ctx ends.
func (p *Pool) dispatch(ctx context.Context) {
	free := make([]*actor.PID, 0, len(p.workers))
	poll := time.NewTicker(p.cfg.PollInterval)
	defer poll.Stop()
	stale := p.cfg.TimeLimit + staleMargin
	due := false // a claim pass is due: runs may be waiting
	for {
		if due && len(free) > 0 {
			runs, err := p.cfg.Store.ClaimAnalysisRuns(ctx, len(free), stale)
			if err != nil && ctx.Err() == nil {
				// The listener's reconnection or the next poll tries again.
				p.cfg.Log.Warn("claim analysis runs", slog.Any("error", err))
			}
			for _, run := range runs {
				w := free[len(free)-1]
				free = free[:len(free)-1]
				p.mu.Lock()
				p.claimed[run.ResultID] = run
				p.mu.Unlock()
				p.system.Root.Send(w, &runMessage{run: run})
			}
			// A full claim may have left more waiting: claim again as soon
			// as a worker is free.
			due = err == nil && len(runs) > 0 && len(free) == 0
		}
		select {
		case <-ctx.Done():
			return
		case w := <-p.idle:
			free = append(free, w)
		case <-p.wake:
			due = true
		case <-poll.C:
			due = true
		}
	}
}

// stop cuts the runs in progress short, waits for their workers, and
// gives back to the queue what was claimed and not finished.
func (p *Pool) stop() {
	p.cancelRuns()
	for _, w := range p.workers {
		// A worker stops after the message in hand; a kernel that outlasts
		// the wait is left to finish, its result written if still wanted.
		_ = p.system.Root.StopFuture(w).Wait()
	}
	// The supervisor handles the failures reported before its stop, so
	// every panic's result is being written once it stopped.
	_ = p.system.Root.StopFuture(p.supervisor).Wait()
	p.finishing.Wait()
	p.mu.Lock()
	left := make([]store.AnalysisRun, 0, len(p.claimed))
	for _, run := range p.claimed {
		left = append(left, run)
	}
	p.mu.Unlock()
	for _, run := range left {
		p.release(run)
	}
}

// release gives a run back to the queue uncounted.
func (p *Pool) release(run store.AnalysisRun) {
	p.forget(run.ResultID)
	ctx, cancel := context.WithTimeout(context.Background(), finishTimeout)
	defer cancel()
	if err := p.cfg.Store.ReleaseAnalysisRun(ctx, run.ResultID); err != nil {
		p.cfg.Log.Warn("give an analysis run back to the queue; it is taken again once its claim is stale",
			slog.String("result_id", run.ResultID), slog.Any("error", err))
	}
}

func (p *Pool) forget(resultID string) {
	p.mu.Lock()
	delete(p.claimed, resultID)
	p.mu.Unlock()
}

// finish writes how a run ended, unless it ended already (the time limit
// came first, or another node's worker).
func (p *Pool) finish(run store.AnalysisRun, end store.AnalysisRunEnd) {
	end.Version = p.cfg.Version
	ctx, cancel := context.WithTimeout(context.Background(), finishTimeout)
	defer cancel()
	ok, err := p.cfg.Store.FinishAnalysisRun(ctx, run.ResultID, end)
	if err != nil {
		// The claim goes stale and the run is taken again.
		p.cfg.Log.Error("write analysis result", slog.String("result_id", run.ResultID), slog.Any("error", err))
		return
	}
	if ok {
		p.metrics.runs.WithLabelValues(end.Status).Inc()
		if end.Status == store.AnalysisFailed {
			p.cfg.Log.Info("analysis run failed", slog.String("result_id", run.ResultID),
				slog.Int64("instance_id", run.InstanceID), slog.String("info", end.Info))
		}
	}
}
