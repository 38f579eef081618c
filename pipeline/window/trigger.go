package window

import (
	"iter"
	"strings"
	"time"
)

// Trigger says when a pin emits its aggregate into the calculation (api.md
// 2.11).
type Trigger string

// The triggers. Timed triggers fire at the UTC minute or hour boundaries:
// the platform stores UTC and has no project time zone, and every UTC hour
// is a whole hour in all but the few half-hour-offset zones.
const (
	EveryValue  Trigger = "every_value"  // on every observation the window keeps
	EveryMinute Trigger = "every_minute" // at hh:mm:00.000 UTC
	EveryHour   Trigger = "every_hour"   // at hh:00:00.000 UTC
)

// DefaultTrigger is the trigger of a pin that names none (api.md 2.11).
const DefaultTrigger = EveryValue

// ParseTrigger validates a pin's trigger, ignoring case and surrounding
// space; "" is the default, every_value.
func ParseTrigger(s string) (Trigger, error) {
	s = strings.ToLower(strings.TrimSpace(s))
	if s == "" {
		return DefaultTrigger, nil
	}
	switch t := Trigger(s); t {
	case EveryValue, EveryMinute, EveryHour:
		return t, nil
	}
	return "", fieldErr("trigger", "%q is not one of every_value, every_minute, every_hour", s)
}

// spacing is the distance between a timed trigger's boundaries; 0 for every_value.
func (t Trigger) spacing() time.Duration {
	switch t {
	case EveryMinute:
		return time.Minute
	case EveryHour:
		return time.Hour
	}
	return 0
}

// Timed reports whether t fires at clock boundaries rather than on data.
func (t Trigger) Timed() bool { return t.spacing() > 0 }

// Due reports whether at is one of t's boundaries: a whole UTC minute for
// every_minute, a whole UTC hour for every_hour, to the nanosecond. A timer
// that wakes a little late must pass the boundary it was set for (Next),
// not the time it woke. every_value is never due.
func (t Trigger) Due(at time.Time) bool {
	p := t.spacing()
	// Truncate works on the absolute time since year 1, which is aligned to
	// UTC minutes and hours whatever at's location.
	return p > 0 && at.Truncate(p).Equal(at)
}

// Next is the first boundary of t strictly after after, in UTC: the time a
// live actor sets its timer for. ok is false for every_value.
func (t Trigger) Next(after time.Time) (next time.Time, ok bool) {
	p := t.spacing()
	if p == 0 {
		return time.Time{}, false
	}
	return after.UTC().Truncate(p).Add(p), true
}

// Prev is the last boundary of t strictly before before, in UTC; ok is
// false for every_value.
func (t Trigger) Prev(before time.Time) (prev time.Time, ok bool) {
	p := t.spacing()
	if p == 0 {
		return time.Time{}, false
	}
	b := before.UTC().Truncate(p)
	if b.Equal(before) {
		b = b.Add(-p)
	}
	return b, true
}

// Boundaries yields t's boundaries in (from, to], oldest first: the
// boundaries an exact recompute over that interval fires, and those a live
// actor missed while stopped. An iterator rather than a slice, since a year
// of minutes is half a million of them. every_value yields nothing.
func Boundaries(t Trigger, from, to time.Time) iter.Seq[time.Time] {
	return func(yield func(time.Time) bool) {
		b, ok := t.Next(from)
		if !ok {
			return
		}
		for p := t.spacing(); !b.After(to); b = b.Add(p) {
			if !yield(b) {
				return
			}
		}
	}
}
