package store

import (
	"context"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"testing"
	"time"
)

// sealTwins writes the same observations to two datapoints, sealed and
// rows: the sealed one's weeks go into chunks, the other stays in the
// head, whose reads are what every read answered before sealing existed.
type sealTwins struct {
	t                 *testing.T
	s                 *Store
	project           int64
	sealed, rows      int64
	sealedName, twin  string
	start, end        time.Time // of the data
	rng               *rand.Rand
	weeksSealedBefore time.Time // weeks before this are sealed (of the sealed datapoint)
}

func newSealTwins(t *testing.T, s *Store) *sealTwins {
	t.Helper()
	project, ids := newTimeseriesProject(t, s, "sealed", "rows")
	// Five weeks and a bit from a Monday: minute data with millisecond
	// jitter, a 0.01-rounded sensor with gaps.
	start := time.Date(2024, 1, 1, 0, 0, 0, 0, time.UTC)
	tw := &sealTwins{t: t, s: s, project: project, sealed: ids["sealed"], rows: ids["rows"], sealedName: "sealed", twin: "rows",
		start: start, end: start.AddDate(0, 0, 37), rng: rand.New(rand.NewPCG(3, 5))}
	var rows []Row
	for at := start; at.Before(tw.end); at = at.Add(time.Minute) {
		if tw.rng.IntN(50) == 0 {
			continue // a gap
		}
		when := at.Add(time.Duration(tw.rng.IntN(1000)) * time.Millisecond)
		v := math.Round((20+5*math.Sin(float64(at.Unix())/5000)+tw.rng.NormFloat64())*100) / 100
		rows = append(rows, Row{Datapoint: tw.sealed, Time: when, Value: v}, Row{Datapoint: tw.rows, Time: when, Value: v})
	}
	tw.write(rows)
	return tw
}

func (tw *sealTwins) write(rows []Row) {
	tw.t.Helper()
	if err := tw.s.WriteObservations(context.Background(), rows); err != nil {
		tw.t.Fatal(err)
	}
}

// writeBoth stores one observation in both datapoints.
func (tw *sealTwins) writeBoth(at time.Time, v float64) {
	tw.write([]Row{{Datapoint: tw.sealed, Time: at, Value: v}, {Datapoint: tw.rows, Time: at, Value: v}})
}

// seal seals the sealed datapoint's weeks before until.
func (tw *sealTwins) seal(until time.Time) {
	tw.t.Helper()
	for w := weekStart(tw.start); !w.AddDate(0, 0, 7).After(until); w = w.AddDate(0, 0, 7) {
		if _, err := tw.s.SealWeek(context.Background(), w, []int64{tw.sealed}); err != nil {
			tw.t.Fatal(err)
		}
	}
	tw.weeksSealedBefore = until
}

func (tw *sealTwins) chunks() int {
	var n int
	if err := tw.s.pool.QueryRow(context.Background(), `SELECT count(*) FROM observation_chunks WHERE datapoint = $1`, tw.sealed).Scan(&n); err != nil {
		tw.t.Fatal(err)
	}
	return n
}

func samePoints(a, b []Point) error {
	if len(a) != len(b) {
		return fmt.Errorf("%d points, rows answer %d", len(a), len(b))
	}
	for i := range a {
		if !a[i].Time.Equal(b[i].Time) || math.Float64bits(a[i].Value) != math.Float64bits(b[i].Value) {
			return fmt.Errorf("point %d is %v %v, rows answer %v %v", i, a[i].Time, a[i].Value, b[i].Time, b[i].Value)
		}
	}
	return nil
}

// compare runs every read on both datapoints and wants the same answers.
func (tw *sealTwins) compare(stage string) {
	t, s, ctx := tw.t, tw.s, context.Background()
	t.Helper()
	check := func(what string, read func(dp int64) ([]Point, error)) {
		t.Helper()
		a, errA := read(tw.sealed)
		b, errB := read(tw.rows)
		if (errA != nil) != (errB != nil) {
			t.Fatalf("%s: %s: sealed error %v, rows error %v", stage, what, errA, errB)
		}
		if err := samePoints(a, b); err != nil {
			t.Fatalf("%s: %s: %v", stage, what, err)
		}
	}
	week := 7 * 24 * time.Hour
	ranges := [][2]time.Time{
		{tw.start, tw.end},
		{tw.start.Add(3 * 24 * time.Hour), tw.start.Add(9 * 24 * time.Hour)},      // across a week boundary
		{tw.start.Add(2*week - time.Hour), tw.start.Add(4*week + 17*time.Minute)}, // sealed into open
		{tw.start.Add(36 * time.Hour), tw.start.Add(36*time.Hour + 90*time.Minute)},
		{tw.start.Add(-week), tw.start.Add(time.Minute)},
	}
	for _, r := range ranges {
		name := fmt.Sprintf("[%s, %s)", r[0].Format(time.DateTime), r[1].Format(time.DateTime))
		check("range "+name, func(dp int64) ([]Point, error) {
			return s.ReadObservations(ctx, dp, ReadQuery{Start: r[0], End: r[1]})
		})
		for _, n := range []int{1, 7, 1000, 20000} {
			check(fmt.Sprintf("first %d from %s", n, name), func(dp int64) ([]Point, error) {
				return s.ReadObservations(ctx, dp, ReadQuery{Start: r[0], Max: n})
			})
			check(fmt.Sprintf("last %d before %s", n, name), func(dp int64) ([]Point, error) {
				return s.ReadObservations(ctx, dp, ReadQuery{End: r[1], Max: n})
			})
			check(fmt.Sprintf("page of %d in %s", n, name), func(dp int64) ([]Point, error) { return s.ReadPage(ctx, dp, r[0], r[1], n) })
			check(fmt.Sprintf("page of %d before %s", n, name), func(dp int64) ([]Point, error) { return s.ReadPageBefore(ctx, dp, r[0], r[1], n) })
			check(fmt.Sprintf("open page of %d before %s", n, name), func(dp int64) ([]Point, error) {
				return s.ReadPageBefore(ctx, dp, time.Time{}, r[1], n)
			})
			check(fmt.Sprintf("start of newest %d before %s", n, name), func(dp int64) ([]Point, error) {
				at, ok, err := s.StartOfNewest(ctx, dp, r[1], n)
				if !ok {
					return nil, err
				}
				return []Point{{Time: at}}, err
			})
			check(fmt.Sprintf("count up to %d in %s", n, name), func(dp int64) ([]Point, error) {
				c, err := s.CountObservations(ctx, dp, r[0], r[1], int64(n))
				return []Point{{Value: float64(c)}}, err
			})
		}
		check("span of "+name, func(dp int64) ([]Point, error) {
			first, last, ok, err := s.ObservationSpan(ctx, dp, r[0], r[1])
			if !ok {
				return nil, err
			}
			return []Point{{Time: first}, {Time: last}}, err
		})
		for _, every := range []time.Duration{13 * time.Minute, time.Hour, 24 * time.Hour} {
			for _, agg := range Aggregations {
				for _, origin := range []time.Time{SampleOrigin, r[0]} {
					check(fmt.Sprintf("%s every %s from %s in %s", agg, every, origin.Format(time.DateTime), name), func(dp int64) ([]Point, error) {
						return s.ReadSampled(ctx, dp, r[0], r[1], every, origin, agg)
					})
				}
			}
		}
		check("analysis series of "+name, func(dp int64) ([]Point, error) {
			series, err := s.ReadAnalysisSeries(ctx, map[string]int64{"x": dp}, r[0], r[1])
			return series["x"], err
		})
	}
	check("newest 500", func(dp int64) ([]Point, error) { return s.ReadObservations(ctx, dp, ReadQuery{Max: 500}) })
	for _, newest := range []bool{true, false} {
		for _, n := range []int{1, 300, 30000} {
			check(fmt.Sprintf("pages of %d, newest %v", n, newest), func(dp int64) ([]Point, error) {
				name := map[int64]string{tw.sealed: tw.sealedName, tw.rows: tw.twin}[dp]
				pages, err := s.ReadPages(ctx, []PageRequest{
					{Project: tw.project, Name: name, From: ranges[1][0], To: ranges[1][1], Limit: n, Newest: newest},
					{Project: tw.project, Name: name, To: ranges[2][1], Limit: n, Newest: newest},
				})
				if err != nil {
					return nil, err
				}
				return append(pages[0], pages[1]...), nil
			})
		}
	}
}

// Every read answers the same over sealed weeks as over rows: sealed,
// after late writes into sealed weeks (new times and new values at
// sealed times), sealed again, after a period is replaced across sealed
// and open weeks, and unsealed.
func TestSealedReadsEqualRows(t *testing.T) {
	s := newTestStore(t)
	ctx := context.Background()
	tw := newSealTwins(t, s)
	tw.compare("rows only")

	tw.seal(tw.start.AddDate(0, 0, 28)) // four of six weeks
	if tw.chunks() < 4 {
		t.Fatalf("%d chunks after sealing four weeks", tw.chunks())
	}
	tw.compare("sealed")

	// Late writes: a new time, and new values at times a chunk holds.
	sealedPts, err := s.ReadObservations(ctx, tw.sealed, ReadQuery{Start: tw.start.AddDate(0, 0, 8), Max: 3})
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range sealedPts {
		tw.writeBoth(p.Time, p.Value+100)
	}
	tw.writeBoth(tw.start.AddDate(0, 0, 9).Add(17*time.Second), 1234.5)
	tw.writeBoth(tw.start.AddDate(0, 0, 2).Add(time.Microsecond), -7)
	tw.compare("late writes into sealed weeks")

	tw.seal(tw.start.AddDate(0, 0, 28))
	tw.compare("sealed again")

	// A recompute's replacement across sealed and open weeks.
	from, to := tw.start.AddDate(0, 0, 20), tw.start.AddDate(0, 0, 30)
	var outputs []Point
	for at := from.Add(30 * time.Second); at.Before(to); at = at.Add(7 * time.Minute) {
		outputs = append(outputs, Point{Time: at, Value: float64(at.Unix()%1000) / 7})
	}
	for _, name := range []string{tw.sealedName, tw.twin} {
		if err := s.ReplaceOutputs(ctx, tw.project, name, from, to, outputs); err != nil {
			t.Fatal(err)
		}
	}
	tw.compare("period replaced")
	tw.seal(tw.start.AddDate(0, 0, 35))
	tw.compare("sealed after the replacement")

	for w := weekStart(tw.start); w.Before(tw.end); w = w.AddDate(0, 0, 7) {
		if _, err := s.UnsealWeek(ctx, w); err != nil {
			t.Fatal(err)
		}
	}
	if n := tw.chunks(); n != 0 {
		t.Fatalf("%d chunks left after unsealing every week", n)
	}
	tw.compare("unsealed")
}

// A sealed week's partition is emptied; deleting a project or a
// datapoint takes its chunks along.
func TestSealTruncatesAndDeletesTakeChunks(t *testing.T) {
	s := newTestStore(t)
	ctx := context.Background()
	tw := newSealTwins(t, s)
	week := weekStart(tw.start)
	if _, err := s.SealWeek(ctx, week, []int64{tw.sealed, tw.rows}); err != nil {
		t.Fatal(err)
	}
	truncated, err := s.TruncateIfEmpty(ctx, week)
	if err != nil || !truncated {
		t.Fatalf("truncate the sealed week: %v %v", truncated, err)
	}
	weeks, err := s.SealableWeeks(ctx, tw.end.AddDate(0, 0, 7))
	if err != nil {
		t.Fatal(err)
	}
	if slices.Contains(weeks, week) || len(weeks) == 0 {
		t.Fatalf("sealable weeks %v: the sealed week is empty, the others are not", weeks)
	}
	if _, err := s.DeleteProject(ctx, tw.project); err != nil {
		t.Fatal(err)
	}
	var n int
	if err := s.pool.QueryRow(ctx, `SELECT count(*) FROM observation_chunks`).Scan(&n); err != nil || n != 0 {
		t.Fatalf("%d chunks after the project's deletion (%v)", n, err)
	}
}
