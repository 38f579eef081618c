package kpi

// DefaultMinSpread is the temperature spread, in K, below which a thermal
// loop counts as poorly utilised when no attribute says otherwise.
const DefaultMinSpread = 5.0

// SpreadAttributes configure TemperatureSpread.
type SpreadAttributes struct {
	// MinSpread in K; 0 means DefaultMinSpread.
	MinSpread float64
}

// Temperature spread signal thresholds, as shares of the analysed time in
// percent with a spread below MinSpread.
const (
	spreadGreenMaxBelow  = 10.0
	spreadYellowMaxBelow = 50.0
)

// TemperatureSpread assesses inlet minus outlet temperature of a thermal
// loop (for a heating loop: flow minus return), wherever both pins have a
// value and, when an operating message series is given (non-nil), only
// while it is above 0.
//
// KPIs: "temperature spread.average" (time-weighted), ".minimum",
// ".maximum" (K: aedifion's specification states them in °C, but a
// spread is a difference, which converts to °F by the factor alone, not
// with the scale's offset), and the time
// with a spread below MinSpread, "temperature spread.below minimum" (h) and
// "temperature spread.below minimum.relative" (% of analysed time). With an
// operating message also "operating time" and "operating time.relative".
//
// Signal color from the share below MinSpread: at most 10 % green (the loop
// is well utilised), at most 50 % yellow, above 50 % red (a small spread
// means too much volume flow for the heat delivered: pump energy wasted).
// Grey when no time could be analysed.
func TemperatureSpread(inlet, outlet, operating []Point, attrs SpreadAttributes, p Period) (Result, error) {
	bound := attrs.MinSpread
	if bound == 0 {
		bound = DefaultMinSpread
	}
	in, err := steps(inlet, p)
	if err != nil {
		return Result{}, err
	}
	out, err := steps(outlet, p)
	if err != nil {
		return Result{}, err
	}
	spread := combine(in, out, func(i, o float64) float64 { return i - o })
	spread, opKPIs, err := whileOperating(spread, operating, p)
	if err != nil {
		return Result{}, err
	}
	if len(spread) == 0 {
		return noData(), nil
	}
	var analysed, below float64
	pieces := make([]weighted, len(spread))
	for i, s := range spread {
		h := s.hours()
		analysed += h
		pieces[i] = weighted{value: s.value, hours: h}
		if s.value < bound {
			below += h
		}
	}
	mean, minimum, maximum := weightedStats(pieces)
	belowShare := percent(below, analysed)
	res := Result{KPIs: append(opKPIs,
		KPI{ID: "temperature spread.average", Value: mean, Unit: "K"},
		KPI{ID: "temperature spread.minimum", Value: minimum, Unit: "K"},
		KPI{ID: "temperature spread.maximum", Value: maximum, Unit: "K"},
		KPI{ID: "temperature spread.below minimum", Value: below, Unit: "h"},
		KPI{ID: "temperature spread.below minimum.relative", Value: belowShare, Unit: "%"},
	)}
	res.Color = colorUpTo(belowShare, spreadGreenMaxBelow, spreadYellowMaxBelow)
	res.Thresholds = []KPI{{ID: "temperature spread.required minimum", Value: bound, Unit: "K"}}
	res.Plots = []Plot{{
		Type: "pie_chart", Title: "temperature spread against minimum", Unit: "h",
		Labels: []string{"below minimum", "at or above minimum"}, Values: []float64{below, analysed - below},
	}}
	return res, nil
}
