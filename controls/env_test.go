package controls_test

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/openbdp/bdp/actors"
	"github.com/openbdp/bdp/analytics"
	"github.com/openbdp/bdp/auth"
	"github.com/openbdp/bdp/clock"
	"github.com/openbdp/bdp/controls"
	"github.com/openbdp/bdp/edge"
	"github.com/openbdp/bdp/edge/edgetest"
	"github.com/openbdp/bdp/mqtt"
	"github.com/openbdp/bdp/pipeline"
	"github.com/openbdp/bdp/store"
	"github.com/openbdp/bdp/store/pgcluster"
	"github.com/openbdp/bdp/store/storetest"
)

// The package's tests run against a real PostgreSQL cluster, with a fresh
// database per test, and write through the real setpoint path: the
// embedded MQTT broker, the edge connections, the setpoint writer and a
// test device (edgetest) with a priority array per datapoint.
var testCluster *pgcluster.Cluster

func TestMain(m *testing.M) {
	pgcluster.RunTests(m, func(c *pgcluster.Cluster) { testCluster = c })
}

type env struct {
	t       *testing.T
	st      *store.Store
	broker  *edgetest.Broker
	hasher  *auth.Hasher
	m       *edge.Manager
	sp      *edge.Setpoints
	router  *pipeline.Router
	batcher *pipeline.Batcher
	catalog *analytics.Catalog
	clock   *clock.Fake
	log     *slog.Logger
}

func newEnv(t *testing.T) *env {
	t.Helper()
	return newEnvOn(t, false)
}

// newEnvOn is newEnv on the embedded broker, or with mosquitto on a real
// Mosquitto 2 that bdp reaches as an external broker.
func newEnvOn(t *testing.T, mosquitto bool) *env {
	t.Helper()
	ctx := context.Background()
	st, _ := storetest.Open(t, testCluster)
	reg := prometheus.NewRegistry()
	e := &env{t: t, st: st, hasher: auth.NewHasher(auth.HashParams{Time: 1, Memory: 1024, Threads: 1}, 4),
		clock: clock.NewFake(time.Date(2026, 11, 23, 7, 0, 0, 0, time.UTC)), // a Monday
		log:   slog.New(slog.NewTextHandler(io.Discard, nil))}
	throttle, err := auth.NewThrottle(auth.ThrottleConfig{})
	if err != nil {
		t.Fatal(err)
	}
	e.router = pipeline.NewRouter()
	e.batcher, err = pipeline.NewBatcher(pipeline.BatcherConfig{}, st, e.router, reg)
	if err != nil {
		t.Fatal(err)
	}
	go e.batcher.Run()
	e.broker = edgetest.StartBroker(t, mosquitto, mqtt.Deps{Store: st, Hasher: e.hasher, Throttle: throttle, Log: e.log, Registry: reg}, e.batcher)
	e.m, err = edge.NewManager(edge.Config{Broker: e.broker, Presence: e.broker.Presence(), Store: st, Sink: e.batcher, Log: e.log,
		Registry: reg, Tick: 50 * time.Millisecond, OfflineAfter: 400 * time.Millisecond, OperationTimeout: 1500 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	if e.sp, err = edge.NewSetpoints(ctx, e.m); err != nil {
		t.Fatal(err)
	}
	if e.catalog, err = analytics.LoadCatalog(ctx, st); err != nil {
		t.Fatal(err)
	}
	runCtx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); e.m.Run(runCtx) }()
	t.Cleanup(func() {
		cancel()
		<-done
		e.sp.Close()
		e.m.Close()
		cctx, stop := context.WithTimeout(context.Background(), 10*time.Second)
		defer stop()
		_ = e.broker.Close(cctx)
		e.batcher.Stop()
	})
	return e
}

// runtime starts a controls runtime writing through w (nil: the real
// setpoint writer) on the env's clock.
func (e *env) runtime(w edge.Writer) *controls.Runtime {
	e.t.Helper()
	if w == nil {
		w = e.sp
	}
	rt, err := controls.New(controls.Config{Store: e.st, Catalog: e.catalog, Writer: w, Device: e.sp, Router: e.router,
		History: actors.StoreHistory{Store: e.st}, Log: e.log, Clock: e.clock})
	if err != nil {
		e.t.Fatal(err)
	}
	e.t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		rt.Shutdown(ctx)
	})
	return rt
}

// project makes a project with setpoint writing enabled, edge
// credentials and a connected test device, and the datapoints given,
// each bounded to [15, 25].
func (e *env) project(name string, datapoints ...string) (int64, *edgetest.Device) {
	e.t.Helper()
	ctx := context.Background()
	pid := edgetest.Project(e.t, e.st, name, 0, datapoints, nil)
	h, err := e.hasher.Hash(ctx, "device-secret")
	if err != nil {
		e.t.Fatal(err)
	}
	u, err := e.st.PutEdgeCredentials(ctx, pid, h)
	if err != nil {
		e.t.Fatal(err)
	}
	if err := e.broker.SetEdgePassword(ctx, u, "device-secret"); err != nil {
		e.t.Fatal(err)
	}
	if err := e.m.Sync(ctx); err != nil {
		e.t.Fatal(err)
	}
	d := edgetest.Start(e.t, e.broker.Addr, pid, "device-secret", 100*time.Millisecond)
	e.waitFor("device online", func() bool { return e.m.Status(pid).Online })
	return pid, d
}

// component maps a catalog component into the project with its pins
// (pin alphanumeric id -> dataPointID) and attributes (key -> value).
func (e *env) component(project int64, alnum string, pins, attrs map[string]string) int64 {
	e.t.Helper()
	ctx := context.Background()
	var comp store.CatalogComponent
	for _, c := range e.catalog.Components() {
		if c.AlphanumericID == alnum {
			comp, _ = e.catalog.Component(c.ID)
		}
	}
	cip, err := e.st.CreateComponentInProject(ctx, project, comp.ID, store.ComponentInProjectNames{})
	if err != nil {
		e.t.Fatal(err)
	}
	for _, p := range comp.Pins {
		if dp, ok := pins[p.AlphanumericID]; ok {
			if err := e.st.MapPin(ctx, project, cip.ID, p.ID, dp, store.MapCreate); err != nil {
				e.t.Fatal(err)
			}
		}
	}
	for _, a := range comp.Attributes {
		if v, ok := attrs[a.Key]; ok {
			if err := e.st.SetAttribute(ctx, project, cip.ID, a.ID, v, store.MapCreate); err != nil {
				e.t.Fatal(err)
			}
		}
	}
	return cip.ID
}

// app creates an app and answers its plan for a run; err is Prepare's.
func (e *env) app(project, cip int64, algorithm, component string) (store.ControlsApp, controls.Plan, error) {
	e.t.Helper()
	ctx := context.Background()
	cfg, err := controls.ParseConfig(algorithm, component, nil, controls.DefaultAliveTimeout, true)
	if err != nil {
		e.t.Fatal(err)
	}
	raw, _ := json.Marshal(cfg)
	a, err := e.st.CreateControlsApp(ctx, store.ControlsApp{ProjectID: project, ComponentInProjectID: cip, Algorithm: algorithm,
		Name: algorithm, Config: raw}, "created by the test")
	if err != nil {
		e.t.Fatal(err)
	}
	p, err := controls.Prepare(ctx, e.st, e.catalog, a, true)
	return a, p, err
}

// watchDevices has rt follow the devices' heartbeats until the test ends.
func (e *env) watchDevices(rt *controls.Runtime) {
	e.t.Helper()
	unwatch, err := rt.WatchDevices(e.broker)
	if err != nil {
		e.t.Fatal(err)
	}
	e.t.Cleanup(unwatch)
}

// roomSchedule starts, in a new project, a schedule app on a room whose
// setpoint pin is mapped to datapoint sp, and waits for its default (17)
// in the device's priority array.
func (e *env) roomSchedule(rt *controls.Runtime, name string) (int64, *edgetest.Device, store.ControlsApp) {
	e.t.Helper()
	p, dev := e.project(name, "sp")
	room := e.component(p, "room", map[string]string{"temperature_setpoint": "sp"},
		map[string]string{"setpoint_schedule": weekdaySchedule, "setpoint_schedule_default": "17"})
	app, plan, err := e.app(p, room, "schedule", "room")
	if err != nil {
		e.t.Fatal(err)
	}
	e.start(rt, plan)
	e.waitFor("17 written", func() bool { return is(slot(dev, "sp", 13), 17) })
	return p, dev, app
}

// start moves an app to Starting, as the run route does, and starts it.
func (e *env) start(rt *controls.Runtime, p controls.Plan) {
	e.t.Helper()
	ctx := context.Background()
	a, changed, err := e.st.ChangeControlsApp(ctx, p.App.ProjectID, p.App.ID, store.AppChange{Code: store.StatusStarting,
		Message: "started by the test", Targets: p.Targets()})
	if err != nil || !changed {
		e.t.Fatalf("start %s: changed %v, %v", p.App.ID, changed, err)
	}
	p.App = a
	if err := rt.Start(ctx, p); err != nil {
		e.t.Fatal(err)
	}
}

func (e *env) status(project int64, id string) int {
	e.t.Helper()
	a, err := e.st.ControlsApp(context.Background(), project, id)
	if err != nil {
		e.t.Fatal(err)
	}
	return a.StatusCode
}

// logText is an app's log, oldest first, one message a line.
func (e *env) logText(id string) string {
	e.t.Helper()
	logs, _, err := e.st.ControlsAppLogs(context.Background(), id, store.AppLogQuery{Ascending: true, Page: 1, PerPage: 1000})
	if err != nil {
		e.t.Fatal(err)
	}
	var lines []string
	for _, l := range logs {
		lines = append(lines, l.Message)
	}
	return strings.Join(lines, "\n")
}

func (e *env) waitFor(what string, cond func() bool) {
	e.t.Helper()
	edgetest.WaitFor(e.t, what, cond)
}

// slot is the device's value of dp at priority (nil: empty).
func slot(d *edgetest.Device, dp string, priority int) *float64 {
	return d.PriorityArray(dp)[priority-1]
}

func is(v *float64, want float64) bool { return v != nil && *v == want }
