package kpi

import (
	"slices"
	"testing"
)

func TestStepsSortsACopyAndLastDuplicateWins(t *testing.T) {
	// Unsorted, with two points at 60 min: the later-given 900 wins.
	in := pattern([]float64{120, 60, 0, 60}, []float64{700, 500, 600, 900})
	before := slices.Clone(in)
	got, err := RoomAirQuality(in, AirQualityAttributes{}, hours(3))
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(in, before) {
		t.Errorf("caller's series was reordered: %v", in)
	}
	// 0-60 at 600, 60-120 at 900, 120-180 at 700: mean 733.33..., max 900.
	wantKPIs(t, got, map[string]float64{"co2.maximum": 900, "co2.mean": 2200.0 / 3, "co2.minimum": 600})
}
