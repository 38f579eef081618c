package store

import (
	"context"
	"math"
	"math/rand/v2"
	"testing"
	"time"
)

// The Go aggregates answer PostgreSQL's bits: random series of the kinds
// buildings send, and the overflow cases, each read sampled by SQL over
// rows and by sampleFrom over the same rows read raw.
func TestGoAggregatesEqualPostgreSQL(t *testing.T) {
	s := newTestStore(t)
	ctx := context.Background()
	rng := rand.New(rand.NewPCG(7, 11))
	series := map[string]func(i int) float64{
		"decimal sensor": func(i int) float64 { return math.Round((21+3*math.Sin(float64(i)/40)+rng.NormFloat64()*0.2)*100) / 100 },
		"full precision": func(i int) float64 { return 20 + math.Sin(float64(i)/7)/3 + rng.Float64()/7 },
		"on/off":         func(i int) float64 { return float64(rng.IntN(2)) },
		"meter":          func(i int) float64 { return 123456789.125 + float64(i)*0.5 },
		"mixed signs":    func(i int) float64 { return (rng.Float64() - 0.5) * math.Pow(10, float64(rng.IntN(30)-15)) },
		"huge":           func(i int) float64 { return (rng.Float64() + 0.5) * 1e200 * float64(1-2*rng.IntN(2)) },
		"near max":       func(i int) float64 { return math.MaxFloat64 / float64(1+rng.IntN(3)) },
		"zeros":          func(i int) float64 { return []float64{0, math.Copysign(0, -1), 1}[rng.IntN(3)] },
	}
	var names []string
	for name := range series {
		names = append(names, name)
	}
	_, ids := newTimeseriesProject(t, s, names...)
	const n = 3000
	start := t0
	for name, value := range series {
		rows := make([]Row, n)
		for i := range rows {
			// Jittered minutes, a few gaps.
			rows[i] = Row{Datapoint: ids[name], Time: start.Add(time.Duration(i)*time.Minute + time.Duration(rng.IntN(2000))*time.Millisecond), Value: value(i)}
		}
		if err := s.WriteObservations(ctx, rows); err != nil {
			t.Fatal(err)
		}
	}
	end := start.Add(n * time.Minute)
	for name, dp := range ids {
		raw, err := s.ReadObservations(ctx, dp, ReadQuery{Start: start, End: end})
		if err != nil {
			t.Fatal(err)
		}
		for _, every := range []time.Duration{7 * time.Minute, time.Hour, 24 * time.Hour} {
			for _, agg := range Aggregations {
				want, wantErr := s.ReadSampled(ctx, dp, start, end, every, SampleOrigin, agg)
				got, gotErr := sampleFrom(func() (pointSource, error) { return slicePoints(raw), nil }, every, SampleOrigin, agg)
				if (wantErr != nil) != (gotErr != nil) || (wantErr != nil && !isOutOfRange(gotErr)) {
					t.Errorf("%s %s every %s: SQL error %v, Go error %v", name, agg, every, wantErr, gotErr)
					continue
				}
				if len(got) != len(want) {
					t.Errorf("%s %s every %s: %d points, SQL %d", name, agg, every, len(got), len(want))
					continue
				}
				for i := range want {
					if !got[i].Time.Equal(want[i].Time) || got[i].Value != want[i].Value {
						t.Errorf("%s %s every %s: point %d is %v %v (%x), SQL %v %v (%x)", name, agg, every, i,
							got[i].Time, got[i].Value, math.Float64bits(got[i].Value), want[i].Time, want[i].Value, math.Float64bits(want[i].Value))
						break
					}
				}
			}
		}
	}
}

// A mean over rows sums them in time order, as the sealed chunks' mean
// does, whatever order they lie in on disk: a plan that scans the heap
// (sequentially, by bitmap or in parallel) would sum in another order
// and change the last bits. The rows are written newest first, so their
// physical order is the reverse of time order.
func TestMeanOverRowsSumsInTimeOrder(t *testing.T) {
	s := newTestStore(t)
	ctx := context.Background()
	rng := rand.New(rand.NewPCG(3, 5))
	_, ids := newTimeseriesProject(t, s, "mixed")
	dp := ids["mixed"]
	const n, batch = 6000, 100
	rows := make([]Row, n)
	for i := range rows {
		rows[i] = Row{Datapoint: dp, Time: t0.Add(time.Duration(i) * time.Minute),
			Value: (rng.Float64() - 0.5) * math.Pow(10, float64(rng.IntN(12)-6))}
	}
	for end := n; end > 0; end -= batch {
		if err := s.WriteObservations(ctx, rows[end-batch:end]); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := s.pool.Exec(ctx, `ANALYZE observations`); err != nil {
		t.Fatal(err)
	}
	pts := make([]Point, n)
	for i, r := range rows {
		pts[i] = Point{Time: r.Time, Value: r.Value}
	}
	end := t0.Add(n * time.Minute)
	for _, every := range []time.Duration{time.Hour, 24 * time.Hour} {
		got, err := s.ReadSampled(ctx, dp, t0, end, every, SampleOrigin, Mean)
		if err != nil {
			t.Fatal(err)
		}
		want, err := sampleFrom(func() (pointSource, error) { return slicePoints(pts), nil }, every, SampleOrigin, Mean)
		if err != nil {
			t.Fatal(err)
		}
		if len(got) != len(want) {
			t.Fatalf("every %s: %d means, want %d", every, len(got), len(want))
		}
		for i := range want {
			if got[i] != want[i] {
				t.Errorf("every %s: mean %d is %v (%x), summed in time order %v (%x)", every, i,
					got[i].Value, math.Float64bits(got[i].Value), want[i].Value, math.Float64bits(want[i].Value))
			}
		}
	}
}
