package actors

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/openbdp/bdp/pipeline"
	"github.com/openbdp/bdp/store"
	"github.com/openbdp/bdp/store/pgcluster"
	"github.com/openbdp/bdp/store/storetest"
)

// The engine's tests run real actors over the real pipeline and
// PostgreSQL; only the calculator is a small one written here.

var testCluster *pgcluster.Cluster

func TestMain(m *testing.M) {
	pgcluster.RunTests(m, func(c *pgcluster.Cluster) { testCluster = c })
}

type env struct {
	t       *testing.T
	store   *store.Store
	batcher *pipeline.Batcher
	router  *pipeline.Router
	project int64
}

func newEnv(t *testing.T) *env {
	st, _ := storetest.Open(t, testCluster)
	p := storetest.NewTenant(t, st, "acme").Project
	router := pipeline.NewRouter()
	b, err := pipeline.NewBatcher(pipeline.BatcherConfig{MaxWait: time.Millisecond}, st, router, prometheus.NewRegistry())
	if err != nil {
		t.Fatal(err)
	}
	go b.Run()
	t.Cleanup(b.Stop)
	return &env{t: t, store: st, batcher: b, router: router, project: p.ID}
}

func (e *env) engine(onUnhealthy func(Key, string)) *Engine {
	eng, err := New(EngineConfig{Sink: e.batcher, Router: e.router, History: e.history(),
		Log: slog.New(slog.NewTextHandler(io.Discard, nil)), OnUnhealthy: onUnhealthy})
	if err != nil {
		e.t.Fatal(err)
	}
	e.t.Cleanup(func() { eng.Shutdown(context.Background()) })
	return eng
}

// history is the engine's history as bdp serve gives it: reads batched
// with other actors' (ReadBatcher), closed after the engine (cleanups run
// last-registered first).
func (e *env) history() StoreHistory {
	b := NewReadBatcher(e.store)
	e.t.Cleanup(b.Close)
	return StoreHistory{Store: e.store, Batches: b}
}

var t0 = time.Date(2026, 6, 1, 0, 0, 0, 0, time.UTC)

func (e *env) write(dp string, minute int, v float64) {
	e.t.Helper()
	err := e.batcher.Write(context.Background(), pipeline.SourceHTTP, []pipeline.Observation{
		{ProjectID: e.project, DataPointID: dp, Time: t0.Add(time.Duration(minute) * time.Minute), Value: v}})
	if err != nil {
		e.t.Fatal(err)
	}
}

// outputs polls the stored outputs of dp until there are n (or times out).
func (e *env) outputs(dp string, n int) []Point {
	e.t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	var pts []Point
	for {
		var err error
		pts, err = StoreHistory{Store: e.store}.Recent(context.Background(), e.project, dp, 0, t0.Add(-time.Hour), t0.Add(24*time.Hour))
		if err != nil {
			e.t.Fatal(err)
		}
		if len(pts) >= n || time.Now().After(deadline) {
			return pts
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// sumOfLast3 emits the sum of the last three values of its one pin on
// every value. A bug in one calculation: the first 666 it ever sees makes
// it panic (a restart calculates it again without panicking),
// and 667 panics every time (a crash loop).
type sumOfLast3 struct {
	src      string
	last     []float64
	panicked *atomic.Bool
}

func (s *sumOfLast3) Sources() []Source {
	return []Source{{Pin: "P1", DataPointID: s.src, Count: 3}}
}

func (s *sumOfLast3) Observe(_ string, p Point) (Point, bool) {
	if (p.Value == 666 && s.panicked.CompareAndSwap(false, true)) || p.Value == 667 {
		panic("calculation bug")
	}
	s.last = append(s.last, p.Value)
	if len(s.last) > 3 {
		s.last = s.last[1:]
	}
	sum := 0.0
	for _, v := range s.last {
		sum += v
	}
	return Point{Time: p.Time, Value: sum}, true
}

func (s *sumOfLast3) Tick(time.Time) (Point, bool)         { return Point{}, false }
func (s *sumOfLast3) NextTick(time.Time) (time.Time, bool) { return time.Time{}, false }
func (e *env) def(src, out string) Definition {
	panicked := &atomic.Bool{}
	return Definition{ProjectID: e.project, DataPointID: out,
		NewCalculator: func() (Calculator, error) { return &sumOfLast3{src: src, panicked: panicked}, nil }}
}

func values(pts []Point) []float64 {
	out := make([]float64, len(pts))
	for i, p := range pts {
		out[i] = p.Value
	}
	return out
}

func TestActorComputesAndChains(t *testing.T) {
	e := newEnv(t)
	eng := e.engine(nil)
	ctx := context.Background()
	// A reads src; B reads A's output: outputs feed other datapoints.
	if _, err := eng.Start(ctx, e.def("src", "A")); err != nil {
		t.Fatal(err)
	}
	if _, err := eng.Start(ctx, e.def("A", "B")); err != nil {
		t.Fatal(err)
	}
	for i, v := range []float64{1, 2, 3, 4} {
		e.write("src", i, v)
	}
	if got := values(e.outputs("A", 4)); fmt.Sprint(got) != "[1 3 6 9]" {
		t.Fatalf("A = %v, want [1 3 6 9]", got)
	}
	if got := values(e.outputs("B", 4)); fmt.Sprint(got) != "[1 4 10 18]" {
		t.Fatalf("B = %v, want [1 4 10 18]", got)
	}
	if _, err := eng.Start(ctx, e.def("src", "A")); err == nil {
		t.Fatal("starting a running virtual datapoint must fail")
	}
}

// A new engine (a restarted bdp) rebuilds windows from stored history.
func TestRestartRebuildsWindowsFromHistory(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	eng := e.engine(nil)
	if _, err := eng.Start(ctx, e.def("src", "out")); err != nil {
		t.Fatal(err)
	}
	e.write("src", 0, 10)
	e.write("src", 1, 20)
	e.outputs("out", 2)
	eng.Shutdown(ctx)
	e.write("src", 2, 30) // while nothing runs: history, not live

	eng2 := e.engine(nil)
	if _, err := eng2.Start(ctx, e.def("src", "out")); err != nil {
		t.Fatal(err)
	}
	e.write("src", 3, 40)
	got := values(e.outputs("out", 3))
	// The window after the restart holds 20, 30, 40: 90.
	if fmt.Sprint(got) != "[10 30 90]" {
		t.Fatalf("outputs %v, want [10 30 90]", got)
	}
}

// A panic restarts that actor only; more than MaxRestarts failures within
// RestartWindow stop it and report it unhealthy.
func TestCrashIsolationAndHealth(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	var mu sync.Mutex
	var unhealthy []Key
	eng := e.engine(func(k Key, _ string) { mu.Lock(); unhealthy = append(unhealthy, k); mu.Unlock() })
	if _, err := eng.Start(ctx, e.def("bad", "crashy")); err != nil {
		t.Fatal(err)
	}
	if _, err := eng.Start(ctx, e.def("good", "fine")); err != nil {
		t.Fatal(err)
	}
	e.write("bad", 0, 666)
	e.write("bad", 1, 5)
	// The restart catches up: the output of 666, whose message failed,
	// is calculated (a restart that only refilled lost it), and the actor
	// goes on with 666 in its window.
	if got := values(e.outputs("crashy", 2)); fmt.Sprint(got) != "[666 671]" {
		t.Fatalf("after one crash: %v, want [666 671]", got)
	}
	e.write("bad", 2, 667) // now every restart replays a panic from history
	deadline := time.Now().Add(5 * time.Second)
	for eng.Running(Key{e.project, "crashy"}) && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	mu.Lock()
	got := unhealthy
	mu.Unlock()
	if eng.Running(Key{e.project, "crashy"}) || len(got) != 1 || got[0].DataPointID != "crashy" {
		t.Fatalf("after repeated crashes: running=%v unhealthy=%v", eng.Running(Key{e.project, "crashy"}), got)
	}
	e.write("good", 0, 7)
	if v := values(e.outputs("fine", 1)); fmt.Sprint(v) != "[7]" {
		t.Fatalf("the healthy actor stopped working: %v", v)
	}
}

// A time window refills from the source's newest observation, not from the
// wall clock: after a restart, a source that has been quiet for months
// still has its last window back.
func TestRestartRefillsTimeWindowsInEventTime(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	def := e.definition("avg5m", TypeFormula, `{"pins":{"P1":{"dataPointID":"src","data_range":{"time":"5m"},"aggregate":"mean"}},"parameters":{"formula":"P1;"}}`)
	eng := e.engine(nil)
	if _, err := eng.Start(ctx, def); err != nil {
		t.Fatal(err)
	}
	e.write("src", 0, 10) // t0 lies months before the wall clock
	e.write("src", 1, 20)
	e.outputs("avg5m", 2)
	eng.Shutdown(ctx)

	eng2 := e.engine(nil)
	if _, err := eng2.Start(ctx, def); err != nil {
		t.Fatal(err)
	}
	e.write("src", 2, 60)
	if got := values(e.outputs("avg5m", 3)); fmt.Sprint(got) != "[10 15 30]" {
		t.Fatalf("outputs %v, want [10 15 30]: the window must hold 10, 20, 60 after the restart", got)
	}
}

// flakySink fails its first writes as an unreachable database would.
type flakySink struct {
	pipeline.Sink
	fails atomic.Int32
}

func (f *flakySink) Write(ctx context.Context, src pipeline.Source, obs []pipeline.Observation) error {
	if f.fails.Add(-1) >= 0 {
		return errors.New("dial tcp 127.0.0.1:5432: connection refused")
	}
	return f.Sink.Write(ctx, src, obs)
}

// Outputs are derived data no client can send again: a write that fails
// for a passing reason is retried until it is stored, not dropped.
func TestOutputsSurviveFailingWrites(t *testing.T) {
	e := newEnv(t)
	sink := &flakySink{Sink: e.batcher}
	sink.fails.Store(3)
	eng, err := New(EngineConfig{Sink: sink, Router: e.router, History: StoreHistory{Store: e.store},
		Log: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { eng.Shutdown(context.Background()) })
	if _, err := eng.Start(context.Background(), e.def("src", "out")); err != nil {
		t.Fatal(err)
	}
	e.write("src", 0, 1)
	e.write("src", 1, 2)
	if got := values(e.outputs("out", 2)); len(got) != 2 || got[0] != 1 || got[1] != 3 {
		t.Fatalf("outputs %v, want [1 3] despite three failed writes", got)
	}
	if sink.fails.Load() >= 0 {
		t.Fatal("the sink did not fail three times: the test proves nothing")
	}
}
