package codec

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"reflect"
	"slices"
	"strconv"
	"strings"

	"github.com/openbdp/bdp/fault"
)

// A virtual datapoint's configuration as a client sends it (api.md 2.11):
//
//	{"pins": {"P1": {"dataPointID": "meter", "data_range": {"count": 3},
//	                 "aggregate": "max", "trigger": "every_value"}},
//	 "parameters": {"formula": "P1;"}}
//
// This file reads its shape; package actors judges the values (which pins
// and parameters a type takes, the windows, the formula, the units) and
// fills in the defaults. Every problem is a fault.Invalid naming the field
// in the client's terms ("config.pins.P1.data_range.count: ..."), for the
// API answers it as a 400 as it is. A key unknown inside a pin, a
// data_range or the parameters is refused, since a typo there would
// silently change the calculation; keys beside pins and parameters are
// ignored, so that a client may send back the object it got.
//
// The pins and the parameters are decoded on demand, pin by pin, because
// actors' checks come in between (a pin's name is judged before its body,
// every pin before the parameters): of a body with several problems, the
// one reported is the first in that order, as it was when decoding and
// judging were one pass.

// vdpMaxCount bounds a data_range count (api.md 2.11).
const vdpMaxCount = 100_000

// VDPConfigJSON is a configuration's top level, decoded: its pins by
// name and its parameters, both still to be decoded (Pin, Parameters).
type VDPConfigJSON struct {
	pins       map[string]json.RawMessage
	parameters json.RawMessage
}

// VDPPin is a pin as the client sent it, structurally sound; what is not
// given is zero.
type VDPPin struct {
	DataPointID string // a valid dataPointID (ValidateDataPointID)
	DataRange   VDPRange
	Aggregate   string
	Trigger     string
}

// VDPRange is a data_range as the client sent it; actors checks that it
// gives only one of count, time, or start and end.
type VDPRange struct {
	Count *int // from 1 to 100000; nil when absent or null
	Time  string
	Start string
	End   string
}

// vdpPin is a pin on the wire. Its data_range is decoded only after the
// dataPointID is checked, the order its problems were always reported in.
type vdpPin struct {
	DataPointID string          `json:"dataPointID"`
	DataRange   json.RawMessage `json:"data_range"`
	Aggregate   string          `json:"aggregate"`
	Trigger     string          `json:"trigger"`
}

// vdpRange is a data_range on the wire: count may be a number or a
// numeric string (api.md 2.11), so it is read by vdpCount.
type vdpRange struct {
	Count json.RawMessage `json:"count"`
	Time  string          `json:"time"`
	Start string          `json:"start"`
	End   string          `json:"end"`
}

// DecodeVDPConfig reads a configuration body: one JSON object (an empty
// body is {}), nothing after it, with pins an object if given. The top
// level is read by encoding/json's struct decoding, names in any case, as
// it always was; inside, names are exact.
func DecodeVDPConfig(body []byte) (VDPConfigJSON, error) {
	if len(bytes.TrimSpace(body)) == 0 {
		body = []byte("{}")
	}
	var top struct {
		Pins       json.RawMessage `json:"pins"`
		Parameters json.RawMessage `json:"parameters"`
	}
	dec := json.NewDecoder(bytes.NewReader(body))
	if err := dec.Decode(&top); err != nil {
		return VDPConfigJSON{}, invalidJSON("config", err)
	}
	if _, err := dec.Token(); err != io.EOF {
		return VDPConfigJSON{}, fault.Invalidf("config: malformed JSON: unexpected data after the object")
	}
	pins, err := vdpMembers("config.pins", top.Pins, nil)
	if err != nil {
		return VDPConfigJSON{}, err
	}
	return VDPConfigJSON{pins: pins, parameters: top.Parameters}, nil
}

// PinNames lists the pins' names, sorted: the order they are judged in.
func (c VDPConfigJSON) PinNames() []string {
	return slices.Sorted(maps.Keys(c.pins))
}

// Pin decodes the pin of that name (one of PinNames): an object (null:
// empty) of known keys and values of the right JSON types, with a valid
// dataPointID and a data_range likewise, its count an integer from 1 to
// 100000 or such a numeric string.
func (c VDPConfigJSON) Pin(name string) (VDPPin, error) {
	field := "config.pins." + name
	var p vdpPin
	if err := vdpObject(field, c.pins[name], &p); err != nil {
		return VDPPin{}, err
	}
	// Absent, null and "" are all the empty string here, refused alike.
	if ValidateDataPointID(p.DataPointID) != nil {
		return VDPPin{}, fault.Invalidf("%s.dataPointID: a source dataPointID is required", field)
	}
	var r vdpRange
	if err := vdpObject(field+".data_range", p.DataRange, &r); err != nil {
		return VDPPin{}, err
	}
	pin := VDPPin{DataPointID: p.DataPointID, Aggregate: p.Aggregate, Trigger: p.Trigger,
		DataRange: VDPRange{Time: r.Time, Start: r.Start, End: r.End}}
	if len(r.Count) > 0 && string(r.Count) != "null" {
		n, err := vdpCount(r.Count)
		if err != nil {
			return VDPPin{}, fault.Invalidf("%s.data_range.count: %v", field, err)
		}
		pin.DataRange.Count = &n
	}
	return pin, nil
}

// Parameters decodes the parameters: an object (absent or null: none)
// whose keys are all in known, the parameters the type takes, which only
// the caller knows. Numbers come as json.Number, so that the caller says
// what a number must be.
func (c VDPConfigJSON) Parameters(known []string) (map[string]any, error) {
	if known == nil {
		known = []string{} // nil would let every key pass
	}
	if _, err := vdpMembers("config.parameters", c.parameters, known); err != nil {
		return nil, err
	}
	var given map[string]any
	if len(c.parameters) > 0 {
		dec := json.NewDecoder(bytes.NewReader(c.parameters))
		dec.UseNumber()
		if err := dec.Decode(&given); err != nil {
			return nil, invalidJSON("config.parameters", err)
		}
	}
	return given, nil
}

// vdpMembers reads raw as a JSON object by key (absent or null: none),
// refusing keys outside known unless known is nil; of several, the first
// in sorted order, so that the answer does not vary.
func vdpMembers(field string, raw json.RawMessage, known []string) (map[string]json.RawMessage, error) {
	var m map[string]json.RawMessage
	if len(raw) > 0 {
		if err := json.Unmarshal(raw, &m); err != nil {
			return nil, invalidJSON(field, err)
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

// vdpObject decodes raw, a JSON object (absent or null: nothing), into
// the struct dst points to. A key that none of its json tags names
// exactly is refused first: encoding/json alone would match names in any
// case and pass unknown ones by. Then a value of the wrong JSON type is.
func vdpObject(field string, raw json.RawMessage, dst any) error {
	t := reflect.TypeOf(dst).Elem()
	known := make([]string, t.NumField())
	for i := range known {
		known[i], _, _ = strings.Cut(t.Field(i).Tag.Get("json"), ",")
	}
	if _, err := vdpMembers(field, raw, known); err != nil || len(raw) == 0 {
		return err
	}
	if err := json.Unmarshal(raw, dst); err != nil {
		return invalidJSON(field, err)
	}
	return nil
}

// invalidJSON is a JSON decoding error as a client's mistake, worded by
// JSONProblem.
func invalidJSON(field string, err error) error {
	return fault.Invalidf("%s", JSONProblem(field, err))
}

// vdpCount reads a count: an integer or a numeric string (api.md 2.11).
func vdpCount(raw json.RawMessage) (int, error) {
	s := string(raw)
	if uq, err := strconv.Unquote(s); err == nil {
		s = uq
	}
	n, err := strconv.Atoi(s)
	if err != nil || n < 1 || n > vdpMaxCount {
		return 0, fmt.Errorf("must be an integer from 1 to 100000 (or such a numeric string), got %s", fault.Clip(string(raw)))
	}
	return n, nil
}
