package codec

import (
	"bytes"
	"errors"
	"fmt"
	"math"
	"strconv"
	"unicode/utf8"
	"unsafe"
)

// The fields of a CSV line: cutting a line by the dialect, and checking
// the identifier and the value.

func fieldCount(n int) string {
	switch {
	case n > 3:
		return fmt.Sprintf("extra field: %d fields, expected 3 (identifier, value, timestamp)", n)
	case n < 3:
		return fmt.Sprintf("missing field: %d fields, expected 3 (identifier, value, timestamp)", n)
	}
	return ""
}

// checkID applies rule 2 (empty, backslash) and decisions.md 4 (no control
// characters) to an identifier, plus what PostgreSQL needs: valid UTF-8.
func checkID(b []byte) string {
	switch {
	case len(b) == 0:
		return "identifier is empty"
	case bytes.IndexByte(b, '\\') >= 0:
		return fmt.Sprintf("identifier %s contains a backslash", quote(b))
	case len(b) > MaxDataPointIDBytes:
		return fmt.Sprintf("identifier is longer than %d bytes", MaxDataPointIDBytes)
	case !utf8.Valid(b):
		return fmt.Sprintf("identifier %s is not valid UTF-8", quote(b))
	}
	if err := ValidateDataPointID(string(b)); err != nil {
		return fmt.Sprintf("identifier %s contains a control character", quote(b))
	}
	return ""
}

// quote quotes a field for a message, cut to keep the message short.
func quote(b []byte) string {
	if len(b) > 64 {
		return strconv.Quote(string(b[:64])) + "..."
	}
	return strconv.Quote(string(b))
}

func parseValue(b []byte) (float64, string) {
	if len(b) == 0 {
		return 0, "value is empty"
	}
	// The string shares b's memory only for the call; ParseFloat keeps
	// nothing of it that we use (on failure we format b ourselves).
	v, err := strconv.ParseFloat(unsafe.String(&b[0], len(b)), 64)
	if err != nil && !errors.Is(err, strconv.ErrRange) {
		return 0, fmt.Sprintf("value %s is not a number", quote(b))
	}
	if math.IsNaN(v) || math.IsInf(v, 0) {
		return 0, fmt.Sprintf("value %s is not a finite number", quote(b))
	}
	return v, ""
}

// split cuts a line into fields: it fills f with the first three and
// returns how many there are; reason is set for a malformed quoted field.
func split(line []byte, d Dialect, f *[3][]byte) (n int, reason string) {
	if bytes.IndexByte(line, d.Quote) < 0 {
		for {
			i := bytes.IndexByte(line, d.Delimiter)
			if i < 0 {
				if n < 3 {
					f[n] = trimSpace(line, d.Delimiter)
				}
				return n + 1, ""
			}
			if n < 3 {
				f[n] = trimSpace(line[:i], d.Delimiter)
			}
			n++
			line = line[i+1:]
		}
	}
	return splitQuoted(line, d, f)
}

// splitQuoted is split for lines with quote characters: a field that
// starts with the quote runs to the closing one ("" inside is one "); a
// quote inside an unquoted field is an ordinary character.
func splitQuoted(line []byte, d Dialect, f *[3][]byte) (n int, reason string) {
	for {
		line = trimLeft(line, d.Delimiter)
		var field []byte
		if len(line) > 0 && line[0] == d.Quote {
			body, rest, ok := quoted(line[1:], d.Quote)
			if !ok {
				return n, reasonUnterminated
			}
			rest = trimLeft(rest, d.Delimiter)
			if len(rest) > 0 && rest[0] != d.Delimiter {
				return n, "malformed quoted field: text after the closing quote"
			}
			field, line = body, rest
		} else {
			i := bytes.IndexByte(line, d.Delimiter)
			if i < 0 {
				i = len(line)
			}
			field, line = trimSpace(line[:i], d.Delimiter), line[i:]
		}
		if n < 3 {
			f[n] = field
		}
		n++
		if len(line) == 0 {
			return n, ""
		}
		line = line[1:] // the delimiter
	}
}

// quoted reads a quoted field's body from just after the opening quote to
// the closing one; the body is a sub-slice unless it holds doubled quotes.
func quoted(s []byte, q byte) (body, rest []byte, ok bool) {
	var built []byte
	for {
		i := bytes.IndexByte(s, q)
		if i < 0 {
			return nil, nil, false
		}
		if i+1 < len(s) && s[i+1] == q { // "" is one quote
			built = append(append(built, s[:i]...), q)
			s = s[i+2:]
			continue
		}
		if built == nil {
			return s[:i], s[i+1:], true
		}
		return append(built, s[:i]...), s[i+1:], true
	}
}

func isSpace(c, delim byte) bool { return c == ' ' || c == '\t' && delim != '\t' }

func trimLeft(b []byte, delim byte) []byte {
	for len(b) > 0 && isSpace(b[0], delim) {
		b = b[1:]
	}
	return b
}

func trimSpace(b []byte, delim byte) []byte {
	b = trimLeft(b, delim)
	for len(b) > 0 && isSpace(b[len(b)-1], delim) {
		b = b[:len(b)-1]
	}
	return b
}

func isBlank(b []byte) bool {
	for _, c := range b {
		if c != ' ' && c != '\t' && c != '\r' {
			return false
		}
	}
	return true
}
