package controls

import (
	"encoding/json"
	"fmt"
	"math"
	"sort"
	"strings"
	"time"

	"github.com/openbdp/bdp/fault"
)

// ScheduleEntry is one weekly entry of a component's setpoint_schedule
// attribute: from Start to End (HH:MM, End may be 24:00) on Day, the
// setpoint is Value.
type ScheduleEntry struct {
	Day   string  `json:"day"`
	Start string  `json:"start"`
	End   string  `json:"end"`
	Value float64 `json:"value"`
}

// maxScheduleEntries bounds a schedule: a week in 15-minute steps.
const maxScheduleEntries = 7 * 24 * 4

const minutesPerWeek = 7 * 24 * 60

// Schedule is a parsed weekly schedule: the value of each entry over its
// minutes of the week (Monday 00:00 is 0) in a time zone, and the value
// outside every entry (nil: the app's slot is cleared).
type Schedule struct {
	spans   []span // sorted by start, not overlapping
	def     *float64
	loc     *time.Location
	cutsMin []int // the minutes of the week where the value may change, sorted
}

type span struct {
	from, to int // minutes of the week, to excluded
	value    float64
}

var weekdays = map[string]int{"monday": 0, "tuesday": 1, "wednesday": 2, "thursday": 3, "friday": 4, "saturday": 5, "sunday": 6}

// ParseSchedule reads the setpoint_schedule attribute (a JSON list of
// {day, start, end, value}), its default value and time zone (IANA name;
// empty: UTC). An entry that does not parse, an empty or reversed span, or
// two entries that overlap answer an error saying which.
func ParseSchedule(raw string, def *float64, zone string) (*Schedule, error) {
	var entries []ScheduleEntry
	dec := json.NewDecoder(strings.NewReader(raw))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&entries); err != nil {
		return nil, fmt.Errorf("%s is not a JSON list of {day, start, end, value}: %w", AttrSchedule, err)
	}
	if dec.More() {
		return nil, fmt.Errorf("%s: data after the list", AttrSchedule)
	}
	if len(entries) > maxScheduleEntries {
		return nil, fmt.Errorf("%s: %d entries, at most %d", AttrSchedule, len(entries), maxScheduleEntries)
	}
	if def != nil && (math.IsNaN(*def) || math.IsInf(*def, 0)) {
		return nil, fmt.Errorf("%s must be a finite number", AttrScheduleDefault)
	}
	loc, err := loadZone(zone)
	if err != nil {
		return nil, err
	}
	s := &Schedule{def: def, loc: loc}
	for i, e := range entries {
		day, ok := weekdays[strings.ToLower(e.Day)]
		if !ok {
			return nil, fmt.Errorf("%s entry %d: day %q is not monday..sunday", AttrSchedule, i, e.Day)
		}
		from, err1 := clockMinutes(e.Start)
		to, err2 := clockMinutes(e.End)
		if err1 != nil || err2 != nil {
			return nil, fmt.Errorf("%s entry %d: start and end must be HH:MM (00:00 to 24:00), got %q and %q", AttrSchedule, i, e.Start, e.End)
		}
		if from >= to {
			return nil, fmt.Errorf("%s entry %d: start %s is not before end %s", AttrSchedule, i, e.Start, e.End)
		}
		if math.IsNaN(e.Value) || math.IsInf(e.Value, 0) {
			return nil, fmt.Errorf("%s entry %d: value must be a finite number", AttrSchedule, i)
		}
		s.spans = append(s.spans, span{from: day*24*60 + from, to: day*24*60 + to, value: e.Value})
	}
	sort.Slice(s.spans, func(i, j int) bool { return s.spans[i].from < s.spans[j].from })
	cuts := map[int]bool{}
	for i, sp := range s.spans {
		if i > 0 && s.spans[i-1].to > sp.from {
			return nil, fmt.Errorf("%s: entries %s and %s overlap", AttrSchedule, spanText(s.spans[i-1]), spanText(sp))
		}
		cuts[sp.from], cuts[sp.to%minutesPerWeek] = true, true
	}
	for m := range cuts {
		s.cutsMin = append(s.cutsMin, m)
	}
	sort.Ints(s.cutsMin)
	return s, nil
}

// loadZone is the schedule's time zone: an IANA name, UTC when empty.
func loadZone(zone string) (*time.Location, error) {
	if zone == "" {
		return time.UTC, nil
	}
	loc, err := time.LoadLocation(zone)
	if err != nil {
		return nil, fmt.Errorf("%s %q is not an IANA time zone (such as Europe/Berlin)", AttrScheduleTimezone, fault.Clip(zone))
	}
	return loc, nil
}

func spanText(s span) string {
	names := []string{"monday", "tuesday", "wednesday", "thursday", "friday", "saturday", "sunday"}
	return fmt.Sprintf("%s %02d:%02d-%02d:%02d", names[s.from/(24*60)], s.from%(24*60)/60, s.from%60,
		(s.to-s.from/(24*60)*24*60)/60, s.to%60)
}

func clockMinutes(hhmm string) (int, error) {
	var h, m int
	if len(hhmm) != 5 || hhmm[2] != ':' {
		return 0, fmt.Errorf("not HH:MM")
	}
	if _, err := fmt.Sscanf(hhmm, "%02d:%02d", &h, &m); err != nil {
		return 0, err
	}
	if h < 0 || m < 0 || m > 59 || h > 24 || (h == 24 && m != 0) {
		return 0, fmt.Errorf("out of range")
	}
	return h*60 + m, nil
}

// minuteOfWeek is t's minute of the week in the schedule's zone.
func (s *Schedule) minuteOfWeek(t time.Time) int {
	lt := t.In(s.loc)
	day := (int(lt.Weekday()) + 6) % 7 // Monday is 0
	return day*24*60 + lt.Hour()*60 + lt.Minute()
}

// At answers the setpoint at t (nil: none, the slot is cleared).
func (s *Schedule) At(t time.Time) *float64 {
	m := s.minuteOfWeek(t)
	for _, sp := range s.spans {
		if m >= sp.from && m < sp.to {
			v := sp.value
			return &v
		}
	}
	return s.def
}

// Next answers the first boundary after t where the value may change;
// false when the schedule has none (a constant default).
func (s *Schedule) Next(t time.Time) (time.Time, bool) {
	if len(s.cutsMin) == 0 {
		return time.Time{}, false
	}
	lt := t.In(s.loc)
	monday := time.Date(lt.Year(), lt.Month(), lt.Day()-(int(lt.Weekday())+6)%7, 0, 0, 0, 0, s.loc)
	// This week's boundaries, then next week's: built from the local
	// date, so a DST change moves the instant, not the wall clock.
	for week := 0; week <= 1; week++ {
		for _, m := range s.cutsMin {
			at := time.Date(monday.Year(), monday.Month(), monday.Day()+week*7+m/(24*60), m%(24*60)/60, m%60, 0, 0, s.loc)
			if at.After(t) {
				return at, true
			}
		}
	}
	return time.Time{}, false
}
