package http

import (
	"time"

	"github.com/gofiber/fiber/v2"

	"github.com/openbdp/bdp/export"
	"github.com/openbdp/bdp/store"
)

// The parameters aedifion documents for GET /v2/datapoint/timeseries
// beyond api.md's (decisions.md 10): interpolation of empty intervals,
// the short answer and closed intervals (read by export.ParseQuery), and
// the short answer's encoding.

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

// queryBool reads an optional boolean query parameter (export.ParseBool).
func queryBool(c *fiber.Ctx, name string) (bool, error) {
	return export.ParseBool(func(key string) string { return c.Query(key) }, name)
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
