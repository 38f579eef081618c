package export

import (
	"context"
	"errors"
	"math"
	"strconv"
	"time"

	"github.com/openbdp/bdp/fault"
	"github.com/openbdp/bdp/store"
)

// Result is the answer to a Query.
type Result struct {
	// Points are ascending, converted, with the closed_interval points;
	// nil when Stream is set. An empty interval holds NaN (null).
	Points []store.Point
	Key    string        // the name of each point's value: value, or the aggregation's
	Every  time.Duration // the interval used, when sampled
	Unit   string        // the unit converted to; empty when no conversion was asked
	// Stream, when set, holds an answer too big for memory
	// (store.MaxReadPoints), read page by page as it is written.
	Stream *Stream
}

// Read answers q for dp, a datapoint of the project whose read access the
// caller has checked. A conversion that cannot be done fails before any
// observation is read.
func Read(ctx context.Context, st *store.Store, projectID int64, dp store.DatapointInfo, q Query) (Result, error) {
	conv, err := conversionFor(ctx, st, dp, q)
	if err != nil {
		return Result{}, err
	}
	head, tail, err := closedBounds(ctx, st, dp.ID, q)
	if err != nil {
		return Result{}, err
	}
	pts, key, every, err := readPoints(ctx, st, projectID, dp.ID, q)
	if errors.Is(err, store.ErrOverReadLimit) {
		from, to, limit, ok, err := pagedRange(ctx, st, dp.ID, q)
		if err != nil {
			return Result{}, err
		}
		if ok {
			return Result{Key: "value", Unit: conv.unit, Stream: &Stream{st: st, dp: dp.ID, from: from, to: to, limit: limit,
				head: head, tail: tail, convert: conv.convert}}, nil
		}
	}
	if err != nil {
		return Result{}, err
	}
	pts = withBounds(pts, head, tail)
	if conv.convert != nil && key != string(store.Count) {
		for i := range pts {
			if !math.IsNaN(pts[i].Value) { // an empty interval stays null
				pts[i].Value = conv.convert(pts[i].Value)
			}
		}
	}
	return Result{Points: pts, Key: key, Every: every, Unit: conv.unit}, nil
}

// readPoints answers the observations or aggregates of the query, with
// the key of their values and, when sampled, the interval used.
func readPoints(ctx context.Context, st *store.Store, projectID, dp int64, q Query) ([]store.Point, string, time.Duration, error) {
	if !q.Sampled() {
		pts, err := st.ReadObservations(ctx, dp, store.ReadQuery{Start: q.Start, End: q.End, Max: q.Max})
		return pts, "value", 0, err
	}
	start, end, ok, err := sampleRange(ctx, st, dp, q)
	if err != nil || !ok {
		return nil, string(q.Agg), 0, err
	}
	every, origin := q.Every, store.SampleOrigin
	if q.Auto {
		ps, err := st.ProjectSettings(ctx, projectID)
		if err != nil {
			return nil, "", 0, err
		}
		n := int64(ps.AutosamplingN)
		have, err := st.CountObservations(ctx, dp, start, end, n)
		if err != nil {
			return nil, "", 0, err
		}
		if have < n {
			// Fewer than N: nothing to sample (api.md 4.7). Under N rows,
			// so the range read is small.
			pts, err := st.ReadObservations(ctx, dp, store.ReadQuery{Start: start, End: end})
			return pts, "value", 0, err
		}
		// Counted from start, the range divides into at most N intervals
		// (api.md 4.7: the request interval divided by N), and none begins
		// before start; fixed samplerates keep full hours and days.
		every, origin = autoInterval(start, end, n), start
	}
	if bins := store.SampleBins(start, end, every, origin); bins > store.MaxReadPoints {
		return nil, "", 0, fault.Invalidf("samplerate %s is too fine for the range: %d intervals, at most %d", FormatEvery(every), bins, store.MaxReadPoints)
	}
	pts, err := st.ReadSampled(ctx, dp, start, end, every, origin, q.Agg)
	if err != nil {
		return nil, "", 0, err
	}
	return fillIntervals(pts, start, end, every, origin, q.Interp), string(q.Agg), every, nil
}

// sampleRange is the range a sampled read covers: start and end as given,
// a missing side taken from the first or last stored observation. ok is
// false when the range holds no observation at all.
func sampleRange(ctx context.Context, st *store.Store, dp int64, q Query) (start, end time.Time, ok bool, err error) {
	start, end = q.Start, q.End
	if !start.IsZero() && !end.IsZero() {
		return start, end, true, nil
	}
	first, last, ok, err := st.ObservationSpan(ctx, dp, start, end)
	if err != nil || !ok {
		return start, end, false, err
	}
	if start.IsZero() {
		start = first
	}
	if end.IsZero() {
		end = last.Add(time.Microsecond) // end is exclusive; the last one counts
	}
	return start, end, true, nil
}

// autoInterval is (end - start) / n rounded up to whole seconds, at least
// one second.
func autoInterval(start, end time.Time, n int64) time.Duration {
	span := end.Sub(start)
	every := (span + time.Duration(n) - 1) / time.Duration(n)
	if r := every % time.Second; r != 0 {
		every += time.Second - r
	}
	return max(every, time.Second)
}

// FormatEvery writes a samplerate as the answer gives it: 3600s.
func FormatEvery(d time.Duration) string {
	return strconv.FormatInt(int64(d/time.Second), 10) + "s"
}

// closedBounds are the points closed_interval adds at start and at end
// (nil where none is due): the last value recorded at or before each.
func closedBounds(ctx context.Context, st *store.Store, dp int64, q Query) (head, tail *store.Point, err error) {
	if !q.Closed {
		return nil, nil, nil
	}
	// The last observation at or before t, with its own time.
	lastAtOrBefore := func(t time.Time) (*store.Point, error) {
		pts, err := st.ReadObservations(ctx, dp, store.ReadQuery{End: t.Add(time.Microsecond), Max: 1})
		if err != nil || len(pts) == 0 {
			return nil, err
		}
		return &pts[0], nil
	}
	// At an instant the point at end is the one answer: the observation
	// at it or the last before it.
	if !q.Start.IsZero() && !q.Instant() {
		p, err := lastAtOrBefore(q.Start)
		if err != nil {
			return nil, nil, err
		}
		if p != nil && p.Time.Before(q.Start) { // one exactly at start is in the answer already
			head = &store.Point{Time: q.Start, Value: p.Value}
		}
	}
	if !q.End.IsZero() {
		p, err := lastAtOrBefore(q.End)
		if err != nil {
			return nil, nil, err
		}
		if p != nil {
			tail = &store.Point{Time: q.End, Value: p.Value}
		}
	}
	return head, tail, nil
}

// withBounds puts the closed_interval points around pts.
func withBounds(pts []store.Point, head, tail *store.Point) []store.Point {
	if head == nil && tail == nil {
		return pts
	}
	out := make([]store.Point, 0, len(pts)+2)
	if head != nil {
		out = append(out, *head)
	}
	out = append(out, pts...)
	if tail != nil {
		out = append(out, *tail)
	}
	return out
}

// fillIntervals answers a point for every interval from the one holding
// start to the one holding end (exclusive), filling those without
// observations as how says; pts are the intervals' aggregates, ascending
// (distinct: several at one time). Empty intervals hold NaN for null,
// which the answer writes as null.
func fillIntervals(pts []store.Point, start, end time.Time, every time.Duration, origin time.Time, how Interpolation) []store.Point {
	if how == InterpNone || !end.After(start) {
		return pts
	}
	first := store.BinStart(start, every, origin)
	last := store.BinStart(end.Add(-time.Microsecond), every, origin)
	out := make([]store.Point, 0, max(int(last.Sub(first)/every)+1, len(pts)))
	i := 0
	for t := first; !t.After(last); t = t.Add(every) {
		found := false
		for i < len(pts) && !pts[i].Time.After(t) {
			out = append(out, pts[i])
			found = found || pts[i].Time.Equal(t)
			i++
		}
		if found {
			continue
		}
		v := math.NaN()
		switch how {
		case InterpPrevious:
			if i > 0 {
				v = pts[i-1].Value
			}
		case InterpLinear:
			if i > 0 && i < len(pts) {
				a, b := pts[i-1], pts[i]
				// Microseconds: exact, and no overflow over any span of years.
				f := float64(t.UnixMicro()-a.Time.UnixMicro()) / float64(b.Time.UnixMicro()-a.Time.UnixMicro())
				if v = a.Value + (b.Value-a.Value)*f; math.IsInf(v, 0) {
					v = a.Value*(1-f) + b.Value*f // b-a overflowed: -1e308 to 1e308
				}
			}
		}
		out = append(out, store.Point{Time: t, Value: v})
	}
	return append(out, pts[i:]...)
}
