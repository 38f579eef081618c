package main

import (
	"log/slog"

	"github.com/asynkron/protoactor-go/actor"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/openbdp/bdp/actors"
	"github.com/openbdp/bdp/cluster"
	"github.com/openbdp/bdp/node"
	"github.com/openbdp/bdp/pipeline"
	"github.com/openbdp/bdp/store"
)

// joinCluster makes this node a member of the cluster of cfg.Cluster: it
// joins through etcd and serves the other members' commands. The returned
// Runner is what HTTP starts and stops virtual datapoints through, and
// the Reconciler what runs this member's share of them (in place of a
// single node's resume).
func joinCluster(cfg config, system *actor.ActorSystem, engine *actors.Engine, st *store.Store,
	running *node.Parts, reg prometheus.Registerer, log *slog.Logger) (*cluster.Runner, *cluster.Reconciler, error) {
	member, err := cluster.Join(system, *cfg.Cluster, log)
	if err != nil {
		return nil, nil, err
	}
	// Stopped before the engine: the other members take over what this
	// one ran while its actors still run, rather than after a gap.
	running.Add("cluster membership", member.Leave)
	runner, stopCommands, err := cluster.Serve(member, engine, log, reg)
	if err != nil {
		return nil, nil, err
	}
	running.AddFunc("cluster commands", stopCommands)
	return runner, &cluster.Reconciler{Member: member, Engine: engine, Store: st, Log: log,
		Concurrency: cfg.ResumeConcurrency}, nil
}

// relayConfig is the relay of stored observations in cluster mode; nil on
// one node.
func relayConfig(cfg config) *pipeline.KafkaRelayConfig {
	if cfg.Cluster == nil {
		return nil
	}
	return &pipeline.KafkaRelayConfig{Brokers: cfg.KafkaBrokers, Topic: cfg.RelayTopic, ClientID: "bdp-" + cfg.NodeID}
}
