package codec

import (
	"fmt"
	"math"
	"time"
	"unicode"
	"unicode/utf8"
)

// MaxDataPointIDBytes is the longest dataPointID (decisions.md 4).
const MaxDataPointIDBytes = 512

// The instants an observation may carry, the years 1900 to 9999, as Unix
// seconds (for the CSV reader's cheap check): 1900-01-01T00:00:00Z and
// 10000-01-01T00:00:00Z (TestValidateYears checks them).
const (
	minUnix = -2208988800
	maxUnix = 253402300800
)

// Validate checks one observation: a finite value, a sane time and an
// acceptable dataPointID. Every source applies it, in this order, so a
// value with several faults gets the same reason from each.
func Validate(dataPointID string, t time.Time, value float64) error {
	if math.IsNaN(value) || math.IsInf(value, 0) {
		return fmt.Errorf("value %v is not a finite number", value)
	}
	if t.IsZero() || t.Year() < 1900 || t.Year() > 9999 {
		return fmt.Errorf("time %s is outside the years 1900 to 9999", t.Format(time.RFC3339))
	}
	return ValidateDataPointID(dataPointID)
}

// ValidateDataPointID enforces decisions.md 4: 1 to 512 bytes of valid
// UTF-8 without backslash and without any control character (Unicode
// category Cc: C0, DEL and C1, tab and line feed included), so that none
// reaches PostgreSQL (which refuses NUL and invalid UTF-8) or an MQTT
// topic.
func ValidateDataPointID(id string) error {
	if id == "" || len(id) > MaxDataPointIDBytes {
		return fmt.Errorf("dataPointID must have 1 to %d bytes", MaxDataPointIDBytes)
	}
	for i := 0; i < len(id); {
		r, n := utf8.DecodeRuneInString(id[i:])
		switch {
		case r == utf8.RuneError && n == 1:
			return fmt.Errorf("dataPointID %q is not valid UTF-8", id)
		case unicode.IsControl(r):
			return fmt.Errorf("dataPointID %q holds the control character %U; control characters and backslash are not allowed", id, r)
		case r == '\\':
			return fmt.Errorf("dataPointID %q: control characters and backslash are not allowed", id)
		}
		i += n
	}
	return nil
}
