package window

import (
	"math"
	"strings"
	"time"
)

// Aggregate reduces a window to the value a pin emits (api.md 2.11).
type Aggregate string

// The aggregates.
const (
	Last             Aggregate = "last"              // the newest observation's value
	First            Aggregate = "first"             // the oldest observation's value
	Sum              Aggregate = "sum"               // sum of the values
	Mean             Aggregate = "mean"              // arithmetic mean
	Median           Aggregate = "median"            // middle value; mean of the two middle values for an even count
	Max              Aggregate = "max"               // largest value; the default
	Min              Aggregate = "min"               // smallest value
	TimeWeightedMean Aggregate = "timeweighted_mean" // mean weighted by how long each value was active
	Integral         Aggregate = "integral"          // trapezoid over the window in value·seconds
)

// DefaultAggregate is the aggregate of a pin that names none (api.md 2.11).
const DefaultAggregate = Max

// ParseAggregate validates a pin's aggregate, ignoring case and surrounding
// space; "" is the default, max.
func ParseAggregate(s string) (Aggregate, error) {
	s = strings.ToLower(strings.TrimSpace(s))
	if s == "" {
		return DefaultAggregate, nil
	}
	if a := Aggregate(s); a.valid() {
		return a, nil
	}
	return "", fieldErr("aggregate", "%q is not one of last, first, sum, mean, median, max, min, timeweighted_mean, integral", s)
}

func (a Aggregate) valid() bool {
	switch a {
	case Last, First, Sum, Mean, Median, Max, Min, TimeWeightedMean, Integral:
		return true
	}
	return false
}

// Apply reduces obs (sorted by time, as a Window returns them) evaluated at
// the newest observation's time: what an every_value trigger emits. ok is
// false for an empty window, except for integral, which emits 0 for fewer
// than two observations (api.md 8).
func (a Aggregate) Apply(obs []Observation) (float64, bool) {
	if len(obs) == 0 {
		return a.apply(obs, time.Time{}, nil)
	}
	return a.apply(obs, obs[len(obs)-1].Time, nil)
}

// ApplyAt reduces obs evaluated at time at, the boundary of a timed trigger.
// Only timeweighted_mean depends on at: the newest value counts as active
// until at. The other aggregates equal Apply.
func (a Aggregate) ApplyAt(obs []Observation, at time.Time) (float64, bool) {
	return a.apply(obs, at, nil)
}

// apply is Apply with a scratch slice for median, which must reorder a copy
// of the values; a Pin passes its own so that it never allocates.
func (a Aggregate) apply(obs []Observation, at time.Time, scratch *[]float64) (float64, bool) {
	n := len(obs)
	if a == Integral {
		return integral(obs), true
	}
	if n == 0 {
		return 0, false
	}
	switch a {
	case Last:
		return obs[n-1].Value, true
	case First:
		return obs[0].Value, true
	case Sum:
		return sum(obs), true
	case Mean:
		return mean(obs), true
	case Median:
		return median(obs, scratch), true
	case Max:
		// Plain comparisons rather than the max builtin, whose NaN handling
		// costs a factor of five here; windows hold no NaN.
		m := obs[0].Value
		for _, o := range obs[1:] {
			if o.Value > m {
				m = o.Value
			}
		}
		return m, true
	case Min:
		m := obs[0].Value
		for _, o := range obs[1:] {
			if o.Value < m {
				m = o.Value
			}
		}
		return m, true
	case TimeWeightedMean:
		return timeWeightedMean(obs, at), true
	}
	return 0, false
}

func sum(obs []Observation) float64 {
	s := 0.0
	for _, o := range obs {
		s += o.Value
	}
	return s
}

// mean is the arithmetic mean. The sum of finite values may overflow
// where their mean cannot (two values of 1e308): then each value is
// divided by n first, which no sum of them can take past the largest
// value.
func mean(obs []Observation) float64 {
	n := float64(len(obs))
	if m := sum(obs) / n; !math.IsInf(m, 0) {
		return m
	}
	m := 0.0
	for _, o := range obs {
		m += o.Value / n
	}
	return m
}

// midpoint is (a+b)/2 without the overflow of a+b.
func midpoint(a, b float64) float64 { return a*0.5 + b*0.5 }

// seconds is the time between two instants in seconds. Whole seconds and
// nanoseconds are subtracted apart: cheaper than Time.Sub (no overflow
// saturation, no monotonic check) and exact over the years 1900..9999 the
// pipeline accepts, where UnixNano would overflow.
func seconds(from, to time.Time) float64 {
	return float64(to.Unix()-from.Unix()) + float64(to.Nanosecond()-from.Nanosecond())*1e-9
}

// integral is the trapezoid rule over the observations: each pair of
// neighbours contributes the mean of their values times the seconds between
// them. It does not extend past the first or the newest observation: the
// values outside are unknown. Fewer than two observations integrate to 0.
func integral(obs []Observation) float64 {
	s := 0.0
	for i := 1; i < len(obs); i++ {
		s += midpoint(obs[i-1].Value, obs[i].Value) * seconds(obs[i-1].Time, obs[i].Time)
	}
	return s
}

// timeWeightedMean treats the values as a step function: each value holds
// from its time until the next observation, the newest until at. The span
// starts at the first observation, since the value before it is unknown.
// Evaluated at the newest observation (every_value), the newest value
// weighs 0 until time passes; at a trigger boundary it weighs the time from
// its observation to the boundary. When all weights are zero (a single
// observation evaluated at its own time) there is no time to weigh by and
// the plain mean is returned: for one observation, its value.
func timeWeightedMean(obs []Observation, at time.Time) float64 {
	n := len(obs)
	acc, total := 0.0, 0.0
	for i := 0; i < n-1; i++ {
		w := seconds(obs[i].Time, obs[i+1].Time)
		acc += obs[i].Value * w
		total += w
	}
	if w := seconds(obs[n-1].Time, at); w > 0 {
		acc += obs[n-1].Value * w
		total += w
	}
	if total == 0 {
		return mean(obs)
	}
	if m := acc / total; !math.IsInf(m, 0) {
		return m
	}
	// The weighted sum overflowed (values near the float64 maximum held
	// for seconds); weights as fractions of total keep every partial sum
	// below the largest value.
	m := 0.0
	for i := 0; i < n-1; i++ {
		m += obs[i].Value * (seconds(obs[i].Time, obs[i+1].Time) / total)
	}
	if w := seconds(obs[n-1].Time, at); w > 0 {
		m += obs[n-1].Value * (w / total)
	}
	return m
}

// median copies the values (onto the stack for small windows, else into
// scratch) and selects the middle one or two in O(n) on average.
func median(obs []Observation, scratch *[]float64) float64 {
	var stack [64]float64
	var v []float64
	switch n := len(obs); {
	case n <= len(stack):
		v = stack[:n]
	case scratch != nil:
		if cap(*scratch) < n {
			*scratch = make([]float64, n)
		}
		v = (*scratch)[:n]
	default:
		v = make([]float64, n)
	}
	for i, o := range obs {
		v[i] = o.Value
	}
	n := len(v)
	k := n / 2
	selectK(v, k)
	if n%2 == 1 {
		return v[k]
	}
	// selectK leaves v[:k] holding the k smallest: the lower middle is
	// their maximum.
	lo := v[0]
	for _, x := range v[1:k] {
		if x > lo {
			lo = x
		}
	}
	return midpoint(lo, v[k])
}

// selectK reorders v so that v[k] is the value a sort would put there, with
// no larger value before it and no smaller one after (Hoare's quickselect;
// the middle element as pivot is good on the mostly-sorted data of sensors).
// Values are never NaN (windows refuse them).
func selectK(v []float64, k int) {
	lo, hi := 0, len(v)-1
	for lo < hi {
		p := v[lo+(hi-lo)/2]
		i, j := lo, hi
		for i <= j {
			for v[i] < p {
				i++
			}
			for v[j] > p {
				j--
			}
			if i <= j {
				v[i], v[j] = v[j], v[i]
				i++
				j--
			}
		}
		switch {
		case k <= j:
			hi = j
		case k >= i:
			lo = i
		default:
			return
		}
	}
}
