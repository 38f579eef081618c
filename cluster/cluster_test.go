package cluster

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"os"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/openbdp/bdp/actors"
	"github.com/openbdp/bdp/cluster/clusterpb"
	"github.com/openbdp/bdp/cluster/etcdtest"
	"github.com/openbdp/bdp/fault"
	"github.com/openbdp/bdp/node"
	"github.com/openbdp/bdp/store"
	"github.com/openbdp/bdp/store/pgcluster"
	"github.com/openbdp/bdp/store/storetest"
)

var testPG *pgcluster.Cluster

func TestMain(m *testing.M) {
	pgcluster.RunTests(m, func(c *pgcluster.Cluster) { testPG = c })
}

// testNode is one member: the core of a node (pipeline and engine) in an
// actor system of its own, joined to the cluster, serving commands and
// reconciling.
type testNode struct {
	name   string
	engine *actors.Engine
	member *Member
	runner *Runner
	parts  *node.Parts
}

func startNode(t *testing.T, st *store.Store, etcd string, name string) *testNode {
	t.Helper()
	ctx := context.Background()
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	if testing.Verbose() {
		log = slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelInfo})).With("node", name)
	}
	parts := &node.Parts{Log: log}
	system := actors.NewSystem(log)
	core, err := node.StartCore(ctx, node.CoreConfig{Store: st, Registry: prometheus.NewRegistry(), Log: log,
		Engine: actors.EngineConfig{System: system}}, parts)
	if err != nil {
		t.Fatal(err)
	}
	member, err := Join(system, Config{Etcd: []string{etcd}, NodeID: name, CommandTimeout: 20 * time.Second}, log)
	if err != nil {
		parts.Stop(10 * time.Second)
		t.Fatal(err)
	}
	parts.Add("cluster membership", member.Leave)
	runner, stopCommands, err := Serve(member, core.Engine, log, prometheus.NewRegistry())
	if err != nil {
		t.Fatal(err)
	}
	parts.AddFunc("cluster commands", stopCommands)
	runner.SetHoldings(func() Holdings { return Holdings{VirtualDatapoints: len(core.Engine.RunningKeys())} })
	rctx, stopReconciler := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() {
		defer close(done)
		_ = (&Reconciler{Member: member, Engine: core.Engine, Store: st, Log: log, Every: time.Second}).Run(rctx)
	}()
	parts.AddFunc("reconciler", func() { stopReconciler(); <-done })
	n := &testNode{name: name, engine: core.Engine, member: member, runner: runner, parts: parts}
	t.Cleanup(n.stop)
	return n
}

func (n *testNode) stop() { n.parts.Stop(10 * time.Second) }

// waitFor polls cond until it holds, or fails the test after timeout.
func waitFor(t *testing.T, timeout time.Duration, what string, cond func() bool) {
	t.Helper()
	for deadline := time.Now().Add(timeout); !cond(); time.Sleep(20 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("not within %s: %s", timeout, what)
		}
	}
}

// createVDPs creates n formula datapoints out0..out{n-1} of one source,
// Ready to start.
func createVDPs(t *testing.T, st *store.Store, project int64, n int) []store.VDP {
	t.Helper()
	cfg, err := actors.ParseConfig(actors.TypeFormula, []byte(`{"pins": {"P1": {"dataPointID": "a"}}, "parameters": {"formula": "P1 * 2;"}}`))
	if err != nil {
		t.Fatal(err)
	}
	raw, err := json.Marshal(cfg)
	if err != nil {
		t.Fatal(err)
	}
	var out []store.VDP
	for i := range n {
		v, err := st.CreateVDP(context.Background(), store.VDP{ProjectID: project, DataPointID: fmt.Sprintf("out%d", i), Type: actors.TypeFormula, Config: raw},
			store.StatusChange{Code: store.StatusCreated}, store.StatusChange{Code: store.StatusReadyToStart})
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, v)
	}
	return out
}

// start does what HTTP's run=true does, through a node's runner.
func start(t *testing.T, st *store.Store, via *testNode, v store.VDP) {
	t.Helper()
	ctx := context.Background()
	if _, err := st.ChangeVDPStatus(ctx, v.ProjectID, v.DataPointID, store.StatusChange{Code: store.StatusStarting}); err != nil {
		t.Fatal(err)
	}
	cursor, err := via.runner.StartVDP(ctx, v)
	if err != nil {
		t.Fatalf("start %s through %s: %v", v.DataPointID, via.name, err)
	}
	if _, err := st.ChangeVDPStatus(ctx, v.ProjectID, v.DataPointID, store.StatusChange{Code: store.StatusRunning, CatchUpFrom: cursor}); err != nil {
		t.Fatal(err)
	}
}

func key(v store.VDP) actors.Key {
	return actors.Key{ProjectID: v.ProjectID, DataPointID: v.DataPointID}
}

// runsOn names the nodes whose engine runs k.
func runsOn(k actors.Key, nodes ...*testNode) []string {
	var on []string
	for _, n := range nodes {
		if n.engine.Running(k) {
			on = append(on, n.name)
		}
	}
	return on
}

func ownerName(k actors.Key, nodes ...*testNode) string {
	addr, _ := nodes[0].member.Owner(VDPIdentity(k))
	for _, n := range nodes {
		if n.member.Address() == addr {
			return n.name
		}
	}
	return "nobody (" + addr + ")"
}

func seeMembers(nodes []*testNode, want int) func() bool {
	return func() bool {
		for _, n := range nodes {
			if len(n.member.Members()) != want {
				return false
			}
		}
		return true
	}
}

// Each virtual datapoint runs on exactly one member, its owner, whichever
// node got the start; a stop through the other node stops it there; when
// a member leaves, what it ran runs on the other within 10 s.
func TestEachVirtualDatapointRunsOnItsOwnerOnly(t *testing.T) {
	st, _ := storetest.Open(t, testPG)
	tenant := storetest.NewTenant(t, st, "cl")
	etcd := etcdtest.Start(t)
	a := startNode(t, st, etcd.Endpoint, "a")
	b := startNode(t, st, etcd.Endpoint, "b")
	nodes := []*testNode{a, b}
	waitFor(t, 20*time.Second, "both members see two members", seeMembers(nodes, 2))

	vdps := createVDPs(t, st, tenant.Project.ID, 16)
	owners := map[string]int{}
	for i, v := range vdps {
		start(t, st, nodes[i%2], v) // half through the node that does not own it
		owners[ownerName(key(v), nodes...)]++
	}
	if owners["a"] == 0 || owners["b"] == 0 {
		t.Fatalf("owners %v: the hash should spread 16 datapoints over both members", owners)
	}
	for _, v := range vdps {
		if on, want := runsOn(key(v), nodes...), ownerName(key(v), nodes...); len(on) != 1 || on[0] != want {
			t.Fatalf("%s runs on %v, want only on its owner %s", v.DataPointID, on, want)
		}
	}

	// Every member's view: both members, each counting what it runs.
	for _, n := range nodes {
		view, err := n.runner.View(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		if view.Mode != "cluster" || view.NodeID != n.name || len(view.Members) != 2 {
			t.Fatalf("%s's view: %+v", n.name, view)
		}
		for _, m := range view.Members {
			if !m.Answered || m.VirtualDatapoints != int64(owners[m.NodeID]) || m.Self != (m.NodeID == n.name) {
				t.Fatalf("%s's view of %s: %+v, want %d datapoints", n.name, m.NodeID, m, owners[m.NodeID])
			}
		}
	}

	// A stop through the node that does not run it.
	for _, v := range vdps[:4] {
		via := a
		if ownerName(key(v), nodes...) == "a" {
			via = b
		}
		if err := via.runner.Stop(context.Background(), key(v)); err != nil {
			t.Fatal(err)
		}
		if _, err := st.ChangeVDPStatus(context.Background(), v.ProjectID, v.DataPointID, store.StatusChange{Code: store.StatusStopped}); err != nil {
			t.Fatal(err)
		}
		if on := runsOn(key(v), nodes...); len(on) != 0 {
			t.Fatalf("%s stopped through %s still runs on %v", v.DataPointID, via.name, on)
		}
	}

	// a leaves: b runs every datapoint still Running, and the stopped
	// ones nowhere.
	var movedToB int64
	for _, v := range vdps[4:] {
		if ownerName(key(v), nodes...) == "a" {
			movedToB++
		}
	}
	began := time.Now()
	a.stop()
	waitFor(t, 10*time.Second, "b runs every running datapoint after a left", func() bool {
		for _, v := range vdps[4:] {
			if !b.engine.Running(key(v)) {
				return false
			}
		}
		return true
	})
	t.Logf("moved to b in %s", time.Since(began).Round(time.Millisecond))
	// Counted once each start is recorded, just after it runs.
	waitFor(t, 5*time.Second, fmt.Sprintf("b's view after a left: one member that moved in %d", movedToB), func() bool {
		view, err := b.runner.View(context.Background())
		return err == nil && len(view.Members) == 1 && view.Members[0].MovedIn == movedToB
	})
	for _, v := range vdps[:4] {
		if b.engine.Running(key(v)) {
			t.Fatalf("stopped %s runs on b after the move", v.DataPointID)
		}
	}
}

// A member refuses to start a datapoint it does not own (the topology
// moved while the command travelled), so two members never both start it.
func TestStartOnAMemberThatDoesNotOwnIsRefused(t *testing.T) {
	st, _ := storetest.Open(t, testPG)
	tenant := storetest.NewTenant(t, st, "cl")
	etcd := etcdtest.Start(t)
	a := startNode(t, st, etcd.Endpoint, "a")
	b := startNode(t, st, etcd.Endpoint, "b")
	nodes := []*testNode{a, b}
	waitFor(t, 20*time.Second, "both members see two members", seeMembers(nodes, 2))
	for _, v := range createVDPs(t, st, tenant.Project.ID, 8) {
		notOwner := a
		if ownerName(key(v), nodes...) == "a" {
			notOwner = b
		}
		reply, _ := notOwner.runner.carryOut(context.Background(), &clusterpb.StartVDP{Vdp: wireOf(v)}).(*clusterpb.Reply)
		if !reply.GetFailed() || fault.Kind(reply.GetFaultKind()) != fault.Unavailable {
			t.Fatalf("%s started on %s, which does not own it: %v", v.DataPointID, notOwner.name, reply)
		}
		if on := runsOn(key(v), nodes...); len(on) != 0 {
			t.Fatalf("%s runs on %v", v.DataPointID, on)
		}
	}
}

// A datapoint left Starting by a node that died between marking it and
// asking its owner to start it is started by its owner, two passes later,
// and Running; one whose start is under way is left to it.
func TestALostStartIsTakenOver(t *testing.T) {
	st, _ := storetest.Open(t, testPG)
	tenant := storetest.NewTenant(t, st, "cl")
	etcd := etcdtest.Start(t)
	a := startNode(t, st, etcd.Endpoint, "a")
	waitFor(t, 20*time.Second, "a sees itself", seeMembers([]*testNode{a}, 1))
	v := createVDPs(t, st, tenant.Project.ID, 1)[0]
	if _, err := st.ChangeVDPStatus(context.Background(), v.ProjectID, v.DataPointID, store.StatusChange{Code: store.StatusStarting}); err != nil {
		t.Fatal(err)
	}
	waitFor(t, 10*time.Second, "the lost start taken over", func() bool {
		now, err := st.VDP(context.Background(), v.ProjectID, v.DataPointID)
		return err == nil && now.StatusCode == store.StatusRunning && a.engine.Running(key(v))
	})
}
