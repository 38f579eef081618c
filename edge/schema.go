package edge

import (
	"bytes"
	"embed"
	"encoding/json"
	"fmt"
	"math"
	"regexp"
	"slices"
	"strings"
	"time"

	"github.com/openbdp/bdp/fault"
)

// Schemas holds the JSON schema of every message (docs/edge-protocol.md):
// request.json, response.json, alive.json, data.json.
//
//go:embed schemas/*.json
var Schemas embed.FS

// Schema names, one per topic.
const (
	SchemaRequest  = "request"
	SchemaResponse = "response"
	SchemaAlive    = "alive"
	SchemaData     = "data"
)

// ValidateSchema checks payload against the named schema. The checker covers
// the subset of JSON Schema (2020-12) the schemas use: type, const, enum,
// properties, required, additionalProperties false, items, minItems,
// maxItems, minimum, maximum, minLength, maxLength, pattern, format
// date-time, oneOf, and $ref to #/$defs/NAME. A keyword outside it is an
// error, so a schema cannot silently check less than it says.
func ValidateSchema(name string, payload []byte) error {
	raw, err := Schemas.ReadFile("schemas/" + name + ".json")
	if err != nil {
		return fmt.Errorf("edge: no schema %q: %w", name, err)
	}
	var schema map[string]any
	if err := json.Unmarshal(raw, &schema); err != nil {
		return fmt.Errorf("edge: schema %q: %w", name, err)
	}
	dec := json.NewDecoder(bytes.NewReader(payload))
	dec.UseNumber()
	var doc any
	if err := dec.Decode(&doc); err != nil {
		return fmt.Errorf("edge: %s message is not JSON: %w", name, err)
	}
	c := checker{root: schema}
	return c.check(schema, doc, "$")
}

type checker struct{ root map[string]any }

var knownKeywords = map[string]bool{
	"$schema": true, "$id": true, "$defs": true, "title": true, "description": true, "examples": true,
	"type": true, "const": true, "enum": true, "properties": true, "required": true,
	"additionalProperties": true, "items": true, "minItems": true, "maxItems": true,
	"minimum": true, "maximum": true, "minLength": true, "maxLength": true, "pattern": true,
	"format": true, "oneOf": true, "$ref": true,
}

func (c checker) check(s map[string]any, v any, path string) error {
	for k := range s {
		if !knownKeywords[k] {
			return fmt.Errorf("edge: schema keyword %q at %s is not supported by the checker", k, path)
		}
	}
	if ref, ok := s["$ref"].(string); ok {
		name, found := strings.CutPrefix(ref, "#/$defs/")
		defs, _ := c.root["$defs"].(map[string]any)
		target, ok := defs[name].(map[string]any)
		if !found || !ok {
			return fmt.Errorf("edge: schema reference %q unresolved", ref)
		}
		if err := c.check(target, v, path); err != nil {
			return err
		}
	}
	if t, ok := s["type"]; ok {
		if err := checkType(t, v, path); err != nil {
			return err
		}
	}
	if want, ok := s["const"]; ok && !equalJSON(want, v) {
		return fmt.Errorf("%s: want %v", path, want)
	}
	if enum, ok := s["enum"].([]any); ok && !slices.ContainsFunc(enum, func(e any) bool { return equalJSON(e, v) }) {
		return fmt.Errorf("%s: %v not one of %v", path, v, enum)
	}
	switch x := v.(type) {
	case map[string]any:
		if err := c.checkObject(s, x, path); err != nil {
			return err
		}
	case []any:
		if err := c.checkArray(s, x, path); err != nil {
			return err
		}
	case string:
		if err := checkString(s, x, path); err != nil {
			return err
		}
	case json.Number:
		if err := checkNumber(s, x, path); err != nil {
			return err
		}
	}
	if alts, ok := s["oneOf"].([]any); ok {
		var matched int
		var errs []string
		for _, a := range alts {
			if err := c.check(a.(map[string]any), v, path); err != nil {
				errs = append(errs, err.Error())
			} else {
				matched++
			}
		}
		if matched != 1 {
			return fmt.Errorf("%s: matches %d of oneOf's alternatives, want 1 (%s)", path, matched, strings.Join(errs, "; "))
		}
	}
	return nil
}

func (c checker) checkObject(s map[string]any, obj map[string]any, path string) error {
	props, _ := s["properties"].(map[string]any)
	if req, ok := s["required"].([]any); ok {
		for _, r := range req {
			if _, ok := obj[r.(string)]; !ok {
				return fmt.Errorf("%s: %q missing", path, r)
			}
		}
	}
	for k, val := range obj {
		ps, ok := props[k].(map[string]any)
		if !ok {
			if ap, set := s["additionalProperties"].(bool); set && !ap {
				return fmt.Errorf("%s: unknown property %q", path, k)
			}
			continue
		}
		if err := c.check(ps, val, path+"."+k); err != nil {
			return err
		}
	}
	return nil
}

func (c checker) checkArray(s map[string]any, arr []any, path string) error {
	if n, ok := s["minItems"].(float64); ok && float64(len(arr)) < n {
		return fmt.Errorf("%s: %d items, want at least %v", path, len(arr), n)
	}
	if n, ok := s["maxItems"].(float64); ok && float64(len(arr)) > n {
		return fmt.Errorf("%s: %d items, want at most %v", path, len(arr), n)
	}
	if items, ok := s["items"].(map[string]any); ok {
		for i, e := range arr {
			if err := c.check(items, e, fmt.Sprintf("%s[%d]", path, i)); err != nil {
				return err
			}
		}
	}
	return nil
}

func checkString(s map[string]any, str string, path string) error {
	if n, ok := s["minLength"].(float64); ok && float64(len([]rune(str))) < n {
		return fmt.Errorf("%s: shorter than %v", path, n)
	}
	if n, ok := s["maxLength"].(float64); ok && float64(len([]rune(str))) > n {
		return fmt.Errorf("%s: longer than %v", path, n)
	}
	if p, ok := s["pattern"].(string); ok {
		re, err := regexp.Compile(p)
		if err != nil {
			return fmt.Errorf("edge: schema pattern %q: %w", p, err)
		}
		if !re.MatchString(str) {
			return fmt.Errorf("%s: %q does not match %s", path, fault.Clip(str), p)
		}
	}
	if f, ok := s["format"].(string); ok && f == "date-time" {
		if _, err := time.Parse(time.RFC3339Nano, str); err != nil {
			return fmt.Errorf("%s: %q is not an RFC 3339 date-time", path, fault.Clip(str))
		}
	}
	return nil
}

func checkNumber(s map[string]any, n json.Number, path string) error {
	f, err := n.Float64()
	if err != nil || math.IsInf(f, 0) {
		return fmt.Errorf("%s: %s is not a finite number", path, fault.Clip(n.String()))
	}
	if m, ok := s["minimum"].(float64); ok && f < m {
		return fmt.Errorf("%s: %v below %v", path, f, m)
	}
	if m, ok := s["maximum"].(float64); ok && f > m {
		return fmt.Errorf("%s: %v above %v", path, f, m)
	}
	return nil
}

func checkType(t any, v any, path string) error {
	var types []any
	switch x := t.(type) {
	case string:
		types = []any{x}
	case []any:
		types = x
	}
	for _, ty := range types {
		if hasType(ty.(string), v) {
			return nil
		}
	}
	return fmt.Errorf("%s: not of type %v", path, t)
}

func hasType(t string, v any) bool {
	switch x := v.(type) {
	case nil:
		return t == "null"
	case bool:
		return t == "boolean"
	case string:
		return t == "string"
	case []any:
		return t == "array"
	case map[string]any:
		return t == "object"
	case json.Number:
		if t == "number" {
			return true
		}
		if t == "integer" {
			_, err := x.Int64()
			return err == nil
		}
	}
	return false
}

// equalJSON compares a schema value (decoded without UseNumber) with a
// document value (decoded with it).
func equalJSON(schemaValue, v any) bool {
	if n, ok := v.(json.Number); ok {
		f, err := n.Float64()
		sf, isNum := schemaValue.(float64)
		return err == nil && isNum && f == sf
	}
	return fmt.Sprintf("%T %v", schemaValue, schemaValue) == fmt.Sprintf("%T %v", v, v)
}
