package http

import (
	"context"
	"errors"
	"slices"
	"strconv"

	"github.com/gofiber/fiber/v2"

	"github.com/openbdp/bdp/controls"
	"github.com/openbdp/bdp/fault"
	"github.com/openbdp/bdp/store"
)

var errNoControls = errors.New("http: no Controls in Deps")

// Statuses from which run=true starts an app (every one that is not
// running, api.md 3.2) and from which run=false stops one.
var (
	appStartableFrom = []int{store.StatusCreated, store.StatusCreationFailed, store.StatusReadyToStart, store.StatusStartFailed,
		store.StatusStopFailed, store.StatusStopped, store.StatusMaintenance, store.StatusHealthCheckFails, store.StatusDeleteFailed}
	appStoppableFrom = []int{store.StatusStarting, store.StatusRunning}
)

func (s *Server) runControlsApp(c *fiber.Ctx, cl *call) (any, error) {
	id, err := appIDParam(c)
	if err != nil {
		return nil, err
	}
	run, err := strconv.ParseBool(c.Query("run"))
	if err != nil {
		return nil, fault.Invalidf("query parameter run must be true or false, got %q", fault.Clip(c.Query("run")))
	}
	a, err := s.store.ControlsApp(c.UserContext(), cl.ProjectID, id)
	if err != nil {
		return nil, err
	}
	if !run {
		return s.stopApp(c.UserContext(), cl, a)
	}
	p, err := s.checkAppRun(c, cl, a)
	if err != nil {
		return nil, err
	}
	return s.startApp(c.UserContext(), cl, a, p)
}

// checkAppRun is everything a run needs before its status changes: the
// plan (controls.Prepare: 400s), write access by TagAuth to the datapoint
// the app writes and read access to the one it reads. An app running
// already needs none of it (affected false).
func (s *Server) checkAppRun(c *fiber.Ctx, cl *call, a store.ControlsApp) (controls.Plan, error) {
	if store.AppActive(a.StatusCode) {
		return controls.Plan{App: a}, nil
	}
	if s.controls == nil {
		return controls.Plan{}, fault.Wrap(fault.Unavailable, errNoControls, "controls apps do not run on this node")
	}
	p, err := controls.Prepare(c.UserContext(), s.store, s.components, a, true)
	if err != nil {
		return p, err
	}
	if err := s.requireDatapointAccess(c, cl, []string{p.Target}, true); err != nil {
		return p, err
	}
	if p.Input != "" {
		if err := s.requireDatapointAccess(c, cl, []string{p.Input}, false); err != nil {
			return p, err
		}
	}
	return p, nil
}

// startApp moves an app to Starting, reserving its target (409 naming
// the app that writes it), and spawns its actor; the answer shows
// Starting (api.md 3.2), the actor moves it on.
func (s *Server) startApp(ctx context.Context, cl *call, a store.ControlsApp, p controls.Plan) (appRunResult, error) {
	if store.AppActive(a.StatusCode) {
		return appRunResult{ControlsAppID: a.ID, Status: appStatusOf(a.StatusCode)}, nil
	}
	a, changed, err := s.store.ChangeControlsApp(ctx, cl.ProjectID, a.ID, store.AppChange{Code: store.StatusStarting,
		Message: "started by " + cl.Principal.User.Email, From: appStartableFrom, Targets: p.Targets()})
	if err != nil || !changed {
		return appRunResult{ControlsAppID: a.ID, Status: appStatusOf(a.StatusCode)}, err
	}
	// The component may have changed between the checks and Starting;
	// from Starting on its changes are refused (409), so the plan made now
	// is the one the app keeps. A changed target was not checked: the
	// start fails and says so.
	fresh, err := controls.Prepare(ctx, s.store, s.components, a, true)
	if err == nil && (!slices.Equal(fresh.Targets(), p.Targets()) || fresh.Input != p.Input) {
		err = errors.New("the component's pins were remapped while the app started: run it again")
	}
	if err == nil {
		err = s.controls.Start(ctx, fresh)
	}
	if err != nil {
		a, _, err = s.store.ChangeControlsApp(ctx, cl.ProjectID, a.ID, store.AppChange{Code: store.StatusStartFailed,
			Level: store.LogError, Message: "start failed: " + fault.Message(err)})
		if err != nil {
			return appRunResult{}, err
		}
	}
	return appRunResult{Affected: true, ControlsAppID: a.ID, Status: appStatusOf(a.StatusCode)}, nil
}

// stopApp moves a running app to Stopping, stops its actor and records
// Stopped (or Stop failed); an app not running is left alone.
func (s *Server) stopApp(ctx context.Context, cl *call, a store.ControlsApp) (appRunResult, error) {
	a, changed, err := s.store.ChangeControlsApp(ctx, cl.ProjectID, a.ID, store.AppChange{Code: store.StatusStopping,
		Message: "stopped by " + cl.Principal.User.Email, From: appStoppableFrom})
	if err != nil || !changed {
		return appRunResult{ControlsAppID: a.ID, Status: appStatusOf(a.StatusCode)}, err
	}
	next := store.AppChange{Code: store.StatusStopped, Message: "app actor stopped"}
	if s.controls == nil {
		next = store.AppChange{Code: store.StatusStopped, Message: "no app actor runs on this node"}
	} else if err := s.controls.Stop(ctx, cl.ProjectID, a.ID); err != nil {
		next = store.AppChange{Code: store.StatusStopFailed, Level: store.LogError, Message: "stop failed: " + err.Error()}
	}
	a, _, err = s.store.ChangeControlsApp(ctx, cl.ProjectID, a.ID, next)
	if err != nil {
		return appRunResult{}, err
	}
	return appRunResult{Affected: true, ControlsAppID: a.ID, Status: appStatusOf(a.StatusCode)}, nil
}

// runControlsApps starts or stops several apps: every one is checked
// first (a refusal names the app and changes nothing), then each moves
// in the order given.
func (s *Server) runControlsApps(c *fiber.Ctx, cl *call) (any, error) {
	var body bulkRunBody
	if err := decode(c, &body); err != nil {
		return nil, err
	}
	if raw := c.Query("run"); raw != "" {
		run, err := strconv.ParseBool(raw)
		if err != nil {
			return nil, fault.Invalidf("query parameter run must be true or false, got %q", fault.Clip(raw))
		}
		if body.Run != nil && *body.Run != run {
			return nil, fault.Invalidf("run in the query (%t) and in the body (%t) differ", run, *body.Run)
		}
		body.Run = &run
	}
	if body.Run == nil {
		return nil, fault.Invalidf("run is required (true runs, false stops), in the body or the query")
	}
	for _, id := range c.Context().QueryArgs().PeekMulti("controls_app_ids") {
		body.ControlsAppIDs = append(body.ControlsAppIDs, string(id))
	}
	const maxBulk = 1000
	if len(body.ControlsAppIDs) > maxBulk {
		return nil, fault.Invalidf("controls_app_ids: at most %d apps at once, got %d", maxBulk, len(body.ControlsAppIDs))
	}
	ctx := c.UserContext()
	var apps []store.ControlsApp
	if len(body.ControlsAppIDs) == 0 {
		all, err := s.store.ControlsApps(ctx, cl.ProjectID)
		if err != nil {
			return nil, err
		}
		apps = all
	}
	seen := map[string]bool{}
	for _, raw := range body.ControlsAppIDs {
		if !isUUID(raw) {
			return nil, fault.Invalidf("controls_app_ids: %q is not a uuid", fault.Clip(raw))
		}
		a, err := s.store.ControlsApp(ctx, cl.ProjectID, raw)
		if err != nil {
			return nil, err
		}
		if !seen[a.ID] {
			seen[a.ID] = true
			apps = append(apps, a)
		}
	}
	out := make([]appRunResult, 0, len(apps))
	if !*body.Run {
		for _, a := range apps {
			r, err := s.stopApp(ctx, cl, a)
			if err != nil {
				return nil, err
			}
			out = append(out, r)
		}
		return out, nil
	}
	plans := make([]controls.Plan, len(apps))
	owner := map[store.AppTarget]string{}
	for i, a := range apps {
		p, err := s.checkAppRun(c, cl, a)
		if err != nil {
			return nil, fault.Wrap(fault.KindOf(err), err, "controls app "+a.ID+": "+fault.Message(err))
		}
		if !store.AppActive(a.StatusCode) {
			for _, t := range p.Targets() {
				if other, dup := owner[t]; dup {
					return nil, fault.Conflictf("controls apps %s and %s both write datapoint %q at priority %d; one app writes a datapoint at a priority",
						other, a.ID, t.DataPointID, t.Priority)
				}
				owner[t] = a.ID
			}
		}
		plans[i] = p
	}
	for i, a := range apps {
		r, err := s.startApp(ctx, cl, a, plans[i])
		if err != nil {
			return nil, err
		}
		out = append(out, r)
	}
	return out, nil
}
