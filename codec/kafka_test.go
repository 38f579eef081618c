package codec

import (
	"slices"
	"strings"
	"testing"
	"time"
)

func TestKafkaDecode(t *testing.T) {
	t0 := time.Date(2026, 3, 1, 12, 30, 0, 0, time.UTC)
	obs := func(p int64, dp string, tm time.Time, v float64) KafkaObservation {
		return KafkaObservation{ProjectID: p, DataPointID: dp, Time: tm, Value: v}
	}
	for _, tc := range []struct {
		name  string
		value string
		want  []KafkaObservation
		kind  Refusal // "" when it decodes
		err   string  // part of the reason
	}{
		{name: "object", value: `{"project_id": 7, "dataPointID": "room 1/temp", "time": "2026-03-01T12:30:00Z", "value": 21.5}`,
			want: []KafkaObservation{obs(7, "room 1/temp", t0, 21.5)}},
		{name: "object with an offset and nanoseconds", value: `{"project_id":7,"dataPointID":"a","time":"2026-03-01T14:30:00.123456789+02:00","value":-1e-3}`,
			want: []KafkaObservation{obs(7, "a", t0.Add(123456789), -0.001)}},
		{name: "leading whitespace, unknown fields, integer value", value: " \n{\"project_id\":1,\"dataPointID\":\"a\",\"time\":\"2026-03-01T12:30:00Z\",\"value\":3,\"unit\":\"K\"}",
			want: []KafkaObservation{obs(1, "a", t0, 3)}},
		{name: "escaped and unicode dataPointID", value: `{"project_id":1,"dataPointID":"T\u00e4 \"x\"/°C","time":"2026-03-01T12:30:00Z","value":1}`,
			want: []KafkaObservation{obs(1, `Tä "x"/°C`, t0, 1)}},
		{name: "array", value: `[{"project_id":1,"dataPointID":"a","time":"2026-03-01T12:30:00Z","value":1},{"project_id":2,"dataPointID":"b","time":"2026-03-01T12:30:01Z","value":2}]`,
			want: []KafkaObservation{obs(1, "a", t0, 1), obs(2, "b", t0.Add(time.Second), 2)}},
		{name: "empty array", value: `[]`, want: nil},

		{name: "empty", value: ``, kind: Malformed, err: "empty message"},
		{name: "not JSON", value: `hello`, kind: Malformed, err: "not a JSON object or array"},
		{name: "truncated", value: `{"project_id":1,`, kind: Malformed, err: "malformed JSON"},
		{name: "NaN literal", value: `{"project_id":1,"dataPointID":"a","time":"2026-03-01T12:30:00Z","value":NaN}`, kind: Malformed, err: "malformed JSON"},
		{name: "NaN string", value: `{"project_id":1,"dataPointID":"a","time":"2026-03-01T12:30:00Z","value":"NaN"}`, kind: Malformed, err: "value: want a number"},
		{name: "numeric string value", value: `{"project_id":1,"dataPointID":"a","time":"2026-03-01T12:30:00Z","value":"1.5"}`, kind: Malformed, err: "value: want a number"},
		{name: "infinite value", value: `{"project_id":1,"dataPointID":"a","time":"2026-03-01T12:30:00Z","value":1e999}`, kind: Malformed, err: "not a finite"},
		{name: "null", value: `null`, kind: Malformed, err: "not a JSON object or array"},
		{name: "number", value: `42`, kind: Malformed, err: "not a JSON object or array"},
		{name: "array of numbers", value: `[1]`, kind: Malformed, err: "got a number"},
		{name: "nested array", value: `[[]]`, kind: Malformed, err: "got an array"},
		{name: "missing project_id", value: `{"dataPointID":"a","time":"2026-03-01T12:30:00Z","value":1}`, kind: Malformed, err: "project_id is missing"},
		{name: "missing dataPointID", value: `{"project_id":1,"time":"2026-03-01T12:30:00Z","value":1}`, kind: Malformed, err: "dataPointID is missing"},
		{name: "missing time", value: `{"project_id":1,"dataPointID":"a","value":1}`, kind: Malformed, err: "time is missing"},
		{name: "missing value", value: `{"project_id":1,"dataPointID":"a","time":"2026-03-01T12:30:00Z"}`, kind: Malformed, err: "value is missing"},
		{name: "null value", value: `{"project_id":1,"dataPointID":"a","time":"2026-03-01T12:30:00Z","value":null}`, kind: Malformed, err: "value is missing"},
		{name: "string project_id", value: `{"project_id":"1","dataPointID":"a","time":"2026-03-01T12:30:00Z","value":1}`, kind: Malformed, err: "project_id: want an integer"},
		{name: "fractional project_id", value: `{"project_id":1.5,"dataPointID":"a","time":"2026-03-01T12:30:00Z","value":1}`, kind: Malformed, err: "project_id: want an integer"},
		{name: "numeric time", value: `{"project_id":1,"dataPointID":"a","time":1700000000,"value":1}`, kind: Malformed, err: "want a string"},
		{name: "zero project_id", value: `{"project_id":0,"dataPointID":"a","time":"2026-03-01T12:30:00Z","value":1}`, kind: Invalid, err: "not positive"},
		{name: "time without zone", value: `{"project_id":1,"dataPointID":"a","time":"2026-03-01T12:30:00","value":1}`, kind: Invalid, err: "not RFC 3339"},
		{name: "bad time", value: `{"project_id":1,"dataPointID":"a","time":"yesterday","value":1}`, kind: Invalid, err: "not RFC 3339"},
		{name: "year out of range", value: `{"project_id":1,"dataPointID":"a","time":"1800-01-01T00:00:00Z","value":1}`, kind: Invalid, err: "outside the years"},
		{name: "empty dataPointID", value: `{"project_id":1,"dataPointID":"","time":"2026-03-01T12:30:00Z","value":1}`, kind: Invalid, err: "1 to 512 bytes"},
		{name: "backslash in dataPointID", value: `{"project_id":1,"dataPointID":"a\\b","time":"2026-03-01T12:30:00Z","value":1}`, kind: Invalid, err: "backslash"},
		{name: "one bad element refuses the array", value: `[{"project_id":1,"dataPointID":"a","time":"2026-03-01T12:30:00Z","value":1},{"project_id":1,"dataPointID":"a","time":"bad","value":1}]`,
			kind: Invalid, err: "element 1: time"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			prefix := []KafkaObservation{obs(99, "before", t0, 0)}
			got, kind, err := DecodeKafka([]byte(tc.value), slices.Clone(prefix))
			if kind != tc.kind {
				t.Fatalf("kind %q (err %v), want %q", kind, err, tc.kind)
			}
			if tc.kind != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("err %v, want one containing %q", err, tc.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if !slices.Equal(got[:1], prefix) {
				t.Fatalf("the observations before were changed: %v", got[:1])
			}
			if got := got[1:]; !slices.EqualFunc(got, tc.want, sameObservation) {
				t.Fatalf("got %v, want %v", got, tc.want)
			}
		})
	}
}

func sameObservation(a, b KafkaObservation) bool {
	return a.ProjectID == b.ProjectID && a.DataPointID == b.DataPointID && a.Time.Equal(b.Time) &&
		a.Value == b.Value && a.Time.Location() == time.UTC
}

// FuzzDecodeKafka: whatever a message holds, decoding does not panic, what
// it accepts is valid and in UTC and follows dst untouched, and what it
// refuses is refused as malformed or invalid, with a reason.
func FuzzDecodeKafka(f *testing.F) {
	for _, s := range []string{
		`{"project_id":7,"dataPointID":"a","time":"2026-03-01T12:30:00Z","value":1.5}`,
		`[{"project_id":1,"dataPointID":"T\u00e4","time":"2026-03-01t12:30:00z","value":-1e-3,"unit":"K"}]`,
		`{"project_id":0,"dataPointID":"a","time":"2026-03-01T12:30:00Z","value":1}`,
		`[{"project_id":1,"dataPointID":"a","time":"1800-01-01T00:00:00Z","value":1}]`,
		`{"project_id":1}`, `[[]]`, `null`, ``, `[`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, value []byte) {
		before := KafkaObservation{ProjectID: 99, DataPointID: "before"}
		got, refusal, err := DecodeKafka(value, []KafkaObservation{before})
		if err != nil {
			if refusal != Malformed && refusal != Invalid || err.Error() == "" {
				t.Fatalf("%q: refusal %q, %v", value, refusal, err)
			}
			return
		}
		if refusal != "" || len(got) == 0 || got[0] != before {
			t.Fatalf("%q: refusal %q, dst %v", value, refusal, got)
		}
		for _, o := range got[1:] {
			if o.ProjectID <= 0 || o.Time.Location() != time.UTC || Validate(o.DataPointID, o.Time, o.Value) != nil {
				t.Fatalf("%q: accepted %+v", value, o)
			}
		}
	})
}
