package main

import (
	"context"
	"log/slog"
	"time"

	"github.com/asynkron/protoactor-go/actor"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/openbdp/bdp/actors"
	"github.com/openbdp/bdp/analytics"
	"github.com/openbdp/bdp/controls"
	"github.com/openbdp/bdp/edge"
	"github.com/openbdp/bdp/mqtt"
	"github.com/openbdp/bdp/pipeline"
	"github.com/openbdp/bdp/store"
)

// startControls runs the controls apps of this node: their writes go
// through the setpoint writer (the safeguards of POST
// /v2/datapoint/setpoint), their registrations (app_start, app_stop)
// through the same edge connections. The apps whose desired state is
// running (Starting or Running when bdp serve last stopped) start again
// in the background; a device's reload and recovered events, and the
// device being online again after it was offline, make the app write its
// value again. The returned func stops the resume and every app
// actor (the apps stay running in the store); call it before the edge
// connections close. In cluster mode (resume false) nothing is resumed
// here: the reconciler runs the apps of the projects this node owns
// (controls.Runtime.Reconcile).
func startControls(system *actor.ActorSystem, st *store.Store, components *analytics.Catalog, setpoints *edge.Setpoints, broker mqtt.Broker, router *pipeline.Router,
	reg prometheus.Registerer, log *slog.Logger, resume bool) (*controls.Runtime, func(), error) {
	rt, err := controls.New(controls.Config{System: system, Store: st, Catalog: components, Writer: setpoints, Device: setpoints, Router: router,
		History: actors.StoreHistory{Store: st}, Log: log, Registry: reg})
	if err != nil {
		return nil, nil, err
	}
	// A device that reloaded or recovered an app gets its value again.
	unwatch, err := rt.WatchDevices(broker)
	if err != nil {
		rt.Shutdown(context.Background())
		return nil, nil, err
	}
	// A device online again after it was offline gets the values whose
	// writes may have failed meanwhile.
	unback := setpoints.WatchBackOnline(rt.DeviceBack)
	ctx, cancel := context.WithCancel(context.Background())
	resumed := make(chan struct{})
	go func() {
		defer close(resumed)
		if !resume {
			return
		}
		if err := rt.Resume(ctx); err != nil && ctx.Err() == nil {
			log.Error("resume controls apps", slog.Any("error", err))
		}
	}()
	return rt, func() {
		unback()
		unwatch()
		cancel()
		<-resumed
		sctx, stop := context.WithTimeout(context.Background(), 15*time.Second)
		defer stop()
		rt.Shutdown(sctx)
	}, nil
}
