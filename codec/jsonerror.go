package codec

import (
	"encoding/json"
	"errors"
	"io"
	"reflect"
	"strconv"
	"strings"

	"github.com/openbdp/bdp/fault"
)

// JSONProblem words a JSON decoding error for a client the one way bdp
// words it wherever it decodes JSON (HTTP bodies, virtual datapoint
// configurations, Kafka and MQTT payloads): where it went wrong, and the
// JSON types wanted and given, never Go's types and no more of the input
// than a field name and a number. field names the value decoded, "" for
// the whole; a field within it is added with a dot.
//
//	validity: want an integer, got the number 3600.5
//	config.pins: want an object, got an array
//	malformed JSON at offset 12
func JSONProblem(field string, err error) string {
	var te *json.UnmarshalTypeError
	var se *json.SyntaxError
	at := func(msg string) string {
		if field == "" {
			return msg
		}
		return field + ": " + msg
	}
	switch {
	case errors.As(err, &te):
		if te.Field != "" {
			if field != "" {
				field += "."
			}
			field += te.Field
		}
		return at("want " + jsonType(te.Type) + ", got " + jsonValue(te.Value))
	case errors.As(err, &se):
		return at("malformed JSON at offset " + strconv.FormatInt(se.Offset, 10))
	case errors.Is(err, io.ErrUnexpectedEOF):
		return at("malformed JSON: unexpected end")
	}
	// An error of a decoder of ours (a value's UnmarshalJSON) says what
	// is wrong in its own words.
	return at("malformed JSON: " + fault.ClipTo(err.Error(), 2*fault.MaxQuoted))
}

// jsonType names the JSON type a Go type decodes from.
func jsonType(t reflect.Type) string {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	if IsInteger(t) {
		return "an integer"
	}
	switch t.Kind() {
	case reflect.Float32, reflect.Float64:
		return "a number"
	case reflect.String:
		return "a string"
	case reflect.Bool:
		return "a boolean"
	case reflect.Slice, reflect.Array:
		return "an array"
	}
	return "an object"
}

// jsonValue names what UnmarshalTypeError.Value describes ("array",
// "bool", "number 1e999", ...), with a number's digits, clipped.
func jsonValue(v string) string {
	kind, literal, _ := strings.Cut(v, " ")
	switch kind {
	case "array", "object":
		return "an " + kind
	case "bool":
		return "a boolean"
	case "number":
		if literal != "" {
			return "the number " + fault.Clip(literal)
		}
	}
	return "a " + kind
}

// IsInteger reports whether t (or what it points to) is an integer type,
// which JSON carries as a number without a fraction.
func IsInteger(t reflect.Type) bool {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	switch t.Kind() {
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		return true
	}
	return false
}
