package actors

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/openbdp/bdp/fault"
	"github.com/openbdp/bdp/pipeline/window"
)

// countConfig is a formula over one pin with a count window of n.
func countConfig(t *testing.T, src string, n int) json.RawMessage {
	t.Helper()
	cfg, err := ParseConfig(TypeFormula, fmt.Appendf(nil, `{"pins":{"P1":{"dataPointID":%q,"data_range":{"count":%d}}},"parameters":{"formula":"P1"}}`, src, n))
	if err != nil {
		t.Fatal(err)
	}
	raw, err := json.Marshal(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return raw
}

func (e *env) budgetEngine(b Budget, reg prometheus.Registerer) *Engine {
	eng, err := New(EngineConfig{Sink: e.batcher, Router: e.router, History: StoreHistory{Store: e.store},
		Log: slog.New(slog.NewTextHandler(io.Discard, nil)), Budget: b, Registry: reg})
	if err != nil {
		e.t.Fatal(err)
	}
	e.t.Cleanup(func() { eng.Shutdown(context.Background()) })
	return eng
}

// The estimate of a configuration is the sum of its pins' estimates.
func TestWindowBytesSumsThePins(t *testing.T) {
	cfg, err := ParseConfig(TypeFormula, []byte(`{"pins":{
		"P1":{"dataPointID":"a","data_range":{"count":1000},"aggregate":"median"},
		"P2":{"dataPointID":"b","data_range":{"time":"1h"}},
		"P3":{"dataPointID":"c","data_range":{"start":"0 0 * * *","end":"0 12 * * *"}}},
		"parameters":{"formula":"P1+P2+P3"}}`))
	if err != nil {
		t.Fatal(err)
	}
	got, err := WindowBytes(cfg, 10*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	want := window.EstimateBytes(window.Range{Count: 1000}, window.Median, 10*time.Second) +
		window.EstimateBytes(window.Range{Duration: time.Hour}, window.Max, 10*time.Second) +
		window.EstimateBytes(window.Range{CronStart: "0 0 * * *", CronEnd: "0 12 * * *"}, window.Max, 10*time.Second)
	if got != want {
		t.Fatalf("WindowBytes = %d, want %d", got, want)
	}
}

// Start holds each running datapoint's estimate against the node budget
// and refuses one over either budget; a stop gives its share back; the
// node figure is on the registry.
func TestStartKeepsToTheWindowBudget(t *testing.T) {
	e := newEnv(t)
	reg := prometheus.NewRegistry()
	per := window.EstimateBytes(window.Range{Count: 10_000}, window.Max, time.Second)
	eng := e.budgetEngine(Budget{PerDatapoint: per, Node: 2*per + per/2}, reg)
	def := func(out string, n int) Definition {
		d, err := eng.Definition(e.project, out, TypeFormula, countConfig(t, "src", n))
		if err != nil {
			t.Fatal(err)
		}
		return d
	}
	gauge := func() float64 { return gaugeValue(t, reg, "bdp_window_estimated_bytes") }
	ctx := context.Background()
	big := def("big", 11_000)
	if _, err := eng.Start(ctx, big); fault.KindOf(err) != fault.Invalid || !strings.Contains(err.Error(), "BDP_WINDOW_BUDGET_DATAPOINT") {
		t.Fatalf("Start over the per-datapoint budget = %v, want Invalid naming the limit", err)
	}
	if eng.Running(big.key()) || gauge() != 0 {
		t.Fatalf("a refused start holds %v bytes", gauge())
	}
	a, b, c := def("a", 10_000), def("b", 10_000), def("c", 10_000)
	for _, d := range []Definition{a, b} {
		if _, err := eng.Start(ctx, d); err != nil {
			t.Fatal(err)
		}
	}
	if got := gauge(); got != float64(2*per) {
		t.Fatalf("two running: gauge %v, want %d", got, 2*per)
	}
	if err := eng.CheckBudget(c, true); fault.KindOf(err) != fault.Unavailable {
		t.Fatalf("CheckBudget of a third = %v, want Unavailable", err)
	}
	if err := eng.CheckBudget(a, true); err != nil {
		t.Fatalf("CheckBudget of a running one counts it twice: %v", err)
	}
	_, err := eng.Start(ctx, c)
	if fault.KindOf(err) != fault.Unavailable || !strings.Contains(err.Error(), "BDP_WINDOW_BUDGET_NODE") {
		t.Fatalf("Start of a third = %v, want Unavailable naming the node budget", err)
	}
	if err := eng.Stop(ctx, a.key()); err != nil {
		t.Fatal(err)
	}
	if got := gauge(); got != float64(per) {
		t.Fatalf("after a stop: gauge %v, want %d", got, per)
	}
	if _, err := eng.Start(ctx, c); err != nil {
		t.Fatalf("Start once a share was given back: %v", err)
	}
	if v := gaugeValue(t, reg, "bdp_window_budget_bytes"); v != float64(2*per+per/2) {
		t.Fatalf("bdp_window_budget_bytes = %v", v)
	}
}

// gaugeValue reads a gauge from the registry.
func gaugeValue(t *testing.T, reg *prometheus.Registry, name string) float64 {
	t.Helper()
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range mfs {
		if mf.GetName() == name && len(mf.GetMetric()) == 1 {
			return mf.GetMetric()[0].GetGauge().GetValue()
		}
	}
	t.Fatalf("no gauge %s", name)
	return 0
}
