// Package kpi holds the pure computation kernels of bdp's analysis functions:
// each takes the in-memory series of a component's mapped pins, the
// component's attributes and the analysed period, and returns KPIs, a signal
// color and plot data. Nothing here reads a database or knows about HTTP.
//
// Time weighting: every series is read as a step function. A point's value
// holds from its time until the next point's time; the last point holds until
// the end of the period; a point before the period start sets the value at
// the start. Only the part inside [Start, End) counts. Time before the first
// known value is "no data" and is left out, so relative KPIs are shares of
// the covered time, not of the nominal period.
package kpi

import (
	"cmp"
	"errors"
	"fmt"
	"math"
	"slices"
	"sort"
	"time"
)

// Point is one observation of a pin.
type Point struct {
	Time  time.Time
	Value float64
}

// Period is the analysed half-open interval [Start, End).
type Period struct {
	Start, End time.Time
}

// KPI is one computed figure; ID uses aedifion's public identifiers where
// its specification names them.
type KPI struct {
	ID    string
	Value float64
	Unit  string
}

// SignalColor is the traffic light of a result.
type SignalColor string

const (
	Green  SignalColor = "green"
	Yellow SignalColor = "yellow"
	Red    SignalColor = "red"
	// Grey says the period held no data to judge.
	Grey SignalColor = "grey"
)

// Plot is chart data. Type is "pie_chart" (Labels with shares or hours as
// Values) or "bar_chart" (Labels as categories, Values as bar heights).
type Plot struct {
	Type   string
	Title  string
	Unit   string
	Labels []string
	Values []float64
}

// Result is what an analysis kernel returns.
type Result struct {
	KPIs  []KPI
	Color SignalColor
	Plots []Plot
	// NoData is true when the period held no value of a required pin; KPIs
	// and Plots are then empty and Color is Grey.
	NoData bool
	// Thresholds are the bounds the kernel judged against, after its
	// defaults (a tolerance, a minimum spread), with their IDs and units:
	// a text that names a band must say which band it was.
	Thresholds []KPI
}

// ErrInvalidPeriod is returned for a period whose start is not before its end.
var ErrInvalidPeriod = errors.New("kpi: period start must be before its end")

// ErrNonFinite is returned for a NaN or infinite observation value.
var ErrNonFinite = errors.New("kpi: observation value is not finite")

// KPI returns the value of the KPI with the given id.
func (r Result) KPI(id string) (KPI, bool) {
	for _, k := range r.KPIs {
		if k.ID == id {
			return k, true
		}
	}
	return KPI{}, false
}

func noData() Result { return Result{Color: Grey, NoData: true} }

// segment is one constant piece of a step function inside the period. The
// bounds are Unix nanoseconds: a segment without pointers keeps the garbage
// collector from scanning 40,000-element slices (half the kernel's time
// with time.Time bounds).
type segment struct {
	start, end int64
	value      float64
}

const nanosPerHour = float64(time.Hour)

func (s segment) hours() float64 { return float64(s.end-s.start) / nanosPerHour }

// steps turns a series into the step-function segments inside p. Unsorted
// input is sorted (a copy; the caller's slice is untouched); of several
// points at one instant the last one given wins.
func steps(series []Point, p Period) ([]segment, error) {
	if !p.Start.Before(p.End) {
		return nil, ErrInvalidPeriod
	}
	for _, pt := range series {
		if math.IsNaN(pt.Value) || math.IsInf(pt.Value, 0) {
			return nil, fmt.Errorf("%w at %s", ErrNonFinite, pt.Time.Format(time.RFC3339))
		}
	}
	if !sort.SliceIsSorted(series, func(i, j int) bool { return series[i].Time.Before(series[j].Time) }) {
		series = slices.Clone(series)
		slices.SortStableFunc(series, func(a, b Point) int { return a.Time.Compare(b.Time) })
	}
	ps, pe := p.Start.UnixNano(), p.End.UnixNano()
	segs := make([]segment, 0, len(series))
	for i, pt := range series {
		start := pt.Time.UnixNano()
		end := pe
		if i+1 < len(series) {
			end = series[i+1].Time.UnixNano()
		}
		start, end = max(start, ps), min(end, pe)
		if start >= end {
			continue
		}
		segs = append(segs, segment{start: start, end: end, value: pt.Value})
	}
	return segs, nil
}

// combine walks two step functions together and returns the pieces where
// both have a value, each holding f of the two values.
func combine(a, b []segment, f func(va, vb float64) float64) []segment {
	out := make([]segment, 0, max(len(a), len(b)))
	i, j := 0, 0
	for i < len(a) && j < len(b) {
		start, end := max(a[i].start, b[j].start), min(a[i].end, b[j].end)
		if start < end {
			out = append(out, segment{start: start, end: end, value: f(a[i].value, b[j].value)})
		}
		if a[i].end < b[j].end {
			i++
		} else {
			j++
		}
	}
	return out
}

// weighted is a value that held for a number of hours.
type weighted struct{ value, hours float64 }

// weightedStats returns the time-weighted mean, minimum and maximum of
// pieces; pieces must be non-empty with positive total hours.
func weightedStats(pieces []weighted) (mean, minimum, maximum float64) {
	var sum, total float64
	minimum, maximum = pieces[0].value, pieces[0].value
	for _, w := range pieces {
		sum += w.value * w.hours
		total += w.hours
		minimum = min(minimum, w.value)
		maximum = max(maximum, w.value)
	}
	return sum / total, minimum, maximum
}

// colorUpTo is the traffic light of a share where less is better: green
// up to greenMax, yellow up to yellowMax, red above.
func colorUpTo(share, greenMax, yellowMax float64) SignalColor {
	switch {
	case share <= greenMax:
		return Green
	case share <= yellowMax:
		return Yellow
	}
	return Red
}

// colorFrom is the traffic light of a share where more is better: green
// from greenMin, yellow from yellowMin, red below.
func colorFrom(share, greenMin, yellowMin float64) SignalColor {
	switch {
	case share >= greenMin:
		return Green
	case share >= yellowMin:
		return Yellow
	}
	return Red
}

// hoursPerClass sums the hours of segs per class, class(value) being 0 to
// 3, and returns them with the covered hours and segs as weighted pieces.
func hoursPerClass(segs []segment, class func(v float64) int) (byClass [4]float64, covered float64, pieces []weighted) {
	pieces = make([]weighted, len(segs))
	for i, s := range segs {
		h := s.hours()
		covered += h
		pieces[i] = weighted{value: s.value, hours: h}
		byClass[class(s.value)] += h
	}
	return byClass, covered, pieces
}

// weightedMedian returns the value below which half of the covered time
// lies (the smallest value reaching half); pieces must be non-empty. It
// sorts pieces in place.
func weightedMedian(pieces []weighted) float64 { return weightedQuantile(pieces, 0.5) }

// weightedQuantile returns the smallest value at or below which the share
// q (0 to 1) of the covered time lies; pieces must be non-empty. It sorts
// pieces in place.
func weightedQuantile(pieces []weighted, q float64) float64 {
	slices.SortFunc(pieces, func(a, b weighted) int { return cmp.Compare(a.value, b.value) })
	var total float64
	for _, w := range pieces {
		total += w.hours
	}
	var acc float64
	for _, w := range pieces {
		acc += w.hours
		if acc >= total*q {
			return w.value
		}
	}
	return pieces[len(pieces)-1].value
}

// stats returns median, mean, minimum and maximum of plain values; vs must
// be non-empty.
func stats(vs []float64) (median, mean, minimum, maximum float64) {
	sorted := slices.Clone(vs)
	slices.Sort(sorted)
	n := len(sorted)
	if n%2 == 1 {
		median = sorted[n/2]
	} else {
		median = (sorted[n/2-1] + sorted[n/2]) / 2
	}
	var sum float64
	for _, v := range sorted {
		sum += v
	}
	return median, sum / float64(n), sorted[0], sorted[n-1]
}

func percent(part, whole float64) float64 { return 100 * part / whole }

// whileOperating keeps the pieces of segs in which the operating message
// series is above 0 and reports "operating time" KPIs (hours on, and share
// of the time the operating message covers). A nil operating series keeps
// every piece and gives no KPIs.
func whileOperating(segs []segment, operating []Point, p Period) ([]segment, []KPI, error) {
	if operating == nil {
		return segs, nil, nil
	}
	op, err := steps(operating, p)
	if err != nil {
		return nil, nil, err
	}
	var onHours, covered float64
	for _, o := range op {
		covered += o.hours()
		if o.value > 0 {
			onHours += o.hours()
		}
	}
	var kpis []KPI
	if covered > 0 {
		kpis = []KPI{
			{ID: "operating time", Value: onHours, Unit: "h"},
			{ID: "operating time.relative", Value: percent(onHours, covered), Unit: "%"},
		}
	}
	kept := segs[:0:0]
	for _, s := range combine(segs, op, func(v, on float64) float64 {
		if on > 0 {
			return v
		}
		return math.NaN() // out of operation, dropped below
	}) {
		if !math.IsNaN(s.value) {
			kept = append(kept, s)
		}
	}
	return kept, kpis, nil
}
