package controls

import (
	"log/slog"
	"strings"
	"time"

	"github.com/asynkron/protoactor-go/actor"

	"github.com/openbdp/bdp/edge"
	"github.com/openbdp/bdp/store"
)

// A device that reconnects without the apps it should run (a replaced
// device, a factory reset, another device on the project's credentials)
// would leave them Running here with nothing running there and their
// priority arrays empty. Every heartbeat lists the apps the device
// knows; an app running here that the list lacks is registered again
// (app_start) and writes its value again, logged.
//
// An app the device lists as not running is the device's own business:
// after a crash it reloads its running apps within a minute (reload
// event), after its alive time-out it restarts them when the platform is
// back (recovered event).

// ReregisterRefusedAfter is how long an app waits after the device
// refused its registration before it tries again: a device that cannot
// run the app is not asked every heartbeat.
const ReregisterRefusedAfter = time.Minute

// missingOnDevice tells an app's actor that a heartbeat heard at heard
// did not list the app.
type missingOnDevice struct{ heard time.Time }

// reconcile tells the apps running here (of the device's project) that
// the device's list lacks.
func (r *Runtime) reconcile(here map[string]*actor.PID, listed []edge.AppState, heard time.Time) {
	if r.cfg.Device == nil {
		return // nothing to register with
	}
	known := make(map[string]bool, len(listed))
	for _, s := range listed {
		known[strings.ToLower(s.ID)] = true
	}
	for id, pid := range here {
		if !known[strings.ToLower(id)] {
			r.system.Root.Send(pid, &missingOnDevice{heard: heard})
		}
	}
}

// appsOf are the apps of a project whose actor runs here, by id.
func (r *Runtime) appsOf(projectID int64) map[string]*actor.PID {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out map[string]*actor.PID
	for id, pid := range r.running {
		if pid == nil {
			continue // being spawned: its registration is on its way
		}
		if reg, ok := r.plans[pid.Id]; ok && reg.plan.App.ProjectID == projectID {
			if out == nil {
				out = map[string]*actor.PID{}
			}
			out[id] = pid
		}
	}
	return out
}

// missingOnDevice registers the app again unless the heartbeat predates
// the last registration's end (it may have been sent before the device
// took the app), or the device refused the app within
// ReregisterRefusedAfter.
func (a *appActor) missingOnDevice(ctx actor.Context, m *missingOnDevice) {
	if a.plan == nil || m.heard.Before(a.registeredAt) ||
		a.registration == deviceRefused && m.heard.Sub(a.registeredAt) < ReregisterRefusedAfter {
		return
	}
	p := a.plan
	a.rt.cfg.Log.Info("controls app missing on its edge device: started there again",
		slog.String("app", p.App.ID), slog.Int64("project_id", p.App.ProjectID))
	a.rt.logApp(p.App.ID, store.LogWarning, "device",
		"the edge device does not run the app (a replaced or reset device, or other credentials): app_start sent again", nil)
	a.register()
	if a.registration == deviceConfirmed && a.wrote {
		a.writeAgain(ctx)
	}
}
