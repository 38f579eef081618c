package http

import (
	"strconv"

	"github.com/gofiber/fiber/v2"

	"github.com/openbdp/bdp/actors"
	"github.com/openbdp/bdp/fault"
	"github.com/openbdp/bdp/store"
)

// Statuses from which run=true may start a virtual datapoint, and from
// which run=false may stop one (api.md 3.1 with decisions.md 5).
var (
	startableFrom = []int{store.StatusReadyToStart, store.StatusStopped, store.StatusStartFailed,
		store.StatusStopFailed, store.StatusMaintenance, store.StatusHealthCheckFails}
	stoppableFrom = []int{store.StatusStarting, store.StatusRunning}
)

// runVDP starts (run=true) or stops (run=false) a virtual datapoint. Each
// state change is stored before the next step, and the answer is the
// datapoint as it then is (no envelope, api.md 4.5).
func (s *Server) runVDP(c *fiber.Ctx, cl *call) (any, error) {
	id, err := vdpParam(c)
	if err != nil {
		return nil, err
	}
	run, err := strconv.ParseBool(c.Query("run"))
	if err != nil {
		return nil, fault.Invalidf("query parameter run must be true or false, got %q", c.Query("run"))
	}
	need := needWrite
	if run {
		need = needRun
	}
	if err := s.requireVDPAccess(c, cl, id, need, nil); err != nil {
		return nil, err
	}
	ctx, who := c.UserContext(), cl.Principal.User.Email
	var v store.VDP
	if run {
		if err := s.checkRunBudget(c, cl.ProjectID, id); err != nil {
			return nil, err
		}
		v, err = s.store.ChangeVDPStatus(ctx, cl.ProjectID, id, store.StatusChange{Code: store.StatusStarting, Message: "started by " + who}, startableFrom...)
		if err != nil {
			return nil, err
		}
		v, err = s.startVDP(c, v)
	} else {
		_, err = s.store.ChangeVDPStatus(ctx, cl.ProjectID, id, store.StatusChange{Code: store.StatusStopping, Message: "stopped by " + who}, stoppableFrom...)
		if err != nil {
			return nil, err
		}
		next := store.StatusChange{Code: store.StatusStopped, Message: "engine actor stopped"}
		if err := s.runner.Stop(ctx, actors.Key{ProjectID: cl.ProjectID, DataPointID: id}); err != nil {
			next = store.StatusChange{Code: store.StatusStopFailed, Message: err.Error()}
		}
		v, err = s.store.ChangeVDPStatus(ctx, cl.ProjectID, id, next)
	}
	if err != nil {
		return nil, err
	}
	return s.vdpAnswer(c, cl, v)
}

// checkRunBudget refuses, before any status changes, a start over the
// window budget: the engine's Start enforces it again under its lock, so
// a start that loses a race for the node's last share ends Start failed
// with the same reason.
func (s *Server) checkRunBudget(c *fiber.Ctx, projectID int64, id string) error {
	v, err := s.store.VDP(c.UserContext(), projectID, id)
	if err != nil {
		return err
	}
	return s.runner.CheckRunBudget(c.UserContext(), v)
}

// startVDP runs the actor of a virtual datapoint in Starting and records
// the outcome: Running, with where its calculation began for a catch-up
// after a crash (actors.Engine.CatchUp), or Start failed with the reason.
func (s *Server) startVDP(c *fiber.Ctx, v store.VDP) (store.VDP, error) {
	next := store.StatusChange{Code: store.StatusRunning, Message: "engine actor running"}
	var err error
	if next.CatchUpFrom, err = s.runner.StartVDP(c.UserContext(), v); err != nil {
		next = store.StatusChange{Code: store.StatusStartFailed, Message: fault.Message(err)}
		if fault.KindOf(err) == fault.Internal {
			next.Message = err.Error() // an operator reads this log; it names no secret
		}
	}
	return s.store.ChangeVDPStatus(c.UserContext(), v.ProjectID, v.DataPointID, next)
}
