package window

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"
)

func TestParseRange(t *testing.T) {
	day := 24 * time.Hour
	cases := []struct {
		name                string
		count               any
		dur, start, end     string
		want                Range
		field, errSubstring string // expected error field and text
	}{
		{name: "default count 1", want: Range{Count: 1}},
		{name: "int", count: 10, want: Range{Count: 10}},
		{name: "int64", count: int64(3), want: Range{Count: 3}},
		{name: "json float", count: 10.0, want: Range{Count: 10}},
		{name: "json.Number", count: json.Number("7"), want: Range{Count: 7}},
		{name: "numeric string", count: "10", want: Range{Count: 10}},
		{name: "numeric string spaced", count: " 5 ", want: Range{Count: 5}},
		{name: "max count", count: MaxObservations, want: Range{Count: MaxObservations}},
		{name: "zero count", count: 0, field: "data_range.count", errSubstring: "between 1"},
		{name: "negative count", count: -1, field: "data_range.count"},
		{name: "fractional count", count: 2.5, field: "data_range.count", errSubstring: "whole"},
		{name: "too large count", count: MaxObservations + 1, field: "data_range.count"},
		{name: "bad string", count: "ten", field: "data_range.count", errSubstring: "not a number"},
		{name: "empty string", count: "", field: "data_range.count"},
		{name: "bool", count: true, field: "data_range.count", errSubstring: "bool"},

		{name: "60s", dur: "60s", want: Range{Duration: time.Minute}},
		{name: "15m", dur: "15m", want: Range{Duration: 15 * time.Minute}},
		{name: "24h", dur: "24h", want: Range{Duration: day}},
		{name: "1d", dur: "1d", want: Range{Duration: day}},
		{name: "2w", dur: "2w", want: Range{Duration: 14 * day}},
		{name: "366d", dur: "366d", want: Range{Duration: MaxDuration}},
		{name: "go syntax", dur: "1h30m", want: Range{Duration: 90 * time.Minute}},
		{name: "1s", dur: "1s", want: Range{Duration: time.Second}},
		{name: "no unit", dur: "60", field: "data_range.time"},
		{name: "zero", dur: "0s", field: "data_range.time"},
		{name: "sub-second", dur: "500ms", field: "data_range.time"},
		{name: "367d", dur: "367d", field: "data_range.time"},
		{name: "overflow", dur: "99999999999999999d", field: "data_range.time"},
		{name: "negative", dur: "-5m", field: "data_range.time"},
		{name: "garbage", dur: "soon", field: "data_range.time"},

		{name: "cron", start: "0 8 * * *", end: "0 18 * * *", want: Range{CronStart: "0 8 * * *", CronEnd: "0 18 * * *"}},
		{name: "cron spaces normalised", start: " 0  8 * * 1-5", end: "0 18 * * 1-5 ", want: Range{CronStart: "0 8 * * 1-5", CronEnd: "0 18 * * 1-5"}},
		{name: "cron leap day", start: "0 0 29 2 *", end: "0 0 1 3 *", want: Range{CronStart: "0 0 29 2 *", CronEnd: "0 0 1 3 *"}},
		{name: "start only", start: "0 8 * * *", field: "data_range.end", errSubstring: "required"},
		{name: "end only", end: "0 8 * * *", field: "data_range.start", errSubstring: "required"},
		{name: "six fields", start: "0 0 8 * * *", end: "0 18 * * *", field: "data_range.start", errSubstring: "five fields"},
		{name: "macro", start: "@daily", end: "0 18 * * *", field: "data_range.start"},
		{name: "invalid", start: "0 8 * * *", end: "61 18 * * *", field: "data_range.end", errSubstring: "not a valid"},
		{name: "never fires", start: "0 0 31 2 *", end: "0 18 * * *", field: "data_range.start", errSubstring: "never"},

		{name: "count and time", count: 5, dur: "1h", field: "data_range", errSubstring: "only one"},
		{name: "time and cron", dur: "1h", start: "0 8 * * *", end: "0 9 * * *", field: "data_range"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got, err := ParseRange(c.count, c.dur, c.start, c.end)
			if c.field == "" {
				if err != nil || got != c.want {
					t.Fatalf("got %+v, %v; want %+v", got, err, c.want)
				}
				if _, err := NewWindow(got); err != nil {
					t.Fatalf("NewWindow(%+v): %v", got, err)
				}
				return
			}
			var fe *FieldError
			if !errors.As(err, &fe) || fe.Field != c.field {
				t.Fatalf("got %+v, %v; want a FieldError on %s", got, err, c.field)
			}
			if !strings.Contains(err.Error(), c.errSubstring) || !strings.HasPrefix(err.Error(), c.field+": ") {
				t.Fatalf("error %q: want prefix %q and %q in it", err, c.field, c.errSubstring)
			}
		})
	}
}

// NewWindow validates hand-made Ranges, so a window never runs on one with
// no kind or two.
func TestNewWindowRejects(t *testing.T) {
	for _, r := range []Range{
		{},
		{Count: -3},
		{Count: 2, Duration: time.Hour},
		{Duration: time.Millisecond},
		{CronStart: "0 8 * * *"},
		{CronStart: "0 8 * * *", CronEnd: "nonsense"},
	} {
		if w, err := NewWindow(r); err == nil {
			t.Errorf("NewWindow(%+v) = %v, want an error", r, w)
		}
		if p, err := NewPin(r, Max, EveryValue); err == nil {
			t.Errorf("NewPin(%+v) = %v, want an error", r, p)
		}
	}
}

// Parsing a schedule of every day is cheap: the probe that a schedule
// ever fires is left out when any day of any month fires (a restart
// parses the ranges of every running datapoint).
func BenchmarkParseCronEveryDay(b *testing.B) {
	for b.Loop() {
		if _, err := parseCron("start", "*/5 * * * *"); err != nil {
			b.Fatal(err)
		}
	}
}
