package controls

import (
	"context"
	"errors"
	"fmt"
	"log/slog"

	"github.com/asynkron/protoactor-go/actor"

	"github.com/openbdp/bdp/store"
)

// In a cluster a project's controls apps run on the node that runs its
// edge connection (edge.Config.Owns): an app writes through that
// connection. Reconcile makes a node run the apps of the projects it owns
// and release the others; the node that owns them now starts them. A
// write of an app whose project moved while it ran is refused by the
// edge connections' fence (edge/hold.go), so the value reaches the device
// once.

// Reconcile starts the active apps (those Resume starts: Starting or
// Running in the store) of the projects owns says this node owns that do
// not run here, as Resume starts them, and releases the apps running here
// whose project it no longer owns (Release). The cluster calls it after
// the edge connections' Sync, on every change of membership and now and
// then; Resume stays the start of one node. An app that cannot run moves
// to Start failed, as in Resume.
func (r *Runtime) Reconcile(ctx context.Context, owns func(projectID int64) bool) error {
	apps, err := r.cfg.Store.ActiveControlsApps(ctx)
	if err != nil {
		return fmt.Errorf("controls apps to reconcile: %w", err)
	}
	var errs []error
	for id, projectID := range r.runningApps() {
		if owns(projectID) {
			continue
		}
		if err := r.Release(ctx, id); err != nil {
			errs = append(errs, err)
		}
	}
	for _, a := range apps {
		if !owns(a.ProjectID) || r.Runs(a.ID) {
			continue
		}
		r.cfg.Log.Info("controls app started on this node: it owns the app's project", slog.String("app", a.ID), slog.Int64("project_id", a.ProjectID))
		if err := r.resume(ctx, a, "started on this node, which runs the project's edge connection now", "not started on the node that owns its project: ", true); err != nil {
			return errors.Join(append(errs, err)...)
		}
	}
	return errors.Join(errs...)
}

// Release stops the actor of an app running here without changing its
// status in the store and without app_stop to the device: the app goes
// on, on the node that owns its project now. Stop is the app's end.
// Not running is no error.
func (r *Runtime) Release(ctx context.Context, id string) error {
	stopped, err := r.stopActor(ctx, id)
	if err != nil {
		return fmt.Errorf("controls: release app %s: %w", id, err)
	}
	if !stopped {
		return nil
	}
	r.cfg.Log.Info("controls app released: another node owns its project now", slog.String("app", id))
	r.logApp(id, store.LogInfo, "status_change", "released by this node: the node that owns its project runs it now (status unchanged, app_stop not sent)", nil)
	return nil
}

// Runs tells whether an app's actor runs on this node.
func (r *Runtime) Runs(id string) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	_, ok := r.running[id]
	return ok
}

// runningApps are the apps whose actor runs here, with their project.
// One being spawned is left out: its start is on its way.
func (r *Runtime) runningApps() map[string]int64 {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := make(map[string]int64, len(r.running))
	for id, pid := range r.running {
		if reg := r.registrationOf(pid); reg != nil {
			out[id] = reg.plan.App.ProjectID
		}
	}
	return out
}

// registrationOf is what actor pid runs; nil for none. r.mu is held.
func (r *Runtime) registrationOf(pid *actor.PID) *registration {
	if pid == nil {
		return nil
	}
	return r.plans[pid.Id]
}
