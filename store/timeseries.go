package store

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"math"
	"slices"
	"strconv"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/openbdp/bdp/fault"
)

// The read side of observations (GET /v2/datapoint/timeseries). Every read
// is bounded: by its max, by a time range, or by MaxReadPoints; all of them
// walk the primary key (datapoint, time) INCLUDE (value), so they are
// index-only scans of the partitions the range touches.
//
// Time ranges are half-open, [start, end): start is inclusive, end
// exclusive. Consecutive ranges then never share an observation, and a
// sampling bin [t, t+every) is the same kind of range.

// Point is one observation, or one aggregate of a sampled read with the
// left boundary of its interval as Time.
type Point struct {
	Time  time.Time
	Value float64
}

// DatapointInfo is a datapoint with its tags (api.md 2.9).
type DatapointInfo struct {
	ID          int64          `json:"id"`
	HashID      string         `json:"hash_id"`
	DataPointID string         `json:"dataPointID"`
	ProjectID   int64          `json:"project_id"`
	SetpointMin *float64       `json:"setpoint_min_value"`
	SetpointMax *float64       `json:"setpoint_max_value"`
	Tags        []DatapointTag `json:"tags"`
}

// Tag returns the value of the tag with key and source, if there is one.
func (d DatapointInfo) Tag(source, key string) (string, bool) {
	for _, t := range d.Tags {
		if t.Source == source && t.Key == key {
			return t.Value, true
		}
	}
	return "", false
}

// Datapoint returns one datapoint of a project with its tags, ordered by
// tag id; fault.NotFound when the project has no such dataPointID.
func (s *Store) Datapoint(ctx context.Context, projectID int64, dataPointID string) (DatapointInfo, error) {
	var d DatapointInfo
	// One round trip: the tags come along as a JSON array.
	err := s.pool.QueryRow(ctx, `
		SELECT d.id, d.hash_id, d.datapoint_id, d.project_id, d.setpoint_min_value, d.setpoint_max_value,
		       COALESCE((SELECT json_agg(json_build_object('id', t.id, 'key', t.key, 'value', t.value, 'source', t.source)
		                        ORDER BY t.id)
		                 FROM datapoint_tags t WHERE t.datapoint_id = d.id), '[]')
		FROM datapoints d WHERE d.project_id = $1 AND d.datapoint_id = $2`, projectID, dataPointID).
		Scan(&d.ID, &d.HashID, &d.DataPointID, &d.ProjectID, &d.SetpointMin, &d.SetpointMax, &d.Tags)
	if err != nil {
		return DatapointInfo{}, translate(err, fmt.Sprintf("datapoint %q", dataPointID))
	}
	return d, nil
}

// MaxReadPoints bounds every read held in memory: a raw read that would
// answer more observations, or a sampled read over more intervals, is
// refused with ErrOverReadLimit (a fault.Invalid) instead of building an
// answer of unbounded size. Longer raw reads page with ReadPage.
const MaxReadPoints = 1_000_000

// ErrOverReadLimit is the error of a read over MaxReadPoints.
var ErrOverReadLimit = fault.Invalidf("more than %d observations match; narrow the range, set max or use samplerate", MaxReadPoints)

// ReadQuery selects observations of one datapoint (api.md 4.7). A zero
// Start or End leaves that side open.
type ReadQuery struct {
	Start, End time.Time
	// Max is how many observations at most; 0 means all (still bounded by
	// MaxReadPoints). Ignored when both Start and End are set.
	Max int
}

// StartOfNewest is the time of the n-th newest observation of a datapoint
// before end: where its newest n observations begin. ok is false when it
// has fewer than n there.
func (s *Store) StartOfNewest(ctx context.Context, datapoint int64, end time.Time, n int) (t time.Time, ok bool, err error) {
	if n <= 0 {
		return time.Time{}, false, nil
	}
	pts, err := s.readMerged(ctx, datapoint, time.Time{}, end, true, n)
	if err != nil || len(pts) < n {
		return time.Time{}, false, err
	}
	return pts[n-1].Time, true, nil
}

// ReadObservations answers a ReadQuery in ascending time order:
//
//   - Start and End: every observation in [Start, End), Max ignored;
//   - Start only: the first Max observations at or after Start;
//   - End only: the last Max observations before End;
//   - neither: the newest Max observations.
//
// More than MaxReadPoints observations answer ErrOverReadLimit.
func (s *Store) ReadObservations(ctx context.Context, datapoint int64, q ReadQuery) ([]Point, error) {
	limit := MaxReadPoints + 1 // one more, to tell "exactly the cap" from "over it"
	if q.Max > 0 && q.Max <= MaxReadPoints && (q.Start.IsZero() || q.End.IsZero()) {
		limit = q.Max
	}
	// From the start when there is one, else back from the end (or the
	// newest): LIMIT stops the scan after the rows it needs.
	newest := q.Start.IsZero()
	pts, err := s.readMerged(ctx, datapoint, q.Start, q.End, newest, limit)
	if err != nil {
		return nil, fmt.Errorf("read observations: %w", err)
	}
	if len(pts) > MaxReadPoints {
		return nil, ErrOverReadLimit
	}
	if newest {
		slices.Reverse(pts)
	}
	return pts, nil
}

// collectPoints runs a query answering (time, value) rows.
func (s *Store) collectPoints(ctx context.Context, capHint int, sql string, args ...any) ([]Point, error) {
	rows, err := s.pool.Query(ctx, sql, args...)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	pts := make([]Point, 0, capHint)
	var p Point
	for rows.Next() {
		if err := rows.Scan(&p.Time, &p.Value); err != nil {
			return nil, err
		}
		pts = append(pts, p)
	}
	return pts, rows.Err()
}

// Aggregation is how ReadSampled sums up the observations of one interval.
type Aggregation string

// The aggregations; the strings are the API's names (query aggregation and
// the key of each value in the answer).
const (
	Mean   Aggregation = "mean"
	Min    Aggregation = "min"
	Max    Aggregation = "max"
	Median Aggregation = "median"
	Count  Aggregation = "count"
	// Mode is the most frequent value of an interval; among equally
	// frequent values, the smallest.
	Mode Aggregation = "mode"
	// Distinct answers every distinct value of an interval, ascending,
	// each as a point at the interval's time.
	Distinct Aggregation = "distinct"
)

// Aggregations lists every aggregation, the default first.
var Aggregations = []Aggregation{Mean, Min, Max, Median, Count, Mode, Distinct}

// aggregateSQL is the SQL of each aggregation. Only these constants ever
// reach the statement text.
var aggregateSQL = map[Aggregation]string{
	Mean:   "avg(value)",
	Min:    "min(value)",
	Max:    "max(value)",
	Median: "percentile_cont(0.5) WITHIN GROUP (ORDER BY value)",
	Count:  "count(*)::double precision",
	Mode:   "mode() WITHIN GROUP (ORDER BY value)",
}

// aggregateWideSQL computes an aggregate of aggregateSQL without float8
// overflow, for the intervals where that fails: avg(float8) keeps a sum
// and a sum of squares, which overflow (SQLSTATE 22003) for values beyond
// about 1e154, and percentile_cont interpolates lo + (hi-lo)/2, which is
// infinite when hi-lo is. Every mean and median of finite values is
// finite, so these answer it: numeric arithmetic for the mean (exact, but
// slower, hence only when needed), halved values for the median (exact
// but for subnormal values).
var aggregateWideSQL = map[Aggregation]string{
	Mean:   "avg(value::numeric)::double precision",
	Median: "percentile_cont(0.5) WITHIN GROUP (ORDER BY value * 0.5) * 2",
}

// SampleOrigin is where sampling intervals are counted from: with it,
// hourly intervals start on the full hour and daily ones at midnight UTC.
var SampleOrigin = time.Date(2000, 1, 1, 0, 0, 0, 0, time.UTC)

// ReadSampled divides [start, end) into intervals of length every, counted
// from origin (SampleOrigin, or start itself), and answers one aggregate
// per interval that holds observations, in ascending order, with the
// interval's left boundary as time. An observation exactly on a boundary
// belongs to the interval that starts there. Intervals without
// observations are left out.
func (s *Store) ReadSampled(ctx context.Context, datapoint int64, start, end time.Time, every time.Duration, origin time.Time, agg Aggregation) ([]Point, error) {
	expr, ok := aggregateSQL[agg]
	if !ok && agg != Distinct {
		return nil, fault.Invalidf("unknown aggregation %q", agg)
	}
	if every < time.Microsecond {
		return nil, fault.Invalidf("sampling interval must be at least 1µs")
	}
	if !end.After(start) {
		return nil, nil
	}
	if n := SampleBins(start, end, every, origin); n > MaxReadPoints {
		return nil, fault.Invalidf("%d sampling intervals are too many; at most %d", n, MaxReadPoints)
	}
	// date_bin is exact arithmetic on microseconds since the origin, free of
	// time zones and daylight saving. Without an ORDER BY the planner hashes
	// the intervals instead of sorting every observation (the planner does
	// not know date_bin is monotonic): 20% less time on 30 days of minute
	// data. The few aggregates are sorted here instead.
	capHint := int(min(SampleBins(start, end, every, origin), 4096))
	readWith := func(expr string) ([]Point, error) {
		sql := `SELECT date_bin($2::interval, time, $5::timestamptz) AS bin, ` + expr + `
			FROM observations WHERE datapoint = $1 AND time >= $3 AND time < $4
			GROUP BY bin`
		if agg == Distinct {
			// Many values per interval: the answer is bounded by
			// MaxReadPoints like a raw read (one more row tells "over").
			sql = `SELECT date_bin($2::interval, time, $5::timestamptz) AS bin, value
			FROM observations WHERE datapoint = $1 AND time >= $3 AND time < $4
			GROUP BY bin, value LIMIT ` + strconv.Itoa(MaxReadPoints+1)
		}
		read := func(from, to time.Time) ([]Point, error) {
			return s.readSampledRange(ctx, datapoint, sql, every, from, to, origin, agg, capHint)
		}
		if mid, ok := splitPoint(start, end, every, origin); ok {
			return readHalves(mid, start, end, read)
		}
		return read(start, end)
	}
	pts, err := readWith(expr)
	if wide, ok := aggregateWideSQL[agg]; ok && (isOutOfRange(err) || (err == nil && anyInfinite(pts))) {
		pts, err = readWith(wide)
	}
	if isOutOfRange(err) {
		return nil, fault.Wrap(fault.Unprocessable, err, "an aggregate of this range is beyond the range of a 64-bit float")
	}
	if err != nil {
		return nil, fmt.Errorf("read sampled observations: %w", err)
	}
	if len(pts) > MaxReadPoints {
		return nil, ErrOverReadLimit
	}
	slices.SortFunc(pts, func(a, b Point) int {
		if c := a.Time.Compare(b.Time); c != 0 {
			return c
		}
		return cmp.Compare(a.Value, b.Value) // distinct: ascending values
	})
	return pts, nil
}

// sampledSQL is a sampled read of [$3, $4) in one statement: PostgreSQL's
// aggregates (%s) when no sealed chunk overlaps the range; else the head's
// rows and the chunks, aggregated in Go (aggregate.go) with the same
// answers. The EXISTS tests are one-time filters: the other part is not
// run.
const sampledSQL = `
WITH c AS MATERIALIZED (
  SELECT first_time, data FROM observation_chunks WHERE datapoint = $1 AND first_time < $4 AND last_time >= $3)
SELECT a.*, NULL::bytea FROM (%s) a WHERE NOT EXISTS (SELECT 1 FROM c)
UNION ALL
SELECT time, value, NULL FROM (
  SELECT time, value FROM observations WHERE datapoint = $1 AND time >= $3 AND time < $4 ORDER BY time) h
WHERE EXISTS (SELECT 1 FROM c)
UNION ALL
SELECT first_time, 0, data FROM c`

// readSampledRange runs one sampled read (sampledSQL around aggSQL) of
// [from, to).
func (s *Store) readSampledRange(ctx context.Context, datapoint int64, aggSQL string, every time.Duration, from, to, origin time.Time, agg Aggregation, capHint int) ([]Point, error) {
	head, chunks, err := s.querySampled(ctx, agg, fmt.Sprintf(sampledSQL, aggSQL), capHint, datapoint, every, from, to, origin)
	if err != nil || len(chunks) == 0 {
		return head, err
	}
	var releases []func()
	defer func() {
		for _, release := range releases {
			release()
		}
	}()
	return sampleFrom(func() (pointSource, error) {
		next, release, err := s.mergedSource(head, chunks, from, to)
		if err == nil {
			releases = append(releases, release)
		}
		return next, err
	}, every, origin, agg)
}

// timeOrderedParams make PostgreSQL read a datapoint's rows in time
// order, by its index, in one process, on the connections that read
// sampled means (Store.means): a float8 mean's last bits depend on the
// order it sums in, and the sealed chunks' mean (aggregate.go) sums in
// time order. A parallel plan adds up partial sums, and a sequential or
// bitmap heap scan sums in the order the rows lie on disk, which late
// writes and replays make differ from time order; the plan the planner
// picks moves with its statistics, so the same rows' mean could change
// from one read to the next. Only a mean needs it: every other aggregate
// is exact in any order, and the wide mean sums exact numerics. Set when
// the connection starts, they cost a read nothing (SET LOCAL in a
// transaction of its own made a 30-day hourly mean 14 % slower).
func timeOrderedParams() map[string]string {
	return map[string]string{
		"max_parallel_workers_per_gather": "0",
		"enable_seqscan":                  "off",
		"enable_bitmapscan":               "off",
	}
}

// querySampled runs a sampled read's statement and collects its rows (the
// aggregates, or the head's rows and the chunks); a mean's on a
// connection of Store.means.
func (s *Store) querySampled(ctx context.Context, agg Aggregation, sql string, capHint int, args ...any) (head []Point, chunks [][]byte, err error) {
	pool := s.pool
	if agg == Mean {
		pool = s.means
	}
	rows, err := pool.Query(ctx, sql, args...)
	if err != nil {
		return nil, nil, err
	}
	return collectMerged(rows, capHint)
}

// isOutOfRange tells a float8 overflow in PostgreSQL (numeric value out of
// range).
func isOutOfRange(err error) bool {
	var pe *pgconn.PgError
	return errors.As(err, &pe) && pe.Code == "22003"
}

func anyInfinite(pts []Point) bool {
	for _, p := range pts {
		if math.IsInf(p.Value, 0) {
			return true
		}
	}
	return false
}

// parallelSpan is the range from which a sampled read is split in two
// halves read at once on two connections: a month of minute data is
// tens of thousands of rows, and one backend aggregates them on one core.
const parallelSpan = 7 * 24 * time.Hour

// splitPoint is an interval boundary near the middle of [start, end):
// splitting there keeps every interval whole in one half, so each
// aggregate (the median too) is computed over all its observations.
func splitPoint(start, end time.Time, every time.Duration, origin time.Time) (time.Time, bool) {
	if end.Sub(start) < parallelSpan {
		return time.Time{}, false
	}
	mid := time.UnixMicro(binMicros(start.Add(end.Sub(start)/2), every.Microseconds(), origin)).UTC()
	return mid, mid.After(start) && mid.Before(end)
}

func readHalves(mid, start, end time.Time, read func(from, to time.Time) ([]Point, error)) ([]Point, error) {
	var late []Point
	var lateErr error
	done := make(chan struct{})
	go func() {
		defer close(done)
		late, lateErr = read(mid, end)
	}()
	early, err := read(start, mid)
	<-done
	if err != nil {
		return nil, err
	}
	if lateErr != nil {
		return nil, lateErr
	}
	return append(early, late...), nil
}

// SampleBins is how many intervals of length every, counted from origin,
// [start, end) touches.
func SampleBins(start, end time.Time, every time.Duration, origin time.Time) int64 {
	step := every.Microseconds()
	if !end.After(start) || step <= 0 {
		return 0
	}
	first, last := binMicros(start, step, origin), binMicros(end.Add(-time.Microsecond), step, origin)
	return (last-first)/step + 1
}

// BinStart is the left boundary of the interval of length every, counted
// from origin, that holds t (date_bin in Go).
func BinStart(t time.Time, every time.Duration, origin time.Time) time.Time {
	return time.UnixMicro(binMicros(t, every.Microseconds(), origin)).UTC()
}

// binMicros is date_bin in Go: the left boundary of t's interval, in
// microseconds since the Unix epoch (the resolution PostgreSQL keeps; the
// years 1900..9999 the API allows fit easily).
func binMicros(t time.Time, step int64, origin time.Time) int64 {
	us := t.UnixMicro()
	off := (us - origin.UnixMicro()) % step
	if off < 0 {
		off += step
	}
	return us - off
}

// CountObservations counts the observations of a datapoint in
// [start, end), stopping at upTo (upTo ≤ 0: at MaxReadPoints+1). Auto sampling only
// needs to know whether there are at least N, which stays cheap on a
// range of millions.
func (s *Store) CountObservations(ctx context.Context, datapoint int64, start, end time.Time, upTo int64) (int64, error) {
	if upTo <= 0 || upTo > MaxReadPoints {
		upTo = MaxReadPoints + 1 // the count is read: bounded like a read
	}
	// Counted from the points, not by SQL's count: a late write at a
	// time a sealed chunk holds is one observation in two places, which
	// only the merge tells.
	pts, err := s.readMerged(ctx, datapoint, start, end, false, int(upTo))
	if err != nil {
		return 0, fmt.Errorf("count observations: %w", err)
	}
	return int64(len(pts)), nil
}

// ObservationSpan returns the times of the first and the last observation
// of a datapoint in [start, end); a zero start or end leaves that side
// open. ok is false when there is none.
func (s *Store) ObservationSpan(ctx context.Context, datapoint int64, start, end time.Time) (first, last time.Time, ok bool, err error) {
	// One read from each end of the range. Sealing changes where points
	// are, not which: the two reads agree but for writes between them.
	var ends [2][]Point
	for i, newest := range []bool{false, true} {
		if ends[i], err = s.readMerged(ctx, datapoint, start, end, newest, 1); err != nil {
			return time.Time{}, time.Time{}, false, fmt.Errorf("observation span: %w", err)
		}
	}
	if len(ends[0]) == 0 || len(ends[1]) == 0 {
		return time.Time{}, time.Time{}, false, nil
	}
	return ends[0][0].Time, ends[1][0].Time, true, nil
}

// CurrencyRates returns the exchange-rate table: currency code to the
// value of one unit of it in the base currency (see migration 00003).
func (s *Store) CurrencyRates(ctx context.Context) (map[string]float64, error) {
	return currencyRates(ctx, s.pool)
}

// rowsQuerier is what both the pool and a transaction offer for reads.
type rowsQuerier interface {
	Query(ctx context.Context, sql string, args ...any) (pgx.Rows, error)
}

func currencyRates(ctx context.Context, q rowsQuerier) (map[string]float64, error) {
	rows, err := q.Query(ctx, `SELECT code, rate FROM currency_rates`)
	if err != nil {
		return nil, fmt.Errorf("read currency rates: %w", err)
	}
	out := map[string]float64{}
	var code string
	var rate float64
	_, err = pgx.ForEachRow(rows, []any{&code, &rate}, func() error {
		out[code] = rate
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("read currency rates: %w", err)
	}
	return out, nil
}

// SetCurrencyRates sets the rates of the given currency codes (others stay
// as they are) and returns the whole table, in one transaction. Codes are
// three capital letters and rates finite and positive, or fault.Invalid.
func (s *Store) SetCurrencyRates(ctx context.Context, rates map[string]float64) (map[string]float64, error) {
	codes := make([]string, 0, len(rates))
	values := make([]float64, 0, len(rates))
	for c, v := range rates {
		codes, values = append(codes, c), append(values, v)
	}
	var out map[string]float64
	err := s.tx(ctx, func(tx pgx.Tx) error {
		_, err := tx.Exec(ctx, `
			INSERT INTO currency_rates (code, rate) SELECT * FROM unnest($1::text[], $2::float8[])
			ON CONFLICT (code) DO UPDATE SET rate = EXCLUDED.rate`, codes, values)
		if err != nil {
			return err
		}
		out, err = currencyRates(ctx, tx)
		return err
	})
	if err != nil {
		return nil, translate(err, "currency rate")
	}
	return out, nil
}
