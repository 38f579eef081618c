package codec

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/openbdp/bdp/fault"
)

// The edge protocol's decoders are plain typed decoding, member by member:
// an object is read as its members, each is looked up by its exact name
// and decoded alone into its field, and what no field asked for is an
// unknown field. encoding/json's struct decoding would do in one call but
// matches names regardless of case (it would read "Priority" as priority)
// and cannot tell a member that is absent or null from a zero value, both
// of which the protocol tells apart. The message's Validate then checks
// the values. What these decoders accept, the schemas in edge/schemas
// accept (FuzzDecodersAgreeWithSchemas in package edge).

// edgeUnknown is what a decoder does with a field the protocol does not
// know.
type edgeUnknown bool

const (
	// refuseUnknown: requests, where a misspelt "priority" must not
	// silently write at a default, and data, as the platform's other
	// ingestion paths refuse unknown fields.
	refuseUnknown edgeUnknown = false
	// ignoreUnknown: the device's answers and heartbeats, where a newer
	// device's extra field must not make the platform drop a write that
	// happened, or count a live device offline.
	ignoreUnknown edgeUnknown = true
)

// edgeMessage checks what every message is: at most EdgeMaxMessageBytes
// of exactly one JSON value.
func edgeMessage(payload []byte) (json.RawMessage, error) {
	if len(payload) > EdgeMaxMessageBytes {
		return nil, badEdge("message of %d bytes exceeds %d", len(payload), EdgeMaxMessageBytes)
	}
	if len(bytes.TrimSpace(payload)) == 0 {
		return nil, badEdge("empty message")
	}
	dec := json.NewDecoder(bytes.NewReader(payload))
	var raw json.RawMessage
	if err := dec.Decode(&raw); err != nil {
		return nil, badEdge("%s", JSONProblem("", err))
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		return nil, badEdge("trailing data after the JSON value")
	}
	return raw, nil
}

// edgeObject is one JSON object of a message being decoded: its members,
// the names the decoder looked up, and the first error met.
type edgeObject struct {
	at      string // where it is: "" for the message, "app", "events[2]"
	members map[string]json.RawMessage
	names   []string
	err     error
}

func edgeObjectOf(raw json.RawMessage, at string) (*edgeObject, error) {
	if string(raw) == "null" {
		if at == "" {
			return nil, badEdge("the message is null")
		}
		return nil, badEdge("%s is null", at)
	}
	var members map[string]json.RawMessage
	if err := json.Unmarshal(raw, &members); err != nil {
		return nil, badEdge("%s", JSONProblem(at, err))
	}
	return &edgeObject{at: at, members: members}, nil
}

func (o *edgeObject) path(name string) string {
	if o.at == "" {
		return name
	}
	return o.at + "." + name
}

// take decodes the member name, when there, into dst. null is refused
// but where the protocol gives it a meaning (no value, relinquish): the
// fields of type *float64, where it decodes to nil.
func (o *edgeObject) take(name string, dst any) {
	o.names = append(o.names, name)
	raw, ok := o.members[name]
	if !ok || o.err != nil {
		return
	}
	if _, nullable := dst.(**float64); !nullable && string(raw) == "null" {
		o.err = badEdge("%s is null", o.path(name))
		return
	}
	if t, isTime := dst.(*time.Time); isTime {
		var s string
		if json.Unmarshal(raw, &s) == nil && isRFC3339(s) {
			if parsed, err := time.Parse(time.RFC3339Nano, s); err == nil {
				*t = parsed
				return
			}
		}
		o.err = badEdge("%s: want an RFC 3339 date-time", o.path(name))
		return
	}
	if err := json.Unmarshal(raw, dst); err != nil {
		o.err = badEdge("%s", JSONProblem(o.path(name), err))
	}
}

// isRFC3339 tells whether s has the shape of an RFC 3339 date-time
// (section 5.6), as the schemas' format date-time checks it: time.Parse,
// and so encoding/json, also takes a one-digit hour, a comma before the
// fraction and an offset out of range. T and Z are uppercase, the only
// case time.Parse takes.
func isRFC3339(s string) bool {
	const shape = "dddd-dd-ddTdd:dd:dd"
	if len(s) <= len(shape) {
		return false
	}
	for i := range len(shape) {
		if c := s[i]; shape[i] == 'd' && (c < '0' || c > '9') || shape[i] != 'd' && c != shape[i] {
			return false
		}
	}
	rest := s[len(shape):]
	if frac, ok := strings.CutPrefix(rest, "."); ok {
		n := 0
		for n < len(frac) && frac[n] >= '0' && frac[n] <= '9' {
			n++
		}
		if n == 0 {
			return false
		}
		rest = frac[n:]
	}
	if rest == "Z" {
		return true
	}
	if len(rest) != 6 || rest[0] != '+' && rest[0] != '-' || rest[3] != ':' {
		return false
	}
	h, okH := digits([]byte(rest[1:3]))
	m, okM := digits([]byte(rest[4:]))
	return okH && okM && h < 24 && m < 60
}

// done returns the first error met or, failing that, refuses the members
// no take asked for: all of them with refuseUnknown, and with
// ignoreUnknown those spelt as a known name in another case, which the
// protocol refuses so that a device meaning that field learns it is not
// read.
func (o *edgeObject) done(unknown edgeUnknown) error {
	if o.err != nil {
		return o.err
	}
	var left []string
	for k := range o.members {
		if !slices.Contains(o.names, k) {
			left = append(left, k)
		}
	}
	slices.Sort(left)
	for _, k := range left {
		if slices.ContainsFunc(o.names, func(n string) bool { return strings.EqualFold(n, k) }) {
			return badEdge("unknown field %q (names are case-sensitive)", fault.Clip(o.path(k)))
		}
		if unknown == refuseUnknown {
			return badEdge("unknown field %q", fault.Clip(o.path(k)))
		}
	}
	return nil
}

// decodeEdgeObject decodes one object, whose members take asks for.
func decodeEdgeObject[T any](raw json.RawMessage, at string, unknown edgeUnknown, take func(*edgeObject, *T)) (T, error) {
	var v T
	o, err := edgeObjectOf(raw, at)
	if err != nil {
		return v, err
	}
	take(o, &v)
	return v, o.done(unknown)
}

// decodeEdgeObjects decodes an array of objects; nil stays nil.
func decodeEdgeObjects[T any](raws []json.RawMessage, at string, unknown edgeUnknown, take func(*edgeObject, *T)) ([]T, error) {
	if raws == nil {
		return nil, nil
	}
	out := make([]T, len(raws))
	for i, raw := range raws {
		var err error
		if out[i], err = decodeEdgeObject(raw, fmt.Sprintf("%s[%d]", at, i), unknown, take); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// DecodeEdgeRequest decodes and checks a request (the device side).
func DecodeEdgeRequest(payload []byte) (EdgeRequest, error) {
	raw, err := edgeMessage(payload)
	if err != nil {
		return EdgeRequest{}, err
	}
	o, err := edgeObjectOf(raw, "")
	if err != nil {
		return EdgeRequest{}, err
	}
	var r EdgeRequest
	var app json.RawMessage
	o.take("reference", &r.Reference)
	o.take("operation", &r.Operation)
	o.take("dataPointID", &r.DataPointID)
	o.take("value", &r.Value)
	o.take("priority", &r.Priority)
	o.take("keep_out_of_service", &r.KeepOutOfService)
	o.take("app", &app)
	if err := o.done(refuseUnknown); err != nil {
		return EdgeRequest{}, err
	}
	// Validate tells a field set in Go; a decoder also sees a field given
	// its zero value, and a write's value given as null.
	if allowed := edgeOperationFields(r.Operation); allowed != nil {
		for _, k := range slices.Sorted(maps.Keys(o.members)) {
			if !slices.Contains(allowed, k) {
				return EdgeRequest{}, badEdge("%s does not take %s", r.Operation, k)
			}
		}
		if _, ok := o.members["value"]; r.Operation == EdgeOpWrite && !ok {
			return EdgeRequest{}, badEdge("write without value (null clears the slot)")
		}
	}
	if app != nil {
		a, err := decodeEdgeApp(app)
		if err != nil {
			return EdgeRequest{}, err
		}
		r.App = &a
	}
	return r, r.Validate()
}

func decodeEdgeApp(raw json.RawMessage) (EdgeApp, error) {
	var writes []json.RawMessage
	a, err := decodeEdgeObject(raw, "app", refuseUnknown, func(o *edgeObject, a *EdgeApp) {
		o.take("id", &a.ID)
		o.take("algorithm", &a.Algorithm)
		o.take("writes", &writes)
		o.take("alive_timeout", &a.AliveTimeout)
		o.take("config", &a.Config) // free-form: not looked into
	})
	if err != nil {
		return EdgeApp{}, err
	}
	a.Writes, err = decodeEdgeObjects(writes, "app.writes", refuseUnknown, func(o *edgeObject, w *EdgeAppWrite) {
		o.take("dataPointID", &w.DataPointID)
		o.take("priority", &w.Priority)
		o.take("reset_value", &w.ResetValue)
	})
	return a, err
}

// DecodeEdgeResponse decodes and checks a device's response (the platform
// side).
func DecodeEdgeResponse(payload []byte) (EdgeResponse, error) {
	raw, err := edgeMessage(payload)
	if err != nil {
		return EdgeResponse{}, err
	}
	r, err := decodeEdgeObject(raw, "", ignoreUnknown, func(o *edgeObject, r *EdgeResponse) {
		o.take("reference", &r.Reference)
		o.take("status", &r.Status)
		o.take("error", &r.Error)
		o.take("priority_array", &r.PriorityArray)
		o.take("present_value", &r.PresentValue)
		o.take("overwritten_value", &r.OverwrittenValue)
	})
	if err != nil {
		return EdgeResponse{}, err
	}
	return r, r.Validate()
}

// EdgeMayHoldEvents tells, without decoding, whether a heartbeat can carry
// events: their key is spelt exactly so (the decoder refuses other
// casings) unless written with escapes. The event log, which only acts on
// events, skips the decode of every other heartbeat.
func EdgeMayHoldEvents(payload []byte) bool {
	return bytes.Contains(payload, []byte(`"events"`)) || bytes.IndexByte(payload, '\\') >= 0
}

// DecodeEdgeAlive decodes and checks a heartbeat (the platform side).
func DecodeEdgeAlive(payload []byte) (EdgeAlive, error) {
	raw, err := edgeMessage(payload)
	if err != nil {
		return EdgeAlive{}, err
	}
	var apps, events []json.RawMessage
	a, err := decodeEdgeObject(raw, "", ignoreUnknown, func(o *edgeObject, a *EdgeAlive) {
		o.take("time", &a.Time)
		o.take("apps", &apps)
		o.take("events", &events)
	})
	if err == nil {
		a.Apps, err = decodeEdgeObjects(apps, "apps", ignoreUnknown, func(o *edgeObject, s *EdgeAppState) {
			o.take("id", &s.ID)
			o.take("running", &s.Running)
		})
	}
	if err == nil {
		a.Events, err = decodeEdgeObjects(events, "events", ignoreUnknown, func(o *edgeObject, e *EdgeEvent) {
			o.take("time", &e.Time)
			o.take("kind", &e.Kind)
			o.take("app_id", &e.AppID)
			o.take("message", &e.Message)
		})
	}
	if err != nil {
		return EdgeAlive{}, err
	}
	return a, a.Validate()
}

// DecodeEdgeData decodes a data message: one observation or an array of
// them.
func DecodeEdgeData(payload []byte) ([]EdgeObservation, error) {
	raw, err := edgeMessage(payload)
	if err != nil {
		return nil, err
	}
	array := raw[0] == '['
	raws := []json.RawMessage{raw}
	if array {
		if err := json.Unmarshal(raw, &raws); err != nil {
			return nil, badEdge("%s", JSONProblem("", err))
		}
		if len(raws) == 0 {
			return nil, badEdge("empty observation array")
		}
		if len(raws) > EdgeMaxObservations {
			return nil, badEdge("%d observations, more than %d", len(raws), EdgeMaxObservations)
		}
	}
	obs := make([]EdgeObservation, len(raws))
	for i, raw := range raws {
		at := ""
		if array {
			at = fmt.Sprintf("[%d]", i)
		}
		o, err := edgeObjectOf(raw, at)
		if err != nil {
			return nil, err
		}
		// A missing value would decode as 0, a plausible but false reading.
		if v, ok := o.members["value"]; !ok || string(v) == "null" {
			return nil, badEdge("observation %d without a numeric value", i)
		}
		o.take("dataPointID", &obs[i].DataPointID)
		o.take("time", &obs[i].Time)
		o.take("value", &obs[i].Value)
		if err := o.done(refuseUnknown); err != nil {
			return nil, err
		}
		if err := obs[i].Validate(); err != nil {
			return nil, fmt.Errorf("observation %d: %w", i, err)
		}
	}
	return obs, nil
}
