package kpi

import (
	"errors"
	"math"
	"slices"
	"testing"
)

func TestEnergyConsumption(t *testing.T) {
	// Power meter over 10 h: 10 kW for 6 h, 2 kW for 3 h, 0 for 1 h:
	// 66 kWh, mean 6.6 kW; 10 % of the time (1 h) at 0 kW: base load 0.
	power := pattern([]float64{0, 360, 540}, []float64{10, 2, 0})
	powerW := pattern([]float64{0, 360, 540}, []float64{10000, 2000, 0})
	// Counter (kWh) read hourly over 6 h: 100, 110, 112, 130, reset to 5,
	// 10. Increases 10, 2, 18, (reset) 0, 5 = 35 kWh over 5 h between
	// readings; mean 7 kW; powers 0, 2, 5, 10, 18 kW for 1 h each: the
	// power exceeded 90 % of the time is 0 (the reset hour).
	counter := pattern([]float64{0, 60, 120, 180, 240, 300}, []float64{100, 110, 112, 130, 5, 10})
	reversed := slices.Clone(counter)
	slices.Reverse(reversed)
	powerKnown := map[string]float64{
		"energy consumption": 66, "power.mean": 6.6, "power.maximum": 10,
		"base load": 0, "base load.relative": 0, "energy cost": 66 * 0.3,
	}
	counterKnown := map[string]float64{
		"energy consumption": 35, "power.mean": 7, "power.maximum": 18, "base load": 0, "energy cost": 35 * 0.25,
	}
	tests := []struct {
		name   string
		meter  []Point
		attrs  EnergyAttributes
		period Period
		want   map[string]float64
		color  SignalColor
		noData bool
	}{{
		name: "power meter in kW", meter: power, period: hours(10),
		attrs: EnergyAttributes{MeterKind: PowerMeter, PricePerKWh: 0.3, Currency: "EUR"},
		want:  powerKnown, color: Green,
	}, {
		name: "power meter in W", meter: powerW, period: hours(10),
		attrs: EnergyAttributes{MeterKind: PowerMeter, Unit: "W", PricePerKWh: 0.3, Currency: "EUR"},
		want:  powerKnown, color: Green,
	}, {
		name: "counter with a reset, unsorted", meter: reversed, period: hours(6),
		attrs: EnergyAttributes{MeterKind: CounterMeter, Unit: "kWh", PricePerKWh: 0.25, Currency: "CHF"},
		want:  counterKnown, color: Green,
	}, {
		// Counter in Wh from before the period to after it: readings at
		// -1 h (1000), 0.5 h (4000), 2.5 h (9000), 4 h (after the 3 h
		// period). At the start 1000; increases 3 kWh over 0.5 h (6 kW)
		// and 5 kWh over 2 h (2.5 kW); 8 kWh over 2.5 h, mean 3.2 kW; base
		// load (10 % of 2.5 h within the 2.5 kW stretch) 2.5 kW, 78 % of
		// the mean: red. No currency: no cost.
		name: "counter in Wh, points outside", period: hours(3),
		meter: pattern([]float64{-60, 30, 150, 240}, []float64{1000, 4000, 9000, 20000}),
		attrs: EnergyAttributes{MeterKind: CounterMeter, Unit: "Wh"},
		want: map[string]float64{
			"energy consumption": 8, "power.mean": 3.2, "power.maximum": 6, "base load": 2.5,
			"base load.relative": 100 * 2.5 / 3.2, "energy cost": math.NaN(),
		},
		color: Red,
	}, {
		// A meter read every 10 min over 30 days at 1 kWh per hour, the
		// last reading at the period's end: the month's 720 kWh, not the
		// 719.83 up to the reading before it.
		name: "counter read at the period's end", period: hours(720),
		meter: func() []Point {
			var pts []Point
			for m := 0.0; m <= 720*60; m += 10 {
				pts = append(pts, Point{Time: at(m), Value: 5000 + m/60})
			}
			return pts
		}(),
		attrs: EnergyAttributes{MeterKind: CounterMeter},
		want:  map[string]float64{"energy consumption": 720, "power.mean": 1, "base load": 1, "base load.relative": 100},
		color: Red,
	}, {
		// Read only at both ends: one stretch of 2 h.
		name: "counter read at start and end", period: hours(2), meter: pattern([]float64{0, 120}, []float64{10, 16}),
		attrs: EnergyAttributes{MeterKind: CounterMeter},
		want:  map[string]float64{"energy consumption": 6, "power.mean": 3},
		color: Red,
	}, {
		// Constant 4 kW: base load is the whole load: red.
		name: "one power point", meter: pattern([]float64{-5}, []float64{4}), period: hours(2),
		attrs: EnergyAttributes{MeterKind: PowerMeter},
		want:  map[string]float64{"energy consumption": 8, "base load.relative": 100},
		color: Red,
	}, {
		name: "one counter reading", meter: pattern([]float64{0}, []float64{100}), period: hours(2),
		attrs: EnergyAttributes{MeterKind: CounterMeter}, color: Grey, noData: true,
	}, {
		name: "no data", period: hours(2), attrs: EnergyAttributes{MeterKind: PowerMeter}, color: Grey, noData: true,
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := EnergyConsumption(tt.meter, tt.attrs, tt.period)
			if err != nil {
				t.Fatal(err)
			}
			if got.Color != tt.color || got.NoData != tt.noData {
				t.Errorf("color %q noData %v, want %q %v", got.Color, got.NoData, tt.color, tt.noData)
			}
			wantKPIs(t, got, tt.want)
			if k, ok := got.KPI("energy cost"); ok && k.Unit != tt.attrs.Currency {
				t.Errorf("energy cost unit %q, want %q", k.Unit, tt.attrs.Currency)
			}
		})
	}
}

func TestEnergyConsumptionRefusesBadInput(t *testing.T) {
	ok := pattern([]float64{0}, []float64{5})
	for _, c := range []struct {
		name  string
		attrs EnergyAttributes
		want  error
	}{
		{"no meter kind", EnergyAttributes{}, ErrInvalidMeter},
		{"power unit on a counter", EnergyAttributes{MeterKind: CounterMeter, Unit: "kW"}, ErrUnknownUnit},
		{"energy unit on a power meter", EnergyAttributes{MeterKind: PowerMeter, Unit: "kWh"}, ErrUnknownUnit},
		{"bad currency", EnergyAttributes{MeterKind: PowerMeter, Currency: "euro"}, ErrInvalidMeter},
	} {
		if _, err := EnergyConsumption(ok, c.attrs, hours(1)); !errors.Is(err, c.want) {
			t.Errorf("%s: err %v, want %v", c.name, err, c.want)
		}
	}
	power := EnergyAttributes{MeterKind: PowerMeter}
	if _, err := EnergyConsumption(ok, power, Period{Start: t0, End: t0}); !errors.Is(err, ErrInvalidPeriod) {
		t.Errorf("empty period: err %v, want ErrInvalidPeriod", err)
	}
	if _, err := EnergyConsumption([]Point{{Time: t0, Value: math.NaN()}}, power, hours(1)); !errors.Is(err, ErrNonFinite) {
		t.Errorf("NaN: err %v, want ErrNonFinite", err)
	}
}

func BenchmarkEnergyConsumption(b *testing.B) {
	// A counter in kWh integrating a power of 5 ± 3 kW.
	counter, p := minuteSeries(func(m int) float64 {
		return float64(m)/60*5 + 3*229.0/60*(1-math.Cos(float64(m)/229))
	})
	attrs := EnergyAttributes{MeterKind: CounterMeter, PricePerKWh: 0.3, Currency: "EUR"}
	b.ReportAllocs()
	for b.Loop() {
		if _, err := EnergyConsumption(counter, attrs, p); err != nil {
			b.Fatal(err)
		}
	}
}
