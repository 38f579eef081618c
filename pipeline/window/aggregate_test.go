package window

import (
	"math"
	"slices"
	"testing"
	"time"
)

func TestParseAggregate(t *testing.T) {
	for in, want := range map[string]Aggregate{
		"": Max, "max": Max, " MEAN ": Mean, "TimeWeighted_Mean": TimeWeightedMean, "integral": Integral,
		"last": Last, "first": First, "sum": Sum, "median": Median, "min": Min,
	} {
		if got, err := ParseAggregate(in); err != nil || got != want {
			t.Errorf("ParseAggregate(%q) = %q, %v; want %q", in, got, err, want)
		}
	}
	for _, in := range []string{"avg", "average", "count", "time_weighted_mean"} {
		if _, err := ParseAggregate(in); err == nil || err.Error()[:10] != "aggregate:" {
			t.Errorf("ParseAggregate(%q): error %v, want one naming the field aggregate", in, err)
		}
	}
}

func TestAggregates(t *testing.T) {
	// Values 2, 4, 1, 5 at 0 s, 10 s, 30 s, 60 s.
	four := []Observation{ob(0, 2), ob(10*sec, 4), ob(30*sec, 1), ob(60*sec, 5)}
	three := four[:3]
	one := four[3:]
	halfSecond := []Observation{ob(0, 1), ob(500*time.Millisecond, 3)}
	negative := []Observation{ob(0, -3), ob(sec, -1), ob(2*sec, -7)}
	type c struct {
		a    Aggregate
		obs  []Observation
		want float64
		ok   bool
	}
	cases := []c{
		{Last, four, 5, true},
		{First, four, 2, true},
		{Sum, four, 12, true},
		{Mean, four, 3, true},
		{Median, four, 3, true}, // (2+4)/2 of 1 2 4 5
		{Median, three, 2, true},
		{Max, four, 5, true},
		{Min, four, 1, true},
		{Max, negative, -1, true},
		{Min, negative, -7, true},
		// 2 for 10 s, 4 for 20 s, 1 for 30 s, 5 for 0 s: 130 / 60.
		{TimeWeightedMean, four, 130.0 / 60, true},
		// 2 for 10 s, 4 for 20 s: 100 / 30; the newest value weighs 0.
		{TimeWeightedMean, three, 100.0 / 30, true},
		{TimeWeightedMean, one, 5, true}, // no time to weigh by: its value
		// (2+4)/2·10 + (4+1)/2·20 + (1+5)/2·30 = 30 + 50 + 90.
		{Integral, four, 170, true},
		{Integral, halfSecond, 1, true}, // (1+3)/2 · 0.5 s
		{Integral, negative, -2 - 4, true},
		{Integral, one, 0, true}, // fewer than two observations emit 0 (api.md 8)
		{Integral, nil, 0, true},
	}
	for _, a := range []Aggregate{Last, First, Sum, Mean, Median, Max, Min, TimeWeightedMean} {
		cases = append(cases, c{a, one, 5, true}, c{a, nil, 0, false})
	}
	for _, c := range cases {
		got, ok := c.a.Apply(c.obs)
		if ok != c.ok || math.Abs(got-c.want) > 1e-12 {
			t.Errorf("%s over %s = %v, %v; want %v, %v", c.a, contents(c.obs), got, ok, c.want, c.ok)
		}
	}
	if _, ok := Aggregate("bogus").Apply(four); ok {
		t.Error("an unknown aggregate emitted")
	}
}

// ApplyAt: only timeweighted_mean depends on the evaluation time.
func TestApplyAt(t *testing.T) {
	four := []Observation{ob(0, 2), ob(10*sec, 4), ob(30*sec, 1), ob(60*sec, 5)}
	cases := []struct {
		a    Aggregate
		at   time.Duration
		want float64
	}{
		// 130 as before plus 5 for 30 s = 280 over 90 s.
		{TimeWeightedMean, 90 * sec, 280.0 / 90},
		{TimeWeightedMean, 60 * sec, 130.0 / 60},
		{TimeWeightedMean, 50 * sec, 130.0 / 60}, // before the newest: clamps to weight 0
		{Integral, 90 * sec, 170},                // the trapezoid does not extend past the newest
		{Mean, 90 * sec, 3},
	}
	for _, c := range cases {
		if got, ok := c.a.ApplyAt(four, at(c.at)); !ok || math.Abs(got-c.want) > 1e-12 {
			t.Errorf("%s at %v = %v, %v; want %v", c.a, c.at, got, ok, c.want)
		}
	}
	// A single observation evaluated at a later boundary: its value.
	if got, _ := TimeWeightedMean.ApplyAt([]Observation{ob(0, 7)}, at(hr)); got != 7 {
		t.Errorf("single observation at a later boundary: %v", got)
	}
}

// Median through every path (stack, scratch, allocation) against sorting.
func TestMedianAgainstSort(t *testing.T) {
	seed := uint32(7)
	rnd := func() float64 { seed = seed*1664525 + 1013904223; return float64(seed>>20) - 2000 }
	var scratch []float64
	for n := 1; n <= 300; n++ {
		obs := make([]Observation, n)
		vals := make([]float64, n)
		for i := range obs {
			v := rnd()
			if n%3 == 0 {
				v = float64(i % 4) // many duplicates
			}
			obs[i] = ob(time.Duration(i)*sec, v)
			vals[i] = v
		}
		slices.Sort(vals)
		want := vals[n/2]
		if n%2 == 0 {
			want = (vals[n/2-1] + vals[n/2]) / 2
		}
		if got, _ := Median.Apply(obs); got != want {
			t.Fatalf("n=%d: median %v, want %v", n, got, want)
		}
		if got, _ := Median.apply(obs, time.Time{}, &scratch); got != want {
			t.Fatalf("n=%d with scratch: median %v, want %v", n, got, want)
		}
	}
	if got, _ := Median.Apply([]Observation{ob(0, 3), ob(sec, 1), ob(2*sec, 2)}); got != 2 {
		t.Fatalf("median must not reorder its input's copy wrongly: %v", got)
	}
}

// Aggregates read the window in place: they never reorder it.
func TestAggregatesDoNotModify(t *testing.T) {
	obs := []Observation{ob(0, 3), ob(sec, 1), ob(2*sec, 2)}
	orig := slices.Clone(obs)
	for _, a := range []Aggregate{Last, First, Sum, Mean, Median, Max, Min, TimeWeightedMean, Integral} {
		a.Apply(obs)
	}
	if !slices.Equal(obs, orig) {
		t.Fatalf("modified: %v", obs)
	}
}

// Aggregates whose result is a finite float64 compute it even when the
// plain sum of the values overflows (issue 8 item 7).
func TestAggregatesNearTheFloat64Maximum(t *testing.T) {
	const big = math.MaxFloat64 / 1.1
	same := []Observation{ob(0, big), ob(sec, big), ob(2*sec, big)}
	opposite := []Observation{ob(0, -big), ob(10*sec, big)}
	pair := []Observation{ob(0, big), ob(10*sec, big)}
	for _, tc := range []struct {
		name string
		a    Aggregate
		obs  []Observation
		at   time.Time
		want float64
	}{
		{"mean of three", Mean, same, same[2].Time, big},
		{"median of an even count", Median, pair, pair[1].Time, big},
		{"median across zero", Median, opposite, opposite[1].Time, 0},
		{"time-weighted mean held for an hour", TimeWeightedMean, pair, pair[1].Time.Add(time.Hour), big},
		{"time-weighted mean of one instant", TimeWeightedMean, same[:1], same[0].Time, big},
		{"max", Max, same, same[2].Time, big},
	} {
		got, ok := tc.a.ApplyAt(tc.obs, tc.at)
		if !ok || math.IsInf(got, 0) || math.Abs(got-tc.want) > 1e-12*math.Max(1, math.Abs(tc.want)) {
			t.Errorf("%s: %g, %v; want %g", tc.name, got, ok, tc.want)
		}
	}
	// A sum beyond the float64 range has no finite answer: it stays infinite
	// and the calculator drops it, as it drops every non-finite value.
	if got, _ := Sum.Apply(same); !math.IsInf(got, 1) {
		t.Errorf("sum: %g, want +Inf", got)
	}
}
