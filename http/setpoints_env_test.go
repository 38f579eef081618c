package http

import (
	"context"
	"fmt"
	"net/url"
	"testing"
	"time"

	"github.com/openbdp/bdp/actors"
	"github.com/openbdp/bdp/auth"
	"github.com/openbdp/bdp/edge"
	"github.com/openbdp/bdp/edge/edgetest"
	"github.com/openbdp/bdp/edge/sim"
	"github.com/openbdp/bdp/mqtt"
)

// setpointEnv is a server with the embedded MQTT broker and the edge
// connections, so setpoints travel to a simulated device (bdp edge-sim's
// simulator) over a real MQTT connection.
type setpointEnv struct {
	*testEnv
	broker *mqtt.Embedded
	m      *edge.Manager
}

func newSetpointEnv(t *testing.T) *setpointEnv {
	t.Helper()
	se := &setpointEnv{}
	se.testEnv = startTestEnvDeps(t, testCluster.TestDatabase(t), func(*actors.EngineConfig) {}, func(d *Deps) func(context.Context) {
		ctx := context.Background()
		d.Controls = nil // no app runs here: a run answers 503
		d.Hasher = auth.NewHasher(fastHash, 4)
		throttle, err := auth.NewThrottle(auth.ThrottleConfig{})
		if err != nil {
			t.Fatal(err)
		}
		d.Throttle = throttle
		broker, err := mqtt.StartEmbedded(ctx, mqtt.Config{Addr: "127.0.0.1:0", CredentialTTL: time.Minute},
			mqtt.Deps{Store: d.Store, Hasher: d.Hasher, Throttle: throttle, Log: d.Log, Registry: d.Registry})
		if err != nil {
			t.Fatal(err)
		}
		m, err := edge.NewManager(edge.Config{Broker: broker, Store: d.Store, Sink: d.Ingest, Log: d.Log, Registry: d.Registry,
			Tick: 50 * time.Millisecond, OfflineAfter: 600 * time.Millisecond, OperationTimeout: 2 * time.Second})
		if err != nil {
			t.Fatal(err)
		}
		sp, err := edge.NewSetpoints(ctx, m)
		if err != nil {
			t.Fatal(err)
		}
		runCtx, stopRun := context.WithCancel(context.Background())
		ran := make(chan struct{})
		go func() { defer close(ran); m.Run(runCtx) }()
		d.Setpoints = sp
		se.broker, se.m = broker, m
		return func(ctx context.Context) {
			stopRun()
			<-ran
			sp.Close()
			m.Close()
			_ = broker.Close(ctx)
		}
	})
	return se
}

// writableProject makes a project of c with setpoint writing enabled,
// datapoints "sp" (bounds [15, 25]) and "unbounded" (tag units=degC), and
// a simulated edge device that is online when this returns.
func (e *setpointEnv) writableProject(c company) int64 {
	e.t.Helper()
	op := bearer(testOperatorToken)
	pid, _ := e.newProject(c.Admin)
	e.do("PUT", fmt.Sprintf("/operator/projects/%d/settings", pid), op, map[string]any{"setpoint_writing_enabled": true}).want(e.t, 200)
	for _, dp := range []string{"sp", "unbounded"} {
		e.do("PUT", fmt.Sprintf("/operator/projects/%d/datapoints/%s/tags", pid, dp), op, []map[string]any{{"key": "units", "value": "degC"}}).want(e.t, 200)
	}
	e.do("PUT", fmt.Sprintf("/v2/datapoint?project_id=%d&dataPointID=sp", pid), c.Admin,
		map[string]any{"setpoint_min_value": 15, "setpoint_max_value": 25}).want(e.t, 200)
	creds := e.do("POST", fmt.Sprintf("/operator/projects/%d/edge", pid), op, nil).want(e.t, 201).resource(e.t)
	s, err := sim.New(sim.Config{Broker: "tcp://" + e.broker.Addresses()["mqtt"], Username: creds["username"].(string),
		Password: creds["password"].(string), ProjectID: pid, AliveInterval: 100 * time.Millisecond,
		Datapoints: map[string]*float64{"sp": ptrFloat(18)}})
	if err != nil {
		e.t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	ran := make(chan struct{})
	go func() { defer close(ran); _ = s.Run(ctx) }()
	e.t.Cleanup(func() { cancel(); <-ran })
	e.waitFor("the device online", func() bool { return e.m.Status(pid).Online })
	return pid
}

func (e *setpointEnv) waitFor(what string, cond func() bool) {
	e.t.Helper()
	edgetest.WaitFor(e.t, what, cond)
}

// setpointPath is POST /v2/datapoint/setpoint with the given query.
func setpointPath(pid int64, dp string, query ...string) string {
	q := url.Values{"project_id": {fmt.Sprint(pid)}, "dataPointID": {dp}}
	for i := 0; i+1 < len(query); i += 2 {
		q.Set(query[i], query[i+1])
	}
	return "/v2/datapoint/setpoint?" + q.Encode()
}
