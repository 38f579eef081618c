package export

import (
	"net/url"
	"testing"
	"time"

	"github.com/openbdp/bdp/fault"
	"github.com/openbdp/bdp/store"
)

func parse(t *testing.T, kv ...string) (Query, error) {
	t.Helper()
	v := url.Values{"dataPointID": {"dp"}}
	for i := 0; i+1 < len(kv); i += 2 {
		v.Set(kv[i], kv[i+1])
	}
	return ParseQuery(v.Get)
}

// Every refusal is Invalid and names what is wrong, the first in the
// parameters' order.
func TestParseQueryRefusals(t *testing.T) {
	tests := []struct {
		name string
		kv   []string
		want string
	}{
		{"no datapoint", []string{"dataPointID", ""}, "dataPointID is required"},
		{"bad datapoint", []string{"dataPointID", `a\b`}, ""},
		{"bad start", []string{"start", "yesterday"}, `start must be a date (2024-03-01) or an RFC 3339 date-time (2024-03-01T12:00:00Z), got "yesterday"`},
		{"start after end", []string{"start", "2024-03-02", "end", "2024-03-01"},
			"start (2024-03-02T00:00:00Z) must be before end (2024-03-01T00:00:00Z)"},
		{"max", []string{"max", "-1"}, `max must be an integer >= 0, got "-1"`},
		{"samplerate", []string{"samplerate", "5w"}, `samplerate must be an integer followed by s, m, h or d (10s, 2m, 1h, 7d), or auto; got "5w"`},
		{"samplerate too long", []string{"samplerate", "3651d"}, `samplerate must be between 0s and 3650d, got "3651d"`},
		{"aggregation unsampled", []string{"aggregation", "max"}, `aggregation "max" needs a samplerate above 0s`},
		{"aggregation at 0s", []string{"samplerate", "0s", "aggregation", "max"}, `aggregation "max" needs a samplerate above 0s`},
		{"aggregation unknown", []string{"samplerate", "1h", "aggregation", "sum"},
			`aggregation must be one of mean, min, max, median, count, mode, distinct; got "sum"`},
		{"interpolation", []string{"interpolation", "spline"}, `interpolation must be one of none, null, previous, linear; got "spline"`},
		{"interpolation with distinct", []string{"samplerate", "1h", "aggregation", "distinct", "interpolation", "linear"},
			"interpolation linear does not go with aggregation distinct (several values per interval); use null or none"},
		{"short", []string{"short", "yes"}, `short must be true or false, got "yes"`},
		{"closed and sampled", []string{"closed_interval", "1", "start", "2024-03-01", "samplerate", "auto"},
			"closed_interval applies to observations, not to a down-sampled read: drop samplerate or closed_interval"},
		{"closed without a side", []string{"closed_interval", "true"}, "closed_interval needs start or end"},
		{"an instant, not closed", []string{"start", "2024-03-01", "end", "2024-03-01"},
			"start (2024-03-01T00:00:00Z) must be before end; equal to it only with closed_interval=true, which answers the value at that instant"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := parse(t, tt.kv...)
			if !fault.Is(err, fault.Invalid) || (tt.want != "" && fault.Message(err) != tt.want) {
				t.Fatalf("error %v (%s), want Invalid %q", err, fault.KindOf(err), tt.want)
			}
		})
	}
}

func TestParseQuery(t *testing.T) {
	day := time.Date(2024, 3, 1, 0, 0, 0, 0, time.UTC)
	tests := []struct {
		name string
		kv   []string
		want Query
	}{
		{"defaults", nil, Query{DataPointID: "dp", Max: DefaultMax, Agg: store.Mean, Interp: InterpNone}},
		{"window and max", []string{"start", "2024-03-01", "end", "2024-03-02T00:00:00+01:00", "max", "0"},
			Query{DataPointID: "dp", Start: day, End: day.Add(23 * time.Hour), Agg: store.Mean, Interp: InterpNone}},
		{"sampled", []string{"samplerate", "15m", "aggregation", "MEDIAN", "interpolation", "Previous"},
			Query{DataPointID: "dp", Max: DefaultMax, Every: 15 * time.Minute, Agg: store.Median, Interp: InterpPrevious}},
		{"auto", []string{"samplerate", "AUTO"}, Query{DataPointID: "dp", Max: DefaultMax, Auto: true, Agg: store.Mean, Interp: InterpNone}},
		{"0s is unsampled", []string{"samplerate", "0d"}, Query{DataPointID: "dp", Max: DefaultMax, Agg: store.Mean, Interp: InterpNone}},
		{"conversion and short", []string{"units", "kW", "units_system", "SI", "currency_system", "USD", "short", "1"},
			Query{DataPointID: "dp", Max: DefaultMax, Agg: store.Mean, Interp: InterpNone, Units: "kW", UnitsSystem: "SI",
				CurrencySystem: "USD", Short: true}},
		{"an instant, closed", []string{"start", "2024-03-01", "end", "2024-03-01", "closed_interval", "true"},
			Query{DataPointID: "dp", Start: day, End: day, Max: DefaultMax, Agg: store.Mean, Interp: InterpNone, Closed: true}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := parse(t, tt.kv...)
			if err != nil {
				t.Fatal(err)
			}
			if got != tt.want {
				t.Fatalf("got %+v\nwant %+v", got, tt.want)
			}
		})
	}
}

func TestParseTime(t *testing.T) {
	at := time.Date(2024, 3, 1, 12, 30, 0, 0, time.UTC)
	tests := []struct {
		raw  string
		want time.Time
	}{
		{"", time.Time{}},
		{"2024-03-01", time.Date(2024, 3, 1, 0, 0, 0, 0, time.UTC)},
		{"2024-03-01T12:30:00Z", at},
		{"2024-03-01 12:30:00z", at},
		{"2024-03-01t12:30", at},
		{"2024-03-01T13:30:00+01:00", at},
		{"2024-03-01T13:30:00 01:00", at}, // a + decoded to a space
		{"2024-03-01T13:30:00+0100", at},
		{"2024-03-01T13:30:00+01", at},
		{"2024-03-01T13:30+01:00", at},
		{" 2024-03-01T12:30:00.5 ", at.Add(500 * time.Millisecond)},
	}
	for _, tt := range tests {
		got, err := ParseTime("start", tt.raw)
		if err != nil || !got.Equal(tt.want) || got.Location() != time.UTC {
			t.Errorf("%q: %v %v, want %v", tt.raw, got, err, tt.want)
		}
	}
	if _, err := ParseTime("end", "01.03.2024"); !fault.Is(err, fault.Invalid) {
		t.Fatalf("a German date: %v", err)
	}
}
