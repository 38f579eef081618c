package actors

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/asynkron/protoactor-go/actor"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/openbdp/bdp/clock"
	"github.com/openbdp/bdp/pipeline"
	"github.com/openbdp/bdp/pipeline/formula"
	"github.com/openbdp/bdp/store"
)

// History reads stored observations to rebuild windows.
type History interface {
	// Recent returns the stored observations of a datapoint in [since,
	// end) in ascending time: the newest count of them (count > 0), or
	// all. A zero since leaves that side open. An unknown datapoint has
	// none.
	Recent(ctx context.Context, projectID int64, dataPointID string, count int, since, end time.Time) ([]Point, error)
}

// EngineConfig is what the engine needs from the platform.
type EngineConfig struct {
	Sink    pipeline.Sink    // where outputs go
	Router  *pipeline.Router // where sources come from
	History SourceReader     // refills windows, and catches up after a restart
	Log     *slog.Logger
	// OnUnhealthy is told about a virtual datapoint whose actor failed
	// more than MaxRestarts times within RestartWindow; the actor is
	// stopped. Called from the supervisor: it must not block for long.
	OnUnhealthy func(k Key, reason string)
	// OnCalcError is told about a calculation that emitted nothing because
	// of an error (division by zero, say), at most once every
	// CalcErrorInterval per virtual datapoint.
	OnCalcError func(k Key, err error)
	Clock       clock.Clock // the time of timed triggers and catch-ups; nil: the real one
	// TickRate bounds the ticks a second that timed triggers get at one
	// boundary; 0 for DefaultTickRate, negative for no bound.
	TickRate int
	// Budget bounds the windows' memory (budget.go); the zero value
	// limits nothing.
	Budget Budget
	// System is the process's actor system (NewSystem); nil for one of
	// the engine's own.
	System *actor.ActorSystem
	// Registry, if set, gets the window budget's gauges.
	Registry prometheus.Registerer
}

// DefaultTickRate is how many timed-trigger ticks a second a boundary
// sends at most: 100,000 every_minute datapoints fire over 3.3 s, their
// outputs' cost spread so that ingestion keeps pace (issue 18; measured
// with bdp-bench vdp -burst only: at 40,000 a second ingestion still
// fell to under half its rate for a second, at 25,000 it did not dip
// below what it dips without a burst, and the last output came 4 s after
// the boundary).
const DefaultTickRate = 30_000

// CalcErrorInterval is how often at most a virtual datapoint's
// calculation errors are reported: a formula failing on every value must
// not flood its log.
const CalcErrorInterval = time.Minute

// Engine runs the actors. Safe for concurrent use.
type Engine struct {
	cfg        EngineConfig
	ctx        context.Context // ends at Shutdown: cuts short the starts in progress
	cancel     context.CancelFunc
	system     *actor.ActorSystem
	supervisor *actor.PID
	dispatcher *workerDispatcher // runs the datapoint actors' mailboxes
	clock      *tickClock        // wakes the actors at their timed-trigger boundaries

	mu      sync.Mutex
	running map[Key]runningVDP
	actors  map[string]*registration // PID id -> what the actor runs, for restarts and the supervisor's reports
	// starts are the Starts waiting for their actor's first start, by the
	// number of their spawn request. A request through the actor system
	// that names its answer by number rather than by a future: protoactor
	// registers each future under a name of its own, and the registry's
	// map kept the room of every future since (220 bytes per running
	// datapoint).
	starts   map[uint64]chan startResult
	startSeq uint64

	// programs shares compiled formulas between the virtual datapoints
	// that use the same one: a compiled program is several times the size
	// of the rest of a running datapoint.
	programs *formula.Cache
	budget   *windowBudget

	// outputs carries what actors calculated to the one writer goroutine,
	// which stores everything waiting in one pipeline write while the
	// previous one commits: an actor never waits for a commit, and ten
	// thousand actors make a few large batches instead of many small ones.
	outputs     chan pipeline.Observation
	writerDone  chan struct{}
	closeWriter sync.Once
	giveUp      chan struct{} // closed when Shutdown's context ends: stop retrying writes
	closeGiveUp sync.Once
	stopWaits   sync.WaitGroup // Stop's waits (StopAndWait), joined by Shutdown
}

// outputQueue bounds the outputs waiting for the writer; a full queue
// makes actors wait (backpressure) instead of memory growing. Outputs
// travel one by one, by value: a slice per output was most of what the
// actors allocated.
const outputQueue = 65_536

// New starts the actor system and the supervisor.
func New(cfg EngineConfig) (*Engine, error) {
	if cfg.Sink == nil || cfg.Router == nil || cfg.History == nil || cfg.Log == nil {
		return nil, errors.New("actors: Sink, Router, History and Log are required")
	}
	if cfg.Clock == nil {
		cfg.Clock = clock.Real{}
	}
	if cfg.OnUnhealthy == nil {
		cfg.OnUnhealthy = func(Key, string) {}
	}
	if cfg.OnCalcError == nil {
		cfg.OnCalcError = func(Key, error) {}
	}
	budget, err := newWindowBudget(cfg.Budget, cfg.Registry)
	if err != nil {
		return nil, err
	}
	system := cfg.System
	if system == nil {
		system = NewSystem(cfg.Log)
	}
	ctx, cancel := context.WithCancel(context.Background())
	e := &Engine{cfg: cfg, ctx: ctx, cancel: cancel, system: system, running: map[Key]runningVDP{}, actors: map[string]*registration{}, starts: map[uint64]chan startResult{},
		programs: formula.NewCache(), budget: budget, dispatcher: newWorkerDispatcher(),
		outputs: make(chan pipeline.Observation, outputQueue), writerDone: make(chan struct{}), giveUp: make(chan struct{})}
	e.clock = newTickClock(cfg.Clock, func(pid *actor.PID, t *tick) { system.Root.Send(pid, t) }, e.waitUntilKeepingUp, tickRate(cfg.TickRate))
	go e.writeOutputs()
	sup := &supervisor{engine: e}
	sup.props = actor.PropsFromProducer(func() actor.Actor { return &vdpActor{engine: e} },
		actor.WithDispatcher(e.dispatcher), actor.WithMailbox(sup.newMailbox))
	props := actor.PropsFromProducer(func() actor.Actor { return sup },
		actor.WithSupervisor(HealthStrategy{GiveUp: e.unhealthy}))
	e.supervisor = e.system.Root.Spawn(props)
	return e, nil
}

// Start spawns the actor of a virtual datapoint and returns once it runs
// (history loaded, subscribed), with where its live calculation begins in
// event time: the cursor a later CatchUp takes when no output of this run
// is stored (vdpActor.start). Starting a running one is an error.
func (e *Engine) Start(ctx context.Context, def Definition) (time.Time, error) {
	return e.start(ctx, def, false, time.Time{})
}

// CatchUp is Start after a restart of the platform: before it takes live
// data, the actor computes every output due since the datapoint's newest
// stored output, or since cursor (what its Start returned) when that is
// later or no output is stored, through the recompute's replay (the same
// calculation in event time, reading the sources in pages), and writes
// them as live outputs are written. What was stored but not yet
// calculated when the platform stopped, even by kill -9 before the first
// output was stored, is so calculated, and the stored output at the newest
// time is calculated again with everything at that time. Without either
// (a zero cursor: a datapoint set running before cursors were kept), it
// starts as with Start.
func (e *Engine) CatchUp(ctx context.Context, def Definition, cursor time.Time) error {
	_, err := e.start(ctx, def, true, cursor)
	return err
}

func (e *Engine) start(ctx context.Context, def Definition, catchUp bool, cursor time.Time) (time.Time, error) {
	if def.NewCalculator == nil {
		return time.Time{}, errors.New("actors: Definition.NewCalculator is required")
	}
	// Building one calculator up front turns a bad definition into an
	// error here instead of a crash loop in the actor.
	if _, err := def.NewCalculator(); err != nil {
		return time.Time{}, err
	}
	k := def.key()
	e.mu.Lock()
	if _, ok := e.running[k]; ok {
		e.mu.Unlock()
		return time.Time{}, fmt.Errorf("actors: %d/%s is already running", def.ProjectID, def.DataPointID)
	}
	if err := e.budget.reserve(def); err != nil {
		e.mu.Unlock()
		return time.Time{}, err
	}
	// Reserved while it starts (no pid yet): a second Start of it fails.
	e.running[k] = runningVDP{windowBytes: def.WindowBytes}
	// The request's number, which the answer carries back (answerStart).
	e.startSeq++
	request := e.startSeq
	answer := make(chan startResult, 1)
	e.starts[request] = answer
	e.mu.Unlock()
	e.system.Root.Send(e.supervisor, &spawnRequest{def: &def, catchUp: catchUp, cursor: cursor, request: request})
	var res startResult
	select {
	case res = <-answer:
	case <-ctx.Done():
	}
	e.mu.Lock()
	delete(e.starts, request)
	e.mu.Unlock()
	if res.err == nil && ctx.Err() != nil {
		res.err = ctx.Err()
	}
	if res.err != nil {
		// A start given up on: its history reads end (forget) and its
		// actor stops, or, spawned later, is stopped by its supervisor.
		e.abandon(k)
	}
	return res.cursor, res.err
}

// answerStart hands the answer to a spawn request to the Start that waits
// for it, if it still does.
func (e *Engine) answerStart(request uint64, res startResult) {
	e.mu.Lock()
	answer := e.starts[request]
	e.mu.Unlock()
	if answer != nil {
		answer <- res // buffered: one answer per request
	}
}

// Stop stops the actor of a virtual datapoint and waits for it.
func (e *Engine) Stop(ctx context.Context, k Key) error {
	e.mu.Lock()
	pid := e.running[k].pid
	e.mu.Unlock()
	if pid == nil {
		return nil // not running, or its Start has not spawned it yet
	}
	e.forget(k)
	return StopAndWait(ctx, e.system, pid, &e.stopWaits)
}

// Running tells whether a virtual datapoint's actor runs.
func (e *Engine) Running(k Key) bool {
	e.mu.Lock()
	defer e.mu.Unlock()
	_, ok := e.running[k]
	return ok
}

// Shutdown stops every actor, then the supervisor. Starts still reading
// history are cut short.
func (e *Engine) Shutdown(ctx context.Context) {
	e.cancel()
	e.clock.stop()
	e.mu.Lock()
	keys := make([]Key, 0, len(e.running))
	for k := range e.running {
		keys = append(keys, k)
	}
	e.mu.Unlock()
	for _, k := range keys {
		if err := e.Stop(ctx, k); err != nil {
			e.cfg.Log.Warn("stop virtual datapoint", slog.Int64("project_id", k.ProjectID),
				slog.String("dataPointID", k.DataPointID), slog.Any("error", err))
		}
	}
	_ = e.system.Root.StopFuture(e.supervisor).Wait()
	e.stopWaits.Wait()
	e.dispatcher.stop()
	e.closeWriter.Do(func() { close(e.outputs) })
	select {
	case <-e.writerDone:
	case <-ctx.Done():
		e.closeGiveUp.Do(func() { close(e.giveUp) })
		<-e.writerDone
	}
}

func tickRate(configured int) int {
	switch {
	case configured == 0:
		return DefaultTickRate
	case configured < 0:
		return 0
	}
	return configured
}

// maxOutputBatch is the most outputs the writer stores in one write: the
// batcher's transaction size (pipeline.BatcherConfig.MaxBatch). A larger
// write is one transaction of its own, which source writes queue behind.
// At a minute boundary 100,000 every_minute datapoints output at once; in
// writes of 50,000, ingestion stalled while they committed (the 100,000
// mix: the lowest 1-s input rate after the boundary 2 % of the rate
// before).
const maxOutputBatch = 10_000

// waitUntilKeepingUp returns once the engine keeps up with the messages
// sent to its actors: the dispatcher's queue at most half full and no
// more outputs waiting than one write takes. The tick clock paces a
// boundary's ticks with it; the wait ends early at Shutdown.
func (e *Engine) waitUntilKeepingUp() {
	for e.dispatcher.backlog() > dispatcherQueue/2 || len(e.outputs) > maxOutputBatch {
		select {
		case <-time.After(time.Millisecond):
		case <-e.ctx.Done():
			return
		}
	}
}

// writeOutputs is the engine's one writer: it takes whatever outputs are
// waiting, up to maxOutputBatch observations, and stores them in one
// write, in the order the actors sent them. It ends when Shutdown closes
// the queue, after the last outputs are stored.
func (e *Engine) writeOutputs() {
	defer close(e.writerDone)
	for first := range e.outputs {
		// This goroutine is the only receiver: what len reports waiting
		// is there to take, even once the channel is closed.
		batch := make([]pipeline.Observation, 1, min(1+len(e.outputs), maxOutputBatch))
		batch[0] = first
		for len(batch) < cap(batch) {
			batch = append(batch, <-e.outputs)
		}
		e.store(batch)
	}
}

// store writes a batch of outputs, retrying while the write fails for a
// reason that may pass (the database unreachable): outputs are derived
// data that no client holds to send again, so a dropped batch would stay
// missing until a recompute. Data the database refuses would be refused
// again, and a stopped pipeline takes nothing more: those are dropped,
// as is whatever still fails when Shutdown's deadline passes.
func (e *Engine) store(batch []pipeline.Observation) {
	backoff := 50 * time.Millisecond
	for attempt := 1; ; attempt++ {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		err := e.cfg.Sink.Write(ctx, SourceVDP, batch)
		cancel()
		if err == nil {
			return
		}
		log := e.cfg.Log.With(slog.Int("observations", len(batch)), slog.Int("attempt", attempt), slog.Any("error", err))
		if store.IsRejected(err) || errors.Is(err, pipeline.ErrStopped) {
			log.Error("virtual datapoint outputs dropped")
			return
		}
		log.Warn("write virtual datapoint outputs; retrying", slog.Duration("retry_in", backoff))
		select {
		case <-time.After(backoff):
		case <-e.giveUp:
			log.Error("virtual datapoint outputs dropped at shutdown")
			return
		}
		backoff = min(2*backoff, 5*time.Second)
	}
}

func (e *Engine) forget(k Key) (pid *actor.PID) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if r, ok := e.running[k]; ok {
		if pid = r.pid; pid != nil {
			if r := e.actors[pid.Id]; r != nil && r.cancel != nil {
				r.cancel() // a start in progress stops reading history
			}
			delete(e.actors, pid.Id)
		}
		delete(e.running, k)
		e.budget.release(r.windowBytes)
	}
	return pid
}

// abandon forgets a datapoint whose Start failed or gave up and stops its
// actor, if it was spawned; one spawned later stops itself (register).
func (e *Engine) abandon(k Key) {
	if pid := e.forget(k); pid != nil {
		e.system.Root.Stop(pid)
	}
}

// runningVDP is a running virtual datapoint's actor (nil while its Start
// spawns it) and the share of the window budget it holds. The share lives
// here rather than in a map of the budget's own, which cost every running
// datapoint a second copy of its Key in a second map.
type runningVDP struct {
	pid         *actor.PID
	windowBytes int64
}

// registration is what an actor runs, kept by the engine so that the
// actor finds it again after a restart.
type registration struct {
	// def by value: the actor points at this copy, which saves each
	// running datapoint an allocation of its own (16 bytes net).
	def         Definition
	initialized bool // the actor has taken its initialize message
	// mailbox is the actor's, which its router subscriber posts to
	// (mailboxSubscriber).
	mailbox *leanMailbox
	// cursor is where its live calculation began in event time (see
	// vdpActor.start): a restart after a panic catches up from it when no
	// later output is stored.
	cursor time.Time
	// cancel ends the start in progress, if any (startContext): called
	// when the engine forgets the actor (Stop, a given-up Start), so that
	// a long refill or catch-up does not hold up a Stop. Only a start
	// holds a context: one kept for the actor's whole life would cost
	// every running datapoint a context, its done channel and a map of
	// the history reads' timeouts (some 500 bytes each).
	cancel context.CancelFunc
}

// register notes what a spawned actor runs, before the actor can fail,
// and returns the registry's copy of its definition, for the actor; false
// when its Start has given up meanwhile.
func (e *Engine) register(pid *actor.PID, mailbox *leanMailbox, def *Definition, cursor time.Time) (*Definition, bool) {
	e.mu.Lock()
	defer e.mu.Unlock()
	k := def.key()
	running, ok := e.running[k]
	if !ok {
		return nil, false
	}
	running.pid = pid
	e.running[k] = running
	r := &registration{def: *def, cursor: cursor, mailbox: mailbox}
	e.actors[pid.Id] = r
	return &r.def, true
}

// setCursor notes where an actor's live calculation began, for its
// restarts.
func (e *Engine) setCursor(pid *actor.PID, cursor time.Time) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if r, ok := e.actors[pid.Id]; ok {
		r.cursor = cursor
	}
}

// startContext is what one start of an actor reads history under, ended
// by done (which the start calls when it returns), by forget, or by
// Shutdown; an ended one once the actor is forgotten.
func (e *Engine) startContext(pid *actor.PID) (ctx context.Context, done func()) {
	e.mu.Lock()
	defer e.mu.Unlock()
	r, ok := e.actors[pid.Id]
	if !ok {
		ctx, cancel := context.WithCancel(context.Background())
		cancel()
		return ctx, cancel
	}
	ctx, cancel := context.WithCancel(e.ctx)
	r.cancel = cancel
	return ctx, func() {
		e.mu.Lock()
		r.cancel = nil
		e.mu.Unlock()
		cancel()
	}
}

// initialized marks an actor's first start as begun: from now on a
// Started message means a restart. False once it is being stopped.
func (e *Engine) initialized(pid *actor.PID) bool {
	e.mu.Lock()
	defer e.mu.Unlock()
	r, ok := e.actors[pid.Id]
	if ok {
		r.initialized = true
	}
	return ok
}

// definitionOf is what an actor runs; false once it is being stopped.
func (e *Engine) definitionOf(pid *actor.PID) (*Definition, bool) {
	e.mu.Lock()
	defer e.mu.Unlock()
	r, ok := e.actors[pid.Id]
	if !ok {
		return nil, false
	}
	return &r.def, true
}

// mailboxOf is an actor's mailbox, for its subscriber to post to; nil
// once it is being stopped.
func (e *Engine) mailboxOf(pid *actor.PID) *leanMailbox {
	e.mu.Lock()
	defer e.mu.Unlock()
	if r, ok := e.actors[pid.Id]; ok {
		return r.mailbox
	}
	return nil
}

// restartOf is the definition and cursor of an actor being restarted;
// false on the first start, before the initialize message, and once it is
// stopped.
func (e *Engine) restartOf(pid *actor.PID) (*Definition, time.Time, bool) {
	e.mu.Lock()
	defer e.mu.Unlock()
	r, ok := e.actors[pid.Id]
	if !ok || !r.initialized {
		return nil, time.Time{}, false
	}
	return &r.def, r.cursor, true
}
