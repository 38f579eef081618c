package runner

import (
	"context"
	"fmt"
	"log/slog"
	"runtime/debug"
	"time"

	"github.com/asynkron/protoactor-go/actor"

	"github.com/openbdp/bdp/actors"
	"github.com/openbdp/bdp/store"
)

// worker is one analysis worker actor: it computes one run at a time, the
// pool's bound on runs in flight. It holds no state, so a restart after a
// panic loses nothing.
type worker struct {
	pool *Pool
}

// runMessage hands a claimed run to an idle worker.
type runMessage struct {
	run store.AnalysisRun
}

func (w *worker) Receive(ctx actor.Context) {
	m, ok := ctx.Message().(*runMessage)
	if !ok {
		return
	}
	w.pool.execute(m.run) // a panic goes to the supervisor's strategy
	w.pool.idle <- ctx.Self()
}

// supervisor is the parent of the workers, so that their failures come to
// its strategy.
type supervisor struct {
	props *actor.Props // the workers'
}

// spawnWorkers asks the supervisor for n workers; it answers with their
// PIDs (actors.Ask).
type spawnWorkers struct {
	n int
}

func (s *supervisor) Receive(ctx actor.Context) {
	if req, ok := ctx.Message().(*spawnWorkers); ok {
		pids := make([]*actor.PID, req.n)
		for i := range pids {
			pids[i] = ctx.Spawn(s.props)
		}
		ctx.Respond(pids)
	}
}

// restartStrategy restarts a worker whose run panicked, every time: the
// fault is the run's (its data, a kernel's bug), not the worker's, so
// later runs must go on. The run fails with the panic's reason.
type restartStrategy struct {
	pool *Pool
}

var _ actor.SupervisorStrategy = (*restartStrategy)(nil)

func (s *restartStrategy) HandleFailure(_ *actor.ActorSystem, sup actor.Supervisor, child *actor.PID,
	_ *actor.RestartStatistics, reason any, message any) {
	sup.RestartChildren(child)
	p := s.pool
	p.metrics.restarts.Inc()
	if m, ok := actor.UnwrapEnvelopeMessage(message).(*runMessage); ok {
		value, stack := reason, []byte(nil)
		if rp, ok := reason.(*runPanic); ok {
			value, stack = rp.value, rp.stack
		}
		p.cfg.Log.Error("analysis run panicked; worker restarted", slog.String("result_id", m.run.ResultID),
			slog.Any("panic", value), slog.String("stack", string(stack)))
		// Written off the supervisor's mailbox, so that a slow database
		// does not hold up other workers' restarts; stop waits for it.
		p.finishing.Go(func() {
			p.finish(m.run, store.AnalysisRunEnd{Status: store.AnalysisFailed,
				Info: fmt.Sprintf("the analysis failed with an internal error: %v", value)})
		})
	}
	// The restarted worker takes its next run after the restart, from its
	// mailbox.
	p.idle <- child
}

// runPanic carries a run's panic with its stack to the strategy, which
// otherwise sees only the value.
type runPanic struct {
	value any
	stack []byte
}

func (r *runPanic) String() string { return fmt.Sprint(r.value) }

// startActors starts the actor system, the supervisor and the workers,
// each of them idle.
func (p *Pool) startActors() error {
	if p.system = p.cfg.System; p.system == nil {
		p.system = actors.NewSystem(p.cfg.Log)
	}
	sup := &supervisor{props: actor.PropsFromProducer(func() actor.Actor { return &worker{pool: p} })}
	p.supervisor = p.system.Root.Spawn(actor.PropsFromProducer(func() actor.Actor { return sup },
		actor.WithSupervisor(&restartStrategy{pool: p})))
	workers, err := actors.Ask[[]*actor.PID](p.system, p.supervisor, &spawnWorkers{n: p.cfg.Workers}, actors.SpawnTimeout)
	if err != nil {
		return err
	}
	p.workers = workers
	for _, w := range p.workers {
		p.idle <- w
	}
	return nil
}

// execute computes one run and writes its result. It fails the run when
// the time limit passes, even while its kernel still computes: the worker
// stays busy until then, so the bound on runs in flight holds, and the
// kernel's late result is not written.
func (p *Pool) execute(run store.AnalysisRun) {
	began := time.Now()
	p.metrics.inFlight.Inc()
	p.metrics.queueWait.Observe(run.Waited.Seconds())
	ctx, cancel := context.WithTimeout(p.runCtx, p.cfg.TimeLimit)
	overdue := time.AfterFunc(p.cfg.TimeLimit, func() {
		p.finishing.Add(1) // while the worker is busy, so before stop waits
		defer p.finishing.Done()
		p.finish(run, p.failed(timeLimitInfo(p.cfg.TimeLimit)))
	})
	defer func() {
		overdue.Stop()
		cancel()
		p.metrics.inFlight.Dec()
		p.metrics.duration.Observe(time.Since(began).Seconds())
		if r := recover(); r != nil {
			p.forget(run.ResultID)
			panic(&runPanic{value: r, stack: debug.Stack()})
		}
	}()
	end, err := p.compute(ctx, run)
	if err != nil && p.runCtx.Err() != nil {
		p.release(run) // shutdown, not the run's fault
		return
	}
	switch {
	case err != nil && ctx.Err() != nil:
		end = p.failed(timeLimitInfo(p.cfg.TimeLimit))
	case err != nil:
		end = p.failed(fmt.Sprintf("reading the stored data failed: %v", err))
	}
	p.finish(run, end)
	p.forget(run.ResultID)
}

func timeLimitInfo(limit time.Duration) string {
	return fmt.Sprintf("the run took longer than the time limit of %s", limit)
}

func (p *Pool) failed(info string) store.AnalysisRunEnd {
	return store.AnalysisRunEnd{Status: store.AnalysisFailed, Info: info}
}
