package actors

import (
	"encoding/json"
	"reflect"
	"strings"
	"testing"

	"github.com/openbdp/bdp/fault"
)

// ParseConfig's own rules: which pins and parameters a type takes, the
// windows, the formula, the units, the defaults, and the order problems
// are reported in. How the JSON is read (shapes, types, unknown keys
// inside a pin or a data_range) is codec's, tested in
// codec/vdpconfig_test.go; the API's answers are tested in http.

// formulaParams is the parameters member of a formula config taking P1.
const formulaParams = `"parameters":{"formula":"P1;"}`

func TestParseConfigRefuses(t *testing.T) {
	const humidityPins = `"pins":{"relative_humidity":{"dataPointID":"rh"},"temperature":{"dataPointID":"t"}}`
	for _, tt := range []struct {
		name, typ, body string
		want            string // the whole message, or its start when it ends in "…"
	}{
		{"an unknown type", "magic", `{}`, `type must be formula, gradient or absolute_humidity (also absolute_air_humidity), got "magic"`},
		{"aedifion's name, not canonicalised", "absolute_air_humidity", `{}`,
			`type must be formula, gradient or absolute_humidity (also absolute_air_humidity), got "absolute_air_humidity"`},
		{"no pins", TypeFormula, `{` + formulaParams + `}`, "config.pins: at least one pin is required"},
		{"an empty body", TypeFormula, ``, "config.pins: at least one pin is required"},
		{"six pins", TypeFormula, `{"pins":{"P1":{"dataPointID":"a"},"P2":{"dataPointID":"a"},"P3":{"dataPointID":"a"},` +
			`"P4":{"dataPointID":"a"},"P5":{"dataPointID":"a"},"P6":{"dataPointID":"a"}},` + formulaParams + `}`, "config.pins: at most 5 pins, got 6"},
		{"a pin name of another type", TypeFormula, `{"pins":{"input":{"dataPointID":"a"}},` + formulaParams + `}`, "config.pins.input: pin name not allowed for type formula"},
		{"P6", TypeFormula, `{"pins":{"P6":{"dataPointID":"a"}},` + formulaParams + `}`, "config.pins.P6: pin name not allowed for type formula"},
		{"a gradient pin named P1", TypeGradient, `{"pins":{"P1":{"dataPointID":"a"}}}`, "config.pins.P1: pin name not allowed for type gradient"},
		{"humidity without temperature", TypeAbsoluteHumidity, `{"pins":{"relative_humidity":{"dataPointID":"rh"}}}`,
			"config.pins.temperature: required for type absolute_humidity"},

		// The window: what window says, under the pin's name. (window's
		// aggregate and trigger messages name their field again, today
		// "config.pins.P1.aggregate: aggregate: ...", hence the "…".)
		{"two ranges", TypeFormula, `{"pins":{"P1":{"dataPointID":"a","data_range":{"count":3,"time":"5m"}}},` + formulaParams + `}`,
			"config.pins.P1.data_range: give only one of count, time or start/end"},
		{"a cron start without an end", TypeFormula, `{"pins":{"P1":{"dataPointID":"a","data_range":{"start":"0 * * * *"}}},` + formulaParams + `}`,
			"config.pins.P1.data_range.end: is required with data_range.start"},
		{"a bad duration", TypeFormula, `{"pins":{"P1":{"dataPointID":"a","data_range":{"time":"5 minutes"}}},` + formulaParams + `}`,
			"config.pins.P1.data_range.time: …"},
		{"a bad aggregate", TypeFormula, `{"pins":{"P1":{"dataPointID":"a","aggregate":"mode"}},` + formulaParams + `}`,
			`config.pins.P1.aggregate: …"mode" is not one of last, first, sum, mean, median, max, min, timeweighted_mean, integral`},
		{"a bad trigger", TypeFormula, `{"pins":{"P1":{"dataPointID":"a","trigger":"sometimes"}},` + formulaParams + `}`,
			`config.pins.P1.trigger: …"sometimes" is not one of every_value, every_minute, every_hour`},

		// The parameters.
		{"no formula", TypeFormula, `{"pins":{"P1":{"dataPointID":"a"}}}`, "config.parameters.formula: a formula is required"},
		{"a formula not a string", TypeFormula, `{"pins":{"P1":{"dataPointID":"a"}},"parameters":{"formula":5}}`, "config.parameters.formula: a formula is required"},
		{"a formula syntax error", TypeFormula, `{"pins":{"P1":{"dataPointID":"a"}},"parameters":{"formula":"((((;"}}`, "config.parameters.formula: …"},
		{"a formula naming a pin not given", TypeFormula, `{"pins":{"P1":{"dataPointID":"a"}},"parameters":{"formula":"P1 + P3;"}}`, "config.parameters.formula: …P3…"},
		{"another type's parameter", TypeGradient, `{"pins":{"input":{"dataPointID":"a"}},"parameters":{"formula":"P1;"}}`, "config.parameters.formula: unknown field"},
		{"a factorization not a number", TypeGradient, `{"pins":{"input":{"dataPointID":"a"}},"parameters":{"factorization":"60"}}`,
			"config.parameters.factorization: must be a number, got 60"},
		{"a unit not a string", TypeAbsoluteHumidity, `{` + humidityPins + `,"parameters":{"temperature_unit":5}}`, "config.parameters.temperature_unit: must be a string"},
		{"a unit of another dimension", TypeAbsoluteHumidity, `{` + humidityPins + `,"parameters":{"temperature_unit":"Pa"}}`,
			`config.parameters.temperature_unit: "Pa" is not a unit of …`},

		// Of several problems, the first in the order the rules and the
		// decoding take turns in: the type, the body's shape, the number
		// of pins, then pin by pin its name, its body, its window, then
		// the required pins, then the parameters.
		{"the type before the body", "magic", `[`, `type must be formula, gradient or absolute_humidity (also absolute_air_humidity), got "magic"`},
		{"the number of pins before a pin's body", TypeFormula, `{"pins":{"P1":5,"P2":5,"P3":5,"P4":5,"P5":5,"P6":5}}`, "config.pins: at most 5 pins, got 6"},
		{"a pin's name before its body", TypeFormula, `{"pins":{"X1":{"agregate":1}}}`, "config.pins.X1: pin name not allowed for type formula"},
		{"a pin's window before the next pin's body", TypeFormula, `{"pins":{"P1":{"dataPointID":"a","trigger":"never"},"P2":{"x":1}}}`,
			`config.pins.P1.trigger: …"never" is not one of every_value, every_minute, every_hour`},
		{"a pin's body before the next pin's name", TypeFormula, `{"pins":{"P1":{"dataPointID":"a","x":1},"X1":{}}}`, "config.pins.P1.x: unknown field"},
		{"the required pins before the parameters", TypeAbsoluteHumidity, `{"pins":{"temperature":{"dataPointID":"t"}},"parameters":"x"}`,
			"config.pins.relative_humidity: required for type absolute_humidity"},
		{"an unknown parameter before a missing formula", TypeFormula, `{"pins":{"P1":{"dataPointID":"a"}},"parameters":{"formule":"P1;"}}`,
			"config.parameters.formule: unknown field"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			_, err := ParseConfig(tt.typ, []byte(tt.body))
			if err == nil {
				t.Fatalf("accepted %s", tt.body)
			}
			if !fault.Is(err, fault.Invalid) {
				t.Errorf("%v is of kind %v, want invalid", err, fault.KindOf(err))
			}
			if got := fault.Message(err); !matches(got, tt.want) {
				t.Errorf("got  %q\nwant %q", got, tt.want)
			}
		})
	}
}

// matches says whether msg is want, where each "…" in want stands for
// any text (the wording of window's and formula's own messages).
func matches(msg, want string) bool {
	parts := strings.Split(want, "…")
	if !strings.HasPrefix(msg, parts[0]) {
		return false
	}
	rest := msg[len(parts[0]):]
	for _, p := range parts[1:] {
		i := strings.Index(rest, p)
		if i < 0 {
			return false
		}
		rest = rest[i+len(p):]
	}
	return len(parts) > 1 || rest == ""
}

func TestParseConfigFillsInDefaults(t *testing.T) {
	one, three := 1, 3
	pin := func(id string, r DataRange, agg, trig string) PinConfig {
		return PinConfig{DataPointID: id, DataRange: r, Aggregate: agg, Trigger: trig}
	}
	for _, tt := range []struct {
		name, typ, body string
		want            Config
	}{
		{"a formula with the defaults", TypeFormula, `{"pins":{"P1":{"dataPointID":"a"}},` + formulaParams + `}`,
			Config{Pins: map[string]PinConfig{"P1": pin("a", DataRange{Count: &one}, "max", "every_value")}, Parameters: map[string]any{"formula": "P1;"}}},
		{"each kind of window", TypeFormula, `{"pins":{
			"P1":{"dataPointID":"a","data_range":{"count":"3"}},
			"P2":{"dataPointID":"b","data_range":{"time":"1h"},"aggregate":"Mean","trigger":"every_minute"},
			"P3":{"dataPointID":"c","data_range":{"start":"0 8 * * *","end":"0 18 * * *"},"aggregate":"integral"}},
			"parameters":{"formula":"P1 + P2 + P3;"}}`,
			Config{Pins: map[string]PinConfig{
				"P1": pin("a", DataRange{Count: &three}, "max", "every_value"),
				"P2": pin("b", DataRange{Time: "1h"}, "mean", "every_minute"),
				"P3": pin("c", DataRange{Start: "0 8 * * *", End: "0 18 * * *"}, "integral", "every_value"),
			}, Parameters: map[string]any{"formula": "P1 + P2 + P3;"}}},
		{"a gradient's default factorization", TypeGradient, `{"pins":{"input":{"dataPointID":"meter"}}}`,
			Config{Pins: map[string]PinConfig{"input": pin("meter", DataRange{Count: &one}, "max", "every_value")}, Parameters: map[string]any{"factorization": 1.0}}},
		{"a gradient's factorization", TypeGradient, `{"pins":{"input":{"dataPointID":"meter"}},"parameters":{"factorization":60}}`,
			Config{Pins: map[string]PinConfig{"input": pin("meter", DataRange{Count: &one}, "max", "every_value")}, Parameters: map[string]any{"factorization": 60.0}}},
		{"humidity's default units", TypeAbsoluteHumidity, `{"pins":{"relative_humidity":{"dataPointID":"rh"},"temperature":{"dataPointID":"t"}}}`,
			Config{Pins: map[string]PinConfig{
				"relative_humidity": pin("rh", DataRange{Count: &one}, "max", "every_value"),
				"temperature":       pin("t", DataRange{Count: &one}, "max", "every_value"),
			}, Parameters: map[string]any{"relative_humidity_unit": "count", "temperature_unit": "celsius", "pressure_unit": "Pa"}}},
		{"humidity's units given", TypeAbsoluteHumidity, `{"pins":{"relative_humidity":{"dataPointID":"rh"},"temperature":{"dataPointID":"t"},
			"pressure":{"dataPointID":"p"}},"parameters":{"relative_humidity_unit":"percent","pressure_unit":"hPa"}}`,
			Config{Pins: map[string]PinConfig{
				"relative_humidity": pin("rh", DataRange{Count: &one}, "max", "every_value"),
				"temperature":       pin("t", DataRange{Count: &one}, "max", "every_value"),
				"pressure":          pin("p", DataRange{Count: &one}, "max", "every_value"),
			}, Parameters: map[string]any{"relative_humidity_unit": "percent", "temperature_unit": "celsius", "pressure_unit": "hPa"}}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			got, err := ParseConfig(tt.typ, []byte(tt.body))
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(got, tt.want) {
				t.Errorf("got  %s\nwant %s", asJSON(t, got), asJSON(t, tt.want))
			}
			// What is stored and answered is a valid config, read back
			// the same (http's TestVDPConfigRoundTrip over the API).
			again, err := ParseConfig(tt.typ, []byte(asJSON(t, got)))
			if err != nil {
				t.Fatalf("the stored form %s is refused: %v", asJSON(t, got), err)
			}
			if asJSON(t, again) != asJSON(t, got) {
				t.Errorf("read back %s, was %s", asJSON(t, again), asJSON(t, got))
			}
		})
	}
}

func asJSON(t *testing.T, v any) string {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func TestConfigSourceIDs(t *testing.T) {
	cfg, err := ParseConfig(TypeFormula, []byte(`{"pins":{"P1":{"dataPointID":"b"},"P2":{"dataPointID":"a"},"P3":{"dataPointID":"b"}},"parameters":{"formula":"P1+P2+P3;"}}`))
	if err != nil {
		t.Fatal(err)
	}
	if got := cfg.SourceIDs(); !reflect.DeepEqual(got, []string{"a", "b"}) {
		t.Errorf("SourceIDs %v, want [a b]", got)
	}
}

func TestTypeNames(t *testing.T) {
	for _, tt := range []struct{ given, canonical, aedifion string }{
		{TypeFormula, TypeFormula, TypeFormula},
		{TypeGradient, TypeGradient, TypeGradient},
		{TypeAbsoluteHumidity, TypeAbsoluteHumidity, "absolute_air_humidity"},
		{"absolute_air_humidity", TypeAbsoluteHumidity, "absolute_air_humidity"},
		{"magic", "magic", "magic"},
	} {
		if got := CanonicalType(tt.given); got != tt.canonical {
			t.Errorf("CanonicalType(%q) = %q, want %q", tt.given, got, tt.canonical)
		}
		if got := AedifionType(CanonicalType(tt.given)); got != tt.aedifion {
			t.Errorf("AedifionType(CanonicalType(%q)) = %q, want %q", tt.given, got, tt.aedifion)
		}
	}
}
