package http

import (
	"bytes"
	"fmt"
	"reflect"
	"strconv"
	"unicode"
	"unicode/utf8"

	"github.com/gofiber/fiber/v2"

	"github.com/openbdp/bdp/fault"
)

// Every string a request carries is checked here, once, before a handler
// sees it, so that no text PostgreSQL refuses (a NUL is SQLSTATE 22021)
// and no invisible control character reaches the store:
//
//   - query parameters, form fields and JSON strings (keys too) may hold
//     no control character (Unicode category Cc: C0, DEL and C1) but tab,
//     line feed and carriage return, which free text such as a
//     description may need;
//   - the path holds none at all: its segments are ids and dataPointIDs;
//   - query parameters, form fields and the path must be valid UTF-8
//     (encoding/json already turns invalid UTF-8 in JSON into U+FFFD).
//
// dataPointIDs refuse every control character, tab included, wherever
// they come from (codec.ValidateDataPointID).

// textControl reports whether r may not appear in free text.
func textControl(r rune) bool {
	return unicode.IsControl(r) && r != '\t' && r != '\n' && r != '\r'
}

// checkParams checks the decoded path, every query parameter and the
// lengths of the declared ones.
func checkParams(c *fiber.Ctx, declared []param) error {
	if err := checkText("the path", c.Context().URI().Path(), unicode.IsControl); err != nil {
		return err
	}
	for _, p := range declared {
		if p.MaxLength > 0 && utf8.RuneCountInString(c.Query(p.Name)) > p.MaxLength {
			return fault.Invalidf("query parameter %s: at most %d characters", p.Name, p.MaxLength)
		}
	}
	for k, v := range c.Context().QueryArgs().All() {
		if err := checkText("query parameter "+strconv.Quote(fault.Clip(string(k))), v, textControl); err != nil {
			return err
		}
		if err := checkText("a query parameter name", k, textControl); err != nil {
			return err
		}
	}
	return nil
}

// checkText refuses invalid UTF-8 and the runes bad reports.
func checkText(what string, b []byte, bad func(rune) bool) error {
	for i := 0; i < len(b); {
		r, n := utf8.DecodeRune(b[i:])
		if r == utf8.RuneError && n == 1 {
			return fault.Invalidf("%s is not valid UTF-8 (byte %d)", what, i)
		}
		if bad(r) {
			return controlError(what, r)
		}
		i += n
	}
	return nil
}

func controlError(what string, r rune) error {
	return fault.Invalidf("%s holds the control character %U; only tab, line feed and carriage return are allowed in text", what, r)
}

// checkBodyText checks a body read whole: the fields of a form, or else
// the strings of a JSON document.
func checkBodyText(c *fiber.Ctx) error {
	body := c.Body()
	if len(body) == 0 {
		return nil
	}
	if bytes.HasPrefix(c.Request().Header.ContentType(), []byte(fiber.MIMEApplicationForm)) {
		for k, v := range c.Request().PostArgs().All() {
			if err := checkText("form field "+strconv.Quote(fault.Clip(string(k))), v, textControl); err != nil {
				return err
			}
		}
		return nil
	}
	return checkJSONText(body)
}

// checkJSONText scans the strings of a JSON document, escapes included,
// for control characters. It does not validate the JSON: the decoder
// does; bytes outside strings are left to it.
func checkJSONText(b []byte) error {
	inString := false
	for i := 0; i < len(b); i++ {
		ch := b[i]
		if !inString {
			inString = ch == '"'
			continue
		}
		switch {
		case ch == '"':
			inString = false
		case ch == '\\' && i+1 < len(b):
			i++
			if b[i] != 'u' || i+4 >= len(b) {
				continue
			}
			u, err := strconv.ParseUint(string(b[i+1:i+5]), 16, 16)
			if err == nil && textControl(rune(u)) {
				return controlError(fmt.Sprintf("a JSON string of the body (offset %d)", i-1), rune(u))
			}
			i += 4
		case ch < utf8.RuneSelf:
			if textControl(rune(ch)) {
				return controlError(fmt.Sprintf("a JSON string of the body (offset %d)", i), rune(ch))
			}
		case ch == 0xC2 && i+1 < len(b) && b[i+1] >= 0x80 && b[i+1] <= 0x9F: // U+0080..U+009F
			return controlError(fmt.Sprintf("a JSON string of the body (offset %d)", i), rune(b[i+1]))
		}
	}
	return nil
}

// checkLengths enforces the maxLength tags (in characters) of the string
// fields of v, a decoded request, through nested structs, pointers and
// slices; the OpenAPI document shows the same tags as maxLength.
func checkLengths(v reflect.Value, path string) error {
	switch v.Kind() {
	case reflect.Pointer, reflect.Interface:
		if v.IsNil() {
			return nil
		}
		return checkLengths(v.Elem(), path)
	case reflect.Slice, reflect.Array:
		if v.Type().Elem().Kind() == reflect.Uint8 {
			return nil // raw JSON, refused or checked by its handler
		}
		for i := range v.Len() {
			if err := checkLengths(v.Index(i), fmt.Sprintf("%s[%d]", path, i)); err != nil {
				return err
			}
		}
	case reflect.Struct:
		t := v.Type()
		for i := range t.NumField() {
			f := t.Field(i)
			if !f.IsExported() {
				continue
			}
			name := jsonName(f)
			if path != "" {
				name = path + "." + name
			}
			fv := v.Field(i)
			if limit := f.Tag.Get("maxLength"); limit != "" {
				if err := checkLength(fv, name, limit); err != nil {
					return err
				}
				continue
			}
			if err := checkLengths(fv, name); err != nil {
				return err
			}
		}
	}
	return nil
}

func checkLength(v reflect.Value, field, limit string) error {
	for v.Kind() == reflect.Pointer {
		if v.IsNil() {
			return nil
		}
		v = v.Elem()
	}
	n, err := strconv.Atoi(limit)
	if err != nil || v.Kind() != reflect.String {
		return fmt.Errorf("maxLength tag of %s: not a string field with a number (%q)", field, limit)
	}
	if utf8.RuneCountInString(v.String()) > n {
		return fault.Invalidf("field %s: at most %d characters", field, n)
	}
	return nil
}
