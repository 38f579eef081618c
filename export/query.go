// Package export plans and reads GET /v2/datapoint/timeseries (api.md
// 4.7, decisions.md 4 and 10): the query's parameters validated into a
// Query, and a Query answered from the store — the window and limit, the
// down-sampling (a fixed samplerate or auto) with its aggregation and the
// interpolation of empty intervals, the closed_interval points, unit and
// currency conversion, and which store read does it, paged when the
// answer is too big for memory. Who may read the datapoint and how the
// answer is written are the HTTP layer's.
//
// It sits between store and http: it imports store, units and codec, and
// store need not learn of units or the API's parameters.
package export

import (
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/openbdp/bdp/codec"
	"github.com/openbdp/bdp/fault"
	"github.com/openbdp/bdp/store"
)

// DefaultMax is how many observations an open-ended read answers when the
// client gives no max (decisions.md 4: the newest 1000).
const DefaultMax = 1000

// maxSampleEvery bounds samplerate, so that its duration cannot overflow.
const maxSampleEvery = 3650 * 24 * time.Hour

// Query is a validated read.
type Query struct {
	DataPointID    string
	Start, End     time.Time // zero: open
	Max            int
	Auto           bool          // samplerate=auto
	Every          time.Duration // samplerate; 0 when not sampling (or auto)
	Agg            store.Aggregation
	Units          string
	UnitsSystem    string
	CurrencySystem string
	Interp         Interpolation // empty intervals of a sampled read
	Short          bool          // answer [[time, value], ...] only
	Closed         bool          // closed_interval: points at start and end
}

// Sampled reports a down-sampled read.
func (q Query) Sampled() bool { return q.Auto || q.Every > 0 }

// Instant reports a read of one instant: start equal to end.
func (q Query) Instant() bool { return !q.Start.IsZero() && q.Start.Equal(q.End) }

// converts reports whether the client asked for a conversion.
func (q Query) converts() bool { return q.Units != "" || q.UnitsSystem != "" || q.CurrencySystem != "" }

// Interpolation is what a down-sampled read answers for an interval
// without observations.
type Interpolation string

const (
	InterpNone     Interpolation = "none"     // leave it out (bdp's answer before, and the default)
	InterpNull     Interpolation = "null"     // its time with the value null
	InterpPrevious Interpolation = "previous" // the value of the interval before
	InterpLinear   Interpolation = "linear"   // on the line between the intervals around it
)

var samplerateRe = regexp.MustCompile(`^([0-9]{1,9})([smhd])$`)

// ParseQuery validates every parameter, each read by name with get (a
// fiber context's Query, url.Values.Get), before anything is read; each
// failure is Invalid and names the parameter.
func ParseQuery(get func(name string) string) (Query, error) {
	var q Query
	raw := get("dataPointID")
	if raw == "" {
		return q, fault.Invalidf("dataPointID is required")
	}
	if err := codec.ValidateDataPointID(raw); err != nil {
		return q, fault.Invalidf("%s", err.Error())
	}
	q.DataPointID = raw
	var err error
	if q.Start, err = ParseTime("start", get("start")); err != nil {
		return q, err
	}
	if q.End, err = ParseTime("end", get("end")); err != nil {
		return q, err
	}
	// start equal to end is an instant, asked with closed_interval
	// (parseCompat refuses it without).
	if !q.Start.IsZero() && !q.End.IsZero() && q.Start.After(q.End) {
		return q, fault.Invalidf("start (%s) must be before end (%s)", q.Start.Format(time.RFC3339Nano), q.End.Format(time.RFC3339Nano))
	}
	q.Max = DefaultMax
	if m := get("max"); m != "" {
		n, err := strconv.ParseInt(m, 10, 32)
		if err != nil || n < 0 {
			return q, fault.Invalidf("max must be an integer >= 0, got %q", m)
		}
		q.Max = int(n)
	}
	if sr := get("samplerate"); sr != "" {
		if q.Auto = strings.EqualFold(sr, "auto"); !q.Auto {
			if q.Every, err = parseSamplerate(sr); err != nil {
				return q, err
			}
		}
	}
	if a := get("aggregation"); a != "" {
		if !q.Sampled() {
			return q, fault.Invalidf("aggregation %q needs a samplerate above 0s", fault.Clip(a))
		}
		q.Agg = store.Aggregation(strings.ToLower(a))
		if !slices.Contains(store.Aggregations, q.Agg) {
			return q, fault.Invalidf("aggregation must be one of %s; got %q", aggregationList(), fault.Clip(a))
		}
	} else {
		q.Agg = store.Mean
	}
	q.Units, q.UnitsSystem, q.CurrencySystem = get("units"), get("units_system"), get("currency_system")
	return q, parseCompat(get, &q)
}

// parseCompat reads the parameters aedifion documents beyond api.md's
// (decisions.md 10) into q, after the others: interpolation of empty
// intervals, the short answer and closed intervals.
func parseCompat(get func(string) string, q *Query) error {
	q.Interp = InterpNone
	if raw := get("interpolation"); raw != "" {
		switch i := Interpolation(strings.ToLower(raw)); i {
		case InterpNone, InterpNull, InterpPrevious, InterpLinear:
			q.Interp = i
		default:
			return fault.Invalidf("interpolation must be one of none, null, previous, linear; got %q", fault.Clip(raw))
		}
	}
	if q.Agg == store.Distinct && (q.Interp == InterpPrevious || q.Interp == InterpLinear) {
		return fault.Invalidf("interpolation %s does not go with aggregation distinct (several values per interval); use null or none", q.Interp)
	}
	var err error
	if q.Short, err = ParseBool(get, "short"); err != nil {
		return err
	}
	if q.Closed, err = ParseBool(get, "closed_interval"); err != nil {
		return err
	}
	if q.Closed && q.Sampled() {
		return fault.Invalidf("closed_interval applies to observations, not to a down-sampled read: drop samplerate or closed_interval")
	}
	if q.Closed && q.Start.IsZero() && q.End.IsZero() {
		return fault.Invalidf("closed_interval needs start or end")
	}
	if q.Instant() && !q.Closed {
		return fault.Invalidf("start (%s) must be before end; equal to it only with closed_interval=true, which answers the value at that instant",
			q.Start.Format(time.RFC3339Nano))
	}
	return nil
}

// ParseBool reads an optional boolean parameter (true, false, 1, 0), the
// way every boolean of the API's queries is read.
func ParseBool(get func(string) string, name string) (bool, error) {
	raw := get(name)
	if raw == "" {
		return false, nil
	}
	b, err := strconv.ParseBool(raw)
	if err != nil {
		return false, fault.Invalidf("%s must be true or false, got %q", name, fault.Clip(raw))
	}
	return b, nil
}

// aggregationList names them for an error message.
func aggregationList() string {
	names := make([]string, len(store.Aggregations))
	for i, a := range store.Aggregations {
		names[i] = string(a)
	}
	return strings.Join(names, ", ")
}

func parseSamplerate(sr string) (time.Duration, error) {
	m := samplerateRe.FindStringSubmatch(sr)
	if m == nil {
		return 0, fault.Invalidf("samplerate must be an integer followed by s, m, h or d (10s, 2m, 1h, 7d), or auto; got %q", sr)
	}
	n, _ := strconv.ParseInt(m[1], 10, 64) // nine digits at most: no overflow
	unit := map[string]time.Duration{"s": time.Second, "m": time.Minute, "h": time.Hour, "d": 24 * time.Hour}[m[2]]
	if n == 0 {
		return 0, nil // aedifion's "highest rate available": the observations themselves
	}
	if n > int64(maxSampleEvery/unit) {
		return 0, fault.Invalidf("samplerate must be between 0s and 3650d, got %q", sr)
	}
	return time.Duration(n) * unit, nil
}

// queryTimeLayouts are the date-time forms start and end accept, after
// normalisation (T separator, + restored).
var queryTimeLayouts = []string{
	time.RFC3339Nano,
	"2006-01-02T15:04:05.999999999Z0700",
	"2006-01-02T15:04:05.999999999Z07",
	"2006-01-02T15:04Z07:00",
	"2006-01-02T15:04:05.999999999",
	"2006-01-02T15:04",
	"2006-01-02",
}

// ParseTime reads the query parameter name (start or end): a date or an
// RFC 3339 date-time, in UTC; empty means not given (zero time).
func ParseTime(name, raw string) (time.Time, error) {
	s := strings.TrimSpace(raw)
	if s == "" {
		return time.Time{}, nil
	}
	if len(s) > 10 && (s[10] == ' ' || s[10] == 't') {
		s = s[:10] + "T" + s[11:]
	}
	// In a query string an unencoded + arrives as a space: "+01:00"
	// becomes " 01:00". No valid time has a space after the time of day.
	if len(s) > 16 {
		s = s[:16] + strings.Replace(s[16:], " ", "+", 1)
	}
	if strings.HasSuffix(s, "z") {
		s = s[:len(s)-1] + "Z"
	}
	for _, layout := range queryTimeLayouts {
		if t, err := time.Parse(layout, s); err == nil {
			return t.UTC(), nil
		}
	}
	return time.Time{}, fault.Invalidf("%s must be a date (2024-03-01) or an RFC 3339 date-time (2024-03-01T12:00:00Z), got %q", name, raw)
}
