package store

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/openbdp/bdp/fault"
)

// newTimeseriesProject makes a project with datapoints named names and
// returns their row ids.
func newTimeseriesProject(t testing.TB, s *Store, names ...string) (int64, map[string]int64) {
	t.Helper()
	ctx := context.Background()
	co, u, _, err := s.CreateCompany(ctx, Company{Name: "acme"},
		NewUser{FirstName: "A", LastName: "B", Email: "a@acme.test", PasswordHash: "h"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	p, _, err := s.CreateProject(ctx, u.ID, Project{CompanyID: co.ID, Name: "p"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	ids, err := s.EnsureDatapoints(ctx, p.ID, names)
	if err != nil {
		t.Fatal(err)
	}
	return p.ID, ids
}

var t0 = time.Date(2024, 3, 4, 10, 0, 0, 0, time.UTC) // a Monday

// writeMinutes stores values[i] at t0 + i minutes.
func writeMinutes(t *testing.T, s *Store, dp int64, values ...float64) {
	t.Helper()
	rows := make([]Row, len(values))
	for i, v := range values {
		rows[i] = Row{Datapoint: dp, Time: t0.Add(time.Duration(i) * time.Minute), Value: v}
	}
	if err := s.WriteObservations(context.Background(), rows); err != nil {
		t.Fatal(err)
	}
}

func minute(i int) time.Time { return t0.Add(time.Duration(i) * time.Minute) }

// wantPoints compares points with values at minutes.
func wantPoints(t *testing.T, what string, got []Point, fromMinute int, values ...float64) {
	t.Helper()
	if len(got) != len(values) {
		t.Fatalf("%s: %d points, want %d: %v", what, len(got), len(values), got)
	}
	for i, p := range got {
		if !p.Time.Equal(minute(fromMinute+i)) || p.Value != values[i] {
			t.Fatalf("%s: point %d is %v %v, want %v %v", what, i, p.Time, p.Value, minute(fromMinute+i), values[i])
		}
	}
}

func TestDatapoint(t *testing.T) {
	ctx := context.Background()
	s := newTestStore(t)
	pid, ids := newTimeseriesProject(t, s, "hall/temp")
	if _, err := s.SetSystemTags(ctx, pid, "hall/temp", []DatapointTag{{Key: "units", Value: "celsius"}, {Key: "floor", Value: "1"}}); err != nil {
		t.Fatal(err)
	}
	d, err := s.Datapoint(ctx, pid, "hall/temp")
	if err != nil {
		t.Fatal(err)
	}
	if d.ID != ids["hall/temp"] || d.ProjectID != pid || d.DataPointID != "hall/temp" || d.HashID == "" || len(d.Tags) != 2 {
		t.Fatalf("datapoint: %+v", d)
	}
	if u, ok := d.Tag("system", "units"); !ok || u != "celsius" {
		t.Fatalf("units tag: %q %v", u, ok)
	}
	if _, err := s.Datapoint(ctx, pid, "hall/other"); !fault.Is(err, fault.NotFound) {
		t.Fatalf("unknown datapoint: %v", err)
	}
	if _, err := s.Datapoint(ctx, pid+1, "hall/temp"); !fault.Is(err, fault.NotFound) {
		t.Fatalf("datapoint of another project: %v", err)
	}
}

// Every combination of start, end and max, with start inclusive and end
// exclusive.
func TestReadObservationsRules(t *testing.T) {
	ctx := context.Background()
	s := newTestStore(t)
	_, ids := newTimeseriesProject(t, s, "a", "b")
	a := ids["a"]
	writeMinutes(t, s, a, 0, 1, 2, 3, 4, 5, 6, 7, 8, 9)
	writeMinutes(t, s, ids["b"], 100, 101) // another datapoint never leaks in

	cases := []struct {
		name       string
		q          ReadQuery
		fromMinute int
		values     []float64
	}{
		{"neither: newest max", ReadQuery{Max: 3}, 7, []float64{7, 8, 9}},
		{"neither, max 0: all", ReadQuery{}, 0, []float64{0, 1, 2, 3, 4, 5, 6, 7, 8, 9}},
		{"start: first max from start (inclusive)", ReadQuery{Start: minute(2), Max: 3}, 2, []float64{2, 3, 4}},
		{"start between observations", ReadQuery{Start: minute(2).Add(time.Second), Max: 2}, 3, []float64{3, 4}},
		{"start, max 0: all from start", ReadQuery{Start: minute(7)}, 7, []float64{7, 8, 9}},
		{"end: last max before end (exclusive)", ReadQuery{End: minute(5), Max: 2}, 3, []float64{3, 4}},
		{"end between observations", ReadQuery{End: minute(4).Add(time.Second), Max: 2}, 3, []float64{3, 4}},
		{"end, max 0: all before end", ReadQuery{End: minute(3)}, 0, []float64{0, 1, 2}},
		{"both: all between, max ignored", ReadQuery{Start: minute(2), End: minute(6), Max: 1}, 2, []float64{2, 3, 4, 5}},
		{"both, max 0", ReadQuery{Start: minute(8), End: minute(60)}, 8, []float64{8, 9}},
		{"max beyond what exists", ReadQuery{Max: 1000}, 0, []float64{0, 1, 2, 3, 4, 5, 6, 7, 8, 9}},
		{"empty range", ReadQuery{Start: minute(20)}, 0, nil},
		{"end before everything", ReadQuery{End: minute(0)}, 0, nil},
	}
	for _, c := range cases {
		got, err := s.ReadObservations(ctx, a, c.q)
		if err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		wantPoints(t, c.name, got, c.fromMinute, c.values...)
	}
}

// Observations on interval boundaries belong to the interval starting
// there; the aggregates are checked against hand-computed values.
func TestReadSampled(t *testing.T) {
	ctx := context.Background()
	s := newTestStore(t)
	_, ids := newTimeseriesProject(t, s, "a")
	a := ids["a"]
	// Minutes 0..9 (10:00..10:09) with values 1, 2, 4, 8, ...: each 5-minute
	// interval holds minutes 0-4 and 5-9.
	writeMinutes(t, s, a, 1, 2, 4, 8, 16, 32, 64, 128, 256, 512)
	every := 5 * time.Minute
	cases := []struct {
		agg  Aggregation
		want []float64
	}{
		{Mean, []float64{31.0 / 5, 992.0 / 5}},
		{Min, []float64{1, 32}},
		{Max, []float64{16, 512}},
		{Median, []float64{4, 128}},
		{Count, []float64{5, 5}},
	}
	for _, c := range cases {
		got, err := s.ReadSampled(ctx, a, t0, minute(10), every, SampleOrigin, c.agg)
		if err != nil {
			t.Fatalf("%s: %v", c.agg, err)
		}
		if len(got) != 2 || !got[0].Time.Equal(t0) || !got[1].Time.Equal(minute(5)) {
			t.Fatalf("%s: intervals %v", c.agg, got)
		}
		for i, w := range c.want {
			if math.Abs(got[i].Value-w) > 1e-12 {
				t.Fatalf("%s: interval %d is %v, want %v", c.agg, i, got[i].Value, w)
			}
		}
	}
	// The median of an even count is the mean of the middle two.
	got, err := s.ReadSampled(ctx, a, t0, minute(4), time.Hour, SampleOrigin, Median)
	if err != nil || len(got) != 1 || got[0].Value != 3 || !got[0].Time.Equal(t0) {
		t.Fatalf("median of 1, 2, 4, 8: %v %v", got, err)
	}
	// Intervals count from 2000-01-01 UTC, not from start: a range starting
	// at 10:02 still bins at 10:00 and 10:05, and the range bounds cut
	// (start inclusive, end exclusive).
	got, err = s.ReadSampled(ctx, a, minute(2), minute(7), every, SampleOrigin, Count)
	if err != nil || len(got) != 2 || !got[0].Time.Equal(t0) || got[0].Value != 3 || !got[1].Time.Equal(minute(5)) || got[1].Value != 2 {
		t.Fatalf("cut intervals: %v %v", got, err)
	}
	// Empty intervals are left out.
	got, err = s.ReadSampled(ctx, a, t0.Add(-time.Hour), minute(10), time.Minute*20, SampleOrigin, Count)
	if err != nil || len(got) != 1 || !got[0].Time.Equal(t0) || got[0].Value != 10 {
		t.Fatalf("20-minute intervals: %v %v", got, err)
	}
	// Daily intervals start at midnight UTC.
	got, err = s.ReadSampled(ctx, a, t0.Add(-48*time.Hour), t0.Add(48*time.Hour), 24*time.Hour, SampleOrigin, Count)
	if err != nil || len(got) != 1 || !got[0].Time.Equal(time.Date(2024, 3, 4, 0, 0, 0, 0, time.UTC)) {
		t.Fatalf("daily intervals: %v %v", got, err)
	}
	if _, err := s.ReadSampled(ctx, a, t0, t0.AddDate(1, 0, 0), time.Second, SampleOrigin, Mean); !fault.Is(err, fault.Invalid) {
		t.Fatalf("31 million intervals: %v", err)
	}
	if _, err := s.ReadSampled(ctx, a, t0, minute(10), time.Minute, SampleOrigin, "sum"); !fault.Is(err, fault.Invalid) {
		t.Fatalf("unknown aggregation: %v", err)
	}
}

func TestSampleBins(t *testing.T) {
	h := time.Hour
	cases := []struct {
		start, end time.Time
		every      time.Duration
		want       int64
	}{
		{t0, t0.Add(h), h, 1},
		{t0, t0.Add(h + time.Microsecond), h, 2},
		{t0.Add(-time.Minute), t0.Add(h), h, 2},
		{t0, t0.Add(30 * 24 * h), h, 720},
		{t0, t0, h, 0},
		{time.Date(1950, 1, 1, 0, 0, 0, 0, time.UTC), time.Date(1950, 1, 3, 0, 0, 0, 0, time.UTC), 24 * h, 2},
	}
	for _, c := range cases {
		if got := SampleBins(c.start, c.end, c.every, SampleOrigin); got != c.want {
			t.Errorf("SampleBins(%v, %v, %v) = %d, want %d", c.start, c.end, c.every, got, c.want)
		}
	}
}

func TestCountAndSpan(t *testing.T) {
	ctx := context.Background()
	s := newTestStore(t)
	_, ids := newTimeseriesProject(t, s, "a", "empty")
	a := ids["a"]
	writeMinutes(t, s, a, 0, 1, 2, 3, 4, 5, 6, 7, 8, 9)
	for _, c := range []struct {
		start, end time.Time
		upTo, want int64
	}{
		{minute(0), minute(10), 0, 10},
		{minute(0), minute(10), 4, 4},
		{minute(2), minute(5), 0, 3},
		{minute(2), minute(5), 100, 3},
	} {
		n, err := s.CountObservations(ctx, a, c.start, c.end, c.upTo)
		if err != nil || n != c.want {
			t.Fatalf("count [%v, %v) up to %d: %d %v, want %d", c.start, c.end, c.upTo, n, err, c.want)
		}
	}
	first, last, ok, err := s.ObservationSpan(ctx, a, time.Time{}, time.Time{})
	if err != nil || !ok || !first.Equal(minute(0)) || !last.Equal(minute(9)) {
		t.Fatalf("span: %v %v %v %v", first, last, ok, err)
	}
	first, last, ok, err = s.ObservationSpan(ctx, a, minute(3), minute(6))
	if err != nil || !ok || !first.Equal(minute(3)) || !last.Equal(minute(5)) {
		t.Fatalf("span of [3, 6): %v %v %v %v", first, last, ok, err)
	}
	if _, _, ok, err := s.ObservationSpan(ctx, ids["empty"], time.Time{}, time.Time{}); ok || err != nil {
		t.Fatalf("span of an empty datapoint: %v %v", ok, err)
	}
}

// Every read is an index-only scan of the head's primary key, pruned to
// the partitions of its range, and an index scan of the chunks. The table holds enough rows of other
// datapoints that a sequential scan would be tempting if the index did
// not serve the query.
func TestReadsAreIndexOnly(t *testing.T) {
	ctx := context.Background()
	s := newTestStore(t)
	_, ids := newTimeseriesProject(t, s, "a", "b", "c", "d")
	if err := s.EnsurePartitions(ctx, t0, t0.AddDate(0, 0, 21)); err != nil {
		t.Fatal(err)
	}
	for _, id := range ids {
		_, err := s.pool.Exec(ctx, `INSERT INTO observations (datapoint, time, value)
			SELECT $1, g, random() FROM generate_series($2::timestamptz, $3::timestamptz - interval '1 minute', interval '1 minute') g`,
			id, t0, t0.AddDate(0, 0, 21))
		if err != nil {
			t.Fatal(err)
		}
	}
	// The test cluster commits asynchronously, and VACUUM marks a page
	// all-visible only once the commits of its rows are flushed: the
	// checkpoint flushes them, so the visibility map is what production
	// would have.
	for _, sql := range []string{`CHECKPOINT`, `VACUUM ANALYZE observations`} {
		if _, err := s.pool.Exec(ctx, sql); err != nil {
			t.Fatal(err)
		}
	}
	// Chunk rows of other datapoints (only planned, never read): the
	// planner sees a chunk table worth its index.
	if _, err := s.pool.Exec(ctx, `INSERT INTO observation_chunks (datapoint, first_time, last_time, n, data)
		SELECT d, g, g, 1, '\x00'::bytea FROM unnest($1::bigint[]) d,
		generate_series($2::timestamptz - interval '3 years', $2::timestamptz, interval '1 hour') g`,
		[]int64{ids["b"], ids["c"], ids["d"]}, t0); err != nil {
		t.Fatal(err)
	}
	if _, err := s.pool.Exec(ctx, `ANALYZE observation_chunks`); err != nil {
		t.Fatal(err)
	}
	a := ids["a"]
	t8, t9 := t0.AddDate(0, 0, 8), t0.AddDate(0, 0, 9)
	queries := map[string]struct {
		sql  string
		args []any
	}{
		"newest":  {mergedQuery("DESC"), []any{a, "-infinity", "infinity", 1000}},
		"start":   {mergedQuery("ASC"), []any{a, t8, "infinity", 1000}},
		"end":     {mergedQuery("DESC"), []any{a, "-infinity", t8, 1000}},
		"between": {mergedQuery("ASC"), []any{a, t8, t9, MaxReadPoints + 1}},
		"sampled": {fmt.Sprintf(sampledSQL, `SELECT date_bin($2::interval, time, $5::timestamptz) AS bin, avg(value)
			FROM observations WHERE datapoint = $1 AND time >= $3 AND time < $4 GROUP BY bin`), []any{a, time.Hour, t8, t9, SampleOrigin}},
	}
	for name, q := range queries {
		var raw []byte
		if err := s.pool.QueryRow(ctx, `EXPLAIN (FORMAT JSON) `+q.sql, q.args...).Scan(&raw); err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		var plan []struct{ Plan planNode }
		if err := json.Unmarshal(raw, &plan); err != nil {
			t.Fatal(err)
		}
		partitions := map[string]bool{}
		plan[0].Plan.walk(func(n planNode) {
			switch {
			case strings.HasPrefix(n.Relation, "observations_w"):
				partitions[n.Relation] = true
				if n.Type != "Index Only Scan" {
					t.Errorf("%s: %s of %s, want an index-only scan:\n%s", name, n.Type, n.Relation, raw)
				}
			case n.Relation == "observation_chunks" && n.Type != "Index Scan":
				t.Errorf("%s: %s of the chunks, want their index:\n%s", name, n.Type, raw)
			}
		})
		// A range inside one week touches one partition (of three); the
		// sampled read plans both of its parts, one of which runs.
		if (name == "between" || name == "sampled") && len(partitions) != 1 {
			t.Errorf("%s: partitions %v scanned, want one:\n%s", name, partitions, raw)
		}
	}
}

// planNode is a node of EXPLAIN (FORMAT JSON).
type planNode struct {
	Type     string     `json:"Node Type"`
	Relation string     `json:"Relation Name"`
	Plans    []planNode `json:"Plans"`
}

func (n planNode) walk(f func(planNode)) {
	f(n)
	for _, c := range n.Plans {
		c.walk(f)
	}
}

func TestReadObservationsCap(t *testing.T) {
	if testing.Short() {
		t.Skip("writes a million rows")
	}
	ctx := context.Background()
	s := newTestStore(t)
	_, ids := newTimeseriesProject(t, s, "a")
	a := ids["a"]
	end := t0.Add(time.Duration(MaxReadPoints+1) * time.Second)
	if err := s.EnsurePartitions(ctx, t0, end); err != nil {
		t.Fatal(err)
	}
	_, err := s.pool.Exec(ctx, `INSERT INTO observations (datapoint, time, value)
		SELECT $1, $2::timestamptz + g * interval '1 second', g FROM generate_series(0, $3::int - 1) g`, a, t0, MaxReadPoints+1)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.ReadObservations(ctx, a, ReadQuery{}); !fault.Is(err, fault.Invalid) {
		t.Fatalf("all of %d rows: %v", MaxReadPoints+1, err)
	}
	if _, err := s.ReadObservations(ctx, a, ReadQuery{Start: t0, End: end}); !fault.Is(err, fault.Invalid) {
		t.Fatalf("range of %d rows: %v", MaxReadPoints+1, err)
	}
	got, err := s.ReadObservations(ctx, a, ReadQuery{Start: t0, End: end.Add(-time.Second)})
	if err != nil || len(got) != MaxReadPoints {
		t.Fatalf("exactly the cap: %d %v", len(got), err)
	}
}

func TestCurrencyRates(t *testing.T) {
	ctx := context.Background()
	s := newTestStore(t)
	r, err := s.CurrencyRates(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if r["EUR"] != 1 || r["USD"] != 0.86 || r["GBP"] != 1.15 || r["CHF"] != 1.07 || len(r) != 4 {
		t.Fatalf("seeded rates: %v", r)
	}
	r, err = s.SetCurrencyRates(ctx, map[string]float64{"USD": 0.9})
	if err != nil || r["USD"] != 0.9 || r["EUR"] != 1 || len(r) != 4 {
		t.Fatalf("set USD: %v %v", r, err)
	}
	for _, bad := range []map[string]float64{{"USD": 0}, {"USD": -1}, {"USD": math.Inf(1)}, {"USD": math.NaN()}, {"usd": 1}} {
		if _, err := s.SetCurrencyRates(ctx, bad); !fault.Is(err, fault.Invalid) {
			t.Fatalf("rates %v: %v", bad, err)
		}
	}
	if r, _ := s.CurrencyRates(ctx); r["USD"] != 0.9 {
		t.Fatalf("a refused change changed the table: %v", r)
	}
}

// A long sampled read is split in two halves read at once; the split is on
// an interval boundary, so every aggregate equals the one a single query
// computes over the whole range.
func TestSplitSampledReadEqualsOneQuery(t *testing.T) {
	ctx := context.Background()
	s := newTestStore(t)
	start := time.Date(2025, 3, 3, 0, 7, 0, 0, time.UTC)
	rows := make([]Row, 0, 12*24*60)
	for i := 0; i < 12*24*60; i++ {
		rows = append(rows, Row{Datapoint: 42, Time: start.Add(time.Duration(i) * time.Minute), Value: float64((i * 37) % 101)})
	}
	if err := s.WriteObservations(ctx, rows); err != nil {
		t.Fatal(err)
	}
	from, to := start.Add(13*time.Minute), start.Add(11*24*time.Hour+5*time.Minute)
	if _, ok := splitPoint(from, to, 7*time.Hour, SampleOrigin); !ok {
		t.Fatal("the range must be long enough to be split")
	}
	for _, agg := range []Aggregation{Mean, Median, Min, Max, Count} {
		got, err := s.ReadSampled(ctx, 42, from, to, 7*time.Hour, SampleOrigin, agg)
		if err != nil {
			t.Fatal(err)
		}
		q := `SELECT date_bin('7 hours'::interval, time, '2000-01-01 00:00:00+00'::timestamptz) AS bin, ` + aggregateSQL[agg] + `
			FROM observations WHERE datapoint = 42 AND time >= $1 AND time < $2 GROUP BY bin ORDER BY bin`
		want, err := s.collectPoints(ctx, 64, q, from, to)
		if err != nil {
			t.Fatal(err)
		}
		if len(got) != len(want) {
			t.Fatalf("%s: %d intervals, one query gives %d", agg, len(got), len(want))
		}
		for i := range want {
			if !got[i].Time.Equal(want[i].Time) || got[i].Value != want[i].Value {
				t.Fatalf("%s: interval %d is %v=%v, one query gives %v=%v", agg, i, got[i].Time, got[i].Value, want[i].Time, want[i].Value)
			}
		}
	}
}
