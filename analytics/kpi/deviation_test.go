package kpi

import (
	"errors"
	"math"
	"slices"
	"testing"
)

func TestSetpointDeviation(t *testing.T) {
	// Setpoint 21 from before the period; measured over 10 h: 6 h at 21.5
	// (|d| 0.5), 2 h at 22.5 (1.5), 2 h at 18 (3).
	setpoint := pattern([]float64{-10}, []float64{21})
	measured := pattern([]float64{0, 360, 480}, []float64{21.5, 22.5, 18})
	reversed := slices.Clone(measured)
	slices.Reverse(reversed)
	tests := []struct {
		name                string
		measured, operating []Point
		setpoint            []Point
		attrs               DeviationAttributes
		period              Period
		want                map[string]float64
		color               SignalColor
		noData              bool
	}{{
		// Defaults Y 1, X 2: within 6 h, between 2 h, above 2 h (20 % > 10 %:
		// red). Mean (6*0.5+2*1.5+2*3)/10 = 1.2; median 0.5 (6 of 10 h).
		name: "known deviations", measured: measured, setpoint: setpoint, period: hours(10),
		want: map[string]float64{
			"setpoint deviation.smallerY": 6, "setpoint deviation.largerYsmallerX": 2, "setpoint deviation.largerX": 2,
			"setpoint deviation.smallerY.relative": 60, "setpoint deviation.largerYsmallerX.relative": 20, "setpoint deviation.largerX.relative": 20,
			"setpoint deviation.mean": 1.2, "setpoint deviation.median": 0.5, "setpoint deviation.minimum": 0.5, "setpoint deviation.maximum": 3,
			"operating time": math.NaN(),
		},
		color: Red,
	}, {
		name: "unsorted input", measured: reversed, setpoint: setpoint, period: hours(10),
		want:  map[string]float64{"setpoint deviation.smallerY": 6, "setpoint deviation.mean": 1.2},
		color: Red,
	}, {
		// Operating 0-8 h only: 8 h analysed, within 6 (75 %), between 2.
		name: "only while operating", measured: measured, setpoint: setpoint, period: hours(10),
		operating: pattern([]float64{0, 480}, []float64{1, 0}),
		want: map[string]float64{
			"operating time": 8, "operating time.relative": 80,
			"setpoint deviation.smallerY.relative": 75, "setpoint deviation.largerYsmallerX.relative": 25, "setpoint deviation.largerX": 0,
			"setpoint deviation.maximum": 1.5, "setpoint deviation.mean": 0.75,
		},
		color: Yellow,
	}, {
		// Y 0.5 (inclusive), X 4: within 6 h, between 4 h.
		name: "tolerance attributes", measured: measured, setpoint: setpoint, period: hours(10),
		attrs: DeviationAttributes{Tolerance: 0.5, Large: 4},
		want:  map[string]float64{"setpoint deviation.smallerY": 6, "setpoint deviation.largerYsmallerX": 4, "setpoint deviation.largerX": 0},
		color: Yellow,
	}, {
		// Setpoint known only from 2 h on: 2 h analysed, all within.
		name: "late setpoint", period: hours(4),
		measured: pattern([]float64{0}, []float64{20.5}), setpoint: pattern([]float64{120}, []float64{21}),
		want:  map[string]float64{"setpoint deviation.smallerY": 2, "setpoint deviation.smallerY.relative": 100, "setpoint deviation.mean": 0.5},
		color: Green,
	}, {
		name: "one point each", period: hours(1),
		measured: pattern([]float64{0}, []float64{23}), setpoint: pattern([]float64{0}, []float64{21}),
		want:  map[string]float64{"setpoint deviation.largerYsmallerX": 1, "setpoint deviation.median": 2},
		color: Yellow,
	}, {
		name: "never operating", measured: measured, setpoint: setpoint, period: hours(10),
		operating: pattern([]float64{0}, []float64{0}), color: Grey, noData: true,
	}, {
		name: "no measured data", setpoint: setpoint, period: hours(10), color: Grey, noData: true,
	}, {
		name: "data only before the setpoint exists", period: hours(2),
		measured: pattern([]float64{0, 30}, []float64{20, 21}), setpoint: pattern([]float64{200}, []float64{21}),
		color: Grey, noData: true,
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := SetpointDeviation(tt.measured, tt.setpoint, tt.operating, tt.attrs, tt.period)
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

func TestSetpointDeviationRefusesBadInput(t *testing.T) {
	ok := pattern([]float64{0}, []float64{21})
	if _, err := SetpointDeviation(ok, ok, nil, DeviationAttributes{}, Period{Start: t0, End: t0}); !errors.Is(err, ErrInvalidPeriod) {
		t.Errorf("empty period: err %v, want ErrInvalidPeriod", err)
	}
	bad := []Point{{Time: t0, Value: math.NaN()}}
	if _, err := SetpointDeviation(ok, bad, nil, DeviationAttributes{}, hours(1)); !errors.Is(err, ErrNonFinite) {
		t.Errorf("NaN setpoint: err %v, want ErrNonFinite", err)
	}
	if _, err := SetpointDeviation(ok, ok, bad, DeviationAttributes{}, hours(1)); !errors.Is(err, ErrNonFinite) {
		t.Errorf("NaN operating message: err %v, want ErrNonFinite", err)
	}
}

func BenchmarkSetpointDeviation(b *testing.B) {
	measured, p := minuteSeries(func(m int) float64 { return 21 + math.Sin(float64(m)/30) })
	setpoint, _ := minuteSeries(func(m int) float64 { return 21 })
	operating, _ := minuteSeries(func(m int) float64 { return float64(m / 60 % 2) })
	b.ReportAllocs()
	for b.Loop() {
		if _, err := SetpointDeviation(measured, setpoint, operating, DeviationAttributes{}, p); err != nil {
			b.Fatal(err)
		}
	}
}
