package main

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"maps"
	"net"
	"os"
	"path/filepath"
	"time"

	"github.com/oklog/run"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"

	"github.com/openbdp/bdp/actors"
	"github.com/openbdp/bdp/auth"
	"github.com/openbdp/bdp/cluster"
	"github.com/openbdp/bdp/edge"
	"github.com/openbdp/bdp/fault"
	"github.com/openbdp/bdp/files"
	bdphttp "github.com/openbdp/bdp/http"
	"github.com/openbdp/bdp/mqtt"
	"github.com/openbdp/bdp/node"
	"github.com/openbdp/bdp/pipeline"
	"github.com/openbdp/bdp/store"
	"github.com/openbdp/bdp/store/pgcluster"
	"github.com/openbdp/bdp/store/sealer"
)

// runServe runs the platform until ctx ends (SIGINT or SIGTERM) or the
// HTTP server fails. It reads in three steps: start the parts, each
// recorded with its stop (node.Parts); run, an oklog/run group
// of what runs until the end (HTTP, the resume of virtual datapoints, the
// signal); then stop the parts in the reverse order of their start,
// within BDP_SHUTDOWN_TIMEOUT, and close the database last.
func runServe(ctx context.Context) error {
	cfg, err := loadConfig(os.Getenv)
	if err != nil {
		return fmt.Errorf("bad configuration:\n%w", err)
	}
	log := newLogger(cfg.LogLevel)
	defer node.TuneGC(os.Getenv).Stop()
	st, closeDB, err := openDatabase(ctx, cfg, log)
	if err != nil {
		return err
	}
	running := &node.Parts{Log: log}
	defer func() {
		running.Stop(cfg.ShutdownTimeout)
		closeDB()
	}()
	app, err := startParts(ctx, cfg, st, running, log)
	if err != nil {
		return err
	}

	var g run.Group
	// The signal: the group runs until ctx ends, or until another member
	// returns first.
	sigCtx, endSig := context.WithCancel(ctx)
	g.Add(func() error { <-sigCtx.Done(); return nil }, func(error) { endSig() })
	// HTTP: serves until the group ends, then drains the requests in
	// flight, within BDP_SHUTDOWN_TIMEOUT.
	g.Add(func() error {
		if err := app.http.Serve(app.listener); err != nil {
			return fmt.Errorf("http server stopped: %w", err)
		}
		return nil
	}, func(error) {
		log.Info("shutting down", slog.Duration("timeout", cfg.ShutdownTimeout))
		sctx, cancel := context.WithTimeout(context.Background(), cfg.ShutdownTimeout)
		defer cancel()
		if err := app.http.Shutdown(sctx); err != nil {
			log.Warn("http shutdown incomplete", slog.Any("error", err))
		}
	})
	// Virtual datapoints resume while the platform serves: a long refill
	// holds up neither requests nor ingestion. The group waits for it to
	// return, before the engine stops.
	resumeCtx, stopResume := context.WithCancel(context.Background())
	g.Add(func() error {
		if app.reconciler != nil {
			// This member's share, as the members change; dropped from
			// the cluster (etcd lost too long), the node exits.
			return app.reconciler.Run(resumeCtx)
		}
		if err := actors.Resume(resumeCtx, app.engine, st, log, cfg.ResumeConcurrency); err != nil && resumeCtx.Err() == nil {
			log.Error("resume virtual datapoints", slog.Any("error", err))
		}
		<-resumeCtx.Done() // done resuming is no reason to shut down
		return nil
	}, func(error) { stopResume() })
	return g.Run()
}

// serving is what runServe's run group needs of the started parts.
type serving struct {
	http     *bdphttp.Server
	listener net.Listener
	engine   *actors.Engine
	// reconciler runs this member's share of the virtual datapoints in
	// cluster mode; nil on one node, which resumes them all.
	reconciler *cluster.Reconciler
}

// startParts starts the platform's parts in the order they depend on each
// other, recording each with its stop in running, and returns the HTTP
// server with its listener (bound, not yet serving) and the engine. On an
// error, what started is in running for the caller to stop.
func startParts(ctx context.Context, cfg config, st *store.Store, running *node.Parts, log *slog.Logger) (serving, error) {
	// The object store of the file routes.
	objects, objectAddrs, stopFiles, err := startFiles(ctx, cfg, log)
	if err != nil {
		return serving{}, err
	}
	running.AddFunc("object store", stopFiles)
	// This process's incarnation: its uploads carry it, and no node's
	// start-up repair releases them while its lock is held.
	incarnation, err := st.StartIncarnation(ctx, log)
	if err != nil {
		return serving{}, fmt.Errorf("file store: %w", err)
	}
	running.AddFunc("incarnation", incarnation.Close)
	fileStore := files.NewService(st, objects, log, files.WithIncarnation(incarnation))
	// Before HTTP serves: what a crash left between the object store and
	// the file rows. A failure is logged, not fatal: every step leaves
	// both consistent, and the next start tries again.
	if rep, err := fileStore.Repair(ctx); err != nil {
		log.Error("file store repair failed; the next start repeats it", slog.Any("error", err), slog.Any("done", rep))
	} else {
		log.Info("file store repaired", slog.Any("report", rep))
	}

	secret := cfg.TokenSecret
	if secret == nil {
		if secret, err = st.Secret(ctx, "token_signing_key", randomBytes32); err != nil {
			return serving{}, fmt.Errorf("load token signing key: %w", err)
		}
	}
	reg := prometheus.NewRegistry()
	reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	// One actor system for the process: the virtual datapoints, edge
	// connections, controls apps and analysis workers each spawn their
	// supervisor in it.
	system := actors.NewSystem(log)

	// The pipeline, which stops after everything that writes to it, once
	// every accepted write is answered, and the engine.
	core, err := node.StartCore(ctx, node.CoreConfig{Store: st, Registry: reg, Log: log, Engine: actors.EngineConfig{System: system,
		TickRate: cfg.TickRate,
		Budget:   actors.Budget{PerDatapoint: cfg.WindowBudgetDatapoint, Node: cfg.WindowBudgetNode, SourceInterval: cfg.WindowSourceInterval}},
		Relay: relayConfig(cfg)}, running)
	if err != nil {
		return serving{}, err
	}
	ingest, router, engine, components := core.Ingest, core.Router, core.Engine, core.Components
	var runner bdphttp.Runner = engine
	var member *cluster.Runner // nil on one node
	var reconciler *cluster.Reconciler
	if cfg.Cluster != nil {
		if member, reconciler, err = joinCluster(cfg, system, engine, st, running, reg, log); err != nil {
			return serving{}, err
		}
		runner = member
	}
	// Closed weeks into compressed chunks, in the background (every node
	// may seal: a week is one node's at a time).
	if cfg.Seal != nil {
		seal, err := sealer.New(st, *cfg.Seal, log, reg)
		if err != nil {
			return serving{}, err
		}
		seal.Start()
		running.AddFunc("sealer", seal.Close)
	}
	if len(cfg.KafkaBrokers) > 0 {
		stopKafka, err := startKafka(cfg, st, ingest, reg, log)
		if err != nil {
			return serving{}, err
		}
		running.AddFunc("kafka ingestion", stopKafka)
	}

	// HTTP and MQTT share the hasher (one bound on concurrent hashes) and
	// the login throttle (one count of failures per address).
	hasher := auth.NewHasher(auth.DefaultHashParams, 4)
	// Failed logins are shared with the other processes on this database
	// (NOTIFY on bdp_login_failures), so the limits hold across nodes.
	loginShare := auth.NewShare(st, log)
	throttleCfg := auth.ThrottleConfig{AccountFailures: cfg.LoginAccountFailures,
		AddressFailures: cfg.LoginAddressFailures, Window: cfg.LoginFailureWindow}
	loginShare.Hook(&throttleCfg)
	throttle, err := auth.NewThrottle(throttleCfg)
	if err != nil {
		return serving{}, err
	}
	// WithoutCancel: sharing goes on while HTTP and MQTT drain; the part
	// stops it, after them.
	running.AddFunc("login failure sharing", loginShare.Start(context.WithoutCancel(ctx), throttle))
	reg.MustRegister(prometheus.NewCounterFunc(prometheus.CounterOpts{Name: "bdp_auth_shared_failures_lost_total",
		Help: "Failed-login notices not shared with the other processes (queue full or database error)."},
		func() float64 { s := loginShare.Stats(); return float64(s.Dropped + s.Failed) }))
	broker, stopMQTT, err := startMQTT(ctx, cfg, mqttParts{store: st, ingest: ingest, router: router, hasher: hasher,
		throttle: throttle, registry: reg, log: log})
	if err != nil {
		return serving{}, err
	}
	running.AddFunc("mqtt", stopMQTT)
	edges, setpoints, stopEdge, err := startEdge(ctx, system, st, broker, ingest, reg, log, cfg.NodeID, member)
	if err != nil {
		return serving{}, err
	}
	running.AddFunc("edge connections", stopEdge)
	// Devices' crash, reload, reset and recovery events into the apps'
	// logs, once, whichever nodes hear them.
	deviceEvents, err := edge.StartEventLog(broker, st, log)
	if err != nil {
		return serving{}, err
	}
	running.AddFunc("device event log", deviceEvents.Close)

	// An external broker keeps passwords of its own: the MQTT user routes
	// hand each new one over (mqtt.External.SetPassword).
	var mqttPasswords bdphttp.MQTTPasswords
	if ext, ok := broker.(*mqtt.External); ok {
		mqttPasswords = ext
	}
	if cfg.EdgeSimulator {
		running.AddFunc("edge simulators", startEdgeSimulators(st, hasher, mqttPasswords, edgeSimBroker(cfg, broker.Addresses()), log))
	}
	stopAnalytics, err := startAnalytics(cfg, system, st, components, reg, log)
	if err != nil {
		return serving{}, err
	}
	running.AddFunc("analytics", stopAnalytics) // runs cut short go back to the queue
	ctrl, stopControls, err := startControls(system, st, components, setpoints, broker, router, reg, log, member == nil)
	if err != nil {
		return serving{}, err
	}
	var apps bdphttp.AppRunner // nil: this node's runtime
	if member != nil {
		// Project commands (setpoint writes, edge status, app runs) asked
		// of a node that does not run the project go to the one that does.
		member.SetProjectParts(cluster.ProjectParts{Setpoints: setpoints, Controls: ctrl, Store: st, Catalog: components})
		apps = member
	}
	if reconciler != nil {
		// A project's edge connection and its apps run on the member that
		// owns the project: synced as the members change, the connection
		// first, so that an app finds it.
		reconciler.After = append(reconciler.After, func(ctx context.Context) {
			if err := edges.Sync(ctx); err != nil && ctx.Err() == nil {
				log.Error("reconcile: edge connections", slog.Any("error", err))
			}
			if err := ctrl.Reconcile(ctx, member.OwnsProject); err != nil && ctx.Err() == nil {
				log.Error("reconcile: controls apps", slog.Any("error", err))
			}
			// MQTT ingestion at the external broker: one member at a time.
			if ext, ok := broker.(*mqtt.External); ok {
				if err := ext.SetIngesting(member.Owns(cluster.IngestIdentity)); err != nil && ctx.Err() == nil {
					log.Error("reconcile: MQTT ingestion", slog.Any("error", err))
				}
			}
		})
	}
	running.AddFunc("controls apps", stopControls)
	// What this node runs, for GET /operator/cluster.
	holdings := func() cluster.Holdings {
		return cluster.Holdings{VirtualDatapoints: len(engine.RunningKeys()), ControlsApps: ctrl.Running(), EdgeConnections: edges.Connections()}
	}
	var view bdphttp.ClusterView = cluster.Single{NodeID: cfg.NodeID, Holdings: holdings}
	if member != nil {
		member.SetHoldings(holdings)
		view = member
	}
	srv, err := bdphttp.New(ctx, bdphttp.Config{
		BodyLimit: cfg.BodyLimit, ImportLimit: cfg.ImportLimit, OperatorToken: cfg.OperatorToken, TokenSecret: secret, TokenTTL: cfg.TokenTTL,
		CredentialTTL: cfg.CredentialTTL, Version: version, MQTTAdminUser: cfg.MQTTAdminUser, MQTTListeners: embeddedListeners(broker),
	}, bdphttp.Deps{Store: st, Ingest: ingest, Engine: engine, Runner: runner, Cluster: view, Log: log, Registry: reg, Hasher: hasher, Throttle: throttle,
		MQTTPasswords: mqttPasswords, Components: components, Setpoints: setpoints, Controls: ctrl, Apps: apps, Files: fileStore})
	if err != nil {
		return serving{}, err
	}
	ln, err := net.Listen("tcp", cfg.HTTPAddr)
	if err != nil {
		return serving{}, fmt.Errorf("listen on BDP_HTTP_ADDR %s: %w", cfg.HTTPAddr, err)
	}
	addrs := broker.Addresses()
	addrs["http"] = ln.Addr().String()
	maps.Copy(addrs, objectAddrs)
	if err := writeAddresses(cfg.DataDir, addrs); err != nil {
		ln.Close()
		return serving{}, err
	}
	log.Info("bdp serving", slog.String("http", "http://"+ln.Addr().String()), slog.Any("mqtt", broker.Addresses()), slog.String("version", version),
		slog.Bool("operator_api", cfg.OperatorToken != ""))
	if has, err := st.HasCompany(ctx); err == nil && !has {
		log.Info("no company yet: create the first one with `"+firstCompanyHint+"` (same BDP_* environment, while bdp serve runs or not); it prints the admin's password",
			slog.String("command", firstCompanyHint))
	}
	return serving{http: srv, listener: ln, engine: engine, reconciler: reconciler}, nil
}

// openDatabase connects to BDP_DATABASE_URL or starts the managed cluster,
// and applies migrations. The returned func closes the pool and stops the
// managed cluster.
func openDatabase(ctx context.Context, cfg config, log *slog.Logger) (*store.Store, func(), error) {
	url := cfg.DatabaseURL
	stopCluster := func() {}
	if url == "" {
		dir, err := filepath.Abs(filepath.Join(cfg.DataDir, "postgres"))
		if err != nil {
			return nil, nil, err
		}
		if err := os.MkdirAll(cfg.DataDir, 0o755); err != nil {
			return nil, nil, fmt.Errorf("create BDP_DATA_DIR: %w", err)
		}
		started := time.Now()
		cl, err := pgcluster.Start(ctx, pgcluster.Options{Dir: dir, Logger: log})
		if err != nil {
			return nil, nil, fmt.Errorf("managed PostgreSQL: %w", err)
		}
		log.Info("managed PostgreSQL running", slog.String("dir", dir), slog.Duration("took", time.Since(started)))
		url = cl.URL()
		// A dead postmaster is restarted on the same port, so the pool's URL
		// stays valid; meanwhile requests answer 503 (http/errors.go).
		superviseCtx, stopSupervising := context.WithCancel(context.Background())
		supervised := make(chan struct{})
		go func() { defer close(supervised); cl.Supervise(superviseCtx, pgcluster.SuperviseOptions{}) }()
		stopCluster = func() {
			stopSupervising()
			<-supervised
			sctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			if err := cl.Stop(sctx); err != nil {
				log.Error("stop managed PostgreSQL", slog.Any("error", err))
			}
		}
	}
	st, err := store.Open(ctx, url)
	if err != nil {
		stopCluster()
		return nil, nil, err
	}
	v, err := st.Migrate(ctx)
	if err != nil {
		st.Close()
		stopCluster()
		return nil, nil, err
	}
	log.Info("database ready", slog.Int64("schema_version", v))
	return st, func() {
		// The pool waits for its connections to come back; one that a part
		// left behind at shutdown holds is cut by the cluster's stop.
		closed := make(chan struct{})
		go func() { defer close(closed); st.Close() }()
		select {
		case <-closed:
		case <-time.After(10 * time.Second):
			log.Error("database connections still in use after 10 s; closing regardless")
		}
		stopCluster()
	}, nil
}

func runMigrate(ctx context.Context) error {
	cfg, err := loadConfig(os.Getenv)
	if err != nil {
		return fmt.Errorf("bad configuration:\n%w", err)
	}
	_, closeDB, err := openDatabase(ctx, cfg, newLogger(cfg.LogLevel))
	if err != nil {
		return err
	}
	closeDB()
	return nil
}

// writeAddresses records the chosen listen addresses (decisions.md 1) so
// scripts can find a server started on port 0.
func writeAddresses(dataDir string, addrs map[string]string) error {
	if err := os.MkdirAll(dataDir, 0o755); err != nil {
		return fmt.Errorf("create BDP_DATA_DIR: %w", err)
	}
	b, err := json.MarshalIndent(addrs, "", "  ")
	if err != nil {
		return err
	}
	tmp := filepath.Join(dataDir, "addresses.json.tmp")
	if err := os.WriteFile(tmp, b, 0o644); err != nil {
		return fmt.Errorf("write addresses.json: %w", err)
	}
	return os.Rename(tmp, filepath.Join(dataDir, "addresses.json"))
}

// startKafka consumes the ingestion topic into the pipeline
// (decisions.md 9). The returned func stops consuming; batches not yet
// stored stay uncommitted and are consumed again on the next start.
func startKafka(cfg config, st *store.Store, sink pipeline.Sink, reg prometheus.Registerer, log *slog.Logger) (func(), error) {
	exists := func(ctx context.Context, projectID int64) (bool, error) {
		_, err := st.ProjectCompany(ctx, projectID)
		if fault.Is(err, fault.NotFound) {
			return false, nil
		}
		return err == nil, err
	}
	k, err := pipeline.NewKafkaIngest(pipeline.KafkaConfig{Brokers: cfg.KafkaBrokers, Topic: cfg.KafkaTopic, GroupID: cfg.KafkaGroup, ClientID: "bdp-" + cfg.NodeID},
		sink, exists, log, reg)
	if err != nil {
		return nil, fmt.Errorf("kafka ingestion: %w", err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		if err := k.Run(ctx); err != nil {
			log.Error("kafka ingestion stopped", slog.Any("error", err))
		}
	}()
	log.Info("kafka ingestion running", slog.Any("brokers", cfg.KafkaBrokers), slog.String("topic", cfg.KafkaTopic))
	return func() { cancel(); <-done }, nil
}
