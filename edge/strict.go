package edge

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"slices"
	"strings"

	"github.com/openbdp/bdp/fault"
)

// The rules here make the decoders as strict as the schemas in
// edge/schemas (FuzzDecodersAgreeWithSchemas): what a decoder accepts, its
// schema accepts.

// unknownFields is what a decoder does with a field the protocol does not
// know.
type unknownFields bool

const (
	// refuseUnknown: requests, where a misspelt "priority" must not
	// silently write at a default, and data, as the platform's other
	// ingestion paths refuse unknown fields.
	refuseUnknown unknownFields = false
	// ignoreUnknown: the device's answers and heartbeats, where a newer
	// device's extra field must not make the platform drop a write that
	// happened, or count a live device offline.
	ignoreUnknown unknownFields = true
)

// decodeStrict decodes exactly one JSON value into v, refusing oversized
// input, unknown fields unless unknown says to ignore them, a known
// field's name in another case, and trailing data.
func decodeStrict(payload []byte, v any, unknown unknownFields) error {
	if len(payload) > MaxMessageBytes {
		return bad("message of %d bytes exceeds %d", len(payload), MaxMessageBytes)
	}
	if len(bytes.TrimSpace(payload)) == 0 {
		return bad("empty message")
	}
	dec := json.NewDecoder(bytes.NewReader(payload))
	if unknown == refuseUnknown {
		dec.DisallowUnknownFields()
	}
	if err := dec.Decode(v); err != nil {
		return bad("%s", fault.Clip(err.Error()))
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		return bad("trailing data after the JSON value")
	}
	g, err := generic(payload)
	if err != nil {
		return err
	}
	if err := checkNulls(g, "", unknown); err != nil {
		return err
	}
	if r, ok := v.(*Request); ok {
		fields, _ := g.(map[string]any)
		return checkRequestFields(r.Operation, fields)
	}
	return nil
}

// nullable are the fields where null has a meaning (no value, relinquish).
var nullable = map[string]bool{"value": true, "reset_value": true, "present_value": true, "overwritten_value": true}

// fieldNames are the protocol's field names, exactly: encoding/json
// matches names regardless of case, the schemas do not.
var fieldNames = map[string]bool{"reference": true, "operation": true, "dataPointID": true, "value": true, "priority": true,
	"keep_out_of_service": true, "app": true, "id": true, "algorithm": true, "writes": true, "alive_timeout": true, "config": true,
	"reset_value": true, "status": true, "error": true, "priority_array": true, "present_value": true, "overwritten_value": true,
	"time": true, "apps": true, "events": true, "running": true, "kind": true, "app_id": true, "message": true}

// checkNulls refuses null anywhere the protocol gives it no meaning (a
// decoder would read it as a zero value) and a field name in another case
// (encoding/json would read "Status" as status). Other unknown fields are
// refused, or skipped unread with ignoreUnknown. The free-form app config
// is not looked into.
func checkNulls(v any, path string, unknown unknownFields) error {
	switch x := v.(type) {
	case map[string]any:
		for _, k := range slices.Sorted(maps.Keys(x)) {
			if !fieldNames[k] {
				if unknown == ignoreUnknown && !knownInAnotherCase(k) {
					continue
				}
				return bad("unknown field %q at %s (names are case-sensitive)", fault.Clip(k), path)
			}
			val := x[k]
			if val == nil {
				if !nullable[k] {
					return bad("%s%s is null", path, k)
				}
				continue
			}
			if k == "config" {
				continue
			}
			if err := checkNulls(val, path+k+".", unknown); err != nil {
				return err
			}
		}
	case []any:
		for i, e := range x {
			if e == nil {
				if path != "priority_array." {
					return bad("%s[%d] is null", path, i)
				}
				continue
			}
			if err := checkNulls(e, fmt.Sprintf("%s[%d].", path, i), unknown); err != nil {
				return err
			}
		}
	}
	return nil
}

// knownInAnotherCase tells whether name is a protocol field spelt in
// another case, which encoding/json would take for the field.
func knownInAnotherCase(name string) bool {
	for f := range fieldNames {
		if strings.EqualFold(f, name) {
			return true
		}
	}
	return false
}

// generic decodes payload (already decoded strictly once) as plain JSON.
func generic(payload []byte) (any, error) {
	var v any
	dec := json.NewDecoder(bytes.NewReader(payload))
	dec.UseNumber()
	if err := dec.Decode(&v); err != nil {
		return nil, bad("%s", fault.Clip(err.Error()))
	}
	return v, nil
}

// requestFields are the fields each operation may carry ("value" only null
// outside write).
var requestFields = map[string][]string{
	OpWrite:     {"reference", "operation", "dataPointID", "value", "priority", "keep_out_of_service"},
	OpRead:      {"reference", "operation", "dataPointID", "value"},
	OpAppStart:  {"reference", "operation", "value", "app"},
	OpAppConfig: {"reference", "operation", "value", "app"},
	OpAppStop:   {"reference", "operation", "value", "app"},
	OpPing:      {"reference", "operation", "value"},
}

// checkRequestFields refuses a field the operation does not take (a
// priority on a read is a mistake worth telling) and a write without value.
func checkRequestFields(op string, fields map[string]any) error {
	allowed, ok := requestFields[op]
	if !ok {
		return nil // Validate names the unknown operation
	}
	for _, k := range slices.Sorted(maps.Keys(fields)) {
		if !slices.Contains(allowed, k) {
			return bad("%s does not take %s", op, k)
		}
	}
	if _, ok := fields["value"]; op == OpWrite && !ok {
		return bad("write without value (null clears the slot)")
	}
	return nil
}

// checkFieldsOfOperation is checkRequestFields for a Request built in Go.
func (r Request) checkFieldsOfOperation() error {
	set := map[string]bool{"value": r.Value != nil, "priority": r.Priority != 0, "keep_out_of_service": r.KeepOutOfService,
		"dataPointID": r.DataPointID != "", "app": r.App != nil}
	allowed := requestFields[r.Operation]
	for _, k := range slices.Sorted(maps.Keys(set)) {
		if set[k] && (!slices.Contains(allowed, k) || k == "value" && r.Operation != OpWrite) {
			return bad("%s does not take %s", r.Operation, k)
		}
	}
	return nil
}
