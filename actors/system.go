package actors

import (
	"context"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/asynkron/protoactor-go/actor"
)

// NewSystem makes the actor system of a process. bdp serve makes one and
// hands it to the virtual datapoints' engine, the controls apps, the edge
// connections and the analysis workers; each spawns its supervisor in it,
// and stops that supervisor, with its actors, when it shuts down.
//
// The library logs through log at warnings and errors only: its info
// lines (system started, an actor "recovering", dead letters on stop) are
// noise to operators, and the strategies report failures themselves.
func NewSystem(log *slog.Logger) *actor.ActorSystem {
	quiet := slog.New(warnOnly{log.Handler()}).With(slog.String("lib", "protoactor"))
	return actor.NewActorSystem(actor.WithLoggerFactory(func(*actor.ActorSystem) *slog.Logger { return quiet }))
}

// warnOnly passes on warnings and errors only. It wraps the handlers that
// With and WithGroup derive too: the embedded handler's own would drop
// the filter, and the library's info lines would pass.
type warnOnly struct{ slog.Handler }

func (w warnOnly) Enabled(ctx context.Context, l slog.Level) bool {
	return l >= slog.LevelWarn && w.Handler.Enabled(ctx, l)
}

func (w warnOnly) WithAttrs(as []slog.Attr) slog.Handler { return warnOnly{w.Handler.WithAttrs(as)} }

func (w warnOnly) WithGroup(name string) slog.Handler { return warnOnly{w.Handler.WithGroup(name)} }

// The health rule of the platform's actors: more than MaxRestarts
// failures within RestartWindow stop an actor (a virtual datapoint, a
// controls app) with Health check failed.
const (
	MaxRestarts   = 5
	RestartWindow = time.Minute
)

// HealthStrategy restarts a failed actor, one for one, unless it failed
// more than Restarts times (MaxRestarts if 0) within RestartWindow: then
// it stops the actor and, if GiveUp is set, tells it which actor and the
// last failure. GiveUp runs on the supervisor: it must not block long.
type HealthStrategy struct {
	Restarts int
	GiveUp   func(child *actor.PID, reason any)
}

var _ actor.SupervisorStrategy = HealthStrategy{}

func (h HealthStrategy) HandleFailure(_ *actor.ActorSystem, sup actor.Supervisor, child *actor.PID,
	rs *actor.RestartStatistics, reason any, _ any) {
	limit := h.Restarts
	if limit == 0 {
		limit = MaxRestarts
	}
	rs.Fail()
	if rs.NumberOfFailures(RestartWindow) <= limit {
		sup.RestartChildren(child)
		return
	}
	sup.StopChildren(child)
	if h.GiveUp != nil {
		h.GiveUp(child, reason)
	}
}

// StopAndWait stops an actor and waits for its end until ctx ends. The
// wait runs on a goroutine of waits, whose owner joins it at shutdown:
// once ctx has ended it goes on, within protoactor's StopFuture time-out
// of 10 s.
func StopAndWait(ctx context.Context, system *actor.ActorSystem, pid *actor.PID, waits *sync.WaitGroup) error {
	done := make(chan error, 1)
	waits.Go(func() { done <- system.Root.StopFuture(pid).Wait() })
	select {
	case err := <-done:
		return err
	case <-ctx.Done():
		return ctx.Err()
	}
}

// Ask sends request to pid and waits at most timeout for its answer, which
// must be a T: request and response through the actor system, where a Go
// channel in the message would tie asker and actor to one process.
func Ask[T any](system *actor.ActorSystem, pid *actor.PID, request any, timeout time.Duration) (T, error) {
	var zero T
	msg, err := system.Root.RequestFuture(pid, request, timeout).Result()
	if err != nil {
		return zero, fmt.Errorf("actors: ask %s: %w", pid.Id, err)
	}
	answer, ok := msg.(T)
	if !ok {
		return zero, fmt.Errorf("actors: ask %s: answered %T, not %T", pid.Id, msg, zero)
	}
	return answer, nil
}

// SpawnTimeout bounds the wait for a supervisor's answer to a spawn
// request, which it gives at once.
const SpawnTimeout = 10 * time.Second
