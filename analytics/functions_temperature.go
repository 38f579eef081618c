package analytics

import (
	"encoding/json"
	"errors"
	"strconv"
	"strings"

	"github.com/openbdp/bdp/analytics/kpi"
)

// The functions on temperatures of water and air loops: setpoint
// deviation, control loop oscillation, heating curve, temperature spread,
// virtual heat meter and outdoor temperature sensor.

// deviationTolerance is the one tolerance bdp's kernels judge an absolute
// deviation against: the smaller of lower_deviation_tolerance and
// upper_deviation_tolerance, so that nothing counts as within tolerance
// that is outside the band either gives; the one filled in when only one
// is; 0 (the kernel's default) when neither is.
func deviationTolerance(a *attrs) float64 {
	lower, upper := a.float("lower_deviation_tolerance", 0, -1), a.float("upper_deviation_tolerance", 0, -1)
	switch {
	case lower < 0:
		return max(upper, 0)
	case upper < 0:
		return lower
	}
	return min(lower, upper)
}

// temperatureUnits reports a kernel's unitless ("-") figures in K: every
// pin bound to such a kernel is a temperature in °C.
func temperatureUnits(res kpi.Result) kpi.Result {
	for _, figures := range [][]kpi.KPI{res.KPIs, res.Thresholds} {
		for i := range figures {
			if figures[i].Unit == "-" {
				figures[i].Unit = "K"
			}
		}
	}
	for i := range res.Plots {
		if res.Plots[i].Unit == "-" {
			res.Plots[i].Unit = "K"
		}
	}
	return res
}

func setpointDeviation() Function {
	comps := list([]string{"thermal_control_loop", "room", "air_handling_unit"}, boilers, []string{"heat_pump"})
	return Function{
		AlphanumericID: "setpoint_deviation_analysis", NameEN: "Setpoint Deviation Analysis", NameDE: "Sollwertabweichung",
		Components: comps,
		Pins: []FunctionPin{
			{Role: roleMeasured, Required: true, PinIDs: with(onAll("outlet_temperature", boilers...), map[string]string{
				"thermal_control_loop": "outlet_temperature", "room": "temperature",
				"air_handling_unit": "supply_air_temperature", "heat_pump": "condenser_outlet_temperature"})},
			{Role: roleSetpoint, Required: true, PinIDs: with(onAll("outlet_temperature_setpoint", boilers...), map[string]string{
				"thermal_control_loop": "outlet_temperature_setpoint", "room": "temperature_setpoint",
				"air_handling_unit": "supply_air_temperature_setpoint", "heat_pump": "condenser_outlet_temperature_setpoint"})},
			{Role: roleOperating, PinIDs: onAll("operating_message", comps...)},
		},
		Attributes:     []string{"lower_deviation_tolerance", "upper_deviation_tolerance"},
		someComponents: []string{"lower_deviation_tolerance", "upper_deviation_tolerance"},
		KPIs: append(append([]string{}, operatingKPIs...),
			"setpoint deviation.largerX.relative", "setpoint deviation.largerYsmallerX.relative", "setpoint deviation.smallerY.relative",
			"setpoint deviation.largerX", "setpoint deviation.largerYsmallerX", "setpoint deviation.smallerY",
			"setpoint deviation.maximum", "setpoint deviation.minimum", "setpoint deviation.mean", "setpoint deviation.median"),
		SummaryKPI: "setpoint deviation.smallerY.relative",
		run: func(in Input) (kpi.Result, error) {
			a := attributesOf(in)
			tol := deviationTolerance(a)
			if a.err != nil {
				return kpi.Result{}, a.err
			}
			res, err := kpi.SetpointDeviation(in.Series[roleMeasured], in.Series[roleSetpoint], operatingOf(in),
				kpi.DeviationAttributes{Tolerance: tol}, in.Period)
			return temperatureUnits(res), err
		},
		explain: explainDeviation,
	}
}

// defaultVolumeFlowUnit is the unit components.json gives every volume
// flow pin the virtual heat meter reads (a test keeps the two in step):
// a datapoint mapped as the catalog asks needs no volume_flow_unit.
const defaultVolumeFlowUnit = "l/s"

func virtualHeatMeter() Function {
	comps := list([]string{"heat_meter", "thermal_control_loop"}, boilers, []string{"heat_pump"})
	return Function{
		AlphanumericID: "virtual_heat_meter", NameEN: "Virtual Heat Meter", NameDE: "Virtueller Wärmemengenzähler",
		Components: comps,
		// A heat meter's inlet is the flow it measures; a boiler's, a
		// condenser's or a heating loop's outlet is the flow it delivers.
		Pins: []FunctionPin{
			{Role: roleFlow, Required: true, PinIDs: with(onAll("outlet_temperature", list(boilers, []string{"thermal_control_loop"})...),
				map[string]string{"heat_meter": "inlet_temperature", "heat_pump": "condenser_outlet_temperature"})},
			{Role: roleReturn, Required: true, PinIDs: with(onAll("inlet_temperature", boilers...), map[string]string{
				"heat_meter": "outlet_temperature", "heat_pump": "condenser_inlet_temperature", "thermal_control_loop": "return_temperature"})},
			{Role: roleVolume, Required: true, PinIDs: with(onAll("volume_flow", list(boilers, []string{"heat_meter", "thermal_control_loop"})...),
				map[string]string{"heat_pump": "condenser_volume_flow"})},
		},
		// A thermal control loop has no volume_flow_unit: its volume flow
		// is in the catalog's unit.
		Attributes:     []string{"volume_flow_unit"},
		someComponents: []string{"volume_flow_unit"},
		KPIs: []string{"Q_dot.mean", "Q_dot.medium", "Q_dot.minimum", "Q_dot.maximum", "Q.total",
			"Q_dot.negative", "Q_dot.negative.relative"},
		SummaryKPI: "Q.total",
		run: func(in Input) (kpi.Result, error) {
			unit := attributesOf(in).text("volume_flow_unit")
			if unit == "" {
				unit = defaultVolumeFlowUnit
			}
			res, err := kpi.VirtualHeatMeter(in.Series[roleFlow], in.Series[roleReturn], in.Series[roleVolume],
				kpi.HeatMeterAttributes{VolumeFlowUnit: unit}, in.Period)
			return res, kernelAttributeError(err, "volume_flow_unit", kpi.ErrUnknownUnit)
		},
		explain: explainHeatMeter,
	}
}

func temperatureSpread() Function {
	comps := list([]string{"thermal_control_loop"}, boilers, []string{"heat_pump", "heat_meter"})
	return Function{
		AlphanumericID: "temperature_spread_analysis", NameEN: "Temperature Spread Analysis", NameDE: "Temperaturspreizungsanalyse",
		Components: comps,
		Pins: []FunctionPin{
			{Role: roleFlow, Required: true, PinIDs: with(onAll("outlet_temperature", boilers...), map[string]string{
				"thermal_control_loop": "outlet_temperature", "heat_pump": "condenser_outlet_temperature", "heat_meter": "inlet_temperature"})},
			{Role: roleReturn, Required: true, PinIDs: with(onAll("inlet_temperature", boilers...), map[string]string{
				"thermal_control_loop": "return_temperature", "heat_pump": "condenser_inlet_temperature", "heat_meter": "outlet_temperature"})},
			{Role: roleOperating, PinIDs: onAll("operating_message", list([]string{"thermal_control_loop"}, boilers, []string{"heat_pump"})...)},
		},
		KPIs: append(append([]string{}, operatingKPIs...), "temperature spread.average", "temperature spread.minimum",
			"temperature spread.maximum", "temperature spread.below minimum", "temperature spread.below minimum.relative"),
		SummaryKPI: "temperature spread.average",
		run: func(in Input) (kpi.Result, error) {
			return kpi.TemperatureSpread(in.Series[roleFlow], in.Series[roleReturn], operatingOf(in), kpi.SpreadAttributes{}, in.Period)
		},
		explain: explainSpread,
	}
}

func outdoorTemperatureSensor() Function {
	return Function{
		AlphanumericID: "outdoor_temperature_sensor_analysis", NameEN: "Outdoor Temperature Sensor Analysis",
		NameDE: "Außentemperatursensor-Analyse", Components: []string{"weather_station"},
		Pins: []FunctionPin{
			{Role: "sensor", Required: true, PinIDs: map[string]string{"weather_station": "temperature"}},
			{Role: "reference", Required: true, PinIDs: map[string]string{"weather_station": "reference_temperature"}},
		},
		KPIs: []string{"temperature difference.mean", "temperature difference.maximum", "temperature difference.within tolerance",
			"temperature difference.within tolerance.relative", "radiation influenced.total", "radiation influenced.relative"},
		SummaryKPI: "temperature difference.mean",
		run: func(in Input) (kpi.Result, error) {
			return kpi.OutdoorTemperatureSensor(in.Series["sensor"], in.Series["reference"], kpi.OutdoorSensorAttributes{}, in.Period)
		},
		explain: explainOutdoor,
	}
}

// curveOf parses the reference_curve attribute: the heating curve through
// two points (outdoor temperature, supply temperature; °C), in
// aedifion's form {"p1_outside_air_temperature": "-12.0",
// "p1_outlet_temperature_setpoint": "70.0", "p2_outside_air_temperature":
// "18", "p2_outlet_temperature_setpoint": "35"} (numbers or numeric
// strings) or as [[-12, 70], [18, 35]]. The points may come in either
// order.
func curveOf(a *attrs) (kpi.HeatingCurveAttributes, error) {
	raw := a.text("reference_curve")
	if raw == "" {
		return kpi.HeatingCurveAttributes{}, badAttribute("reference_curve", "", "not filled in; the analysis compares the supply temperature with it")
	}
	var points [][2]float64
	var named map[string]json.Number
	switch {
	case json.Unmarshal([]byte(raw), &points) == nil && len(points) == 2:
	case json.Unmarshal([]byte(raw), &named) == nil:
		keys := [4]string{"p1_outside_air_temperature", "p1_outlet_temperature_setpoint", "p2_outside_air_temperature", "p2_outlet_temperature_setpoint"}
		var v [4]float64
		for i, k := range keys {
			f, err := strconv.ParseFloat(strings.TrimSpace(named[k].String()), 64)
			if err != nil || !finite(f) {
				return kpi.HeatingCurveAttributes{}, badAttribute("reference_curve", raw, k+" is not a number")
			}
			v[i] = f
		}
		points = [][2]float64{{v[0], v[1]}, {v[2], v[3]}}
	default:
		return kpi.HeatingCurveAttributes{}, badAttribute("reference_curve", raw,
			"not a curve: want p1_outside_air_temperature, p1_outlet_temperature_setpoint, p2_outside_air_temperature, "+
				"p2_outlet_temperature_setpoint, or two [outdoor, supply] points")
	}
	if points[0][0] > points[1][0] {
		points[0], points[1] = points[1], points[0]
	}
	if !(points[0][0] < points[1][0]) {
		return kpi.HeatingCurveAttributes{}, badAttribute("reference_curve", raw, "the two points need different outdoor temperatures")
	}
	return kpi.HeatingCurveAttributes{OutdoorLow: points[0][0], SupplyAtLow: points[0][1],
		OutdoorHigh: points[1][0], SupplyAtHigh: points[1][1]}, nil
}

func heatingCurve() Function {
	return Function{
		AlphanumericID: "heating_curve_analysis", NameEN: "Heating Curve Analysis", NameDE: "Heizkurvenanalyse",
		Components: []string{"thermal_control_loop"},
		Pins: []FunctionPin{
			{Role: "supply_temperature", Required: true, PinIDs: map[string]string{"thermal_control_loop": "outlet_temperature"}},
			{Role: "outdoor_temperature", Required: true, PinIDs: map[string]string{"thermal_control_loop": "outside_air_temperature"}},
			{Role: roleOperating, PinIDs: map[string]string{"thermal_control_loop": "operating_message"}},
		},
		Attributes: []string{"reference_curve", "lower_deviation_tolerance", "upper_deviation_tolerance"},
		KPIs: append(append([]string{}, operatingKPIs...), "heating curve deviation.mean", "heating curve deviation.maximum",
			"heating curve deviation.within tolerance", "heating curve deviation.within tolerance.relative",
			"heating curve deviation.above tolerance", "heating curve deviation.below tolerance"),
		SummaryKPI: "heating curve deviation.within tolerance.relative",
		run: func(in Input) (kpi.Result, error) {
			a := attributesOf(in)
			tol := deviationTolerance(a)
			curve, err := curveOf(a)
			if err = errors.Join(a.err, err); err != nil {
				return kpi.Result{}, err
			}
			curve.Tolerance = tol
			return kpi.HeatingCurve(in.Series["supply_temperature"], in.Series["outdoor_temperature"], operatingOf(in), curve, in.Period)
		},
		explain: explainHeatingCurve,
	}
}

func controlLoopOscillation() Function {
	dev := setpointDeviation()
	return Function{
		AlphanumericID: "control_loop_oscillation_analysis", NameEN: "Control Loop Oscillation Analysis", NameDE: "Reglerschwingungsanalyse",
		// The same loops and pins as the setpoint deviation, without the
		// operating message: an oscillating loop swings also while the
		// plant reports itself off.
		Components: dev.Components,
		Pins:       dev.Pins[:2],
		KPIs: []string{"control error.sign changes", "control error.sign changes per hour",
			"control error.amplitude.average", "control error.amplitude.maximum"},
		SummaryKPI: "control error.sign changes per hour",
		run: func(in Input) (kpi.Result, error) {
			res, err := kpi.ControlLoopOscillation(in.Series[roleMeasured], in.Series[roleSetpoint], kpi.OscillationAttributes{}, in.Period)
			return temperatureUnits(res), err
		},
		explain: explainOscillation,
	}
}
