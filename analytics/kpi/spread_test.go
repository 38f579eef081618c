package kpi

import (
	"errors"
	"math"
	"slices"
	"testing"
)

func TestTemperatureSpread(t *testing.T) {
	// Inlet 70 from before the period; outlet over 10 h: 6 h at 60
	// (spread 10), 3 h at 67 (3), 1 h at 72 (-2).
	inlet := pattern([]float64{-10}, []float64{70})
	outlet := pattern([]float64{0, 360, 540}, []float64{60, 67, 72})
	reversed := slices.Clone(outlet)
	slices.Reverse(reversed)
	tests := []struct {
		name                     string
		inlet, outlet, operating []Point
		attrs                    SpreadAttributes
		period                   Period
		want                     map[string]float64
		color                    SignalColor
		noData                   bool
	}{{
		// Below the default 5 K: 4 of 10 h = 40 %: yellow. Average
		// (6*10+3*3+1*-2)/10 = 6.7.
		name: "known spreads", inlet: inlet, outlet: outlet, period: hours(10),
		want: map[string]float64{
			"temperature spread.average": 6.7, "temperature spread.minimum": -2, "temperature spread.maximum": 10,
			"temperature spread.below minimum": 4, "temperature spread.below minimum.relative": 40,
			"operating time": math.NaN(),
		},
		color: Yellow,
	}, {
		name: "unsorted input", inlet: inlet, outlet: reversed, period: hours(10),
		want:  map[string]float64{"temperature spread.average": 6.7, "temperature spread.below minimum": 4},
		color: Yellow,
	}, {
		// Operating only for the first 6 h: spread 10 throughout: green.
		name: "only while operating", inlet: inlet, outlet: outlet, period: hours(10),
		operating: pattern([]float64{-5, 360}, []float64{1, 0}),
		want: map[string]float64{
			"operating time": 6, "operating time.relative": 60,
			"temperature spread.average": 10, "temperature spread.minimum": 10, "temperature spread.below minimum.relative": 0,
		},
		color: Green,
	}, {
		name: "minimum spread attribute", inlet: inlet, outlet: outlet, period: hours(10),
		attrs: SpreadAttributes{MinSpread: 12},
		want:  map[string]float64{"temperature spread.below minimum": 10, "temperature spread.below minimum.relative": 100},
		color: Red,
	}, {
		// Outlet known from 1 h on, inlet point after the period ignored.
		name: "one point each, points outside", period: hours(2),
		inlet:  pattern([]float64{0, 130}, []float64{55, 90}),
		outlet: pattern([]float64{60}, []float64{50}),
		want:   map[string]float64{"temperature spread.average": 5, "temperature spread.below minimum": 0},
		color:  Green,
	}, {
		name: "no inlet data", outlet: outlet, period: hours(10), color: Grey, noData: true,
	}, {
		name: "never operating", inlet: inlet, outlet: outlet, operating: pattern([]float64{0}, []float64{0}),
		period: hours(10), color: Grey, noData: true,
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := TemperatureSpread(tt.inlet, tt.outlet, tt.operating, tt.attrs, tt.period)
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

func TestTemperatureSpreadRefusesBadInput(t *testing.T) {
	ok := pattern([]float64{0}, []float64{60})
	if _, err := TemperatureSpread(ok, ok, nil, SpreadAttributes{}, Period{Start: t0, End: t0}); !errors.Is(err, ErrInvalidPeriod) {
		t.Errorf("empty period: err %v, want ErrInvalidPeriod", err)
	}
	if _, err := TemperatureSpread(ok, []Point{{Time: t0, Value: math.NaN()}}, nil, SpreadAttributes{}, hours(1)); !errors.Is(err, ErrNonFinite) {
		t.Errorf("NaN outlet: err %v, want ErrNonFinite", err)
	}
}

func BenchmarkTemperatureSpread(b *testing.B) {
	inlet, p := minuteSeries(func(m int) float64 { return 70 + math.Sin(float64(m)/60) })
	outlet, _ := minuteSeries(func(m int) float64 { return 63 + 3*math.Sin(float64(m)/45) })
	operating, _ := minuteSeries(func(m int) float64 { return float64(m / 60 % 2) })
	b.ReportAllocs()
	for b.Loop() {
		if _, err := TemperatureSpread(inlet, outlet, operating, SpreadAttributes{}, p); err != nil {
			b.Fatal(err)
		}
	}
}
