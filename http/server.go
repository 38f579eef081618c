// Package http serves the /v2 API, the operator API, the OpenAPI document
// and the Swagger UI with fiber.
//
// Handlers are plain functions returning a result or an error
// (handler.go); one wrapper adds authentication, authorization and the
// envelope, and one error handler (errors.go) turns error kinds into
// status codes. Every /v2 route is declared once in routes.go: the router,
// the endpoint catalog and the OpenAPI document all come from that list.
package http

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"time"

	"github.com/gofiber/fiber/v2"
	"github.com/gofiber/fiber/v2/middleware/recover"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/openbdp/bdp/actors"
	"github.com/openbdp/bdp/analytics"
	"github.com/openbdp/bdp/auth"
	"github.com/openbdp/bdp/cluster"
	"github.com/openbdp/bdp/controls"
	"github.com/openbdp/bdp/files"
	"github.com/openbdp/bdp/http/ui"
	"github.com/openbdp/bdp/pipeline"
	"github.com/openbdp/bdp/rbac"
	"github.com/openbdp/bdp/store"
)

// Config is what the HTTP layer needs from the platform configuration.
type Config struct {
	BodyLimit     int           // bytes; default 32 MiB
	ImportLimit   int           // bytes of a CSV import upload; default 2 GiB
	OperatorToken string        // empty disables the operator API
	TokenSecret   []byte        // signs bearer tokens
	TokenTTL      time.Duration // default 1 h
	CredentialTTL time.Duration // verified-credentials cache; 0 disables it
	ReadTimeout   time.Duration // request headers (and a body read whole) must arrive within it, else 408; default 60 s
	HashParams    auth.HashParams
	Version       string
	LoginThrottle auth.ThrottleConfig // failed logins tolerated; zero fields take auth's defaults
	// MQTTAdminUser is the external broker's admin username
	// (BDP_MQTT_ADMIN_USER); no MQTT user may take it.
	MQTTAdminUser string
	// MQTTListeners are the embedded broker's listen addresses by
	// addresses.json key (mqtt, mqtt_ws, mqtt_tls, mqtt_wss), answered by
	// GET /v2/meta/mqtt; nil with an external broker.
	MQTTListeners map[string]string

	// extraRoutes lets tests mount routes the API does not have, such as
	// one that panics; they get no catalog id.
	extraRoutes []*route
}

// Server is the HTTP face of the platform. Create it with New, run it with
// Serve, stop it with Shutdown.
type Server struct {
	cfg        Config
	log        *slog.Logger
	store      *store.Store
	ingest     Ingest
	engine     Engine
	runner     Runner
	cluster    ClusterView
	controls   *controls.Runtime // nil: apps cannot run on this node (run answers 503)
	apps       AppRunner
	app        *fiber.App
	catalog    *rbac.Catalog
	routes     []*route // the /v2 routes with their persisted ids
	hasher     *auth.Hasher
	mqttPW     MQTTPasswords // nil: the embedded broker
	components *analytics.Catalog
	setpoints  Setpoints      // nil: setpoint routes answer 503
	files      *files.Service // nil: the file routes answer 503
	tokens     *auth.Tokens
	creds      *auth.CredentialCache
	authz      *principalCache
	metrics    *metrics
	openapi    []byte
	allow      allowIndex // the methods of every routed path, for 405
	// recomputes runs the exact recomputes (vdp_recompute.go); Shutdown
	// cancels them.
	recomputes *actors.RecomputeJobs

	// throttle refuses password logins after too many failures.
	throttle *loginThrottle
	// stopCredentialsListener ends startCredentialsListener's goroutine.
	stopCredentialsListener func()
}

// Deps are the parts of the platform the HTTP layer talks to.
type Deps struct {
	Store  *store.Store
	Ingest Ingest // where uploads go: the node's pipeline
	Engine Engine // builds virtual datapoints' definitions
	// Runner runs them; nil: Engine, which must then be a Runner too
	// (*actors.Engine is).
	Runner Runner
	// Cluster answers GET /operator/cluster: *cluster.Runner in cluster
	// mode; nil: this one node, counting the virtual datapoints it runs.
	Cluster  ClusterView
	Log      *slog.Logger
	Registry prometheus.Registerer
	// Hasher and Throttle, when set, are shared with the MQTT broker:
	// one bound on concurrent hashes, one count of failed logins. nil
	// builds the server's own from Config.
	Hasher   *auth.Hasher
	Throttle *auth.Throttle
	// MQTTPasswords, when set, takes every new or changed MQTT password:
	// an external broker (BDP_MQTT_EXTERNAL) keeps passwords of its own
	// and can only get them while the request has them. nil with the
	// embedded broker, which verifies against mqtt_users.
	MQTTPasswords MQTTPasswords
	// Components is the analytics catalog as persisted at start
	// (analytics.LoadCatalog).
	Components *analytics.Catalog
	// Setpoints writes setpoints through the edge devices (edge.Setpoints);
	// nil: the setpoint routes answer 503.
	Setpoints Setpoints
	// Controls runs controls apps (controls.Runtime); nil answers 503 to
	// a run.
	Controls *controls.Runtime
	// Apps starts and stops them: nil, on Controls here; in cluster mode
	// cluster.Runner, on the node that runs the app's project.
	Apps AppRunner
	// Files is the document store (company and project files); nil: the
	// file routes answer 503.
	Files *files.Service
}

// AppRunner starts and stops controls apps (controls.Runtime.StartApp,
// controls.StopApp) where they run.
type AppRunner interface {
	StartApp(ctx context.Context, a store.ControlsApp, p controls.Plan, by string) (store.ControlsApp, bool, error)
	StopApp(ctx context.Context, a store.ControlsApp, by string) (store.ControlsApp, bool, error)
}

// localApps runs the apps on this node's runtime.
type localApps struct {
	rt *controls.Runtime // nil: none runs here (stops still record Stopped)
	st *store.Store
}

func (l localApps) StartApp(ctx context.Context, a store.ControlsApp, p controls.Plan, by string) (store.ControlsApp, bool, error) {
	return l.rt.StartApp(ctx, a, p, by)
}

func (l localApps) StopApp(ctx context.Context, a store.ControlsApp, by string) (store.ControlsApp, bool, error) {
	return controls.StopApp(ctx, l.st, l.rt, a, by)
}

// ClusterView tells what the platform's nodes hold (cluster.Runner,
// cluster.Single).
type ClusterView interface {
	View(ctx context.Context) (cluster.Status, error)
}

// MQTTPasswords hands an MQTT user's password to a broker that keeps its
// own (mqtt.External); an error answers the request (the password may
// not work there).
type MQTTPasswords interface {
	SetPassword(ctx context.Context, u store.MQTTUser, password string) error
}

// Ingest is the pipeline as the HTTP layer uses it.
type Ingest interface {
	pipeline.Sink
	ForgetProject(projectID int64) // a deleted project's datapoints are gone
}

// New builds the server: it persists the endpoint catalog (giving new
// routes their ids and extending admin roles) and mounts every route.
func New(ctx context.Context, cfg Config, deps Deps) (*Server, error) {
	st, log, reg := deps.Store, deps.Log, deps.Registry
	if st == nil || log == nil || reg == nil || deps.Ingest == nil || deps.Engine == nil || deps.Components == nil {
		return nil, errors.New("http: Store, Ingest, Engine, Components, Log and Registry are required")
	}
	runner := deps.Runner
	if runner == nil {
		local, ok := deps.Engine.(Runner)
		if !ok {
			return nil, errors.New("http: Runner is required when Engine runs no virtual datapoint")
		}
		runner = local
	}
	var apps AppRunner = localApps{rt: deps.Controls, st: st}
	if deps.Apps != nil {
		apps = deps.Apps
	}
	view := deps.Cluster
	if view == nil {
		view = cluster.Single{NodeID: "single", Holdings: func() cluster.Holdings {
			var h cluster.Holdings
			if e, ok := runner.(interface{ RunningKeys() []actors.Key }); ok {
				h.VirtualDatapoints = len(e.RunningKeys())
			}
			return h
		}}
	}
	if cfg.BodyLimit <= 0 {
		cfg.BodyLimit = 32 << 20
	}
	if cfg.ImportLimit <= 0 {
		cfg.ImportLimit = 2 << 30
	}
	if cfg.ReadTimeout <= 0 {
		cfg.ReadTimeout = 60 * time.Second
	}
	if cfg.TokenTTL <= 0 {
		cfg.TokenTTL = time.Hour
	}
	if len(cfg.TokenSecret) < 32 {
		return nil, errors.New("token secret must be at least 32 bytes")
	}
	if cfg.HashParams == (auth.HashParams{}) {
		cfg.HashParams = auth.DefaultHashParams
	}
	s := &Server{
		cfg:        cfg,
		log:        log,
		store:      st,
		ingest:     deps.Ingest,
		engine:     deps.Engine,
		runner:     runner,
		cluster:    view,
		controls:   deps.Controls,
		apps:       apps,
		hasher:     deps.Hasher,
		mqttPW:     deps.MQTTPasswords,
		components: deps.Components,
		setpoints:  deps.Setpoints,
		files:      deps.Files,
		tokens:     auth.NewTokens(cfg.TokenSecret, cfg.TokenTTL, nil),
		creds:      auth.NewCredentialCache(randomKey(), cfg.CredentialTTL, nil),
		recomputes: actors.NewRecomputeJobs(st, log),
	}
	if s.hasher == nil {
		s.hasher = auth.NewHasher(cfg.HashParams, 4)
	}
	var err error
	if s.metrics, err = newMetrics(reg); err != nil {
		return nil, err
	}
	if s.throttle, err = newLoginThrottle(cfg.LoginThrottle, deps.Throttle, reg); err != nil {
		return nil, err
	}
	if err := s.syncCatalog(ctx); err != nil {
		return nil, err
	}
	s.authz = newPrincipalCache(st, s.catalog)
	if s.openapi, err = s.openAPIDocument(); err != nil {
		return nil, fmt.Errorf("build OpenAPI document: %w", err)
	}
	s.app = fiber.New(fiber.Config{
		// Bodies stream, so an import never sits in memory; limitBody
		// (handler.go) holds every other route to BodyLimit.
		StreamRequestBody:            true,
		DisablePreParseMultipartForm: true, // else fasthttp spools a multipart upload before the handler runs
		BodyLimit:                    max(cfg.BodyLimit, cfg.ImportLimit),
		ErrorHandler:                 s.handleError,
		DisableStartupMessage:        true,
		ReadTimeout:                  cfg.ReadTimeout,
		ReadBufferSize:               readBufferSize,
		IdleTimeout:                  120 * time.Second,
		AppName:                      "bdp",
		// fasthttp reuses its buffers for the next request: without this,
		// a path or query value kept after the answer (an actor's
		// dataPointID, a metric label) silently changes under its holder.
		Immutable: true,
	})
	// Requests fasthttp refuses before routing get the envelope too.
	s.app.Server().ErrorHandler = s.transportError
	s.app.Use(s.requestID, s.closeUnreadBody, s.observe, recover.New(recover.Config{EnableStackTrace: true,
		StackTraceHandler: s.logPanic}), limitURI)
	s.mount()
	s.stopCredentialsListener = s.startCredentialsListener()
	return s, nil
}

// syncCatalog persists the declared /v2 routes and learns their ids.
func (s *Server) syncCatalog(ctx context.Context) error {
	s.routes = v2Routes(s)
	pageLists(s.routes)
	decls := make([]store.Endpoint, len(s.routes))
	for i, r := range s.routes {
		decls[i] = store.Endpoint{Method: r.Method, Path: r.Path, Tag: r.Tag}
	}
	eps, err := s.store.SyncEndpoints(ctx, decls)
	if err != nil {
		return fmt.Errorf("persist endpoint catalog: %w", err)
	}
	for i, e := range eps {
		s.routes[i].ID = e.ID
	}
	s.catalog = rbac.NewCatalog(eps)
	return nil
}

// mount registers every route with fiber, then the catch-all 405 or 404.
func (s *Server) mount() {
	s.app.Get("/healthz", func(c *fiber.Ctx) error { return c.JSON(fiber.Map{"status": "ok"}) })
	s.app.Get("/readyz", s.ready)
	s.app.Get("/metrics", s.metrics.handler())
	ui.Register(s.app)
	for _, p := range []string{"/healthz", "/readyz", "/metrics", "/ui", "/ui/*"} {
		s.allow.add(fiber.MethodGet, p)
	}
	for _, routes := range [][]*route{s.routes, operatorRoutes(s), s.cfg.extraRoutes} {
		for _, r := range routes {
			s.app.Add(r.Method, fiberPath(r.Path), s.wrap(r))
			s.allow.add(r.Method, r.Path)
		}
	}
	s.app.Use(s.notRouted)
}

func (s *Server) ready(c *fiber.Ctx) error {
	ctx, cancel := context.WithTimeout(c.UserContext(), 2*time.Second)
	defer cancel()
	if err := s.store.Ping(ctx); err != nil {
		return c.Status(fiber.StatusServiceUnavailable).JSON(fiber.Map{"status": "database unreachable"})
	}
	return c.JSON(fiber.Map{"status": "ready"})
}

// Serve answers requests on ln until Shutdown.
func (s *Server) Serve(ln net.Listener) error { return s.app.Listener(ln) }

// Shutdown stops accepting connections and waits for requests in flight,
// then cancels the running recomputes and waits for them, at most until
// ctx ends.
func (s *Server) Shutdown(ctx context.Context) error {
	err := s.app.ShutdownWithContext(ctx)
	s.stopCredentialsListener()
	return errors.Join(err, s.recomputes.Shutdown(ctx))
}

// Catalog returns the persisted endpoint catalog.
func (s *Server) Catalog() *rbac.Catalog { return s.catalog }
