package actors

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"regexp"
	"slices"
	"strconv"

	"github.com/openbdp/bdp/fault"
	"github.com/openbdp/bdp/pipeline"
	"github.com/openbdp/bdp/pipeline/formula"
	"github.com/openbdp/bdp/pipeline/window"
)

// The virtual datapoint types (api.md 2.10, decisions.md 5).
const (
	TypeFormula          = "formula"
	TypeGradient         = "gradient"
	TypeAbsoluteHumidity = "absolute_humidity"
)

// Config is a virtual datapoint's configuration (api.md 2.11) with the
// defaults filled in; it is stored and answered in this form.
type Config struct {
	Pins       map[string]PinConfig `json:"pins"`
	Parameters map[string]any       `json:"parameters"`
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
	Time  string `json:"time,omitempty"`
	Start string `json:"start,omitempty"`
	End   string `json:"end,omitempty"`
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

// pinNames says which pins a type takes and which it requires.
var pinNames = map[string]struct {
	allowed  *regexp.Regexp
	required []string
}{
	TypeFormula:          {regexp.MustCompile(`^P[1-5]$`), nil},
	TypeGradient:         {regexp.MustCompile(`^input$`), []string{"input"}},
	TypeAbsoluteHumidity: {regexp.MustCompile(`^(relative_humidity|temperature|pressure)$`), []string{"relative_humidity", "temperature"}},
}

// rawConfig is the body as the client sends it: count may be a number or
// a numeric string.
type rawConfig struct {
	Pins map[string]struct {
		DataPointID *string `json:"dataPointID"`
		DataRange   *struct {
			Count json.RawMessage `json:"count"`
			Time  string          `json:"time"`
			Start string          `json:"start"`
			End   string          `json:"end"`
		} `json:"data_range"`
		Aggregate string `json:"aggregate"`
		Trigger   string `json:"trigger"`
	} `json:"pins"`
	Parameters map[string]any `json:"parameters"`
}

// ParseConfig validates a configuration body for a type and fills in the
// defaults (data_range count 1, aggregate max, trigger every_value, the
// type's parameter defaults). Every problem is a 400 naming the field.
func ParseConfig(typ string, body []byte) (Config, error) {
	names, ok := pinNames[typ]
	if !ok {
		return Config{}, fault.Invalidf("type must be formula, gradient or absolute_humidity, got %q", typ)
	}
	if len(bytes.TrimSpace(body)) == 0 {
		body = []byte("{}")
	}
	var raw rawConfig
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.UseNumber()
	if err := dec.Decode(&raw); err != nil {
		return Config{}, fault.Invalidf("config: malformed JSON: %v", err)
	}
	if _, err := dec.Token(); err != io.EOF {
		return Config{}, fault.Invalidf("config: malformed JSON: unexpected data after the object")
	}
	if len(raw.Pins) == 0 {
		return Config{}, fault.Invalidf("config.pins: at least one pin is required")
	}
	if len(raw.Pins) > 5 {
		return Config{}, fault.Invalidf("config.pins: at most 5 pins, got %d", len(raw.Pins))
	}
	cfg := Config{Pins: map[string]PinConfig{}, Parameters: map[string]any{}}
	for name, p := range raw.Pins {
		field := "config.pins." + name
		if !names.allowed.MatchString(name) {
			return Config{}, fault.Invalidf("%s: pin name not allowed for type %s", field, typ)
		}
		if p.DataPointID == nil || pipeline.ValidateDataPointID(*p.DataPointID) != nil {
			return Config{}, fault.Invalidf("%s.dataPointID: a source dataPointID is required", field)
		}
		pc := PinConfig{DataPointID: *p.DataPointID, Aggregate: p.Aggregate, Trigger: p.Trigger}
		if r := p.DataRange; r != nil {
			pc.DataRange = DataRange{Time: r.Time, Start: r.Start, End: r.End}
			if len(r.Count) > 0 && string(r.Count) != "null" {
				n, err := parseCount(r.Count)
				if err != nil {
					return Config{}, fault.Invalidf("%s.data_range.count: %v", field, err)
				}
				pc.DataRange.Count = &n
			}
		}
		pc, err := normalizePin(field, pc)
		if err != nil {
			return Config{}, err
		}
		cfg.Pins[name] = pc
	}
	for _, req := range names.required {
		if _, ok := cfg.Pins[req]; !ok {
			return Config{}, fault.Invalidf("config.pins.%s: required for type %s", req, typ)
		}
	}
	params, err := parseParameters(typ, raw.Parameters, cfg)
	if err != nil {
		return Config{}, err
	}
	cfg.Parameters = params
	return cfg, nil
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
		return pc, fault.Invalidf("%s.data_range.%s", field, err.Error())
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
