package kpi

import "math"

// DefaultOscillationDeadband is the control error, in the unit of the
// pins, below which the error's sign is not trusted (sensor noise).
const DefaultOscillationDeadband = 0.1

// OscillationAttributes configure ControlLoopOscillation.
type OscillationAttributes struct {
	// Deadband: an error with |error| <= Deadband keeps the sign seen
	// before; 0 means DefaultOscillationDeadband.
	Deadband float64
}

// Control loop oscillation signal thresholds, in sign changes per covered
// hour.
const (
	oscillationGreenMaxPerHour  = 2.0
	oscillationYellowMaxPerHour = 6.0
)

// ControlLoopOscillation counts how often the control error (setpoint minus
// measured, wherever both pins have a value) changes its sign, ignoring
// errors inside the deadband so noise around zero does not count. A
// half-wave runs from one sign change to the next; its amplitude is the
// largest |error| within it. aedifion's specification names no KPI
// identifiers for this function; bdp uses "control error.sign changes"
// (count), "control error.sign changes per hour" (1/h) and, when at least
// one half-wave closed, "control error.amplitude.average" and
// "control error.amplitude.maximum" (unit of the pins).
//
// Signal color from sign changes per covered hour: at most 2 green, at most
// 6 yellow, above 6 red (a loop swinging faster than every 10 minutes).
// Grey when no time could be analysed.
func ControlLoopOscillation(measured, setpoint []Point, attrs OscillationAttributes, p Period) (Result, error) {
	deadband := attrs.Deadband
	if deadband == 0 {
		deadband = DefaultOscillationDeadband
	}
	m, err := steps(measured, p)
	if err != nil {
		return Result{}, err
	}
	s, err := steps(setpoint, p)
	if err != nil {
		return Result{}, err
	}
	errs := combine(m, s, func(mv, sv float64) float64 { return sv - mv })
	if len(errs) == 0 {
		return noData(), nil
	}
	var covered float64
	var changes int
	var sign int
	var peak float64
	var amplitudes []float64
	var waveStarts []int64
	for _, e := range errs {
		covered += e.hours()
		abs := math.Abs(e.value)
		cur := 0
		switch {
		case e.value > deadband:
			cur = 1
		case e.value < -deadband:
			cur = -1
		}
		switch {
		case cur == 0:
		case sign == 0:
			sign, peak = cur, abs
		case cur != sign:
			changes++
			if changes >= 2 {
				amplitudes = append(amplitudes, peak)
			}
			waveStarts = append(waveStarts, e.start)
			sign, peak = cur, abs
		default:
			peak = max(peak, abs)
		}
	}
	perHour := float64(changes) / covered
	res := Result{KPIs: []KPI{
		{ID: "control error.sign changes", Value: float64(changes), Unit: "count"},
		{ID: "control error.sign changes per hour", Value: perHour, Unit: "1/h"},
	}}
	if len(amplitudes) > 0 {
		_, mean, _, maximum := stats(amplitudes)
		res.KPIs = append(res.KPIs,
			KPI{ID: "control error.amplitude.average", Value: mean, Unit: "-"},
			KPI{ID: "control error.amplitude.maximum", Value: maximum, Unit: "-"},
		)
		res.Plots = append(res.Plots, Plot{
			Type: "bar_chart", Title: "control error amplitude per half-wave", Unit: "-",
			Labels: cycleLabels(waveStarts[:len(amplitudes)]), Values: amplitudes,
		})
	}
	switch {
	case perHour <= oscillationGreenMaxPerHour:
		res.Color = Green
	case perHour <= oscillationYellowMaxPerHour:
		res.Color = Yellow
	default:
		res.Color = Red
	}
	return res, nil
}
