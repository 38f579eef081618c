package codec

import (
	"encoding/json"
	"maps"
	"slices"
	"strconv"
	"testing"
	"time"
)

// scanAll collects what ScanUpload reads, by dataPointID.
func scanAll(body []byte) (map[string][]TimeValue, bool) {
	got := map[string][]TimeValue{}
	var dp string
	ok := ScanUpload(body, func(id string) { dp = id; got[id] = []TimeValue{} },
		func(tv TimeValue) { got[dp] = append(got[dp], tv) })
	return got, ok
}

// decodeUploadJSON is the upload handler's encoding/json reading of a
// body: a map of arrays of {time, value}, times by ParseRFC3339 and values
// finite numbers.
func decodeUploadJSON(body []byte) (map[string][]TimeValue, bool) {
	var raw map[string][]struct {
		Time  string          `json:"time"`
		Value json.RawMessage `json:"value"`
	}
	if json.Unmarshal(body, &raw) != nil || raw == nil {
		return nil, false
	}
	out := map[string][]TimeValue{}
	for dp, points := range raw {
		if points == nil {
			return nil, false
		}
		out[dp] = []TimeValue{}
		for _, p := range points {
			t, err := ParseRFC3339(p.Time)
			if err != nil || len(p.Value) == 0 || p.Value[0] == '"' || p.Value[0] == 'n' {
				return nil, false
			}
			v, err := strconv.ParseFloat(string(p.Value), 64)
			if err != nil {
				return nil, false
			}
			out[dp] = append(out[dp], TimeValue{Time: t, Value: v})
		}
	}
	return out, true
}

func TestScanUpload(t *testing.T) {
	t0 := time.Date(2026, 11, 24, 6, 0, 0, 0, time.UTC)
	cases := []struct {
		name string
		body string
		want map[string][]TimeValue // nil: not read by the fast path
	}{
		{"empty object", ` { } `, map[string][]TimeValue{}},
		{"two datapoints, one empty", `{"a":[{"time":"2026-11-24T06:00:00Z","value":1.5},{"value":-2,"time":"2026-11-24T06:00:01Z"}], "b" : [ ]}`,
			map[string][]TimeValue{"a": {{t0, 1.5}, {t0.Add(time.Second), -2}}, "b": {}}},
		{"repeated dataPointID", `{"a":[],"a":[]}`, nil},
		{"escaped dataPointID", `{"a\u0041":[]}`, nil},
		{"unknown key in a point", `{"a":[{"time":"2026-11-24T06:00:00Z","value":1,"unit":"K"}]}`, nil},
		{"null series", `{"a":null}`, nil},
		{"string value", `{"a":[{"time":"2026-11-24T06:00:00Z","value":"1"}]}`, nil},
		{"bad time", `{"a":[{"time":"yesterday","value":1}]}`, nil},
		{"trailing garbage", `{"a":[]} x`, nil},
		{"trailing comma", `{"a":[{"time":"2026-11-24T06:00:00Z","value":1},]}`, nil},
		{"not an object", `[{"time":"2026-11-24T06:00:00Z","value":1}]`, nil},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got, ok := scanAll([]byte(c.body))
			if c.want == nil {
				if ok {
					t.Fatalf("read %v, want it left to encoding/json", got)
				}
				return
			}
			if !ok || !maps.EqualFunc(got, c.want, func(a, b []TimeValue) bool { return slices.EqualFunc(a, b, sameTimeValue) }) {
				t.Fatalf("got %v (%v), want %v", got, ok, c.want)
			}
		})
	}
}

// Whatever the fast path reads, encoding/json reads the same way.
func FuzzScanUpload(f *testing.F) {
	for _, s := range []string{
		`{"a":[{"time":"2026-11-24T06:00:00Z","value":1.5}],"b":[]}`, `{}`, `{"a":[],"a":[]}`,
		`{"é":[{"value":-0,"time":"2026-11-24t06:00:00.5z"}]}`, `{"a":[{"time":"2026-11-24T07:00:00+01:00","value":1e-400}]}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		fast, ok := scanAll(body)
		if !ok {
			return
		}
		slow, ok := decodeUploadJSON(body)
		if !ok {
			t.Fatalf("fast path took %q, encoding/json refuses it", body)
		}
		if !maps.EqualFunc(fast, slow, func(a, b []TimeValue) bool { return slices.EqualFunc(a, b, sameTimeValue) }) {
			t.Fatalf("%q: fast %v, encoding/json %v", body, fast, slow)
		}
	})
}
