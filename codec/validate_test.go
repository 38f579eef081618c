package codec

import (
	"math"
	"strings"
	"testing"
	"time"
	"unicode/utf8"
)

// Every rule of decisions.md 4 and of an observation's value and time,
// with the reason a caller shows.
func TestValidate(t *testing.T) {
	t0 := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	for _, tc := range []struct {
		name  string
		id    string
		time  time.Time
		value float64
		err   string // part of the reason; "" when valid
	}{
		{"plain", "room 1/temp", t0, 21.5, ""},
		{"unicode and topic bytes", "Tä/°C %+#", t0, -1e300, ""},
		{"512 bytes", strings.Repeat("x", 512), t0, 0, ""},
		{"first instant of 1900", "a", time.Date(1900, 1, 1, 0, 0, 0, 0, time.UTC), 0, ""},
		{"last instant of 9999", "a", time.Date(9999, 12, 31, 23, 59, 59, 999999999, time.UTC), 0, ""},
		{"NaN", "a", t0, math.NaN(), "not a finite number"},
		{"+Inf", "a", t0, math.Inf(1), "not a finite number"},
		{"-Inf", "a", t0, math.Inf(-1), "not a finite number"},
		{"zero time", "a", time.Time{}, 0, "outside the years 1900 to 9999"},
		{"1899", "a", time.Date(1899, 12, 31, 23, 59, 59, 0, time.UTC), 0, "outside the years 1900 to 9999"},
		{"10000", "a", time.Date(10000, 1, 1, 0, 0, 0, 0, time.UTC), 0, "outside the years 1900 to 9999"},
		{"empty id", "", t0, 0, "1 to 512 bytes"},
		{"513 bytes", strings.Repeat("x", 513), t0, 0, "1 to 512 bytes"},
		{"backslash", `a\b`, t0, 0, "backslash"},
		{"NUL", "a\x00", t0, 0, "control character U+0000"},
		{"tab", "a\tb", t0, 0, "control character U+0009"},
		{"line feed", "a\n", t0, 0, "control character U+000A"},
		{"DEL", "a\x7f", t0, 0, "control character U+007F"},
		{"C1 control", "a\u0085", t0, 0, "control character U+0085"},
		{"invalid UTF-8", "a\xff", t0, 0, "not valid UTF-8"},
		{"the value is checked first", "", t0, math.NaN(), "not a finite number"},
		{"then the time", "", time.Time{}, 0, "outside the years"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := Validate(tc.id, tc.time, tc.value)
			if tc.err == "" {
				if err != nil {
					t.Fatalf("refused: %v", err)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tc.err) {
				t.Fatalf("err %v, want one containing %q", err, tc.err)
			}
		})
	}
}

// The CSV reader checks years on Unix seconds; they are Validate's years.
func TestValidateYears(t *testing.T) {
	if want := time.Date(1900, 1, 1, 0, 0, 0, 0, time.UTC).Unix(); minUnix != want {
		t.Fatalf("minUnix %d, want %d", minUnix, want)
	}
	if want := time.Date(10000, 1, 1, 0, 0, 0, 0, time.UTC).Unix(); maxUnix != want {
		t.Fatalf("maxUnix %d, want %d", maxUnix, want)
	}
}

// FuzzValidateDataPointID: an accepted dataPointID is what PostgreSQL and
// an MQTT topic can carry (valid UTF-8, 1 to 512 bytes, no NUL, no
// backslash, no C0 control or DEL), and the CSV reader's own checks of an
// identifier, done on bytes to spare an allocation, agree with it.
func FuzzValidateDataPointID(f *testing.F) {
	for _, s := range []string{"a", "room 1/temp", "Tä/°C", `a\b`, "a\x00", "a\u0085", "\xff", "", strings.Repeat("é", 257)} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, id string) {
		err := ValidateDataPointID(id)
		if reason := checkID([]byte(id)); (reason == "") != (err == nil) {
			t.Fatalf("%q: ValidateDataPointID %v, the CSV reader %q", id, err, reason)
		}
		if err != nil {
			return
		}
		if !utf8.ValidString(id) || len(id) < 1 || len(id) > MaxDataPointIDBytes || strings.ContainsAny(id, "\\\x7f") {
			t.Fatalf("%q accepted", id)
		}
		for i := 0; i < len(id); i++ {
			if id[i] < 0x20 {
				t.Fatalf("%q accepted with byte %#x", id, id[i])
			}
		}
	})
}
