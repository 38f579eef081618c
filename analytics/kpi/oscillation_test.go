package kpi

import (
	"errors"
	"math"
	"slices"
	"testing"
)

// sineLoop is a measured value 20 + 2 sin(2 pi m / 20 min), sampled each
// minute for the given minutes: a 20-minute oscillation of amplitude 2.
func sineLoop(minutes int) []Point {
	pts := make([]Point, minutes)
	for m := range pts {
		pts[m] = Point{Time: at(float64(m)), Value: 20 + 2*math.Sin(2*math.Pi*float64(m)/20)}
	}
	return pts
}

func TestControlLoopOscillation(t *testing.T) {
	setpoint := pattern([]float64{-1}, []float64{20})
	// Square wave: measured 21, 19, 21, ... switching every 5 min for 2 h.
	var square []Point
	for m := 0.0; m < 120; m += 5 {
		v := 21.0
		if int(m/5)%2 == 1 {
			v = 19
		}
		square = append(square, Point{Time: at(m), Value: v})
	}
	shuffled := slices.Clone(square)
	slices.Reverse(shuffled)
	nan := math.NaN()
	tests := []struct {
		name     string
		measured []Point
		setpoint []Point
		attrs    OscillationAttributes
		period   Period
		want     map[string]float64
		color    SignalColor
		noData   bool
	}{{
		// Error -2 sin(...): negative from minute 1, 0 (deadband) at 0, 10,
		// 20, ...; sign changes at 11, 21, 31, 41, 51 = 5 in one hour:
		// yellow. Closed half-waves 11-21, 21-31, 31-41, 41-51, each peak 2.
		name: "sine of 20 minutes", measured: sineLoop(60), setpoint: setpoint, period: hours(1),
		want: map[string]float64{
			"control error.sign changes": 5, "control error.sign changes per hour": 5,
			"control error.amplitude.average": 2, "control error.amplitude.maximum": 2,
		},
		color: Yellow,
	}, {
		// Sign changes at 5, 10, ..., 115 min = 23 in 2 h = 11.5/h: red;
		// 22 closed half-waves of peak 1.
		name: "square wave of 10 minutes", measured: square, setpoint: setpoint, period: hours(2),
		want: map[string]float64{
			"control error.sign changes": 23, "control error.sign changes per hour": 11.5,
			"control error.amplitude.average": 1, "control error.amplitude.maximum": 1,
		},
		color: Red,
	}, {
		name: "unsorted input", measured: shuffled, setpoint: setpoint, period: hours(2),
		want:  map[string]float64{"control error.sign changes": 23},
		color: Red,
	}, {
		name: "deadband wider than the swing", measured: sineLoop(60), setpoint: setpoint, period: hours(1),
		attrs: OscillationAttributes{Deadband: 2.5},
		want:  map[string]float64{"control error.sign changes": 0, "control error.amplitude.average": nan},
		color: Green,
	}, {
		// One change in 4 h, no closed half-wave.
		name: "one overshoot", period: hours(4), setpoint: setpoint,
		measured: pattern([]float64{0, 60}, []float64{18, 20.5}),
		want:     map[string]float64{"control error.sign changes": 1, "control error.sign changes per hour": 0.25, "control error.amplitude.maximum": nan},
		color:    Green,
	}, {
		name: "one point", measured: pattern([]float64{0}, []float64{19}), setpoint: setpoint, period: hours(1),
		want:  map[string]float64{"control error.sign changes": 0, "control error.sign changes per hour": 0},
		color: Green,
	}, {
		name: "empty", setpoint: setpoint, period: hours(1), color: Grey, noData: true,
	}, {
		name: "points only after the period", measured: pattern([]float64{61, 62}, []float64{19, 21}), setpoint: setpoint,
		period: hours(1), color: Grey, noData: true,
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := ControlLoopOscillation(tt.measured, tt.setpoint, tt.attrs, tt.period)
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

func TestControlLoopOscillationRefusesBadInput(t *testing.T) {
	ok := pattern([]float64{0}, []float64{20})
	if _, err := ControlLoopOscillation(ok, ok, OscillationAttributes{}, Period{Start: at(5), End: t0}); !errors.Is(err, ErrInvalidPeriod) {
		t.Errorf("end before start: err %v, want ErrInvalidPeriod", err)
	}
	if _, err := ControlLoopOscillation([]Point{{Time: t0, Value: math.Inf(-1)}}, ok, OscillationAttributes{}, hours(1)); !errors.Is(err, ErrNonFinite) {
		t.Errorf("-Inf value: err %v, want ErrNonFinite", err)
	}
}

func BenchmarkControlLoopOscillation(b *testing.B) {
	measured, p := minuteSeries(func(m int) float64 { return 20 + 2*math.Sin(2*math.Pi*float64(m)/20) })
	setpoint, _ := minuteSeries(func(m int) float64 { return 20 })
	b.ReportAllocs()
	for b.Loop() {
		if _, err := ControlLoopOscillation(measured, setpoint, OscillationAttributes{}, p); err != nil {
			b.Fatal(err)
		}
	}
}
