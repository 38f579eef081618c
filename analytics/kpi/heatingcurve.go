package kpi

import (
	"errors"
	"math"
)

// DefaultHeatingCurveTolerance is the deviation, in K, of the supply
// temperature from the heating curve up to which it counts as following
// the curve when no attribute says otherwise.
const DefaultHeatingCurveTolerance = 3.0

// ErrInvalidCurve is returned for heating curve attributes whose two
// points do not span a range of outdoor temperatures.
var ErrInvalidCurve = errors.New("kpi: heating curve needs two points with outdoor_low below outdoor_high")

// HeatingCurveAttributes configure HeatingCurve: the configured curve is
// the straight line through (OutdoorLow, SupplyAtLow) and (OutdoorHigh,
// SupplyAtHigh), all in °C, held flat beyond the two points (controllers
// limit the supply temperature there), e.g. -12 °C → 70 °C and
// 20 °C → 25 °C.
type HeatingCurveAttributes struct {
	OutdoorLow, SupplyAtLow   float64
	OutdoorHigh, SupplyAtHigh float64
	// Tolerance in K; 0 means DefaultHeatingCurveTolerance.
	Tolerance float64
}

// supplyFor returns the curve's supply temperature at an outdoor
// temperature.
func (a HeatingCurveAttributes) supplyFor(outdoor float64) float64 {
	x := math.Min(math.Max(outdoor, a.OutdoorLow), a.OutdoorHigh)
	return a.SupplyAtLow + (x-a.OutdoorLow)*(a.SupplyAtHigh-a.SupplyAtLow)/(a.OutdoorHigh-a.OutdoorLow)
}

// Heating curve signal thresholds, as shares of the analysed time in
// percent within the tolerance.
const (
	curveGreenMinWithin  = 90.0
	curveYellowMinWithin = 70.0
)

// HeatingCurve compares the supply temperature of a heating circuit with
// the supply temperature its configured curve gives for the outdoor
// temperature at the same time, wherever both pins have a value and, when
// an operating message series is given (non-nil), only while it is above 0.
//
// The deviation is supply minus curve: positive means hotter than
// configured (heat losses, a condensing boiler that cannot condense).
// KPIs: "heating curve deviation.mean" (time-weighted, signed, K),
// "heating curve deviation.maximum" (largest absolute deviation, K), the
// time within the tolerance "heating curve deviation.within tolerance" (h)
// and ".relative" (% of analysed time), and the time above and below it,
// "heating curve deviation.above tolerance" and ".below tolerance" (h).
// With an operating message also "operating time" and
// "operating time.relative".
//
// Signal color from the share within the tolerance: at least 90 % green,
// at least 70 % yellow, below 70 % red. Grey when no time could be
// analysed.
func HeatingCurve(supply, outdoor, operating []Point, attrs HeatingCurveAttributes, p Period) (Result, error) {
	if !(attrs.OutdoorLow < attrs.OutdoorHigh) {
		return Result{}, ErrInvalidCurve
	}
	tol := attrs.Tolerance
	if tol == 0 {
		tol = DefaultHeatingCurveTolerance
	}
	s, err := steps(supply, p)
	if err != nil {
		return Result{}, err
	}
	o, err := steps(outdoor, p)
	if err != nil {
		return Result{}, err
	}
	dev := combine(s, o, func(sv, ov float64) float64 { return sv - attrs.supplyFor(ov) })
	dev, opKPIs, err := whileOperating(dev, operating, p)
	if err != nil {
		return Result{}, err
	}
	if len(dev) == 0 {
		return noData(), nil
	}
	var analysed, sum, maxAbs, within, above, below float64
	for _, d := range dev {
		h := d.hours()
		analysed += h
		sum += d.value * h
		maxAbs = max(maxAbs, math.Abs(d.value))
		switch {
		case d.value > tol:
			above += h
		case d.value < -tol:
			below += h
		default:
			within += h
		}
	}
	withinShare := percent(within, analysed)
	res := Result{KPIs: append(opKPIs,
		KPI{ID: "heating curve deviation.mean", Value: sum / analysed, Unit: "K"},
		KPI{ID: "heating curve deviation.maximum", Value: maxAbs, Unit: "K"},
		KPI{ID: "heating curve deviation.within tolerance", Value: within, Unit: "h"},
		KPI{ID: "heating curve deviation.within tolerance.relative", Value: withinShare, Unit: "%"},
		KPI{ID: "heating curve deviation.above tolerance", Value: above, Unit: "h"},
		KPI{ID: "heating curve deviation.below tolerance", Value: below, Unit: "h"},
	)}
	res.Color = colorFrom(withinShare, curveGreenMinWithin, curveYellowMinWithin)
	res.Thresholds = []KPI{{ID: "heating curve deviation.tolerance", Value: tol, Unit: "K"}}
	res.Plots = []Plot{{
		Type: "pie_chart", Title: "supply temperature against heating curve", Unit: "h",
		Labels: []string{"below curve", "within tolerance", "above curve"}, Values: []float64{below, within, above},
	}}
	return res, nil
}
