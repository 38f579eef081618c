package cluster

import (
	"context"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/openbdp/bdp/cluster/clusterpb"
)

// Holdings counts what a node runs.
type Holdings struct {
	VirtualDatapoints, ControlsApps, EdgeConnections int
}

// Status is the platform's nodes as one of them sees them
// (GET /operator/cluster).
type Status struct {
	Mode    string         `json:"mode" doc:"single: one node (no BDP_CLUSTER_ETCD); cluster: the members registered in etcd"`
	Name    string         `json:"cluster,omitempty" doc:"the cluster's name (BDP_CLUSTER_NAME)"`
	NodeID  string         `json:"node_id" doc:"the node that answered (BDP_NODE_ID)"`
	Members []MemberStatus `json:"members" doc:"every member, sorted by address; on one node, that node"`
}

// MemberStatus is what one member holds and has moved.
type MemberStatus struct {
	NodeID            string `json:"node_id"`
	Address           string `json:"address" doc:"where the other members reach it (protoactor remote); empty on one node"`
	Self              bool   `json:"self" doc:"the member that answered the request"`
	Answered          bool   `json:"answered" doc:"false: registered in etcd, but it did not answer within 2 s; its counts are then 0"`
	VirtualDatapoints int64  `json:"virtual_datapoints" doc:"virtual datapoint actors running or starting on it"`
	ControlsApps      int64  `json:"controls_apps" doc:"controls app actors running on it"`
	EdgeConnections   int64  `json:"edge_connections" doc:"edge device connections it holds"`
	MovedIn           int64  `json:"moved_in" doc:"virtual datapoints its reconciler started since it started: moved to it, or running before it started"`
	MovedOut          int64  `json:"moved_out" doc:"virtual datapoints it stopped because another member owns them now"`
}

// Single is the status of a platform of one node.
type Single struct {
	NodeID   string
	Holdings func() Holdings
}

// View answers the one node's status.
func (s Single) View(context.Context) (Status, error) {
	h := s.Holdings()
	return Status{Mode: "single", NodeID: s.NodeID, Members: []MemberStatus{{NodeID: s.NodeID, Self: true, Answered: true,
		VirtualDatapoints: int64(h.VirtualDatapoints), ControlsApps: int64(h.ControlsApps), EdgeConnections: int64(h.EdgeConnections)}}}, nil
}

// statusTimeout bounds the wait for one member's status.
const statusTimeout = 2 * time.Second

// holdingsFunc is what SetHoldings sets: the controls apps and edge
// connections start after the commands are served; before it is set, a
// member answers that it holds nothing (its actors start after).
type holdingsFunc func() Holdings

// SetHoldings tells the runner how to count what this node runs.
func (r *Runner) SetHoldings(f func() Holdings) { r.holdings.Store(holdingsFunc(f)) }

// View asks every member what it holds, at once, each within 2 s.
func (r *Runner) View(ctx context.Context) (Status, error) {
	addrs := r.member.Members()
	out := Status{Mode: "cluster", Name: r.member.cfg.Name, NodeID: r.member.NodeID(), Members: make([]MemberStatus, len(addrs))}
	var wg sync.WaitGroup
	for i, addr := range addrs {
		if addr == r.member.Address() {
			out.Members[i] = statusOf(r.local(), true)
			continue
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			out.Members[i] = MemberStatus{Address: addr}
			sctx, cancel := context.WithTimeout(ctx, statusTimeout)
			defer cancel()
			res, err := r.askAny(sctx, addr, &clusterpb.StatusRequest{})
			if ns, ok := res.(*clusterpb.NodeStatus); ok && err == nil {
				out.Members[i] = statusOf(ns, false)
			}
		}()
	}
	wg.Wait()
	return out, ctx.Err()
}

// local is this member's own status.
func (r *Runner) local() *clusterpb.NodeStatus {
	var h Holdings
	if f, ok := r.holdings.Load().(holdingsFunc); ok {
		h = f()
	}
	return &clusterpb.NodeStatus{NodeId: r.member.NodeID(), Address: r.member.Address(),
		VirtualDatapoints: int64(h.VirtualDatapoints), ControlsApps: int64(h.ControlsApps), EdgeConnections: int64(h.EdgeConnections),
		MovedIn: r.member.movedIn.Load(), MovedOut: r.member.movedOut.Load()}
}

func statusOf(ns *clusterpb.NodeStatus, self bool) MemberStatus {
	return MemberStatus{NodeID: ns.GetNodeId(), Address: ns.GetAddress(), Self: self, Answered: true,
		VirtualDatapoints: ns.GetVirtualDatapoints(), ControlsApps: ns.GetControlsApps(), EdgeConnections: ns.GetEdgeConnections(),
		MovedIn: ns.GetMovedIn(), MovedOut: ns.GetMovedOut()}
}

// moves counts the reconciler's moves, for /operator/cluster and
// /metrics.
type moves struct {
	movedIn, movedOut atomic.Int64
	cutOffs           atomic.Int64 // times this member lost etcd (lease.go)
}

// registerMetrics exports the membership and the moves.
func (m *Member) registerMetrics(reg prometheus.Registerer) error {
	members := prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "bdp_cluster_members",
		Help: "Members of the cluster as this node sees them."}, func() float64 { return float64(len(m.Members())) })
	in := prometheus.NewCounterFunc(prometheus.CounterOpts{Name: "bdp_cluster_moved_in_total",
		Help: "Virtual datapoints the reconciler started on this node: moved to it, or running before it started."},
		func() float64 { return float64(m.movedIn.Load()) })
	out := prometheus.NewCounterFunc(prometheus.CounterOpts{Name: "bdp_cluster_moved_out_total",
		Help: "Virtual datapoints stopped on this node because another member owns them now."},
		func() float64 { return float64(m.movedOut.Load()) })
	cut := prometheus.NewCounterFunc(prometheus.CounterOpts{Name: "bdp_cluster_cut_offs_total",
		Help: "Times this node lost etcd for longer than its lease allows and stopped what it ran (it runs its share again once etcd answers)."},
		func() float64 { return float64(m.cutOffs.Load()) })
	for _, c := range []prometheus.Collector{members, in, out, cut} {
		if err := reg.Register(c); err != nil {
			return err
		}
	}
	return nil
}
