package kpi

import (
	"errors"
	"math"
	"slices"
	"testing"
)

// heatPump is on 10 min, off 20 min, eight times over 4 hours.
func heatPump(on, off float64) []Point {
	var pts []Point
	for c := 0; c < 8; c++ {
		pts = append(pts, Point{Time: at(float64(c) * 30), Value: on}, Point{Time: at(float64(c)*30 + 10), Value: off})
	}
	return pts
}

func TestOperatingCycle(t *testing.T) {
	nan := math.NaN()
	reversed := slices.Clone(heatPump(1, 0))
	slices.Reverse(reversed)
	tests := []struct {
		name   string
		series []Point
		attrs  CycleAttributes
		period Period
		want   map[string]float64
		color  SignalColor
		noData bool
	}{{
		// On at the start is not a seen start: starts at 30, 60, ... 210
		// minutes (7); cycles close between consecutive starts (6), each
		// 30 min long with 10 min on and 20 min off. On 8 x 10 min = 4/3 h
		// of 4 h. 7 starts / 4 h = 1.75 per hour: yellow.
		name: "heat pump 10 on 20 off", series: heatPump(1, 0), period: hours(4),
		want: map[string]float64{
			"operating time": 4.0 / 3, "operating time.relative": 100.0 / 3,
			"starts": 7, "closed operating cycles": 6,
			"cycle times.median": 0.5, "cycle times.average": 0.5, "cycle times.minimum": 0.5, "cycle times.maximum": 0.5,
			"duty times.median": 1.0 / 6, "duty times.average": 1.0 / 6, "duty times.maximum": 1.0 / 6,
			"switch-off times.median": 1.0 / 3, "switch-off times.minimum": 1.0 / 3,
		},
		color: Yellow,
	}, {
		name: "unsorted input is sorted", series: reversed, period: hours(4),
		want:  map[string]float64{"operating time": 4.0 / 3, "starts": 7, "closed operating cycles": 6, "cycle times.average": 0.5},
		color: Yellow,
	}, {
		// Power pin, standby 0.2 kW below the 0.5 kW threshold.
		name: "power pin with threshold", series: heatPump(3, 0.2), attrs: CycleAttributes{OnThreshold: 0.5}, period: hours(4),
		want:  map[string]float64{"operating time": 4.0 / 3, "starts": 7, "closed operating cycles": 6},
		color: Yellow,
	}, {
		// Every 6 min: 2 on, 4 off over one hour -> starts at 6..54 (9)
		// per hour: red.
		name: "short cycling", period: hours(1),
		series: func() []Point {
			var pts []Point
			for m := 0.0; m < 60; m += 6 {
				pts = append(pts, Point{Time: at(m), Value: 1}, Point{Time: at(m + 2), Value: 0})
			}
			return pts
		}(),
		want:  map[string]float64{"starts": 9, "closed operating cycles": 8, "cycle times.average": 0.1, "operating time": 20.0 / 60},
		color: Red,
	}, {
		// Off from before the period (value at start), on 60-120 min, off
		// after; the point at 300 min lies after the 4 h period.
		name: "points outside the period", period: hours(4),
		series: pattern([]float64{-60, 60, 120, 300}, []float64{0, 1, 0, 1}),
		want: map[string]float64{
			"operating time": 1, "operating time.relative": 25, "starts": 1, "closed operating cycles": 0,
			"cycle times.average": nan, "duty times.median": nan, "switch-off times.maximum": nan,
		},
		color: Green,
	}, {
		name: "one point", series: pattern([]float64{30}, []float64{1}), period: hours(4),
		// Covered from 30 min to 4 h, all on, never seen starting.
		want:  map[string]float64{"operating time": 3.5, "operating time.relative": 100, "starts": 0, "closed operating cycles": 0},
		color: Green,
	}, {
		name: "empty series", period: hours(4), color: Grey, noData: true,
	}, {
		name: "only points after the period", series: pattern([]float64{300, 310}, []float64{1, 0}), period: hours(4),
		color: Grey, noData: true,
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := OperatingCycle(tt.series, tt.attrs, tt.period)
			if err != nil {
				t.Fatal(err)
			}
			if got.Color != tt.color || got.NoData != tt.noData {
				t.Errorf("color %q noData %v, want %q %v", got.Color, got.NoData, tt.color, tt.noData)
			}
			if tt.noData && (len(got.KPIs) != 0 || len(got.Plots) != 0) {
				t.Errorf("no-data result carries KPIs %v plots %v", got.KPIs, got.Plots)
			}
			wantKPIs(t, got, tt.want)
		})
	}
}

func TestOperatingCycleRefusesBadInput(t *testing.T) {
	if _, err := OperatingCycle(heatPump(1, 0), CycleAttributes{}, Period{Start: t0, End: t0}); !errors.Is(err, ErrInvalidPeriod) {
		t.Errorf("empty period: err %v, want ErrInvalidPeriod", err)
	}
	bad := []Point{{Time: t0, Value: math.NaN()}}
	if _, err := OperatingCycle(bad, CycleAttributes{}, hours(1)); !errors.Is(err, ErrNonFinite) {
		t.Errorf("NaN value: err %v, want ErrNonFinite", err)
	}
}

func BenchmarkOperatingCycle(b *testing.B) {
	series, p := minuteSeries(func(m int) float64 {
		if m%30 < 10 {
			return 1
		}
		return 0
	})
	b.ReportAllocs()
	for b.Loop() {
		if _, err := OperatingCycle(series, CycleAttributes{}, p); err != nil {
			b.Fatal(err)
		}
	}
}
