package export

import (
	"context"
	"time"

	"github.com/openbdp/bdp/store"
)

// A raw read of more observations than one answer holds in memory
// (store.MaxReadPoints) is streamed instead of refused, because api.md
// 4.7 and 8 say max=0, and start with end, return all, and give max no
// upper bound: the answer is read page by page as it is written, in
// constant memory.

const streamPage = 50_000 // observations per read

// The years an observation may have (pipeline.Observation.Validate), which
// close the open sides of a paged read.
func readFloor() time.Time   { return time.Date(1900, 1, 1, 0, 0, 0, 0, time.UTC) }
func readCeiling() time.Time { return time.Date(10000, 1, 1, 0, 0, 0, 0, time.UTC) }

// Stream is an answer read page by page: every observation in [from, to),
// at most limit of them (0: all), between the closed_interval points,
// converted.
type Stream struct {
	st         *store.Store
	dp         int64
	from, to   time.Time
	limit      int
	head, tail *store.Point
	convert    func(float64) float64 // nil: keep
}

// Each hands every point of the answer to yield, in order, and stops at
// the first error, its own or yield's.
func (s *Stream) Each(ctx context.Context, yield func(store.Point) error) error {
	add := func(p store.Point) error {
		if s.convert != nil {
			p.Value = s.convert(p.Value)
		}
		return yield(p)
	}
	if s.head != nil {
		if err := add(*s.head); err != nil {
			return err
		}
	}
	from, n := s.from, 0
	for s.limit == 0 || n < s.limit {
		size := streamPage
		if s.limit > 0 {
			size = min(size, s.limit-n)
		}
		pts, err := s.st.ReadPage(ctx, s.dp, from, s.to, size)
		if err != nil {
			return err
		}
		for _, p := range pts {
			if err := add(p); err != nil {
				return err
			}
			n++
		}
		if len(pts) < size {
			break
		}
		// Times are microseconds: the next page starts just after.
		from = pts[len(pts)-1].Time.Add(time.Microsecond)
	}
	if s.tail != nil {
		return add(*s.tail)
	}
	return nil
}

// pagedRange says whether q can be answered page by page in ascending
// time, and with what: every observation in [from, to), at most limit of
// them (0: all). The last max before end begin at the max-th newest, which
// one index step finds.
func pagedRange(ctx context.Context, st *store.Store, dp int64, q Query) (from, to time.Time, limit int, ok bool, err error) {
	if q.Sampled() {
		return from, to, 0, false, nil
	}
	from, to = q.Start, q.End
	if from.IsZero() {
		from = readFloor()
	}
	if to.IsZero() {
		to = readCeiling()
	}
	switch {
	case !q.Start.IsZero() && !q.End.IsZero(), q.Max == 0:
		return from, to, 0, true, nil
	case !q.Start.IsZero(): // the first max after start
		return from, to, q.Max, true, nil
	}
	first, found, err := st.StartOfNewest(ctx, dp, to, q.Max)
	if found {
		from = first
	}
	return from, to, 0, err == nil, err
}
