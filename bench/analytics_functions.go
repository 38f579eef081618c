package bench

import (
	"context"
	"errors"
	"fmt"
	"math"
	"net/url"
	"slices"
	"time"

	"github.com/jackc/pgx/v5"
)

// Part "functions": one run of each analysis function over 4 weeks of
// 1-minute data on every pin it reads (issue 10: p50 <= 100 ms each).
//
// Each function gets a project component of the kind on which it reads
// the most pins, every such pin mapped to a datapoint of its own holding
// Weeks weeks of 1-minute values (40,320 for 4 weeks), and its
// attributes filled in. Then Runs manual runs, one after the other, go
// through the API: POST .../run answers at once, and the result is
// polled every Poll until it is no longer running. Two figures per run:
//
//   - run_ms, the figure: the run itself as the database saw it,
//     finished_at - created_at of its result row (both PostgreSQL's
//     now()): from the row the API wrote, through the worker's claim, the
//     reads of every series, the kernel, the summary's previous period,
//     to the write of the outcome.
//   - api_ms: from sending POST .../run until a GET of the result first
//     answered a final status; it adds the HTTP round trips and up to one
//     poll interval.

// analyticsEnd is where the functions part's period ends: a Monday, fixed
// so that runs compare.
var analyticsEnd = time.Date(2026, 1, 5, 0, 0, 0, 0, time.UTC)

func runFunctionsPart(ctx context.Context, b *analyticsBench, result map[string]any) error {
	minutes := b.o.Weeks * 7 * minutesPerDay
	period := time.Duration(minutes) * time.Minute
	start := analyticsEnd.Add(-period)
	first, loaded := start, minutes
	if b.o.PreviousData {
		first, loaded = start.Add(-period), 2*minutes
	}
	var loads []seriesLoad
	for k, f := range b.functions {
		pl := plant{component: f.Component.AlphanumericID, seed: uint64(k + 1)}
		for _, pin := range f.Pins {
			loads = append(loads, seriesLoad{name: functionDatapoint(f, pin.AlphanumericID), values: pl.series(pin)})
		}
	}
	db, err := pgx.Connect(ctx, b.DBURL)
	if err != nil {
		return err
	}
	defer db.Close(ctx)
	began := time.Now()
	if err := loadSeries(ctx, b.st, b.ProjectID, loads, first, loaded); err != nil {
		return err
	}
	if err := settle(ctx, db); err != nil {
		return err
	}
	b.progress("loaded %d datapoints x %d minutes in %s", len(loads), loaded, time.Since(began).Round(time.Millisecond))
	instances := make([]int64, len(b.functions))
	for k, f := range b.functions {
		id, err := b.mapComponent(ctx, b.ProjectID, f, f.AlphanumericID,
			func(pin string) string { return functionDatapoint(f, pin) }, false)
		if err != nil {
			return fmt.Errorf("%s: %w", f.AlphanumericID, err)
		}
		instances[k] = id
	}
	perFunction := map[string]any{}
	allUnder := true
	for k, f := range b.functions {
		var runMS, apiMS []float64
		failed, info, color := 0, "", ""
		for range b.o.Runs {
			r, err := b.runOnce(ctx, db, instances[k], start, analyticsEnd)
			if err != nil {
				return fmt.Errorf("%s: %w", f.AlphanumericID, err)
			}
			if r.status != "Success" || r.noData {
				// A run that found no data measured nothing: the bench's
				// series or mapping missed what the function reads.
				failed, info = failed+1, r.status+": "+r.info
				continue
			}
			color = r.color
			runMS, apiMS = append(runMS, r.runMS), append(apiMS, r.apiMS)
		}
		fig := map[string]any{"component": f.Component.AlphanumericID, "pins": len(f.Pins),
			"observations_per_pin": minutes, "runs": b.o.Runs, "failed": failed, "signal_color": color,
			"run_p50_ms": percentileMS(runMS, 0.5), "run_p90_ms": percentileMS(runMS, 0.9),
			"api_p50_ms": percentileMS(apiMS, 0.5), "api_p90_ms": percentileMS(apiMS, 0.9)}
		if failed > 0 {
			fig["info"] = info
		}
		if failed > 0 || percentileMS(runMS, 0.5) > 100 {
			allUnder = false
		}
		perFunction[f.AlphanumericID] = fig
		b.progress("%-38s on %-22s %d pins: run p50 %6.1f ms p90 %6.1f ms, api p50 %6.1f ms, %d failed %s",
			f.AlphanumericID, f.Component.AlphanumericID, len(f.Pins), fig["run_p50_ms"], fig["run_p90_ms"], fig["api_p50_ms"], failed, info)
	}
	result["functions"] = perFunction
	result["function_runs"] = b.o.Runs
	result["function_weeks"] = b.o.Weeks
	result["previous_period_data"] = b.o.PreviousData
	result["all_p50_under_100ms"] = allUnder
	return nil
}

func functionDatapoint(f benchFunction, pin string) string {
	return "analytics/" + f.AlphanumericID + "/" + pin
}

type runTimes struct {
	status, info string
	noData       bool   // a Success that found no data: the bench's mapping is wrong
	color        string // the result's signal color
	runMS, apiMS float64
}

// runOnce runs instance over [start, end) and waits for its result.
func (b *analyticsBench) runOnce(ctx context.Context, db *pgx.Conn, instance int64, start, end time.Time) (runTimes, error) {
	q := url.Values{"project_id": {fmt.Sprint(b.ProjectID)}, "start": {start.Format(time.RFC3339)}, "end": {end.Format(time.RFC3339)}}
	var run envelope[struct {
		ResultID string `json:"result_id"`
		Status   string `json:"status"`
	}]
	sent := time.Now()
	if err := b.Do(ctx, "POST", fmt.Sprintf("/v2/analytics/instance/%d/run?%s", instance, q.Encode()), nil, &run, false); err != nil {
		return runTimes{}, err
	}
	if run.Resource.ResultID == "" {
		return runTimes{}, errors.New("run: no result_id in the answer")
	}
	path := fmt.Sprintf("/v2/analytics/instance/%d/result/%s?project_id=%d", instance, url.PathEscape(run.Resource.ResultID), b.ProjectID)
	deadline := sent.Add(time.Minute)
	var r runTimes
	for {
		var res struct {
			Status string `json:"status"`
		}
		if err := b.Do(ctx, "GET", path, nil, &res, false); err != nil {
			return runTimes{}, err
		}
		if res.Status != "running" && res.Status != "" {
			r.apiMS = float64(time.Since(sent).Microseconds()) / 1000
			break
		}
		if time.Now().After(deadline) {
			return runTimes{}, fmt.Errorf("result %s still %q after a minute", run.Resource.ResultID, res.Status)
		}
		time.Sleep(b.o.Poll)
	}
	err := db.QueryRow(ctx, `SELECT status, info, extract(epoch FROM finished_at - created_at) * 1000,
		COALESCE((outcome->>'no_data')::boolean, false), COALESCE(outcome->>'signal_color', '')
		FROM analysis_results WHERE id = $1::uuid`, run.Resource.ResultID).Scan(&r.status, &r.info, &r.runMS, &r.noData, &r.color)
	return r, err
}

// percentileMS is the nearest-rank percentile of xs, rounded to 0.1 ms;
// 0 for none.
func percentileMS(xs []float64, p float64) float64 {
	if len(xs) == 0 {
		return 0
	}
	s := slices.Clone(xs)
	slices.Sort(s)
	rank := int(math.Ceil(p*float64(len(s)))) - 1
	return float64(int(s[min(max(rank, 0), len(s)-1)]*10+0.5)) / 10
}
