package bench

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/url"
	"slices"
	"strings"
	"time"

	"github.com/openbdp/bdp/store"
)

// The analytics scenario: issue 10's two figures. Part "functions" runs
// each analysis function by hand, Runs times, over 4 weeks of 1-minute
// data on every pin it reads (analytics_functions.go). Part "weekly"
// makes a weekly batch of Instances enabled instances while an HTTP
// ingest of IngestRate obs/s runs beside it (analytics_weekly.go). Both
// drive bdp serve through its API as a user would and follow the
// function catalog bdp serves (GET /v2/analytics/functions): which
// functions exist, which component each runs on, which pins and
// attributes it reads. Series go into PostgreSQL with COPY through the
// store (analytics_series.go), the fast path of a bulk import.

// AnalyticsOptions shape the scenario; zero values take the sizes.
type AnalyticsOptions struct {
	Binary string
	Env    []string

	// Part 1, functions: Runs manual runs of each function over Weeks
	// weeks of 1-minute data. With PreviousData the weeks before the
	// period hold data too, so the summary KPI's previous period (which a
	// run computes when no stored result covers it) reads as much as the
	// period itself.
	Functions    bool
	Runs         int           // default 9
	Weeks        int           // default 4
	PreviousData bool          // load the period before too
	Poll         time.Duration // how often a run's result is polled; default 2 ms

	// Part 2, weekly: Instances enabled instances over Projects projects,
	// each with a week of 1-minute data on its own datapoints, run by the
	// weekly schedule while IngestRate obs/s are uploaded over HTTP to
	// IngestDatapoints datapoints of another project.
	Weekly           bool
	Instances        int // default 1,000
	Projects         int // default 100
	IngestRate       int // default 20,000
	IngestDatapoints int // default 1,000
	// BatchLimit bounds the wait for the batch; default 10 min.
	BatchLimit time.Duration

	Progress io.Writer // progress lines; nil for none
}

func (o *AnalyticsOptions) fill() {
	def := func(p *int, v int) {
		if *p <= 0 {
			*p = v
		}
	}
	def(&o.Runs, 9)
	def(&o.Weeks, 4)
	def(&o.Instances, 1_000)
	def(&o.Projects, 100)
	def(&o.IngestRate, 20_000)
	def(&o.IngestDatapoints, 1_000)
	if o.Poll <= 0 {
		o.Poll = 2 * time.Millisecond
	}
	if o.BatchLimit <= 0 {
		o.BatchLimit = 10 * time.Minute
	}
	if o.Progress == nil {
		o.Progress = io.Discard
	}
}

// Analytics runs the parts asked for, each on a platform of its own, and
// returns their figures in one object.
func Analytics(ctx context.Context, o AnalyticsOptions) (map[string]any, error) {
	o.fill()
	if !o.Functions && !o.Weekly {
		return nil, fmt.Errorf("analytics: no part to run")
	}
	result := map[string]any{"scenario": "analytics"}
	if o.Functions {
		if err := analyticsPart(ctx, o, result, runFunctionsPart); err != nil {
			return nil, fmt.Errorf("functions: %w", err)
		}
	}
	if o.Weekly {
		if err := analyticsPart(ctx, o, result, runWeeklyPart); err != nil {
			return nil, fmt.Errorf("weekly: %w", err)
		}
	}
	return result, nil
}

// analyticsBench is one part's run: the platform, a store on its
// database, and the function catalog it serves.
type analyticsBench struct {
	*Platform
	o         AnalyticsOptions
	st        *store.Store
	functions []benchFunction
}

func analyticsPart(ctx context.Context, o AnalyticsOptions, result map[string]any,
	run func(context.Context, *analyticsBench, map[string]any) error) error {
	p, err := Start(ctx, Options{Binary: o.Binary, Env: o.Env})
	if err != nil {
		return err
	}
	defer p.Close()
	st, err := store.Open(ctx, p.DBURL)
	if err != nil {
		return err
	}
	defer st.Close()
	b := &analyticsBench{Platform: p, o: o, st: st}
	if b.functions, err = b.discover(ctx); err != nil {
		return err
	}
	return run(ctx, b, result)
}

func (b *analyticsBench) progress(format string, args ...any) {
	fmt.Fprintf(b.o.Progress, time.Now().UTC().Format("15:04:05 ")+format+"\n", args...)
}

// benchFunction is an analysis function with the component the bench runs
// it on: of the components it fits, the one on which it reads the most
// pins (the dearest run), the catalog's first on a tie.
type benchFunction struct {
	ID             int64
	AlphanumericID string
	Component      catalogComponent
	Pins           []store.CatalogPin // of Component, every pin the function reads
	Attributes     []string           // keys of the attributes it reads
}

type catalogComponent struct {
	ID             int64  `json:"id"`
	AlphanumericID string `json:"alphanumeric_id"`
	pins           []store.CatalogPin
}

// apiFunction is an entry of GET /v2/analytics/functions (aedifion's
// AnalysisFunction), the fields the bench reads.
type apiFunction struct {
	ID             int64  `json:"id"`
	AlphanumericID string `json:"alphanumeric_id"`
	Pins           []struct {
		AlphanumericID string `json:"alphanumeric_id"`
	} `json:"pins"`
	Attributes []struct {
		Key string `json:"key"`
	} `json:"attributes"`
}

// discover reads the catalog as bdp serves it: every component with its
// pins, and the functions that fit each.
func (b *analyticsBench) discover(ctx context.Context) ([]benchFunction, error) {
	var comps []catalogComponent
	if err := b.Do(ctx, "GET", "/v2/components", nil, &comps, false); err != nil {
		return nil, err
	}
	chosen := map[string]*benchFunction{}
	var order []string
	for _, c := range comps {
		if err := b.Do(ctx, "GET", fmt.Sprintf("/v2/component/%d/pins", c.ID), nil, &c.pins, false); err != nil {
			return nil, err
		}
		var fns []apiFunction
		q := "/v2/analytics/functions?component_alphanumeric_id=" + url.QueryEscape(c.AlphanumericID)
		if err := b.Do(ctx, "GET", q, nil, &fns, false); err != nil {
			return nil, err
		}
		for _, f := range fns {
			bf := benchFunction{ID: f.ID, AlphanumericID: f.AlphanumericID, Component: c}
			for _, fp := range f.Pins {
				i := slices.IndexFunc(c.pins, func(p store.CatalogPin) bool { return p.AlphanumericID == fp.AlphanumericID })
				if i < 0 {
					return nil, fmt.Errorf("function %s names pin %q, which component %s lacks", f.AlphanumericID, fp.AlphanumericID, c.AlphanumericID)
				}
				if !slices.ContainsFunc(bf.Pins, func(p store.CatalogPin) bool { return p.ID == c.pins[i].ID }) {
					bf.Pins = append(bf.Pins, c.pins[i])
				}
			}
			for _, a := range f.Attributes {
				bf.Attributes = append(bf.Attributes, a.Key)
			}
			if prev, ok := chosen[f.AlphanumericID]; !ok {
				order = append(order, f.AlphanumericID)
				chosen[f.AlphanumericID] = &bf
			} else if len(bf.Pins) > len(prev.Pins) {
				*prev = bf
			}
		}
	}
	if len(order) == 0 {
		return nil, fmt.Errorf("GET /v2/analytics/functions lists no function for any component")
	}
	out := make([]benchFunction, 0, len(order))
	for _, id := range order {
		out = append(out, *chosen[id])
	}
	slices.SortFunc(out, func(a, b benchFunction) int { return int(a.ID - b.ID) })
	var names []string
	for _, f := range out {
		names = append(names, fmt.Sprintf("%s on %s (%d pins)", f.AlphanumericID, f.Component.AlphanumericID, len(f.Pins)))
	}
	b.progress("%d functions: %s", len(out), strings.Join(names, ", "))
	return out, nil
}

// envelope is the answer of a create or run: {success, operation, resource}.
type envelope[T any] struct {
	Resource T `json:"resource"`
}

// mapComponent creates a component of f's kind in project, maps each of
// f's pins to the datapoint named by dp(pin) and fills in f's attributes,
// all over HTTP, and creates the instance of f on it. It returns the
// instance id.
func (b *analyticsBench) mapComponent(ctx context.Context, project int64, f benchFunction, name string,
	dp func(pin string) string, enabled bool) (int64, error) {
	base := fmt.Sprintf("/v2/project/%d/componentInProject", project)
	var cip envelope[struct {
		ID int64 `json:"id"`
	}]
	if err := b.Do(ctx, "POST", base, map[string]any{"component_id": f.Component.ID, "nameEN": name}, &cip, false); err != nil {
		return 0, err
	}
	for _, pin := range f.Pins {
		body := map[string]any{"componentinproject_id": cip.Resource.ID, "pin_id": pin.ID, "dataPointID": dp(pin.AlphanumericID)}
		if err := b.Do(ctx, "POST", base+"/pin/datapoint", body, nil, false); err != nil {
			return 0, err
		}
	}
	for _, key := range f.Attributes {
		v, ok := attributeValue(key)
		if !ok {
			continue // the function's documented default
		}
		body := map[string]any{"componentinproject_id": cip.Resource.ID, "key": key, "value": v}
		if err := b.Do(ctx, "POST", base+"/attribute", body, nil, false); err != nil {
			return 0, err
		}
	}
	var inst envelope[struct {
		ID int64 `json:"id"`
	}]
	body := map[string]any{"analysisfunction_id": f.ID, "componentinproject_id": cip.Resource.ID,
		"name": name, "description": "bdp-bench analytics", "enabled": enabled}
	if err := b.Do(ctx, "POST", fmt.Sprintf("/v2/analytics/instance?project_id=%d", project), body, &inst, false); err != nil {
		return 0, err
	}
	if inst.Resource.ID == 0 {
		return 0, fmt.Errorf("instance of %s: no id in the answer", f.AlphanumericID)
	}
	return inst.Resource.ID, nil
}

// attributeValue is a plausible value of an attribute the functions read,
// as the attribute route takes it; false leaves the attribute unfilled.
func attributeValue(key string) (any, bool) {
	switch key {
	case "schedule":
		return json.RawMessage(`{"time_zone": "Europe/Berlin", "monday": [["06:00", "20:00"]], "tuesday": [["06:00", "20:00"]],
			"wednesday": [["06:00", "20:00"]], "thursday": [["06:00", "20:00"]], "friday": [["06:00", "20:00"]],
			"saturday": [["08:00", "12:00"]]}`), true
	case "schedule_timezone":
		return "Europe/Berlin", true
	case "reference_curve":
		// aedifion's form: two points of the curve, outdoor and supply °C.
		return json.RawMessage(`{"p1_outside_air_temperature": "-12.0", "p1_outlet_temperature_setpoint": "70.0",
			"p2_outside_air_temperature": "20.0", "p2_outlet_temperature_setpoint": "25.0"}`), true
	case "outdoor_co2":
		return 420, true
	case "volume_flow_unit":
		return "l/s", true
	case "energy_price":
		return 0.32, true
	case "lower_deviation_tolerance", "upper_deviation_tolerance":
		return 1.5, true
	}
	return nil, false
}
