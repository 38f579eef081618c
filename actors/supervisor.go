package actors

import (
	"fmt"
	"time"

	"github.com/asynkron/protoactor-go/actor"
)

// supervisor is the parent of every virtual datapoint actor: it spawns
// them, so their failures come to its strategy.
type supervisor struct {
	engine *Engine
	// props is one for all actors: the library's producer takes no
	// arguments, and props made per actor to carry its definition cost
	// each running datapoint about 250 bytes. An actor gets its definition
	// in its first message instead, and after a restart from the engine.
	props *actor.Props
}

type spawnRequest struct {
	def     *Definition
	catchUp bool             // the first start catches up (Engine.CatchUp)
	cursor  time.Time        // where a catch-up without a later stored output begins
	started chan startResult // the actor reports its first start here
	reply   chan *actor.PID
}

func (s *supervisor) Receive(ctx actor.Context) {
	if req, ok := ctx.Message().(*spawnRequest); ok {
		pid := ctx.Spawn(s.props)
		// Registered before the actor can fail, so a restart finds it and
		// a Start that gives up forgets it.
		def := s.engine.register(pid, req.def, req.cursor)
		// The first message in the new mailbox, before any delivery: the
		// actor subscribes to its sources only while handling it.
		ctx.Send(pid, &initialize{def: def, catchUp: req.catchUp, cursor: req.cursor, started: req.started})
		req.reply <- pid
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
	if def, ok := h.engine.definitionOf(child); ok {
		k := def.key()
		h.engine.forget(k)
		h.engine.cfg.OnUnhealthy(k, fmt.Sprintf("stopped after more than %d failures within %s; last: %v", MaxRestarts, RestartWindow, reason))
	}
}
