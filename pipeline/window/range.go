package window

import (
	"encoding/json"
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/adhocore/gronx"
)

// MaxObservations bounds what one window holds: the largest count of a
// count window, and the most observations a time or cron window keeps (past
// it the oldest is dropped, as in a count window). It bounds a pin's memory
// (32 bytes per observation, so at most about 3 MiB) whatever the data rate
// of its source; a 1-hour window of one value per second needs 3,600.
const MaxObservations = 100_000

// MaxDuration is the longest time window: a year, leap day included. Longer
// windows are more likely a typo than a wish, and they would mostly hit
// MaxObservations.
const MaxDuration = 366 * 24 * time.Hour

// Range is a pin's data_range (api.md 2.11). Exactly one kind is set: Count
// (count-based), Duration (time-based) or CronStart and CronEnd together
// (cron-based). Build it with ParseRange, which validates and applies the
// default (count 1).
type Range struct {
	Count              int
	Duration           time.Duration
	CronStart, CronEnd string // five-field cron expressions, evaluated in UTC
}

// FieldError is a validation error naming the config field at fault, with
// the field spelt as in the config body (data_range.count, aggregate,
// temperature_unit), so the HTTP layer can answer with it unchanged.
type FieldError struct {
	Field  string
	Reason string
}

func (e *FieldError) Error() string { return e.Field + ": " + e.Reason }

// The longest data_range texts ParseRange reads, in characters: a cron
// expression has six short fields, a duration is a number and a unit.
const (
	MaxCronLength     = 200
	MaxDurationLength = 100
)

func fieldErr(field, format string, args ...any) error {
	return &FieldError{Field: field, Reason: fmt.Sprintf(format, args...)}
}

// ParseRange validates a data_range. count is the decoded JSON value of
// data_range.count: nil when absent, an integer (any Go integer type, or a
// float64 or json.Number with an integral value, as JSON decoding yields) or
// a numeric string ("10"). duration is data_range.time ("" when absent): an
// integer with a unit suffix s, m, h, d (24h) or w (7d), or a Go duration
// such as "1h30m"; at least one second, at most MaxDuration. cronStart and
// cronEnd are data_range.start and data_range.end, both or neither. Giving
// no kind at all yields the default Range{Count: 1}, which forwards every
// value; giving two kinds is an error.
func ParseRange(count any, duration, cronStart, cronEnd string) (Range, error) {
	for _, f := range []struct {
		field, value string
		limit        int
	}{{"data_range.time", duration, MaxDurationLength}, {"data_range.start", cronStart, MaxCronLength}, {"data_range.end", cronEnd, MaxCronLength}} {
		if n := utf8.RuneCountInString(f.value); n > f.limit {
			return Range{}, fieldErr(f.field, "at most %d characters, got %d", f.limit, n)
		}
	}
	var r Range
	kinds := 0
	if count != nil {
		n, err := parseCount(count)
		if err != nil {
			return Range{}, err
		}
		r.Count = n
		kinds++
	}
	if duration != "" {
		d, err := parseDuration(duration)
		if err != nil {
			return Range{}, err
		}
		r.Duration = d
		kinds++
	}
	if cronStart != "" || cronEnd != "" {
		if cronStart == "" {
			return Range{}, fieldErr("data_range.start", "is required with data_range.end")
		}
		if cronEnd == "" {
			return Range{}, fieldErr("data_range.end", "is required with data_range.start")
		}
		var err error
		if r.CronStart, err = parseCron("data_range.start", cronStart); err != nil {
			return Range{}, err
		}
		if r.CronEnd, err = parseCron("data_range.end", cronEnd); err != nil {
			return Range{}, err
		}
		kinds++
	}
	switch kinds {
	case 0:
		return Range{Count: 1}, nil
	case 1:
		return r, nil
	}
	return Range{}, fieldErr("data_range", "give only one of count, time or start/end")
}

// validate checks the invariants of a Range built by hand, so NewWindow
// never runs on a nonsensical one.
func (r Range) validate() error {
	kinds := 0
	if r.Count != 0 {
		if r.Count < 1 || r.Count > MaxObservations {
			return fieldErr("data_range.count", "must be between 1 and %d", MaxObservations)
		}
		kinds++
	}
	if r.Duration != 0 {
		if r.Duration < time.Second || r.Duration > MaxDuration {
			return fieldErr("data_range.time", "must be between 1s and 366d")
		}
		kinds++
	}
	if r.CronStart != "" || r.CronEnd != "" {
		if _, err := parseCron("data_range.start", r.CronStart); err != nil {
			return err
		}
		if _, err := parseCron("data_range.end", r.CronEnd); err != nil {
			return err
		}
		kinds++
	}
	if kinds != 1 {
		return fieldErr("data_range", "give exactly one of count, time or start/end")
	}
	return nil
}

func parseCount(v any) (int, error) {
	const field = "data_range.count"
	var f float64
	switch x := v.(type) {
	case int:
		f = float64(x)
	case int8:
		f = float64(x)
	case int16:
		f = float64(x)
	case int32:
		f = float64(x)
	case int64:
		f = float64(x)
	case uint:
		f = float64(x)
	case uint8:
		f = float64(x)
	case uint16:
		f = float64(x)
	case uint32:
		f = float64(x)
	case uint64:
		f = float64(x)
	case float32:
		f = float64(x)
	case float64:
		f = x
	case json.Number:
		return parseCountString(string(x))
	case string:
		return parseCountString(x)
	default:
		return 0, fieldErr(field, "must be an integer or a numeric string, not %T", v)
	}
	return checkCount(f)
}

func parseCountString(s string) (int, error) {
	f, err := strconv.ParseFloat(strings.TrimSpace(s), 64)
	if err != nil {
		return 0, fieldErr("data_range.count", "%q is not a number", s)
	}
	return checkCount(f)
}

// checkCount works on a float64 so that 10, 10.0, "10" and "1e1" agree;
// every allowed count is exactly representable.
func checkCount(f float64) (int, error) {
	if f != math.Trunc(f) || math.IsInf(f, 0) {
		return 0, fieldErr("data_range.count", "must be a whole number, got %v", f)
	}
	if f < 1 || f > MaxObservations {
		return 0, fieldErr("data_range.count", "must be between 1 and %d, got %v", MaxObservations, f)
	}
	return int(f), nil
}

// unitSuffix maps the single-letter suffixes of the forms seen in api.md
// 2.11 (60s, 24h, 1d) plus m and w. "d" is always 24 hours: windows run in
// UTC, where every day has 24 hours.
var unitSuffix = map[byte]time.Duration{
	's': time.Second, 'm': time.Minute, 'h': time.Hour,
	'd': 24 * time.Hour, 'w': 7 * 24 * time.Hour,
}

func parseDuration(s string) (time.Duration, error) {
	const field = "data_range.time"
	s = strings.TrimSpace(s)
	var d time.Duration
	if n := len(s); n >= 2 {
		if unit, ok := unitSuffix[s[n-1]]; ok {
			if v, err := strconv.ParseUint(s[:n-1], 10, 64); err == nil {
				if v > uint64(MaxDuration/unit) {
					return 0, fieldErr(field, "%q is longer than 366d", s)
				}
				d = time.Duration(v) * unit
			}
		}
	}
	if d == 0 {
		// Not <integer><unit>: Go's syntax covers "1h30m" and "1.5h". A
		// bare number has no unit and fails here, on purpose.
		var err error
		if d, err = time.ParseDuration(s); err != nil {
			return 0, fieldErr(field, "%q is not a duration such as 60s, 15m, 24h or 1d", s)
		}
	}
	if d < time.Second || d > MaxDuration {
		return 0, fieldErr(field, "%q must be between 1s and 366d", s)
	}
	return d, nil
}

// cronProbe is the reference time for checking that a schedule ever fires;
// a leap year's start, so that "0 0 29 2 *" passes.
var cronProbe = time.Date(2024, 1, 1, 0, 0, 0, 0, time.UTC)

// parseCron accepts exactly five fields (minute hour day-of-month month
// day-of-week), as api.md 2.11 says; gronx would also take seconds and years
// and "@daily", which the spec does not promise. It returns the expression
// with single spaces. A valid expression that never fires ("0 0 31 2 *") is
// refused here rather than leaving a window that never opens.
func parseCron(field, expr string) (string, error) {
	fields := strings.Fields(expr)
	if len(fields) != 5 {
		return "", fieldErr(field, "%q must have five fields (minute hour day month weekday)", expr)
	}
	norm := strings.Join(fields, " ")
	if !gronx.IsValid(norm) {
		return "", fieldErr(field, "%q is not a valid cron expression", expr)
	}
	// Any day of any month fires a valid minute and hour; only then is the
	// costly probe left out (gronx walks the calendar: 52 µs a parse with
	// it, 11.5 without, BenchmarkParseCronEveryDay; a restart parses every
	// running datapoint's ranges).
	if fields[2] == "*" && fields[4] == "*" {
		return norm, nil
	}
	if _, err := gronx.NextTickAfter(norm, cronProbe, false); err != nil {
		return "", fieldErr(field, "%q never fires", expr)
	}
	return norm, nil
}
