package edge_test

import (
	"context"
	"errors"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/openbdp/bdp/edge"
	"github.com/openbdp/bdp/edge/edgetest"
	"github.com/openbdp/bdp/fault"
	"github.com/openbdp/bdp/store"
)

// node is one cluster member's edge connections and setpoint writer, on
// the env's store and broker; owns is its Config.Owns.
type node struct {
	name string
	m    *edge.Manager
	sp   *edge.Setpoints
	reg  *prometheus.Registry
}

func (e *env) node(name string, owns func(int64) bool) *node {
	e.t.Helper()
	n := &node{name: name, reg: prometheus.NewRegistry()}
	var err error
	n.m, err = edge.NewManager(edge.Config{Broker: e.broker, Presence: e.broker.Presence(), Store: e.st, Sink: e.sink, Log: e.log,
		Registry: n.reg, Tick: 50 * time.Millisecond, OfflineAfter: testOffline, OperationTimeout: testOperation,
		Owns: owns, Holder: name})
	if err != nil {
		e.t.Fatal(err)
	}
	if n.sp, err = edge.NewSetpoints(context.Background(), n.m); err != nil {
		e.t.Fatal(err)
	}
	e.t.Cleanup(func() { n.sp.Close(); n.m.Close() })
	return n
}

func (n *node) sync(t *testing.T) {
	t.Helper()
	if err := n.m.Sync(context.Background()); err != nil {
		t.Fatalf("%s: sync: %v", n.name, err)
	}
}

// fenced is how many writes the fence refused on the node.
func (n *node) fenced(t *testing.T) float64 {
	t.Helper()
	mfs, err := n.reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range mfs {
		if mf.GetName() == "bdp_edge_fenced_total" {
			return mf.GetMetric()[0].GetCounter().GetValue()
		}
	}
	return 0
}

// writes counts the writes of value v the device received.
func writes(d *edgetest.Device, v float64) int {
	n := 0
	for _, r := range d.Requests() {
		if r.Operation == edge.OpWrite && r.Value != nil && *r.Value == v {
			n++
		}
	}
	return n
}

// Two nodes with complementary ownership run each project's connection
// once between them, and the holder in the store is its node; a write
// through the other node answers 503 at once, saying the connection runs
// elsewhere, rather than "no edge device". Moving ownership and syncing
// both nodes, in either order, moves every connection: none runs twice,
// none is dropped, and writes go through the new owner.
func TestEachProjectConnectionRunsOnOneNode(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	var flipped atomic.Bool
	projects := make([]int64, 4)
	devices := map[int64]*edgetest.Device{}
	even := map[int64]bool{}
	for i := range projects {
		p := e.project(fmt.Sprintf("p%d", i), 8)
		projects[i], even[p] = p, i%2 == 0
		e.credentials(p)
		devices[p] = edgetest.Start(t, e.broker.Addr, p, "device-secret", testAlive)
	}
	a := e.node("node-a", func(p int64) bool { return even[p] != flipped.Load() })
	b := e.node("node-b", func(p int64) bool { return even[p] == flipped.Load() })
	owner := func(p int64) (*node, *node) {
		if even[p] != flipped.Load() {
			return a, b
		}
		return b, a
	}
	value := 15.0
	for _, step := range []struct {
		name string
		flip bool
		// order of the Syncs: a project's new owner first overlaps with
		// its old one, the old one first leaves a gap; each move does both
		order []*node
	}{
		{"start", false, []*node{a, b}},
		{"move, b syncs first", true, []*node{b, a}},
		{"move back, a syncs first", true, []*node{a, b}},
	} {
		t.Run(step.name, func(t *testing.T) {
			if step.flip {
				flipped.Store(!flipped.Load())
			}
			for _, n := range step.order {
				n.sync(t)
			}
			for _, p := range projects {
				own, other := owner(p)
				if !own.m.Status(p).Configured || other.m.Status(p).Configured {
					t.Fatalf("project %d: runs on %s %v, on %s %v; want only %s", p, own.name, own.m.Status(p).Configured,
						other.name, other.m.Status(p).Configured, own.name)
				}
				if holder, _, err := e.st.EdgeHolder(ctx, p); err != nil || holder != own.name {
					t.Fatalf("project %d: holder %q (%v), want %s", p, holder, err, own.name)
				}
				e.waitFor("the device online at its owner", func() bool { return own.m.Status(p).Online })
				value += 0.5 // within the bounds [15, 25]
				op, err := own.sp.Write(ctx, edge.Write{ProjectID: p, DataPointID: "sp", Value: f(value), Priority: 13, Acked: true})
				if err != nil {
					t.Fatalf("project %d: write through its owner %s: %v", p, own.name, err)
				}
				if got, _ := e.operation(op.Reference); got.State != edge.StateWritten {
					t.Fatalf("project %d: write through its owner: %q (%s)", p, got.State, got.Reason)
				}
				start := time.Now()
				_, err = other.sp.Write(ctx, edge.Write{ProjectID: p, DataPointID: "sp", Value: f(value), Priority: 13, Acked: true})
				if !errors.Is(err, edge.ErrNotHeld) || !fault.Is(err, fault.Unavailable) || time.Since(start) > time.Second {
					t.Fatalf("project %d: write through %s, which does not run it: %v after %s; want 503 ErrNotHeld at once",
						p, other.name, err, time.Since(start))
				}
				if n := writes(devices[p], value); n != 1 {
					t.Fatalf("project %d: the device got %d writes of %g, want 1", p, n, value)
				}
			}
		})
	}
}

// Two nodes that both believe they own a project (a change of
// membership): the one whose hold was superseded by the other's start
// has every write refused at the point of writing, counted, and the
// device receives nothing from it, while the current holder's goes
// through: each value reaches the device once. A Sync of the superseded
// node, which still owns the project, takes the hold back, and the fence
// turns.
func TestFenceRefusesTheSupersededHolder(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	p := e.project("acme", 8)
	e.credentials(p)
	d := edgetest.Start(t, e.broker.Addr, p, "device-secret", testAlive)
	all := func(int64) bool { return true }
	a, b := e.node("node-a", all), e.node("node-b", all)
	a.sync(t)
	b.sync(t) // supersedes a's hold
	e.waitFor("the device online at both", func() bool { return a.m.Status(p).Online && b.m.Status(p).Online })

	value := 15.0
	for _, round := range []struct {
		name           string
		stale, current *node
		before         func(t *testing.T)
	}{
		{"a superseded by b", a, b, func(*testing.T) {}},
		{"a takes the hold back", b, a, func(t *testing.T) { a.sync(t) }},
	} {
		t.Run(round.name, func(t *testing.T) {
			round.before(t)
			for _, c := range []struct {
				name string
				// do writes v through n: an acked write, an unacked one (its
				// refusal comes only at the publication), an app's request
				do func(n *node, v float64) error
			}{
				{"acked write", func(n *node, v float64) error {
					_, err := n.sp.Write(ctx, edge.Write{ProjectID: p, DataPointID: "sp", Value: f(v), Priority: 13, Acked: true})
					return err
				}},
				{"unacked write", func(n *node, v float64) error {
					_, err := n.sp.Write(ctx, edge.Write{ProjectID: p, DataPointID: "sp", Value: f(v), Priority: 13})
					return err
				}},
				{"app request", func(n *node, v float64) error {
					_, err := n.sp.Request(ctx, p, edge.Request{Operation: edge.OpAppStop, App: &edge.App{ID: fmt.Sprint(v)}})
					return err
				}},
			} {
				value++
				fencedBefore := round.stale.fenced(t)
				err := c.do(round.stale, value)
				if c.name == "unacked write" {
					if err != nil {
						t.Fatalf("%s through the stale node: %v, want accepted (no state is kept)", c.name, err)
					}
				} else if !errors.Is(err, edge.ErrSuperseded) || !fault.Is(err, fault.Unavailable) {
					t.Fatalf("%s through the stale node: %v, want 503 ErrSuperseded", c.name, err)
				}
				e.waitFor(c.name+": the refusal counted", func() bool { return round.stale.fenced(t) == fencedBefore+1 })
				if err := c.do(round.current, value); err != nil {
					t.Fatalf("%s through the holder: %v", c.name, err)
				}
				e.waitFor(c.name+": at the device", func() bool { return len(sent(d, value)) > 0 })
			}
			// Only now: whatever the stale node let through would have
			// arrived before the holder's.
			for v := value - 2; v <= value; v++ {
				if got := sent(d, v); len(got) != 1 {
					t.Fatalf("the device got %v for value %g, want one request, the holder's", got, v)
				}
			}
		})
	}
	if n := e.count(`SELECT count(*) FROM setpoint_operations WHERE project_id = $1`, p); n != 2 {
		t.Fatalf("%d setpoint operations recorded, want 2: the refused ones are not", n)
	}
}

// sent are the operations the device received that carry v: a write's
// value, or an app_stop's app id.
func sent(d *edgetest.Device, v float64) []string {
	var out []string
	for _, r := range d.Requests() {
		if (r.Value != nil && *r.Value == v) || (r.App != nil && r.App.ID == fmt.Sprint(v)) {
			out = append(out, r.Operation)
		}
	}
	return out
}

// A node that starts fails the open operations whose connection is gone
// (a restart), not those another node of the cluster follows: they end
// as the device answers.
func TestNodeStartKeepsOtherNodesOperations(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	p := e.project("acme", 8)
	e.credentials(p)
	d := edgetest.Start(t, e.broker.Addr, p, "device-secret", testAlive)
	a := e.node("node-a", func(int64) bool { return true })
	a.sync(t)
	e.waitFor("the device online", func() bool { return a.m.Status(p).Online })
	d.SetMode(edgetest.Silent)
	op, err := a.sp.Write(ctx, edge.Write{ProjectID: p, DataPointID: "sp", Value: f(20), Priority: 13, Acked: true})
	if err != nil {
		t.Fatal(err)
	}
	e.waitFor("the write requested", func() bool {
		got, _, err := e.st.SetpointOperation(ctx, op.Reference)
		return err == nil && got.State == edge.StateRequested
	})
	// An operation of a connection gone (no hold), as a crash leaves it.
	now := time.Now().UTC()
	orphan := "0b8f6a0e-9a57-4b44-8a0c-2f6a35c7b002"
	if err := e.st.CreateSetpointOperation(ctx, store.SetpointOperation{Reference: orphan, ProjectID: p, DataPointID: "sp", Value: f(21),
		Priority: 13, Acked: true, State: edge.StateInitialized, Source: "user:1", CreatedAt: now},
		store.SetpointLogEntry{Time: now, Stage: edge.StateInitialized}); err != nil {
		t.Fatal(err)
	}
	e.node("node-b", func(int64) bool { return false }) // starts: NewSetpoints
	if got, _, _ := e.st.SetpointOperation(ctx, orphan); got.State != edge.StateFailed {
		t.Fatalf("the orphaned operation is %q after a node started, want failed", got.State)
	}
	if got, _, _ := e.st.SetpointOperation(ctx, op.Reference); got.State != edge.StateRequested {
		t.Fatalf("node-a's open operation is %q (%s) after another node started, want still requested", got.State, got.Reason)
	}
	d.SetMode(edgetest.Normal)
	if got, _ := e.operation(op.Reference); got.State != edge.StateFailed || got.Reason != "no answer from the edge device within "+testOperation.String() {
		t.Fatalf("node-a's operation ended %q (%s), want failed by its own follower", got.State, got.Reason)
	}
}
