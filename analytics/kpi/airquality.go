package kpi

// DefaultOutdoorCO2 is the outdoor CO2 concentration assumed when the
// component has no outdoor CO2 attribute, in ppm.
const DefaultOutdoorCO2 = 400.0

// AirQualityAttributes configure RoomAirQuality.
type AirQualityAttributes struct {
	// OutdoorCO2 in ppm; 0 means DefaultOutdoorCO2.
	OutdoorCO2 float64
}

// Upper bounds of the indoor air classes of EN 13779 (table A.10, typical
// range), as CO2 concentration above outdoor air in ppm.
const (
	ida1MaxExcess = 400.0
	ida2MaxExcess = 600.0
	ida3MaxExcess = 1000.0
)

// Air quality signal thresholds, as shares of the covered time in percent.
const (
	airRedMinIDA4Share     = 5.0
	airYellowMinIDA34Share = 10.0
)

// RoomAirQuality classifies a room's CO2 pin (ppm) into the indoor air
// classes of EN 13779 by the concentration above outdoor air:
//
//	IDA 1 (good):      excess <= 400 ppm
//	IDA 2 (medium):    400 ppm < excess <= 600 ppm
//	IDA 3 (moderate):  600 ppm < excess <= 1000 ppm
//	IDA 4 (poor):      excess > 1000 ppm
//
// KPIs: hours and shares of covered time per class, and the time-weighted
// mean, median, minimum and maximum concentration.
//
// Signal color: red when more than 5 % of the covered time is IDA 4,
// otherwise yellow when more than 10 % is IDA 3 or 4, otherwise green.
// Grey when the period holds no data.
func RoomAirQuality(co2 []Point, attrs AirQualityAttributes, p Period) (Result, error) {
	segs, err := steps(co2, p)
	if err != nil {
		return Result{}, err
	}
	if len(segs) == 0 {
		return noData(), nil
	}
	outdoor := attrs.OutdoorCO2
	if outdoor == 0 {
		outdoor = DefaultOutdoorCO2
	}
	classHours, covered, pieces := hoursPerClass(segs, func(co2 float64) int {
		switch excess := co2 - outdoor; {
		case excess <= ida1MaxExcess:
			return 0
		case excess <= ida2MaxExcess:
			return 1
		case excess <= ida3MaxExcess:
			return 2
		}
		return 3
	})
	names := []string{"IDA1", "IDA2", "IDA3", "IDA4"}
	var res Result
	for i, n := range names {
		res.KPIs = append(res.KPIs, KPI{ID: "co2 duration." + n + ".relative", Value: percent(classHours[i], covered), Unit: "%"})
	}
	for i, n := range names {
		res.KPIs = append(res.KPIs, KPI{ID: "co2 duration." + n + ".absolute", Value: classHours[i], Unit: "h"})
	}
	mean, minimum, maximum := weightedStats(pieces)
	median := weightedMedian(pieces)
	res.KPIs = append(res.KPIs,
		KPI{ID: "co2.maximum", Value: maximum, Unit: "ppm"},
		KPI{ID: "co2.minimum", Value: minimum, Unit: "ppm"},
		KPI{ID: "co2.mean", Value: mean, Unit: "ppm"},
		KPI{ID: "co2.median", Value: median, Unit: "ppm"},
	)
	switch {
	case percent(classHours[3], covered) > airRedMinIDA4Share:
		res.Color = Red
	case percent(classHours[2]+classHours[3], covered) > airYellowMinIDA34Share:
		res.Color = Yellow
	default:
		res.Color = Green
	}
	res.Plots = []Plot{{
		Type: "pie_chart", Title: "co2 duration per indoor air class", Unit: "h",
		Labels: names, Values: classHours[:],
	}}
	return res, nil
}
