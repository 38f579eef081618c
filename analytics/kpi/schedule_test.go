package kpi

import (
	"errors"
	"math"
	"slices"
	"testing"
	"time"
)

func mustSchedule(t testing.TB, raw string) Schedule {
	t.Helper()
	s, err := ParseSchedule([]byte(raw))
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func TestScheduleCompliance(t *testing.T) {
	// t0 is Monday 2 Nov 2026, 00:00 UTC. Schedule Monday 06:00-18:00 UTC,
	// none on Tuesday. Operating over 48 h: 0-5 h (outside), 7-20 h (11 h
	// inside, 2 h outside; 6-7 h scheduled but off), Tuesday 30-31 h
	// (outside): 19 h on, 8 h outside.
	utc := mustSchedule(t, `{"monday": [["06:00", "18:00"]]}`)
	// Berlin is UTC+1 in November: 07:00-19:00 local is the same span.
	berlin := mustSchedule(t, `{"time_zone": "Europe/Berlin", "monday": [["07:00", "12:00"], ["12:00", "19:00"]]}`)
	op := pattern([]float64{0, 300, 420, 1200, 1800, 1860}, []float64{1, 0, 1, 0, 1, 0})
	reversed := slices.Clone(op)
	slices.Reverse(reversed)
	known := map[string]float64{
		"operating time": 19, "operating time.relative": 100 * 19.0 / 48,
		"operation outside schedule": 8, "operation outside schedule.relative": 100 * 8.0 / 19,
		"no operation inside schedule": 1,
	}
	// Europe/Berlin leaves daylight saving time on Sunday 25 Oct 2026: that
	// local day lasts 25 h, 22:00 UTC on the 24th to 23:00 UTC on the 25th.
	dstStart := time.Date(2026, 10, 24, 22, 0, 0, 0, time.UTC)
	tests := []struct {
		name      string
		operating []Point
		schedule  Schedule
		period    Period
		want      map[string]float64
		color     SignalColor
		noData    bool
	}{{
		name: "known operation in UTC", operating: op, schedule: utc, period: hours(48), want: known, color: Red,
	}, {
		name: "same in Europe/Berlin, unsorted", operating: reversed, schedule: berlin, period: hours(48), want: known, color: Red,
	}, {
		name: "whole local day across the DST change", schedule: mustSchedule(t, `{"time_zone": "Europe/Berlin", "sunday": [["00:00", "24:00"]]}`),
		operating: []Point{{Time: dstStart.Add(-time.Hour), Value: 1}},
		period:    Period{Start: dstStart, End: dstStart.Add(26 * time.Hour)},
		// 25 h inside, the last hour (Monday) outside: 1/26 = 3.8 %.
		want:  map[string]float64{"operating time": 26, "operation outside schedule": 1, "operation outside schedule.relative": 100.0 / 26},
		color: Green,
	}, {
		name: "never operating", operating: pattern([]float64{-60, 3000}, []float64{0, 1}), schedule: utc, period: hours(24),
		want: map[string]float64{
			"operating time": 0, "operation outside schedule": 0, "operation outside schedule.relative": 0,
			"no operation inside schedule": 12,
		},
		color: Green,
	}, {
		// One point at 17:00, on until the end of a 20 h period: 1 h inside, 2 outside.
		name: "one point", operating: pattern([]float64{1020}, []float64{1}), schedule: utc, period: hours(20),
		want:  map[string]float64{"operating time": 3, "operating time.relative": 100, "operation outside schedule": 2},
		color: Red,
	}, {
		name: "no data", schedule: utc, period: hours(24), color: Grey, noData: true,
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := ScheduleCompliance(tt.operating, tt.schedule, tt.period)
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

func TestParseScheduleRefusesBadInput(t *testing.T) {
	for _, raw := range []string{
		`[]`,
		`{"funday": [["06:00", "18:00"]]}`,
		`{"monday": [["6:00", "18:00"]]}`,
		`{"monday": [["06:00", "24:01"]]}`,
		`{"monday": [["18:00", "06:00"]]}`,
		`{"monday": "06:00-18:00"}`,
		`{"time_zone": "Mars/Olympus", "monday": [["06:00", "18:00"]]}`,
	} {
		if _, err := ParseSchedule([]byte(raw)); !errors.Is(err, ErrInvalidSchedule) {
			t.Errorf("%s: err %v, want ErrInvalidSchedule", raw, err)
		}
	}
}

func TestScheduleComplianceRefusesBadInput(t *testing.T) {
	s := mustSchedule(t, `{}`)
	if _, err := ScheduleCompliance(pattern([]float64{0}, []float64{1}), s, Period{Start: t0, End: t0}); !errors.Is(err, ErrInvalidPeriod) {
		t.Errorf("empty period: err %v, want ErrInvalidPeriod", err)
	}
	if _, err := ScheduleCompliance([]Point{{Time: t0, Value: math.NaN()}}, s, hours(1)); !errors.Is(err, ErrNonFinite) {
		t.Errorf("NaN: err %v, want ErrNonFinite", err)
	}
}

func BenchmarkScheduleCompliance(b *testing.B) {
	s := mustSchedule(b, `{"time_zone": "Europe/Berlin", "monday": [["06:00", "18:00"]], "tuesday": [["06:00", "18:00"]],
		"wednesday": [["06:00", "18:00"]], "thursday": [["06:00", "18:00"]], "friday": [["06:00", "14:00"]]}`)
	// On for 50 minutes of every 70: about 580 switchings in 4 weeks.
	operating, p := minuteSeries(func(m int) float64 { return float64(min(1, m%70/20)) })
	b.ReportAllocs()
	for b.Loop() {
		if _, err := ScheduleCompliance(operating, s, p); err != nil {
			b.Fatal(err)
		}
	}
}
