package http

import (
	"context"
	"math"
	"strconv"
	"strings"
	"time"

	"github.com/gofiber/fiber/v2"

	"github.com/openbdp/bdp/fault"
	"github.com/openbdp/bdp/store"
)

// The parameters aedifion documents for GET /v2/datapoint/timeseries
// beyond api.md's (decisions.md 10): interpolation of empty intervals,
// the short answer and closed intervals.

// interpolation is what a down-sampled read answers for an interval
// without observations.
type interpolation string

const (
	interpNone     interpolation = "none"     // leave it out (bdp's answer before, and the default)
	interpNull     interpolation = "null"     // its time with the value null
	interpPrevious interpolation = "previous" // the value of the interval before
	interpLinear   interpolation = "linear"   // on the line between the intervals around it
)

// exportCompatParams document the parameters in the OpenAPI document.
var exportCompatParams = []param{
	{Name: "interpolation", Type: "string", Doc: "what a down-sampled read (samplerate) answers for an interval without observations: " +
		"none (default: it is left out), null (its time with value null), previous (the value of the last interval before it " +
		"that has one; null before the first), linear (on the straight line between the intervals with values around it; " +
		"null before the first and after the last). Intervals run from the one holding start to the one holding end. " +
		"Without samplerate there are no intervals and nothing to fill. previous and linear do not go with aggregation distinct (400)."},
	{Name: "short", Type: "boolean", Doc: "true: answer only the data, as an array of [time, value] pairs " +
		"([[\"2024-03-01T00:00:00Z\", 20.5], ...]), without dataPointID, tags, units or samplerate. Default false."},
	{Name: "closed_interval", Type: "boolean", Doc: "true: also answer a point at start and at end (each when given) holding the last " +
		"value recorded at or before that time, unless an observation lies exactly at start; the point at end is the observation " +
		"exactly at end when there is one (end is otherwise exclusive). No point where nothing was recorded before. The points " +
		"come in addition to max. Needs start or end; not with samplerate (400). Default false. With start equal to end: one point " +
		"at that instant, the last value recorded at or before it (none when nothing was recorded before)."},
}

// parseExportCompat reads the parameters into q, after the others.
func parseExportCompat(c *fiber.Ctx, q *timeseriesQuery) error {
	q.Interp = interpNone
	if raw := c.Query("interpolation"); raw != "" {
		switch i := interpolation(strings.ToLower(raw)); i {
		case interpNone, interpNull, interpPrevious, interpLinear:
			q.Interp = i
		default:
			return fault.Invalidf("interpolation must be one of none, null, previous, linear; got %q", fault.Clip(raw))
		}
	}
	if q.Agg == store.Distinct && (q.Interp == interpPrevious || q.Interp == interpLinear) {
		return fault.Invalidf("interpolation %s does not go with aggregation distinct (several values per interval); use null or none", q.Interp)
	}
	var err error
	if q.Short, err = queryBool(c, "short"); err != nil {
		return err
	}
	if q.Closed, err = queryBool(c, "closed_interval"); err != nil {
		return err
	}
	if q.Closed && q.sampled() {
		return fault.Invalidf("closed_interval applies to observations, not to a down-sampled read: drop samplerate or closed_interval")
	}
	if q.Closed && q.Start.IsZero() && q.End.IsZero() {
		return fault.Invalidf("closed_interval needs start or end")
	}
	if q.instant() && !q.Closed {
		return fault.Invalidf("start (%s) must be before end; equal to it only with closed_interval=true, which answers the value at that instant",
			q.Start.Format(time.RFC3339Nano))
	}
	return nil
}

// queryBool reads an optional boolean query parameter (true, false, 1, 0).
func queryBool(c *fiber.Ctx, name string) (bool, error) {
	raw := c.Query(name)
	if raw == "" {
		return false, nil
	}
	b, err := strconv.ParseBool(raw)
	if err != nil {
		return false, fault.Invalidf("%s must be true or false, got %q", name, fault.Clip(raw))
	}
	return b, nil
}

// fillIntervals answers a point for every interval from the one holding
// start to the one holding end (exclusive), filling those without
// observations as how says; pts are the intervals' aggregates, ascending
// (distinct: several at one time). Empty intervals hold NaN for null,
// which the answer writes as null.
func fillIntervals(pts []store.Point, start, end time.Time, every time.Duration, origin time.Time, how interpolation) []store.Point {
	if how == interpNone || !end.After(start) {
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
		case interpPrevious:
			if i > 0 {
				v = pts[i-1].Value
			}
		case interpLinear:
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

// closedBounds are the points closed_interval adds at start and at end
// (nil where none is due): the last value recorded at or before each.
func (s *Server) closedBounds(ctx context.Context, dp int64, q timeseriesQuery) (head, tail *store.Point, err error) {
	if !q.Closed {
		return nil, nil, nil
	}
	// The last observation at or before t, with its own time.
	lastAtOrBefore := func(t time.Time) (*store.Point, error) {
		pts, err := s.store.ReadObservations(ctx, dp, store.ReadQuery{End: t.Add(time.Microsecond), Max: 1})
		if err != nil || len(pts) == 0 {
			return nil, err
		}
		return &pts[0], nil
	}
	// At an instant the point at end is the one answer: the observation
	// at it or the last before it.
	if !q.Start.IsZero() && !q.instant() {
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

// instant reports a read of one instant: start equal to end.
func (q timeseriesQuery) instant() bool { return !q.Start.IsZero() && q.Start.Equal(q.End) }

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

// encodeShort writes the short answer: [[time, value], ...].
func encodeShort(pts []store.Point) []byte {
	b := make([]byte, 0, 2+len(pts)*48)
	b = append(b, '[')
	for i, p := range pts {
		if i > 0 {
			b = append(b, ',')
		}
		b = appendShortPoint(b, p)
	}
	return append(b, ']')
}

func appendShortPoint(b []byte, p store.Point) []byte {
	b = append(b, `["`...)
	b = p.Time.UTC().AppendFormat(b, time.RFC3339Nano)
	b = append(b, `",`...)
	b = appendJSONFloat(b, p.Value)
	return append(b, ']')
}
