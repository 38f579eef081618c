package kpi

import (
	"errors"
	"math"
	"slices"
	"testing"
	"time"
)

func TestThermalComfort(t *testing.T) {
	// Over 10 h: 4 h at 22 °C, 3 h at 23.5, 2 h at 19.5, 1 h at 18.
	// Heating bands (I 21-23, II 20-24, III 19-25): I 4 h, II 3 h,
	// III 2 h, IV 1 h. Cooling bands (I 23.5-25.5, II 23-26, III 22-27):
	// I 3 h (23.5 on the bound), III 4 h (22 on the bound), IV 3 h.
	room := pattern([]float64{0, 240, 420, 540}, []float64{22, 23.5, 19.5, 18})
	reversed := slices.Clone(room)
	slices.Reverse(reversed)
	heating := map[string]float64{
		"thermal comfort.categoryI": 4, "thermal comfort.categoryII": 3,
		"thermal comfort.categoryIII": 2, "thermal comfort.categoryIV": 1,
		"thermal comfort.categoryI.relative": 40, "thermal comfort.categoryIV.relative": 10,
		"operative temperature.mean":    (4*22 + 3*23.5 + 2*19.5 + 1*18) / 10.0,
		"operative temperature.minimum": 18, "operative temperature.maximum": 23.5,
	}
	july := time.Date(2026, 7, 6, 0, 0, 0, 0, time.UTC)
	tests := []struct {
		name   string
		room   []Point
		attrs  ComfortAttributes
		period Period
		want   map[string]float64
		color  SignalColor
		noData bool
	}{{
		// IV exactly 10 % is not red; I+II 70 % is not green.
		name: "heating season", room: room, attrs: ComfortAttributes{Season: HeatingSeason}, period: hours(10),
		want: heating, color: Yellow,
	}, {
		// t0 is in November: heating by default; unsorted input.
		name: "season from the month, unsorted", room: reversed, period: hours(10),
		want: heating, color: Yellow,
	}, {
		name: "cooling season", room: room, attrs: ComfortAttributes{Season: CoolingSeason}, period: hours(10),
		want: map[string]float64{
			"thermal comfort.categoryI": 3, "thermal comfort.categoryII": 0,
			"thermal comfort.categoryIII": 4, "thermal comfort.categoryIV": 3,
			"thermal comfort.categoryIV.relative": 30,
		},
		color: Red,
	}, {
		// A July period defaults to cooling: 26 °C is II there (IV in the
		// heating season), 25 °C is I.
		name: "july defaults to cooling", period: Period{Start: july, End: july.Add(4 * time.Hour)},
		room: []Point{{Time: july.Add(-time.Hour), Value: 26}, {Time: july.Add(time.Hour), Value: 25}},
		want: map[string]float64{
			"thermal comfort.categoryI": 3, "thermal comfort.categoryII": 1,
			"thermal comfort.categoryII.relative": 25,
		},
		color: Green,
	}, {
		// One point at 1 h, one after the period: 1 h of data, in I.
		name: "one point, point after the period", period: hours(2),
		room: pattern([]float64{60, 180}, []float64{22, 30}),
		want: map[string]float64{
			"thermal comfort.categoryI": 1, "thermal comfort.categoryI.relative": 100, "thermal comfort.categoryIV": 0,
		},
		color: Green,
	}, {
		name: "no data", period: hours(10), color: Grey, noData: true,
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := ThermalComfort(tt.room, tt.attrs, tt.period)
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

func TestThermalComfortRefusesBadInput(t *testing.T) {
	ok := pattern([]float64{0}, []float64{22})
	if _, err := ThermalComfort(ok, ComfortAttributes{}, Period{Start: t0, End: t0}); !errors.Is(err, ErrInvalidPeriod) {
		t.Errorf("empty period: err %v, want ErrInvalidPeriod", err)
	}
	if _, err := ThermalComfort([]Point{{Time: t0, Value: math.NaN()}}, ComfortAttributes{}, hours(1)); !errors.Is(err, ErrNonFinite) {
		t.Errorf("NaN: err %v, want ErrNonFinite", err)
	}
	if _, err := ThermalComfort(ok, ComfortAttributes{Season: "monsoon"}, hours(1)); err == nil {
		t.Error("unknown season accepted")
	}
}

func BenchmarkThermalComfort(b *testing.B) {
	room, p := minuteSeries(func(m int) float64 { return 22 + 3*math.Sin(float64(m)/720) })
	b.ReportAllocs()
	for b.Loop() {
		if _, err := ThermalComfort(room, ComfortAttributes{}, p); err != nil {
			b.Fatal(err)
		}
	}
}
