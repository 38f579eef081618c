// Package controls runs controls apps: one supervised actor per running
// app, writing setpoints through the project's edge device (package edge)
// with the safeguards of a setpoint write.
//
// Two algorithms: schedule (a weekly schedule from the component's
// attributes, written at each boundary) and heating_curve (a supply
// temperature setpoint from the outdoor temperature, written when it
// moves).
package controls

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"sort"
	"strings"

	"github.com/openbdp/bdp/edge"
	"github.com/openbdp/bdp/fault"
)

// Algorithms.
const (
	AlgorithmSchedule     = "schedule"
	AlgorithmHeatingCurve = "heating_curve"
)

// Attribute keys the algorithms read from the mapped component
// (analytics/catalog/components.json).
const (
	AttrSchedule         = "setpoint_schedule"         // json: [{day, start, end, value}]
	AttrScheduleDefault  = "setpoint_schedule_default" // float: the value outside every entry; unset clears the slot
	AttrScheduleTimezone = "schedule_timezone"         // string: IANA zone of the entries; unset: UTC
	AttrCurveSlope       = "heating_curve_slope"       // float: K of supply per K of outdoor below 20 °C
	AttrCurveOffset      = "heating_curve_offset"      // float: °C, the supply at 20 °C outdoor
	AttrCurveMin         = "heating_curve_min"         // float: °C, lowest supply setpoint
	AttrCurveMax         = "heating_curve_max"         // float: °C, highest supply setpoint
)

// algorithm says which pins an algorithm uses on each component it fits.
type algorithm struct {
	output map[string]string // component alphanumeric id -> the setpoint pin it writes
	input  map[string]string // component alphanumeric id -> the pin it reads (heating_curve: outdoor temperature)
}

// algorithmOf is the algorithm called name; false for an unknown one.
func algorithmOf(name string) (algorithm, bool) {
	switch name {
	case AlgorithmSchedule:
		return algorithm{output: map[string]string{
			"room":                    "temperature_setpoint",
			"thermal_control_loop":    "outlet_temperature_setpoint",
			"boiler":                  "outlet_temperature_setpoint",
			"condensing_boiler":       "outlet_temperature_setpoint",
			"low-temperature_boiler":  "outlet_temperature_setpoint",
			"combined_heat_and_power": "outlet_temperature_setpoint",
			"heat_pump":               "condenser_outlet_temperature_setpoint",
			"air_handling_unit":       "supply_air_temperature_setpoint",
		}}, true
	case AlgorithmHeatingCurve:
		return algorithm{
			output: map[string]string{"thermal_control_loop": "outlet_temperature_setpoint"},
			input:  map[string]string{"thermal_control_loop": "outside_air_temperature"},
		}, true
	}
	return algorithm{}, false
}

// Algorithms lists the algorithms, for documentation.
func Algorithms() []string { return []string{AlgorithmSchedule, AlgorithmHeatingCurve} }

// fits lists the components an algorithm fits, sorted.
func (a algorithm) fits() []string {
	out := make([]string, 0, len(a.output))
	for c := range a.output {
		out = append(out, c)
	}
	sort.Strings(out)
	return out
}

// Defaults of an app's setpoint writing (api.md 4.6) and of its alive
// time-out (aedifion's default).
const (
	DefaultPriority     = 13
	DefaultAliveTimeout = 900 // seconds
)

// AppConfig is what an app is created with beyond its algorithm: aedifion's
// setpoint_writing_params by pin, the alive time-out and auto-recovery.
type AppConfig struct {
	SetpointWritingParams map[string]WriteParams `json:"setpoint_writing_params"`
	AliveTimeout          int                    `json:"alive_timeout"`
	AutoRecovery          bool                   `json:"auto_recovery"`
}

// WriteParams are how an app writes one setpoint pin.
type WriteParams struct {
	Priority         int           `json:"priority"`
	ResetValue       NullableFloat `json:"reset_value"`
	KeepOutOfService bool          `json:"keep_out_of_service"`
}

// NullableFloat is a number or null; aedifion's clients also send the
// string "null".
type NullableFloat struct{ V *float64 }

func (n *NullableFloat) UnmarshalJSON(b []byte) error {
	b = bytes.TrimSpace(b)
	if string(b) == "null" || string(b) == `"null"` {
		n.V = nil
		return nil
	}
	var v float64
	if err := json.Unmarshal(b, &v); err != nil {
		return fmt.Errorf("must be a number or null")
	}
	n.V = &v
	return nil
}

func (n NullableFloat) MarshalJSON() ([]byte, error) {
	if n.V == nil {
		return []byte("null"), nil
	}
	return json.Marshal(*n.V)
}

// ParseConfig checks an app's creation: the algorithm is known (400
// naming the known ones), fits the component (400 naming those it fits),
// and the body's setpoint_writing_params name only the pin it writes,
// with priorities 1..16. An empty body takes the defaults.
func ParseConfig(algorithmName, component string, body []byte, aliveTimeout int, autoRecovery bool) (AppConfig, error) {
	if algorithmName == "" {
		return AppConfig{}, fault.Invalidf("query parameter algorithm is required (%s)", strings.Join(Algorithms(), " or "))
	}
	alg, ok := algorithmOf(algorithmName)
	if !ok {
		return AppConfig{}, fault.Invalidf("algorithm %q is unknown; bdp runs %s", algorithmName, strings.Join(Algorithms(), " and "))
	}
	pin, ok := alg.output[component]
	if !ok {
		return AppConfig{}, fault.Invalidf("algorithm %s does not fit component %s; it fits %s", algorithmName, component, strings.Join(alg.fits(), ", "))
	}
	if aliveTimeout < 1 || aliveTimeout > edge.MaxAliveTimeout {
		return AppConfig{}, fault.Invalidf("alive_timeout must be 1 to %d seconds, got %d", edge.MaxAliveTimeout, aliveTimeout)
	}
	cfg := AppConfig{AliveTimeout: aliveTimeout, AutoRecovery: autoRecovery}
	if len(bytes.TrimSpace(body)) > 0 {
		var in struct {
			Params map[string]json.RawMessage `json:"setpoint_writing_params"`
		}
		dec := json.NewDecoder(bytes.NewReader(body))
		dec.DisallowUnknownFields()
		if err := dec.Decode(&in); err != nil {
			return AppConfig{}, fault.Invalidf("body must be {\"setpoint_writing_params\": {pin: {priority, reset_value, keep_out_of_service}}}: %s", err.Error())
		}
		for name, raw := range in.Params {
			if name != pin {
				return AppConfig{}, fault.Invalidf("setpoint_writing_params: algorithm %s on %s writes pin %s only, not %q", algorithmName, component, pin, fault.Clip(name))
			}
			p := WriteParams{Priority: DefaultPriority}
			dec := json.NewDecoder(bytes.NewReader(raw))
			dec.DisallowUnknownFields()
			if err := dec.Decode(&p); err != nil {
				return AppConfig{}, fault.Invalidf("setpoint_writing_params.%s: %s", pin, err.Error())
			}
			if p.Priority < 1 || p.Priority > 16 {
				return AppConfig{}, fault.Invalidf("setpoint_writing_params.%s: priority must be 1 to 16, got %d", pin, p.Priority)
			}
			if v := p.ResetValue.V; v != nil && (math.IsNaN(*v) || math.IsInf(*v, 0)) {
				return AppConfig{}, fault.Invalidf("setpoint_writing_params.%s: reset_value must be finite", pin)
			}
			cfg.SetpointWritingParams = map[string]WriteParams{pin: p}
		}
	}
	if cfg.SetpointWritingParams == nil {
		cfg.SetpointWritingParams = map[string]WriteParams{pin: {Priority: DefaultPriority}}
	}
	return cfg, nil
}
