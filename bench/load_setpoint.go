package bench

import (
	"context"
	"errors"
	"fmt"
	"math"
	"net/url"
	"sync"
	"time"

	"github.com/openbdp/bdp/edge/sim"
)

// SetpointWriter writes setpoints through nodes at random (POST
// /v2/datapoint/setpoint, acked) to a datapoint of the load's project,
// whose simulated edge device (edge/sim, in this process, connected to
// the deployment's broker with the project's edge credentials) takes
// them. A write's latency runs from its request to the device taking it,
// both on this machine's clock, whatever the deployment's: each write
// has a value of its own, by which the device's write is matched.
type SetpointWriter struct {
	load *Load
	dev  *sim.Simulator
	dp   string

	mu         sync.Mutex
	next       int               // the next write's number
	waiting    map[int]time.Time // value key -> when its request was sent
	answers    []time.Duration   // the requests' answers
	written    []time.Duration   // request to the device's write
	httpErrors int               // requests not answered 2xx
	sent       int               // requests answered 2xx
	seenUpTo   time.Time         // the device's writes read so far
	requests   sync.WaitGroup
}

// Setpoint values: 15.000 to 24.999, within the datapoint's bounds, one
// per write number modulo setpointValues.
const setpointValues = 10_000

func setpointValue(n int) float64 { return 15 + float64(n%setpointValues)/1000 }
func setpointKey(v float64) int   { return int(math.Round((v - 15) * 1000)) }

// StartSetpoints enables setpoint writing in the harness's project (the
// operator's: it needs the operator token), gives the datapoint
// <prefix>sp bounds 15..25, connects a simulated device to the first MQTT
// broker and waits until the deployment sees it online.
func (l *Load) StartSetpoints(ctx context.Context) (*SetpointWriter, error) {
	if !l.created {
		return nil, errors.New("load: setpoint writes need the operator token (a project of the harness's own, setpoint writing enabled, edge credentials)")
	}
	if len(l.opts.MQTT) == 0 {
		return nil, errors.New("load: setpoint writes need the MQTT broker the simulated device connects to")
	}
	pid, dp := l.opts.ProjectID, l.opts.Prefix+"sp"
	steps := []struct {
		method, path string
		body         any
		operator     bool
	}{
		{"PUT", fmt.Sprintf("/operator/projects/%d/settings", pid), map[string]any{"setpoint_writing_enabled": true}, true},
		{"PUT", fmt.Sprintf("/operator/projects/%d/datapoints/%s/tags", pid, url.PathEscape(dp)), []map[string]any{{"key": "units", "value": "degC"}}, true},
		{"PUT", fmt.Sprintf("/v2/datapoint?project_id=%d&dataPointID=%s", pid, url.QueryEscape(dp)), map[string]any{"setpoint_min_value": 15, "setpoint_max_value": 25}, false},
	}
	for _, s := range steps {
		if err := l.Do(ctx, s.method, s.path, s.body, nil, s.operator); err != nil {
			return nil, fmt.Errorf("setpoints: %w", err)
		}
	}
	dev, err := simulatedDevice(ctx, l, pid, sim.Config{Broker: l.opts.MQTT[0]})
	if err != nil {
		return nil, err
	}
	devCtx, stop := context.WithCancel(context.WithoutCancel(ctx))
	done := make(chan struct{})
	go func() { defer close(done); _ = dev.Run(devCtx) }()
	l.onClose(func() { stop(); <-done })
	for deadline := time.Now().Add(time.Minute); ; {
		var st struct {
			Online bool `json:"online"`
		}
		if err := l.Do(ctx, "GET", fmt.Sprintf("/v2/project/%d/edge", pid), nil, &st, false); err == nil && st.Online {
			break
		}
		if time.Now().After(deadline) {
			return nil, errors.New("setpoints: the simulated device is not online after a minute")
		}
		if err := sleepCtx(ctx, 100*time.Millisecond); err != nil {
			return nil, err
		}
	}
	return &SetpointWriter{load: l, dev: dev, dp: dp, waiting: map[int]time.Time{}}, nil
}

// Run writes perSecond setpoints a second until ctx ends, each request
// on its own goroutine, and waits for their answers.
func (w *SetpointWriter) Run(ctx context.Context, perSecond int) {
	defer w.requests.Wait()
	tick := time.NewTicker(time.Second / time.Duration(max(1, perSecond)))
	defer tick.Stop()
	collect := time.NewTicker(time.Second)
	defer collect.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-collect.C:
			w.collect()
		case <-tick.C:
			w.requests.Add(1)
			go w.write(context.WithoutCancel(ctx))
		}
	}
}

func (w *SetpointWriter) write(ctx context.Context) {
	defer w.requests.Done()
	w.mu.Lock()
	n := w.next
	w.next++
	value := setpointValue(n)
	began := time.Now()
	w.waiting[setpointKey(value)] = began
	w.mu.Unlock()
	q := url.Values{"project_id": {fmt.Sprint(w.load.opts.ProjectID)}, "dataPointID": {w.dp}, "value": {fmt.Sprint(value)}, "acked": {"true"}}
	var out struct {
		Resource struct {
			Reference string `json:"reference"`
		} `json:"resource"`
	}
	err := w.load.do(ctx, "POST", "/v2/datapoint/setpoint?"+q.Encode(), "", &out)
	w.mu.Lock()
	defer w.mu.Unlock()
	if err != nil || out.Resource.Reference == "" {
		w.httpErrors++
		delete(w.waiting, setpointKey(value))
		return
	}
	w.sent++
	w.answers = append(w.answers, time.Since(began))
}

// collect matches the device's writes since the last call with their
// requests by value.
func (w *SetpointWriter) collect() {
	writes := w.dev.Writes()
	w.mu.Lock()
	defer w.mu.Unlock()
	for _, d := range writes {
		if !d.Time.After(w.seenUpTo) || d.DataPointID != w.dp || d.Value == nil {
			continue
		}
		w.seenUpTo = d.Time
		key := setpointKey(*d.Value)
		if began, ok := w.waiting[key]; ok {
			w.written = append(w.written, d.Time.Sub(began))
			delete(w.waiting, key)
		}
	}
}

// Figures waits up to within for the device to take every write answered
// and reports: setpoints_sent (answered 2xx), setpoints_written (taken by
// the device), setpoints_http_errors, setpoint_p50_ms and setpoint_p99_ms
// (request to the device's write), setpoint_answer_p99_ms (the HTTP
// answer).
func (w *SetpointWriter) Figures(within time.Duration) map[string]any {
	for deadline := time.Now().Add(within); ; time.Sleep(200 * time.Millisecond) {
		w.collect()
		w.mu.Lock()
		done := len(w.written) >= w.sent
		w.mu.Unlock()
		if done || time.Now().After(deadline) {
			break
		}
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	return map[string]any{
		"setpoints_sent": w.sent, "setpoints_written": len(w.written), "setpoints_http_errors": w.httpErrors,
		"setpoint_p50_ms": ms(percentile(w.written, 50)), "setpoint_p99_ms": ms(percentile(w.written, 99)),
		"setpoint_answer_p99_ms": ms(percentile(w.answers, 99)),
	}
}
