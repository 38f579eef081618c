package http

import (
	"context"
	"errors"
	"strconv"

	"github.com/gofiber/fiber/v2"

	"github.com/openbdp/bdp/controls"
	"github.com/openbdp/bdp/fault"
	"github.com/openbdp/bdp/store"
)

var errNoControls = errors.New("http: no Controls in Deps")

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

// startApp starts an app (controls.Runtime.StartApp) and answers what it
// became. An app running already needs no runtime (checkAppRun does not
// ask for one) and is answered as it is.
func (s *Server) startApp(ctx context.Context, cl *call, a store.ControlsApp, p controls.Plan) (appRunResult, error) {
	if store.AppActive(a.StatusCode) {
		return appRunResult{ControlsAppID: a.ID, Status: appStatusOf(a.StatusCode)}, nil
	}
	a, affected, err := s.apps.StartApp(ctx, a, p, cl.Principal.User.Email)
	if err != nil {
		return appRunResult{}, err
	}
	return appRunResult{Affected: affected, ControlsAppID: a.ID, Status: appStatusOf(a.StatusCode)}, nil
}

// stopApp stops an app (controls.StopApp) and answers what it became.
func (s *Server) stopApp(ctx context.Context, cl *call, a store.ControlsApp) (appRunResult, error) {
	a, affected, err := s.apps.StopApp(ctx, a, cl.Principal.User.Email)
	if err != nil {
		return appRunResult{}, err
	}
	return appRunResult{Affected: affected, ControlsAppID: a.ID, Status: appStatusOf(a.StatusCode)}, nil
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
	for i, a := range apps {
		p, err := s.checkAppRun(c, cl, a)
		if err != nil {
			return nil, fault.Wrap(fault.KindOf(err), err, "controls app "+a.ID+": "+fault.Message(err))
		}
		plans[i] = p
	}
	if err := controls.RefuseSharedTargets(plans); err != nil {
		return nil, err
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
