package main

import (
	"context"
	"errors"
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
// BDP_MQTT_WS_ADDR, BDP_MQTT_TLS_ADDR, BDP_MQTT_WSS_ADDR) with ingestion (mqtt.Ingest: publishes of MQTT users
// stored through the pipeline) and live data out (mqtt.Live, a router tap:
// every stored observation to its datapoint's topic), both bounded by the
// creator's datapoint access (mqtt.Gate). The returned func closes it;
// runServe calls it after the HTTP server has drained and before the
// pipeline stops, so the last acknowledgements follow their commits.
//
// With BDP_MQTT_EXTERNAL it connects to that broker instead (mqtt.External)
// and runs no broker of its own; live data goes there, except what came in
// over MQTT, which that broker has carried to its subscribers already.
func startMQTT(ctx context.Context, cfg config, p mqttParts) (mqtt.Broker, func(), error) {
	stopGate := func() {}
	fail := func(err error) (mqtt.Broker, func(), error) {
		stopGate()
		return nil, nil, err
	}

	var b mqtt.Broker
	var ingest *mqtt.Ingest
	var skip []pipeline.Source
	if cfg.MQTTExternal != "" {
		ingestSession := "" // one node: the shared subscription ingests
		if cfg.Cluster != nil {
			// A cluster ingests through one session the nodes take turns
			// on (the owner of cluster.IngestIdentity), in order.
			ingestSession = "bdp-" + cfg.Cluster.Name + "-ingest"
		}
		ext, err := mqtt.StartExternal(ctx, mqtt.ExternalConfig{URL: cfg.MQTTExternal, AdminUser: cfg.MQTTAdminUser,
			AdminPassword: cfg.MQTTAdminPassword, ClientID: "bdp-" + cfg.NodeID, IngestClientID: ingestSession,
			Store: p.store, Sink: p.ingest, Logger: p.log, Registry: p.registry})
		if err != nil {
			return fail(err)
		}
		b, skip = ext, []pipeline.Source{pipeline.SourceMQTT}
	} else {
		// The Gate follows changes of access through its own LISTEN
		// connection; Mosquitto's ACLs do its work in external mode.
		gate := mqtt.NewGate(p.store)
		gateCtx, cancel := context.WithCancel(context.Background())
		gateDone := make(chan struct{})
		go func() { defer close(gateDone); gate.Listen(gateCtx) }()
		stopGate = func() { cancel(); <-gateDone }
		e, err := mqtt.NewEmbedded(ctx, mqtt.Config{Addr: cfg.MQTTAddr, WSAddr: cfg.MQTTWSAddr, CredentialTTL: cfg.CredentialTTL,
			TLSAddr: cfg.MQTTTLSAddr, WSSAddr: cfg.MQTTWSSAddr, TLS: cfg.MQTTTLS, ClientQueue: int32(cfg.MQTTClientQueue)},
			mqtt.Deps{Store: p.store, Hasher: p.hasher, Throttle: p.throttle, Log: p.log, Registry: p.registry, Gate: gate})
		if err != nil {
			return fail(err)
		}
		if ingest, err = e.AddIngest(p.ingest, gate, p.registry); err == nil {
			err = e.Serve()
		}
		if err != nil {
			_ = e.Close(ctx)
			return fail(err)
		}
		b = e
	}
	live, err := mqtt.NewLive(b, mqtt.LiveConfig{Skip: skip}, p.registry)
	if err != nil {
		_ = b.Close(ctx)
		return fail(err)
	}
	removeTap := p.router.AddTap(live)
	return b, func() {
		removeTap()
		live.Close()
		sctx, cancel := context.WithTimeout(context.Background(), cfg.ShutdownTimeout)
		defer cancel()
		if err := b.Close(sctx); err != nil {
			p.log.Warn("mqtt broker shutdown incomplete", slog.Any("error", err))
		}
		if ingest != nil {
			ingest.Close() // after the broker: no client reads on
		}
		stopGate()
	}, nil
}

// loadTLSConfig reads the embedded broker's TLS listeners and their
// certificate. The certificate is loaded here, with the rest of the
// configuration, so that a file bdp cannot read or a key that does not
// match stops the start with the variable named, instead of listeners
// whose every handshake fails.
func loadTLSConfig(c *config, get func(string) string, bad func(string, error)) {
	c.MQTTTLSAddr, c.MQTTWSSAddr = get("BDP_MQTT_TLS_ADDR"), get("BDP_MQTT_WSS_ADDR")
	cert, key := get("BDP_TLS_CERT"), get("BDP_TLS_KEY")
	listeners := false
	for _, v := range [][2]string{{"BDP_MQTT_TLS_ADDR", c.MQTTTLSAddr}, {"BDP_MQTT_WSS_ADDR", c.MQTTWSSAddr}} {
		name, addr := v[0], v[1]
		if addr == "" {
			continue
		}
		listeners = true
		if err := checkAddr(addr); err != nil {
			bad(name, err)
		}
		if get("BDP_MQTT_EXTERNAL") != "" {
			bad(name, errors.New("is unused with BDP_MQTT_EXTERNAL: the external broker's own configuration has its TLS listeners"))
		}
	}
	switch {
	case !listeners:
		for _, name := range []string{"BDP_TLS_CERT", "BDP_TLS_KEY"} {
			if get(name) != "" {
				bad(name, errors.New("is used only with BDP_MQTT_TLS_ADDR or BDP_MQTT_WSS_ADDR, neither of which is set"))
			}
		}
	case cert == "" || key == "":
		for _, v := range [][2]string{{"BDP_TLS_CERT", cert}, {"BDP_TLS_KEY", key}} {
			if v[1] == "" {
				bad(v[0], errors.New("is required with BDP_MQTT_TLS_ADDR or BDP_MQTT_WSS_ADDR"))
			}
		}
	default:
		conf, err := mqtt.LoadTLS(cert, key)
		if err != nil {
			bad("BDP_TLS_CERT", err)
		}
		c.MQTTTLS = conf
	}
}

// embeddedListeners are the embedded broker's listen addresses for GET
// /v2/meta/mqtt; nil for an external broker, whose listeners bdp does not
// know.
func embeddedListeners(b mqtt.Broker) map[string]string {
	if e, ok := b.(*mqtt.Embedded); ok {
		return e.Addresses()
	}
	return nil
}
