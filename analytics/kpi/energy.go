package kpi

import (
	"errors"
	"fmt"
	"time"
)

// Meter kinds of EnergyAttributes.
const (
	// CounterMeter: the pin is a cumulative energy counter reading.
	CounterMeter = "counter"
	// PowerMeter: the pin is the momentary power.
	PowerMeter = "power"
)

// EnergyAttributes configure EnergyConsumption.
type EnergyAttributes struct {
	// MeterKind is CounterMeter or PowerMeter (required).
	MeterKind string
	// Unit of the pin: Wh, kWh or MWh for a counter, W, kW or MW for a
	// power meter; empty means kWh or kW.
	Unit string
	// PricePerKWh is the energy price in Currency per kWh; with an empty
	// Currency no cost is computed.
	PricePerKWh float64
	// Currency is the ISO 4217 code of the price, e.g. "EUR". The caller
	// converts the cost to the user's currency (package units).
	Currency string
}

// ErrInvalidMeter is returned for energy attributes that do not describe
// a meter.
var ErrInvalidMeter = errors.New("kpi: invalid meter attributes")

// toKilo returns the factor from the attribute's unit to kWh or kW.
func (a EnergyAttributes) toKilo() (float64, error) {
	counter := map[string]float64{"": 1, "Wh": 1e-3, "kWh": 1, "MWh": 1e3}
	power := map[string]float64{"": 1, "W": 1e-3, "kW": 1, "MW": 1e3}
	units := counter
	switch a.MeterKind {
	case CounterMeter:
	case PowerMeter:
		units = power
	default:
		return 0, fmt.Errorf("%w: meter kind %q is neither %q nor %q", ErrInvalidMeter, a.MeterKind, CounterMeter, PowerMeter)
	}
	f, ok := units[a.Unit]
	if !ok {
		return 0, fmt.Errorf("%w: %s unit %q", ErrUnknownUnit, a.MeterKind, a.Unit)
	}
	return f, nil
}

func isCurrencyCode(code string) bool {
	if len(code) != 3 {
		return false
	}
	for _, c := range code {
		if c < 'A' || c > 'Z' {
			return false
		}
	}
	return true
}

// Energy signal thresholds: the base load (the power exceeded 90 % of the
// time) as a share of the mean power, in percent.
const (
	energyGreenMaxBaseLoad  = 20.0
	energyYellowMaxBaseLoad = 50.0
	baseLoadQuantile        = 0.1
)

// EnergyConsumption computes the energy drawn through a meter pin and its
// cost.
//
// A power meter's energy is the time integral of its step function. A
// counter's energy is the sum of the increases between consecutive
// readings in the period (the first taken at the period start from the
// last reading before it) and up to a reading at the period's end, which
// closes the period: a meter read at both ends of a month reports the
// month's whole consumption. A decrease is a counter reset or replacement
// and adds nothing; without a reading at the end, the time after the last
// reading in the period is not counted.
//
// KPIs: "energy consumption" (kWh), "power.mean" and "power.maximum" (kW;
// for a counter the mean power between consecutive readings), "base load"
// (kW, the power exceeded 90 % of the analysed time) and
// "base load.relative" (% of the mean power), and with a currency "energy
// cost" in that currency (its Unit is the ISO 4217 code).
//
// Signal color from the relative base load: at most 20 % green, at most
// 50 % yellow, above 50 % red (much of the consumption continues while
// demand is low: equipment left running at night or at weekends). Grey
// when the period holds no power value or fewer than two counter readings.
func EnergyConsumption(meter []Point, attrs EnergyAttributes, p Period) (Result, error) {
	toKilo, err := attrs.toKilo()
	if err != nil {
		return Result{}, err
	}
	if attrs.Currency != "" && !isCurrencyCode(attrs.Currency) {
		return Result{}, fmt.Errorf("%w: currency %q is not an ISO 4217 code", ErrInvalidMeter, attrs.Currency)
	}
	segs, err := steps(meter, p)
	if err != nil {
		return Result{}, err
	}
	// pieces hold the power in kW over each analysed stretch.
	pieces := make([]weighted, 0, len(segs))
	if attrs.MeterKind == PowerMeter {
		for _, s := range segs {
			pieces = append(pieces, weighted{value: s.value * toKilo, hours: s.hours()})
		}
	} else {
		readings := make([]float64, len(segs), len(segs)+1)
		for i, s := range segs {
			readings[i] = s.value
		}
		if v, ok := readingAt(meter, p.End); ok && len(segs) > 0 {
			readings = append(readings, v)
		}
		for i := 0; i+1 < len(readings); i++ {
			increase := max(0, readings[i+1]-readings[i]) * toKilo
			pieces = append(pieces, weighted{value: increase / segs[i].hours(), hours: segs[i].hours()})
		}
	}
	if len(pieces) == 0 {
		return noData(), nil
	}
	var energy, analysed float64
	for _, w := range pieces {
		energy += w.value * w.hours
		analysed += w.hours
	}
	mean, _, maximum := weightedStats(pieces)
	base := weightedQuantile(pieces, baseLoadQuantile)
	baseShare := 0.0
	if mean > 0 {
		baseShare = percent(max(base, 0), mean)
	}
	res := Result{KPIs: []KPI{
		{ID: "energy consumption", Value: energy, Unit: "kWh"},
		{ID: "power.mean", Value: mean, Unit: "kW"},
		{ID: "power.maximum", Value: maximum, Unit: "kW"},
		{ID: "base load", Value: base, Unit: "kW"},
		{ID: "base load.relative", Value: baseShare, Unit: "%"},
	}}
	if attrs.Currency != "" {
		res.KPIs = append(res.KPIs, KPI{ID: "energy cost", Value: energy * attrs.PricePerKWh, Unit: attrs.Currency})
	}
	res.Color = colorUpTo(baseShare, energyGreenMaxBaseLoad, energyYellowMaxBaseLoad)
	baseEnergy := min(max(base, 0)*analysed, energy)
	res.Plots = []Plot{{
		Type: "pie_chart", Title: "energy consumption", Unit: "kWh",
		Labels: []string{"base load", "above base load"}, Values: []float64{baseEnergy, energy - baseEnergy},
	}}
	return res, nil
}

// readingAt is the value of the last point of series at exactly t (steps
// leaves out a point at the period's end: it describes no time inside).
func readingAt(series []Point, t time.Time) (float64, bool) {
	v, ok := 0.0, false
	for _, pt := range series {
		if pt.Time.Equal(t) {
			v, ok = pt.Value, true
		}
	}
	return v, ok
}
