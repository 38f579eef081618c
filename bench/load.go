package bench

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"math/rand/v2"
	"net/http"
	"strings"
	"sync"
	"time"
)

// LoadOptions describe a deployment (one node or several) and the
// workload bdp-bench load drives against it.
type LoadOptions struct {
	HTTP []string // the nodes' base URLs; each request goes to one at random
	// OperatorToken creates a company and project of the harness's own,
	// the project deleted at the end (Close). Without it, Email, Password and ProjectID name a
	// project to work inside, whose datapoints the harness names with
	// Prefix and leaves there.
	OperatorToken   string
	Email, Password string
	ProjectID       int64
	Prefix          string // names of the harness's datapoints; default "load-"

	VDPs    int // running formula virtual datapoints, VDP i = source i%Sources × (i+1)
	Sources int // source datapoints
}

// Load is a workload on a deployment: virtual datapoints it created and
// ran, and the observations it uploaded and had acknowledged, to check
// every output against.
type Load struct {
	opts   LoadOptions
	client *http.Client
	start  time.Time // the time of round 0

	mu       sync.Mutex
	rounds   int             // rounds acknowledged, in order
	stopped  map[int]int     // datapoint -> rounds acknowledged when its stop was answered
	commands []time.Duration // the time of every command (run, stop, status)
	uploads  []time.Duration // the time of every acknowledged upload
	uploaded int             // observations acknowledged
	created  bool            // the project is the harness's own (operator token): Close deletes it
}

// StartLoad creates the company (with an operator token) and project, and
// creates and runs the virtual datapoints, each through a node at random.
func StartLoad(ctx context.Context, opts LoadOptions) (*Load, error) {
	if len(opts.HTTP) == 0 || opts.VDPs <= 0 || opts.Sources <= 0 {
		return nil, fmt.Errorf("load: nodes, datapoints and sources are required")
	}
	if opts.Prefix == "" {
		opts.Prefix = "load-"
	}
	l := &Load{opts: opts, client: &http.Client{Timeout: time.Minute}, stopped: map[int]int{},
		start: time.Now().UTC().Truncate(time.Minute).Add(-24 * time.Hour)}
	if opts.OperatorToken != "" {
		if err := l.createCompany(ctx); err != nil {
			return nil, err
		}
	}
	for i := range opts.VDPs {
		cfg := fmt.Sprintf(`{"pins":{"P1":{"dataPointID":%q}},"parameters":{"formula":"P1 * %d;"}}`, l.source(i%opts.Sources), i+1)
		if err := l.do(ctx, "POST", l.vdpPath("", "dataPointID", l.output(i), "type", "formula"), cfg, nil); err != nil {
			return nil, fmt.Errorf("create %s: %w", l.output(i), err)
		}
		if err := l.Run(ctx, i, true); err != nil {
			return nil, err
		}
	}
	return l, nil
}

func (l *Load) source(i int) string { return fmt.Sprintf("%ss%d", l.opts.Prefix, i) }
func (l *Load) output(i int) string { return fmt.Sprintf("%sout%d", l.opts.Prefix, i) }

func (l *Load) vdpPath(sub string, kv ...string) string {
	var q []string
	for i := 0; i+1 < len(kv); i += 2 {
		q = append(q, kv[i]+"="+kv[i+1])
	}
	return fmt.Sprintf("/v2/project/%d/virtual_datapoint%s?%s", l.opts.ProjectID, sub, strings.Join(q, "&"))
}

func (l *Load) createCompany(ctx context.Context) error {
	l.opts.Email, l.opts.Password = fmt.Sprintf("load-%d@bench.test", time.Now().UnixNano()), "load-password-12"
	body := fmt.Sprintf(`{"name":%q,"admin":{"firstName":"L","lastName":"H","email":%q,"password":%q}}`,
		"bdp-bench load "+time.Now().Format(time.RFC3339Nano), l.opts.Email, l.opts.Password)
	if err := l.send(ctx, "POST", "/operator/companies", body, nil, true); err != nil {
		return fmt.Errorf("create the company: %w", err)
	}
	var project struct {
		Resource struct {
			Project struct{ ID int64 } `json:"project"`
		} `json:"resource"`
	}
	if err := l.do(ctx, "POST", "/v2/company/project", `{"name":"load"}`, &project); err != nil {
		return fmt.Errorf("create the project: %w", err)
	}
	l.opts.ProjectID, l.created = project.Resource.Project.ID, true
	return nil
}

// Run starts (true) or stops a datapoint through a node at random, timed
// as a command. A stop records the rounds acknowledged by its answer:
// no output after them may appear.
func (l *Load) Run(ctx context.Context, i int, run bool) error {
	began := time.Now()
	var v struct {
		Status string `json:"status"`
	}
	err := l.do(ctx, "POST", l.vdpPath("/run", "dataPointID", l.output(i), "run", fmt.Sprint(run)), "", &v)
	l.mu.Lock()
	defer l.mu.Unlock()
	l.commands = append(l.commands, time.Since(began))
	if err != nil {
		return fmt.Errorf("run=%t %s: %w", run, l.output(i), err)
	}
	if want := map[bool]string{true: "Running", false: "Stopped"}[run]; v.Status != want {
		return fmt.Errorf("run=%t %s: status %q", run, l.output(i), v.Status)
	}
	if !run {
		l.stopped[i] = l.rounds
	}
	return nil
}

// Status reads a datapoint's status through a node at random, timed as a
// command.
func (l *Load) Status(ctx context.Context, i int) error {
	began := time.Now()
	err := l.do(ctx, "GET", l.vdpPath("", "dataPointID", l.output(i)), "", nil)
	l.mu.Lock()
	l.commands = append(l.commands, time.Since(began))
	l.mu.Unlock()
	return err
}

// Feed uploads rounds (every source's next value, one minute later than
// the last round's) every interval until n rounds are acknowledged or ctx
// ends, each through a node at random.
func (l *Load) Feed(ctx context.Context, n int, interval time.Duration) error {
	tick := time.NewTicker(interval)
	defer tick.Stop()
	for range n {
		l.mu.Lock()
		r := l.rounds
		l.mu.Unlock()
		if err := l.upload(ctx, r, 1, nil); err != nil {
			return err
		}
		l.mu.Lock()
		l.rounds++
		l.mu.Unlock()
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-tick.C:
		}
	}
	return nil
}

// FeedAtOnce uploads the next n rounds as fast as they are answered, by
// workers at once, perUpload rounds in one request: a throughput, where
// Feed is a steady pace. Each worker has its own share of the sources and
// uploads their rounds in order, so every datapoint's observations still
// come in time order.
func (l *Load) FeedAtOnce(ctx context.Context, n, workers, perUpload int) error {
	l.mu.Lock()
	first := l.rounds
	l.mu.Unlock()
	workers = max(1, min(workers, l.opts.Sources))
	errs := make(chan error, workers)
	var wg sync.WaitGroup
	for w := range workers {
		var share []int
		for s := w; s < l.opts.Sources; s += workers {
			share = append(share, s)
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			for r := first; r < first+n; r += perUpload {
				if err := l.upload(ctx, r, min(perUpload, first+n-r), share); err != nil {
					errs <- err
					return
				}
			}
		}()
	}
	wg.Wait()
	select {
	case err := <-errs:
		return err
	default:
	}
	l.mu.Lock()
	l.rounds = first + n
	l.mu.Unlock()
	return nil
}

// upload sends rounds r to r+rounds-1 (the sources' values at their
// minutes; nil: every source) in one request through a node at random; a
// failed upload is tried again on another node: the harness tells
// acknowledged from lost, not the deployment's availability.
func (l *Load) upload(ctx context.Context, r, rounds int, sources []int) error {
	if sources == nil {
		sources = make([]int, l.opts.Sources)
		for s := range sources {
			sources[s] = s
		}
	}
	var sb strings.Builder
	sb.WriteString("{")
	for i, s := range sources {
		if i > 0 {
			sb.WriteString(",")
		}
		fmt.Fprintf(&sb, `%q:[`, l.source(s))
		for k := range rounds {
			if k > 0 {
				sb.WriteString(",")
			}
			fmt.Fprintf(&sb, `{"time":%q,"value":%d}`, l.roundTime(r+k).Format(time.RFC3339), l.sourceValue(r+k, s))
		}
		sb.WriteString("]")
	}
	sb.WriteString("}")
	var err error
	for attempt := 0; attempt < 5; attempt++ {
		began := time.Now()
		if err = l.do(ctx, "POST", fmt.Sprintf("/v2/project/%d/timeseries", l.opts.ProjectID), sb.String(), nil); err == nil {
			l.mu.Lock()
			l.uploads = append(l.uploads, time.Since(began))
			l.uploaded += rounds * len(sources)
			l.mu.Unlock()
			return nil
		}
		if ctx.Err() != nil {
			return ctx.Err()
		}
		time.Sleep(200 * time.Millisecond)
	}
	return fmt.Errorf("upload round %d: %w", r, err)
}

func (l *Load) roundTime(r int) time.Time { return l.start.Add(time.Duration(r) * time.Minute) }
func (l *Load) sourceValue(r, s int) int  { return r*10 + s }
func (l *Load) want(i, r int) float64     { return float64(l.sourceValue(r, i%l.opts.Sources) * (i + 1)) }

// WaitCalculated waits until every running datapoint has its output of
// the last acknowledged round (its newest output is at that round's
// time), within the given time.
func (l *Load) WaitCalculated(ctx context.Context, within time.Duration) error {
	l.mu.Lock()
	rounds, stopped := l.rounds, maps.Clone(l.stopped)
	l.mu.Unlock()
	if rounds == 0 {
		return nil
	}
	last := l.roundTime(rounds - 1)
	deadline := time.Now().Add(within)
	for i := range l.opts.VDPs {
		if _, ok := stopped[i]; ok {
			continue
		}
		for {
			var got struct {
				Data []point `json:"data"`
			}
			if err := l.do(ctx, "GET", fmt.Sprintf("/v2/datapoint/timeseries?project_id=%d&dataPointID=%s&max=1", l.opts.ProjectID, l.output(i)), "", &got); err != nil {
				return err
			}
			if len(got.Data) == 1 && !got.Data[0].Time.Before(last) {
				break
			}
			if time.Now().After(deadline) {
				return fmt.Errorf("load: %s has not calculated round %d within %s", l.output(i), rounds-1, within)
			}
			time.Sleep(10 * time.Millisecond)
		}
	}
	return nil
}

// Verdict is what Verify found.
type Verdict struct {
	OutputsMissing   int // rounds a running datapoint has no output for
	OutputsDifferent int // outputs with another value than the source's times the factor
	OutputsAfterStop int // outputs of a stopped datapoint for rounds acknowledged after its stop
	AckedLost        int // acknowledged source observations not stored
}

// Verify waits up to within for every output to be there, then compares
// every datapoint's outputs, and every source, with what was acknowledged.
func (l *Load) Verify(ctx context.Context, within time.Duration) (Verdict, error) {
	l.mu.Lock()
	rounds, stopped := l.rounds, maps.Clone(l.stopped)
	l.mu.Unlock()
	var v Verdict
	deadline := time.Now().Add(within)
	for i := range l.opts.VDPs {
		want := rounds
		if r, ok := stopped[i]; ok {
			want = r
		}
		var pts []point
		for {
			var err error
			if pts, err = l.series(ctx, l.output(i)); err != nil {
				return v, err
			}
			if len(pts) >= want || time.Now().After(deadline) {
				break
			}
			time.Sleep(100 * time.Millisecond)
		}
		seen := map[int]bool{}
		for _, p := range pts {
			r := int(p.Time.Sub(l.start) / time.Minute)
			switch {
			case r >= want:
				v.OutputsAfterStop++
			case p.Value != l.want(i, r):
				v.OutputsDifferent++
			}
			seen[r] = true
		}
		for r := range want {
			if !seen[r] {
				v.OutputsMissing++
			}
		}
	}
	for s := range l.opts.Sources {
		pts, err := l.series(ctx, l.source(s))
		if err != nil {
			return v, err
		}
		v.AckedLost += max(0, rounds-len(pts))
	}
	return v, nil
}

type point struct {
	Time  time.Time `json:"time"`
	Value float64   `json:"value"`
}

func (l *Load) series(ctx context.Context, id string) ([]point, error) {
	var got struct {
		Data []point `json:"data"`
	}
	err := l.do(ctx, "GET", fmt.Sprintf("/v2/datapoint/timeseries?project_id=%d&dataPointID=%s&max=0", l.opts.ProjectID, id), "", &got)
	return got.Data, err
}

// Rounds counts the rounds acknowledged so far.
func (l *Load) Rounds() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.rounds
}

// CommandP99 is the 99th percentile of the commands' times so far.
func (l *Load) CommandP99() time.Duration {
	l.mu.Lock()
	defer l.mu.Unlock()
	return percentile(l.commands, 99)
}

// UploadPercentile is the p-th percentile of the acknowledged uploads'
// times so far.
func (l *Load) UploadPercentile(p float64) time.Duration {
	l.mu.Lock()
	defer l.mu.Unlock()
	return percentile(l.uploads, p)
}

// Progress prints, every interval until ctx ends, the observations per
// second acknowledged since the last line and the uploads' and commands'
// latency percentiles of that interval: the harness's report while it
// runs (the JSON object comes at the end).
func (l *Load) Progress(ctx context.Context, every time.Duration, print func(format string, a ...any)) {
	tick := time.NewTicker(every)
	defer tick.Stop()
	l.mu.Lock()
	lastObs, lastUp, lastCmd, last := l.uploaded, len(l.uploads), len(l.commands), time.Now()
	l.mu.Unlock()
	for {
		select {
		case <-ctx.Done():
			return
		case now := <-tick.C:
			l.mu.Lock()
			obs, ups, cmds := l.uploaded-lastObs, l.uploads[lastUp:], l.commands[lastCmd:]
			p50, p99, c99 := percentile(ups, 50), percentile(ups, 99), percentile(cmds, 99)
			lastObs, lastUp, lastCmd = l.uploaded, len(l.uploads), len(l.commands)
			l.mu.Unlock()
			print("load: http uploads %.0f obs/s, p50 %.1f ms, p99 %.1f ms (%d uploads); commands p99 %.1f ms (%d)",
				float64(obs)/now.Sub(last).Seconds(), ms(p50), ms(p99), len(ups), ms(c99), len(cmds))
			last = now
		}
	}
}

// Close deletes the harness's own project, with its datapoints and
// observations (a company stays: the API deletes none); in a given
// project it stops the harness's datapoints.
func (l *Load) Close(ctx context.Context) error {
	if l.created {
		return l.do(ctx, "DELETE", fmt.Sprintf("/v2/project/%d", l.opts.ProjectID), "", nil)
	}
	for i := range l.opts.VDPs {
		if _, ok := l.stopped[i]; !ok {
			if err := l.Run(ctx, i, false); err != nil {
				return err
			}
		}
	}
	return nil
}

// Do sends a request with a JSON body (nil: none) to a node at random,
// as the harness's user or the operator, and decodes a 2xx answer into
// out (nil: dropped).
func (l *Load) Do(ctx context.Context, method, path string, body, out any, asOperator bool) error {
	text := ""
	if body != nil {
		b, err := json.Marshal(body)
		if err != nil {
			return err
		}
		text = string(b)
	}
	return l.send(ctx, method, path, text, out, asOperator)
}

func (l *Load) do(ctx context.Context, method, path, body string, out any) error {
	return l.send(ctx, method, path, body, out, false)
}

// send sends a request to a node at random, as the harness's user (or
// the operator).
func (l *Load) send(ctx context.Context, method, path, body string, out any, asOperator bool) error {
	base := l.opts.HTTP[rand.IntN(len(l.opts.HTTP))]
	req, err := http.NewRequestWithContext(ctx, method, base+path, bytes.NewReader([]byte(body)))
	if err != nil {
		return err
	}
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	if asOperator {
		req.Header.Set("Authorization", "Bearer "+l.opts.OperatorToken)
	} else {
		req.SetBasicAuth(l.opts.Email, l.opts.Password)
	}
	res, err := l.client.Do(req)
	if err != nil {
		return err
	}
	defer res.Body.Close()
	b, _ := io.ReadAll(io.LimitReader(res.Body, 64<<20))
	if res.StatusCode/100 != 2 {
		return fmt.Errorf("%s %s on %s: HTTP %d: %.300s", method, path, base, res.StatusCode, b)
	}
	if out != nil {
		return json.Unmarshal(b, out)
	}
	return nil
}
