package window

import (
	"slices"
	"testing"
	"time"
)

func TestParseTrigger(t *testing.T) {
	for in, want := range map[string]Trigger{
		"": EveryValue, "every_value": EveryValue, "EVERY_MINUTE": EveryMinute, " every_hour ": EveryHour,
	} {
		if got, err := ParseTrigger(in); err != nil || got != want {
			t.Errorf("ParseTrigger(%q) = %q, %v", in, got, err)
		}
	}
	for _, in := range []string{"every_second", "hourly", "every_day"} {
		if _, err := ParseTrigger(in); err == nil || err.Error()[:8] != "trigger:" {
			t.Errorf("ParseTrigger(%q): %v, want an error on trigger", in, err)
		}
	}
}

func TestDueAndNext(t *testing.T) {
	berlin := time.FixedZone("CET", 3600)
	cases := []struct {
		tr        Trigger
		t         time.Time
		due       bool
		next      time.Time
		nextValid bool
	}{
		{EveryMinute, at(5 * min_), true, at(6 * min_), true},
		{EveryMinute, at(5*min_ + 1), false, at(6 * min_), true},
		{EveryMinute, at(5*min_ - 1), false, at(5 * min_), true},
		{EveryHour, at(2 * hr), true, at(3 * hr), true},
		{EveryHour, at(2*hr + min_), false, at(3 * hr), true},
		{EveryHour, at(2 * hr).In(berlin), true, at(3 * hr), true}, // location does not matter
		{EveryHour, time.Date(2024, 1, 1, 5, 30, 0, 0, time.FixedZone("IST", 5*3600+1800)), true, at(1 * hr), true},
		{EveryValue, at(0), false, time.Time{}, false},
	}
	for _, c := range cases {
		if got := c.tr.Due(c.t); got != c.due {
			t.Errorf("%s.Due(%v) = %v", c.tr, c.t, got)
		}
		next, ok := c.tr.Next(c.t)
		if ok != c.nextValid || !next.Equal(c.next) || (ok && next.Location() != time.UTC) {
			t.Errorf("%s.Next(%v) = %v, %v; want %v", c.tr, c.t, next, ok, c.next)
		}
	}
	if EveryValue.Timed() || !EveryMinute.Timed() || !EveryHour.Timed() {
		t.Error("Timed")
	}
}

// Prev is the last boundary strictly before a time: a catch-up looks back
// from its warm-up start for what a timed pin held.
func TestPrev(t *testing.T) {
	cases := []struct {
		tr   Trigger
		t    time.Time
		prev time.Time
		ok   bool
	}{
		{EveryMinute, at(5 * min_), at(4 * min_), true}, // on a boundary: the one before
		{EveryMinute, at(5*min_ + 1), at(5 * min_), true},
		{EveryMinute, at(5*min_ - 1), at(4 * min_), true},
		{EveryHour, at(2 * hr), at(1 * hr), true},
		{EveryHour, at(2*hr + min_), at(2 * hr), true},
		{EveryValue, at(0), time.Time{}, false},
	}
	for _, c := range cases {
		prev, ok := c.tr.Prev(c.t)
		if ok != c.ok || !prev.Equal(c.prev) {
			t.Errorf("%s.Prev(%v) = %v, %v; want %v", c.tr, c.t, prev, ok, c.prev)
		}
	}
}

func TestBoundaries(t *testing.T) {
	cases := []struct {
		name     string
		tr       Trigger
		from, to time.Time
		want     []time.Time
	}{
		{"minutes in (from, to]", EveryMinute, at(30 * sec), at(3 * min_),
			[]time.Time{at(min_), at(2 * min_), at(3 * min_)}},
		{"from on a boundary is excluded", EveryMinute, at(min_), at(2*min_ + 59*sec),
			[]time.Time{at(2 * min_)}},
		{"hours across midnight", EveryHour, at(22*hr + 1), at(25 * hr),
			[]time.Time{at(23 * hr), at(24 * hr), at(25 * hr)}},
		{"none inside", EveryHour, at(hr + 1), at(2*hr - 1), nil},
		{"empty interval", EveryMinute, at(hr), at(hr), nil},
		{"to before from", EveryMinute, at(hr), at(0), nil},
		{"every_value has none", EveryValue, at(0), at(hr), nil},
	}
	for _, c := range cases {
		got := slices.Collect(Boundaries(c.tr, c.from, c.to))
		if !slices.EqualFunc(got, c.want, time.Time.Equal) {
			t.Errorf("%s: %v, want %v", c.name, got, c.want)
		}
	}
	// Early stop.
	n := 0
	for range Boundaries(EveryMinute, at(0), at(24*hr)) {
		if n++; n == 3 {
			break
		}
	}
	if n != 3 {
		t.Errorf("stopped after %d", n)
	}
	// A day of minutes.
	if n := len(slices.Collect(Boundaries(EveryMinute, at(0), at(24*hr)))); n != 1440 {
		t.Errorf("a day has %d minute boundaries", n)
	}
}
