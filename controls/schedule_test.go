package controls_test

import (
	"strings"
	"testing"
	"time"

	"github.com/openbdp/bdp/controls"
)

func TestParseScheduleRefusals(t *testing.T) {
	cases := []struct{ name, raw, want string }{
		{"not JSON", `monday 8-18`, "not a JSON list"},
		{"an object", `{"day":"monday"}`, "not a JSON list"},
		{"unknown field", `[{"day":"monday","start":"08:00","end":"18:00","value":21,"prio":1}]`, "not a JSON list"},
		{"unknown day", `[{"day":"funday","start":"08:00","end":"18:00","value":21}]`, "monday..sunday"},
		{"bad time", `[{"day":"monday","start":"8:00","end":"18:00","value":21}]`, "HH:MM"},
		{"past midnight", `[{"day":"monday","start":"08:00","end":"24:30","value":21}]`, "HH:MM"},
		{"reversed", `[{"day":"monday","start":"18:00","end":"08:00","value":21}]`, "not before end"},
		{"empty span", `[{"day":"monday","start":"08:00","end":"08:00","value":21}]`, "not before end"},
		{"overlap", `[{"day":"monday","start":"08:00","end":"12:00","value":21},{"day":"Monday","start":"11:59","end":"13:00","value":20}]`, "overlap"},
		{"data after the list", `[] []`, "data after the list"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, err := controls.ParseSchedule(tc.raw, nil, "")
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("got %v, want an error containing %q", err, tc.want)
			}
		})
	}
	// Touching entries and one ending at 24:00 are fine.
	if _, err := controls.ParseSchedule(`[{"day":"sunday","start":"12:00","end":"24:00","value":1},{"day":"sunday","start":"08:00","end":"12:00","value":2}]`, nil, ""); err != nil {
		t.Fatal(err)
	}
}

// Boundaries are wall-clock times of the schedule's zone: across the
// change to summer time the instant moves, the local time does not.
func TestScheduleAtAndNextInAZone(t *testing.T) {
	def := 16.0
	s, err := controls.ParseSchedule(`[{"day":"sunday","start":"08:00","end":"20:00","value":20},{"day":"monday","start":"06:00","end":"24:00","value":21}]`,
		&def, "Europe/Berlin")
	if err != nil {
		t.Fatal(err)
	}
	berlin, _ := time.LoadLocation("Europe/Berlin")
	// Saturday 28 March 2026, 12:00 in Berlin (winter time); summer time
	// starts on Sunday 29 March at 02:00.
	now := time.Date(2026, 3, 28, 12, 0, 0, 0, berlin)
	want := []struct {
		at    time.Time
		value float64
	}{
		{time.Date(2026, 3, 29, 8, 0, 0, 0, berlin), 20}, // 06:00 UTC (summer time)
		{time.Date(2026, 3, 29, 20, 0, 0, 0, berlin), 16},
		{time.Date(2026, 3, 30, 6, 0, 0, 0, berlin), 21},
		{time.Date(2026, 3, 31, 0, 0, 0, 0, berlin), 16}, // Monday's 24:00
		{time.Date(2026, 4, 5, 8, 0, 0, 0, berlin), 20},  // the next week
	}
	if v := s.At(now); v == nil || *v != 16 {
		t.Fatalf("value on Saturday: %v", v)
	}
	for _, w := range want {
		next, ok := s.Next(now)
		if !ok || !next.Equal(w.at) {
			t.Fatalf("after %s: next %s, want %s", now, next, w.at)
		}
		if v := s.At(next); v == nil || *v != w.value {
			t.Fatalf("at %s: %v, want %g", next, v, w.value)
		}
		now = next
	}
	if got := want[0].at.UTC().Hour(); got != 6 {
		t.Fatalf("Sunday 08:00 Berlin is %d:00 UTC, want 6 (summer time)", got)
	}
	// Without entries nothing changes: no timer.
	empty, _ := controls.ParseSchedule(`[]`, &def, "")
	if _, ok := empty.Next(now); ok {
		t.Fatal("an empty schedule has a boundary")
	}
}
