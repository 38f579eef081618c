package kpi

import (
	"errors"
	"math"
	"slices"
	"testing"
)

func TestVirtualHeatMeter(t *testing.T) {
	// Inlet 60 from before the period; outlet over 10 h: 5 h at 50
	// (ΔT 10), 4 h at 55 (ΔT 5), 1 h at 62 (ΔT -2); flow 1.8 m³/h =
	// 0.0005 m³/s throughout. Q_dot = 988 kg/m³ · 0.0005 m³/s ·
	// 4.18 kJ/(kg·K) · ΔT = 2.0649 kW/K · ΔT.
	const perKelvin = 988 * 0.0005 * 4.18
	inlet := pattern([]float64{-10}, []float64{60})
	outlet := pattern([]float64{0, 300, 540}, []float64{50, 55, 62})
	flowPerHour := pattern([]float64{-1}, []float64{1.8})
	reversed := slices.Clone(outlet)
	slices.Reverse(reversed)
	energy := perKelvin * (5*10 + 4*5 + 1*-2)
	known := map[string]float64{
		"Q_dot.mean": energy / 10, "Q_dot.medium": perKelvin * 5,
		"Q_dot.minimum": perKelvin * -2, "Q_dot.maximum": perKelvin * 10,
		"Q.total": energy, "Q_dot.negative": 1, "Q_dot.negative.relative": 10,
	}
	tests := []struct {
		name                string
		inlet, outlet, flow []Point
		attrs               HeatMeterAttributes
		period              Period
		want                map[string]float64
		color               SignalColor
		noData              bool
	}{{
		name: "known heat flux in m³/h", inlet: inlet, outlet: outlet, flow: flowPerHour,
		attrs: HeatMeterAttributes{VolumeFlowUnit: "cubicMetersPerHour"}, period: hours(10),
		want: known, color: Yellow,
	}, {
		name: "same flow in l/s, unsorted", inlet: inlet, outlet: reversed,
		flow:  pattern([]float64{0}, []float64{0.5}),
		attrs: HeatMeterAttributes{VolumeFlowUnit: "l/s"}, period: hours(10),
		want: known, color: Yellow,
	}, {
		// Default unit m³/s: 0.0005 m³/s as given; only the first 5 h.
		name: "default unit, no negative flux", inlet: inlet, outlet: outlet,
		flow: pattern([]float64{0}, []float64{0.0005}), period: hours(5),
		want: map[string]float64{
			"Q_dot.mean": perKelvin * 10, "Q.total": perKelvin * 50, "Q_dot.negative.relative": 0,
		},
		color: Green,
	}, {
		// Flow only known from 8 h on (and 0 from 9 h): 1 h at ΔT 5,
		// 1 h at ΔT -2 with no flow, so no heat and nothing negative.
		name: "one flow point each, point after the period", inlet: inlet, outlet: outlet,
		flow:  pattern([]float64{480, 540, 700}, []float64{1.8, 0, 3}),
		attrs: HeatMeterAttributes{VolumeFlowUnit: "m³/h"}, period: hours(10),
		want: map[string]float64{
			"Q.total": perKelvin * 5, "Q_dot.mean": perKelvin * 5 / 2, "Q_dot.minimum": 0,
			"Q_dot.negative": 0,
		},
		color: Green,
	}, {
		// 9 h of 10 with a negative flux: red.
		name: "swapped sensors", inlet: outlet, outlet: inlet, flow: flowPerHour,
		attrs: HeatMeterAttributes{VolumeFlowUnit: "cubicMetersPerHour"}, period: hours(10),
		want:  map[string]float64{"Q_dot.negative": 9, "Q_dot.negative.relative": 90, "Q.total": -energy},
		color: Red,
	}, {
		name: "no flow data", inlet: inlet, outlet: outlet, period: hours(10), color: Grey, noData: true,
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := VirtualHeatMeter(tt.inlet, tt.outlet, tt.flow, tt.attrs, tt.period)
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

func TestVirtualHeatMeterRefusesBadInput(t *testing.T) {
	ok := pattern([]float64{0}, []float64{60})
	if _, err := VirtualHeatMeter(ok, ok, ok, HeatMeterAttributes{}, Period{Start: t0, End: t0}); !errors.Is(err, ErrInvalidPeriod) {
		t.Errorf("empty period: err %v, want ErrInvalidPeriod", err)
	}
	if _, err := VirtualHeatMeter(ok, ok, []Point{{Time: t0, Value: math.Inf(1)}}, HeatMeterAttributes{}, hours(1)); !errors.Is(err, ErrNonFinite) {
		t.Errorf("infinite flow: err %v, want ErrNonFinite", err)
	}
	if _, err := VirtualHeatMeter(ok, ok, ok, HeatMeterAttributes{VolumeFlowUnit: "gallonsPerFortnight"}, hours(1)); !errors.Is(err, ErrUnknownUnit) {
		t.Errorf("unknown unit: err %v, want ErrUnknownUnit", err)
	}
}

func BenchmarkVirtualHeatMeter(b *testing.B) {
	inlet, p := minuteSeries(func(m int) float64 { return 70 + math.Sin(float64(m)/60) })
	outlet, _ := minuteSeries(func(m int) float64 { return 63 + 3*math.Sin(float64(m)/45) })
	flow, _ := minuteSeries(func(m int) float64 { return 2 + math.Sin(float64(m)/30) })
	attrs := HeatMeterAttributes{VolumeFlowUnit: "cubicMetersPerHour"}
	b.ReportAllocs()
	for b.Loop() {
		if _, err := VirtualHeatMeter(inlet, outlet, flow, attrs, p); err != nil {
			b.Fatal(err)
		}
	}
}
