package codec

import (
	"encoding/json"
	"fmt"
	"reflect"
	"strings"
	"testing"

	"github.com/openbdp/bdp/fault"
)

// The virtual datapoint configuration's wire format, moved from package
// actors: each case is a body a client could send, and what decoding it
// gives. The types' rules (pin names, formulas, windows, units) are
// actors' and tested there.

// decodeVDPAll decodes body as actors does, every pin in order and then
// the parameters, stopping at the first problem.
func decodeVDPAll(body string, known []string) (map[string]VDPPin, map[string]any, error) {
	c, err := DecodeVDPConfig([]byte(body))
	if err != nil {
		return nil, nil, err
	}
	pins := map[string]VDPPin{}
	for _, name := range c.PinNames() {
		p, err := c.Pin(name)
		if err != nil {
			return nil, nil, err
		}
		pins[name] = p
	}
	params, err := c.Parameters(known)
	return pins, params, err
}

func TestDecodeVDPConfigRefuses(t *testing.T) {
	formula := []string{"formula"}
	for _, tt := range []struct {
		name, body string
		known      []string
		want       string // the whole message
	}{
		// The top level.
		{"not JSON", `{"pins":`, formula, "config: malformed JSON: unexpected end"},
		{"a syntax error", `{"pins" 1}`, formula, "config: malformed JSON at offset 9"},
		{"the config as an array", `[{"pins":{"P1":{"dataPointID":"a"}}}]`, formula, "config: want an object, got an array"},
		{"the config as a string", `"P1;"`, formula, "config: want an object, got a string"},
		{"data after the object", `{} {}`, formula, "config: malformed JSON: unexpected data after the object"},
		{"a stray brace after the object", `{}}`, formula, "config: malformed JSON: unexpected data after the object"},
		{"pins as an array", `{"pins":[]}`, formula, "config.pins: want an object, got an array"},
		{"parameters as a string", `{"pins":{"P1":{"dataPointID":"a"}},"parameters":"P1;"}`, formula, "config.parameters: want an object, got a string"},

		// A pin.
		{"a pin as a string", `{"pins":{"P1":"a"}}`, formula, "config.pins.P1: want an object, got a string"},
		{"a misspelt pin key", `{"pins":{"P1":{"dataPointID":"a","agregate":"min"}}}`, formula, "config.pins.P1.agregate: unknown field"},
		{"unknown pin keys, the first in sorted order", `{"pins":{"P1":{"dataPointID":"a","zz":1,"data_rang":{}}}}`, formula, "config.pins.P1.data_rang: unknown field"},
		{"a pin key in another case", `{"pins":{"P1":{"DataPointID":"a"}}}`, formula, "config.pins.P1.DataPointID: unknown field"},
		{"an unknown key before a wrong type", `{"pins":{"P1":{"dataPointID":5,"x":1}}}`, formula, "config.pins.P1.x: unknown field"},
		{"dataPointID as a number", `{"pins":{"P1":{"dataPointID":5}}}`, formula, "config.pins.P1.dataPointID: want a string, got a number"},
		{"aggregate as a boolean", `{"pins":{"P1":{"dataPointID":"a","aggregate":true}}}`, formula, "config.pins.P1.aggregate: want a string, got a boolean"},
		{"trigger as an array", `{"pins":{"P1":{"dataPointID":"a","trigger":[]}}}`, formula, "config.pins.P1.trigger: want a string, got an array"},
		{"no dataPointID", `{"pins":{"P1":{}}}`, formula, "config.pins.P1.dataPointID: a source dataPointID is required"},
		{"a null pin", `{"pins":{"P1":null}}`, formula, "config.pins.P1.dataPointID: a source dataPointID is required"},
		{"a null dataPointID", `{"pins":{"P1":{"dataPointID":null}}}`, formula, "config.pins.P1.dataPointID: a source dataPointID is required"},
		{"an empty dataPointID", `{"pins":{"P1":{"dataPointID":""}}}`, formula, "config.pins.P1.dataPointID: a source dataPointID is required"},
		{"a dataPointID with a control character", `{"pins":{"P1":{"dataPointID":"a\tb"}}}`, formula, "config.pins.P1.dataPointID: a source dataPointID is required"},
		{"a dataPointID too long", `{"pins":{"P1":{"dataPointID":"` + strings.Repeat("x", MaxDataPointIDBytes+1) + `"}}}`, formula,
			"config.pins.P1.dataPointID: a source dataPointID is required"},
		{"the dataPointID before the data_range", `{"pins":{"P1":{"data_range":{"cnt":1}}}}`, formula, "config.pins.P1.dataPointID: a source dataPointID is required"},
		{"pins in sorted order", `{"pins":{"P2":{"dataPointID":1},"P1":{}}}`, formula, "config.pins.P1.dataPointID: a source dataPointID is required"},

		// A data_range.
		{"data_range as a number", `{"pins":{"P1":{"dataPointID":"a","data_range":5}}}`, formula, "config.pins.P1.data_range: want an object, got a number"},
		{"a data_range key misspelt", `{"pins":{"P1":{"dataPointID":"a","data_range":{"count":5,"cnt":3}}}}`, formula, "config.pins.P1.data_range.cnt: unknown field"},
		{"time as an object", `{"pins":{"P1":{"dataPointID":"a","data_range":{"time":{}}}}}`, formula, "config.pins.P1.data_range.time: want a string, got an object"},
		{"start as a number", `{"pins":{"P1":{"dataPointID":"a","data_range":{"start":8}}}}`, formula, "config.pins.P1.data_range.start: want a string, got a number"},
		{"count not numeric", `{"pins":{"P1":{"dataPointID":"a","data_range":{"count":"abc"}}}}`, formula,
			`config.pins.P1.data_range.count: must be an integer from 1 to 100000 (or such a numeric string), got "abc"`},
		{"count 0", `{"pins":{"P1":{"dataPointID":"a","data_range":{"count":0}}}}`, formula,
			"config.pins.P1.data_range.count: must be an integer from 1 to 100000 (or such a numeric string), got 0"},
		{"count above the limit", `{"pins":{"P1":{"dataPointID":"a","data_range":{"count":"100001"}}}}`, formula,
			`config.pins.P1.data_range.count: must be an integer from 1 to 100000 (or such a numeric string), got "100001"`},
		{"count with a fraction", `{"pins":{"P1":{"dataPointID":"a","data_range":{"count":3.0}}}}`, formula,
			"config.pins.P1.data_range.count: must be an integer from 1 to 100000 (or such a numeric string), got 3.0"},
		{"count as a boolean", `{"pins":{"P1":{"dataPointID":"a","data_range":{"count":true}}}}`, formula,
			"config.pins.P1.data_range.count: must be an integer from 1 to 100000 (or such a numeric string), got true"},

		// The parameters.
		{"an unknown parameter", `{"parameters":{"formula":"P1;","formule":"P1 x 2;"}}`, formula, "config.parameters.formule: unknown field"},
		{"unknown parameters, the first in sorted order", `{"parameters":{"z":1,"b":2}}`, formula, "config.parameters.b: unknown field"},
		{"a parameter in another case", `{"parameters":{"Formula":"P1;"}}`, formula, "config.parameters.Formula: unknown field"},
		{"no known parameters", `{"parameters":{"formula":"P1;"}}`, nil, "config.parameters.formula: unknown field"},
		{"the pins before the parameters", `{"pins":{"P1":{}},"parameters":"x"}`, formula, "config.pins.P1.dataPointID: a source dataPointID is required"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			_, _, err := decodeVDPAll(tt.body, tt.known)
			if err == nil {
				t.Fatalf("accepted %s", tt.body)
			}
			if !fault.Is(err, fault.Invalid) {
				t.Errorf("%v is of kind %v, want invalid", err, fault.KindOf(err))
			}
			if got := fault.Message(err); got != tt.want {
				t.Errorf("got  %q\nwant %q", got, tt.want)
			}
		})
	}
}

func TestDecodeVDPConfigAccepts(t *testing.T) {
	three, hundredThousand := 3, 100_000
	for _, tt := range []struct {
		name, body string
		known      []string
		pins       map[string]VDPPin
		params     map[string]any
	}{
		{"an empty body", "  \n", nil, map[string]VDPPin{}, nil},
		{"null", `null`, nil, map[string]VDPPin{}, nil},
		{"null pins and parameters", `{"pins":null,"parameters":null}`, nil, map[string]VDPPin{}, nil},
		{"keys beside pins and parameters are ignored", `{"pins":{},"type":"formula","status":"Running","logs":[]}`, nil, map[string]VDPPin{}, nil},
		{"top-level names in any case", `{"Pins":{"P1":{"dataPointID":"a"}},"PARAMETERS":{"formula":"P1;"}}`, []string{"formula"},
			map[string]VDPPin{"P1": {DataPointID: "a"}}, map[string]any{"formula": "P1;"}},
		{"a whole pin", `{"pins":{"P1":{"dataPointID":"a","data_range":{"count":3},"aggregate":"mean","trigger":"every_minute"}}}`, nil,
			map[string]VDPPin{"P1": {DataPointID: "a", DataRange: VDPRange{Count: &three}, Aggregate: "mean", Trigger: "every_minute"}}, nil},
		{"count as a numeric string", `{"pins":{"P1":{"dataPointID":"a","data_range":{"count":"3"}}}}`, nil,
			map[string]VDPPin{"P1": {DataPointID: "a", DataRange: VDPRange{Count: &three}}}, nil},
		{"the largest count", `{"pins":{"P1":{"dataPointID":"a","data_range":{"count":100000}}}}`, nil,
			map[string]VDPPin{"P1": {DataPointID: "a", DataRange: VDPRange{Count: &hundredThousand}}}, nil},
		{"a null count is none", `{"pins":{"P1":{"dataPointID":"a","data_range":{"count":null,"time":"5m"}}}}`, nil,
			map[string]VDPPin{"P1": {DataPointID: "a", DataRange: VDPRange{Time: "5m"}}}, nil},
		// Which of count, time and start/end is given, and whether the
		// window is valid, is actors' to judge.
		{"a data_range as given", `{"pins":{"P1":{"dataPointID":"a","data_range":{"count":3,"time":"x","start":"0 8 * * *","end":""}}}}`, nil,
			map[string]VDPPin{"P1": {DataPointID: "a", DataRange: VDPRange{Count: &three, Time: "x", Start: "0 8 * * *"}}}, nil},
		{"a null data_range", `{"pins":{"P1":{"dataPointID":"a","data_range":null,"aggregate":null}}}`, nil,
			map[string]VDPPin{"P1": {DataPointID: "a"}}, nil},
		{"pin names are actors' to judge", `{"pins":{"X 1":{"dataPointID":"a"}}}`, nil,
			map[string]VDPPin{"X 1": {DataPointID: "a"}}, nil},
		{"numbers as json.Number", `{"parameters":{"factorization":60.5}}`, []string{"factorization"},
			map[string]VDPPin{}, map[string]any{"factorization": json.Number("60.5")}},
		{"parameters of any JSON type", `{"parameters":{"temperature_unit":5,"pressure_unit":null}}`, []string{"temperature_unit", "pressure_unit"},
			map[string]VDPPin{}, map[string]any{"temperature_unit": json.Number("5"), "pressure_unit": nil}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			pins, params, err := decodeVDPAll(tt.body, tt.known)
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(pins, tt.pins) {
				t.Errorf("pins %s, want %s", show(pins), show(tt.pins))
			}
			if !reflect.DeepEqual(params, tt.params) {
				t.Errorf("parameters %#v, want %#v", params, tt.params)
			}
		})
	}
}

// show prints pins with their counts, not the counts' addresses.
func show(pins map[string]VDPPin) string {
	var b strings.Builder
	for name, p := range pins {
		count := "nil"
		if p.DataRange.Count != nil {
			count = fmt.Sprint(*p.DataRange.Count)
		}
		fmt.Fprintf(&b, "%s:{%q count=%s %q %q %q %q %q} ", name, p.DataPointID, count, p.DataRange.Time, p.DataRange.Start, p.DataRange.End, p.Aggregate, p.Trigger)
	}
	return b.String()
}

// Whatever the body, decoding answers a pin or a client's mistake worded
// for the client, never a panic or another kind, and a pin it accepts
// holds a valid dataPointID and a count in range.
func FuzzDecodeVDPConfig(f *testing.F) {
	for _, s := range []string{
		``, `null`, `{}`, `[]`, `{"pins":{"P1":{"dataPointID":"a","data_range":{"count":"3"}}},"parameters":{"formula":"P1;"}}`,
		`{"pins":{"P1":{"dataPointID":"a","data_range":{"start":"0 8 * * *","end":"0 18 * * *"},"aggregate":"integral"}}}`,
		`{"pins":{"P1":{"dataPointID":5,"x":1}}}`, `{"pins":{"P1":null},"parameters":"x"}`, `{} {}`,
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, body string) {
		pins, _, err := decodeVDPAll(body, []string{"formula", "factorization"})
		if err != nil {
			if !fault.Is(err, fault.Invalid) {
				t.Fatalf("%q: %v is of kind %v", body, err, fault.KindOf(err))
			}
			if msg := fault.Message(err); !strings.HasPrefix(msg, "config") || strings.Contains(msg, "Go struct") || strings.Contains(msg, "json: ") {
				t.Fatalf("%q: %q is not in the client's terms", body, msg)
			}
			return
		}
		for name, p := range pins {
			if ValidateDataPointID(p.DataPointID) != nil {
				t.Fatalf("%q: pin %s has dataPointID %q", body, name, p.DataPointID)
			}
			if c := p.DataRange.Count; c != nil && (*c < 1 || *c > vdpMaxCount) {
				t.Fatalf("%q: pin %s has count %d", body, name, *c)
			}
		}
	})
}
