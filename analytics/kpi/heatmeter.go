package kpi

import (
	"errors"
	"fmt"
)

// Water properties used by VirtualHeatMeter: values for heating water at
// about 50 °C (density 988 kg/m³, specific heat capacity 4.18 kJ/(kg·K));
// between 20 °C and 80 °C they change the result by less than 2 %.
const (
	waterDensity      = 988.0 // kg/m³
	waterHeatCapacity = 4.18  // kJ/(kg·K)
)

// DefaultVolumeFlowUnit is assumed when the volume_flow_unit attribute is
// empty, as in aedifion's specification.
const DefaultVolumeFlowUnit = "cubicMetersPerSecond"

// volumeFlowFactor returns the factor from a volume_flow_unit value
// (aedifion's names or the usual symbols) to m³/s.
func volumeFlowFactor(unit string) (float64, bool) {
	switch unit {
	case "cubicMetersPerSecond", "m³/s", "m3/s":
		return 1, true
	case "cubicMetersPerMinute", "m³/min", "m3/min":
		return 1.0 / 60, true
	case "cubicMetersPerHour", "m³/h", "m3/h":
		return 1.0 / 3600, true
	case "litersPerSecond", "l/s":
		return 1e-3, true
	case "litersPerMinute", "l/min":
		return 1e-3 / 60, true
	case "litersPerHour", "l/h":
		return 1e-3 / 3600, true
	}
	return 0, false
}

// ErrUnknownUnit is returned for a unit attribute value a kernel does not
// know.
var ErrUnknownUnit = errors.New("kpi: unknown unit")

// HeatMeterAttributes configure VirtualHeatMeter.
type HeatMeterAttributes struct {
	// VolumeFlowUnit is the unit of the volume flow pin (attribute
	// volume_flow_unit): cubicMetersPerSecond, cubicMetersPerMinute,
	// cubicMetersPerHour, litersPerSecond, litersPerMinute, litersPerHour
	// or the symbols m³/s, m³/min, m³/h, l/s, l/min, l/h; empty means
	// DefaultVolumeFlowUnit.
	VolumeFlowUnit string
}

// Virtual heat meter signal thresholds, as shares of the analysed time in
// percent with a negative heat flux while water flows.
const (
	heatMeterGreenMaxNegative  = 5.0
	heatMeterYellowMaxNegative = 20.0
)

// VirtualHeatMeter estimates the heat delivered by a circuit from its
// inlet (flow) and outlet (return) temperature and its volume flow:
// Q_dot = ρ · V_dot · c_p · (inlet - outlet) in kW, with the water
// properties above, wherever all three pins have a value. A negative heat
// flux means the circuit took heat up (cooling, or swapped sensors).
//
// KPIs: "Q_dot.mean" (time-weighted), "Q_dot.medium" (time-weighted
// median; aedifion's identifier), "Q_dot.minimum", "Q_dot.maximum" (kW),
// the heat delivered, "Q.total" (kWh, the end value of aedifion's
// Q_dot.timeseries_cumulated), and the time with a negative heat flux
// (water flowing, outlet warmer than inlet), "Q_dot.negative" (h) and
// "Q_dot.negative.relative" (% of analysed time).
//
// Signal color judges the plausibility of the data: a negative heat flux
// for at most 5 % of the time green, at most 20 % yellow, above 20 % red
// (inlet and outlet sensors are likely swapped or badly placed). Grey when
// no time could be analysed.
func VirtualHeatMeter(inlet, outlet, volumeFlow []Point, attrs HeatMeterAttributes, p Period) (Result, error) {
	unit := attrs.VolumeFlowUnit
	if unit == "" {
		unit = DefaultVolumeFlowUnit
	}
	toSI, ok := volumeFlowFactor(unit)
	if !ok {
		return Result{}, fmt.Errorf("%w: volume_flow_unit %q", ErrUnknownUnit, unit)
	}
	in, err := steps(inlet, p)
	if err != nil {
		return Result{}, err
	}
	out, err := steps(outlet, p)
	if err != nil {
		return Result{}, err
	}
	flow, err := steps(volumeFlow, p)
	if err != nil {
		return Result{}, err
	}
	spread := combine(in, out, func(i, o float64) float64 { return i - o })
	var analysed, negative, energy float64
	pieces := make([]weighted, 0, len(spread))
	for _, s := range combine(spread, flow, func(dt, v float64) float64 {
		return waterDensity * v * toSI * waterHeatCapacity * dt
	}) {
		h := s.hours()
		analysed += h
		energy += s.value * h
		pieces = append(pieces, weighted{value: s.value, hours: h})
		if s.value < 0 {
			negative += h
		}
	}
	if analysed == 0 {
		return noData(), nil
	}
	mean, minimum, maximum := weightedStats(pieces)
	median := weightedMedian(pieces)
	negShare := percent(negative, analysed)
	res := Result{KPIs: []KPI{
		{ID: "Q_dot.mean", Value: mean, Unit: "kW"},
		{ID: "Q_dot.medium", Value: median, Unit: "kW"},
		{ID: "Q_dot.minimum", Value: minimum, Unit: "kW"},
		{ID: "Q_dot.maximum", Value: maximum, Unit: "kW"},
		{ID: "Q.total", Value: energy, Unit: "kWh"},
		{ID: "Q_dot.negative", Value: negative, Unit: "h"},
		{ID: "Q_dot.negative.relative", Value: negShare, Unit: "%"},
	}}
	res.Color = colorUpTo(negShare, heatMeterGreenMaxNegative, heatMeterYellowMaxNegative)
	res.Plots = []Plot{{
		Type: "bar_chart", Title: "heat flux", Unit: "kW",
		Labels: []string{"minimum", "mean", "median", "maximum"}, Values: []float64{minimum, mean, median, maximum},
	}}
	return res, nil
}
