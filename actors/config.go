package actors

import (
	"encoding/json"
	"regexp"
	"slices"

	"github.com/openbdp/bdp/codec"
	"github.com/openbdp/bdp/fault"
	"github.com/openbdp/bdp/pipeline/formula"
	"github.com/openbdp/bdp/pipeline/window"
)

// The virtual datapoint types (api.md 2.10, decisions.md 5).
const (
	TypeFormula          = "formula"
	TypeGradient         = "gradient"
	TypeAbsoluteHumidity = "absolute_humidity"
)

// aedifionTypeNames are the names aedifion's published API gives the
// types where they differ from bdp's (decisions.md 10): accepted on
// create and answered as vdp_type.
var aedifionTypeNames = map[string]string{TypeAbsoluteHumidity: "absolute_air_humidity"}

// CanonicalType is bdp's name of a type given by either name; an unknown
// name comes back unchanged (ParseConfig refuses it).
func CanonicalType(typ string) string {
	for ours, theirs := range aedifionTypeNames {
		if typ == theirs {
			return ours
		}
	}
	return typ
}

// AedifionType is the name aedifion's API gives a type (vdp_type).
func AedifionType(typ string) string {
	if theirs, ok := aedifionTypeNames[typ]; ok {
		return theirs
	}
	return typ
}

// Config is a virtual datapoint's configuration (api.md 2.11) with the
// defaults filled in; it is stored and answered in this form.
type Config struct {
	Pins       map[string]PinConfig `json:"pins"`
	Parameters map[string]any       `json:"parameters" doc:"formula: {formula} (at most 4000 characters, formula.MaxLength); gradient: {factorization}; absolute_humidity: {relative_humidity_unit, temperature_unit, pressure_unit}"`
}

// PinConfig is one pin.
type PinConfig struct {
	DataPointID string    `json:"dataPointID"`
	DataRange   DataRange `json:"data_range"`
	Aggregate   string    `json:"aggregate"`
	Trigger     string    `json:"trigger"`
}

// DataRange is one of: count, time, or start and end (cron).
type DataRange struct {
	Count *int   `json:"count,omitempty"`
	Time  string `json:"time,omitempty" maxLength:"100"`  // window.MaxDurationLength
	Start string `json:"start,omitempty" maxLength:"200"` // cron; window.MaxCronLength
	End   string `json:"end,omitempty" maxLength:"200"`
}

// SourceIDs lists the source dataPointIDs, sorted, without repeats.
func (c Config) SourceIDs() []string {
	var ids []string
	for _, p := range c.Pins {
		if !slices.Contains(ids, p.DataPointID) {
			ids = append(ids, p.DataPointID)
		}
	}
	slices.Sort(ids)
	return ids
}

// types says, per type, which pins it takes, which it requires and which
// parameters it knows.
var types = map[string]struct {
	pins     *regexp.Regexp
	required []string
	params   []string
}{
	TypeFormula:          {regexp.MustCompile(`^P[1-5]$`), nil, []string{"formula"}},
	TypeGradient:         {regexp.MustCompile(`^input$`), []string{"input"}, []string{"factorization"}},
	TypeAbsoluteHumidity: {regexp.MustCompile(`^(relative_humidity|temperature|pressure)$`), []string{"relative_humidity", "temperature"}, []string{"relative_humidity_unit", "temperature_unit", "pressure_unit"}},
}

// ParseConfig validates a configuration body for a type and fills in the
// defaults (data_range count 1, aggregate max, trigger every_value, the
// type's parameter defaults). Every problem is a 400 naming the field in
// the client's terms; a key unknown inside a pin, a data_range or the
// parameters is one (a typo would silently change the calculation),
// while keys beside pins and parameters are ignored, so that a client may
// send back the object it got. codec.DecodeVDPConfig reads the JSON (its
// shape, types and unknown keys); the rules here are the types' and the
// windows'. The two take turns, pin by pin, so that of several problems
// the first in that order is the one reported.
func ParseConfig(typ string, body []byte) (Config, error) {
	rules, ok := types[typ]
	if !ok {
		return Config{}, fault.Invalidf("type must be formula, gradient or absolute_humidity (also absolute_air_humidity), got %q", typ)
	}
	wire, err := codec.DecodeVDPConfig(body)
	if err != nil {
		return Config{}, err
	}
	pins := wire.PinNames()
	if len(pins) == 0 {
		return Config{}, fault.Invalidf("config.pins: at least one pin is required")
	}
	if len(pins) > 5 {
		return Config{}, fault.Invalidf("config.pins: at most 5 pins, got %d", len(pins))
	}
	cfg := Config{Pins: map[string]PinConfig{}, Parameters: map[string]any{}}
	for _, name := range pins {
		field := "config.pins." + name
		if !rules.pins.MatchString(name) {
			return Config{}, fault.Invalidf("%s: pin name not allowed for type %s", field, typ)
		}
		p, err := wire.Pin(name)
		if err != nil {
			return Config{}, err
		}
		// DataRange and codec.VDPRange have the same fields, so the
		// conversion stops compiling if one gains a field the other lacks.
		pc, err := normalizePin(field, PinConfig{DataPointID: p.DataPointID, DataRange: DataRange(p.DataRange), Aggregate: p.Aggregate, Trigger: p.Trigger})
		if err != nil {
			return Config{}, err
		}
		cfg.Pins[name] = pc
	}
	for _, req := range rules.required {
		if _, ok := cfg.Pins[req]; !ok {
			return Config{}, fault.Invalidf("config.pins.%s: required for type %s", req, typ)
		}
	}
	given, err := wire.Parameters(rules.params)
	if err != nil {
		return Config{}, err
	}
	params, err := parseParameters(typ, given, cfg)
	if err != nil {
		return Config{}, err
	}
	cfg.Parameters = params
	return cfg, nil
}

// normalizePin validates a pin's data_range, aggregate and trigger and
// fills in their defaults.
func normalizePin(field string, pc PinConfig) (PinConfig, error) {
	r, err := pinRange(pc)
	if err != nil {
		return pc, fault.Invalidf("%s.%s", field, err.Error()) // window names the data_range field
	}
	if r.Count > 0 {
		n := r.Count
		pc.DataRange = DataRange{Count: &n}
	}
	agg, err := window.ParseAggregate(pc.Aggregate)
	if err != nil {
		return pc, fault.Invalidf("%s.aggregate: %v", field, err)
	}
	trig, err := window.ParseTrigger(pc.Trigger)
	if err != nil {
		return pc, fault.Invalidf("%s.trigger: %v", field, err)
	}
	pc.Aggregate, pc.Trigger = string(agg), string(trig)
	return pc, nil
}

// pinRange parses a pin's data_range; none given means count 1.
func pinRange(pc PinConfig) (window.Range, error) {
	var count any
	if pc.DataRange.Count != nil {
		count = *pc.DataRange.Count
	}
	return window.ParseRange(count, pc.DataRange.Time, pc.DataRange.Start, pc.DataRange.End)
}

// parseParameters validates the type's parameters against its pins and
// fills in defaults.
func parseParameters(typ string, given map[string]any, cfg Config) (map[string]any, error) {
	out := map[string]any{}
	switch typ {
	case TypeFormula:
		src, _ := given["formula"].(string)
		if src == "" {
			return nil, fault.Invalidf("config.parameters.formula: a formula is required")
		}
		if _, err := formula.Compile(src, pinOrder(cfg)); err != nil {
			return nil, fault.Invalidf("config.parameters.formula: %v", err)
		}
		out["formula"] = src
	case TypeGradient:
		f := 1.0
		if v, ok := given["factorization"]; ok {
			n, isNum := v.(json.Number)
			parsed, err := n.Float64()
			if !isNum || err != nil {
				return nil, fault.Invalidf("config.parameters.factorization: must be a number, got %v", v)
			}
			f = parsed
		}
		out["factorization"] = f
	case TypeAbsoluteHumidity:
		u, err := humidityUnits(given)
		if err != nil {
			return nil, err
		}
		out["relative_humidity_unit"], out["temperature_unit"], out["pressure_unit"] = u.RH, u.Temperature, u.Pressure
	}
	return out, nil
}

// humidityUnits reads the unit parameters with the defaults of api.md.
func humidityUnits(given map[string]any) (window.HumidityUnits, error) {
	u := window.HumidityUnits{RH: "count", Temperature: "celsius", Pressure: "Pa"}
	for name, dst := range map[string]*string{"relative_humidity_unit": &u.RH, "temperature_unit": &u.Temperature, "pressure_unit": &u.Pressure} {
		if v, ok := given[name]; ok {
			s, isStr := v.(string)
			if !isStr {
				return u, fault.Invalidf("config.parameters.%s: must be a string", name)
			}
			*dst = s
		}
	}
	if err := u.Validate(); err != nil {
		return u, fault.Invalidf("config.parameters.%v", err)
	}
	return u, nil
}

// pinOrder is the order pin values are handed to a formula: by name.
func pinOrder(cfg Config) []string {
	names := make([]string, 0, len(cfg.Pins))
	for n := range cfg.Pins {
		names = append(names, n)
	}
	slices.Sort(names)
	return names
}
