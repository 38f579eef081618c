package actors

import (
	"context"
	"encoding/json"
	"slices"
	"testing"
	"time"

	"github.com/openbdp/bdp/pipeline/formula"
)

// BenchmarkRefillMedian100k is the window refill of a virtual datapoint
// with a count-100,000 median pin over a source holding 100,001
// observations (the 14 s): one op is a Recompute of a period after
// the history, which is the warm-up alone, the same refill a starting
// actor does. The history is served from memory, so the figure is the
// calculation's, not PostgreSQL's.
func BenchmarkRefillMedian100k(b *testing.B) {
	cfg, err := ParseConfig(TypeFormula, []byte(`{"pins": {"P1": {"dataPointID": "src",
		"data_range": {"count": 100000}, "aggregate": "median"}}, "parameters": {"formula": "P1;"}}`))
	if err != nil {
		b.Fatal(err)
	}
	raw, err := json.Marshal(cfg)
	if err != nil {
		b.Fatal(err)
	}
	def, err := buildDefinition(formula.NewCache(), 1, "out", TypeFormula, raw)
	if err != nil {
		b.Fatal(err)
	}
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	src := memoryHistory{}
	for i := range 100_001 {
		src = append(src, Point{Time: t0.Add(time.Duration(i) * time.Second), Value: float64((i * 7919) % 1009)})
	}
	start := t0.Add(200_000 * time.Second)
	for b.Loop() {
		if _, err := Recompute(context.Background(), def, src, start, start.Add(time.Hour), nil); err != nil {
			b.Fatal(err)
		}
	}
}

// memoryHistory is one source's history, ascending, as a SourceReader.
type memoryHistory []Point

func (h memoryHistory) Recent(_ context.Context, _ int64, _ string, count int, since, end time.Time) ([]Point, error) {
	lo, _ := slices.BinarySearchFunc(h, since, func(p Point, t time.Time) int { return p.Time.Compare(t) })
	hi, _ := slices.BinarySearchFunc(h, end, func(p Point, t time.Time) int { return p.Time.Compare(t) })
	if count > 0 {
		lo = max(lo, hi-count)
	}
	return slices.Clone(h[lo:hi]), nil
}

func (h memoryHistory) Newest(_ context.Context, _ int64, ids []string) ([]time.Time, error) {
	newest := make([]time.Time, len(ids))
	if len(h) > 0 {
		for i := range newest {
			newest[i] = h[len(h)-1].Time
		}
	}
	return newest, nil
}

func (h memoryHistory) Page(_ context.Context, _ int64, _ string, from, to time.Time, limit int) ([]Point, error) {
	lo, _ := slices.BinarySearchFunc(h, from, func(p Point, t time.Time) int { return p.Time.Compare(t) })
	hi, _ := slices.BinarySearchFunc(h, to, func(p Point, t time.Time) int { return p.Time.Compare(t) })
	return slices.Clone(h[lo:min(hi, lo+limit)]), nil
}
