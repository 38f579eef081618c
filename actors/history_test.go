package actors

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/openbdp/bdp/pipeline/window"
	"github.com/openbdp/bdp/store"
)

// A source with more than store.MaxReadPoints stored observations must
// not keep a valid virtual datapoint from starting (it used to fail with
// "more than 1000000 observations match"): the refill reads pages, the
// newest that the windows can hold. The first output then reduces exactly
// the newest window.MaxObservations values, for a 30-day time window
// (which spans them all) and for a count window with the median.
func TestStartOverMoreThanAMillionStoredObservations(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	const n = store.MaxReadPoints + 1000
	ids, err := e.store.EnsureDatapoints(ctx, e.project, []string{"big"})
	if err != nil {
		t.Fatal(err)
	}
	value := func(i int) float64 { return float64((i * 7919) % 1009) }
	rows := make([]store.Row, 0, 50_000)
	for i := range n {
		rows = append(rows, store.Row{Datapoint: ids["big"], Time: t0.Add(time.Duration(i) * time.Second), Value: value(i)})
		if len(rows) == cap(rows) || i == n-1 {
			if err := e.store.WriteObservations(ctx, rows); err != nil {
				t.Fatal(err)
			}
			rows = rows[:0]
		}
	}
	def := e.definition("big-out", TypeFormula, `{"pins": {
		"P1": {"dataPointID": "big", "data_range": {"time": "30d"}, "aggregate": "mean"},
		"P2": {"dataPointID": "big", "data_range": {"count": 100000}, "aggregate": "median"}},
		"parameters": {"formula": "P1 x 1000 + P2;"}}`)
	eng := e.engine(nil)
	began := time.Now()
	if _, err := eng.Start(ctx, def); err != nil {
		t.Fatalf("start over %d stored observations: %v", n, err)
	}
	t.Logf("refilled two windows of %d from %d stored observations in %s", window.MaxObservations, n, time.Since(began))
	e.writeAt("big", t0.Add(time.Duration(n)*time.Second), value(n))

	newest := make([]float64, 0, window.MaxObservations)
	for i := n + 1 - window.MaxObservations; i <= n; i++ {
		newest = append(newest, value(i))
	}
	sum := 0.0
	for _, v := range newest {
		sum += v
	}
	sorted := slices.Sorted(slices.Values(newest))
	median := (sorted[len(sorted)/2-1] + sorted[len(sorted)/2]) / 2
	want := sum/float64(len(newest))*1000 + median
	out := e.stored("big-out", t0, endOfTime, 1)
	if len(out) != 1 || out[0].Value != want {
		t.Fatalf("outputs %v, want one of %v", out, want)
	}
}
