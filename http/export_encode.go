package http

import (
	"math"
	"strconv"
	"time"

	"github.com/openbdp/bdp/export"
	"github.com/openbdp/bdp/store"
)

// The JSON of GET /v2/datapoint/timeseries, written by hand (see
// encodeTimeseries) for the whole answer or page by page when streamed.

// encodeTimeseries writes the answer without reflection: for a thousand
// points encoding/json would spend more time than the query.
func encodeTimeseries(pts []store.Point, key string, dp store.DatapointInfo, unit string, every time.Duration) []byte {
	b := make([]byte, 0, 64+len(pts)*(48+len(key))+64*len(dp.Tags))
	b = append(b, `{"data":[`...)
	for i, p := range pts {
		if i > 0 {
			b = append(b, ',')
		}
		b = appendPoint(b, p, key)
	}
	return appendTimeseriesTail(b, dp, unit, every)
}

func appendPoint(b []byte, p store.Point, key string) []byte {
	b = append(b, `{"time":"`...)
	b = p.Time.UTC().AppendFormat(b, time.RFC3339Nano)
	b = append(b, `","`...)
	b = append(b, key...) // one of a fixed set of names
	b = append(b, `":`...)
	b = appendJSONFloat(b, p.Value)
	return append(b, '}')
}

// appendTimeseriesTail closes the data array and writes the other fields.
func appendTimeseriesTail(b []byte, dp store.DatapointInfo, unit string, every time.Duration) []byte {
	b = append(b, `],"dataPointID":`...)
	b = appendJSONString(b, dp.DataPointID)
	b = append(b, `,"tags":[`...)
	for i, t := range dp.Tags {
		if i > 0 {
			b = append(b, ',')
		}
		b = append(b, `{"id":`...)
		b = strconv.AppendInt(b, t.ID, 10)
		b = append(b, `,"key":`...)
		b = appendJSONString(b, t.Key)
		b = append(b, `,"value":`...)
		b = appendJSONString(b, t.Value)
		b = append(b, `,"source":`...)
		b = appendJSONString(b, t.Source)
		b = append(b, '}')
	}
	b = append(b, ']')
	if unit != "" {
		b = append(b, `,"units":`...)
		b = appendJSONString(b, unit)
	}
	if every > 0 {
		b = append(b, `,"samplerate":`...)
		b = appendJSONString(b, export.FormatEvery(every))
	}
	return append(b, '}')
}

// appendJSONFloat formats like encoding/json: shortest representation,
// exponent only for very small or large magnitudes. Non-finite values
// (none are stored, conversions keep values finite) become null.
func appendJSONFloat(b []byte, f float64) []byte {
	if math.IsNaN(f) || math.IsInf(f, 0) {
		return append(b, "null"...)
	}
	abs := math.Abs(f)
	format := byte('f')
	if abs != 0 && (abs < 1e-6 || abs >= 1e21) {
		format = 'e'
	}
	b = strconv.AppendFloat(b, f, format, -1, 64)
	if format == 'e' {
		// 1e-07 becomes 1e-7, as encoding/json writes it.
		if n := len(b); n >= 4 && b[n-4] == 'e' && b[n-3] == '-' && b[n-2] == '0' {
			b[n-2] = b[n-1]
			b = b[:n-1]
		}
	}
	return b
}

// appendJSONString writes s as a JSON string: quotes, backslash and
// control characters escaped; everything else (valid UTF-8 from the
// database) as it is.
func appendJSONString(b []byte, s string) []byte {
	const hex = "0123456789abcdef"
	b = append(b, '"')
	for i := 0; i < len(s); i++ {
		ch := s[i]
		switch {
		case ch == '"' || ch == '\\':
			b = append(b, '\\', ch)
		case ch < 0x20:
			b = append(b, '\\', 'u', '0', '0', hex[ch>>4], hex[ch&0xf])
		default:
			b = append(b, ch)
		}
	}
	return append(b, '"')
}
