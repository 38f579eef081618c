package bench

import (
	"context"
	"fmt"
	"io"
	"net/url"
	"time"

	"github.com/openbdp/bdp/store"
)

// The resume scenario: how long a restart of bdp serve takes to answer
// HTTP, and to run again every virtual datapoint that was running, when
// each reads a source with a long stored history. Each datapoint reads
// its source twice: a 30-day time window (43,200 minutes) averaged, and
// the newest 50,000 observations reduced to their median, the order
// statistic whose window refill used to cost O(n²). The history goes in
// with COPY; the datapoints are created and run over HTTP, get one live
// observation each (so each has a stored output to catch up from), and
// then bdp serve is stopped with SIGTERM and started again, Runs times.

// ResumeOptions configure the resume scenario.
type ResumeOptions struct {
	Binary   string
	VDPs     int // running virtual datapoints, one source each; default 10
	Rows     int // stored observations per source, one a minute; default 500,000
	Runs     int // restarts measured; default 3
	Env      []string
	Progress io.Writer // progress lines; nil for none
}

// resumeEnd is where the loaded history ends: a fixed time, so runs compare.
var resumeEnd = time.Date(2026, 1, 5, 0, 0, 0, 0, time.UTC)

// Resume runs the scenario and returns its figures: the medians over the
// restarts of the seconds from starting the process until /readyz answers
// 200 and until every virtual datapoint reports Running.
func Resume(ctx context.Context, o ResumeOptions) (map[string]any, error) {
	o.VDPs, o.Rows, o.Runs = cmpOr(o.VDPs, 10), cmpOr(o.Rows, 500_000), cmpOr(o.Runs, 3)
	if o.Progress == nil {
		o.Progress = io.Discard
	}
	p, err := Start(ctx, Options{Binary: o.Binary, Env: o.Env})
	if err != nil {
		return nil, err
	}
	defer p.Close()
	outs, err := loadResume(ctx, p, o)
	if err != nil {
		return nil, err
	}
	var httpUp, running []float64
	for run := 1; run <= o.Runs; run++ {
		began := time.Now()
		if err := p.Restart(ctx); err != nil {
			return nil, err
		}
		up := time.Since(began)
		if err := p.waitRunning(ctx, outs, 10*time.Minute); err != nil {
			return nil, err
		}
		all := time.Since(began)
		fmt.Fprintf(o.Progress, "restart %d: HTTP after %.2f s, all running after %.2f s\n", run, up.Seconds(), all.Seconds())
		httpUp, running = append(httpUp, up.Seconds()), append(running, all.Seconds())
	}
	return map[string]any{
		"scenario": "resume", "vdps": o.VDPs, "rows_per_source": o.Rows, "runs": o.Runs,
		"http_ready_s": Median(httpUp), "all_running_s": Median(running),
		"http_ready_s_each": httpUp, "all_running_s_each": running,
	}, nil
}

func cmpOr(v, def int) int {
	if v <= 0 {
		return def
	}
	return v
}

// loadResume stores the histories, creates and runs the datapoints, and
// waits for the output of one live observation of each.
func loadResume(ctx context.Context, p *Platform, o ResumeOptions) ([]string, error) {
	st, err := store.Open(ctx, p.DBURL)
	if err != nil {
		return nil, err
	}
	defer st.Close()
	srcs, outs := make([]string, o.VDPs), make([]string, o.VDPs)
	for i := range srcs {
		srcs[i], outs[i] = fmt.Sprintf("resume/src-%02d", i+1), fmt.Sprintf("resume/out-%02d", i+1)
	}
	ids, err := st.EnsureDatapoints(ctx, p.ProjectID, srcs)
	if err != nil {
		return nil, err
	}
	first := resumeEnd.Add(-time.Duration(o.Rows) * time.Minute)
	if err := st.EnsurePartitions(ctx, first, resumeEnd.Add(time.Hour)); err != nil {
		return nil, err
	}
	began := time.Now()
	for _, s := range srcs {
		if err := copyMinutes(ctx, st, ids[s], first, o.Rows); err != nil {
			return nil, fmt.Errorf("load %s: %w", s, err)
		}
	}
	fmt.Fprintf(o.Progress, "loaded %d rows in %s\n", o.VDPs*o.Rows, time.Since(began).Round(time.Second))
	vdp := fmt.Sprintf("/v2/project/%d/virtual_datapoint", p.ProjectID)
	for i := range srcs {
		cfg := map[string]any{
			"pins": map[string]any{
				"P1": map[string]any{"dataPointID": srcs[i], "data_range": map[string]any{"time": "30d"}, "aggregate": "mean"},
				"P2": map[string]any{"dataPointID": srcs[i], "data_range": map[string]any{"count": 50_000}, "aggregate": "median"},
			},
			"parameters": map[string]any{"formula": "P1 - P2"},
		}
		q := "?dataPointID=" + url.QueryEscape(outs[i])
		if err := p.Do(ctx, "POST", vdp+q+"&type=formula", cfg, nil, false); err != nil {
			return nil, err
		}
		began := time.Now()
		if err := p.Do(ctx, "POST", vdp+"/run"+q+"&run=true", nil, nil, false); err != nil {
			return nil, err
		}
		fmt.Fprintf(o.Progress, "ran %s in %.2f s\n", outs[i], time.Since(began).Seconds())
	}
	if err := p.waitRunning(ctx, outs, 10*time.Minute); err != nil {
		return nil, err
	}
	live := map[string][]map[string]any{}
	for _, s := range srcs {
		live[s] = []map[string]any{{"time": resumeEnd.Format(time.RFC3339), "value": 21.5}}
	}
	if err := p.Do(ctx, "POST", fmt.Sprintf("/v2/project/%d/timeseries", p.ProjectID), live, nil, false); err != nil {
		return nil, err
	}
	for _, out := range outs {
		if err := p.waitOutput(ctx, out, resumeEnd, time.Minute); err != nil {
			return nil, err
		}
	}
	return outs, nil
}

// waitRunning polls until every named virtual datapoint reports Running;
// one that fails to start ends the wait with its status.
func (p *Platform) waitRunning(ctx context.Context, outs []string, limit time.Duration) error {
	deadline := time.Now().Add(limit)
	for _, out := range outs {
		for {
			var v struct {
				Status string `json:"status"`
			}
			path := fmt.Sprintf("/v2/project/%d/virtual_datapoint?dataPointID=%s", p.ProjectID, url.QueryEscape(out))
			if err := p.Do(ctx, "GET", path, nil, &v, false); err != nil {
				return err
			}
			if v.Status == "Running" {
				break
			}
			if v.Status != "Starting" || time.Now().After(deadline) {
				return fmt.Errorf("virtual datapoint %s: status %q", out, v.Status)
			}
			time.Sleep(20 * time.Millisecond)
		}
	}
	return nil
}

// waitOutput polls until the output datapoint holds a value at t.
func (p *Platform) waitOutput(ctx context.Context, out string, t time.Time, limit time.Duration) error {
	deadline := time.Now().Add(limit)
	q := url.Values{"project_id": {fmt.Sprint(p.ProjectID)}, "dataPointID": {out},
		"start": {t.Format(time.RFC3339)}, "end": {t.Add(time.Second).Format(time.RFC3339)}}
	for {
		var res struct {
			Data []struct{ Value float64 } `json:"data"`
		}
		if err := p.Do(ctx, "GET", "/v2/datapoint/timeseries?"+q.Encode(), nil, &res, false); err == nil && len(res.Data) > 0 {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("no output of %s at %s", out, t.Format(time.RFC3339))
		}
		time.Sleep(50 * time.Millisecond)
	}
}
