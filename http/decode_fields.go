package http

import (
	"bytes"
	"encoding/json"
	"maps"
	"math/big"
	"reflect"
	"slices"
	"strconv"
	"strings"

	"github.com/gofiber/fiber/v2"

	"github.com/openbdp/bdp/codec"
	"github.com/openbdp/bdp/fault"
)

// Every JSON body is held to the fields its request type declares: a
// field nobody reads is refused with 400 naming it, never ignored, so
// that a typo ({"right": "write"}) cannot pass for a request that was
// obeyed. The fields aedifion's document defines for an operation are
// declared by its request type (used, or taken and documented as
// ignored) or refused by name on its route (RefusedBody, checked before).

// unknownField returns the dotted path of the first member of body (in
// key order, at the shallowest level) that dst's type does not declare,
// and the names that level takes; "" when every member is declared.
// encoding/json's DisallowUnknownFields would name the key without its
// path and take any case of a name; this matches names exactly, as they
// are documented.
func unknownField(body []byte, dst any) (path, takes string) {
	var v any
	if json.Unmarshal(body, &v) != nil {
		return "", "" // decode reported it
	}
	return unknownIn(reflect.TypeOf(dst), v, "")
}

var (
	rawMessageType  = reflect.TypeFor[json.RawMessage]()
	unmarshalerType = reflect.TypeFor[json.Unmarshaler]()
)

func unknownIn(t reflect.Type, v any, at string) (string, string) {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	if t == rawMessageType || reflect.PointerTo(t).Implements(unmarshalerType) {
		return "", "" // read by its own rules
	}
	switch t.Kind() {
	case reflect.Slice, reflect.Array:
		items, _ := v.([]any)
		for i, item := range items {
			if p, takes := unknownIn(t.Elem(), item, at+"["+strconv.Itoa(i)+"]"); p != "" {
				return p, takes
			}
		}
	case reflect.Map:
		members, _ := v.(map[string]any)
		for _, k := range slices.Sorted(maps.Keys(members)) {
			if p, takes := unknownIn(t.Elem(), members[k], joinPath(at, k)); p != "" {
				return p, takes
			}
		}
	case reflect.Struct:
		members, _ := v.(map[string]any)
		fields := jsonFields(t)
		keys := slices.Sorted(maps.Keys(members))
		for _, k := range keys {
			if _, ok := fields[k]; !ok {
				return joinPath(at, k), strings.Join(slices.Sorted(maps.Keys(fields)), ", ")
			}
		}
		for _, k := range keys {
			if p, takes := unknownIn(fields[k], members[k], joinPath(at, k)); p != "" {
				return p, takes
			}
		}
	}
	return "", ""
}

// jsonFields maps the JSON names of a struct's fields to their types,
// embedded structs' fields included, as encoding/json sees them.
func jsonFields(t reflect.Type) map[string]reflect.Type {
	out := map[string]reflect.Type{}
	for i := range t.NumField() {
		f := t.Field(i)
		tag := f.Tag.Get("json")
		if tag == "-" || (!f.IsExported() && !f.Anonymous) {
			continue
		}
		if f.Anonymous && tag == "" {
			ft := f.Type
			if ft.Kind() == reflect.Pointer {
				ft = ft.Elem()
			}
			if ft.Kind() == reflect.Struct {
				for k, v := range jsonFields(ft) {
					out[k] = v
				}
				continue
			}
		}
		out[jsonName(f)] = f.Type
	}
	return out
}

func joinPath(at, key string) string {
	if at == "" {
		return key
	}
	return at + "." + key
}

// integralNumbers rewrites every number of body written with a fraction
// or an exponent whose value is an integer exactly (3600.0, 1e3, as
// Python's and JavaScript's encoders write some integers) to its plain
// integer form, so that an integer field takes it; other numbers stay as
// they are. It reports whether it changed anything. decode calls it only
// after an integer field refused such a number.
func integralNumbers(body []byte) ([]byte, bool) {
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.UseNumber()
	var out []byte
	last := 0
	for {
		tok, err := dec.Token()
		if err != nil {
			break
		}
		n, isNumber := tok.(json.Number)
		if !isNumber {
			continue
		}
		end := int(dec.InputOffset())
		start := end - len(n)
		if start < last || string(body[start:end]) != string(n) {
			continue
		}
		if plain, ok := exactInteger(string(n)); ok {
			out = append(append(out, body[last:start]...), plain...)
			last = end
		}
	}
	if out == nil {
		return body, false
	}
	return append(out, body[last:]...), true
}

// exactInteger gives the plain form of a number literal with a fraction
// or exponent whose value is an integer within 64 bits.
func exactInteger(lit string) (string, bool) {
	if !strings.ContainsAny(lit, ".eE") {
		return "", false
	}
	// Bound the exponent before big.Rat expands it: beyond 64 bits no
	// integer field takes the value anyway.
	if f, err := strconv.ParseFloat(lit, 64); err != nil || f > 1<<64 || f < -(1<<63) {
		return "", false
	}
	if _, exp, found := strings.Cut(strings.ToLower(lit), "e"); found {
		if e, err := strconv.Atoi(exp); err != nil || e > 40 || e < -40 {
			return "", false
		}
	}
	r, ok := new(big.Rat).SetString(lit)
	if !ok || !r.IsInt() || r.Num().BitLen() > 64 {
		return "", false
	}
	return r.Num().String(), true
}

// refuseUnknown is decode's check of the fields: 400 naming the first
// undeclared one.
func refuseUnknown(body []byte, dst any) error {
	path, takes := unknownField(body, dst)
	if path == "" {
		return nil
	}
	if takes == "" {
		takes = "no fields"
	}
	return fault.Invalidf("unknown field %q: the object takes %s; nothing was changed", fault.Clip(path), takes)
}

// decodeWithQuery is decode for the routes that take some body fields as
// query parameters too, as aedifion's document has them: each of names
// present in the query becomes the body member of that name, typed as
// dst's field (an integer field's parameter must be an integer, any
// other is taken as a JSON string). A field given in both places must
// have one value, else 400: neither silently wins.
func decodeWithQuery(c *fiber.Ctx, dst any, names ...string) error {
	body := bytes.TrimSpace(c.Body())
	members := map[string]json.RawMessage{}
	if len(body) > 0 && json.Unmarshal(body, &members) != nil {
		return decodeBytes(body, dst) // not an object: decode names the fault
	}
	if members == nil { // the body was null
		members = map[string]json.RawMessage{}
	}
	fields := jsonFields(reflect.TypeOf(dst).Elem())
	args := c.Context().QueryArgs()
	for _, name := range names {
		if !args.Has(name) {
			continue
		}
		raw := string(args.Peek(name))
		var v json.RawMessage
		if t, ok := fields[name]; ok && codec.IsInteger(t) {
			if _, err := strconv.ParseInt(raw, 10, 64); err != nil {
				return fault.Invalidf("query parameter %s must be an integer, got %q", name, fault.Clip(raw))
			}
			v = json.RawMessage(raw)
		} else {
			v, _ = json.Marshal(raw) // a string always encodes
		}
		if prev, inBody := members[name]; inBody && !sameJSON(prev, v) {
			return fault.Invalidf("%s is given in the query and in the body with different values; give it once", name)
		}
		members[name] = v
	}
	merged, err := json.Marshal(members)
	if err != nil {
		return fault.Invalidf("malformed JSON: %s", err.Error())
	}
	return decodeBytes(merged, dst)
}

// sameJSON reports whether two JSON texts hold the same value.
func sameJSON(a, b []byte) bool {
	var x, y any
	return json.Unmarshal(a, &x) == nil && json.Unmarshal(b, &y) == nil && reflect.DeepEqual(x, y)
}

// queryParams documents the body fields of body (a request type) that a
// route takes as query parameters too (decodeWithQuery).
func queryParams(body any, names ...string) []param {
	fields := jsonFields(reflect.TypeOf(body))
	out := make([]param, len(names))
	for i, name := range names {
		typ := "string"
		if codec.IsInteger(fields[name]) {
			typ = "integer"
		}
		out[i] = param{Name: name, Type: typ, Doc: "aedifion's form of the body field " + name + " (either place; both must agree)"}
	}
	return out
}
