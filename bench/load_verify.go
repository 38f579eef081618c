package bench

import (
	"context"
	"fmt"
	"maps"
	"time"
)

// WaitCalculated waits until every running datapoint has its output of
// the last acknowledged round it has one for (its newest output is at
// that round's time), within the given time.
func (l *Load) WaitCalculated(ctx context.Context, within time.Duration) error {
	l.mu.Lock()
	rounds, stopped := l.rounds, maps.Clone(l.stopped)
	l.mu.Unlock()
	deadline := time.Now().Add(within)
	for i := range l.opts.VDPs {
		if _, ok := stopped[i]; ok {
			continue
		}
		r := l.lastExpected(i, rounds)
		if r < 0 {
			continue
		}
		last := l.roundTime(r)
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
				return fmt.Errorf("load: %s has not calculated round %d within %s", l.output(i), r, within)
			}
			time.Sleep(10 * time.Millisecond)
		}
	}
	return nil
}

// Verdict is what Verify found.
type Verdict struct {
	OutputsMissing   int // rounds a running datapoint has no output for
	OutputsDifferent int // outputs with another value than expected (the source's times the factor, a window's aggregate, ...), or where none is
	OutputsAfterStop int // outputs of a stopped datapoint for rounds acknowledged after its stop
	AckedLost        int // acknowledged source observations not stored
	// AckedLost by the path that carried them.
	AckedLostHTTP, AckedLostKafka, AckedLostMQTT int
	// Outputs missing, different or after a stop, by the path that
	// carried the datapoint's source.
	OutputsWrongHTTP, OutputsWrongKafka, OutputsWrongMQTT int
	FirstDifference                                       string // the first output different, missing or after a stop, described
}

// Verify waits up to within for every output and every source
// observation to be there, then compares every datapoint's outputs with
// what it should have calculated, and every source with what was
// acknowledged.
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
		expected := 0
		for r := range want {
			if _, ok := l.expected(i, r); ok {
				expected++
			}
		}
		pts, err := l.seriesOf(ctx, l.output(i), expected, deadline)
		if err != nil {
			return v, err
		}
		wrongBefore := v.OutputsMissing + v.OutputsDifferent + v.OutputsAfterStop
		note := func(format string, a ...any) {
			if v.FirstDifference == "" {
				v.FirstDifference = fmt.Sprintf("%s (%s): ", l.output(i), l.kinds[i]) + fmt.Sprintf(format, a...)
			}
		}
		seen := map[int]bool{}
		for _, p := range pts {
			r := int(p.Time.Sub(l.start) / time.Minute)
			value, ok := l.expected(i, r)
			switch {
			case r >= want:
				v.OutputsAfterStop++
				note("an output at round %d, after its stop at %d", r, want)
			case !ok:
				v.OutputsDifferent++
				note("an output at round %d (%s), where none is expected", r, p.Time.Format(time.RFC3339Nano))
			case p.Value != value:
				v.OutputsDifferent++
				note("round %d: stored %v, expected %v", r, p.Value, value)
			}
			seen[r] = true
		}
		for r := range want {
			if _, ok := l.expected(i, r); ok && !seen[r] {
				v.OutputsMissing++
				note("no output at round %d", r)
			}
		}
		*v.byPath(l.sourcePath[i%l.opts.Sources], &v.OutputsWrongHTTP, &v.OutputsWrongKafka, &v.OutputsWrongMQTT) +=
			v.OutputsMissing + v.OutputsDifferent + v.OutputsAfterStop - wrongBefore
	}
	for s := range l.opts.Sources {
		pts, err := l.seriesOf(ctx, l.source(s), rounds, deadline)
		if err != nil {
			return v, err
		}
		lost := max(0, rounds-len(pts))
		v.AckedLost += lost
		*v.byPath(l.sourcePath[s], &v.AckedLostHTTP, &v.AckedLostKafka, &v.AckedLostMQTT) += lost
	}
	return v, nil
}

// byPath picks the counter of path p.
func (v *Verdict) byPath(p Path, http, kafka, mqtt *int) *int {
	switch p {
	case PathKafka:
		return kafka
	case PathMQTT:
		return mqtt
	}
	return http
}

// seriesOf reads a datapoint's whole series, again until it holds at
// least n observations or the deadline passes: what Kafka carried may
// still be on its way to the store.
func (l *Load) seriesOf(ctx context.Context, id string, n int, deadline time.Time) ([]point, error) {
	for {
		pts, err := l.series(ctx, id)
		if err != nil || len(pts) >= n || time.Now().After(deadline) {
			return pts, err
		}
		if err := sleepCtx(ctx, 100*time.Millisecond); err != nil {
			return nil, err
		}
	}
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
