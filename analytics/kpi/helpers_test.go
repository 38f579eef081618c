package kpi

import (
	"math"
	"testing"
	"time"
)

var t0 = time.Date(2026, 11, 2, 0, 0, 0, 0, time.UTC)

func at(minutes float64) time.Time { return t0.Add(time.Duration(minutes * float64(time.Minute))) }

func hours(h float64) Period {
	return Period{Start: t0, End: t0.Add(time.Duration(h * float64(time.Hour)))}
}

// pattern builds a step series: value vs[i] from minute starts[i].
func pattern(starts []float64, vs []float64) []Point {
	pts := make([]Point, len(starts))
	for i := range starts {
		pts[i] = Point{Time: at(starts[i]), Value: vs[i]}
	}
	return pts
}

// wantKPIs checks every expected KPI (to 1e-9) and that no result value is
// NaN or infinite; a NaN in want means "must be absent".
func wantKPIs(t *testing.T, got Result, want map[string]float64) {
	t.Helper()
	for _, k := range got.KPIs {
		if math.IsNaN(k.Value) || math.IsInf(k.Value, 0) {
			t.Errorf("KPI %q = %v, want a finite number", k.ID, k.Value)
		}
	}
	for _, p := range got.Plots {
		for _, v := range p.Values {
			if math.IsNaN(v) || math.IsInf(v, 0) {
				t.Errorf("plot %q holds %v", p.Title, v)
			}
		}
	}
	for id, w := range want {
		k, ok := got.KPI(id)
		if math.IsNaN(w) {
			if ok {
				t.Errorf("KPI %q = %v, want it absent", id, k.Value)
			}
			continue
		}
		if !ok {
			t.Errorf("KPI %q missing", id)
			continue
		}
		if math.Abs(k.Value-w) > 1e-9 {
			t.Errorf("KPI %q = %v, want %v", id, k.Value, w)
		}
	}
}

// minuteSeries is 4 weeks of 1-minute data with value f(minute).
func minuteSeries(f func(minute int) float64) ([]Point, Period) {
	const n = 4 * 7 * 24 * 60
	pts := make([]Point, n)
	for i := range pts {
		pts[i] = Point{Time: at(float64(i)), Value: f(i)}
	}
	return pts, Period{Start: t0, End: at(n)}
}
