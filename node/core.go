package node

import (
	"context"
	"fmt"
	"log/slog"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/openbdp/bdp/actors"
	"github.com/openbdp/bdp/analytics"
	"github.com/openbdp/bdp/pipeline"
	"github.com/openbdp/bdp/store"
)

// CoreConfig is what the core of a node needs.
type CoreConfig struct {
	Store    *store.Store
	Registry prometheus.Registerer
	Log      *slog.Logger
	// Engine holds the engine's own settings (System, TickRate, Budget,
	// Clock). StartCore wires in the rest where it is unset: the pipeline
	// as Sink and Router, the store (read in batches) as History, the
	// Registry and Log, and the store's records of unhealthy datapoints
	// and calculation errors.
	Engine actors.EngineConfig
	// Relay, in cluster mode, carries every node's stored observations to
	// every node's router over Kafka (pipeline.KafkaRelay): the pipeline
	// publishes each committed batch before it answers the writers, and
	// the router is fed by the relay's consumer instead of the pipeline.
	// nil: one node, whose pipeline feeds its router directly.
	Relay *pipeline.KafkaRelayConfig
}

// Core is what every node runs: the pipeline that stores observations and
// routes them, the engine of virtual datapoints, and this release's
// analytics catalog.
type Core struct {
	Ingest     *pipeline.Batcher
	Router     *pipeline.Router
	Engine     *actors.Engine
	Components *analytics.Catalog
}

// StartCore starts the core, recording each part in running: the pipeline
// first (it stops last, once every accepted write is answered), then the
// batched history reads and the engine.
func StartCore(ctx context.Context, cfg CoreConfig, running *Parts) (Core, error) {
	st := cfg.Store
	var publish pipeline.Relay
	if cfg.Relay != nil {
		relay, err := pipeline.NewKafkaRelay(ctx, *cfg.Relay, cfg.Log, cfg.Registry)
		if err != nil {
			return Core{}, fmt.Errorf("relay of stored observations: %w", err)
		}
		running.AddFunc("relay publisher", func() { _ = relay.Close() }) // after the pipeline, which publishes
		publish = relay
	}
	ingest, router, stopIngest, err := startPipeline(ctx, st, publish, cfg.Registry, cfg.Log)
	if err != nil {
		return Core{}, err
	}
	running.AddFunc("pipeline", stopIngest)
	if cfg.Relay != nil {
		// Positioned before any actor starts: what is stored after an
		// actor's history read reaches it through the relay.
		consumeCtx, stopConsuming := context.WithCancel(context.Background())
		consumer, err := pipeline.StartRelayConsumer(consumeCtx, *cfg.Relay, router, cfg.Log, cfg.Registry)
		if err != nil {
			stopConsuming()
			return Core{}, fmt.Errorf("relay of stored observations: %w", err)
		}
		running.AddFunc("relay consumer", func() { stopConsuming(); consumer.Wait() })
	}
	// The window refills of actors that start together (a resume starts
	// every running one) are read in batches, not one query each.
	reads := actors.NewReadBatcher(st)
	running.AddFunc("history reads", reads.Close)
	ecfg := cfg.Engine
	if ecfg.Sink == nil {
		ecfg.Sink = ingest
	}
	if ecfg.Router == nil {
		ecfg.Router = router
	}
	if ecfg.History == nil {
		ecfg.History = actors.StoreHistory{Store: st, Batches: reads}
	}
	if ecfg.Log == nil {
		ecfg.Log = cfg.Log
	}
	if ecfg.Registry == nil {
		ecfg.Registry = cfg.Registry
	}
	if ecfg.OnUnhealthy == nil {
		ecfg.OnUnhealthy = actors.MarkUnhealthy(st, cfg.Log)
	}
	if ecfg.OnCalcError == nil {
		ecfg.OnCalcError = actors.LogCalcErrors(st, cfg.Log)
	}
	engine, err := actors.New(ecfg)
	if err != nil {
		return Core{}, err
	}
	running.Add("virtual datapoints", engine.Shutdown)
	// The analytics catalog of this release, persisted by alphanumeric id
	// so its numeric ids stay what earlier starts gave them.
	components, err := analytics.LoadCatalog(ctx, st)
	if err != nil {
		return Core{}, err
	}
	return Core{Ingest: ingest, Router: router, Engine: engine, Components: components}, nil
}

// startPipeline runs the node's batcher and keeps the observation
// partitions of the coming weeks created. The returned func stops both,
// after every accepted write has been answered; call it after the HTTP
// server has drained.
func startPipeline(ctx context.Context, st *store.Store, relay pipeline.Relay, reg prometheus.Registerer, log *slog.Logger) (*pipeline.Batcher, *pipeline.Router, func(), error) {
	if err := st.EnsureUpcomingPartitions(ctx, time.Now()); err != nil {
		return nil, nil, nil, fmt.Errorf("create observation partitions: %w", err)
	}
	router := pipeline.NewRouter()
	b, err := pipeline.NewBatcher(pipeline.BatcherConfig{Relay: relay}, st, router, reg)
	if err != nil {
		return nil, nil, nil, err
	}
	go b.Run()
	maintCtx, stopMaint := context.WithCancel(context.Background())
	maintDone := make(chan struct{})
	go func() {
		defer close(maintDone)
		tick := time.NewTicker(time.Hour)
		defer tick.Stop()
		for {
			select {
			case <-maintCtx.Done():
				return
			case now := <-tick.C:
				if err := st.EnsureUpcomingPartitions(maintCtx, now); err != nil {
					log.Error("create observation partitions", slog.Any("error", err))
				}
			}
		}
	}()
	return b, router, func() {
		stopMaint()
		<-maintDone
		b.Stop()
	}, nil
}
