package analytics

import (
	"encoding/json"
	"errors"
	"math"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/openbdp/bdp/analytics/kpi"
)

var number = regexp.MustCompile(`-?[0-9]+(\.[0-9]+)?`)

var runStart = time.Date(2026, 11, 2, 0, 0, 0, 0, time.UTC)

// steps builds a series from (minute, value) pairs after runStart.
func steps(pairs ...float64) []kpi.Point {
	pts := make([]kpi.Point, 0, len(pairs)/2)
	for i := 0; i+1 < len(pairs); i += 2 {
		pts = append(pts, kpi.Point{Time: runStart.Add(time.Duration(pairs[i] * float64(time.Minute))), Value: pairs[i+1]})
	}
	return pts
}

func hoursFrom(start time.Time, h float64) kpi.Period {
	return kpi.Period{Start: start, End: start.Add(time.Duration(h * float64(time.Hour)))}
}

// runCase is one run of one function on a synthetic input whose KPIs are
// worked out by hand in the comment beside it.
type runCase struct {
	name      string
	component string
	series    map[string][]kpi.Point // by pin alphanumeric id
	attrs     map[string]string
	period    kpi.Period // 4 h from runStart when zero
	want      map[string]float64
	absent    []string // KPIs that must not be reported
	color     string
	noData    bool
	err       error  // wrapped sentinel a failing run returns
	errNames  string // what the error must name
	figures   []string
}

// runCases are by function alphanumeric id.
var runCases = map[string][]runCase{
	"setpoint_deviation_analysis": {
		// |outlet - setpoint|: 0, 2.5, 5, 0 K for 1 h each. Y 1 K, X 2 K
		// (the defaults): within 2 h (50 %), above X 2 h (50 % > 10 %):
		// red. Mean 1.875 K; median 0 (half the time at 0).
		{name: "bands by hand", component: "thermal_control_loop",
			series: map[string][]kpi.Point{"outlet_temperature": steps(0, 50, 60, 52.5, 120, 55, 180, 50),
				"outlet_temperature_setpoint": steps(0, 50)},
			want: map[string]float64{"setpoint deviation.smallerY.relative": 50, "setpoint deviation.largerX.relative": 50,
				"setpoint deviation.largerYsmallerX": 0, "setpoint deviation.smallerY": 2, "setpoint deviation.mean": 1.875,
				"setpoint deviation.median": 0, "setpoint deviation.maximum": 5, "setpoint deviation.minimum": 0},
			absent: []string{"operating time"}, color: "red", figures: []string{"50 %", "within ±1 K", "more than 2 K", "1.88 K", "5 K"}},
		// 3 K tolerances take the 2.5 K deviation in: 100 % within.
		{name: "tolerance attributes", component: "thermal_control_loop",
			series: map[string][]kpi.Point{"outlet_temperature": steps(0, 50, 60, 52.5), "outlet_temperature_setpoint": steps(0, 50)},
			attrs:  map[string]string{"lower_deviation_tolerance": "3", "upper_deviation_tolerance": "3"},
			want:   map[string]float64{"setpoint deviation.smallerY.relative": 100, "setpoint deviation.largerX": 0},
			color:  "green", figures: []string{"100 %", "0 %"}},
		// Of 1 K below and 3 K above, the smaller counts: Y = 1 K, X = 2 K
		// (the default); the 2.5 K deviation for 3 of 4 h is above X:
		// 75 %, red.
		{name: "the smaller tolerance counts", component: "thermal_control_loop",
			series: map[string][]kpi.Point{"outlet_temperature": steps(0, 50, 60, 52.5), "outlet_temperature_setpoint": steps(0, 50)},
			attrs:  map[string]string{"lower_deviation_tolerance": "1", "upper_deviation_tolerance": "3"},
			want:   map[string]float64{"setpoint deviation.smallerY.relative": 25, "setpoint deviation.largerX.relative": 75},
			color:  "red", figures: []string{"25 %", "75 %"}},
		// Operating only the first 2 h: deviation 0 for 1 h, 2.5 K for 1 h.
		{name: "operating message", component: "thermal_control_loop",
			series: map[string][]kpi.Point{"outlet_temperature": steps(0, 50, 60, 52.5), "outlet_temperature_setpoint": steps(0, 50),
				"operating_message": steps(0, 1, 120, 0)},
			want: map[string]float64{"operating time": 2, "operating time.relative": 50, "setpoint deviation.smallerY": 1,
				"setpoint deviation.largerX": 1},
			color: "red", figures: []string{"50 %"}},
		{name: "room", component: "room",
			series: map[string][]kpi.Point{"temperature": steps(0, 21), "temperature_setpoint": steps(0, 21.5)},
			want:   map[string]float64{"setpoint deviation.smallerY.relative": 100, "setpoint deviation.mean": 0.5},
			color:  "green", figures: []string{"0.5 K"}},
		{name: "setpoint not mapped", component: "thermal_control_loop",
			series: map[string][]kpi.Point{"outlet_temperature": steps(0, 50)}, err: ErrMissingPin, errNames: "outlet_temperature_setpoint"},
		{name: "tolerance not a number", component: "thermal_control_loop",
			series: map[string][]kpi.Point{"outlet_temperature": steps(0, 50), "outlet_temperature_setpoint": steps(0, 50)},
			attrs:  map[string]string{"upper_deviation_tolerance": "1 K"}, err: ErrBadAttribute, errNames: "upper_deviation_tolerance"},
		{name: "no data", component: "air_handling_unit",
			series: map[string][]kpi.Point{"supply_air_temperature": nil, "supply_air_temperature_setpoint": steps(0, 20)}, noData: true},
	},
	"virtual_heat_meter": {
		// 0.5 l/s at 60/40 °C: 988 kg/m³ * 0.0005 m³/s * 4.18 kJ/(kg K) *
		// 20 K = 41.2984 kW for 4 h = 165.1936 kWh; never negative: green.
		{name: "heat meter by hand", component: "heat_meter",
			series: map[string][]kpi.Point{"inlet_temperature": steps(0, 60), "outlet_temperature": steps(0, 40), "volume_flow": steps(0, 0.5)},
			want:   map[string]float64{"Q_dot.mean": 41.2984, "Q_dot.medium": 41.2984, "Q.total": 165.1936, "Q_dot.negative": 0},
			color:  "green", figures: []string{"165.19 kWh", "41.3 kW", "0 %"}},
		// 1.8 m³/h is 0.5 l/s: the same heat.
		{name: "volume flow unit", component: "heat_meter",
			series: map[string][]kpi.Point{"inlet_temperature": steps(0, 60), "outlet_temperature": steps(0, 40), "volume_flow": steps(0, 1.8)},
			attrs:  map[string]string{"volume_flow_unit": "cubicMetersPerHour"},
			want:   map[string]float64{"Q.total": 165.1936}, color: "green", figures: []string{"165.19 kWh"}},
		// A boiler's outlet is its flow: 70 out, 50 back.
		{name: "boiler", component: "condensing_boiler",
			series: map[string][]kpi.Point{"outlet_temperature": steps(0, 70), "inlet_temperature": steps(0, 50), "volume_flow": steps(0, 0.5)},
			want:   map[string]float64{"Q_dot.mean": 41.2984}, color: "green", figures: []string{"41.3 kW"}},
		// The condenser: 1 l/s heated from 30 to 35 °C: 20.6492 kW.
		{name: "heat pump condenser", component: "heat_pump",
			series: map[string][]kpi.Point{"condenser_outlet_temperature": steps(0, 35), "condenser_inlet_temperature": steps(0, 30),
				"condenser_volume_flow": steps(0, 1)},
			want: map[string]float64{"Q_dot.mean": 20.6492}, color: "green", figures: []string{"20.65 kW"}},
		// A heating loop: outlet (flow) 55, return 45, 0.5 l/s: 20.6492 kW.
		{name: "thermal control loop", component: "thermal_control_loop",
			series: map[string][]kpi.Point{"outlet_temperature": steps(0, 55), "return_temperature": steps(0, 45), "volume_flow": steps(0, 0.5)},
			want:   map[string]float64{"Q_dot.mean": 20.6492, "Q.total": 82.5968}, color: "green", figures: []string{"82.6 kWh"}},
		// Swapped sensors: negative all the time: red.
		{name: "swapped sensors", component: "heat_meter",
			series: map[string][]kpi.Point{"inlet_temperature": steps(0, 40), "outlet_temperature": steps(0, 60), "volume_flow": steps(0, 0.5)},
			want:   map[string]float64{"Q_dot.negative.relative": 100, "Q.total": -165.1936}, color: "red", figures: []string{"100 %"}},
		{name: "unknown volume flow unit", component: "heat_meter",
			series: map[string][]kpi.Point{"inlet_temperature": steps(0, 60), "outlet_temperature": steps(0, 40), "volume_flow": steps(0, 1)},
			attrs:  map[string]string{"volume_flow_unit": "gallonsPerMinute"}, err: ErrBadAttribute, errNames: "volume_flow_unit"},
		{name: "volume flow not mapped", component: "heat_meter",
			series: map[string][]kpi.Point{"inlet_temperature": steps(0, 60), "outlet_temperature": steps(0, 40)}, err: ErrMissingPin, errNames: "volume_flow"},
		{name: "no data", component: "heat_meter",
			series: map[string][]kpi.Point{"inlet_temperature": {}, "outlet_temperature": {}, "volume_flow": {}}, noData: true},
	},
	"temperature_spread_analysis": {
		// Flow minus return: 10 K for 2 h, 3 K for 2 h: mean 6.5 K, below
		// the 5 K minimum 50 % (at most 50 %): yellow.
		{name: "spread by hand", component: "thermal_control_loop",
			series: map[string][]kpi.Point{"outlet_temperature": steps(0, 70, 120, 60), "return_temperature": steps(0, 60, 120, 57)},
			want: map[string]float64{"temperature spread.average": 6.5, "temperature spread.minimum": 3, "temperature spread.maximum": 10,
				"temperature spread.below minimum": 2, "temperature spread.below minimum.relative": 50},
			color: "yellow", figures: []string{"6.5 K", "3 K to 10 K", "minimum of 5 K", "50 %"}},
		// Operating only in the first 2 h: 10 K only.
		{name: "operating message", component: "thermal_control_loop",
			series: map[string][]kpi.Point{"outlet_temperature": steps(0, 70, 120, 60), "return_temperature": steps(0, 60, 120, 57),
				"operating_message": steps(0, 1, 120, 0)},
			want:  map[string]float64{"temperature spread.average": 10, "temperature spread.below minimum": 0, "operating time": 2},
			color: "green", figures: []string{"10 K"}},
		{name: "heat meter", component: "heat_meter",
			series: map[string][]kpi.Point{"inlet_temperature": steps(0, 55), "outlet_temperature": steps(0, 45)},
			want:   map[string]float64{"temperature spread.average": 10}, color: "green", figures: []string{"10 K"}},
		{name: "return not mapped", component: "thermal_control_loop",
			series: map[string][]kpi.Point{"outlet_temperature": steps(0, 70)}, err: ErrMissingPin, errNames: "return_temperature"},
		{name: "no data", component: "boiler", series: map[string][]kpi.Point{"outlet_temperature": nil, "inlet_temperature": nil}, noData: true},
	},
	"outdoor_temperature_sensor_analysis": {
		// Sensor minus reference: 0 K for 1 h, 3 K for 3 h: mean 2.25 K,
		// within 1 K 25 % (below 70 %): red. 3 h above reference plus
		// tolerance on the one day: 1 day influenced, 100 %.
		{name: "sun on the sensor", component: "weather_station",
			series: map[string][]kpi.Point{"temperature": steps(0, 10, 60, 13), "reference_temperature": steps(0, 10)},
			want: map[string]float64{"temperature difference.mean": 2.25, "temperature difference.maximum": 3,
				"temperature difference.within tolerance.relative": 25, "radiation influenced.total": 1, "radiation influenced.relative": 100},
			color: "red", figures: []string{"25 %", "2.2", "3 K", "days influenced by the sun: 1"}},
		{name: "agreeing", component: "weather_station",
			series: map[string][]kpi.Point{"temperature": steps(0, 10.5), "reference_temperature": steps(0, 10)},
			want:   map[string]float64{"temperature difference.within tolerance.relative": 100, "radiation influenced.total": 0},
			color:  "green", figures: []string{"100 %", "0.5 K"}},
		{name: "reference not mapped", component: "weather_station",
			series: map[string][]kpi.Point{"temperature": steps(0, 10)}, err: ErrMissingPin, errNames: "reference_temperature"},
		{name: "no data", component: "weather_station",
			series: map[string][]kpi.Point{"temperature": steps(0, 10), "reference_temperature": nil}, noData: true},
	},
	"schedule_analysis": {
		// Monday 2 November 2026; schedule 06:00-18:00 UTC. On 05:00-19:00:
		// 14 h, 12 inside, 2 outside = 14.3 % (5 to 20 %): yellow.
		{name: "outside the schedule by hand", component: "fan", period: hoursFrom(runStart, 24),
			series: map[string][]kpi.Point{"operating_message": steps(0, 0, 300, 1, 1140, 0)},
			attrs:  map[string]string{"schedule": `{"monday": [["06:00", "18:00"]]}`},
			want: map[string]float64{"operating time": 14, "operating time.relative": 100 * 14.0 / 24, "operation outside schedule": 2,
				"operation outside schedule.relative": 100 * 2.0 / 14, "no operation inside schedule": 0},
			color: "yellow", figures: []string{"14 h", "2 h", "14.29 %"}},
		// On 05:00-17:00 UTC against 06:00-18:00 Berlin (05:00-17:00 UTC
		// in November): nothing outside.
		{name: "time zone attribute", component: "room", period: hoursFrom(runStart, 24),
			series: map[string][]kpi.Point{"operating_message": steps(0, 0, 300, 1, 1020, 0)},
			attrs:  map[string]string{"schedule": `{"monday": [["06:00", "18:00"]]}`, "schedule_timezone": "Europe/Berlin"},
			want:   map[string]float64{"operation outside schedule": 0, "no operation inside schedule": 0},
			color:  "green", figures: []string{"12 h", "0 h"}},
		// The same in UTC: 05:00-06:00 is outside (1 of 12 h, 8.3 %), and
		// 17:00-18:00 is scheduled without operation.
		{name: "without time zone", component: "room", period: hoursFrom(runStart, 24),
			series: map[string][]kpi.Point{"operating_message": steps(0, 0, 300, 1, 1020, 0)},
			attrs:  map[string]string{"schedule": `{"monday": [["06:00", "18:00"]]}`},
			want:   map[string]float64{"operation outside schedule": 1, "no operation inside schedule": 1},
			color:  "yellow", figures: []string{"8.33 %"}},
		{name: "schedule not filled in", component: "fan", series: map[string][]kpi.Point{"operating_message": steps(0, 1)},
			err: ErrBadAttribute, errNames: "schedule"},
		{name: "schedule not JSON", component: "fan", series: map[string][]kpi.Point{"operating_message": steps(0, 1)},
			attrs: map[string]string{"schedule": "weekdays 6 to 18"}, err: ErrBadAttribute, errNames: "schedule"},
		{name: "unknown time zone", component: "fan", series: map[string][]kpi.Point{"operating_message": steps(0, 1)},
			attrs: map[string]string{"schedule": `{"monday": [["06:00", "18:00"]]}`, "schedule_timezone": "Mars/Olympus"},
			err:   ErrBadAttribute, errNames: "Mars/Olympus"},
		{name: "operating message not mapped", component: "pump", attrs: map[string]string{"schedule": `{}`},
			err: ErrMissingPin, errNames: "operating_message"},
		{name: "no data", component: "pump", series: map[string][]kpi.Point{"operating_message": nil},
			attrs: map[string]string{"schedule": `{}`}, noData: true},
	},
	"heating_curve_analysis": {
		// Curve -10 °C → 70 °C, 20 °C → 25 °C: at 0 °C outdoor 55 °C.
		// Supply 55 for 2 h, 62 for 2 h: deviation 0 and +7 K; within the
		// default 3 K 50 % (below 70 %): red. Mean 3.5 K.
		{name: "curve by hand", component: "thermal_control_loop",
			series: map[string][]kpi.Point{"outlet_temperature": steps(0, 55, 120, 62), "outside_air_temperature": steps(0, 0)},
			attrs: map[string]string{"reference_curve": `{"p1_outside_air_temperature": "-10.0", "p1_outlet_temperature_setpoint": "70.0", ` +
				`"p2_outside_air_temperature": 20, "p2_outlet_temperature_setpoint": "25"}`},
			want: map[string]float64{"heating curve deviation.mean": 3.5, "heating curve deviation.maximum": 7,
				"heating curve deviation.within tolerance.relative": 50, "heating curve deviation.above tolerance": 2,
				"heating curve deviation.below tolerance": 0},
			color: "red", figures: []string{"50 %", "3.5 K", "7 K"}},
		// The point form, points in either order, and 8 K tolerances: all
		// within.
		{name: "points and tolerance", component: "thermal_control_loop",
			series: map[string][]kpi.Point{"outlet_temperature": steps(0, 55, 120, 62), "outside_air_temperature": steps(0, 0)},
			attrs: map[string]string{"reference_curve": `[[20, 25], [-10, 70]]`,
				"upper_deviation_tolerance": "8", "lower_deviation_tolerance": "8"},
			want: map[string]float64{"heating curve deviation.within tolerance.relative": 100}, color: "green", figures: []string{"100 %"}},
		{name: "curve not filled in", component: "thermal_control_loop",
			series: map[string][]kpi.Point{"outlet_temperature": steps(0, 55), "outside_air_temperature": steps(0, 0)},
			err:    ErrBadAttribute, errNames: "reference_curve"},
		{name: "curve points at one outdoor temperature", component: "thermal_control_loop",
			series: map[string][]kpi.Point{"outlet_temperature": steps(0, 55), "outside_air_temperature": steps(0, 0)},
			attrs:  map[string]string{"reference_curve": `[[0, 25], [0, 70]]`}, err: ErrBadAttribute, errNames: "reference_curve"},
		{name: "curve value not a number", component: "thermal_control_loop",
			series: map[string][]kpi.Point{"outlet_temperature": steps(0, 55), "outside_air_temperature": steps(0, 0)},
			attrs: map[string]string{"reference_curve": `{"p1_outside_air_temperature": "cold", "p1_outlet_temperature_setpoint": 70, ` +
				`"p2_outside_air_temperature": 20, "p2_outlet_temperature_setpoint": 25}`},
			err: ErrBadAttribute, errNames: "p1_outside_air_temperature"},
		{name: "outdoor temperature not mapped", component: "thermal_control_loop",
			series: map[string][]kpi.Point{"outlet_temperature": steps(0, 55)}, attrs: map[string]string{"reference_curve": `[[-10, 70], [20, 25]]`},
			err: ErrMissingPin, errNames: "outside_air_temperature"},
		{name: "no data", component: "thermal_control_loop",
			series: map[string][]kpi.Point{"outlet_temperature": {}, "outside_air_temperature": steps(0, 0)},
			attrs:  map[string]string{"reference_curve": `[[-10, 70], [20, 25]]`}, noData: true},
	},
	"control_loop_oscillation_analysis": {
		// Measured 49/51 °C against 50 °C, switching every 30 min: 7 sign
		// changes in 4 h = 1.75/h (at most 2): green; 6 closed half-waves
		// of amplitude 1 K.
		{name: "oscillation by hand", component: "thermal_control_loop",
			series: map[string][]kpi.Point{"outlet_temperature": steps(0, 49, 30, 51, 60, 49, 90, 51, 120, 49, 150, 51, 180, 49, 210, 51),
				"outlet_temperature_setpoint": steps(0, 50)},
			want: map[string]float64{"control error.sign changes": 7, "control error.sign changes per hour": 1.75,
				"control error.amplitude.average": 1, "control error.amplitude.maximum": 1},
			color: "green", figures: []string{"7 times", "1.75 times per hour", "1 K"}},
		// Every 5 minutes: 47 changes in 4 h = 11.75/h: red.
		{name: "fast swinging room", component: "room",
			series: map[string][]kpi.Point{"temperature": func() []kpi.Point {
				var pairs []float64
				for m := 0.0; m < 240; m += 5 {
					pairs = append(pairs, m, 21+float64(int(m/5)%2)*2-1)
				}
				return steps(pairs...)
			}(), "temperature_setpoint": steps(0, 21)},
			want:  map[string]float64{"control error.sign changes": 47, "control error.sign changes per hour": 11.75},
			color: "red", figures: []string{"47 times"}},
		{name: "setpoint not mapped", component: "room",
			series: map[string][]kpi.Point{"temperature": steps(0, 21)}, err: ErrMissingPin, errNames: "temperature_setpoint"},
		{name: "no data", component: "room",
			series: map[string][]kpi.Point{"temperature": nil, "temperature_setpoint": nil}, noData: true},
	},
	"room_air_quality_analysis": {
		// Outdoor 400 ppm: 500 (excess 100, IDA 1) 1 h, 1050 (650, IDA 3)
		// 1 h, 1500 (1100, IDA 4) 1 h, 800 (400, IDA 1) 1 h. IDA 4 25 % > 5 %:
		// red. Mean (500+1050+1500+800)/4 = 962.5; median: half the time
		// is reached at 800.
		{name: "classes by hand", component: "room",
			series: map[string][]kpi.Point{"co2": steps(0, 500, 60, 1050, 120, 1500, 180, 800)},
			want: map[string]float64{"co2 duration.IDA1.relative": 50, "co2 duration.IDA2.relative": 0, "co2 duration.IDA3.relative": 25,
				"co2 duration.IDA4.relative": 25, "co2 duration.IDA1.absolute": 2, "co2 duration.IDA4.absolute": 1,
				"co2.mean": 962.5, "co2.median": 800, "co2.minimum": 500, "co2.maximum": 1500},
			color: "red", figures: []string{"50 %", "25 %", "962.5 ppm", "1500 ppm"}},
		// outdoor_co2 600 shifts the classes: 500 IDA 1, 1050 (450) IDA 2,
		// 1500 (900) IDA 3, 800 (200) IDA 1. No IDA 4; IDA 3 25 % > 10 %:
		// yellow. The air handling unit reads its return air CO2.
		{name: "outdoor attribute on the air handling unit", component: "air_handling_unit",
			series: map[string][]kpi.Point{"return_air_co2": steps(0, 500, 60, 1050, 120, 1500, 180, 800)},
			attrs:  map[string]string{"outdoor_co2": " 600 "},
			want: map[string]float64{"co2 duration.IDA1.relative": 50, "co2 duration.IDA2.relative": 25,
				"co2 duration.IDA3.relative": 25, "co2 duration.IDA4.relative": 0},
			color: "yellow", figures: []string{"50 %", "0 %"}},
		{name: "all good", component: "room", series: map[string][]kpi.Point{"co2": steps(0, 450)},
			want: map[string]float64{"co2 duration.IDA1.relative": 100}, color: "green", figures: []string{"100 %", "450 ppm"}},
		{name: "co2 not mapped", component: "room", series: map[string][]kpi.Point{"temperature": steps(0, 21)},
			err: ErrMissingPin, errNames: "co2"},
		{name: "outdoor co2 not a number", component: "room", series: map[string][]kpi.Point{"co2": steps(0, 450)},
			attrs: map[string]string{"outdoor_co2": "four hundred"}, err: ErrBadAttribute, errNames: "outdoor_co2"},
		{name: "outdoor co2 negative", component: "room", series: map[string][]kpi.Point{"co2": steps(0, 450)},
			attrs: map[string]string{"outdoor_co2": "-1"}, err: ErrBadAttribute, errNames: "outdoor_co2"},
		{name: "no data", component: "room", series: map[string][]kpi.Point{"co2": nil}, noData: true},
	},
	"operating_cycle_analysis": {
		// On 0-30, 60-90, 120-150, 180-240 min: starts at 60, 120, 180
		// (already on at 0 is no start seen), 2 closed cycles of 1 h with
		// 0.5 h on and 0.5 h off; on 2.5 of 4 h = 62.5 %; 0.75 starts/h:
		// green.
		{name: "cycles by hand", component: "heat_pump",
			series: map[string][]kpi.Point{"operating_message": steps(0, 1, 30, 0, 60, 1, 90, 0, 120, 1, 150, 0, 180, 1)},
			want: map[string]float64{"starts": 3, "closed operating cycles": 2, "operating time": 2.5, "operating time.relative": 62.5,
				"cycle times.median": 1, "cycle times.average": 1, "duty times.median": 0.5, "switch-off times.maximum": 0.5},
			color: "green", figures: []string{"3 starts", "2.5 h", "62.5 %", "took 1 h from start to start", "ran for 0.5 h of a cycle"}},
		// Toggling every 7.5 min: starts at 15, 30, ..., 225 min, 15 in
		// 4 h = 3.75/h > 3: red.
		{name: "short cycling", component: "boiler",
			series: map[string][]kpi.Point{"operating_message": func() []kpi.Point {
				var pairs []float64
				for m := 0.0; m < 240; m += 7.5 {
					pairs = append(pairs, m, float64(int(m/7.5+1)%2))
				}
				return steps(pairs...)
			}()},
			want: map[string]float64{"starts": 15, "operating time": 2}, color: "red", figures: []string{"15 starts"}},
		// Never switched: no closed cycle, so no cycle-time KPIs.
		{name: "always on", component: "pump", series: map[string][]kpi.Point{"operating_message": steps(0, 1)},
			want: map[string]float64{"starts": 0, "operating time.relative": 100}, absent: []string{"cycle times.median", "duty times.median"},
			color: "green", figures: []string{"0 starts", "100 %"}},
		{name: "operating message not mapped", component: "heat_pump", series: map[string][]kpi.Point{},
			err: ErrMissingPin, errNames: "operating_message"},
		{name: "no data", component: "fan", series: map[string][]kpi.Point{"operating_message": {}}, noData: true},
	},
	"thermal_comfort_analysis": {
		// November: heating season bands I 21-23, II 20-24, III 19-25 °C.
		// 22 (I), 20.5 (II), 24.5 (III), 26 (IV) for 1 h each: 25 % each;
		// IV 25 % > 10 %: red. Mean 23.25 °C.
		{name: "categories by hand", component: "room",
			series: map[string][]kpi.Point{"operative_temperature": steps(0, 22, 60, 20.5, 120, 24.5, 180, 26)},
			want: map[string]float64{"thermal comfort.categoryI": 1, "thermal comfort.categoryI.relative": 25,
				"thermal comfort.categoryII.relative": 25, "thermal comfort.categoryIII.relative": 25,
				"thermal comfort.categoryIV.relative": 25, "operative temperature.mean": 23.25,
				"operative temperature.minimum": 20.5, "operative temperature.maximum": 26},
			color: "red", figures: []string{"category I for 25 %", "23.25 °C", "20.5", "26 °C"}},
		// July: cooling season, I 23.5-25.5: 24 °C is category I.
		{name: "cooling season", component: "room", period: hoursFrom(time.Date(2026, 7, 6, 0, 0, 0, 0, time.UTC), 4),
			series: map[string][]kpi.Point{"operative_temperature": {{Time: time.Date(2026, 7, 6, 0, 0, 0, 0, time.UTC), Value: 24}}},
			want:   map[string]float64{"thermal comfort.categoryI.relative": 100}, color: "green", figures: []string{"100 %", "24 °C"}},
		// Without an operative temperature, the air temperature: 19.5 °C
		// (III) for 1 h, 22 (I) for 3 h.
		{name: "air temperature", component: "room", series: map[string][]kpi.Point{"temperature": steps(0, 19.5, 60, 22)},
			want:  map[string]float64{"thermal comfort.categoryIII.relative": 25, "thermal comfort.categoryI.relative": 75},
			color: "yellow", figures: []string{"75 %", "0 %"}},
		// Both mapped: the operative temperature counts.
		{name: "operative temperature preferred", component: "room",
			series: map[string][]kpi.Point{"temperature": steps(0, 19.5), "operative_temperature": steps(0, 22)},
			want:   map[string]float64{"thermal comfort.categoryI.relative": 100}, color: "green", figures: []string{"100 %"}},
		{name: "no temperature mapped", component: "room", series: map[string][]kpi.Point{"co2": steps(0, 400)},
			err: ErrMissingPin, errNames: "pin operative_temperature (operative_temperature) of room, or pin temperature (air_temperature)"},
		{name: "no data", component: "room", series: map[string][]kpi.Point{"operative_temperature": nil}, noData: true},
	},
	"energy_consumption_analysis": {
		// Counter 100, 101, 103, 103 kWh at 0, 60, 120, 180 min: 1, 2 and
		// 0 kW over three hours (the time after the last reading does not
		// count): 3 kWh, mean 1 kW, peak 2 kW; base load (exceeded 90 %
		// of the time) 0 kW: green. 0.3 EUR/kWh: 0.9 EUR.
		{name: "counter with price", component: "electricity_meter",
			series: map[string][]kpi.Point{"energy_meter": steps(0, 100, 60, 101, 120, 103, 180, 103)},
			attrs:  map[string]string{"energy_price": "0.3"},
			want: map[string]float64{"energy consumption": 3, "power.mean": 1, "power.maximum": 2, "base load": 0,
				"base load.relative": 0, "energy cost": 0.9},
			color: "green", figures: []string{"3 kWh", "1 kW", "2 kW", "0.9 EUR"}},
		// Power 2 kW for 2 h, then 4 kW for 2 h: 12 kWh, mean 3 kW; base
		// load 2 kW = 66.7 % of the mean: red. No price: no cost.
		{name: "power meter", component: "electricity_meter",
			series: map[string][]kpi.Point{"power": steps(0, 2, 120, 4)},
			want: map[string]float64{"energy consumption": 12, "power.mean": 3, "power.maximum": 4, "base load": 2,
				"base load.relative": 200.0 / 3},
			absent: []string{"energy cost"}, color: "red", figures: []string{"12 kWh", "3 kW", "66.67 %"}},
		// Both mapped: the counter wins (2 kWh in the first hour, none in
		// the second), the power pin's 12 kWh are not used.
		{name: "counter preferred", component: "heat_pump",
			series: map[string][]kpi.Point{"power_consumption_meter": steps(0, 10, 60, 12, 120, 12), "power_consumption": steps(0, 2, 120, 4)},
			want:   map[string]float64{"energy consumption": 2}, color: "green", figures: []string{"2 kWh"}},
		{name: "air handling unit power", component: "air_handling_unit",
			series: map[string][]kpi.Point{"power_consumption": steps(0, 5)},
			want:   map[string]float64{"energy consumption": 20, "base load.relative": 100}, color: "red", figures: []string{"20 kWh"}},
		// A heat meter's counter: 10, 20 and 10 kW over three hours, 40 kWh;
		// mean 13.3 kW, base load 10 kW = 75 %: red.
		{name: "heat meter", component: "heat_meter",
			series: map[string][]kpi.Point{"heat_meter": steps(0, 1000, 60, 1010, 120, 1030, 180, 1040)},
			want:   map[string]float64{"energy consumption": 40, "power.maximum": 20, "base load": 10, "base load.relative": 75}, color: "red",
			figures: []string{"40 kWh", "20 kW", "10 kW", "75 %"}},
		{name: "no meter mapped", component: "electricity_meter", series: map[string][]kpi.Point{},
			err: ErrMissingPin, errNames: "pin energy_meter (energy_meter) of electricity_meter, or pin power (power)"},
		{name: "negative price", component: "electricity_meter", series: map[string][]kpi.Point{"power": steps(0, 2)},
			attrs: map[string]string{"energy_price": "-0.1"}, err: ErrBadAttribute, errNames: "energy_price"},
		{name: "price not finite", component: "electricity_meter", series: map[string][]kpi.Point{"power": steps(0, 2)},
			attrs: map[string]string{"energy_price": "NaN"}, err: ErrBadAttribute, errNames: "energy_price"},
		// One counter reading is no consumption.
		{name: "no data", component: "electricity_meter", series: map[string][]kpi.Point{"energy_meter": steps(0, 100)}, noData: true},
	},
}

func TestRunFunctions(t *testing.T) {
	fns := map[string]Function{}
	for _, f := range functionTable() {
		fns[f.AlphanumericID] = f
		if len(runCases[f.AlphanumericID]) == 0 {
			t.Errorf("function %s has no run cases", f.AlphanumericID)
		}
	}
	for id, cases := range runCases {
		f, ok := fns[id]
		if !ok {
			t.Errorf("run cases for %s, which is not in the table", id)
			continue
		}
		var sawData, sawNoData bool
		for _, tc := range cases {
			t.Run(id+"/"+tc.name, func(t *testing.T) {
				period := tc.period
				if period.Start.IsZero() {
					period = hoursFrom(runStart, 4)
				}
				out, err := f.Run(Input{Component: tc.component, Period: period, Series: tc.series, Attributes: tc.attrs})
				if tc.err != nil {
					if !errors.Is(err, tc.err) || !strings.Contains(err.Error(), tc.errNames) {
						t.Fatalf("error %v, want %v naming %q", err, tc.err, tc.errNames)
					}
					return
				}
				if err != nil {
					t.Fatal(err)
				}
				checkOutcome(t, f, out)
				if tc.noData {
					sawNoData = true
					if !out.NoData || out.SignalColor != "yellow" || len(out.KPIs) != 0 || out.Summary.Current != nil {
						t.Errorf("no data: %+v", out)
					}
					return
				}
				sawData = true
				if out.NoData || out.SignalColor != tc.color {
					t.Errorf("color %s (no data %v), want %s", out.SignalColor, out.NoData, tc.color)
				}
				got := map[string]float64{}
				for _, k := range out.KPIs {
					got[k.Identifier] = k.Value
				}
				for k, w := range tc.want {
					if v, ok := got[k]; !ok || math.Abs(v-w) > 1e-9 {
						t.Errorf("KPI %q = %v (reported %v), want %v", k, v, ok, w)
					}
				}
				for _, k := range tc.absent {
					if _, ok := got[k]; ok {
						t.Errorf("KPI %q reported, want it absent", k)
					}
				}
				in := filled(out, out.Interpretation)
				for _, fig := range tc.figures {
					if !strings.Contains(in.EN, fig) {
						t.Errorf("English interpretation lacks %q: %s", fig, in.EN)
					}
					// The German text holds the figure's numbers, with a
					// decimal comma.
					for _, n := range number.FindAllString(fig, -1) {
						if de := strings.Replace(n, ".", ",", 1); !strings.Contains(in.DE, de) {
							t.Errorf("German interpretation lacks %q: %s", de, in.DE)
						}
					}
				}
				if v, ok := got[f.SummaryKPI]; ok && (out.Summary.Current == nil || *out.Summary.Current != v) {
					t.Errorf("summary current %v, want %v", out.Summary.Current, v)
				}
			})
		}
		if !sawData || !sawNoData {
			t.Errorf("%s: cases must include a run with data and one without", id)
		}
	}
}

// checkOutcome checks what every outcome must hold: JSON without NaN,
// texts in both languages, named KPIs and plots, the summary named.
func checkOutcome(t *testing.T, f Function, out Outcome) {
	t.Helper()
	if _, err := json.Marshal(out); err != nil {
		t.Fatalf("outcome does not encode: %v", err)
	}
	if out.Interpretation.EN == "" || out.Interpretation.DE == "" || out.Interpretation.EN == out.Interpretation.DE {
		t.Errorf("interpretation not in both languages: %+v", out.Interpretation)
	}
	if len(out.Recommendation) == 0 {
		t.Error("no recommendation")
	}
	for _, r := range out.Recommendation {
		if r.EN == "" || r.DE == "" || r.EN == r.DE {
			t.Errorf("recommendation not in both languages: %+v", r)
		}
	}
	for _, k := range out.KPIs {
		if k.Name.EN == "" || k.Name.DE == "" || k.Name.EN == k.Identifier && k.Name.DE == k.Identifier {
			t.Errorf("KPI %s unnamed: %+v", k.Identifier, k.Name)
		}
		if !strings.Contains(strings.Join(f.KPIs, "|")+"|", k.Identifier+"|") {
			t.Errorf("KPI %s is not listed in the function's KPIs", k.Identifier)
		}
	}
	if !out.NoData && len(out.Plots) == 0 {
		t.Error("no plot")
	}
	for _, p := range out.Plots {
		if p.Identifier == "" || p.Title.EN == "" || p.Title.DE == "" || (p.Type != "pie_chart" && p.Type != "bar_chart") ||
			len(p.Data) != 1 || len(p.Data[0].Values) != len(p.Categories) {
			t.Errorf("plot %+v", p)
		}
	}
	if out.Summary.Identifier != f.SummaryKPI || out.Summary.Name.EN == "" || out.Summary.Unit == "" {
		t.Errorf("summary %+v", out.Summary)
	}
}

// A run on a component the function does not fit fails without running.
func TestRunRefusesAComponentItDoesNotFit(t *testing.T) {
	for _, f := range functionTable() {
		_, err := f.Run(Input{Component: "no_such_component", Period: hoursFrom(runStart, 1)})
		if err == nil || !strings.Contains(err.Error(), "does not fit") {
			t.Errorf("%s: %v", f.AlphanumericID, err)
		}
	}
}

// The summary compares this period's summary KPI with the previous
// period's; a previous period without the KPI leaves Previous nil.
func TestSummaryPrevious(t *testing.T) {
	var f Function
	for _, fn := range functionTable() {
		if fn.AlphanumericID == "operating_cycle_analysis" {
			f = fn
		}
	}
	run := func(start time.Time, series []kpi.Point) Outcome {
		out, err := f.Run(Input{Component: "heat_pump", Period: hoursFrom(start, 4), Series: map[string][]kpi.Point{"operating_message": series}})
		if err != nil {
			t.Fatal(err)
		}
		return out
	}
	prevStart := runStart.Add(-4 * time.Hour)
	prev := run(prevStart, []kpi.Point{{Time: prevStart, Value: 0}, {Time: prevStart.Add(time.Hour), Value: 1}})
	cur := run(runStart, steps(0, 1, 30, 0, 60, 1, 90, 0, 120, 1, 150, 0, 180, 1))
	SetSummaryPrevious(&cur, prev)
	if cur.Summary.Identifier != "starts" || cur.Summary.Current == nil || *cur.Summary.Current != 3 ||
		cur.Summary.Previous == nil || *cur.Summary.Previous != 1 || cur.Summary.Unit != "count" {
		t.Fatalf("summary %+v", cur.Summary)
	}
	SetSummaryPrevious(&cur, run(prevStart, nil))
	if cur.Summary.Previous != nil {
		t.Errorf("previous without data: %v", *cur.Summary.Previous)
	}
}

// A figure that overflows fails the run instead of reaching the stored
// JSON as infinity: 12 kWh at 1e308 EUR/kWh.
func TestRunRefusesNonFiniteFigures(t *testing.T) {
	f := energyConsumption()
	_, err := f.Run(Input{Component: "electricity_meter", Period: hoursFrom(runStart, 4),
		Series: map[string][]kpi.Point{"power": steps(0, 2, 120, 4)}, Attributes: map[string]string{"energy_price": "1e308"}})
	if err == nil || !strings.Contains(err.Error(), `KPI "energy cost" computed no finite value`) {
		t.Fatalf("error %v", err)
	}
}
