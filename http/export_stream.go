package http

import (
	"bufio"
	"context"
	"time"

	"github.com/openbdp/bdp/export"
	"github.com/openbdp/bdp/store"
)

// A raw read of more observations than one answer holds in memory
// (store.MaxReadPoints) is streamed instead of refused (export.Stream):
// the answer is written page by page as it is read, in constant memory.
// Its status is sent before the first page, so a failure half-way (the
// database gone) can only cut the answer short: the client then holds
// JSON that does not parse, never a silently partial series.

// streamedJSON is a handler result written to the client by the function
// after the handler returns (see wrap).
type streamedJSON func(w *bufio.Writer) error

const (
	streamFlush   = 64 << 10         // bytes written at once
	streamTimeout = 30 * time.Minute // the whole answer, however slow the client
)

// streamTimeseries writes res.Stream, an answer too big to hold, in the
// shape of encodeTimeseries or (short) encodeShort as export reads it.
func streamTimeseries(dp store.DatapointInfo, res export.Result, short bool) streamedJSON {
	return func(w *bufio.Writer) error {
		ctx, cancel := context.WithTimeout(context.Background(), streamTimeout)
		defer cancel()
		b := make([]byte, 0, streamFlush+256)
		if short {
			b = append(b, '[')
		} else {
			b = append(b, `{"data":[`...)
		}
		written := 0
		err := res.Stream.Each(ctx, func(p store.Point) error {
			if written > 0 {
				b = append(b, ',')
			}
			if short {
				b = appendShortPoint(b, p)
			} else {
				b = appendPoint(b, p, res.Key)
			}
			written++
			if len(b) >= streamFlush {
				if _, err := w.Write(b); err != nil {
					return err
				}
				b = b[:0]
			}
			return nil
		})
		if err != nil {
			return err
		}
		if short {
			b = append(b, ']')
		} else {
			b = appendTimeseriesTail(b, dp, res.Unit, 0)
		}
		if _, err := w.Write(b); err != nil {
			return err
		}
		return w.Flush()
	}
}
