package http

import (
	"bufio"
	"context"
	"time"

	"github.com/openbdp/bdp/store"
)

// A raw read of more observations than one answer holds in memory
// (store.MaxReadPoints) is streamed instead of refused, because api.md
// 4.7 and 8 say max=0, and start with end, return all, and give max no
// upper bound: the answer is
// written page by page as it is read, in constant memory. Its status is
// sent before the first page, so a failure half-way (the database gone)
// can only cut the answer short: the client then holds JSON that does not
// parse, never a silently partial series.

// streamedJSON is a handler result written to the client by the function
// after the handler returns (see wrap).
type streamedJSON func(w *bufio.Writer) error

const (
	streamPage    = 50_000           // observations per read
	streamFlush   = 64 << 10         // bytes written at once
	streamTimeout = 30 * time.Minute // the whole answer, however slow the client
)

// The years an observation may have (pipeline.Observation.Validate), which
// close the open sides of a paged read.
func readFloor() time.Time   { return time.Date(1900, 1, 1, 0, 0, 0, 0, time.UTC) }
func readCeiling() time.Time { return time.Date(10000, 1, 1, 0, 0, 0, 0, time.UTC) }

// pagedRange says whether q can be answered page by page in ascending
// time, and with what: every observation in [from, to), at most limit of
// them (0: all). The last max before end begin at the max-th newest, which
// one index step finds.
func (s *Server) pagedRange(ctx context.Context, dp int64, q timeseriesQuery) (from, to time.Time, limit int, ok bool, err error) {
	if q.sampled() {
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
	first, found, err := s.store.StartOfNewest(ctx, dp, to, q.Max)
	if found {
		from = first
	}
	return from, to, 0, err == nil, err
}

// streamShape is how a streamed answer is written: short (encodeShort)
// or whole (encodeTimeseries), with the closed_interval points.
type streamShape struct {
	short      bool
	head, tail *store.Point
}

// streamTimeseries answers the observations of dp in [from, to), at most
// limit (0: all), converted by conv, in the shape of encodeTimeseries or
// encodeShort.
func (s *Server) streamTimeseries(dp store.DatapointInfo, conv conversion, from, to time.Time, limit int, shape streamShape) streamedJSON {
	return func(w *bufio.Writer) error {
		ctx, cancel := context.WithTimeout(context.Background(), streamTimeout)
		defer cancel()
		b := make([]byte, 0, streamFlush+256)
		if shape.short {
			b = append(b, '[')
		} else {
			b = append(b, `{"data":[`...)
		}
		written := 0 // points in the answer, the bounds included
		add := func(p store.Point) {
			if conv.convert != nil {
				p.Value = conv.convert(p.Value)
			}
			if written > 0 {
				b = append(b, ',')
			}
			if shape.short {
				b = appendShortPoint(b, p)
			} else {
				b = appendPoint(b, p, "value")
			}
			written++
		}
		if shape.head != nil {
			add(*shape.head)
		}
		n := 0
		for limit == 0 || n < limit {
			size := streamPage
			if limit > 0 {
				size = min(size, limit-n)
			}
			pts, err := s.store.ReadPage(ctx, dp.ID, from, to, size)
			if err != nil {
				return err
			}
			for _, p := range pts {
				add(p)
				n++
				if len(b) >= streamFlush {
					if _, err := w.Write(b); err != nil {
						return err
					}
					b = b[:0]
				}
			}
			if len(pts) < size {
				break
			}
			// Times are microseconds: the next page starts just after.
			from = pts[len(pts)-1].Time.Add(time.Microsecond)
		}
		if shape.tail != nil {
			add(*shape.tail)
		}
		if shape.short {
			b = append(b, ']')
		} else {
			b = appendTimeseriesTail(b, dp, conv.unit, 0)
		}
		if _, err := w.Write(b); err != nil {
			return err
		}
		return w.Flush()
	}
}
