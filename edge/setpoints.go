package edge

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/openbdp/bdp/codec"
	"github.com/openbdp/bdp/fault"
	"github.com/openbdp/bdp/store"
)

// Refusal is a write refused by a safeguard, with the envelope operation
// api.md 7 gives its answer ("post" when setpoint writing is not enabled,
// "create" for bounds and priorities).
type Refusal struct {
	Operation string
	Err       error // a fault kind with the text for the client
}

func (r *Refusal) Error() string { return r.Err.Error() }
func (r *Refusal) Unwrap() error { return r.Err }

func refuse(op string, err error) error { return &Refusal{Operation: op, Err: err} }

// Setpoints writes setpoints through the projects' edge connections: the
// Writer of POST /v2/datapoint/setpoint and of controls apps.
type Setpoints struct {
	m       *Manager
	store   *store.Store
	log     *slog.Logger
	ctx     context.Context // ends at Close: followers stop waiting
	cancel  context.CancelFunc
	running sync.WaitGroup
	remote  remoteOf // cluster mode: the nodes that run other projects' connections
}

var _ Writer = (*Setpoints)(nil)

// NewSetpoints makes the Writer over m's connections. Operations a
// previous run left unfinished are failed first: nobody waits for their
// answer any more.
func NewSetpoints(ctx context.Context, m *Manager) (*Setpoints, error) {
	n, err := m.cfg.Store.FailOpenSetpointOperations(ctx, m.cfg.Now().UTC(), "bdp restarted before the edge device answered")
	if err != nil {
		return nil, err
	}
	if n > 0 {
		m.log.Warn("setpoint operations failed by the restart", slog.Int64("operations", n))
	}
	fctx, cancel := context.WithCancel(context.Background())
	return &Setpoints{m: m, store: m.cfg.Store, log: m.log, ctx: fctx, cancel: cancel}, nil
}

// Close stops following operations (those unfinished stay so until the
// next start fails them) and waits for the followers.
func (s *Setpoints) Close() {
	s.cancel()
	s.running.Wait()
}

// Status is a project's edge connection.
func (s *Setpoints) Status(projectID int64) Status { return s.m.Status(projectID) }

// Write checks the safeguards of api.md 4.6 in its order and hands the
// write to the project's edge device. An acked write answers at once with
// its reference in state initialized; a follower moves it on (requested,
// written or failed). A dry run waits for the device's state, at most the
// operation time-out (30 s).
func (s *Setpoints) Write(ctx context.Context, w Write) (Operation, error) {
	return s.write(ctx, w, true)
}

// write is Write; carry lets a write whose project's connection runs on
// another node go there (SetRemote).
func (s *Setpoints) write(ctx context.Context, w Write, carry bool) (Operation, error) {
	if w.Priority < 1 || w.Priority > 16 {
		return Operation{}, fault.Invalidf("priority must be an integer from 1 (most urgent) to 16, got %d", w.Priority)
	}
	if w.Value != nil && (math.IsNaN(*w.Value) || math.IsInf(*w.Value, 0)) {
		return Operation{}, fault.Invalidf("value must be a finite number or null")
	}
	// 1. Setpoint writing is enabled for the project.
	settings, err := s.store.ProjectSettings(ctx, w.ProjectID)
	if err != nil && !fault.Is(err, fault.NotFound) {
		return Operation{}, err
	}
	if err != nil || !settings.SetpointWritingEnabled {
		// The message says how to enable it: a new user meets it first.
		return Operation{}, refuse("post", fault.Forbiddenf("project %d is unknown or setpoint writing is not enabled for it: the operator enables it with "+
			"`bdp admin project-settings --project %d --setpoint-writing on` or PUT /operator/projects/%d/settings {\"setpoint_writing_enabled\":true} "+
			"(README.md, Writing a first setpoint)", w.ProjectID, w.ProjectID, w.ProjectID))
	}
	// 2. The caller may write the datapoint (TagAuths).
	if w.Authorize != nil {
		if err := w.Authorize(ctx); err != nil {
			return Operation{}, err
		}
	}
	// 3. Bounds are configured and the value lies within them.
	lo, hi, err := s.store.SetpointBounds(ctx, w.ProjectID, w.DataPointID)
	if err != nil && !fault.Is(err, fault.NotFound) {
		return Operation{}, err
	}
	if err != nil || lo == nil || hi == nil {
		return Operation{}, refuse("create", fault.Invalidf(
			"datapoint %q has no setpoint bounds (setpoint_min_value, setpoint_max_value; PUT /v2/datapoint sets them): the setpoint is refused", w.DataPointID))
	}
	if w.Value != nil && (*w.Value < *lo || *w.Value > *hi) {
		return Operation{}, refuse("create", fault.Invalidf("value %s for datapoint %q lies outside its setpoint bounds [%s, %s]",
			formatValue(*w.Value), w.DataPointID, formatValue(*lo), formatValue(*hi)))
	}
	// 4. The priority is no more urgent than the project allows.
	if w.Priority < settings.SetpointMaxPriority {
		return Operation{}, refuse("create", fault.Invalidf(
			"priority %d is refused: project %d allows priorities %d (most urgent) to 16; more urgent ones are unlocked by the operator (setpoint_max_priority)",
			w.Priority, w.ProjectID, settings.SetpointMaxPriority))
	}
	// The project's connection runs here (in a cluster: another node's
	// answers 503, not "no edge device"), under this node's hold.
	token, err := s.m.holding(ctx, w.ProjectID)
	if remote := s.remote.get(); carry && remote != nil && errors.Is(err, ErrNotHeld) {
		w.Authorize = nil // asked above
		return remote.Write(ctx, w)
	}
	if err != nil {
		return Operation{}, err
	}
	if w.DryRun {
		return s.dryRun(ctx, w, token)
	}
	req := Request{Reference: newReference(), Operation: OpWrite, DataPointID: w.DataPointID, Value: w.Value,
		Priority: w.Priority, KeepOutOfService: w.KeepOutOfService}
	if err := req.Validate(); err != nil { // a dataPointID the protocol cannot carry
		return Operation{}, fault.Invalidf("the edge protocol cannot carry this write: %s", strings.TrimPrefix(err.Error(), codec.ErrEdgeMessage.Error()+": "))
	}
	now := s.m.cfg.Now().UTC()
	op := Operation{ProjectID: w.ProjectID, DataPointID: w.DataPointID, Value: w.Value, Priority: w.Priority,
		Acked: w.Acked, State: StateRequested, CreatedAt: now}
	deadline := now.Add(s.m.cfg.OperationTimeout)
	if !w.Acked {
		// No state (api.md 4.6 rule 5): the connection delivers it when it
		// can before the deadline, and nobody follows the answer.
		return op, s.m.request(w.ProjectID, req, deadline, nil)
	}
	op.Reference, op.State = req.Reference, StateInitialized
	err = s.store.CreateSetpointOperation(ctx, store.SetpointOperation{Reference: op.Reference, ProjectID: w.ProjectID,
		DataPointID: w.DataPointID, Value: w.Value, Priority: w.Priority, KeepOutOfService: w.KeepOutOfService, Acked: true,
		State: StateInitialized, Source: w.Source, CreatedAt: now, HoldToken: token},
		store.SetpointLogEntry{Time: now, Stage: StateInitialized, Msg: "accepted by the API",
			Details: map[string]any{"acked": true, "dryrun": false}})
	if err != nil {
		return Operation{}, s.m.fenced(err, OpWrite)
	}
	events := make(chan event, 2)
	s.running.Add(1)
	go func() { defer s.running.Done(); s.follow(op.Reference, deadline, events) }()
	if err := s.m.request(w.ProjectID, req, deadline, events); err != nil {
		events <- event{stage: StateFailed, reason: "the project's edge connection stopped"}
	}
	return op, nil
}

// follow records an acked operation's stages as the connection reports
// them, until the operation ends or its answer timer fires.
func (s *Setpoints) follow(reference string, deadline time.Time, events <-chan event) {
	timer := s.answerTimer(deadline)
	defer timer.Stop()
	for {
		ev, ok := s.nextEvent(s.ctx, events, timer)
		if !ok {
			return
		}
		if done := s.record(reference, ev, false); done {
			return
		}
	}
}

// answerTimer fires a little after an operation's deadline: it covers a
// connection that stopped or restarted before failing the operation itself.
func (s *Setpoints) answerTimer(deadline time.Time) *time.Timer {
	return time.NewTimer(time.Until(deadline) + 2*s.m.cfg.Tick)
}

// nextEvent waits for the connection's next report on an operation; when
// timer fires first, the operation failed for want of an answer. false
// when ctx ended.
func (s *Setpoints) nextEvent(ctx context.Context, events <-chan event, timer *time.Timer) (event, bool) {
	select {
	case ev := <-events:
		return ev, true
	case <-timer.C:
		return event{stage: StateFailed, reason: "no answer from the edge device within " + s.m.cfg.OperationTimeout.String()}, true
	case <-ctx.Done():
		return event{}, false
	}
}

// record stores one stage of a write or, with dryRun, of a dry run;
// true when the operation finished.
func (s *Setpoints) record(reference string, ev event, dryRun bool) bool {
	ctx, cancel := context.WithTimeout(s.ctx, 10*time.Second)
	defer cancel()
	now := s.m.cfg.Now().UTC()
	var (
		state, reason, msg string
		old                *float64
		details            map[string]any
	)
	switch {
	case ev.stage == StateRequested:
		state, msg = StateRequested, "request forwarded to the edge device"
	case ev.resp != nil && ev.resp.Status == StatusOK:
		state, msg, old = StateWritten, "the edge device reports the write", ev.resp.OverwrittenValue
		if dryRun {
			state, msg = StateReported, "dry run: the edge device reported the datapoint's state; nothing was written"
		}
		details = map[string]any{"priorityArray": ev.resp.PriorityArray, "overwritten_value": ev.resp.OverwrittenValue}
		if ev.resp.PresentValue != nil {
			details["present_value"] = *ev.resp.PresentValue
		}
	case ev.resp != nil:
		state, reason = StateFailed, "the edge device refused the write: "+ev.resp.Error
		if dryRun {
			reason = "the edge device refused the read of the dry run: " + ev.resp.Error
		}
		msg = reason
	default:
		state, reason, msg = StateFailed, ev.reason, ev.reason
	}
	_, err := s.store.AdvanceSetpointOperation(ctx, reference, state, reason, old,
		store.SetpointLogEntry{Time: now, Stage: state, Msg: msg, Details: details})
	if err != nil {
		s.log.Error("setpoint operation stage not recorded", slog.String("reference", reference), slog.String("state", state), slog.Any("error", err))
	}
	if state == StateRequested {
		return false
	}
	s.m.metrics.operations.WithLabelValues(state).Inc()
	return true
}

// dryRun asks the device for the datapoint's state and writes nothing
// (api.md 4.6 rule 6). An acked dry run keeps its stages like a write
// but ends in reported, never written: nothing was written.
func (s *Setpoints) dryRun(ctx context.Context, w Write, token int64) (Operation, error) {
	if !s.m.Status(w.ProjectID).Online {
		return Operation{}, fault.Wrap(fault.Unavailable, nil, fmt.Sprintf("the edge device of project %d is offline: a dry run needs its answer", w.ProjectID))
	}
	req := Request{Reference: newReference(), Operation: OpRead, DataPointID: w.DataPointID}
	now := s.m.cfg.Now().UTC()
	op := Operation{ProjectID: w.ProjectID, DataPointID: w.DataPointID, Value: w.Value, Priority: w.Priority,
		Acked: w.Acked, DryRun: true, State: StateInitialized, CreatedAt: now}
	if w.Acked {
		op.Reference = req.Reference
		err := s.store.CreateSetpointOperation(ctx, store.SetpointOperation{Reference: op.Reference, ProjectID: w.ProjectID,
			DataPointID: w.DataPointID, Value: w.Value, Priority: w.Priority, KeepOutOfService: w.KeepOutOfService, Acked: true,
			DryRun: true, State: StateInitialized, Source: w.Source, CreatedAt: now, HoldToken: token},
			store.SetpointLogEntry{Time: now, Stage: StateInitialized, Msg: "accepted by the API (dry run)",
				Details: map[string]any{"acked": true, "dryrun": true}})
		if err != nil {
			return Operation{}, s.m.fenced(err, OpRead)
		}
	}
	deadline := now.Add(s.m.cfg.OperationTimeout)
	events := make(chan event, 2)
	if err := s.m.request(w.ProjectID, req, deadline, events); err != nil {
		return Operation{}, err
	}
	timer := s.answerTimer(deadline)
	defer timer.Stop()
	for {
		ev, ok := s.nextEvent(ctx, events, timer)
		if !ok {
			return Operation{}, ctx.Err()
		}
		if ev.resp != nil && ev.resp.Status == StatusOK {
			// The slot's value is what the write would overwrite.
			ev.resp.OverwrittenValue = slot(ev.resp.PriorityArray, w.Priority)
		}
		if w.Acked {
			s.record(op.Reference, ev, true)
		}
		switch {
		case ev.stage == StateRequested:
			continue
		case ev.resp != nil && ev.resp.Status == StatusOK:
			op.State, op.PriorityArray, op.OverwrittenValue = StateReported, ev.resp.PriorityArray, ev.resp.OverwrittenValue
			return op, nil
		case ev.resp != nil:
			return Operation{}, fault.Wrap(fault.Unavailable, nil, "the edge device refused the read: "+ev.resp.Error)
		case ev.err != nil:
			return Operation{}, ev.err
		default:
			return Operation{}, fault.Wrap(fault.Unavailable, nil, ev.reason)
		}
	}
}

func slot(pa []*float64, priority int) *float64 {
	if priority < 1 || priority > len(pa) {
		return nil
	}
	return pa[priority-1]
}

func formatValue(v float64) string { return strconv.FormatFloat(v, 'g', -1, 64) }
