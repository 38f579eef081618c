package kpi

import (
	"errors"
	"math"
	"slices"
	"testing"
)

func TestOutdoorTemperatureSensor(t *testing.T) {
	// Reference 5 °C from before the period; two UTC days (t0 is a
	// midnight). Sensor, in hours: day 1 0-10 at 5.5 (diff 0.5), 10-12 at 8
	// (3, sun), 12-24 at 5 (0); day 2 24-36 at 4 (-1), 36-36.5 at 7 (2, too
	// short for a radiation day), 36.5-48 at 3 (-2).
	reference := pattern([]float64{-10}, []float64{5})
	sensor := pattern([]float64{0, 600, 720, 1440, 2160, 2190}, []float64{5.5, 8, 5, 4, 7, 3})
	reversed := slices.Clone(sensor)
	slices.Reverse(reversed)
	known := map[string]float64{
		// Within 1 K: 10 + 12 + 12 h of 48.
		"temperature difference.within tolerance":          34,
		"temperature difference.within tolerance.relative": 100 * 34.0 / 48,
		"temperature difference.mean":                      (10*0.5 + 2*3 + 12*0 + 12*1 + 0.5*2 + 11.5*2) / 48,
		"temperature difference.maximum":                   3,
		"radiation influenced.total":                       1,
		"radiation influenced.relative":                    50,
	}
	tests := []struct {
		name              string
		sensor, reference []Point
		attrs             OutdoorSensorAttributes
		period            Period
		want              map[string]float64
		color             SignalColor
		noData            bool
	}{{
		name: "known differences", sensor: sensor, reference: reference, period: hours(48),
		want: known, color: Yellow,
	}, {
		name: "unsorted input", sensor: reversed, reference: reference, period: hours(48),
		want: known, color: Yellow,
	}, {
		// Within 2.5 K: all but the 2 h of sun on day 1, still a radiation day.
		name: "tolerance attribute", sensor: sensor, reference: reference, period: hours(48),
		attrs: OutdoorSensorAttributes{Tolerance: 2.5},
		want: map[string]float64{
			"temperature difference.within tolerance": 46, "temperature difference.within tolerance.relative": 100 * 46.0 / 48,
			"radiation influenced.total": 1,
		},
		color: Green,
	}, {
		// 1 h of sun split by midnight: half an hour on each day is no
		// radiation day.
		name: "sun across midnight", reference: reference, period: hours(48),
		sensor: pattern([]float64{0, 1410, 1470}, []float64{5, 8, 5}),
		want: map[string]float64{
			"temperature difference.mean": 3.0 / 48, "radiation influenced.total": 0, "radiation influenced.relative": 0,
			"temperature difference.within tolerance": 47,
		},
		color: Green,
	}, {
		// Sensor known from 1 h on; reference point after the period ignored.
		name: "one point each, points outside", period: hours(2),
		sensor:    pattern([]float64{60}, []float64{6}),
		reference: pattern([]float64{-10, 200}, []float64{5, 100}),
		want: map[string]float64{
			"temperature difference.mean": 1, "temperature difference.within tolerance.relative": 100,
			"radiation influenced.total": 0,
		},
		color: Green,
	}, {
		name: "no reference data", sensor: sensor, period: hours(48), color: Grey, noData: true,
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := OutdoorTemperatureSensor(tt.sensor, tt.reference, tt.attrs, tt.period)
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

func TestOutdoorTemperatureSensorRefusesBadInput(t *testing.T) {
	ok := pattern([]float64{0}, []float64{5})
	if _, err := OutdoorTemperatureSensor(ok, ok, OutdoorSensorAttributes{}, Period{Start: t0, End: t0}); !errors.Is(err, ErrInvalidPeriod) {
		t.Errorf("empty period: err %v, want ErrInvalidPeriod", err)
	}
	if _, err := OutdoorTemperatureSensor(ok, []Point{{Time: t0, Value: math.NaN()}}, OutdoorSensorAttributes{}, hours(1)); !errors.Is(err, ErrNonFinite) {
		t.Errorf("NaN reference: err %v, want ErrNonFinite", err)
	}
}

func TestFloorDiv(t *testing.T) {
	for _, c := range []struct{ a, b, want int64 }{{7, 2, 3}, {-7, 2, -4}, {-8, 2, -4}, {0, 5, 0}} {
		if got := floorDiv(c.a, c.b); got != c.want {
			t.Errorf("floorDiv(%d, %d) = %d, want %d", c.a, c.b, got, c.want)
		}
	}
}

func BenchmarkOutdoorTemperatureSensor(b *testing.B) {
	sensor, p := minuteSeries(func(m int) float64 { return 5 + 4*math.Sin(float64(m)/720) + math.Sin(float64(m)/30) })
	reference, _ := minuteSeries(func(m int) float64 { return 5 + 4*math.Sin(float64(m)/720) })
	b.ReportAllocs()
	for b.Loop() {
		if _, err := OutdoorTemperatureSensor(sensor, reference, OutdoorSensorAttributes{}, p); err != nil {
			b.Fatal(err)
		}
	}
}
