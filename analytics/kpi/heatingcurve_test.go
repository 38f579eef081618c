package kpi

import (
	"errors"
	"math"
	"slices"
	"testing"
)

func TestHeatingCurve(t *testing.T) {
	// Curve -10 °C → 70 °C, 20 °C → 25 °C: 1.5 K less supply per K
	// outdoor, so 0 °C → 55 °C, 10 °C → 40 °C. Outdoor 0 for 5 h, then
	// 10. Supply: 56 (+1) for 3 h, 60 (+5) for 2 h, 40 (0) for 4 h,
	// 35 (-5) for 1 h.
	curve := HeatingCurveAttributes{OutdoorLow: -10, SupplyAtLow: 70, OutdoorHigh: 20, SupplyAtHigh: 25}
	outdoor := pattern([]float64{-30, 300}, []float64{0, 10})
	supply := pattern([]float64{0, 180, 300, 540}, []float64{56, 60, 40, 35})
	reversed := slices.Clone(supply)
	slices.Reverse(reversed)
	known := map[string]float64{
		"heating curve deviation.mean":                      (3*1 + 2*5 + 4*0 + 1*-5) / 10.0,
		"heating curve deviation.maximum":                   5,
		"heating curve deviation.within tolerance":          7,
		"heating curve deviation.within tolerance.relative": 70,
		"heating curve deviation.above tolerance":           2,
		"heating curve deviation.below tolerance":           1,
		"operating time":                                    math.NaN(),
	}
	wide := curve
	wide.Tolerance = 6
	tests := []struct {
		name                       string
		supply, outdoor, operating []Point
		attrs                      HeatingCurveAttributes
		period                     Period
		want                       map[string]float64
		color                      SignalColor
		noData                     bool
	}{{
		name: "known deviations", supply: supply, outdoor: outdoor, attrs: curve, period: hours(10), want: known, color: Yellow,
	}, {
		name: "unsorted input", supply: reversed, outdoor: outdoor, attrs: curve, period: hours(10), want: known, color: Yellow,
	}, {
		name: "tolerance attribute", supply: supply, outdoor: outdoor, attrs: wide, period: hours(10),
		want:  map[string]float64{"heating curve deviation.within tolerance.relative": 100, "heating curve deviation.above tolerance": 0},
		color: Green,
	}, {
		// Operating for the first 3 h only: +1 K throughout.
		name: "only while operating", supply: supply, outdoor: outdoor, attrs: curve, period: hours(10),
		operating: pattern([]float64{0, 180}, []float64{1, 0}),
		want: map[string]float64{
			"operating time": 3, "operating time.relative": 30,
			"heating curve deviation.mean": 1, "heating curve deviation.within tolerance.relative": 100,
		},
		color: Green,
	}, {
		// Flat beyond the points: -20 °C still asks 70 °C, 30 °C asks 25 °C.
		name: "curve held flat beyond its points", attrs: curve, period: hours(2),
		outdoor: pattern([]float64{0, 60}, []float64{-20, 30}),
		supply:  pattern([]float64{0, 60, 200}, []float64{70, 25, 90}),
		want:    map[string]float64{"heating curve deviation.maximum": 0, "heating curve deviation.within tolerance": 2},
		color:   Green,
	}, {
		name: "no outdoor data", supply: supply, attrs: curve, period: hours(10), color: Grey, noData: true,
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := HeatingCurve(tt.supply, tt.outdoor, tt.operating, tt.attrs, tt.period)
			if err != nil {
				t.Fatal(err)
			}
			if got.Color != tt.color || got.NoData != tt.noData {
				t.Errorf("color %q noData %v, want %q %v", got.Color, got.NoData, tt.color, tt.noData)
			}
			wantKPIs(t, got, tt.want)
		})
	}
}

func TestHeatingCurveRefusesBadInput(t *testing.T) {
	ok := pattern([]float64{0}, []float64{50})
	curve := HeatingCurveAttributes{OutdoorLow: -10, SupplyAtLow: 70, OutdoorHigh: 20, SupplyAtHigh: 25}
	if _, err := HeatingCurve(ok, ok, nil, HeatingCurveAttributes{}, hours(1)); !errors.Is(err, ErrInvalidCurve) {
		t.Errorf("no curve: err %v, want ErrInvalidCurve", err)
	}
	if _, err := HeatingCurve(ok, ok, nil, curve, Period{Start: t0, End: t0}); !errors.Is(err, ErrInvalidPeriod) {
		t.Errorf("empty period: err %v, want ErrInvalidPeriod", err)
	}
	if _, err := HeatingCurve(ok, []Point{{Time: t0, Value: math.NaN()}}, nil, curve, hours(1)); !errors.Is(err, ErrNonFinite) {
		t.Errorf("NaN outdoor: err %v, want ErrNonFinite", err)
	}
}

func BenchmarkHeatingCurve(b *testing.B) {
	curve := HeatingCurveAttributes{OutdoorLow: -12, SupplyAtLow: 70, OutdoorHigh: 20, SupplyAtHigh: 25}
	outdoor, p := minuteSeries(func(m int) float64 { return 5 + 5*math.Sin(float64(m)/720) })
	supply, _ := minuteSeries(func(m int) float64 { return 50 - 7*math.Sin(float64(m)/720) + math.Sin(float64(m)/20) })
	operating, _ := minuteSeries(func(m int) float64 { return float64(m / 60 % 2) })
	b.ReportAllocs()
	for b.Loop() {
		if _, err := HeatingCurve(supply, outdoor, operating, curve, p); err != nil {
			b.Fatal(err)
		}
	}
}
