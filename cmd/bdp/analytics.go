package main

import (
	"context"
	"log/slog"
	"sync"

	"github.com/asynkron/protoactor-go/actor"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/openbdp/bdp/analytics"
	"github.com/openbdp/bdp/analytics/runner"
	"github.com/openbdp/bdp/store"
)

// startAnalytics runs the analysis pool (BDP_ANALYSIS_WORKERS workers
// taking requested and scheduled runs from the database) and the weekly
// schedule, which first makes up the weeks missed while no node ran. The
// returned func stops both and waits for the runs in progress, whose
// unfinished ones go back to the queue; runServe calls it before the
// database closes.
func startAnalytics(cfg config, system *actor.ActorSystem, st *store.Store, cat *analytics.Catalog, reg prometheus.Registerer, log *slog.Logger) (func(), error) {
	pool, err := runner.New(runner.Config{System: system, Store: st, Functions: runner.FromCatalog(cat), Version: version,
		Workers: cfg.AnalysisWorkers, Log: log, Registry: reg})
	if err != nil {
		return nil, err
	}
	schedule := runner.NewSchedule(runner.ScheduleConfig{Store: st, Log: log})
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	wg.Go(func() { pool.Run(ctx) })
	wg.Go(func() { schedule.Run(ctx) })
	log.Info("analytics running", slog.Int("workers", pool.Workers()))
	return func() { cancel(); wg.Wait() }, nil
}
