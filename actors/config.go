package actors

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"reflect"
	"regexp"
	"slices"
	"strconv"
	"strings"

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

// rawPin is a pin as the client sends it.
type rawPin struct {
	DataPointID *string         `json:"dataPointID"`
	DataRange   json.RawMessage `json:"data_range"`
	Aggregate   string          `json:"aggregate"`
	Trigger     string          `json:"trigger"`
}

// rawRange is a data_range as the client sends it: count may be a number
// or a numeric string.
type rawRange struct {
	Count json.RawMessage `json:"count"`
	Time  string          `json:"time"`
	Start string          `json:"start"`
	End   string          `json:"end"`
}

// ParseConfig validates a configuration body for a type and fills in the
// defaults (data_range count 1, aggregate max, trigger every_value, the
// type's parameter defaults). Every problem is a 400 naming the field in
// the client's terms; a key unknown inside a pin, a data_range or the
// parameters is one (a typo would silently change the calculation),
// while keys beside pins and parameters are ignored, so that a client may
// send back the object it got.
func ParseConfig(typ string, body []byte) (Config, error) {
	rules, ok := types[typ]
	if !ok {
		return Config{}, fault.Invalidf("type must be formula, gradient or absolute_humidity (also absolute_air_humidity), got %q", typ)
	}
	if len(bytes.TrimSpace(body)) == 0 {
		body = []byte("{}")
	}
	var top struct {
		Pins       json.RawMessage `json:"pins"`
		Parameters json.RawMessage `json:"parameters"`
	}
	dec := json.NewDecoder(bytes.NewReader(body))
	if err := dec.Decode(&top); err != nil {
		return Config{}, jsonError("config", err)
	}
	if _, err := dec.Token(); err != io.EOF {
		return Config{}, fault.Invalidf("config: malformed JSON: unexpected data after the object")
	}
	pins, err := members("config.pins", top.Pins, nil)
	if err != nil {
		return Config{}, err
	}
	if len(pins) == 0 {
		return Config{}, fault.Invalidf("config.pins: at least one pin is required")
	}
	if len(pins) > 5 {
		return Config{}, fault.Invalidf("config.pins: at most 5 pins, got %d", len(pins))
	}
	cfg := Config{Pins: map[string]PinConfig{}, Parameters: map[string]any{}}
	for _, name := range slices.Sorted(maps.Keys(pins)) {
		field := "config.pins." + name
		if !rules.pins.MatchString(name) {
			return Config{}, fault.Invalidf("%s: pin name not allowed for type %s", field, typ)
		}
		pc, err := parsePin(field, pins[name])
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
	if _, err := members("config.parameters", top.Parameters, rules.params); err != nil {
		return Config{}, err
	}
	var given map[string]any
	if len(top.Parameters) > 0 {
		pdec := json.NewDecoder(bytes.NewReader(top.Parameters))
		pdec.UseNumber()
		if err := pdec.Decode(&given); err != nil {
			return Config{}, jsonError("config.parameters", err)
		}
	}
	params, err := parseParameters(typ, given, cfg)
	if err != nil {
		return Config{}, err
	}
	cfg.Parameters = params
	return cfg, nil
}

// parsePin reads one pin, validates it and fills in its defaults.
func parsePin(field string, raw json.RawMessage) (PinConfig, error) {
	var p rawPin
	if err := decodeObject(field, raw, &p); err != nil {
		return PinConfig{}, err
	}
	if p.DataPointID == nil || codec.ValidateDataPointID(*p.DataPointID) != nil {
		return PinConfig{}, fault.Invalidf("%s.dataPointID: a source dataPointID is required", field)
	}
	var r rawRange
	if err := decodeObject(field+".data_range", p.DataRange, &r); err != nil {
		return PinConfig{}, err
	}
	pc := PinConfig{DataPointID: *p.DataPointID, Aggregate: p.Aggregate, Trigger: p.Trigger,
		DataRange: DataRange{Time: r.Time, Start: r.Start, End: r.End}}
	if len(r.Count) > 0 && string(r.Count) != "null" {
		n, err := parseCount(r.Count)
		if err != nil {
			return PinConfig{}, fault.Invalidf("%s.data_range.count: %v", field, err)
		}
		pc.DataRange.Count = &n
	}
	return normalizePin(field, pc)
}

// members reads raw as a JSON object by key (absent or null: none),
// refusing keys outside known unless known is nil.
func members(field string, raw json.RawMessage, known []string) (map[string]json.RawMessage, error) {
	var m map[string]json.RawMessage
	if len(raw) > 0 {
		if err := json.Unmarshal(raw, &m); err != nil {
			return nil, jsonError(field, err)
		}
	}
	if known != nil {
		for _, k := range slices.Sorted(maps.Keys(m)) {
			if !slices.Contains(known, k) {
				return nil, fault.Invalidf("%s.%s: unknown field", field, k)
			}
		}
	}
	return m, nil
}

// decodeObject decodes raw, a JSON object (absent or null: nothing), into
// the struct dst points to; a key that none of its json tags names is
// refused, and so is a value of the wrong JSON type.
func decodeObject(field string, raw json.RawMessage, dst any) error {
	t := reflect.TypeOf(dst).Elem()
	known := make([]string, t.NumField())
	for i := range known {
		known[i], _, _ = strings.Cut(t.Field(i).Tag.Get("json"), ",")
	}
	if _, err := members(field, raw, known); err != nil || len(raw) == 0 {
		return err
	}
	if err := json.Unmarshal(raw, dst); err != nil {
		return jsonError(field, err)
	}
	return nil
}

// jsonError says what is wrong with a JSON value in the client's terms.
func jsonError(field string, err error) error {
	return fault.Invalidf("%s", codec.JSONProblem(field, err))
}

// parseCount accepts an integer or a numeric string (api.md 2.11).
func parseCount(raw json.RawMessage) (int, error) {
	s := string(raw)
	if uq, err := strconv.Unquote(s); err == nil {
		s = uq
	}
	n, err := strconv.Atoi(s)
	if err != nil || n < 1 || n > 100_000 {
		return 0, fmt.Errorf("must be an integer from 1 to 100000 (or such a numeric string), got %s", string(raw))
	}
	return n, nil
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
