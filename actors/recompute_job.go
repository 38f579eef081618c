package actors

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/openbdp/bdp/fault"
	"github.com/openbdp/bdp/store"
)

// RecomputeJobs runs exact recomputes (RecomputeStored) as jobs in
// goroutines of its own, for a caller that answers before they end (the
// API's 202): at most one per virtual datapoint, each with a context that
// Shutdown cancels. A job's start, progress and end go to the datapoint's
// log as entries of type recompute (store.LogRecompute), where the client
// follows it. The datapoint need not run, and a running one keeps
// running: outputs its actor writes inside the period while the recompute
// runs may be replaced by it, or replace it (the last writer wins).
type RecomputeJobs struct {
	store *store.Store
	log   *slog.Logger // failures the datapoint's log must not show

	mu      sync.Mutex
	running map[Key]context.CancelFunc
	closed  bool
	wg      sync.WaitGroup
	// beforeRun, when set, runs first in every job: tests hold a job
	// with it to see one in progress.
	beforeRun func(ctx context.Context)
}

// NewRecomputeJobs returns the runner of recompute jobs reading from and
// writing to st.
func NewRecomputeJobs(st *store.Store, log *slog.Logger) *RecomputeJobs {
	return &RecomputeJobs{store: st, log: log, running: map[Key]context.CancelFunc{}}
}

// Start recomputes [start, end) of def in a job of its own, who (the
// caller, named in the log) having asked, unless def's datapoint has one
// running, here or on another node of the database (Conflict), or the
// jobs are shutting down (Unavailable).
func (r *RecomputeJobs) Start(def Definition, start, end time.Time, who string) error {
	k := def.key()
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.closed {
		return fault.Wrap(fault.Unavailable, errors.New("server shutting down"), "the server is shutting down; try again")
	}
	busy := fault.Conflictf("a recompute of virtual datapoint %q is running; its end appears in the logs", k.DataPointID)
	if _, ok := r.running[k]; ok {
		return busy
	}
	// The database's lock makes it one job per datapoint across nodes.
	lctx, lcancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer lcancel()
	unlock, ok, err := r.store.TryLock(lctx, fmt.Sprintf("bdp recompute %d/%s", k.ProjectID, k.DataPointID))
	switch {
	case err != nil:
		return fault.Wrap(fault.Unavailable, err, "the database did not answer; try again")
	case !ok:
		return busy
	}
	ctx, cancel := context.WithCancel(context.Background())
	r.running[k] = cancel
	hook := r.beforeRun
	var once sync.Once
	release := func() {
		once.Do(func() {
			unlock()
			r.mu.Lock()
			delete(r.running, k)
			r.mu.Unlock()
		})
	}
	r.wg.Add(1)
	go func() {
		defer r.wg.Done()
		defer cancel()
		defer release()
		if hook != nil {
			hook(ctx)
		}
		r.run(ctx, def, start, end, who, release)
	}()
	return nil
}

// SetBeforeRun installs a function every job runs first; tests hold a
// job with it.
func (r *RecomputeJobs) SetBeforeRun(f func(ctx context.Context)) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.beforeRun = f
}

// Shutdown refuses new jobs, cancels the running ones and waits for them
// (their last log entries included), at most until ctx ends.
func (r *RecomputeJobs) Shutdown(ctx context.Context) error {
	r.mu.Lock()
	r.closed = true
	for _, cancel := range r.running {
		cancel()
	}
	r.mu.Unlock()
	done := make(chan struct{})
	go func() { r.wg.Wait(); close(done) }()
	select {
	case <-done:
		return nil
	case <-ctx.Done():
		return fmt.Errorf("recomputes still running: %w", ctx.Err())
	}
}

// run is one job. release frees the datapoint for the next job; it comes
// before the final log entry, so a client that sees the end may start
// another at once.
func (r *RecomputeJobs) run(ctx context.Context, def Definition, start, end time.Time, who string, release func()) {
	began := time.Now()
	period := fmt.Sprintf("[%s, %s)", start.Format(time.RFC3339Nano), end.Format(time.RFC3339Nano))
	r.logEntry(ctx, def, fmt.Sprintf("recompute of %s started by %s", period, who))
	tenths := 0
	res, err := RecomputeStored(ctx, r.store, def, start, end, func(done, total int) {
		// One entry per tenth of the period: enough to follow a long run,
		// few enough to keep the log readable.
		if t := done * 10 / total; t > tenths && t < 10 {
			tenths = t
			upTo := start.Add(time.Duration(done) * time.Second)
			r.logEntry(ctx, def, fmt.Sprintf("recompute of %s %d%% done (event time up to %s)",
				period, t*10, upTo.Format(time.RFC3339)))
		}
	})
	release()
	took := time.Since(began).Round(time.Millisecond)
	msg := fmt.Sprintf("recompute of %s finished: %d outputs written in %s", period, res.Outputs, took)
	if res.CalcErrors > 0 {
		msg += fmt.Sprintf("; failed calculations that emitted nothing: %d (the latest: %s)", res.CalcErrors, res.LastCalcError)
	}
	switch {
	case err == nil:
	case ctx.Err() != nil: // whatever failed, it failed because of the cancel
		msg = fmt.Sprintf("recompute of %s cancelled after %s: the server shut down; nothing was replaced", period, took)
	case fault.KindOf(err) == fault.Internal:
		// The log is shown to API clients: the detail goes to the
		// operator's log only.
		r.log.Error("recompute virtual datapoint", slog.Int64("project_id", def.ProjectID),
			slog.String("dataPointID", def.DataPointID), slog.Any("error", err))
		msg = fmt.Sprintf("recompute of %s failed after %s: internal error; nothing was replaced", period, took)
	default:
		msg = fmt.Sprintf("recompute of %s failed after %s: %s; nothing was replaced", period, took, fault.Message(err))
	}
	r.logEntry(ctx, def, msg)
}

// logEntry appends a recompute entry to the datapoint's log. It must get
// through also when ctx is cancelled (the entry that says so), hence a
// context of its own.
func (r *RecomputeJobs) logEntry(ctx context.Context, def Definition, msg string) {
	lctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
	defer cancel()
	if err := r.store.AppendVDPLog(lctx, def.ProjectID, def.DataPointID, store.LogRecompute, msg); err != nil {
		r.log.Warn("log recompute", slog.Int64("project_id", def.ProjectID),
			slog.String("dataPointID", def.DataPointID), slog.String("message", msg), slog.Any("error", err))
	}
}
