package codec

import (
	"fmt"
	"math"
	"slices"
	"strings"
	"testing"
	"time"
)

// The fast decoder takes the common forms and leaves everything else to
// encoding/json, which then says precisely what is wrong.
func TestMQTTFastDecodeTakesOnlyWhatItReadsExactly(t *testing.T) {
	const obj = `{"time":"2026-11-24T06:00:00Z","value":1.5}`
	full := "[" + strings.Repeat(obj+",", MaxObservationsPerMessage-1) + obj + "]"
	for _, tc := range []struct {
		name    string
		payload string
		fast    bool
	}{
		{"object", obj, true},
		{"array", `[` + obj + `,` + obj + `]`, true},
		{"the most observations a message may hold", full, true},
		{"whitespace everywhere", " \n[ { \"value\" : -0.5e+3 ,\t\"time\" : \"2026-11-24t06:00:00.123456789123z\" } ]\r\n", true},
		{"an offset", `{"time":"2026-11-24T07:00:00.5+01:00","value":-0}`, true},
		{"a lowercase offset time", `{"time":"2026-11-24t07:00:00-00:30","value":1}`, true},
		{"one observation more than a message may hold", "[" + obj + "," + full[1:], false},
		{"an empty array", `[ ]`, false},
		{"an empty object", `{}`, false},
		{"an escape in a key", `{"\u0074ime":"2026-11-24T06:00:00Z","value":1}`, false},
		{"an escape in the time", `{"time":"2026-11-24T06:00:00\u005a","value":1}`, false},
		{"a repeated key", `{"time":"2026-11-24T06:00:00Z","value":1,"value":2}`, false},
		{"a repeated time", `{"time":"2026-11-24T06:00:00Z","time":"2026-11-24T07:00:00Z","value":1}`, false},
		{"a key in another case", `{"Time":"2026-11-24T06:00:00Z","value":1}`, false},
		{"an unknown field", `{"time":"2026-11-24T06:00:00Z","value":1,"unit":"K"}`, false},
		{"a missing value", `{"time":"2026-11-24T06:00:00Z"}`, false},
		{"null", `{"time":"2026-11-24T06:00:00Z","value":null}`, false},
		{"a value as a string", `{"time":"2026-11-24T06:00:00Z","value":"1"}`, false},
		{"an infinite value", `{"time":"2026-11-24T06:00:00Z","value":1e999}`, false},
		{"a leading zero", `{"time":"2026-11-24T06:00:00Z","value":01}`, false},
		{"a time that is no RFC 3339", `{"time":"2026-11-24 06:00:00Z","value":1}`, false},
		{"the 31st of November", `{"time":"2026-11-31T06:00:00Z","value":1}`, false},
		{"a leap second", `{"time":"2026-12-31T23:59:60Z","value":1}`, false},
		{"a null element", `[null]`, false},
		{"a trailing comma", `[` + obj + `,]`, false},
		{"trailing bytes", obj + `x`, false},
		{"a trailing vertical tab", obj + "\v", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, ok := decodeObservationsFast([]byte(tc.payload))
			if ok != tc.fast {
				t.Fatalf("fast path took it: %v, want %v", ok, tc.fast)
			}
			if !ok {
				return
			}
			want, err := decodeObservationsJSON([]byte(tc.payload))
			if err != nil || !slices.EqualFunc(got, want, sameTimeValue) {
				t.Fatalf("fast %v, encoding/json %v (%v)", got, want, err)
			}
		})
	}
}

// Whatever the fast decoder accepts, encoding/json decodes to the same
// observations, times in the same location.
func FuzzMQTTFastDecode(f *testing.F) {
	for _, s := range []string{
		`{"time":"2026-11-24T06:00:00Z","value":1.5}`,
		`[{"value":-0,"time":"2026-11-24t06:00:00.5z"},{"time":"0000-02-29T23:59:59.999999999999Z","value":1e-400}]`,
		`{"time":"2026-11-24T07:00:00+01:00","value":1}`,
		`[]`, `{"time":"2026-02-29T00:00:00Z","value":1}`, `[{"time":"x","value":1}]`, `{"value":1,"value":2}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, payload []byte) {
		fast, ok := decodeObservationsFast(payload)
		if !ok {
			return
		}
		slow, err := decodeObservationsJSON(payload)
		if err != nil {
			t.Fatalf("fast path took %q, encoding/json refuses it: %v", payload, err)
		}
		if !slices.EqualFunc(fast, slow, sameTimeValue) {
			t.Fatalf("%q: fast %v, encoding/json %v", payload, fast, slow)
		}
	})
}

// sameTimeValue: the same instant in the same zone, and the same bits of
// value (-0 is not 0).
func sameTimeValue(a, b TimeValue) bool {
	an, ao := a.Time.Zone()
	bn, bo := b.Time.Zone()
	return a.Time.Equal(b.Time) && an == bn && ao == bo && a.Time.Location().String() == b.Time.Location().String() &&
		math.Float64bits(a.Value) == math.Float64bits(b.Value)
}

// One publish of 100 observations, as bdp-bench mqtt's ingest leg sends them.
func BenchmarkDecodeObservations(b *testing.B) {
	var parts []string
	t0 := time.Date(2026, 3, 1, 0, 0, 0, 0, time.UTC)
	for i := range 100 {
		parts = append(parts, fmt.Sprintf(`{"time":%q,"value":%g}`,
			t0.Add(time.Duration(i)*time.Second).Format(time.RFC3339), float64(i)/7))
	}
	msg := []byte("[" + strings.Join(parts, ",") + "]")
	b.ReportAllocs()
	for b.Loop() {
		out, err := DecodeObservations(msg)
		if err != nil || len(out) != 100 {
			b.Fatal(len(out), err)
		}
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/100, "ns/obs")
}
