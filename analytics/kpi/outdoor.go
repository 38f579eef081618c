package kpi

import "math"

// DefaultOutdoorTolerance is the difference, in K, between an outdoor
// temperature sensor and its reference up to which the sensor counts as
// agreeing when no attribute says otherwise.
const DefaultOutdoorTolerance = 1.0

// OutdoorSensorAttributes configure OutdoorTemperatureSensor.
type OutdoorSensorAttributes struct {
	// Tolerance in K; 0 means DefaultOutdoorTolerance.
	Tolerance float64
}

// Outdoor temperature sensor signal thresholds, as shares of the analysed
// time in percent with an absolute difference within the tolerance.
const (
	outdoorGreenMinWithin  = 90.0
	outdoorYellowMinWithin = 70.0
	// radiationMinHours: a day counts as radiation influenced when the
	// sensor read above reference plus tolerance for at least this long.
	radiationMinHours = 1.0
)

const nanosPerDay = int64(24 * 60 * 60 * 1e9)

// OutdoorTemperatureSensor compares an outdoor temperature sensor with a
// reference temperature pin (another sensor or weather data the caller
// stores; bdp fetches nothing from outside), wherever both have a value.
//
// KPIs: the time-weighted mean and the maximum of |sensor - reference|,
// "temperature difference.mean" and "temperature difference.maximum" (K);
// the time within the tolerance, "temperature difference.within tolerance"
// (h) and ".relative" (% of analysed time); and, with aedifion's
// identifiers, "radiation influenced.total", the number of UTC days on
// which the sensor read more than the tolerance above the reference for at
// least 1 h in total (sun on the housing), and "radiation influenced.relative",
// those days as a share of the days with analysed time (%).
//
// Signal color from the share within the tolerance: at least 90 % green,
// at least 70 % yellow, below 70 % red (controllers relying on the sensor
// over- or undersupply the building). Grey when no time could be analysed.
func OutdoorTemperatureSensor(sensor, reference []Point, attrs OutdoorSensorAttributes, p Period) (Result, error) {
	tol := attrs.Tolerance
	if tol == 0 {
		tol = DefaultOutdoorTolerance
	}
	s, err := steps(sensor, p)
	if err != nil {
		return Result{}, err
	}
	r, err := steps(reference, p)
	if err != nil {
		return Result{}, err
	}
	diff := combine(s, r, func(a, b float64) float64 { return a - b })
	if len(diff) == 0 {
		return noData(), nil
	}
	var analysed, within, sum, maximum float64
	var days, influencedDays int
	day, aboveToday := int64(math.MinInt64), 0.0
	closeDay := func() {
		if aboveToday >= radiationMinHours {
			influencedDays++
		}
	}
	for _, d := range diff {
		abs := math.Abs(d.value)
		h := d.hours()
		analysed += h
		sum += abs * h
		maximum = max(maximum, abs)
		if abs <= tol {
			within += h
		}
		// Split the piece at UTC midnights to count hours above per day.
		for start := d.start; start < d.end; {
			dayOf := floorDiv(start, nanosPerDay)
			end := min(d.end, (dayOf+1)*nanosPerDay)
			if dayOf != day {
				closeDay()
				day, aboveToday = dayOf, 0
				days++
			}
			if d.value > tol {
				aboveToday += float64(end-start) / nanosPerHour
			}
			start = end
		}
	}
	closeDay()
	withinShare := percent(within, analysed)
	res := Result{KPIs: []KPI{
		{ID: "temperature difference.mean", Value: sum / analysed, Unit: "K"},
		{ID: "temperature difference.maximum", Value: maximum, Unit: "K"},
		{ID: "temperature difference.within tolerance", Value: within, Unit: "h"},
		{ID: "temperature difference.within tolerance.relative", Value: withinShare, Unit: "%"},
		{ID: "radiation influenced.total", Value: float64(influencedDays), Unit: "days"},
		{ID: "radiation influenced.relative", Value: percent(float64(influencedDays), float64(days)), Unit: "%"},
	}}
	res.Color = colorFrom(withinShare, outdoorGreenMinWithin, outdoorYellowMinWithin)
	res.Thresholds = []KPI{{ID: "temperature difference.tolerance", Value: tol, Unit: "K"}}
	res.Plots = []Plot{{
		Type: "pie_chart", Title: "outdoor temperature against reference", Unit: "h",
		Labels: []string{"within tolerance", "outside tolerance"}, Values: []float64{within, analysed - within},
	}}
	return res, nil
}

// floorDiv divides rounding towards minus infinity, so instants before
// 1970 fall on the right day.
func floorDiv(a, b int64) int64 {
	q := a / b
	if a%b != 0 && (a < 0) != (b < 0) {
		q--
	}
	return q
}
