package main

import (
	"context"
	"log/slog"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/openbdp/bdp/auth"
	"github.com/openbdp/bdp/mqtt"
	"github.com/openbdp/bdp/pipeline"
	"github.com/openbdp/bdp/store"
)

// mqttParts are the parts of the platform the MQTT layer works with.
type mqttParts struct {
	store    *store.Store
	ingest   *pipeline.Batcher
	router   *pipeline.Router
	hasher   *auth.Hasher   // shared with HTTP: one bound on concurrent hashes
	throttle *auth.Throttle // shared with HTTP: one count of failed logins
	registry prometheus.Registerer
	log      *slog.Logger
}

// startMQTT runs the embedded broker on BDP_MQTT_ADDR (and
// BDP_MQTT_WS_ADDR). The returned func closes it; runServe calls it after
// the HTTP server has drained and before the pipeline stops.
//
// With BDP_MQTT_EXTERNAL it connects to that broker instead (mqtt.External)
// and runs no broker of its own.
func startMQTT(ctx context.Context, cfg config, p mqttParts) (mqtt.Broker, func(), error) {
	var b mqtt.Broker
	var err error
	if cfg.MQTTExternal != "" {
		b, err = mqtt.StartExternal(ctx, mqtt.ExternalConfig{URL: cfg.MQTTExternal, AdminUser: cfg.MQTTAdminUser,
			AdminPassword: cfg.MQTTAdminPassword, Store: p.store, Sink: p.ingest, Logger: p.log, Registry: p.registry})
	} else {
		b, err = mqtt.StartEmbedded(ctx, mqtt.Config{Addr: cfg.MQTTAddr, WSAddr: cfg.MQTTWSAddr, CredentialTTL: cfg.CredentialTTL},
			mqtt.Deps{Store: p.store, Hasher: p.hasher, Throttle: p.throttle, Log: p.log, Registry: p.registry})
	}
	if err != nil {
		return nil, nil, err
	}
	return b, func() {
		sctx, cancel := context.WithTimeout(context.Background(), cfg.ShutdownTimeout)
		defer cancel()
		if err := b.Close(sctx); err != nil {
			p.log.Warn("mqtt broker shutdown incomplete", slog.Any("error", err))
		}
	}, nil
}
