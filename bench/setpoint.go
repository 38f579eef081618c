package bench

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"sync"
	"time"

	"github.com/openbdp/bdp/edge/sim"
)

// SetpointOptions configure `bdp-bench setpoint`: acked setpoint writes
// through simulated edge devices over bdp's embedded broker.
type SetpointOptions struct {
	Binary   string
	Projects int           // projects, one simulated device each (in this process)
	Rate     int           // acked writes per second, spread over the projects
	Duration time.Duration // how long writes are sent
	Progress io.Writer
}

// Setpoint measures an acked write from the HTTP request to written:
// from the moment the request is sent to the time of the operation's
// written log entry (microseconds, the server's clock, which is this
// machine's), read back through GET /v2/datapoint/setpoint/{reference}
// after the run, so polling costs the measurement nothing.
func Setpoint(ctx context.Context, o SetpointOptions) (map[string]any, error) {
	p, err := Start(ctx, Options{Binary: o.Binary})
	if err != nil {
		return nil, err
	}
	defer p.Close()
	progress := func(format string, args ...any) {
		if o.Progress != nil {
			fmt.Fprintf(o.Progress, format+"\n", args...)
		}
	}
	var tok struct {
		AccessToken string `json:"access_token"`
	}
	if err := p.Do(ctx, "POST", "/v2/auth/token", nil, &tok, false); err != nil {
		return nil, err
	}
	projects, err := edgeProjects(ctx, p, o.Projects, []string{"sp"})
	if err != nil {
		return nil, err
	}
	progress("setpoint: %d projects with online devices; writing %d/s for %s", len(projects), o.Rate, o.Duration)

	client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 256}, Timeout: 60 * time.Second}
	type sent struct {
		ref   string
		start time.Time
		took  time.Duration // the HTTP answer
	}
	var (
		mu     sync.Mutex
		writes []sent
		errs   int
		wg     sync.WaitGroup
	)
	tick := time.NewTicker(time.Second / time.Duration(o.Rate))
	end := time.Now().Add(o.Duration)
	for i := 0; time.Now().Before(end); i++ {
		select {
		case <-tick.C:
		case <-ctx.Done():
			return nil, ctx.Err()
		}
		pid := projects[i%len(projects)]
		value := 16 + float64(i%80)/10
		wg.Add(1)
		go func() {
			defer wg.Done()
			q := url.Values{"project_id": {fmt.Sprint(pid)}, "dataPointID": {"sp"}, "value": {fmt.Sprint(value)}, "acked": {"true"}}
			start := time.Now()
			var out struct {
				Resource struct {
					Reference string `json:"reference"`
				} `json:"resource"`
			}
			err := doBearer(ctx, client, p.Base, tok.AccessToken, "POST", "/v2/datapoint/setpoint?"+q.Encode(), &out)
			took := time.Since(start)
			mu.Lock()
			defer mu.Unlock()
			if err != nil || out.Resource.Reference == "" {
				errs++
				return
			}
			writes = append(writes, sent{ref: out.Resource.Reference, start: start, took: took})
		}()
	}
	tick.Stop()
	wg.Wait()
	time.Sleep(2 * time.Second) // let the last ones finish
	var acks, answers []time.Duration
	failed, open := 0, 0
	for _, w := range writes {
		var op struct {
			Status string `json:"status"`
			Log    string `json:"log"`
		}
		if err := doBearer(ctx, client, p.Base, tok.AccessToken, "GET", "/v2/datapoint/setpoint/"+w.ref, &op); err != nil {
			return nil, err
		}
		answers = append(answers, w.took)
		switch op.Status {
		case "written":
		case "failed":
			failed++
			continue
		default:
			open++
			continue
		}
		var log []struct {
			Status string `json:"status"`
			Time   string `json:"time"`
		}
		if err := json.Unmarshal([]byte(op.Log), &log); err != nil {
			return nil, fmt.Errorf("operation %s: log: %w", w.ref, err)
		}
		for _, l := range log {
			if l.Status == "written" {
				t, err := time.Parse("2006-01-02T15:04:05.000000Z", l.Time)
				if err != nil {
					return nil, err
				}
				acks = append(acks, t.Sub(w.start))
			}
		}
	}
	if len(acks) == 0 {
		return nil, fmt.Errorf("no write reached written (%d sent, %d failed, %d open, %d errors)", len(writes), failed, open, errs)
	}
	return map[string]any{
		"scenario": "setpoint", "projects": len(projects), "rate": o.Rate, "duration_s": o.Duration.Seconds(),
		"writes": len(writes), "written": len(acks), "failed": failed, "unfinished": open, "http_errors": errs,
		"ack_p50_ms": ms(percentile(acks, 50)), "ack_p99_ms": ms(percentile(acks, 99)), "ack_max_ms": ms(percentile(acks, 100)),
		"answer_p50_ms": ms(percentile(answers, 50)), "answer_p99_ms": ms(percentile(answers, 99)),
	}, nil
}

// edgeProjects makes n projects with setpoint writing enabled, the
// datapoints named, each bounded to [15, 25], and edge credentials,
// connects a simulated device to each (in this process, over bdp's
// embedded broker, so the devices' CPU and heap are not bdp's) and waits
// until bdp sees them all online. The devices run until ctx ends.
func edgeProjects(ctx context.Context, p *Platform, n int, datapoints []string) ([]int64, error) {
	raw, err := os.ReadFile(filepath.Join(p.dir, "addresses.json"))
	if err != nil {
		return nil, err
	}
	var addrs map[string]string
	if err := json.Unmarshal(raw, &addrs); err != nil {
		return nil, err
	}
	broker := addrs["mqtt"]
	ids := []int64{p.ProjectID}
	for len(ids) < n {
		var pr struct {
			Resource struct {
				Project struct{ ID int64 } `json:"project"`
			} `json:"resource"`
		}
		if err := p.Do(ctx, "POST", "/v2/company/project", map[string]any{"name": fmt.Sprintf("setpoint-%d", len(ids))}, &pr, false); err != nil {
			return nil, err
		}
		ids = append(ids, pr.Resource.Project.ID)
	}
	for _, id := range ids {
		type step struct {
			method, path string
			body         any
			operator     bool
		}
		steps := []step{{"PUT", fmt.Sprintf("/operator/projects/%d/settings", id), map[string]any{"setpoint_writing_enabled": true}, true}}
		for _, dp := range datapoints {
			steps = append(steps,
				step{"PUT", fmt.Sprintf("/operator/projects/%d/datapoints/%s/tags", id, url.PathEscape(dp)), []map[string]any{{"key": "units", "value": "degC"}}, true},
				step{"PUT", fmt.Sprintf("/v2/datapoint?project_id=%d&dataPointID=%s", id, url.QueryEscape(dp)), map[string]any{"setpoint_min_value": 15, "setpoint_max_value": 25}, false})
		}
		for _, s := range steps {
			if err := p.Do(ctx, s.method, s.path, s.body, nil, s.operator); err != nil {
				return nil, err
			}
		}
		s, err := simulatedDevice(ctx, p, id, sim.Config{Broker: "tcp://" + broker})
		if err != nil {
			return nil, err
		}
		go func() { _ = s.Run(ctx) }()
	}
	deadline := time.Now().Add(60 * time.Second)
	for _, id := range ids {
		for {
			var st struct {
				Online bool `json:"online"`
			}
			if err := p.Do(ctx, "GET", fmt.Sprintf("/v2/project/%d/edge", id), nil, &st, false); err != nil {
				return nil, err
			}
			if st.Online {
				break
			}
			if time.Now().After(deadline) {
				return nil, fmt.Errorf("the device of project %d is not online after 60 s", id)
			}
			time.Sleep(50 * time.Millisecond)
		}
	}
	return ids, nil
}

// simulatedDevice makes project pid's edge credentials through the
// operator API and a simulated device (edge/sim) that logs in with them,
// cfg giving its broker and timings; it does not connect yet.
func simulatedDevice(ctx context.Context, r requester, pid int64, cfg sim.Config) (*sim.Simulator, error) {
	var creds struct {
		Resource struct {
			Username string `json:"username"`
			Password string `json:"password"`
		} `json:"resource"`
	}
	if err := r.Do(ctx, "POST", fmt.Sprintf("/operator/projects/%d/edge", pid), nil, &creds, true); err != nil {
		return nil, fmt.Errorf("edge credentials of project %d: %w", pid, err)
	}
	cfg.Username, cfg.Password, cfg.ProjectID = creds.Resource.Username, creds.Resource.Password, pid
	return sim.New(cfg)
}

// doBearer sends a request with a bearer token and decodes a 2xx answer.
func doBearer(ctx context.Context, c *http.Client, base, token, method, path string, out any) error {
	req, err := http.NewRequestWithContext(ctx, method, base+path, nil)
	if err != nil {
		return err
	}
	req.Header.Set("Authorization", "Bearer "+token)
	res, err := c.Do(req)
	if err != nil {
		return err
	}
	defer res.Body.Close()
	b, _ := io.ReadAll(res.Body)
	if res.StatusCode/100 != 2 {
		return fmt.Errorf("%s %s: HTTP %d: %s", method, path, res.StatusCode, b)
	}
	return json.Unmarshal(b, out)
}
