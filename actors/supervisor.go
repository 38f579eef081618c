package actors

import (
	"fmt"

	"github.com/asynkron/protoactor-go/actor"
)

// supervisor is the parent of every virtual datapoint actor: it spawns
// them, so their failures come to its strategy.
type supervisor struct {
	engine *Engine
}

type spawnRequest struct {
	def     Definition
	started chan error // the actor reports its first start here
	reply   chan *actor.PID
}

func (s *supervisor) Receive(ctx actor.Context) {
	if req, ok := ctx.Message().(*spawnRequest); ok {
		e := s.engine
		props := actor.PropsFromProducer(func() actor.Actor {
			return &vdpActor{engine: e, def: req.def, started: req.started}
		})
		req.reply <- ctx.Spawn(props)
	}
}

// healthStrategy restarts a failed actor, one for one, unless it failed
// more than MaxRestarts times within RestartWindow: then it stops the
// actor and reports the virtual datapoint as unhealthy.
type healthStrategy struct {
	engine *Engine
}

var _ actor.SupervisorStrategy = (*healthStrategy)(nil)

func (h *healthStrategy) HandleFailure(_ *actor.ActorSystem, sup actor.Supervisor, child *actor.PID,
	rs *actor.RestartStatistics, reason any, _ any) {
	rs.Fail()
	if rs.NumberOfFailures(RestartWindow) <= MaxRestarts {
		sup.RestartChildren(child)
		return
	}
	sup.StopChildren(child)
	if k, ok := h.engine.keyOf(child); ok {
		h.engine.forget(k)
		h.engine.cfg.OnUnhealthy(k, fmt.Sprintf("stopped after more than %d failures within %s; last: %v", MaxRestarts, RestartWindow, reason))
	}
}
