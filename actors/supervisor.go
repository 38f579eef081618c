package actors

import (
	"context"
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
	// spawned is the mailbox of the actor spawned last: props' mailbox
	// producer (newMailbox) makes it during Spawn, which runs on the
	// supervisor's goroutine, and Receive hands it to the registration.
	spawned *leanMailbox
}

// newMailbox is the actors' mailbox producer.
func (s *supervisor) newMailbox() actor.Mailbox {
	s.spawned = &leanMailbox{}
	return s.spawned
}

// spawnRequest asks the supervisor for a virtual datapoint's actor. It is
// a request, numbered: the answer comes to the supervisor as a
// startAnswer with that number, from the actor once its first start is
// done (or from the supervisor when the Start that asked has given up
// meanwhile), and goes to the Start that waits (Engine.answerStart).
type spawnRequest struct {
	def     *Definition
	catchUp bool      // the first start catches up (Engine.CatchUp)
	cursor  time.Time // where a catch-up without a later stored output begins
	request uint64
}

// startAnswer is how the first start of the actor of a spawn request
// ended.
type startAnswer struct {
	request uint64
	res     startResult
}

func (s *supervisor) Receive(ctx actor.Context) {
	switch m := ctx.Message().(type) {
	case *spawnRequest:
		pid := ctx.Spawn(s.props)
		mailbox := s.spawned
		s.spawned = nil
		// Registered before the actor can fail, so a restart finds it and
		// a Start that gives up forgets it.
		def, ok := s.engine.register(pid, mailbox, m.def, m.cursor)
		if !ok { // its Start gave up before the spawn
			ctx.Stop(pid)
			s.engine.answerStart(m.request, startResult{err: context.Canceled})
			return
		}
		// The first message in the new mailbox, before any delivery: the
		// actor subscribes to its sources only while handling it, and
		// answers the request when its first start is done.
		ctx.Send(pid, &initialize{def: def, catchUp: m.catchUp, cursor: m.cursor, request: m.request})
	case *startAnswer:
		s.engine.answerStart(m.request, m.res)
	}
}

// unhealthy is the engine's HealthStrategy's GiveUp: a virtual datapoint
// whose actor failed too often is stopped and reported.
func (e *Engine) unhealthy(child *actor.PID, reason any) {
	if def, ok := e.definitionOf(child); ok {
		k := def.key()
		e.forget(k)
		e.cfg.OnUnhealthy(k, fmt.Sprintf("stopped after more than %d failures within %s; last: %v", MaxRestarts, RestartWindow, reason))
	}
}
