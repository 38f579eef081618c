package store

import (
	"context"
	"fmt"
	"math"
	"math/rand/v2"
	"testing"
	"time"
)

// BenchmarkNewestRead reads the newest 1000 observations of a datapoint
// whose 20 weeks of jittered minute data are all sealed, and of its twin
// in rows: issue 21's export_ratio_newest, without the rest of bdp-bench
// storage around it.
func BenchmarkNewestRead(b *testing.B) {
	ctx := context.Background()
	s := newTestStore(b)
	_, ids := newTimeseriesProject(b, s, "sealed", "rows")
	start := time.Date(2024, 1, 1, 0, 0, 0, 0, time.UTC) // a Monday
	const weeks = 20
	rng := rand.New(rand.NewPCG(3, 5))
	var rows []Row
	for at := start; at.Before(start.AddDate(0, 0, 7*weeks)); at = at.Add(time.Minute) {
		when := at.Add(time.Duration(rng.IntN(1000)) * time.Millisecond)
		v := math.Round((20+5*math.Sin(float64(at.Unix())/5000)+rng.NormFloat64())*100) / 100
		rows = append(rows, Row{Datapoint: ids["sealed"], Time: when, Value: v}, Row{Datapoint: ids["rows"], Time: when, Value: v})
	}
	if err := s.WriteObservations(ctx, rows); err != nil {
		b.Fatal(err)
	}
	for w := range weeks {
		if _, err := s.SealWeek(ctx, start.AddDate(0, 0, 7*w), []int64{ids["sealed"]}); err != nil {
			b.Fatal(err)
		}
	}
	if _, err := s.pool.Exec(ctx, `VACUUM (ANALYZE) observations`); err != nil {
		b.Fatal(err)
	}
	if _, err := s.pool.Exec(ctx, `VACUUM (ANALYZE) observation_chunks`); err != nil {
		b.Fatal(err)
	}
	for _, name := range []string{"sealed", "rows"} {
		b.Run(name, func(b *testing.B) {
			for b.Loop() {
				pts, err := s.ReadObservations(ctx, ids[name], ReadQuery{Max: 1000})
				if err != nil || len(pts) != 1000 {
					b.Fatal(len(pts), err)
				}
			}
		})
	}
}

// BenchmarkSealWeek seals a week of minute data of 100 datapoints (1.008M
// rows) in batches, as the sealer does: the wall time of a pass, most of
// it PostgreSQL's.
func BenchmarkSealWeek(b *testing.B) {
	ctx := context.Background()
	s := newTestStore(b)
	names := make([]string, 100)
	for i := range names {
		names[i] = fmt.Sprintf("dp%03d", i)
	}
	_, ids := newTimeseriesProject(b, s, names...)
	week := time.Date(2024, 1, 1, 0, 0, 0, 0, time.UTC)
	rng := rand.New(rand.NewPCG(3, 5))
	for b.Loop() {
		b.StopTimer()
		for _, id := range ids {
			var rows []Row
			for at := week; at.Before(week.AddDate(0, 0, 7)); at = at.Add(time.Minute) {
				rows = append(rows, Row{Datapoint: id, Time: at, Value: math.Round(rng.NormFloat64()*1000) / 100})
			}
			if err := s.WriteObservations(ctx, rows); err != nil {
				b.Fatal(err)
			}
		}
		if _, err := s.pool.Exec(ctx, `CHECKPOINT`); err != nil {
			b.Fatal(err)
		}
		weekRows, err := s.WeekRows(ctx, week)
		if err != nil {
			b.Fatal(err)
		}
		b.StartTimer()
		for _, batch := range SealBatches(weekRows) {
			if _, err := s.SealWeek(ctx, week, batch); err != nil {
				b.Fatal(err)
			}
		}
		b.StopTimer()
		if _, err := s.pool.Exec(ctx, `DELETE FROM observation_chunks`); err != nil {
			b.Fatal(err)
		}
		b.StartTimer()
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/float64(100*7*24*60), "ns/row")
}
