package controls

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"strconv"
	"time"

	"github.com/asynkron/protoactor-go/actor"

	"github.com/openbdp/bdp/actors"
	"github.com/openbdp/bdp/edge"
	"github.com/openbdp/bdp/fault"
	"github.com/openbdp/bdp/pipeline"
	"github.com/openbdp/bdp/store"
)

// supervisor is the parent of every app actor, so their failures come to
// its strategy.
type supervisor struct {
	rt    *Runtime
	props *actor.Props // one for all actors: a plan comes in the first message
}

// spawnRequest asks the supervisor for an app's actor; it answers with
// the actor's PID (actors.Ask).
type spawnRequest struct {
	plan *Plan
}

// initialize is an actor's first message: its first start.
type initialize struct{}

// boundary is a schedule's timer firing; gen drops one armed before a
// later one.
type boundary struct{ gen int }

// delivery carries new observations of an app's input.
type delivery struct{ obs []pipeline.Observation }

func (s *supervisor) Receive(ctx actor.Context) {
	if req, ok := ctx.Message().(*spawnRequest); ok {
		pid := ctx.Spawn(s.props)
		if !s.rt.register(pid, req.plan) {
			ctx.Stop(pid) // stopped while it was being spawned
		} else {
			ctx.Send(pid, &initialize{})
		}
		ctx.Respond(pid)
	}
}

// unhealthy is the runtime's HealthStrategy's GiveUp: an app whose actor
// failed too often is stopped and moves to Health check failed.
func (r *Runtime) unhealthy(child *actor.PID, reason any) {
	if p, _, ok := r.planOf(child); ok {
		r.forgetPID(child)
		r.changeStatus(p.App, store.AppChange{Code: store.StatusHealthCheckFails, Level: store.LogError,
			Message: fmt.Sprintf("app actor stopped after more than %d failures within %s; last: %v", actors.MaxRestarts, actors.RestartWindow, reason)})
	}
}

// appActor is one running app. Its state is what it wrote last, rebuilt
// (written again) on every start and restart.
type appActor struct {
	rt   *Runtime
	plan *Plan
	ctx  context.Context // ends when the app stops

	wrote     bool     // something was written since this start
	last      *float64 // the value written last
	accepted  bool     // a write was accepted since this start
	refused   int      // writes refused by a safeguard in a row
	stopTimer func() bool
	gen       int
	unsub     func()
	outdoorAt time.Time // heating_curve: time of the newest outdoor temperature used
	outdoor   float64   // and its value
	// registration is how the device answered the last app_start, which
	// ended at registeredAt (wall clock, as heartbeats are stamped).
	registration deviceAnswer
	registeredAt time.Time
}

func (a *appActor) Receive(ctx actor.Context) {
	switch m := ctx.Message().(type) {
	case *initialize:
		a.begin(ctx, true)
	case *actor.Started:
		// A restart makes a fresh actor: its plan comes from the runtime.
		// On the first start initialize follows instead.
		if _, begun, ok := a.rt.planOf(ctx.Self()); ok && begun {
			a.begin(ctx, false)
		}
	case *actor.Restarting, *actor.Stopping:
		a.release()
	case *boundary:
		if a.plan != nil && m.gen == a.gen {
			a.scheduleStep(ctx)
		}
	case *delivery:
		if a.plan != nil && a.plan.Curve != nil {
			a.curveStep(ctx, m.obs)
		}
	case *reassert:
		if a.plan != nil && a.wrote {
			a.rt.logApp(a.plan.App.ID, store.LogInfo, "device", m.why+": its value is written again", nil)
			a.writeAgain(ctx)
		}
	case *missingOnDevice:
		a.missingOnDevice(ctx, m)
	}
}

// writeAgain writes the app's current value again, as if nothing had
// been written since its start: the device lost it.
func (a *appActor) writeAgain(ctx actor.Context) {
	a.wrote = false
	switch {
	case a.plan.Schedule != nil:
		a.scheduleStep(ctx)
	case a.plan.Curve != nil:
		a.curveStep(ctx, []pipeline.Observation{{Time: a.outdoorAt, Value: a.outdoor}})
	}
}

// register sends the app's definition to the device (app_start with its
// reset values and alive time-out) and notes the answer; an offline
// device holds this up to the operation time-out.
func (a *appActor) register() {
	p := a.plan
	a.registration = a.rt.sendDevice(a.ctx, p.App.ProjectID, p.App.ID, edge.Request{Operation: edge.OpAppStart, App: p.edgeApp()})
	a.registeredAt = time.Now()
}

// begin starts the app: on its first start it registers it on the
// device (app_start with the reset values and alive time-out) and moves
// it to Running; then it writes the current setpoint and waits for the
// next boundary or input.
func (a *appActor) begin(ctx actor.Context, first bool) {
	p, _, ok := a.rt.planOf(ctx.Self())
	if !ok {
		return // stopped meanwhile
	}
	a.plan, a.ctx = p, a.rt.appContext(ctx.Self())
	a.rt.markBegun(ctx.Self())
	id := p.App.ID
	if first {
		a.rt.changeStatus(p.App, store.AppChange{Code: store.StatusRunning, Message: "app actor running", From: []int{store.StatusStarting}})
		a.register() // the device keeps the reset values and the alive time-out
	} else {
		a.rt.logApp(id, store.LogWarning, "status_change", "app actor restarted after a failure", nil)
	}
	if first && p.Continues {
		a.continueFrom(a.rt.cfg.Clock.Now())
	}
	switch {
	case p.Schedule != nil:
		a.scheduleStep(ctx)
	case p.Curve != nil:
		self, root := ctx.Self(), a.rt.system.Root
		a.unsub = a.rt.cfg.Router.Subscribe(p.App.ProjectID, p.Input, subscriber{send: func(obs []pipeline.Observation) {
			root.Send(self, &delivery{obs: obs})
		}})
		pts, err := a.rt.cfg.History.Recent(a.ctx, p.App.ProjectID, p.Input, 1, time.Time{}, endOfTime)
		switch {
		case err != nil:
			a.rt.logApp(id, store.LogWarning, "input", "the newest outdoor temperature could not be read: "+err.Error(), nil)
		case len(pts) == 0:
			a.rt.logApp(id, store.LogInfo, "input", fmt.Sprintf("no outdoor temperature of %q yet: the app writes on the first", p.Input), nil)
		default:
			a.curveStep(ctx, []pipeline.Observation{{Time: pts[0].Time, Value: pts[0].Value}})
		}
	}
}

var endOfTime = time.Date(10000, 1, 1, 0, 0, 0, 0, time.UTC)

type subscriber struct{ send func([]pipeline.Observation) }

func (s subscriber) Deliver(obs []pipeline.Observation) { s.send(obs) }

func (a *appActor) release() {
	if a.stopTimer != nil {
		a.stopTimer()
		a.stopTimer = nil
	}
	if a.unsub != nil {
		a.unsub()
		a.unsub = nil
	}
}

// stillActive tells whether the app is still meant to run; an app
// deleted meanwhile (with its project) or moved on by another node stops
// its actor. A database error leaves it running.
func (a *appActor) stillActive(ctx actor.Context) bool {
	app, err := a.rt.cfg.Store.ControlsApp(a.ctx, a.plan.App.ProjectID, a.plan.App.ID)
	if (err == nil && store.AppActive(app.StatusCode)) || (err != nil && !fault.Is(err, fault.NotFound)) {
		return true
	}
	a.rt.forgetPID(ctx.Self())
	ctx.Stop(ctx.Self())
	return false
}

// scheduleStep writes the schedule's value now when it differs from the
// last written, and arms the one timer for the next boundary.
func (a *appActor) scheduleStep(ctx actor.Context) {
	now := a.rt.cfg.Clock.Now()
	if v := a.plan.Schedule.At(now); !a.wrote || !sameValue(v, a.last) {
		if !a.stillActive(ctx) || !a.write(ctx, v, "schedule at "+now.UTC().Format(time.RFC3339)) {
			return
		}
	}
	next, ok := a.plan.Schedule.Next(now)
	if !ok {
		return
	}
	a.gen++
	gen, self, root := a.gen, ctx.Self(), a.rt.system.Root
	if a.stopTimer != nil {
		a.stopTimer()
	}
	a.stopTimer = a.rt.cfg.Clock.AfterFunc(next.Sub(now), func() { root.Send(self, &boundary{gen: gen}) })
}

// writeSource is what an app's setpoint operations name as their source.
func writeSource(appID string) string { return "app:" + appID }

// continueFrom takes over, as written, the value the app's activation on
// another node wrote last, when the device took it (state written), it
// went to the same target and priority, and it is still the app's value:
// for a schedule, the value at now with no boundary since it was
// written; for a heating curve, the value the next outdoor temperature is
// compared with. The move then writes nothing: each boundary's value
// reaches the device once (issue 20 item 5). A write whose outcome the
// dead node never learnt (requested) is written again: the device may
// not have it. The device's own losses (crash, reset) come back as
// events and are written again (recovery.go).
func (a *appActor) continueFrom(now time.Time) {
	p := a.plan
	op, ok, err := a.rt.cfg.Store.LastSetpointWrite(a.ctx, p.App.ProjectID, writeSource(p.App.ID))
	if err != nil || !ok || op.State != edge.StateWritten || op.DataPointID != p.Target || op.Priority != p.Params.Priority {
		return
	}
	if p.Schedule != nil && !sameValue(op.Value, p.Schedule.At(now)) {
		return // a boundary passed since: its value is due
	}
	a.wrote, a.last, a.accepted = true, op.Value, true
	a.rt.logApp(p.App.ID, store.LogInfo, "write", fmt.Sprintf("continues on this node: the value written at %s before the move stays (not written again)",
		op.CreatedAt.UTC().Format(time.RFC3339)), writeDetail{DataPointID: op.DataPointID, Value: op.Value, Priority: op.Priority, State: op.State, Reference: op.Reference})
}

// curveStep writes the heating curve's setpoint for the newest outdoor
// temperature when it moved by curveStepK or more since the last write.
func (a *appActor) curveStep(ctx actor.Context, obs []pipeline.Observation) {
	var newest *pipeline.Observation
	for i := range obs {
		if o := &obs[i]; (newest == nil || o.Time.After(newest.Time)) && !o.Time.Before(a.outdoorAt) {
			newest = o
		}
	}
	if newest == nil {
		return
	}
	a.outdoorAt, a.outdoor = newest.Time, newest.Value
	v := math.Round(a.plan.Curve.At(newest.Value)*100) / 100
	if a.wrote && a.last != nil && math.Abs(v-*a.last) < curveStepK {
		return
	}
	if !a.stillActive(ctx) {
		return
	}
	a.write(ctx, &v, "heating curve at outdoor "+strconv.FormatFloat(newest.Value, 'g', -1, 64)+" °C")
}

// curveStepK is how far the heating curve's setpoint must move before it
// is written again: the device is not flooded by every sensor jitter.
const curveStepK = 0.1

func sameValue(a, b *float64) bool {
	return (a == nil && b == nil) || (a != nil && b != nil && *a == *b)
}

// writeDetail is what a write's log entry carries.
type writeDetail struct {
	DataPointID      string     `json:"dataPointID"`
	Value            *float64   `json:"value"`
	Priority         int        `json:"priority"`
	State            string     `json:"state,omitempty"`
	Reference        string     `json:"reference,omitempty"`
	PriorityArray    []*float64 `json:"priority_array,omitempty"`
	OverwrittenValue *float64   `json:"overwritten_value,omitempty"`
	Reason           string     `json:"reason,omitempty"`
}

// MaxRefusedWrites is how many writes in a row a safeguard may refuse
// before the app stops.
const MaxRefusedWrites = 3

// write sends one setpoint through the write path and logs what was
// written and what came back. A write refused by a safeguard (setpoint
// writing not enabled, bounds, priority, no edge device) is logged and the
// app goes on, since the next value may pass, unless no write was
// accepted since the app started or MaxRefusedWrites were refused in a
// row: then nothing it does reaches the building, and it stops with
// status Health check failed and the reason instead of showing Running.
// false when the app stopped.
func (a *appActor) write(ctx actor.Context, v *float64, why string) bool {
	p := a.plan
	w := edge.Write{ProjectID: p.App.ProjectID, DataPointID: p.Target, Value: v, Priority: p.Params.Priority,
		KeepOutOfService: p.Params.KeepOutOfService, Acked: true, Source: writeSource(p.App.ID)}
	op, err := a.rt.cfg.Writer.Write(a.ctx, w)
	d := writeDetail{DataPointID: p.Target, Value: v, Priority: p.Params.Priority, State: op.State, Reference: op.Reference,
		PriorityArray: op.PriorityArray, OverwrittenValue: op.OverwrittenValue, Reason: op.Reason}
	text := "null"
	if v != nil {
		text = strconv.FormatFloat(*v, 'g', -1, 64)
	}
	msg := fmt.Sprintf("wrote %s to %q at priority %d (%s)", text, p.Target, p.Params.Priority, why)
	level := store.LogInfo
	switch {
	case err != nil:
		level, d.Reason = store.LogError, fault.Message(err)
		msg = fmt.Sprintf("writing %s to %q at priority %d refused (%s): %s", text, p.Target, p.Params.Priority, why, d.Reason)
	case op.State == edge.StateFailed:
		level = store.LogError
		msg += ": failed: " + op.Reason
	case op.State != "":
		msg += ": " + op.State
	}
	if err != nil && a.ctx.Err() != nil {
		return false // stopping
	}
	a.rt.logApp(p.App.ID, level, "write", msg, d)
	result := "accepted"
	if err != nil {
		result = "refused"
	}
	a.rt.writes.WithLabelValues(result).Inc()
	if err == nil {
		a.wrote, a.last, a.accepted, a.refused = true, v, true, 0
		return true
	}
	a.rt.cfg.Log.Debug("controls app write refused", slog.String("app", p.App.ID), slog.Any("error", err))
	var refusal *edge.Refusal
	if !errors.As(err, &refusal) && !fault.Is(err, fault.Invalid) {
		return true // the database, say: not the app's setting
	}
	a.refused++
	if a.accepted && a.refused < MaxRefusedWrites {
		return true
	}
	why = "its first write since it started was refused"
	if a.accepted {
		why = fmt.Sprintf("%d writes in a row were refused", a.refused)
	}
	a.rt.forgetPID(ctx.Self())
	ctx.Stop(ctx.Self())
	a.rt.changeStatus(p.App, store.AppChange{Code: store.StatusHealthCheckFails, Level: store.LogError, From: []int{store.StatusStarting, store.StatusRunning},
		Message: fmt.Sprintf("app stopped: %s (%s); fix that, then run the app again", why, d.Reason)})
	return false
}

// edgeApp is the app as the device keeps it.
func (p *Plan) edgeApp() *edge.App {
	cfg, _ := p.App.Config.MarshalJSON()
	return &edge.App{ID: p.App.ID, Algorithm: p.App.Algorithm, AliveTimeout: p.Config.AliveTimeout, Config: cfg,
		Writes: []edge.AppWrite{{DataPointID: p.Target, Priority: p.Params.Priority, ResetValue: p.Params.ResetValue.V}}}
}
