package kpi

import (
	"errors"
	"math"
	"testing"
)

func TestRoomAirQuality(t *testing.T) {
	tests := []struct {
		name   string
		series []Point
		attrs  AirQualityAttributes
		period Period
		want   map[string]float64
		color  SignalColor
		noData bool
	}{{
		// 10 h with outdoor 400 ppm: 5 h at 600 (IDA1), 2 h at 950 (IDA2),
		// 2 h at 1300 (IDA3), 1 h at 1500 (IDA4). IDA4 10 % > 5 %: red.
		// Mean (5*600+2*950+2*1300+1500)/10 = 900; median: half the time
		// (5 h) is at 600.
		name: "room with known hours per class", period: hours(10),
		series: pattern([]float64{0, 300, 420, 540}, []float64{600, 950, 1300, 1500}),
		want: map[string]float64{
			"co2 duration.IDA1.absolute": 5, "co2 duration.IDA2.absolute": 2, "co2 duration.IDA3.absolute": 2, "co2 duration.IDA4.absolute": 1,
			"co2 duration.IDA1.relative": 50, "co2 duration.IDA2.relative": 20, "co2 duration.IDA3.relative": 20, "co2 duration.IDA4.relative": 10,
			"co2.mean": 900, "co2.median": 600, "co2.minimum": 600, "co2.maximum": 1500,
		},
		color: Red,
	}, {
		// Class bounds are inclusive above: excess exactly 400 is IDA1,
		// 600 is IDA2, 1000 is IDA3. Outdoor attribute 450 ppm. IDA3 share
		// 25 % > 10 %, no IDA4: yellow.
		name: "bounds and outdoor attribute", period: hours(4), attrs: AirQualityAttributes{OutdoorCO2: 450},
		series: pattern([]float64{0, 60, 120, 180}, []float64{850, 851, 1050, 1450}),
		want: map[string]float64{
			"co2 duration.IDA1.absolute": 1, "co2 duration.IDA2.absolute": 2, "co2 duration.IDA3.absolute": 1, "co2 duration.IDA4.absolute": 0,
			"co2.median": 851,
		},
		color: Yellow,
	}, {
		name: "good room", period: hours(2), series: pattern([]float64{-30, 60}, []float64{500, 700}),
		want:  map[string]float64{"co2 duration.IDA1.relative": 100, "co2.mean": 600, "co2.minimum": 500},
		color: Green,
	}, {
		// Unsorted; the 1 h before the first point is not covered.
		name: "unsorted input, late first point", period: hours(3),
		series: pattern([]float64{120, 60}, []float64{1500, 500}),
		want:   map[string]float64{"co2 duration.IDA1.absolute": 1, "co2 duration.IDA4.absolute": 1, "co2 duration.IDA4.relative": 50},
		color:  Red,
	}, {
		name: "one point", period: hours(1), series: pattern([]float64{0}, []float64{800}),
		want:  map[string]float64{"co2 duration.IDA1.relative": 100, "co2.median": 800, "co2.maximum": 800},
		color: Green,
	}, {
		name: "empty", period: hours(1), color: Grey, noData: true,
	}, {
		name: "only points after the period", period: hours(1), series: pattern([]float64{90}, []float64{800}),
		color: Grey, noData: true,
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := RoomAirQuality(tt.series, tt.attrs, tt.period)
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

func TestRoomAirQualityRefusesBadInput(t *testing.T) {
	if _, err := RoomAirQuality(nil, AirQualityAttributes{}, Period{Start: at(60), End: t0}); !errors.Is(err, ErrInvalidPeriod) {
		t.Errorf("end before start: err %v, want ErrInvalidPeriod", err)
	}
	if _, err := RoomAirQuality([]Point{{Time: t0, Value: math.Inf(1)}}, AirQualityAttributes{}, hours(1)); !errors.Is(err, ErrNonFinite) {
		t.Errorf("Inf value: err %v, want ErrNonFinite", err)
	}
}

func BenchmarkRoomAirQuality(b *testing.B) {
	series, p := minuteSeries(func(m int) float64 { return 500 + float64(m%600) })
	b.ReportAllocs()
	for b.Loop() {
		if _, err := RoomAirQuality(series, AirQualityAttributes{}, p); err != nil {
			b.Fatal(err)
		}
	}
}
