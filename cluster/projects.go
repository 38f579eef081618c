package cluster

import (
	"context"
	"fmt"
	"math"
	"sync/atomic"
	"time"

	"google.golang.org/protobuf/proto"

	"github.com/openbdp/bdp/cluster/clusterpb"
	"github.com/openbdp/bdp/controls"
	"github.com/openbdp/bdp/edge"
	"github.com/openbdp/bdp/fault"
	"github.com/openbdp/bdp/store"
)

// A project's edge connection and controls apps run on the member that
// owns project/<id>. A setpoint write, an edge status and an app's start
// or stop asked of another node are carried there, so that every node
// answers alike.

// ProjectParts are what carries out a project's commands on this node.
type ProjectParts struct {
	Setpoints *edge.Setpoints
	Controls  *controls.Runtime
	Store     *store.Store
	Catalog   controls.Catalog
}

// SetProjectParts makes this member carry out the project commands of
// the others, and carry its own to them (edge.Setpoints.SetRemote).
func (r *Runner) SetProjectParts(p ProjectParts) {
	r.projects.Store(&p)
	if p.Setpoints != nil {
		p.Setpoints.SetRemote(r)
	}
}

// projectParts is what SetProjectParts set; nil before.
type projectParts struct{ atomic.Pointer[ProjectParts] }

var _ edge.Remote = (*Runner)(nil)

// Write carries a checked setpoint write to the member that runs the
// project's connection (edge.Remote).
func (r *Runner) Write(ctx context.Context, w edge.Write) (edge.Operation, error) {
	addr, _ := r.member.Owner(ProjectIdentity(w.ProjectID))
	msg := &clusterpb.SetpointWrite{ProjectId: w.ProjectID, DatapointId: w.DataPointID, HasValue: w.Value != nil,
		Priority: int32(w.Priority), KeepOutOfService: w.KeepOutOfService, Acked: w.Acked, DryRun: w.DryRun, Source: w.Source}
	if w.Value != nil {
		msg.Value = *w.Value
	}
	res, err := r.askAny(ctx, addr, msg)
	if err != nil {
		return edge.Operation{}, err
	}
	reply, ok := res.(*clusterpb.SetpointReply)
	if !ok {
		return edge.Operation{}, fmt.Errorf("cluster: member %s answered %T", addr, res)
	}
	if err := errorOf(reply.GetError()); err != nil {
		return edge.Operation{}, err
	}
	op := edge.Operation{Reference: reply.GetReference(), ProjectID: w.ProjectID, DataPointID: w.DataPointID, Value: w.Value,
		Priority: w.Priority, Acked: w.Acked, DryRun: w.DryRun, State: reply.GetState(), Reason: reply.GetReason(),
		CreatedAt: time.Unix(0, reply.GetCreatedAtUnixNano()).UTC()}
	if pa := reply.GetPriorityArray(); len(pa) > 0 {
		op.PriorityArray = make([]*float64, len(pa))
		for i, v := range pa {
			if i < len(reply.GetPriorityArraySet()) && reply.GetPriorityArraySet()[i] {
				op.PriorityArray[i] = &v
			}
		}
	}
	if reply.GetHasOverwritten() {
		v := reply.GetOverwrittenValue()
		op.OverwrittenValue = &v
	}
	return op, nil
}

// Status asks the member that runs the project's connection for its
// state (edge.Remote).
func (r *Runner) Status(ctx context.Context, projectID int64) (edge.Status, error) {
	addr, _ := r.member.Owner(ProjectIdentity(projectID))
	res, err := r.askAny(ctx, addr, &clusterpb.EdgeStatusRequest{ProjectId: projectID})
	if err != nil {
		return edge.Status{}, err
	}
	st, ok := res.(*clusterpb.EdgeStatus)
	if !ok {
		return edge.Status{}, fmt.Errorf("cluster: member %s answered %T", addr, res)
	}
	if err := errorOf(st.GetError()); err != nil {
		return edge.Status{}, err
	}
	out := edge.Status{Configured: st.GetConfigured(), Online: st.GetOnline(), PendingOperations: int(st.GetPendingOperations())}
	if ns := st.GetLastAliveUnixNano(); ns != 0 {
		t := time.Unix(0, ns).UTC()
		out.LastAlive = &t
	}
	return out, nil
}

// StartApp starts a controls app on the member that runs its project
// (controls.Runtime.StartApp there, with the plan made there).
func (r *Runner) StartApp(ctx context.Context, a store.ControlsApp, p controls.Plan, by string) (store.ControlsApp, bool, error) {
	if parts := r.projects.Load(); parts != nil && r.OwnsProject(a.ProjectID) {
		return parts.Controls.StartApp(ctx, a, p, by)
	}
	return r.appCommand(ctx, a, true, by)
}

// StopApp stops a controls app on the member that runs its project
// (controls.StopApp there: its actor stops and the device hears app_stop).
func (r *Runner) StopApp(ctx context.Context, a store.ControlsApp, by string) (store.ControlsApp, bool, error) {
	if parts := r.projects.Load(); parts != nil && r.OwnsProject(a.ProjectID) {
		return controls.StopApp(ctx, parts.Store, parts.Controls, a, by)
	}
	return r.appCommand(ctx, a, false, by)
}

func (r *Runner) appCommand(ctx context.Context, a store.ControlsApp, run bool, by string) (store.ControlsApp, bool, error) {
	addr, _ := r.member.Owner(ProjectIdentity(a.ProjectID))
	res, err := r.askAny(ctx, addr, &clusterpb.AppCommand{ProjectId: a.ProjectID, AppId: a.ID, Run: run, By: by})
	if err != nil {
		return a, false, err
	}
	reply, ok := res.(*clusterpb.AppReply)
	if !ok {
		return a, false, fmt.Errorf("cluster: member %s answered %T", addr, res)
	}
	if err := errorOf(reply.GetError()); err != nil {
		return a, false, err
	}
	a.StatusCode = int(reply.GetStatusCode())
	return a, reply.GetAffected(), nil
}

// errNoProjectParts answers a project command that reaches a node still
// starting (SetProjectParts not yet called).
var errNoProjectParts = &fault.Error{Kind: fault.Unavailable, Msg: "the node that runs this project is still starting; try again"}

// carryOutProject does a project command another member sent here.
func (r *Runner) carryOutProject(ctx context.Context, msg proto.Message) (proto.Message, bool) {
	parts := r.projects.Load()
	unavailable := func() *clusterpb.Reply {
		return replyOf(time.Time{}, errNoProjectParts)
	}
	switch m := msg.(type) {
	case *clusterpb.SetpointWrite:
		if parts == nil || parts.Setpoints == nil {
			return &clusterpb.SetpointReply{Error: unavailable()}, true
		}
		w := edge.Write{ProjectID: m.GetProjectId(), DataPointID: m.GetDatapointId(), Priority: int(m.GetPriority()),
			KeepOutOfService: m.GetKeepOutOfService(), Acked: m.GetAcked(), DryRun: m.GetDryRun(), Source: m.GetSource()}
		if m.GetHasValue() {
			v := m.GetValue()
			w.Value = &v
		}
		op, err := parts.Setpoints.WriteHere(ctx, w)
		if err != nil {
			return &clusterpb.SetpointReply{Error: replyOf(time.Time{}, err)}, true
		}
		out := &clusterpb.SetpointReply{Reference: op.Reference, State: op.State, Reason: op.Reason, CreatedAtUnixNano: op.CreatedAt.UnixNano()}
		for _, v := range op.PriorityArray {
			out.PriorityArraySet = append(out.PriorityArraySet, v != nil)
			if v != nil {
				out.PriorityArray = append(out.PriorityArray, *v)
			} else {
				out.PriorityArray = append(out.PriorityArray, math.NaN())
			}
		}
		if op.OverwrittenValue != nil {
			out.HasOverwritten, out.OverwrittenValue = true, *op.OverwrittenValue
		}
		return out, true
	case *clusterpb.EdgeStatusRequest:
		if parts == nil || parts.Setpoints == nil {
			return &clusterpb.EdgeStatus{Error: unavailable()}, true
		}
		st, err := parts.Setpoints.StatusAnywhere(ctx, m.GetProjectId())
		if err != nil {
			return &clusterpb.EdgeStatus{Error: replyOf(time.Time{}, err)}, true
		}
		out := &clusterpb.EdgeStatus{Configured: st.Configured, Online: st.Online, PendingOperations: int32(st.PendingOperations)}
		if st.LastAlive != nil {
			out.LastAliveUnixNano = st.LastAlive.UnixNano()
		}
		return out, true
	case *clusterpb.AppCommand:
		if parts == nil || parts.Controls == nil {
			return &clusterpb.AppReply{Error: unavailable()}, true
		}
		a, affected, err := r.appHere(ctx, parts, m)
		if err != nil {
			return &clusterpb.AppReply{Error: replyOf(time.Time{}, err)}, true
		}
		return &clusterpb.AppReply{StatusCode: int32(a.StatusCode), Affected: affected}, true
	}
	return nil, false
}

// appHere starts or stops an app here, as HTTP on this node would: the
// start with a plan made here.
func (r *Runner) appHere(ctx context.Context, parts *ProjectParts, m *clusterpb.AppCommand) (store.ControlsApp, bool, error) {
	a, err := parts.Store.ControlsApp(ctx, m.GetProjectId(), m.GetAppId())
	if err != nil {
		return a, false, err
	}
	if !m.GetRun() {
		return controls.StopApp(ctx, parts.Store, parts.Controls, a, m.GetBy())
	}
	if !r.OwnsProject(a.ProjectID) {
		return a, false, errMoving
	}
	p, err := controls.Prepare(ctx, parts.Store, parts.Catalog, a, true)
	if err != nil {
		return a, false, err
	}
	return parts.Controls.StartApp(ctx, a, p, m.GetBy())
}
