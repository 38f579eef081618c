package analytics

import (
	"encoding/json"
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

// list joins groups of component ids.
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
		setpointDeviation(), roomAirQuality(), virtualHeatMeter(), operatingCycle(),
		temperatureSpread(), outdoorTemperatureSensor(), thermalComfort(), scheduleAnalysis(),
		heatingCurve(), controlLoopOscillation(), energyConsumption(),
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
		// The operative temperature is what EN 16798-1 judges; a room
		// without that sensor is judged by its air temperature, which it
		// approaches away from cold or sunny surfaces.
		Pins: []FunctionPin{
			{Role: "operative_temperature", PinIDs: map[string]string{"room": "operative_temperature"}, oneOf: "temperature"},
			{Role: "air_temperature", PinIDs: map[string]string{"room": "temperature"}, oneOf: "temperature"},
		},
		KPIs: []string{"thermal comfort.categoryI", "thermal comfort.categoryI.relative", "thermal comfort.categoryII",
			"thermal comfort.categoryII.relative", "thermal comfort.categoryIII", "thermal comfort.categoryIII.relative",
			"thermal comfort.categoryIV", "thermal comfort.categoryIV.relative",
			"operative temperature.mean", "operative temperature.minimum", "operative temperature.maximum"},
		SummaryKPI: "thermal comfort.categoryIV.relative",
		run: func(in Input) (kpi.Result, error) {
			series, ok := in.Series["operative_temperature"]
			if !ok {
				series = in.Series["air_temperature"]
			}
			// The season follows the period's start month (the kernel's
			// default): the catalog has no season attribute.
			return kpi.ThermalComfort(series, kpi.ComfortAttributes{}, in.Period)
		},
		explain: explainComfort,
	}
}

// Currency of the energy_price attribute: components.json declares its
// unit EUR/kWh (a test keeps the two in step).
const energyPriceCurrency = "EUR"

func energyConsumption() Function {
	// A heat meter's energy is the heat it counts.
	comps := list([]string{"electricity_meter", "heat_meter"}, boilers, []string{"heat_pump", "fan", "pump", "air_handling_unit"})
	meters := with(onAll("power_consumption_meter", list(boilers, []string{"heat_pump", "fan", "pump"})...),
		map[string]string{"electricity_meter": "energy_meter", "heat_meter": "heat_meter"})
	power := with(onAll("power_consumption", list(boilers, []string{"heat_pump", "fan", "pump", "air_handling_unit"})...),
		map[string]string{"electricity_meter": "power", "heat_meter": "heat_flow"})
	return Function{
		AlphanumericID: "energy_consumption_analysis", NameEN: "Energy Consumption Analysis", NameDE: "Energieverbrauchsanalyse",
		Components: comps,
		// Either pin will do; the counter is preferred when both are
		// mapped (its sum does not depend on the sampling).
		Pins: []FunctionPin{
			{Role: "energy_meter", PinIDs: meters, oneOf: "meter"},
			{Role: "power", PinIDs: power, oneOf: "meter"},
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
				series, e.MeterKind = in.Series["power"], kpi.PowerMeter
			}
			if price >= 0 {
				e.PricePerKWh, e.Currency = price, energyPriceCurrency
			}
			return kpi.EnergyConsumption(series, e, in.Period)
		},
		explain: explainEnergy,
	}
}

// operatingOf is the operating message series, nil when not mapped (the
// kernels then analyse all the time).
func operatingOf(in Input) []kpi.Point { return in.Series[roleOperating] }

// scheduleOf parses the schedule attribute (kpi.ParseSchedule's JSON); a
// schedule_timezone attribute sets the zone when the JSON names none.
func scheduleOf(a *attrs) (kpi.Schedule, error) {
	raw := a.text("schedule")
	if raw == "" {
		return kpi.Schedule{}, badAttribute("schedule", "", "not filled in; the analysis compares operation with it")
	}
	var doc map[string]json.RawMessage
	if err := json.Unmarshal([]byte(raw), &doc); err != nil {
		return kpi.Schedule{}, badAttribute("schedule", raw, "not a JSON object")
	}
	if zone := a.text("schedule_timezone"); zone != "" {
		if _, named := doc["time_zone"]; !named {
			doc["time_zone"], _ = json.Marshal(zone)
		}
	}
	withZone, _ := json.Marshal(doc)
	s, err := kpi.ParseSchedule(withZone)
	if err != nil {
		return kpi.Schedule{}, fmt.Errorf("%w: schedule: %w", ErrBadAttribute, err)
	}
	return s, nil
}

func scheduleAnalysis() Function {
	comps := list(boilers, []string{"heat_pump", "fan", "pump", "air_handling_unit", "thermal_control_loop", "room"})
	return Function{
		AlphanumericID: "schedule_analysis", NameEN: "Schedule Analysis", NameDE: "Fahrplananalyse",
		Components: comps,
		Pins:       []FunctionPin{{Role: roleOperating, Required: true, PinIDs: onAll("operating_message", comps...)}},
		Attributes: []string{"schedule", "schedule_timezone"},
		KPIs: append(append([]string{}, operatingKPIs...), "operation outside schedule",
			"operation outside schedule.relative", "no operation inside schedule"),
		SummaryKPI: "operation outside schedule.relative",
		run: func(in Input) (kpi.Result, error) {
			s, err := scheduleOf(attributesOf(in))
			if err != nil {
				return kpi.Result{}, err
			}
			return kpi.ScheduleCompliance(in.Series[roleOperating], s, in.Period)
		},
		explain: explainSchedule,
	}
}
