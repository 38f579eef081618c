package codec

import (
	"fmt"
	"regexp"
	"strings"
	"testing"
	"time"
)

// Every timestamp form lands on the right instant.
func TestCSVTimestamps(t *testing.T) {
	tests := []struct {
		in   string
		want time.Time
	}{
		{"2024-01-31", time.Date(2024, 1, 31, 0, 0, 0, 0, time.UTC)},
		{"2024-02-29", time.Date(2024, 2, 29, 0, 0, 0, 0, time.UTC)},
		{"2024-01-31T10:00:00Z", tBase},
		{"2024-01-31t10:00:00z", tBase},
		{"2024-01-31 10:00:00Z", tBase},
		{"2024-01-31T10:00:00", tBase},
		{"2024-01-31 10:00:00", tBase},
		{"2024-01-31T10:00", tBase},
		{"2024-01-31 10:00", tBase},
		{"2024-01-31T10:00Z", tBase},
		{"2024-01-31T10:00:00.5Z", tBase.Add(500 * time.Millisecond)},
		{"2024-01-31T10:00:00,25Z", tBase.Add(250 * time.Millisecond)},
		{"2024-01-31T10:00:00.123456789Z", tBase.Add(123456789)},
		{"2024-01-31T10:00:00.1234567891234Z", tBase.Add(123456789)},
		{"2024-01-31T10:00:00.000001", tBase.Add(time.Microsecond)},
		{"2024-01-31T11:00:00+01", tBase},
		{"2024-01-31T11:00:00+01:00", tBase},
		{"2024-01-31T11:00:00+0100", tBase},
		{"2024-01-31T11:30:00+01:30", tBase},
		{"2024-01-31T05:00:00-05:00", tBase},
		{"2024-01-31T05:00:00-05", tBase},
		{"2024-01-31 11:00:00 +01:00", tBase},
		{"2024-01-31 10:00:00 UTC", tBase},
		{"2024-01-31 10:00:00UTC", tBase},
		{"2024-01-31T11:00:00.5+01:00", tBase.Add(500 * time.Millisecond)},
		{"2024-02-01T00:30:00+14:30", tBase},
		{"2024-01-31T01:00:00-09:00", tBase},
		{"1900-01-01", time.Date(1900, 1, 1, 0, 0, 0, 0, time.UTC)},
		{"9999-12-31T23:59:59Z", time.Date(9999, 12, 31, 23, 59, 59, 0, time.UTC)},
		{"2000-02-29", time.Date(2000, 2, 29, 0, 0, 0, 0, time.UTC)},
		// The slow forms.
		{"2024/01/31 10:00:00", tBase},
		{"2024/01/31 10:00", tBase},
		{"2024/01/31", time.Date(2024, 1, 31, 0, 0, 0, 0, time.UTC)},
		{"31.01.2024 10:00:00", tBase},
		{"31.01.2024 10:00", tBase},
		{"31.01.2024", time.Date(2024, 1, 31, 0, 0, 0, 0, time.UTC)},
		{"Wed, 31 Jan 2024 11:00:00 +0100", tBase},
		{"20240131T100000Z", tBase},
		{"20240131T110000+0100", tBase},
		{"20240131T100000", tBase},
		{"1706695200", tBase},
		{"1706695200.25", tBase.Add(250 * time.Millisecond)},
		{"1706695200250", tBase.Add(250 * time.Millisecond)},
	}
	for _, tt := range tests {
		t.Run(tt.in, func(t *testing.T) {
			// Unquoted with ; (some forms hold commas), quoted with ,.
			for _, line := range []string{"dp;1;" + tt.in, `dp,1,"` + tt.in + `"`} {
				q := line
				_, res := readAllCSV(t, strings.NewReader(line+"\n"))
				if len(res.errs) != 0 || len(res.obs) != 1 {
					t.Fatalf("%s: errors %v", q, res.errs)
				}
				if got := res.obs[0].Time; !got.Equal(tt.want) || got.Location() != time.UTC {
					t.Fatalf("%s: got %s, want %s", q, got, tt.want)
				}
				if err := Validate(res.obs[0].DataPointID, res.obs[0].Time, res.obs[0].Value); err != nil {
					t.Fatal(err)
				}
			}
		})
	}
	// The hand-rolled parser agrees with time.Parse where both apply.
	for _, s := range []string{"2024-03-10T02:30:00Z", "1999-12-31T23:59:59.999+05:45", "2100-02-28 00:00:00-12:00", "1970-01-01T00:00:00Z", "1969-12-31T23:59:59.5Z"} {
		want, err := time.Parse(time.RFC3339Nano, strings.Replace(s, " ", "T", 1))
		if err != nil {
			t.Fatal(err)
		}
		if got, ok := parseTimestamp([]byte(s)); !ok || !got.Equal(want) {
			t.Fatalf("%s: got %s %v, want %s", s, got, ok, want)
		}
	}
}

// Timestamps as people write them (issue 8 item 12): api.md's sample
// line and aedifion's import guide write hours, and sometimes minutes and
// seconds, with one digit.
func TestCSVTimestampsWithOneDigitFields(t *testing.T) {
	at := func(y int, mo time.Month, d, h, mi, s, ns int) time.Time {
		return time.Date(y, mo, d, h, mi, s, ns, time.UTC)
	}
	for _, tc := range []struct {
		in   string
		want time.Time
	}{
		{"2018-12-18 8:00:00", at(2018, 12, 18, 8, 0, 0, 0)},                 // api.md 4.7
		{"2018-12-17 1:00:00.000", at(2018, 12, 17, 1, 0, 0, 0)},             // aedifion's import guide
		{"2018-12-17T3:00:00+01", at(2018, 12, 17, 2, 0, 0, 0)},              // aedifion's import guide
		{"2018-12-17T3:00:00+01:00", at(2018, 12, 17, 2, 0, 0, 0)},           //
		{"2018-12-17 3:00", at(2018, 12, 17, 3, 0, 0, 0)},                    // no seconds
		{"2018-12-17 3:00Z", at(2018, 12, 17, 3, 0, 0, 0)},                   //
		{"2018-12-17 03:5:07", at(2018, 12, 17, 3, 5, 7, 0)},                 // one-digit minute
		{"2018-12-17 3:05:7", at(2018, 12, 17, 3, 5, 7, 0)},                  // one-digit second
		{"2018-12-17 3:5:7.25 +02:00", at(2018, 12, 17, 1, 5, 7, 250000000)}, // all of them
		{"2018-12-17t0:00:00z", at(2018, 12, 17, 0, 0, 0, 0)},                //
		{"2018-12-17 9:59:59 UTC", at(2018, 12, 17, 9, 59, 59, 0)},           //
		{"2018/12/17 8:00:00", at(2018, 12, 17, 8, 0, 0, 0)},                 // the slow forms too
		{"17.12.2018 8:00", at(2018, 12, 17, 8, 0, 0, 0)},                    //
	} {
		t.Run(tc.in, func(t *testing.T) {
			for _, line := range []string{"dp;1;" + tc.in, `dp,1,"` + tc.in + `"`, "dp,1," + tc.in} {
				if strings.Count(line, ",") > 2 && !strings.Contains(line, `"`) {
					continue // a decimal comma needs quotes with comma as delimiter
				}
				_, res := readAllCSV(t, strings.NewReader(line+"\n"))
				if len(res.errs) != 0 || len(res.obs) != 1 {
					t.Fatalf("%s: errors %v", line, res.errs)
				}
				if got := res.obs[0].Time; !got.Equal(tc.want) || got.Location() != time.UTC {
					t.Fatalf("%s: got %s, want %s", line, got, tc.want)
				}
			}
		})
	}
	// What stays refused: a field of three digits, an empty one, an hour
	// or minute out of range, no minutes at all.
	for _, in := range []string{
		"2018-12-17 123:00:00", "2018-12-17 1:000:00", "2018-12-17 1:00:000", "2018-12-17 :00:00",
		"2018-12-17 1::00", "2018-12-17 1:00:", "2018-12-17 24:00:00", "2018-12-17 9:60", "2018-12-17 8",
		"2018-12-17 8:", "2018-12-17 8:00:60", "2018-12-17T", "2018-12-17 8:00 ", "2018-12-17 8:00:00.",
		"2018-12-17 8:00:00+1", "2018-12-17 8:00:00+24:00",
	} {
		if got, ok := parseTimestamp([]byte(in)); ok {
			t.Errorf("%q accepted as %s", in, got)
		}
	}
}

// referenceTimeRe is the fast path's grammar as a regular expression:
// date, then optionally a time of one- or two-digit fields, fraction and
// offset.
var referenceTimeRe = regexp.MustCompile(`^(\d{4})-(\d{2})-(\d{2})` +
	`(?:[Tt ](\d{1,2}):(\d{1,2})(?::(\d{1,2})(?:[.,](\d+))?)?` +
	`(?: ?(Z|z|UTC|[+-]\d{2}(?::?\d{2})?))?)?$`)

// referenceParse reads what referenceTimeRe matches with time.Parse,
// after padding every field to the two digits RFC 3339 wants: an
// independent reading of the same grammar (date arithmetic, leap years
// and range checks are time.Parse's own).
func referenceParse(s string) (time.Time, bool) {
	m := referenceTimeRe.FindStringSubmatch(s)
	if m == nil {
		return time.Time{}, false
	}
	pad := func(f string) string { return strings.Repeat("0", 2-len(f)) + f }
	frac := ""
	if m[7] != "" {
		frac = "." + m[7]
	}
	off := "Z"
	switch z := m[8]; {
	case z == "" || z == "Z" || z == "z" || z == "UTC":
	case len(z) == 3:
		off = z + ":00"
	case len(z) == 5:
		off = z[:3] + ":" + z[3:]
	default:
		off = z
	}
	if off != "Z" && off[1:3] > "23" {
		return time.Time{}, false // time.Parse takes +24:00; no clock shows it
	}
	rfc := fmt.Sprintf("%s-%s-%sT%s:%s:%s%s%s", m[1], m[2], m[3], pad(m[4]), pad(m[5]), pad(m[6]), frac, off)
	t, err := time.Parse(time.RFC3339Nano, rfc)
	if err != nil {
		return time.Time{}, false
	}
	return t.UTC(), true
}

// FuzzParseTimestamp: the timestamp parser never panics; where the fast
// path's grammar applies it agrees with the reference reading, both in
// what it accepts and in the instant; and what it accepts, written back
// as RFC 3339, reads back as the same instant.
func FuzzParseTimestamp(f *testing.F) {
	for _, s := range []string{
		"2018-12-18 8:00:00", "2018-12-17 1:00:00.000", "2018-12-17T3:00:00+01", "2024-01-31T10:00:00Z",
		"2024-01-31", "2024-02-29 23:59:59.999999999-05:30", "2023-02-29", "2024-01-31 10:00 UTC",
		"2024-01-31T11:00:00+0100", "2024-01-31 1:2:3,5 +01", "1706695200.25", "1706695200250",
		"31.01.2024 8:00", "2024/01/31 10:00:00", "Wed, 31 Jan 2024 11:00:00 +0100", "20240131T100000Z",
		"2024-01-31 24:00", "2024-01-31 1:", "0000-01-01", "9999-12-31T23:59:59.9999999999Z", "",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		got, ok := parseTimestamp([]byte(s)) // must not panic, whatever s is
		inGrammar := referenceTimeRe.MatchString(s)
		if _, fast := parseRFC3339ish([]byte(s)); fast && !inGrammar {
			t.Fatalf("%q: the fast path accepts what its grammar does not", s)
		}
		if inGrammar {
			want, refOK := referenceParse(s)
			if ok != refOK {
				t.Fatalf("%q: parser accepts %v, reference %v", s, ok, refOK)
			}
			if ok && !got.Equal(want) {
				t.Fatalf("%q: parser %s, reference %s", s, got, want)
			}
		}
		if !ok {
			return
		}
		if got.Location() != time.UTC {
			t.Fatalf("%q: not in UTC: %s", s, got)
		}
		if got.Year() < 0 || got.Year() > 9999 {
			return // RFC 3339 cannot write it; Validate refuses it anyway
		}
		back, ok := parseTimestamp([]byte(got.Format(time.RFC3339Nano)))
		if !ok || !back.Equal(got) {
			t.Fatalf("%q: %s does not read back (%s, %v)", s, got.Format(time.RFC3339Nano), back, ok)
		}
	})
}

// BenchmarkParseTimestamp is the parser alone on the common shapes.
func BenchmarkParseTimestamp(b *testing.B) {
	in := [][]byte{
		[]byte("2024-01-31T10:00:00Z"), []byte("2024-01-31 10:00:00.250+01:00"),
		[]byte("2024-01-31 10:00"), []byte("2024-01-31T10:00:00.123456+0100"),
	}
	for b.Loop() {
		for _, s := range in {
			if _, ok := parseTimestamp(s); !ok {
				b.Fatal(string(s))
			}
		}
	}
}

// RFC 3339 as uploads and gateways send it: Go's layout, plus the
// lowercase t and z that RFC 3339 section 5.6 allows.
func TestParseRFC3339(t *testing.T) {
	t0 := time.Date(2024, 1, 31, 10, 0, 0, 0, time.UTC)
	for _, tc := range []struct {
		in   string
		want time.Time
		ok   bool
	}{
		{"2024-01-31T10:00:00Z", t0, true},
		{"2024-01-31t10:00:00z", t0, true},
		{"2024-01-31t11:00:00+01:00", t0, true},
		{"2024-01-31T10:00:00.123456789Z", t0.Add(123456789), true},
		{"2024-01-31T05:00:00-05:00", t0, true},
		{"2024-01-31 10:00:00Z", time.Time{}, false}, // a space is the CSV import's, not RFC 3339's
		{"2024-01-31T10:00:00", time.Time{}, false},  // no offset
		{"2024-01-31", time.Time{}, false},
		{"2024-01-31T24:00:00Z", time.Time{}, false},
		{"1706695200", time.Time{}, false},
		{"yesterday", time.Time{}, false},
		{"", time.Time{}, false},
	} {
		got, err := ParseRFC3339(tc.in)
		if (err == nil) != tc.ok || tc.ok && !got.Equal(tc.want) {
			t.Errorf("%q: %s %v, want %s (accepted %v)", tc.in, got, err, tc.want, tc.ok)
		}
	}
}

// FuzzParseRFC3339: the case of T and Z does not matter, an accepted time
// written back reads back the same, and the CSV import reads every RFC 3339
// time of the years it keeps as the same instant.
func FuzzParseRFC3339(f *testing.F) {
	for _, s := range []string{
		"2024-01-31T10:00:00Z", "2024-01-31t10:00:00z", "2024-01-31T10:00:00.5+01:00", "2024-01-31T10:00:00,25Z",
		"1900-01-01T00:00:00-23:59", "9999-12-31T23:59:59.999999999Z", "2024-02-30T00:00:00Z", "x",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		got, err := ParseRFC3339(s)
		lower, errLower := ParseRFC3339(strings.ToLower(s))
		if (err == nil) != (errLower == nil) || err == nil && !got.Equal(lower) {
			t.Fatalf("%q: %s %v; in lower case %s %v", s, got, err, lower, errLower)
		}
		if err != nil {
			return
		}
		back, err := ParseRFC3339(got.Format(time.RFC3339Nano))
		if err != nil || !back.Equal(got) {
			t.Fatalf("%q: %s reads back as %s %v", s, got.Format(time.RFC3339Nano), back, err)
		}
		if y := got.UTC().Year(); y < 1900 || y > 9999 {
			return
		}
		if csv, ok := parseTimestamp([]byte(s)); !ok || !csv.Equal(got) {
			t.Fatalf("%q: RFC 3339 %s, the CSV import %s %v", s, got, csv, ok)
		}
	})
}
