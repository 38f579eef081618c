package cluster

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/asynkron/protoactor-go/actor"
	"github.com/prometheus/client_golang/prometheus"
	"google.golang.org/protobuf/proto"

	"github.com/openbdp/bdp/actors"
	"github.com/openbdp/bdp/cluster/clusterpb"
	"github.com/openbdp/bdp/fault"
	"github.com/openbdp/bdp/store"
)

// commandsName is the name of the actor on every member that carries out
// the commands of the others (Serve).
const commandsName = "bdp-commands"

// VDPIdentity is a virtual datapoint's identity in the cluster: the
// member it hashes to runs it.
func VDPIdentity(k actors.Key) string {
	return fmt.Sprintf("vdp/%d/%s", k.ProjectID, k.DataPointID)
}

// rowIdentity is the identity of a virtual datapoint's row.
func rowIdentity(v store.VDP) string {
	return VDPIdentity(actors.Key{ProjectID: v.ProjectID, DataPointID: v.DataPointID})
}

// ProjectIdentity is a project's identity in the cluster: the member it
// hashes to runs the project's edge connection and controls apps (an
// app writes through its project's connection).
func ProjectIdentity(projectID int64) string { return fmt.Sprintf("project/%d", projectID) }

// IngestIdentity is what the member that ingests MQTT through the
// external broker's cluster session owns (mqtt.External.SetIngesting):
// one member at a time, so one gateway's publishes are stored in order.
const IngestIdentity = "mqtt/ingest"

// Owns tells whether this member owns an identity.
func (r *Runner) Owns(identity string) bool {
	_, self := r.member.Owner(identity)
	return self
}

// OwnsProject tells whether this member runs a project's edge connection
// and apps.
func (r *Runner) OwnsProject(projectID int64) bool {
	_, self := r.member.Owner(ProjectIdentity(projectID))
	return self
}

// Runner runs virtual datapoints on the members that own them: a command
// for a datapoint this member owns goes to its own engine, any other to
// the owner's (Serve). It is what HTTP uses in cluster mode
// (bdphttp.Runner), so a start, stop or budget check answers the same on
// every node.
type Runner struct {
	member *Member
	engine *actors.Engine
	log    *slog.Logger

	wg       sync.WaitGroup // commands of other members in progress
	holdings atomic.Value   // holdingsFunc: what else this node runs (SetHoldings)
	projects projectParts   // what carries out project commands here (SetProjectParts)
}

// Serve starts this member's side of the commands: the actor the other
// members' Runners send to. The returned func stops it and waits for the
// commands in progress.
func Serve(m *Member, engine *actors.Engine, log *slog.Logger, reg prometheus.Registerer) (*Runner, func(), error) {
	if err := m.registerMetrics(reg); err != nil {
		return nil, nil, fmt.Errorf("cluster: register metrics: %w", err)
	}
	r := &Runner{member: m, engine: engine, log: log}
	pid, err := m.system.Root.SpawnNamed(actor.PropsFromFunc(r.receive), commandsName)
	if err != nil {
		return nil, nil, fmt.Errorf("cluster: start the commands actor: %w", err)
	}
	return r, func() {
		_ = m.system.Root.StopFuture(pid).Wait()
		r.wg.Wait()
	}, nil
}

// receive carries out a command on its own goroutine (a start reads
// history first, and commands must not queue behind it) and answers the
// sender from there.
func (r *Runner) receive(c actor.Context) {
	msg, ok := c.Message().(proto.Message)
	if !ok || c.Sender() == nil {
		return // the actor's own lifecycle messages
	}
	sender := c.Sender()
	if _, ok := msg.(*clusterpb.StatusRequest); ok {
		c.Respond(r.local())
		return
	}
	r.wg.Add(1)
	go func() {
		defer r.wg.Done()
		ctx, cancel := context.WithTimeout(context.Background(), r.member.cfg.CommandTimeout)
		defer cancel()
		r.member.system.Root.Send(sender, r.carryOut(ctx, msg))
	}()
}

// carryOut does what another member asked of this one: a virtual
// datapoint's command here, a project's in carryOutProject.
func (r *Runner) carryOut(ctx context.Context, msg proto.Message) proto.Message {
	switch m := msg.(type) {
	case *clusterpb.StartVDP:
		v := rowOf(m.GetVdp())
		if err := r.refuseUnowned(v); err != nil {
			return replyOf(time.Time{}, err)
		}
		return replyOf(r.engine.StartVDP(ctx, v))
	case *clusterpb.CheckRunBudget:
		v := rowOf(m.GetVdp())
		if err := r.refuseUnowned(v); err != nil {
			return replyOf(time.Time{}, err)
		}
		return replyOf(time.Time{}, r.engine.CheckRunBudget(ctx, v))
	case *clusterpb.StopVDP:
		// Stopped whoever owns it now: an actor runs nowhere else.
		return replyOf(time.Time{}, r.engine.Stop(ctx, actors.Key{ProjectID: m.GetProjectId(), DataPointID: m.GetDatapointId()}))
	case *clusterpb.StopProject:
		return replyOf(time.Time{}, r.engine.StopProject(ctx, m.GetProjectId()))
	}
	if reply, ok := r.carryOutProject(ctx, msg); ok {
		return reply
	}
	return replyOf(time.Time{}, fmt.Errorf("cluster: unknown command %T", msg))
}

// refuseUnowned refuses a start on a member that no longer owns the
// datapoint (the topology moved while the command travelled): the caller
// tries again, and the command reaches the new owner.
func (r *Runner) refuseUnowned(v store.VDP) error {
	if _, self := r.member.Owner(rowIdentity(v)); !self {
		return errMoving
	}
	return nil
}

// errMoving answers a command that reached a member that no longer owns
// its subject: the topology moved while it travelled.
var errMoving = &fault.Error{Kind: fault.Unavailable, Msg: "the cluster is moving this to another node; try again"}

// StartVDP starts a virtual datapoint on its owner.
func (r *Runner) StartVDP(ctx context.Context, v store.VDP) (time.Time, error) {
	addr, self := r.member.Owner(rowIdentity(v))
	if self {
		return r.engine.StartVDP(ctx, v)
	}
	return r.ask(ctx, addr, &clusterpb.StartVDP{Vdp: wireOf(v)})
}

// CheckRunBudget asks the owner whether the datapoint fits its budget.
func (r *Runner) CheckRunBudget(ctx context.Context, v store.VDP) error {
	addr, self := r.member.Owner(rowIdentity(v))
	if self {
		return r.engine.CheckRunBudget(ctx, v)
	}
	_, err := r.ask(ctx, addr, &clusterpb.CheckRunBudget{Vdp: wireOf(v)})
	return err
}

// Stop stops a virtual datapoint's actor on its owner, and on this member
// too should it still run here (moved away, not yet reconciled).
func (r *Runner) Stop(ctx context.Context, k actors.Key) error {
	local := r.engine.Stop(ctx, k)
	addr, self := r.member.Owner(VDPIdentity(k))
	if self {
		return local
	}
	_, err := r.ask(ctx, addr, &clusterpb.StopVDP{ProjectId: k.ProjectID, DatapointId: k.DataPointID})
	return errors.Join(local, err)
}

// StopProject stops a project's virtual datapoints on every member.
func (r *Runner) StopProject(ctx context.Context, projectID int64) error {
	errs := []error{r.engine.StopProject(ctx, projectID)}
	for _, addr := range r.member.Members() {
		if addr != r.member.Address() {
			_, err := r.ask(ctx, addr, &clusterpb.StopProject{ProjectId: projectID})
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// ask sends a command answered by Reply to the member at addr and waits
// for the reply (askAny).
func (r *Runner) ask(ctx context.Context, addr string, msg proto.Message) (time.Time, error) {
	res, err := r.askAny(ctx, addr, msg)
	if err != nil {
		return time.Time{}, err
	}
	reply, ok := res.(*clusterpb.Reply)
	if !ok {
		return time.Time{}, fmt.Errorf("cluster: member %s answered %T", addr, res)
	}
	if err := errorOf(reply); err != nil {
		return time.Time{}, err
	}
	if ns := reply.GetCatchUpFromUnixNano(); ns != 0 {
		return time.Unix(0, ns).UTC(), nil
	}
	return time.Time{}, nil
}

// askAny sends a command to the member at addr and waits for its answer,
// within the context's deadline and the configured command timeout.
func (r *Runner) askAny(ctx context.Context, addr string, msg proto.Message) (any, error) {
	if addr == "" && r.member.CutOff() {
		return nil, &fault.Error{Kind: fault.Unavailable, Msg: "this node has lost etcd and runs nothing until it reaches it again; try another node"}
	}
	if addr == "" {
		return nil, &fault.Error{Kind: fault.Unavailable, Msg: "no member of the cluster is known yet; try again"}
	}
	timeout := r.member.cfg.CommandTimeout
	if d, ok := ctx.Deadline(); ok {
		timeout = min(timeout, time.Until(d))
	}
	res, err := r.member.system.Root.RequestFuture(actor.NewPID(addr, commandsName), msg, timeout).Result()
	if err != nil {
		return nil, fault.Wrap(fault.Unavailable, err, "the node that runs this did not answer; try again")
	}
	return res, nil
}

// errorOf is the error a reply carries; nil when it carries none.
func errorOf(reply *clusterpb.Reply) error {
	if !reply.GetFailed() {
		return nil
	}
	kind := fault.Kind(reply.GetFaultKind())
	if !validKind(kind) {
		kind = fault.Internal
	}
	return &fault.Error{Kind: kind, Msg: reply.GetMessage()}
}

func validKind(k fault.Kind) bool {
	for _, known := range fault.Kinds() {
		if k == known {
			return true
		}
	}
	return false
}

func replyOf(cursor time.Time, err error) *clusterpb.Reply {
	if err != nil {
		msg := fault.Message(err)
		if fault.KindOf(err) == fault.Internal {
			msg = err.Error() // logged by the requesting node, as a local failure would be
		}
		return &clusterpb.Reply{Failed: true, FaultKind: int32(fault.KindOf(err)), Message: msg}
	}
	var ns int64
	if !cursor.IsZero() {
		ns = cursor.UnixNano()
	}
	return &clusterpb.Reply{CatchUpFromUnixNano: ns}
}

func wireOf(v store.VDP) *clusterpb.VDP {
	return &clusterpb.VDP{ProjectId: v.ProjectID, DatapointId: v.DataPointID, Type: v.Type, Config: v.Config}
}

func rowOf(w *clusterpb.VDP) store.VDP {
	return store.VDP{ProjectID: w.GetProjectId(), DataPointID: w.GetDatapointId(), Type: w.GetType(), Config: w.GetConfig()}
}
