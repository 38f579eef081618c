package kpi

import "math"

// Defaults of DeviationAttributes, in the unit of the pins (K for
// temperatures).
const (
	DefaultDeviationTolerance = 1.0
	DefaultDeviationLarge     = 2.0
)

// DeviationAttributes configure SetpointDeviation.
type DeviationAttributes struct {
	// Tolerance (Y): an absolute deviation up to it counts as met; 0 means
	// DefaultDeviationTolerance.
	Tolerance float64
	// Large (X): an absolute deviation above it counts as large; 0 means
	// DefaultDeviationLarge. It is raised to Tolerance if below it.
	Large float64
}

// Setpoint deviation signal thresholds, as shares of the analysed time in
// percent.
const (
	deviationGreenMinWithin = 90.0
	deviationRedMinLarge    = 10.0
)

// SetpointDeviation compares a measured pin with its setpoint pin. The
// deviation is |measured - setpoint| wherever both have a value; when an
// operating message series is given (non-nil), only time in which it is
// above 0 is analysed, and "operating time" KPIs report it.
//
// Bands with X = Large and Y = Tolerance, each in hours and as a share of
// the analysed time: "setpoint deviation.smallerY" (deviation <= Y, the
// share of time within tolerance), "setpoint deviation.largerYsmallerX"
// (Y < deviation <= X) and "setpoint deviation.largerX" (deviation > X).
// Statistics: time-weighted mean and median, minimum and maximum of the
// absolute deviation.
//
// Signal color: red when more than 10 % of the time is above X, otherwise
// green when at least 90 % is within Y, otherwise yellow. Grey when no time
// could be analysed.
func SetpointDeviation(measured, setpoint, operating []Point, attrs DeviationAttributes, p Period) (Result, error) {
	tol, large := attrs.Tolerance, attrs.Large
	if tol == 0 {
		tol = DefaultDeviationTolerance
	}
	if large == 0 {
		large = DefaultDeviationLarge
	}
	large = max(large, tol)
	m, err := steps(measured, p)
	if err != nil {
		return Result{}, err
	}
	s, err := steps(setpoint, p)
	if err != nil {
		return Result{}, err
	}
	dev := combine(m, s, func(a, b float64) float64 { return math.Abs(a - b) })
	dev, opKPIs, err := whileOperating(dev, operating, p)
	if err != nil {
		return Result{}, err
	}
	var within, between, above, analysed float64
	pieces := make([]weighted, 0, len(dev))
	for _, d := range dev {
		h := d.hours()
		analysed += h
		pieces = append(pieces, weighted{value: d.value, hours: h})
		switch {
		case d.value <= tol:
			within += h
		case d.value <= large:
			between += h
		default:
			above += h
		}
	}
	if analysed == 0 {
		return noData(), nil
	}
	mean, minimum, maximum := weightedStats(pieces)
	median := weightedMedian(pieces)
	res := Result{KPIs: append(opKPIs,
		KPI{ID: "setpoint deviation.largerX.relative", Value: percent(above, analysed), Unit: "%"},
		KPI{ID: "setpoint deviation.largerYsmallerX.relative", Value: percent(between, analysed), Unit: "%"},
		KPI{ID: "setpoint deviation.smallerY.relative", Value: percent(within, analysed), Unit: "%"},
		KPI{ID: "setpoint deviation.largerX", Value: above, Unit: "h"},
		KPI{ID: "setpoint deviation.largerYsmallerX", Value: between, Unit: "h"},
		KPI{ID: "setpoint deviation.smallerY", Value: within, Unit: "h"},
		KPI{ID: "setpoint deviation.maximum", Value: maximum, Unit: "-"},
		KPI{ID: "setpoint deviation.minimum", Value: minimum, Unit: "-"},
		KPI{ID: "setpoint deviation.mean", Value: mean, Unit: "-"},
		KPI{ID: "setpoint deviation.median", Value: median, Unit: "-"},
	)}
	switch {
	case percent(above, analysed) > deviationRedMinLarge:
		res.Color = Red
	case percent(within, analysed) >= deviationGreenMinWithin:
		res.Color = Green
	default:
		res.Color = Yellow
	}
	res.Thresholds = []KPI{
		{ID: "setpoint deviation.tolerance", Value: tol, Unit: "-"},
		{ID: "setpoint deviation.large", Value: large, Unit: "-"},
	}
	res.Plots = []Plot{{
		Type: "pie_chart", Title: "setpoint deviation", Unit: "h",
		Labels: []string{"smallerY", "largerYsmallerX", "largerX"}, Values: []float64{within, between, above},
	}}
	return res, nil
}
