package main

import (
	"context"
	"log/slog"

	"github.com/asynkron/protoactor-go/actor"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/openbdp/bdp/cluster"
	"github.com/openbdp/bdp/edge"
	"github.com/openbdp/bdp/mqtt"
	"github.com/openbdp/bdp/pipeline"
	"github.com/openbdp/bdp/store"
)

// startEdge runs one connection actor per project with edge credentials
// (edge.Manager, following the credentials as they change) and the
// setpoint writer over them. It fails what a previous run left
// unfinished. The returned func stops both; runServe calls it after the
// HTTP server has drained and before the broker closes.
//
// In cluster mode (member set) this node runs the connections of the
// projects it owns (cluster.Runner.OwnsProject) and holds their fence
// under its node id; the reconciler syncs them as the members change
// (the returned Manager's Sync).
func startEdge(ctx context.Context, system *actor.ActorSystem, st *store.Store, broker mqtt.Broker, sink pipeline.Sink, reg prometheus.Registerer,
	log *slog.Logger, nodeID string, member *cluster.Runner) (*edge.Manager, *edge.Setpoints, func(), error) {
	cfg := edge.Config{System: system, Broker: broker, Store: st, Sink: sink, Log: log, Registry: reg, Holder: nodeID}
	if member != nil {
		cfg.Owns = member.OwnsProject
	}
	if emb, ok := broker.(*mqtt.Embedded); ok {
		// The embedded broker knows at once when a device's connection
		// ends; with an external one, the missed heartbeats tell.
		cfg.Presence = emb.Sessions()
	}
	m, err := edge.NewManager(cfg)
	if err != nil {
		return nil, nil, nil, err
	}
	if err := m.Sync(ctx); err != nil {
		m.Close()
		return nil, nil, nil, err
	}
	sp, err := edge.NewSetpoints(ctx, m)
	if err != nil {
		m.Close()
		return nil, nil, nil, err
	}
	runCtx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); m.Run(runCtx) }()
	return m, sp, func() {
		cancel()
		<-done
		sp.Close()
		m.Close()
	}, nil
}
