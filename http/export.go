package http

import (
	"context"
	"errors"
	"fmt"
	"math"
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/gofiber/fiber/v2"

	"github.com/openbdp/bdp/fault"
	"github.com/openbdp/bdp/rbac"
	"github.com/openbdp/bdp/store"
	"github.com/openbdp/bdp/units"
)

// GET /v2/datapoint/timeseries (api.md 4.7, decisions.md 4): observations
// of one datapoint, by time window and limit, optionally down-sampled and
// converted to another unit or currency.

// defaultMax is how many observations an open-ended read answers when the
// client gives no max (decisions.md 4: the newest 1000).
const defaultMax = 1000

// maxSampleEvery bounds samplerate, so that its duration cannot overflow.
const maxSampleEvery = 3650 * 24 * time.Hour

// timeseriesParams documents the query of GET /v2/datapoint/timeseries.
var timeseriesParams = []param{
	{Name: "project_id", Type: "integer", Required: true, Doc: "the project of the datapoint"},
	{Name: "dataPointID", Type: "string", Required: true, Doc: "the datapoint"},
	{Name: "start", Type: "string", Doc: "inclusive: observations at or after start. A date (2024-03-01, midnight UTC) " +
		"or an RFC 3339 date-time; T or a space between date and time; offset Z, +01, +0100 or +01:00 (UTC when " +
		"missing; a + decoded to a space by form encoding is read as +). With start but no end: the first max observations from start."},
	{Name: "end", Type: "string", Doc: "exclusive: observations before end. Same forms as start. With end but no start: the last max observations before end. " +
		"start must be before end, or equal to it with closed_interval=true: the value at that instant."},
	{Name: "max", Type: "integer", Doc: "at most this many observations (integer >= 0); 0 returns all. Ignored when both start and end " +
		"are given, and with samplerate. Default 1000: without start, end and max the answer is the newest 1000 observations, ascending. " +
		"Answers of more than 1000000 observations are streamed."},
	{Name: "samplerate", Type: "string", Doc: "down-sample: an integer followed by s, m, h or d (10s, 2m, 1h, 7d), or auto; " +
		"0s (0m, 0h, 0d) is the highest rate there is: the observations themselves, unsampled. " +
		"Intervals are counted from 2000-01-01T00:00:00Z (1h intervals start on full hours, 1d at midnight UTC); each answer " +
		"value aggregates the observations of one interval [t, t+samplerate), its time is the left boundary t, and intervals without " +
		"observations are left out unless interpolation says otherwise. Without start (end) the first (last) stored observation bounds the range. At most 1000000 intervals. " +
		"auto: the interval is (end - start) / N, rounded up to whole seconds, with N the project's autosampling_n (default 200), " +
		"counted from start, so there are at most N intervals and none begins before start; " +
		"when the range holds fewer than N observations they are answered unsampled. The answer's samplerate field gives the interval used."},
	{Name: "aggregation", Type: "string", Doc: "with samplerate only: mean (default), min, max, median, count, mode (the most frequent value; " +
		"the smallest among equally frequent ones) or distinct (every distinct value of the interval, ascending, each a point at the " +
		"interval's time; at most 1000000 in all). The key of each value in data is the aggregation's name (mean: {time, mean})."},
	{Name: "units", Type: "string", Doc: "convert to this unit (a leaf id of GET /v2/labels/definitions, or a price such as USD/MWh). " +
		"Conversion starts from the datapoint's system tag units; 422 when it has none, when that unit is unknown, or when the target " +
		"is unknown or incompatible with it. Wins over units_system and currency_system."},
	{Name: "units_system", Type: "string", Doc: "convert to the fitting unit of this units system (SI or imperial, from GET /v2/labels/systems); " +
		"a unit already of the system stays as it is. The answer's units field names the unit. The project's own units_system setting " +
		"does not apply by itself: values are converted only on request."},
	{Name: "currency_system", Type: "string", Doc: "convert the currency of a price or amount (EUR/kWh to USD/kWh) with the operator's exchange " +
		"rates; a unit without a currency stays as it is."},
}

// timeseriesAnswer documents the answer; the handler writes the JSON by
// hand (encodeTimeseries).
type timeseriesAnswer struct {
	Data        []timeseriesPoint    `json:"data" doc:"ascending by time"`
	DataPointID string               `json:"dataPointID"`
	Tags        []store.DatapointTag `json:"tags"`
	Units       string               `json:"units" doc:"only when units, units_system or currency_system was given: the unit of the values"`
	Samplerate  string               `json:"samplerate" doc:"only when sampled: the interval length, as 3600s"`
}

type timeseriesPoint struct {
	Time     string  `json:"time" doc:"RFC 3339, UTC; when sampled, the left boundary of the interval"`
	Value    float64 `json:"value" doc:"unsampled observations"`
	Mean     float64 `json:"mean" nullable:"true" doc:"sampled, aggregation mean (the default); null: an empty interval (interpolation)"`
	Min      float64 `json:"min" nullable:"true" doc:"sampled, aggregation min"`
	Max      float64 `json:"max" nullable:"true" doc:"sampled, aggregation max"`
	Median   float64 `json:"median" nullable:"true" doc:"sampled, aggregation median"`
	Count    float64 `json:"count" nullable:"true" doc:"sampled, aggregation count (never converted)"`
	Mode     float64 `json:"mode" nullable:"true" doc:"sampled, aggregation mode"`
	Distinct float64 `json:"distinct" nullable:"true" doc:"sampled, aggregation distinct"`
}

// shortAnswerSchema is the answer with short=true: [[time, value], ...].
var shortAnswerSchema = map[string]any{
	"type": "array", "description": "short=true: [time, value] pairs, ascending by time",
	// Each pair as an array of two items, time (string) then value (number,
	// null for an empty interval); prefixItems would say which is which,
	// but OpenAPI tools that read 3.1 as 3.0 choke on it.
	"items": map[string]any{"type": "array", "minItems": 2, "maxItems": 2,
		"items": map[string]any{"anyOf": []any{map[string]any{"type": "string"}, map[string]any{"type": "number"}, map[string]any{"type": "null"}}}},
}

// timeseriesQuery is the parsed query.
type timeseriesQuery struct {
	DataPointID  string
	Start, End   time.Time // zero: open
	Max          int
	Auto         bool          // samplerate=auto
	Every        time.Duration // samplerate; 0 when not sampling (or auto)
	Agg          store.Aggregation
	Units        string
	UnitsSystem  string
	CurrencySys  string
	wantsConvert bool
	Interp       interpolation // empty intervals of a sampled read
	Short        bool          // answer [[time, value], ...] only
	Closed       bool          // closed_interval: points at start and end
}

func (q timeseriesQuery) sampled() bool { return q.Auto || q.Every > 0 }

var samplerateRe = regexp.MustCompile(`^([0-9]{1,9})([smhd])$`)

// parseTimeseriesQuery validates every parameter before anything is read;
// each failure is a 400 naming the parameter.
func parseTimeseriesQuery(c *fiber.Ctx) (timeseriesQuery, error) {
	var q timeseriesQuery
	raw := c.Query("dataPointID")
	if raw == "" {
		return q, fault.Invalidf("dataPointID is required")
	}
	var err error
	if q.DataPointID, err = validDataPointID(raw); err != nil {
		return q, err
	}
	if q.Start, err = parseQueryTime("start", c.Query("start")); err != nil {
		return q, err
	}
	if q.End, err = parseQueryTime("end", c.Query("end")); err != nil {
		return q, err
	}
	// start equal to end is an instant, asked with closed_interval
	// (parseExportCompat refuses it without).
	if !q.Start.IsZero() && !q.End.IsZero() && q.Start.After(q.End) {
		return q, fault.Invalidf("start (%s) must be before end (%s)", q.Start.Format(time.RFC3339Nano), q.End.Format(time.RFC3339Nano))
	}
	q.Max = defaultMax
	if m := c.Query("max"); m != "" {
		n, err := strconv.ParseInt(m, 10, 32)
		if err != nil || n < 0 {
			return q, fault.Invalidf("max must be an integer >= 0, got %q", m)
		}
		q.Max = int(n)
	}
	if sr := c.Query("samplerate"); sr != "" {
		if q.Auto = strings.EqualFold(sr, "auto"); !q.Auto {
			if q.Every, err = parseSamplerate(sr); err != nil {
				return q, err
			}
		}
	}
	if a := c.Query("aggregation"); a != "" {
		if !q.sampled() {
			return q, fault.Invalidf("aggregation %q needs a samplerate above 0s", fault.Clip(a))
		}
		q.Agg = store.Aggregation(strings.ToLower(a))
		if _, known := aggregationNames[q.Agg]; !known {
			return q, fault.Invalidf("aggregation must be one of %s; got %q", aggregationList, fault.Clip(a))
		}
	} else {
		q.Agg = store.Mean
	}
	q.Units, q.UnitsSystem, q.CurrencySys = c.Query("units"), c.Query("units_system"), c.Query("currency_system")
	q.wantsConvert = q.Units != "" || q.UnitsSystem != "" || q.CurrencySys != ""
	return q, parseExportCompat(c, &q)
}

// aggregationList names them for an error message.
var aggregationList = func() string {
	names := make([]string, len(store.Aggregations))
	for i, a := range store.Aggregations {
		names[i] = string(a)
	}
	return strings.Join(names, ", ")
}()

var aggregationNames = func() map[store.Aggregation]bool {
	m := map[store.Aggregation]bool{}
	for _, a := range store.Aggregations {
		m[a] = true
	}
	return m
}()

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

// parseQueryTime reads start or end; empty means not given (zero time).
func parseQueryTime(name, raw string) (time.Time, error) {
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

// readTimeseries is GET /v2/datapoint/timeseries.
func (s *Server) readTimeseries(c *fiber.Ctx, cl *call) (any, error) {
	q, err := parseTimeseriesQuery(c)
	if err != nil {
		return nil, err
	}
	ctx := c.UserContext()
	dp, err := s.readableDatapoint(ctx, cl, q.DataPointID)
	if err != nil {
		return nil, err
	}
	// Conversion first: a conversion that cannot be done fails before any
	// observation is read.
	conv, err := s.conversionFor(ctx, dp, q)
	if err != nil {
		return nil, err
	}
	head, tail, err := s.closedBounds(ctx, dp.ID, q)
	if err != nil {
		return nil, err
	}
	pts, key, every, err := s.readPoints(ctx, cl.ProjectID, dp.ID, q)
	if errors.Is(err, store.ErrOverReadLimit) {
		from, to, limit, ok, err := s.pagedRange(ctx, dp.ID, q)
		if err != nil {
			return nil, err
		}
		if ok {
			return s.streamTimeseries(dp, conv, from, to, limit, streamShape{short: q.Short, head: head, tail: tail}), nil
		}
	}
	if err != nil {
		return nil, err
	}
	pts = withBounds(pts, head, tail)
	if conv.convert != nil && key != string(store.Count) {
		for i := range pts {
			if !math.IsNaN(pts[i].Value) { // an empty interval stays null
				pts[i].Value = conv.convert(pts[i].Value)
			}
		}
	}
	if q.Short {
		return rawJSON(encodeShort(pts)), nil
	}
	return rawJSON(encodeTimeseries(pts, key, dp, conv.unit, every)), nil
}

// readableDatapoint loads the datapoint and checks the caller's TagAuths
// (the rule of requireDatapointAccess, judged on the tags just loaded
// instead of loading them a second time). Access is decided before
// existence, so a caller without read access cannot probe which
// dataPointIDs exist: 403 either way, 404 only for readers.
func (s *Server) readableDatapoint(ctx context.Context, cl *call, name string) (store.DatapointInfo, error) {
	dp, err := s.store.Datapoint(ctx, cl.ProjectID, name)
	missing := fault.Is(err, fault.NotFound)
	if err != nil && !missing {
		return dp, err
	}
	if !cl.Perms.DatapointAccess(cl.ProjectID, rbac.Datapoint{ID: name, Tags: dp.Tags}).Read {
		return dp, fault.Forbiddenf("no read access to datapoint %q", name)
	}
	if missing {
		return dp, fault.NotFoundf("datapoint %q not found in project %d", name, cl.ProjectID)
	}
	return dp, nil
}

// readPoints answers the observations or aggregates of the query, with
// the key of their values and, when sampled, the interval used.
func (s *Server) readPoints(ctx context.Context, projectID, dp int64, q timeseriesQuery) ([]store.Point, string, time.Duration, error) {
	if !q.sampled() {
		pts, err := s.store.ReadObservations(ctx, dp, store.ReadQuery{Start: q.Start, End: q.End, Max: q.Max})
		return pts, "value", 0, err
	}
	start, end, ok, err := s.sampleRange(ctx, dp, q)
	if err != nil || !ok {
		return nil, string(q.Agg), 0, err
	}
	every, origin := q.Every, store.SampleOrigin
	if q.Auto {
		ps, err := s.store.ProjectSettings(ctx, projectID)
		if err != nil {
			return nil, "", 0, err
		}
		n := int64(ps.AutosamplingN)
		have, err := s.store.CountObservations(ctx, dp, start, end, n)
		if err != nil {
			return nil, "", 0, err
		}
		if have < n {
			// Fewer than N: nothing to sample (api.md 4.7). Under N rows,
			// so the range read is small.
			pts, err := s.store.ReadObservations(ctx, dp, store.ReadQuery{Start: start, End: end})
			return pts, "value", 0, err
		}
		// Counted from start, the range divides into at most N intervals
		// (api.md 4.7: the request interval divided by N), and none begins
		// before start; fixed samplerates keep full hours and days.
		every, origin = autoInterval(start, end, n), start
	}
	if bins := store.SampleBins(start, end, every, origin); bins > store.MaxReadPoints {
		return nil, "", 0, fault.Invalidf("samplerate %s is too fine for the range: %d intervals, at most %d", formatEvery(every), bins, store.MaxReadPoints)
	}
	pts, err := s.store.ReadSampled(ctx, dp, start, end, every, origin, q.Agg)
	if err != nil {
		return nil, "", 0, err
	}
	return fillIntervals(pts, start, end, every, origin, q.Interp), string(q.Agg), every, nil
}

// sampleRange is the range a sampled read covers: start and end as given,
// a missing side taken from the first or last stored observation. ok is
// false when the range holds no observation at all.
func (s *Server) sampleRange(ctx context.Context, dp int64, q timeseriesQuery) (start, end time.Time, ok bool, err error) {
	start, end = q.Start, q.End
	if !start.IsZero() && !end.IsZero() {
		return start, end, true, nil
	}
	first, last, ok, err := s.store.ObservationSpan(ctx, dp, start, end)
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

func formatEvery(d time.Duration) string {
	return strconv.FormatInt(int64(d/time.Second), 10) + "s"
}

// conversion is what readTimeseries does to values: convert (nil: keep)
// and the unit to report (empty: none, the client asked for nothing).
type conversion struct {
	unit    string
	convert func(float64) float64
}

// conversionFor works out the target unit the way package units
// prescribes: the datapoint's units tag, then units_system, then
// currency_system, and units wins over both. Errors: an unknown system
// name is a bad parameter (400); a conversion that cannot be done is 422.
func (s *Server) conversionFor(ctx context.Context, dp store.DatapointInfo, q timeseriesQuery) (conversion, error) {
	if !q.wantsConvert {
		return conversion{}, nil
	}
	source, ok := dp.Tag("system", "units")
	if !ok || strings.TrimSpace(source) == "" {
		return conversion{}, fault.Unprocessablef("datapoint %q has no units tag, so its values cannot be converted", dp.DataPointID)
	}
	to := source
	var err error
	if q.UnitsSystem != "" {
		if to, err = units.ForSystem(to, q.UnitsSystem); err != nil {
			return conversion{}, conversionError("units_system", source, "units system "+strconv.Quote(q.UnitsSystem), err)
		}
	}
	if q.CurrencySys != "" {
		if to, err = units.ForCurrencySystem(to, q.CurrencySys); err != nil {
			return conversion{}, conversionError("currency_system", source, "currency system "+strconv.Quote(q.CurrencySys), err)
		}
	}
	if q.Units != "" {
		to = q.Units
	}
	// Most conversions need no exchange rate; the rate table is read only
	// when currencies differ.
	f, err := units.Rates{}.Converter(source, to)
	if errors.Is(err, units.ErrNoRate) {
		var rates units.Rates
		if rates, err = s.currencyRates(ctx); err != nil {
			return conversion{}, err
		}
		f, err = rates.Converter(source, to)
	}
	if err != nil {
		return conversion{}, conversionError("units", source, strconv.Quote(to), err)
	}
	return conversion{unit: to, convert: f}, nil
}

// conversionError names both ends (to is already quoted or described) and
// keeps the package units error, which holds no internals, as the reason.
// An unknown system is a bad parameter value rather than an impossible
// conversion.
func conversionError(param, from, to string, err error) error {
	if errors.Is(err, units.ErrUnknownSystem) {
		return fault.Wrap(fault.Invalid, err, fmt.Sprintf("%s: %s", param, err.Error()))
	}
	return fault.Wrap(fault.Unprocessable, err, fmt.Sprintf("cannot convert from %q to %s: %s", from, to, err.Error()))
}

// currencyRates reads the operator's exchange-rate table.
func (s *Server) currencyRates(ctx context.Context) (units.Rates, error) {
	table, err := s.store.CurrencyRates(ctx)
	if err != nil {
		return units.Rates{}, err
	}
	r, err := units.NewRates(table)
	if err != nil {
		return units.Rates{}, fmt.Errorf("stored currency rates: %w", err)
	}
	return r, nil
}
