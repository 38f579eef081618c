package http

import (
	"context"

	"github.com/gofiber/fiber/v2"

	"github.com/openbdp/bdp/export"
	"github.com/openbdp/bdp/fault"
	"github.com/openbdp/bdp/rbac"
	"github.com/openbdp/bdp/store"
	"github.com/openbdp/bdp/units"
)

// GET /v2/datapoint/timeseries (api.md 4.7, decisions.md 4): observations
// of one datapoint, by time window and limit, optionally down-sampled and
// converted to another unit or currency. Package export validates the
// query and reads it; the handler checks read access and writes the
// answer.

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

// readTimeseries is GET /v2/datapoint/timeseries.
func (s *Server) readTimeseries(c *fiber.Ctx, cl *call) (any, error) {
	q, err := export.ParseQuery(func(name string) string { return c.Query(name) })
	if err != nil {
		return nil, err
	}
	ctx := c.UserContext()
	dp, err := s.readableDatapoint(ctx, cl, q.DataPointID)
	if err != nil {
		return nil, err
	}
	res, err := export.Read(ctx, s.store, cl.ProjectID, dp, q)
	if err != nil {
		return nil, err
	}
	if res.Stream != nil {
		return streamTimeseries(dp, res, q.Short), nil
	}
	if q.Short {
		return rawJSON(encodeShort(res.Points)), nil
	}
	return rawJSON(encodeTimeseries(res.Points, res.Key, dp, res.Unit, res.Every)), nil
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

// currencyRates reads the operator's exchange-rate table.
func (s *Server) currencyRates(ctx context.Context) (units.Rates, error) {
	return export.CurrencyRates(ctx, s.store)
}
