package kpi

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"
	// The schedule's time zone must resolve also where the host has no
	// zoneinfo (minimal containers).
	_ "time/tzdata"
)

// ErrInvalidSchedule is returned by ParseSchedule for a schedule attribute
// that does not follow the documented JSON form.
var ErrInvalidSchedule = errors.New("kpi: invalid schedule")

// Schedule is a weekly operating schedule in a time zone.
type Schedule struct {
	location *time.Location
	// days[time.Weekday] holds the [start, end) wall-clock intervals of
	// that day as minutes after midnight.
	days [7][]scheduleInterval
}

type scheduleInterval struct{ start, end int }

// ParseSchedule reads the schedule attribute, a JSON object with an IANA
// time zone and, per weekday, a list of [start, end) wall-clock times
// "HH:MM" (end may be "24:00"); a weekday left out has no operation:
//
//	{"time_zone": "Europe/Berlin",
//	 "monday": [["06:00", "12:00"], ["13:00", "18:00"]],
//	 "saturday": [["08:00", "12:00"]]}
//
// Weekday keys are the lower-case English names; an empty time_zone means
// UTC. Wall-clock times follow the zone's daylight saving time.
func ParseSchedule(raw []byte) (Schedule, error) {
	var doc map[string]json.RawMessage
	if err := json.Unmarshal(raw, &doc); err != nil {
		return Schedule{}, fmt.Errorf("%w: %w", ErrInvalidSchedule, err)
	}
	s := Schedule{location: time.UTC}
	for key, value := range doc {
		if key == "time_zone" {
			var zone string
			if err := json.Unmarshal(value, &zone); err != nil {
				return Schedule{}, fmt.Errorf("%w: time_zone: %w", ErrInvalidSchedule, err)
			}
			loc, err := time.LoadLocation(zone)
			if err != nil {
				return Schedule{}, fmt.Errorf("%w: time_zone %q: %w", ErrInvalidSchedule, zone, err)
			}
			s.location = loc
			continue
		}
		day, ok := weekdayByName(key)
		if !ok {
			return Schedule{}, fmt.Errorf("%w: unknown key %q (want time_zone or a weekday)", ErrInvalidSchedule, key)
		}
		var pairs [][2]string
		if err := json.Unmarshal(value, &pairs); err != nil {
			return Schedule{}, fmt.Errorf("%w: %s: %w", ErrInvalidSchedule, key, err)
		}
		for _, pair := range pairs {
			start, err1 := minuteOfDay(pair[0])
			end, err2 := minuteOfDay(pair[1])
			if err := errors.Join(err1, err2); err != nil {
				return Schedule{}, fmt.Errorf("%w: %s: %w", ErrInvalidSchedule, key, err)
			}
			if start >= end {
				return Schedule{}, fmt.Errorf("%w: %s: start %s is not before end %s", ErrInvalidSchedule, key, pair[0], pair[1])
			}
			s.days[day] = append(s.days[day], scheduleInterval{start: start, end: end})
		}
	}
	return s, nil
}

func weekdayByName(name string) (time.Weekday, bool) {
	for d := time.Sunday; d <= time.Saturday; d++ {
		if strings.ToLower(d.String()) == name {
			return d, true
		}
	}
	return 0, false
}

// minuteOfDay parses "HH:MM" from 00:00 to 24:00.
func minuteOfDay(hhmm string) (int, error) {
	var h, m int
	if n, err := fmt.Sscanf(hhmm, "%d:%d", &h, &m); err != nil || n != 2 || len(hhmm) != 5 ||
		h < 0 || m < 0 || m > 59 || h*60+m > 24*60 {
		return 0, fmt.Errorf("time %q is not HH:MM from 00:00 to 24:00", hhmm)
	}
	return h*60 + m, nil
}

// scheduledHours returns how many hours of [start, end) (Unix nanoseconds)
// the schedule covers, walking the local calendar days the span touches.
func (s Schedule) scheduledHours(start, end int64) float64 {
	from, to := time.Unix(0, start).In(s.location), time.Unix(0, end).In(s.location)
	y, m, d := from.Date()
	var covered int64
	for day := time.Date(y, m, d, 0, 0, 0, 0, s.location); day.Before(to); day = time.Date(y, m, d+1, 0, 0, 0, 0, s.location) {
		y, m, d = day.Date()
		for _, iv := range s.days[day.Weekday()] {
			a := time.Date(y, m, d, iv.start/60, iv.start%60, 0, 0, s.location).UnixNano()
			b := time.Date(y, m, d, iv.end/60, iv.end%60, 0, 0, s.location).UnixNano()
			if lo, hi := max(a, start), min(b, end); lo < hi {
				covered += hi - lo
			}
		}
	}
	return float64(covered) / nanosPerHour
}

// Schedule signal thresholds, as shares of the operating time in percent
// that lie outside the schedule.
const (
	scheduleGreenMaxOutside  = 5.0
	scheduleYellowMaxOutside = 20.0
)

// ScheduleCompliance finds operation outside a weekly schedule. The
// component counts as operating while its operating message (or power)
// pin is above 0.
//
// KPIs: "operating time" (h) and "operating time.relative" (% of the time
// with a value), the operation outside the schedule, "operation outside
// schedule" (h) and "operation outside schedule.relative" (% of the
// operating time), and the scheduled time without operation, "no operation
// inside schedule" (h).
//
// Signal color from the share of operation outside the schedule: at most
// 5 % green, at most 20 % yellow, above 20 % red (energy spent while the
// building is not in use). Grey when the period holds no data; green with
// zero shares when the component never ran.
func ScheduleCompliance(operating []Point, schedule Schedule, p Period) (Result, error) {
	segs, err := steps(operating, p)
	if err != nil {
		return Result{}, err
	}
	if len(segs) == 0 {
		return noData(), nil
	}
	var covered, onHours, onInside, offInside float64
	// Adjacent segments of one state are merged so the calendar walk runs
	// once per switching, not once per observation.
	for i := 0; i < len(segs); {
		on := segs[i].value > 0
		j := i
		for j+1 < len(segs) && segs[j+1].start == segs[j].end && (segs[j+1].value > 0) == on {
			j++
		}
		span := segment{start: segs[i].start, end: segs[j].end}
		h, inside := span.hours(), schedule.scheduledHours(span.start, span.end)
		covered += h
		if on {
			onHours += h
			onInside += inside
		} else {
			offInside += inside
		}
		i = j + 1
	}
	outside := onHours - onInside
	outsideShare := 0.0
	if onHours > 0 {
		outsideShare = percent(outside, onHours)
	}
	res := Result{KPIs: []KPI{
		{ID: "operating time", Value: onHours, Unit: "h"},
		{ID: "operating time.relative", Value: percent(onHours, covered), Unit: "%"},
		{ID: "operation outside schedule", Value: outside, Unit: "h"},
		{ID: "operation outside schedule.relative", Value: outsideShare, Unit: "%"},
		{ID: "no operation inside schedule", Value: offInside, Unit: "h"},
	}}
	res.Color = colorUpTo(outsideShare, scheduleGreenMaxOutside, scheduleYellowMaxOutside)
	res.Plots = []Plot{{
		Type: "pie_chart", Title: "operation against schedule", Unit: "h",
		Labels: []string{"operating inside schedule", "operating outside schedule", "off inside schedule", "off outside schedule"},
		Values: []float64{onInside, outside, offInside, covered - onHours - offInside},
	}}
	return res, nil
}
