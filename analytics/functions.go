package analytics

import (
	"fmt"

	"github.com/openbdp/bdp/analytics/kpi"
)

// The analysis functions of this release. Alphanumeric ids follow
// aedifion's where its documentation names one (control_loop_oscillation_analysis,
// heating_curve_analysis, operating_cycle_analysis, schedule_analysis,
// setpoint_deviation_analysis, temperature_spread_analysis); the other
// five follow their pattern. Pins are named by the role they play in the
// kernel; each component maps the role to one of its pins
// (catalog/components.json). The table is checked against the catalog at
// every start (checkFunctions): a pin or attribute the catalog does not
// have stops the server, not a run.

// Component groups several functions fit alike.
var boilers = []string{"boiler", "condensing_boiler", "low-temperature_boiler", "combined_heat_and_power"}

// onAll maps each of comps to the same pin id.
func onAll(pin string, comps ...string) map[string]string {
	m := make(map[string]string, len(comps))
	for _, c := range comps {
		m[c] = pin
	}
	return m
}

// with adds the entries of more to m.
func with(m map[string]string, more map[string]string) map[string]string {
	for k, v := range more {
		m[k] = v
	}
	return m
}

func list(groups ...[]string) []string {
	var out []string
	for _, g := range groups {
		out = append(out, g...)
	}
	return out
}

// functionTable is the release's analysis functions in the order the API
// lists them; numeric ids are filled in by LoadCatalog.
func functionTable() []Function {
	return []Function{
		roomAirQuality(), operatingCycle(), thermalComfort(), energyConsumption(),
	}
}

// Roles of the pins the kernels read.
const (
	roleMeasured  = "measured"
	roleSetpoint  = "setpoint"
	roleOperating = "operating"
	roleFlow      = "flow_temperature"
	roleReturn    = "return_temperature"
	roleVolume    = "volume_flow"
)

// operatingOf is the operating message series, nil when not mapped (the
// kernels then analyse all the time).
// deviationTolerance is the one tolerance bdp's kernels judge an absolute
// deviation against: the larger of the lower and upper deviation
// tolerance when either is filled in, else 0 (the kernel's default).
// temperatureUnits reports a kernel's unitless ("-") figures in K: every
// pin bound to such a kernel is a temperature in °C.
var operatingKPIs = []string{"operating time", "operating time.relative"}

func roomAirQuality() Function {
	return Function{
		AlphanumericID: "room_air_quality_analysis", NameEN: "Room Air Quality Analysis", NameDE: "Raumluftqualitätsanalyse",
		Components: []string{"room", "air_handling_unit"},
		Pins: []FunctionPin{{Role: "co2", Required: true,
			PinIDs: map[string]string{"room": "co2", "air_handling_unit": "return_air_co2"}}},
		Attributes:     []string{"outdoor_co2"},
		someComponents: []string{"outdoor_co2"},
		KPIs: []string{"co2 duration.IDA1.relative", "co2 duration.IDA2.relative", "co2 duration.IDA3.relative", "co2 duration.IDA4.relative",
			"co2 duration.IDA1.absolute", "co2 duration.IDA2.absolute", "co2 duration.IDA3.absolute", "co2 duration.IDA4.absolute",
			"co2.maximum", "co2.minimum", "co2.mean", "co2.median"},
		SummaryKPI: "co2 duration.IDA1.relative",
		run: func(in Input) (kpi.Result, error) {
			a := attributesOf(in)
			outdoor := a.float("outdoor_co2", 0, kpi.DefaultOutdoorCO2)
			if a.err != nil {
				return kpi.Result{}, a.err
			}
			return kpi.RoomAirQuality(in.Series["co2"], kpi.AirQualityAttributes{OutdoorCO2: outdoor}, in.Period)
		},
		explain: explainAirQuality,
	}
}

// defaultVolumeFlowUnit is the unit components.json gives every volume
// flow pin the virtual heat meter reads (a test keeps the two in step):
// a datapoint mapped as the catalog asks needs no volume_flow_unit.
const defaultVolumeFlowUnit = "l/s"

func operatingCycle() Function {
	comps := list(boilers, []string{"heat_pump", "fan", "pump", "air_handling_unit", "thermal_control_loop"})
	return Function{
		AlphanumericID: "operating_cycle_analysis", NameEN: "Operating Cycle Analysis", NameDE: "Taktanalyse",
		Components: comps,
		Pins:       []FunctionPin{{Role: roleOperating, Required: true, PinIDs: onAll("operating_message", comps...)}},
		KPIs: append(append([]string{}, operatingKPIs...), "starts", "closed operating cycles",
			"cycle times.median", "cycle times.average", "cycle times.minimum", "cycle times.maximum",
			"duty times.median", "duty times.average", "duty times.minimum", "duty times.maximum",
			"switch-off times.median", "switch-off times.average", "switch-off times.minimum", "switch-off times.maximum"),
		SummaryKPI: "starts",
		run: func(in Input) (kpi.Result, error) {
			return kpi.OperatingCycle(in.Series[roleOperating], kpi.CycleAttributes{}, in.Period)
		},
		explain: explainCycle,
	}
}

func thermalComfort() Function {
	return Function{
		AlphanumericID: "thermal_comfort_analysis", NameEN: "Thermal Comfort Analysis", NameDE: "Analyse der thermischen Behaglichkeit",
		Components: []string{"room"},
		Pins:       []FunctionPin{{Role: "operative_temperature", Required: true, PinIDs: map[string]string{"room": "operative_temperature"}}},
		KPIs: []string{"thermal comfort.categoryI", "thermal comfort.categoryI.relative", "thermal comfort.categoryII",
			"thermal comfort.categoryII.relative", "thermal comfort.categoryIII", "thermal comfort.categoryIII.relative",
			"thermal comfort.categoryIV", "thermal comfort.categoryIV.relative",
			"operative temperature.mean", "operative temperature.minimum", "operative temperature.maximum"},
		SummaryKPI: "thermal comfort.categoryIV.relative",
		run: func(in Input) (kpi.Result, error) {
			// The season follows the period's start month (the kernel's
			// default): the catalog has no season attribute.
			return kpi.ThermalComfort(in.Series["operative_temperature"], kpi.ComfortAttributes{}, in.Period)
		},
		explain: explainComfort,
	}
}

// scheduleOf parses the schedule attribute (kpi.ParseSchedule's JSON); a
// schedule_timezone attribute sets the zone when the JSON names none.
// curveOf parses the reference_curve attribute: the heating curve as its
// two end points, either {"outdoor_low": -12, "supply_at_low": 70,
// "outdoor_high": 20, "supply_at_high": 25} or [[-12, 70], [20, 25]]
// (outdoor temperature, supply temperature; °C).
// Currency of the energy_price attribute: components.json declares its
// unit EUR/kWh (a test keeps the two in step).
const energyPriceCurrency = "EUR"

func energyConsumption() Function {
	comps := list([]string{"electricity_meter"}, boilers, []string{"heat_pump", "fan", "pump", "air_handling_unit"})
	meters := with(onAll("power_consumption_meter", list(boilers, []string{"heat_pump", "fan", "pump"})...),
		map[string]string{"electricity_meter": "energy_meter"})
	power := with(onAll("power_consumption", list(boilers, []string{"heat_pump", "fan", "pump", "air_handling_unit"})...),
		map[string]string{"electricity_meter": "power"})
	return Function{
		AlphanumericID: "energy_consumption_analysis", NameEN: "Energy Consumption Analysis", NameDE: "Energieverbrauchsanalyse",
		Components: comps,
		// Either pin will do; the counter is preferred when both are
		// mapped (its sum does not depend on the sampling).
		Pins: []FunctionPin{
			{Role: "energy_meter", PinIDs: meters},
			{Role: "power", PinIDs: power},
		},
		Attributes:     []string{"energy_price"},
		someComponents: []string{"energy_price"},
		KPIs:           []string{"energy consumption", "power.mean", "power.maximum", "base load", "base load.relative", "energy cost"},
		SummaryKPI:     "energy consumption",
		run: func(in Input) (kpi.Result, error) {
			a := attributesOf(in)
			price := a.float("energy_price", 0, -1)
			if a.err != nil {
				return kpi.Result{}, a.err
			}
			e := kpi.EnergyAttributes{MeterKind: kpi.CounterMeter}
			series, counter := in.Series["energy_meter"]
			if !counter {
				var power bool
				if series, power = in.Series["power"]; !power {
					return kpi.Result{}, fmt.Errorf("%w: energy_meter or power of %s (one of the two)", ErrMissingPin, in.Component)
				}
				e.MeterKind = kpi.PowerMeter
			}
			if price >= 0 {
				e.PricePerKWh, e.Currency = price, energyPriceCurrency
			}
			return kpi.EnergyConsumption(series, e, in.Period)
		},
		explain: explainEnergy,
	}
}
