package kpi

import (
	"fmt"
	"time"
)

// Seasons of ComfortAttributes.
const (
	HeatingSeason = "heating"
	CoolingSeason = "cooling"
)

// comfortBand is an inclusive operative temperature range in °C.
type comfortBand struct{ low, high float64 }

// comfortBands returns the bands of categories I, II and III for a season.
// The values are EN 16798-1:2019 Annex B's default design ranges for
// offices and rooms of similar sedentary use (about 1.2 met; clothing
// 1.0 clo in the heating season, 0.5 clo in the cooling season), the same
// as EN 15251:2007 Table A.2:
//
//	heating: I 21.0-23.0, II 20.0-24.0, III 19.0-25.0 °C
//	cooling: I 23.5-25.5, II 23.0-26.0, III 22.0-27.0 °C
//
// Category IV is every value outside category III.
//
// Checked against two independent public tables that agree on every
// bound: the comfort category limits of the H2020 MOBISTYLE data analysis
// (github.com/SVGoogle/Data-Analysis-MOBISTYLE,
// Documentation/source/plots.rst, offices with mechanical cooling, after
// DS/EN 15251 at 1.2 met) and the fixed seasonal thresholds of
// github.com/bruadam/hvx core/analytics/calculators/en16798_calculator.py
// (EN 16798-1). These bands are for mechanically heated or cooled rooms;
// the adaptive model for free-running buildings (comfort temperature
// 0.33·Θrm + 18.8 °C, pythermalcomfort adaptive_en) is not applied here.
func comfortBands(season string) [3]comfortBand {
	if season == CoolingSeason {
		return [3]comfortBand{{23.5, 25.5}, {23.0, 26.0}, {22.0, 27.0}}
	}
	return [3]comfortBand{{21.0, 23.0}, {20.0, 24.0}, {19.0, 25.0}}
}

// ComfortAttributes configure ThermalComfort.
type ComfortAttributes struct {
	// Season is HeatingSeason or CoolingSeason; empty takes the season of
	// the period's start month in UTC: heating from October to April,
	// cooling from May to September.
	Season string
}

// Thermal comfort signal thresholds, as shares of the analysed time in
// percent.
const (
	comfortGreenMinGood  = 90.0 // categories I and II
	comfortRedMinOutside = 10.0 // category IV
)

// ThermalComfort classifies a room's operative temperature into the
// EN 16798-1 categories I (high expectation) to IV (outside III) with the
// bands of comfortBands for the season; each value falls into the best
// category whose band holds it (bounds included).
//
// KPIs: "thermal comfort.categoryI" to ".categoryIV" (h) and each with
// ".relative" (% of the time with a value), and the time-weighted
// "operative temperature.mean", ".minimum" and ".maximum" (°C).
//
// Signal color: red when more than 10 % of the time is in category IV,
// otherwise green when at least 90 % is in categories I and II, otherwise
// yellow. Grey when the period holds no data.
func ThermalComfort(operative []Point, attrs ComfortAttributes, p Period) (Result, error) {
	season := attrs.Season
	switch season {
	case HeatingSeason, CoolingSeason:
	case "":
		season = HeatingSeason
		if m := p.Start.UTC().Month(); m >= time.May && m <= time.September {
			season = CoolingSeason
		}
	default:
		return Result{}, fmt.Errorf("kpi: season %q is neither %q nor %q", season, HeatingSeason, CoolingSeason)
	}
	segs, err := steps(operative, p)
	if err != nil {
		return Result{}, err
	}
	if len(segs) == 0 {
		return noData(), nil
	}
	bands := comfortBands(season)
	inCategory, covered, pieces := hoursPerClass(segs, func(v float64) int {
		for c, b := range bands {
			if v >= b.low && v <= b.high {
				return c
			}
		}
		return 3 // outside category III
	})
	mean, minimum, maximum := weightedStats(pieces)
	names := [4]string{"categoryI", "categoryII", "categoryIII", "categoryIV"}
	var res Result
	for c, name := range names {
		res.KPIs = append(res.KPIs,
			KPI{ID: "thermal comfort." + name, Value: inCategory[c], Unit: "h"},
			KPI{ID: "thermal comfort." + name + ".relative", Value: percent(inCategory[c], covered), Unit: "%"})
	}
	res.KPIs = append(res.KPIs,
		KPI{ID: "operative temperature.mean", Value: mean, Unit: "°C"},
		KPI{ID: "operative temperature.minimum", Value: minimum, Unit: "°C"},
		KPI{ID: "operative temperature.maximum", Value: maximum, Unit: "°C"})
	switch {
	case percent(inCategory[3], covered) > comfortRedMinOutside:
		res.Color = Red
	case percent(inCategory[0]+inCategory[1], covered) >= comfortGreenMinGood:
		res.Color = Green
	default:
		res.Color = Yellow
	}
	res.Plots = []Plot{{
		Type: "pie_chart", Title: "thermal comfort categories (" + season + " season)", Unit: "h",
		Labels: []string{"I", "II", "III", "IV"}, Values: inCategory[:],
	}}
	return res, nil
}
