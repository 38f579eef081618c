package pipeline

import (
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"
)

// The Kafka consumer's decode step: codec's observations become the
// pipeline's, appended after what the batch holds; a refused message
// leaves the batch as it was and says why with the DLQ's kind. One
// decoder serves every message of a batch, so a later message must not
// change the observations of an earlier one.
func TestKafkaDecoder(t *testing.T) {
	t0 := time.Date(2026, 3, 1, 12, 30, 0, 0, time.UTC)
	before := Observation{ProjectID: 99, DataPointID: "before", Time: t0, Value: 0}
	var d kafkaDecoder
	dst := []Observation{before}
	for _, tc := range []struct {
		value string
		want  []Observation // appended
		kind  string
		err   string
	}{
		{value: `[{"project_id":7,"dataPointID":"a","time":"2026-03-01T14:30:00+02:00","value":1.5},{"project_id":8,"dataPointID":"b","time":"2026-03-01T12:30:01Z","value":-2}]`,
			want: []Observation{{7, "a", t0, 1.5}, {8, "b", t0.Add(time.Second), -2}}},
		{value: `{"project_id":7,"dataPointID":"a\"b","time":"2026-03-01T12:30:00Z","value":3,"unit":"K"}`, // encoding/json's path
			want: []Observation{{7, `a"b`, t0, 3}}},
		{value: `[{"project_id":1,"dataPointID":"c","time":"2026-03-01T12:30:00Z","value":1},{"project_id":1}]`, kind: KafkaMalformed, err: "element 1: dataPointID is missing"},
		{value: `{"project_id":1,"dataPointID":"c","time":"yesterday","value":1}`, kind: KafkaInvalid, err: "not RFC 3339"},
		{value: `{"project_id":1,"dataPointID":"c","time":"2026-03-01T12:30:00Z","value":4}`,
			want: []Observation{{1, "c", t0, 4}}},
	} {
		n := len(dst)
		kept := slices.Clone(dst)
		var kind string
		var err error
		dst, kind, err = d.decode([]byte(tc.value), dst)
		if kind != tc.kind || (err == nil) != (tc.err == "") || err != nil && !strings.Contains(err.Error(), tc.err) {
			t.Fatalf("%s: kind %q err %v, want %q %q", tc.value, kind, err, tc.kind, tc.err)
		}
		if !slices.EqualFunc(dst[:n], kept, sameObservation) {
			t.Fatalf("%s: the observations before changed: %v, were %v", tc.value, dst[:n], kept)
		}
		if got := dst[n:]; !slices.EqualFunc(got, tc.want, sameObservation) {
			t.Fatalf("%s: appended %v, want %v", tc.value, got, tc.want)
		}
	}
	if len(dst) != 5 {
		t.Fatalf("%d observations, want 5: %v", len(dst), dst)
	}
}

func sameObservation(a, b Observation) bool {
	return a.ProjectID == b.ProjectID && a.DataPointID == b.DataPointID && a.Time.Equal(b.Time) &&
		a.Value == b.Value && a.Time.Location() == time.UTC
}

// One gateway message of 50 observations, as bdp-bench ingest sends them,
// through the consumer's decode step (codec's BenchmarkKafkaDecode is the
// decoder alone).
func BenchmarkKafkaDecode(b *testing.B) {
	var parts []string
	t0 := time.Date(2026, 3, 1, 0, 0, 0, 0, time.UTC)
	for i := range 50 {
		parts = append(parts, fmt.Sprintf(`{"project_id":1,"dataPointID":"gw1/dp00042","time":%q,"value":%g}`,
			t0.Add(time.Duration(i)*time.Minute).Format(time.RFC3339), float64(i)/7))
	}
	msg := []byte("[" + strings.Join(parts, ",") + "]")
	b.Run("fast", func(b *testing.B) {
		b.ReportAllocs()
		var d kafkaDecoder
		dst := make([]Observation, 0, 50)
		for b.Loop() {
			out, _, err := d.decode(msg, dst[:0])
			if err != nil || len(out) != 50 {
				b.Fatal(len(out), err)
			}
		}
		b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/50, "ns/obs")
	})
}
