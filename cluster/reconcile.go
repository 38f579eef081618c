package cluster

import (
	"context"
	"log/slog"
	"sync"
	"time"

	"github.com/openbdp/bdp/actors"
	"github.com/openbdp/bdp/fault"
	"github.com/openbdp/bdp/store"
)

// Reconciler makes this member run what it owns and nothing else: the
// virtual datapoints that are Running in the database and hash to it run
// here, caught up from the store as a single node's restart does
// (actors.Engine.CatchUp), and an actor here whose datapoint another
// member owns, or that is no longer Running or Starting, stops. It
// reconciles when it starts, when the topology changes, and every Every,
// so a lost command still ends in the state the database holds.
type Reconciler struct {
	Member      *Member
	Engine      *actors.Engine
	Store       *store.Store
	Log         *slog.Logger
	Concurrency int           // starts at once; default actors.DefaultResumeConcurrency
	Every       time.Duration // default 10 s
	// After runs after each pass: what else this member places by
	// identity (the edge connections and controls apps of the projects it
	// owns).
	After []func(ctx context.Context)
	// stalled are the Starting datapoints this member owns but no start
	// of which ran here at the last pass: still so at the next, their
	// start was lost (the node that asked for it died between marking
	// them Starting and asking), and this member starts them.
	stalled map[actors.Key]bool
}

// Run reconciles until ctx ends (nil), or until the member is dropped
// from the cluster (ErrDropped, lease.go); it has stopped everything it
// ran then.
func (r *Reconciler) Run(ctx context.Context) error {
	every := r.Every
	if every <= 0 {
		every = 10 * time.Second
	}
	tick := time.NewTicker(every)
	defer tick.Stop()
	for {
		r.reconcile(ctx)
		for _, after := range r.After {
			after(ctx)
		}
		select {
		case <-ctx.Done():
			return nil
		case <-r.Member.Dropped():
			return ErrDropped
		case <-r.Member.Changes():
		case <-tick.C:
		}
	}
}

// reconcile is one pass.
func (r *Reconciler) reconcile(ctx context.Context) {
	rows, err := r.Store.VDPsIn(ctx, store.StatusRunning, store.StatusStarting)
	if err != nil {
		if ctx.Err() == nil {
			r.Log.Error("reconcile: list running virtual datapoints", slog.Any("error", err))
		}
		return
	}
	if len(r.Member.Members()) == 0 {
		return // no topology yet: this member cannot tell what it owns
	}
	owned := make(map[actors.Key]bool, len(rows))
	stalled := map[actors.Key]bool{}
	var start []store.VDP
	for _, v := range rows {
		k := actors.Key{ProjectID: v.ProjectID, DataPointID: v.DataPointID}
		if _, self := r.Member.Owner(VDPIdentity(k)); !self || r.Engine.Running(k) {
			owned[k] = owned[k] || self
			continue
		}
		owned[k] = true
		switch {
		case v.StatusCode == store.StatusRunning:
			start = append(start, v) // moved here, or its member died
		case r.stalled[k]:
			start = append(start, v) // Starting two passes on, its start lost
		default:
			stalled[k] = true // Starting: a command is on its way, or was lost
		}
	}
	r.stalled = stalled
	for _, k := range r.Engine.RunningKeys() {
		if !owned[k] {
			r.Log.Info("reconcile: stop a virtual datapoint this node does not run any more",
				slog.Int64("project_id", k.ProjectID), slog.String("dataPointID", k.DataPointID))
			if err := r.Engine.Stop(ctx, k); err != nil {
				r.Log.Error("reconcile: stop", slog.Any("error", err))
			}
			r.Member.movedOut.Add(1)
		}
	}
	if len(start) > 0 {
		r.Log.Info("reconcile: start the virtual datapoints this node owns", slog.Int("datapoints", len(start)))
		r.startAll(ctx, start)
	}
}

// startAll catches up the given datapoints, Concurrency at once.
func (r *Reconciler) startAll(ctx context.Context, rows []store.VDP) {
	limit := r.Concurrency
	if limit <= 0 {
		limit = actors.DefaultResumeConcurrency
	}
	slots := make(chan struct{}, limit)
	var wg sync.WaitGroup
	for _, v := range rows {
		select {
		case slots <- struct{}{}:
		case <-ctx.Done():
			wg.Wait()
			return
		}
		wg.Add(1)
		go func() {
			defer func() { <-slots; wg.Done() }()
			r.startOne(ctx, v)
		}()
	}
	wg.Wait()
}

// startOne catches one datapoint up and runs it; a failure is recorded as
// Start failed, and one that someone stopped meanwhile is stopped again.
func (r *Reconciler) startOne(ctx context.Context, v store.VDP) {
	k := actors.Key{ProjectID: v.ProjectID, DataPointID: v.DataPointID}
	attrs := []any{slog.Int64("project_id", v.ProjectID), slog.String("dataPointID", v.DataPointID)}
	err := r.Engine.CatchUpVDP(ctx, v)
	if ctx.Err() != nil {
		return
	}
	if err != nil {
		if r.Engine.Running(k) {
			return // started meanwhile by a command
		}
		r.Log.Error("reconcile: start virtual datapoint", append(attrs, slog.Any("error", err))...)
		failed := store.StatusChange{Code: store.StatusStartFailed, Message: "start on node " + r.Member.NodeID() + ": " + err.Error()}
		if _, err := r.Store.ChangeVDPStatus(ctx, v.ProjectID, v.DataPointID, failed, v.StatusCode); err != nil &&
			!fault.Is(err, fault.Conflict) && !fault.Is(err, fault.NotFound) {
			r.Log.Error("reconcile: record failed start", append(attrs, slog.Any("error", err))...)
		}
		return
	}
	// Stopped or deleted while it caught up: it must not run unseen.
	now, err := r.Store.VDP(ctx, v.ProjectID, v.DataPointID)
	if err != nil || (now.StatusCode != store.StatusRunning && now.StatusCode != store.StatusStarting) {
		_ = r.Engine.Stop(ctx, k)
		return
	}
	if v.StatusCode == store.StatusStarting {
		running := store.StatusChange{Code: store.StatusRunning, Message: "started by node " + r.Member.NodeID() + ": the start asked for was lost"}
		if _, err := r.Store.ChangeVDPStatus(ctx, v.ProjectID, v.DataPointID, running, store.StatusStarting); err != nil {
			_ = r.Engine.Stop(ctx, k) // moved on meanwhile: its new state rules
			return
		}
	}
	r.Member.movedIn.Add(1)
	r.Log.Info("reconcile: running here", attrs...)
}
