package bench

import (
	"math"
	"strings"
	"testing"
	"time"

	"github.com/openbdp/bdp/actors"
)

// Every output that is not in both at the same time with the same bits
// counts once: a changed value, a missing one, an extra one; equal runs
// count nothing.
func TestDiffer(t *testing.T) {
	at := func(s int) time.Time { return time.Unix(int64(s), 0) }
	pts := func(vs ...float64) []actors.Point {
		var out []actors.Point
		for i, v := range vs {
			if !math.IsInf(v, 1) { // +Inf: no output at that second
				out = append(out, actors.Point{Time: at(i), Value: v})
			}
		}
		return out
	}
	inf := math.Inf(1)
	for _, c := range []struct {
		name      string
		want, got []actors.Point
		n         int
		first     string
	}{
		{"equal", pts(1, 2, 3), pts(1, 2, 3), 0, ""},
		{"one ulp", pts(1, 2, 3), pts(1, math.Nextafter(2, 3), 3), 1, "stored 2"},
		{"missing", pts(1, 2, 3), pts(1, inf, 3), 1, "missing"},
		{"extra", pts(1, inf, 3), pts(1, 2, 3), 1, "extra"},
		{"shifted", pts(1, 2, inf), pts(1, inf, 2), 2, "missing"},
		{"none stored", pts(1, 2), nil, 2, "missing"},
	} {
		n, first := differ(c.want, c.got)
		if n != c.n || !strings.Contains(first, c.first) {
			t.Errorf("%s: %d differences, first %q; want %d, first containing %q", c.name, n, first, c.n, c.first)
		}
	}
}

// The burst's ingestion ratio: a steady count gives 1, a stall of the
// stored inputs for a second after the boundary gives 0, a halved rate
// for two seconds 0.5.
func TestBurstRatio(t *testing.T) {
	b := time.Date(2026, 1, 1, 12, 1, 0, 0, time.UTC)
	for _, c := range []struct {
		name string
		rate func(s float64) float64 // per second, s seconds after the boundary
		want float64
	}{
		{"steady", func(float64) float64 { return 1000 }, 1},
		{"stalled", func(s float64) float64 {
			if s >= 0 && s < 1 {
				return 0
			}
			return 1000
		}, 0},
		{"halved", func(s float64) float64 {
			if s >= 0 && s < 2 {
				return 500
			}
			return 1000
		}, 0.5},
	} {
		cs := &countSamples{}
		v := 0.0
		for s := -25.0; s <= 10; s += 0.1 {
			cs.at = append(cs.at, b.Add(time.Duration(s*float64(time.Second))))
			cs.value = append(cs.value, v)
			v += c.rate(s) * 0.1
		}
		if got := cs.ratio(b); math.Abs(got-c.want) > 0.02 {
			t.Errorf("%s: ratio %.3f, want %.3f", c.name, got, c.want)
		}
	}
}
