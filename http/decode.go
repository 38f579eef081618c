package http

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"reflect"
	"strings"

	"github.com/gofiber/fiber/v2"

	"github.com/openbdp/bdp/codec"
	"github.com/openbdp/bdp/fault"
)

// decode reads the JSON body into dst (a pointer to a request struct) and
// checks the fields tagged `required:"true"`: present, and for strings not
// blank, and the strings tagged `maxLength:"N"`: at most N characters. An
// empty body counts as {}. Every failure is a 400 that names the field or
// the offset. (wrap checked the body's text before: checkBodyText.)
func decode(c *fiber.Ctx, dst any) error {
	return decodeBytes(c.Body(), dst)
}

// decodeBytes is decode of a body at hand.
func decodeBytes(body []byte, dst any) error {
	body = bytes.TrimSpace(body)
	if len(body) == 0 {
		body = []byte("{}")
	}
	err := decodeJSON(body, dst)
	var typ *json.UnmarshalTypeError
	if errors.As(err, &typ) && strings.HasPrefix(typ.Value, "number") && codec.IsInteger(typ.Type) {
		// 3600.0 or 1e3 for an integer field: JSON carries the integer
		// exactly, so it is taken; 3600.5 is still refused.
		if plain, changed := integralNumbers(body); changed {
			body = plain
			reset(dst)
			err = decodeJSON(body, dst)
		}
	}
	if err != nil {
		return decodeError(err)
	}
	if err := refuseUnknown(body, dst); err != nil {
		return err
	}
	if err := checkRequired(dst); err != nil {
		return err
	}
	return checkLengths(reflect.ValueOf(dst), "")
}

// decodeJSON decodes one JSON value, and nothing after it, into dst.
func decodeJSON(body []byte, dst any) error {
	dec := json.NewDecoder(bytes.NewReader(body))
	if err := dec.Decode(dst); err != nil {
		return err
	}
	// More would miss a stray } or ]: only the end of the body may follow.
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		return fault.Invalidf("malformed JSON: unexpected data after the object")
	}
	return nil
}

// reset zeroes what dst points at before a second decoding.
func reset(dst any) {
	v := reflect.ValueOf(dst).Elem()
	v.Set(reflect.Zero(v.Type()))
}

func decodeError(err error) error {
	var done *fault.Error
	if errors.As(err, &done) {
		return err
	}
	return fault.Invalidf("%s", codec.JSONProblem("", err))
}

func checkRequired(dst any) error {
	v := reflect.ValueOf(dst).Elem()
	if v.Kind() != reflect.Struct {
		return nil
	}
	t := v.Type()
	for i := 0; i < t.NumField(); i++ {
		f := t.Field(i)
		if f.Tag.Get("required") != "true" {
			continue
		}
		name := jsonName(f)
		fv := v.Field(i)
		if fv.Kind() == reflect.Pointer {
			if fv.IsNil() {
				return fault.Invalidf("field %s is required", name)
			}
			fv = fv.Elem()
		}
		if fv.Kind() == reflect.String && strings.TrimSpace(fv.String()) == "" {
			return fault.Invalidf("field %s must not be empty", name)
		}
	}
	return nil
}

func jsonName(f reflect.StructField) string {
	name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
	if name == "" {
		return f.Name
	}
	return name
}

// text trims an optional string field. Its length limit is the field's
// maxLength tag (or the query parameter's MaxLength), which decode
// (checkParams) enforces on the untrimmed text, so the trimmed text is
// within it too.
func text(s *string) *string {
	if s == nil {
		return nil
	}
	t := strings.TrimSpace(*s)
	return &t
}

// name is text that, when given, must not be blank: a user's first or
// last name may change but not vanish (creation requires both).
func name(field string, s *string) (*string, error) {
	t := text(s)
	if t != nil && *t == "" {
		return nil, fault.Invalidf("field %s: must not be empty", field)
	}
	return t, nil
}

// str dereferences an optional string.
func str(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}
