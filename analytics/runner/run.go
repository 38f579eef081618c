package runner

import (
	"context"
	"encoding/json"
	"fmt"
	"sort"
	"time"

	"github.com/openbdp/bdp/analytics"
	"github.com/openbdp/bdp/analytics/kpi"
	"github.com/openbdp/bdp/fault"
	"github.com/openbdp/bdp/store"
)

// noDataInfo is the note of a Success over a period without data.
const noDataInfo = "no data in the period"

// compute runs one analysis: it reads what the run needs in two round
// trips (the setup, then every series), runs the function, and fills the
// summary KPI's previous value. The error is a read's (the database, or
// ctx ending); everything the run itself gets wrong ends in a Failed
// result instead.
func (p *Pool) compute(ctx context.Context, run store.AnalysisRun) (store.AnalysisRunEnd, error) {
	if run.Attempts > MaxAttempts {
		return p.failed(fmt.Sprintf("not run again: %d workers took it and none finished it", run.Attempts-1)), nil
	}
	setup, err := p.cfg.Store.AnalysisRunSetup(ctx, run)
	if fault.Is(err, fault.NotFound) {
		// The instance is gone (its result rows go with it).
		return p.failed(fmt.Sprintf("analysis instance %d no longer exists", run.InstanceID)), nil
	}
	if err != nil {
		return store.AnalysisRunEnd{}, err
	}
	fn, ok := p.cfg.Functions(setup.FunctionID)
	if !ok {
		return p.failed(fmt.Sprintf("analysis function %d no longer exists in this release", setup.FunctionID)), nil
	}
	reads := map[string]int64{}
	for _, pin := range fn.Reads(setup.Component) {
		if dp, ok := setup.Pins[pin]; ok {
			reads[pin] = dp // an unmapped pin is the function's to report
		}
	}
	var previous *analytics.Outcome
	if setup.Previous != nil {
		var prev analytics.Outcome
		if err := json.Unmarshal(setup.Previous, &prev); err == nil {
			previous = &prev
		}
	}
	// Without a stored result of the period before, the function runs
	// over it too: one read covers both periods.
	prevStart := run.Start.Add(-run.End.Sub(run.Start))
	from := run.Start
	if previous == nil {
		from = prevStart
	}
	stored, err := p.cfg.Store.ReadAnalysisSeries(ctx, reads, from, run.End)
	if err != nil {
		return store.AnalysisRunEnd{}, err
	}
	current, before := splitSeries(stored, run.Start)
	in := analytics.Input{Component: setup.Component, Period: kpi.Period{Start: run.Start, End: run.End},
		Series: current, Attributes: setup.Attributes}
	outcome, err := fn.Run(in)
	if err != nil {
		return p.failed(err.Error()), nil
	}
	if previous == nil {
		in.Period, in.Series = kpi.Period{Start: prevStart, End: run.Start}, before
		if prev, err := fn.Run(in); err == nil {
			previous = &prev
		}
	}
	if previous != nil {
		analytics.SetSummaryPrevious(&outcome, *previous)
	}
	js, err := json.Marshal(outcome)
	if err != nil {
		return p.failed(fmt.Sprintf("the outcome could not be stored: %v", err)), nil
	}
	end := store.AnalysisRunEnd{Status: store.AnalysisSuccess, Outcome: js}
	if outcome.NoData {
		end.Info = noDataInfo
	}
	return end, nil
}

// splitSeries divides series read from before start into the part that
// describes [start, ...) (the points from start on, after the last point
// before start, which sets the value at start) and the part up to start,
// whose point at start, if any, is the reading that closes the period
// before. It empties series as it goes, so that a long read is not held
// twice.
func splitSeries(series map[string][]store.Point, start time.Time) (current, before map[string][]kpi.Point) {
	current, before = make(map[string][]kpi.Point, len(series)), make(map[string][]kpi.Point, len(series))
	for pin, pts := range series {
		i := sort.Search(len(pts), func(i int) bool { return !pts[i].Time.Before(start) })
		closing := i
		if closing < len(pts) && pts[closing].Time.Equal(start) {
			closing++
		}
		before[pin] = kpiPoints(pts[:closing])
		current[pin] = kpiPoints(pts[max(i-1, 0):])
		delete(series, pin)
	}
	return current, before
}

func kpiPoints(pts []store.Point) []kpi.Point {
	out := make([]kpi.Point, len(pts))
	for i, p := range pts {
		out[i] = kpi.Point{Time: p.Time, Value: p.Value}
	}
	return out
}
