package edge_test

import (
	"context"
	"io"
	"log/slog"
	"strconv"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/openbdp/bdp/auth"
	"github.com/openbdp/bdp/edge"
	"github.com/openbdp/bdp/edge/edgetest"
	"github.com/openbdp/bdp/mqtt"
	"github.com/openbdp/bdp/pipeline"
	"github.com/openbdp/bdp/store"
	"github.com/openbdp/bdp/store/storetest"
)

// env is the embedded broker, the pipeline, the edge connections (told
// by the broker's sessions when a device leaves, as in bdp serve) and the
// setpoint writer over a real PostgreSQL, with short time-outs.
type env struct {
	t      *testing.T
	st     *store.Store
	url    string // the test's database, for checks in SQL
	reg    *prometheus.Registry
	broker *edgetest.Broker
	hasher *auth.Hasher
	m      *edge.Manager
	sp     *edge.Setpoints
	sink   pipeline.Sink // the pipeline, for more managers (node)
	log    *slog.Logger
}

// Test timing: heartbeats every 100 ms, offline after 400 ms, operations
// fail after 1.5 s.
const (
	testAlive     = 100 * time.Millisecond
	testOffline   = 400 * time.Millisecond
	testOperation = 1500 * time.Millisecond
)

func newEnv(t *testing.T) *env {
	t.Helper()
	return newEnvOn(t, false)
}

// onBothBrokers runs test on the embedded broker and on Mosquitto.
func onBothBrokers(t *testing.T, test func(t *testing.T, e *env)) {
	for _, b := range []struct {
		name      string
		mosquitto bool
	}{{"embedded", false}, {"mosquitto", true}} {
		t.Run(b.name, func(t *testing.T) { test(t, newEnvOn(t, b.mosquitto)) })
	}
}

// newEnvOn is newEnv on the embedded broker, or with mosquitto on a real
// Mosquitto 2 (mosquittotest) that bdp reaches as an external broker;
// there only the heartbeat tells that a device left.
func newEnvOn(t *testing.T, mosquitto bool) *env {
	t.Helper()
	ctx := context.Background()
	st, url := storetest.Open(t, testCluster)
	e := &env{t: t, st: st, url: url, reg: prometheus.NewRegistry(), hasher: auth.NewHasher(auth.HashParams{Time: 1, Memory: 1024, Threads: 1}, 4)}
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	throttle, err := auth.NewThrottle(auth.ThrottleConfig{})
	if err != nil {
		t.Fatal(err)
	}
	router := pipeline.NewRouter()
	batcher, err := pipeline.NewBatcher(pipeline.BatcherConfig{}, st, router, e.reg)
	if err != nil {
		t.Fatal(err)
	}
	go batcher.Run()
	e.broker = edgetest.StartBroker(t, mosquitto, mqtt.Deps{Store: st, Hasher: e.hasher, Throttle: throttle, Log: log, Registry: e.reg}, batcher)
	e.sink, e.log = batcher, log
	cfg := edge.Config{Broker: e.broker, Presence: e.broker.Presence(), Store: st, Sink: batcher, Log: log, Registry: e.reg,
		Tick: 50 * time.Millisecond, OfflineAfter: testOffline, OperationTimeout: testOperation}
	if e.m, err = edge.NewManager(cfg); err != nil {
		t.Fatal(err)
	}
	if e.sp, err = edge.NewSetpoints(ctx, e.m); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		e.sp.Close()
		e.m.Close()
		cctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		_ = e.broker.Close(cctx)
		batcher.Stop()
	})
	return e
}

// project makes a company and a project with setpoint writing enabled
// (maxPriority as given), a datapoint "sp" bounded to [15, 25] and one
// "unbounded".
func (e *env) project(name string, maxPriority int) int64 {
	e.t.Helper()
	return edgetest.Project(e.t, e.st, name, maxPriority, []string{"sp"}, []string{"unbounded"})
}

// device gives project p edge credentials, starts its connection and
// connects a test device that sends heartbeats; it returns once the
// connection sees the device online.
func (e *env) device(p int64) *edgetest.Device {
	e.t.Helper()
	ctx := context.Background()
	e.credentials(p)
	if err := e.m.Sync(ctx); err != nil {
		e.t.Fatal(err)
	}
	d := edgetest.Start(e.t, e.broker.Addr, p, "device-secret", testAlive)
	e.waitFor("device online", func() bool { return e.m.Status(p).Online })
	return d
}

// credentials gives project p edge credentials (password
// "device-secret") and starts no connection.
func (e *env) credentials(p int64) {
	e.t.Helper()
	ctx := context.Background()
	h, err := e.hasher.Hash(ctx, "device-secret")
	if err != nil {
		e.t.Fatal(err)
	}
	u, err := e.st.PutEdgeCredentials(ctx, p, h)
	if err != nil {
		e.t.Fatal(err)
	}
	if err := e.broker.SetEdgePassword(ctx, u, "device-secret"); err != nil {
		e.t.Fatal(err)
	}
}

func (e *env) waitFor(what string, cond func() bool) {
	e.t.Helper()
	edgetest.WaitFor(e.t, what, cond)
}

// operation waits until an acked operation leaves initialized and
// requested (written, reported or failed), and returns it with its log.
func (e *env) operation(ref string) (store.SetpointOperation, []store.SetpointLogEntry) {
	e.t.Helper()
	var (
		op  store.SetpointOperation
		log []store.SetpointLogEntry
		err error
	)
	e.waitFor("operation "+ref+" to finish", func() bool {
		op, log, err = e.st.SetpointOperation(context.Background(), ref)
		if err != nil {
			e.t.Fatal(err)
		}
		return op.State == edge.StateWritten || op.State == edge.StateReported || op.State == edge.StateFailed
	})
	return op, log
}

// count runs a counting query on the test's database.
func (e *env) count(query string, args ...any) int {
	e.t.Helper()
	conn, err := pgx.Connect(context.Background(), e.url)
	if err != nil {
		e.t.Fatal(err)
	}
	defer conn.Close(context.Background())
	var n int
	if err := conn.QueryRow(context.Background(), query, args...).Scan(&n); err != nil {
		e.t.Fatal(err)
	}
	return n
}

func f(v float64) *float64 { return &v }

// metric reads a gauge or counter; project 0 reads one without a
// project_id label; labels are further name, value pairs.
func (e *env) metric(name string, project int64, labels ...string) float64 {
	e.t.Helper()
	if project != 0 {
		labels = append(labels, "project_id", strconv.FormatInt(project, 10))
	}
	mfs, err := e.reg.Gather()
	if err != nil {
		e.t.Fatal(err)
	}
	for _, mf := range mfs {
		if mf.GetName() != name {
			continue
		}
	next:
		for _, m := range mf.GetMetric() {
			have := map[string]string{}
			for _, l := range m.GetLabel() {
				have[l.GetName()] = l.GetValue()
			}
			for i := 0; i+1 < len(labels); i += 2 {
				if have[labels[i]] != labels[i+1] {
					continue next
				}
			}
			if m.GetGauge() != nil {
				return m.GetGauge().GetValue()
			}
			return m.GetCounter().GetValue()
		}
	}
	return 0
}
