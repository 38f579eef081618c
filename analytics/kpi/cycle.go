package kpi

import "time"

// CycleAttributes configure OperatingCycle.
type CycleAttributes struct {
	// OnThreshold: the component counts as operating while the pin's value
	// is strictly above it. 0 fits an operating message (0/1); for a power
	// pin give the standby power, e.g. 0.5 kW.
	OnThreshold float64
}

// Operating cycle signal thresholds, in starts per covered hour.
const (
	cycleGreenMaxStartsPerHour  = 1.0
	cycleYellowMaxStartsPerHour = 3.0
)

// OperatingCycle analyses the on/off behaviour of a component from its
// operating message (or power) pin.
//
// A start is a change from off to on inside the covered time; a component
// already on when the data begins has not been seen starting. A closed
// operating cycle runs from one start to the next; its duty time is the
// time on and its switch-off time the time off within it. Cycle, duty and
// switch-off KPIs (median, arithmetic mean as ".average", minimum, maximum,
// in hours) are given only when at least one cycle closed.
//
// Signal color from starts per covered hour: at most 1 green, at most 3
// yellow (frequent cycling wears compressors and burners), above 3 red
// (short cycling). Grey when the period holds no data.
func OperatingCycle(series []Point, attrs CycleAttributes, p Period) (Result, error) {
	segs, err := steps(series, p)
	if err != nil {
		return Result{}, err
	}
	if len(segs) == 0 {
		return noData(), nil
	}
	var onHours, covered float64
	var startTimes []int64
	var duty, off []float64 // per closed cycle
	var curDuty, curOff float64
	prevOn := segs[0].value > attrs.OnThreshold
	for i, s := range segs {
		on := s.value > attrs.OnThreshold
		h := s.hours()
		covered += h
		if i > 0 && on && !prevOn {
			if len(startTimes) > 0 {
				duty = append(duty, curDuty)
				off = append(off, curOff)
			}
			startTimes = append(startTimes, s.start)
			curDuty, curOff = 0, 0
		}
		if on {
			onHours += h
			curDuty += h
		} else {
			curOff += h
		}
		prevOn = on
	}
	starts := float64(len(startTimes))
	res := Result{KPIs: []KPI{
		{ID: "operating time", Value: onHours, Unit: "h"},
		{ID: "operating time.relative", Value: percent(onHours, covered), Unit: "%"},
		{ID: "starts", Value: starts, Unit: "count"},
		{ID: "closed operating cycles", Value: float64(len(duty)), Unit: "count"},
	}}
	if len(duty) > 0 {
		cycle := make([]float64, len(duty))
		for i := range duty {
			cycle[i] = float64(startTimes[i+1]-startTimes[i]) / nanosPerHour
		}
		res.KPIs = append(res.KPIs, spreadKPIs("cycle times", cycle)...)
		res.KPIs = append(res.KPIs, spreadKPIs("duty times", duty)...)
		res.KPIs = append(res.KPIs, spreadKPIs("switch-off times", off)...)
	}
	switch perHour := starts / covered; {
	case perHour <= cycleGreenMaxStartsPerHour:
		res.Color = Green
	case perHour <= cycleYellowMaxStartsPerHour:
		res.Color = Yellow
	default:
		res.Color = Red
	}
	res.Plots = []Plot{{
		Type: "pie_chart", Title: "operating time", Unit: "h",
		Labels: []string{"on", "off"}, Values: []float64{onHours, covered - onHours},
	}}
	if len(duty) > 0 {
		res.Plots = append(res.Plots, Plot{
			Type: "bar_chart", Title: "duty time per closed cycle", Unit: "h",
			Labels: cycleLabels(startTimes[:len(duty)]), Values: duty,
		})
	}
	return res, nil
}

func spreadKPIs(prefix string, vs []float64) []KPI {
	median, mean, minimum, maximum := stats(vs)
	return []KPI{
		{ID: prefix + ".median", Value: median, Unit: "h"},
		{ID: prefix + ".average", Value: mean, Unit: "h"},
		{ID: prefix + ".minimum", Value: minimum, Unit: "h"},
		{ID: prefix + ".maximum", Value: maximum, Unit: "h"},
	}
}

func cycleLabels(starts []int64) []string {
	labels := make([]string, len(starts))
	for i, t := range starts {
		labels[i] = time.Unix(0, t).UTC().Format(time.RFC3339)
	}
	return labels
}
