package controls

import (
	"context"
	"errors"
	"slices"

	"github.com/openbdp/bdp/fault"
	"github.com/openbdp/bdp/store"
)

// Statuses from which a run starts an app (every one that is not running,
// api.md 3.2) and from which a stop stops one.
var (
	StartableFrom = []int{store.StatusCreated, store.StatusCreationFailed, store.StatusReadyToStart, store.StatusStartFailed,
		store.StatusStopFailed, store.StatusStopped, store.StatusMaintenance, store.StatusHealthCheckFails, store.StatusDeleteFailed}
	StoppableFrom = []int{store.StatusStarting, store.StatusRunning}
)

// StartApp moves an app that is not running to Starting, reserving its
// targets (409 naming the app that writes one), and starts its actor with
// the plan made then; the app it returns shows Starting, or Start failed
// with the reason, and the actor moves it on. p is the plan its checks
// were made with (Prepare); by names who started it, for the app's log.
// affected is false for an app that is not in a StartableFrom status by
// the time the store changes it (running already), left alone.
func (r *Runtime) StartApp(ctx context.Context, a store.ControlsApp, p Plan, by string) (_ store.ControlsApp, affected bool, _ error) {
	a, changed, err := r.cfg.Store.ChangeControlsApp(ctx, a.ProjectID, a.ID, store.AppChange{Code: store.StatusStarting,
		Message: "started by " + by, From: StartableFrom, Targets: p.Targets()})
	if err != nil || !changed {
		return a, false, err
	}
	// The component may have changed between the checks and Starting;
	// from Starting on its changes are refused (409), so the plan made now
	// is the one the app keeps. A changed target was not checked: the
	// start fails and says so.
	fresh, err := Prepare(ctx, r.cfg.Store, r.cfg.Catalog, a, true)
	if err == nil && (!slices.Equal(fresh.Targets(), p.Targets()) || fresh.Input != p.Input) {
		err = errors.New("the component's pins were remapped while the app started: run it again")
	}
	if err == nil {
		err = r.Start(ctx, fresh)
	}
	if errors.Is(err, errRunning) {
		// A Reconcile of this node started it meanwhile from the same
		// Starting (its actor moves it to Running), or an actor of it
		// outlived a stop made on another node: either way it runs.
		a, _, err = r.cfg.Store.ChangeControlsApp(ctx, a.ProjectID, a.ID, store.AppChange{Code: store.StatusRunning,
			Message: "app actor running", From: []int{store.StatusStarting}})
		return a, err == nil, err
	}
	if err != nil {
		a, _, err = r.cfg.Store.ChangeControlsApp(ctx, a.ProjectID, a.ID, store.AppChange{Code: store.StatusStartFailed,
			Level: store.LogError, Message: "start failed: " + fault.Message(err)})
		if err != nil {
			return store.ControlsApp{}, false, err
		}
	}
	return a, true, nil
}

// StopApp moves a running app to Stopping, stops its actor if rt (which
// may be nil: no actor runs on this node) runs it, and records Stopped or
// Stop failed; an app not running is left alone (affected false).
func StopApp(ctx context.Context, st *store.Store, rt *Runtime, a store.ControlsApp, by string) (_ store.ControlsApp, affected bool, _ error) {
	a, changed, err := st.ChangeControlsApp(ctx, a.ProjectID, a.ID, store.AppChange{Code: store.StatusStopping,
		Message: "stopped by " + by, From: StoppableFrom})
	if err != nil || !changed {
		return a, false, err
	}
	next := store.AppChange{Code: store.StatusStopped, Message: "app actor stopped"}
	if rt == nil {
		next = store.AppChange{Code: store.StatusStopped, Message: "no app actor runs on this node"}
	} else if err := rt.Stop(ctx, a.ProjectID, a.ID); err != nil {
		next = store.AppChange{Code: store.StatusStopFailed, Level: store.LogError, Message: "stop failed: " + err.Error()}
	}
	a, _, err = st.ChangeControlsApp(ctx, a.ProjectID, a.ID, next)
	if err != nil {
		return store.ControlsApp{}, false, err
	}
	return a, true, nil
}

// RefuseSharedTargets refuses plans of which two, of apps about to start,
// write one datapoint at one priority: one app writes a datapoint at a
// priority. Plans of apps running already are skipped: they hold their
// targets in the store.
func RefuseSharedTargets(plans []Plan) error {
	owner := map[store.AppTarget]string{}
	for _, p := range plans {
		if store.AppActive(p.App.StatusCode) {
			continue
		}
		for _, t := range p.Targets() {
			if other, dup := owner[t]; dup {
				return fault.Conflictf("controls apps %s and %s both write datapoint %q at priority %d; one app writes a datapoint at a priority",
					other, p.App.ID, t.DataPointID, t.Priority)
			}
			owner[t] = p.App.ID
		}
	}
	return nil
}
