package controls

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/asynkron/protoactor-go/actor"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/openbdp/bdp/actors"
	"github.com/openbdp/bdp/clock"
	"github.com/openbdp/bdp/edge"
	"github.com/openbdp/bdp/fault"
	"github.com/openbdp/bdp/pipeline"
	"github.com/openbdp/bdp/store"
)

// Device sends an app's definition (app_start, with its reset values and
// alive time-out) and its end (app_stop) to a project's edge device and
// answers the device's response.
type Device interface {
	Request(ctx context.Context, projectID int64, req edge.Request) (edge.Response, error)
}

// History reads a datapoint's newest stored observations
// (actors.StoreHistory): heating_curve starts from the newest outdoor
// temperature.
type History interface {
	Recent(ctx context.Context, projectID int64, dataPointID string, count int, since, end time.Time) ([]actors.Point, error)
}

// Config is what the runtime needs from the platform.
type Config struct {
	Store   *store.Store
	Catalog Catalog
	Writer  edge.Writer // the setpoint write path, safeguards included
	Device  Device      // nil: apps are not registered on a device (logged)
	Router  *pipeline.Router
	History History
	Log     *slog.Logger
	Clock   clock.Clock // the wall clock (clock.Real) by default
	// System is the process's actor system (actors.NewSystem); nil for
	// one of the runtime's own.
	System *actor.ActorSystem
	// Registry, if set, gets bdp_controls_apps_running and
	// bdp_controls_app_writes_total.
	Registry prometheus.Registerer
}

// StopDeviceWait bounds how long a stop waits for the edge device to
// confirm app_stop.
const StopDeviceWait = 5 * time.Second

// Runtime runs the actors of the apps of this node. Safe for concurrent
// use.
type Runtime struct {
	cfg        Config
	ctx        context.Context // ends at Shutdown
	cancel     context.CancelFunc
	system     *actor.ActorSystem
	supervisor *actor.PID

	// writes counts the apps' writes by result: accepted (by the write
	// path; the device's answer is the setpoint operation's) or refused.
	writes *prometheus.CounterVec

	mu      sync.Mutex
	running map[string]*actor.PID    // app id -> its actor
	plans   map[string]*registration // PID id -> what its actor runs, for restarts

	stopWaits sync.WaitGroup // Stop's waits (actors.StopAndWait), joined by Shutdown
}

// registration is what an actor runs; begun once its first start began,
// so that a restart (a fresh actor's Started) begins again.
type registration struct {
	plan  *Plan
	begun bool
	// ctx ends when the app stops: a device request or write in
	// progress does not hold up its stop.
	ctx    context.Context
	cancel context.CancelFunc
}

// New starts the actor system and the apps' supervisor.
func New(cfg Config) (*Runtime, error) {
	if cfg.Store == nil || cfg.Catalog == nil || cfg.Writer == nil || cfg.Router == nil || cfg.History == nil || cfg.Log == nil {
		return nil, errors.New("controls: Store, Catalog, Writer, Router, History and Log are required")
	}
	if cfg.Clock == nil {
		cfg.Clock = clock.Real{}
	}
	system := cfg.System
	if system == nil {
		system = actors.NewSystem(cfg.Log)
	}
	ctx, cancel := context.WithCancel(context.Background())
	r := &Runtime{cfg: cfg, ctx: ctx, cancel: cancel, system: system, running: map[string]*actor.PID{}, plans: map[string]*registration{},
		writes: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "bdp_controls_app_writes_total",
			Help: "Setpoint writes of the controls apps of this node, by result: accepted by the write path, or refused (a safeguard, no edge device)."},
			[]string{"result"})}
	if cfg.Registry != nil {
		running := prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "bdp_controls_apps_running",
			Help: "Controls apps whose actor runs on this node."}, func() float64 { return float64(r.Running()) })
		for _, c := range []prometheus.Collector{running, r.writes} {
			if err := cfg.Registry.Register(c); err != nil {
				cancel()
				return nil, fmt.Errorf("register controls metrics: %w", err)
			}
		}
	}
	sup := &supervisor{rt: r, props: actor.PropsFromProducer(func() actor.Actor { return &appActor{rt: r} })}
	r.supervisor = system.Root.Spawn(actor.PropsFromProducer(func() actor.Actor { return sup },
		actor.WithSupervisor(actors.HealthStrategy{GiveUp: r.unhealthy})))
	return r, nil
}

// Start spawns the actor of an app in Starting. It returns once the
// actor exists; the actor registers the app on the device, moves it to
// Running and writes its first setpoint. Starting a running app is an
// error.
func (r *Runtime) Start(ctx context.Context, p Plan) error {
	if r.ctx.Err() != nil {
		return errors.New("controls: shutting down")
	}
	r.mu.Lock()
	if _, ok := r.running[p.App.ID]; ok {
		r.mu.Unlock()
		return fmt.Errorf("controls: app %s: %w", p.App.ID, errRunning)
	}
	r.running[p.App.ID] = nil // reserved
	r.mu.Unlock()
	// The supervisor answers at once; once it has, the actor is known
	// and can be stopped.
	if _, err := actors.Ask[*actor.PID](r.system, r.supervisor, &spawnRequest{plan: &p}, actors.SpawnTimeout); err != nil {
		return fmt.Errorf("controls: start app %s: %w", p.App.ID, err)
	}
	return nil
}

// Stop stops an app's actor and waits for it; it unregisters the app on
// the device (app_stop). Not running is no error.
func (r *Runtime) Stop(ctx context.Context, projectID int64, id string) error {
	if stopped, err := r.stopActor(ctx, id); err != nil || !stopped {
		return err
	}
	// The request waits for the device at most StopDeviceWait; unanswered,
	// it stays queued on the connection until the operation time-out.
	dctx, cancel := context.WithTimeout(ctx, StopDeviceWait)
	defer cancel()
	r.sendDevice(dctx, projectID, id, edge.Request{Operation: edge.OpAppStop, App: &edge.App{ID: id}})
	return nil
}

// stopActor stops an app's actor here and waits for it; false when none
// runs. A write or device request in progress gives up.
func (r *Runtime) stopActor(ctx context.Context, id string) (bool, error) {
	r.mu.Lock()
	pid := r.running[id]
	delete(r.running, id)
	r.mu.Unlock()
	if pid == nil {
		return false, nil
	}
	r.cancelApp(pid)
	if err := actors.StopAndWait(ctx, r.system, pid, &r.stopWaits); err != nil {
		return true, err
	}
	r.forgetPID(pid)
	return true, nil
}

// Running counts the apps running on this node.
func (r *Runtime) Running() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(r.running)
}

// errRunning: the app's actor runs here already.
var errRunning = errors.New("running already")

// Resume starts the actors of every app whose desired state is running
// (Starting or Running when bdp serve stopped), on one node; a cluster
// member runs Reconcile instead. An app that no longer can run (its pin
// unmapped meanwhile, say) moves to Start failed with the reason.
func (r *Runtime) Resume(ctx context.Context) error {
	apps, err := r.cfg.Store.ActiveControlsApps(ctx)
	if err != nil {
		return fmt.Errorf("controls apps to resume: %w", err)
	}
	for _, a := range apps {
		if err := r.resume(ctx, a, "resumed after a restart of bdp serve", "not resumed after a restart: ", false); err != nil {
			return err
		}
	}
	return nil
}

// resume starts the actor of an active app as the store holds it, noting
// why in its log; an app that cannot run moves to Start failed, the
// reason after failed. Only ctx's end is an error.
func (r *Runtime) resume(ctx context.Context, a store.ControlsApp, why, failed string, continues bool) error {
	p, err := Prepare(ctx, r.cfg.Store, r.cfg.Catalog, a, true)
	if err == nil {
		p.Continues = continues
		r.logApp(a.ID, store.LogInfo, "status_change", why, nil)
		err = r.Start(ctx, p)
	}
	switch {
	case err == nil, errors.Is(err, errRunning): // started meanwhile (StartApp): it runs
		return nil
	case ctx.Err() != nil:
		return ctx.Err()
	}
	r.changeStatus(a, store.AppChange{Code: store.StatusStartFailed, Level: store.LogError, Message: failed + fault.Message(err)})
	return nil
}

// Shutdown stops every actor (the apps stay running in the store: they
// resume at the next start) and the supervisor.
func (r *Runtime) Shutdown(ctx context.Context) {
	r.cancel()
	r.mu.Lock()
	pids := make([]*actor.PID, 0, len(r.running))
	for id, pid := range r.running {
		if pid != nil {
			pids = append(pids, pid)
		}
		delete(r.running, id)
	}
	r.mu.Unlock()
	for _, pid := range pids {
		if ctx.Err() != nil {
			r.system.Root.Stop(pid) // out of time: do not wait
		} else {
			_ = r.system.Root.StopFuture(pid).Wait()
		}
		r.forgetPID(pid)
	}
	if ctx.Err() == nil {
		_ = r.system.Root.StopFuture(r.supervisor).Wait()
	}
	r.stopWaits.Wait()
}

func (r *Runtime) register(pid *actor.PID, p *Plan) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	if cur, ok := r.running[p.App.ID]; !ok || cur != nil {
		return false // stopped before it was spawned
	}
	r.running[p.App.ID] = pid
	ctx, cancel := context.WithCancel(r.ctx)
	r.plans[pid.Id] = &registration{plan: p, ctx: ctx, cancel: cancel}
	return true
}

// planOf is what the actor pid runs, and whether its first start began.
func (r *Runtime) planOf(pid *actor.PID) (p *Plan, begun, ok bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	reg, ok := r.plans[pid.Id]
	if !ok {
		return nil, false, false
	}
	return reg.plan, reg.begun, true
}

// appContext ends when the app of actor pid stops.
func (r *Runtime) appContext(pid *actor.PID) context.Context {
	r.mu.Lock()
	defer r.mu.Unlock()
	if reg, ok := r.plans[pid.Id]; ok {
		return reg.ctx
	}
	return r.ctx
}

// cancelApp ends the context of actor pid's app.
func (r *Runtime) cancelApp(pid *actor.PID) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if reg, ok := r.plans[pid.Id]; ok {
		reg.cancel()
	}
}

func (r *Runtime) markBegun(pid *actor.PID) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if reg, ok := r.plans[pid.Id]; ok {
		reg.begun = true
	}
}

func (r *Runtime) forgetPID(pid *actor.PID) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if reg, ok := r.plans[pid.Id]; ok {
		if r.running[reg.plan.App.ID] == pid {
			delete(r.running, reg.plan.App.ID)
		}
		reg.cancel()
		delete(r.plans, pid.Id)
	}
}

// changeStatus records a move the runtime makes on its own (Running,
// Health check failed); a failure is logged, the app goes on.
func (r *Runtime) changeStatus(a store.ControlsApp, c store.AppChange) {
	if _, _, err := r.cfg.Store.ChangeControlsApp(r.ctx, a.ProjectID, a.ID, c); err != nil && r.ctx.Err() == nil {
		r.cfg.Log.Warn("controls app status", slog.String("app", a.ID), slog.Int("status", c.Code), slog.Any("error", err))
	}
}

// logApp appends to an app's log; a failure is logged, the app goes on.
func (r *Runtime) logApp(id, level, kind, message string, detail any) {
	if err := r.cfg.Store.AddControlsAppLog(r.ctx, id, level, kind, message, detail); err != nil && r.ctx.Err() == nil {
		r.cfg.Log.Warn("controls app log", slog.String("app", id), slog.Any("error", err))
	}
}

// deviceAnswer is how the device answered an app operation.
type deviceAnswer int

const (
	deviceUnanswered deviceAnswer = iota // not sent, or no answer
	deviceConfirmed
	deviceRefused
)

// sendDevice sends an app operation to the project's device, logs what
// it answered and returns it. Without a Device the app runs
// unregistered.
func (r *Runtime) sendDevice(ctx context.Context, projectID int64, id string, req edge.Request) deviceAnswer {
	if r.cfg.Device == nil {
		r.logApp(id, store.LogWarning, "device", req.Operation+" not sent: no edge connection on this node", nil)
		return deviceUnanswered
	}
	req.Reference = newUUID()
	res, err := r.cfg.Device.Request(ctx, projectID, req)
	switch {
	case err != nil:
		r.logApp(id, store.LogWarning, "device", req.Operation+": the edge device did not answer: "+fault.Message(err), nil)
		return deviceUnanswered
	case res.Status != edge.StatusOK:
		r.logApp(id, store.LogError, "device", req.Operation+": the edge device refused: "+res.Error, nil)
		return deviceRefused
	default:
		r.logApp(id, store.LogInfo, "device", req.Operation+": the edge device confirmed", nil)
		return deviceConfirmed
	}
}

// newUUID is a random (version 4) uuid.
func newUUID() string {
	var b [16]byte
	_, _ = rand.Read(b[:])
	b[6] = b[6]&0x0f | 0x40
	b[8] = b[8]&0x3f | 0x80
	return fmt.Sprintf("%x-%x-%x-%x-%x", b[0:4], b[4:6], b[6:8], b[8:10], b[10:16])
}
