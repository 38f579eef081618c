package codec

import (
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"
)

// The fast decoder takes the common forms and leaves everything else,
// untouched, to encoding/json.
func TestKafkaFastDecodeTakesOnlyWhatItReadsExactly(t *testing.T) {
	const obj = `{"project_id":7,"dataPointID":"a","time":"2026-03-01T12:30:00Z","value":1.5}`
	for _, tc := range []struct {
		name  string
		value string
		fast  bool
	}{
		{"object", obj, true},
		{"array", `[` + obj + `,` + obj + `]`, true},
		{"empty array", ` [ ] `, true},
		{"whitespace everywhere", " \n{ \"value\" : -0.5e+3 , \"time\":\"2026-03-01T12:30:00+01:00\",\t\"dataPointID\" : \"Tä/°C\", \"project_id\" : 12 }\r\n", true},
		{"an escape", `{"project_id":7,"dataPointID":"a\"b","time":"2026-03-01T12:30:00Z","value":1}`, false},
		{"an unknown field", `{"project_id":7,"dataPointID":"a","time":"2026-03-01T12:30:00Z","value":1,"unit":"K"}`, false},
		{"a key in another case", `{"Project_ID":7,"dataPointID":"a","time":"2026-03-01T12:30:00Z","value":1}`, false},
		{"a repeated key", `{"project_id":7,"project_id":8,"dataPointID":"a","time":"2026-03-01T12:30:00Z","value":1}`, false},
		{"null", `{"project_id":7,"dataPointID":"a","time":"2026-03-01T12:30:00Z","value":null}`, false},
		{"a leading zero", `{"project_id":07,"dataPointID":"a","time":"2026-03-01T12:30:00Z","value":1}`, false},
		{"a fractional project_id", `{"project_id":7.0,"dataPointID":"a","time":"2026-03-01T12:30:00Z","value":1}`, false},
		{"an infinite value", `{"project_id":7,"dataPointID":"a","time":"2026-03-01T12:30:00Z","value":1e999}`, false},
		{"a value ending in a dot", `{"project_id":7,"dataPointID":"a","time":"2026-03-01T12:30:00Z","value":1.}`, false},
		{"invalid UTF-8", "{\"project_id\":7,\"dataPointID\":\"a\xff\",\"time\":\"2026-03-01T12:30:00Z\",\"value\":1}", false},
		{"an invalid observation", `{"project_id":7,"dataPointID":"a","time":"yesterday","value":1}`, false},
		{"trailing bytes", obj + `x`, false},
		{"a missing field", `{"project_id":7,"dataPointID":"a","time":"2026-03-01T12:30:00Z"}`, false},
		{"a trailing comma", `[` + obj + `,]`, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			before := []KafkaObservation{{ProjectID: 1, DataPointID: "kept"}}
			got, ok := decodeKafkaFast([]byte(tc.value), slices.Clone(before))
			if ok != tc.fast {
				t.Fatalf("fast path took it: %v, want %v", ok, tc.fast)
			}
			if !ok && !slices.Equal(got, before) {
				t.Fatalf("a refusal changed dst: %v", got)
			}
			if ok {
				want, kind, err := decodeKafkaJSON([]byte(tc.value), slices.Clone(before))
				if err != nil || !slices.EqualFunc(got, want, sameObservation) {
					t.Fatalf("fast %v, encoding/json %v (%s %v)", got, want, kind, err)
				}
			}
		})
	}
}

// Whatever the fast decoder accepts, encoding/json decodes to the same
// observations.
func FuzzKafkaFastDecode(f *testing.F) {
	for _, s := range []string{
		`{"project_id":7,"dataPointID":"a","time":"2026-03-01T12:30:00Z","value":1.5}`,
		`[{"value":-0,"time":"2026-03-01T12:30:00.5+02:00","dataPointID":"x/y","project_id":123456789012345678}]`,
		`[]`, `{"project_id":1e2}`, `[{"dataPointID":"é"}]`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, value []byte) {
		fast, ok := decodeKafkaFast(value, nil)
		if !ok {
			return
		}
		slow, kind, err := decodeKafkaJSON(value, nil)
		if err != nil {
			t.Fatalf("fast path took %q, encoding/json refuses it: %s %v", value, kind, err)
		}
		if !slices.EqualFunc(fast, slow, sameObservation) {
			t.Fatalf("%q: fast %v, encoding/json %v", value, fast, slow)
		}
	})
}

// One gateway message of 50 observations, as bdp-bench ingest sends them.
func BenchmarkKafkaDecode(b *testing.B) {
	var parts []string
	t0 := time.Date(2026, 3, 1, 0, 0, 0, 0, time.UTC)
	for i := range 50 {
		parts = append(parts, fmt.Sprintf(`{"project_id":1,"dataPointID":"gw1/dp00042","time":%q,"value":%g}`,
			t0.Add(time.Duration(i)*time.Minute).Format(time.RFC3339), float64(i)/7))
	}
	msg := []byte("[" + strings.Join(parts, ",") + "]")
	for _, d := range []struct {
		name   string
		decode func([]byte, []KafkaObservation) ([]KafkaObservation, Refusal, error)
	}{{"fast", DecodeKafka}, {"encoding-json", decodeKafkaJSON}} {
		b.Run(d.name, func(b *testing.B) {
			b.ReportAllocs()
			dst := make([]KafkaObservation, 0, 50)
			for b.Loop() {
				out, _, err := d.decode(msg, dst[:0])
				if err != nil || len(out) != 50 {
					b.Fatal(len(out), err)
				}
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/50, "ns/obs")
		})
	}
}
