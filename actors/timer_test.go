package actors

import (
	"context"
	"io"
	"log/slog"
	"testing"
	"time"

	"github.com/openbdp/bdp/clock"
	"github.com/openbdp/bdp/pipeline"
)

// A running actor's timed trigger fires by the clock: at the next minute
// or hour boundary it emits the aggregate of its window, with values read
// from history at start and delivered live, stamped with the boundary
// (decisions.md 5). The engine's clock is set 1.5 s before a boundary, so
// the real timer fires within the test.
func TestTimedTriggersFireLive(t *testing.T) {
	for _, tc := range []struct {
		trigger  string
		boundary time.Time
	}{
		{"every_minute", t0.Add(3 * time.Minute)},
		{"every_hour", t0.Add(time.Hour)},
	} {
		t.Run(tc.trigger, func(t *testing.T) {
			t.Parallel()
			e := newEnv(t)
			ctx := context.Background()
			def := e.definition("out", TypeFormula, `{"pins":{"P1":{"dataPointID":"src","data_range":{"count":3},
				"aggregate":"mean","trigger":"`+tc.trigger+`"}},"parameters":{"formula":"P1 x 10"}}`)
			before := tc.boundary.Add(-2 * time.Minute)
			e.writeAt("src", before, 1) // history, read at start
			e.writeAt("src", before.Add(time.Minute), 3)

			offset := time.Until(tc.boundary.Add(-1500 * time.Millisecond))
			eng, err := New(EngineConfig{Sink: e.batcher, Router: e.router, History: StoreHistory{Store: e.store},
				Log: slog.New(slog.NewTextHandler(io.Discard, nil)), Clock: clock.Func(func() time.Time { return time.Now().Add(offset) })})
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { eng.Shutdown(context.Background()) })
			if _, err := eng.Start(ctx, def); err != nil {
				t.Fatal(err)
			}
			e.writeAt("src", tc.boundary.Add(-30*time.Second), 8) // live, before the boundary
			early, err := StoreHistory{Store: e.store}.Recent(ctx, e.project, "out", 0, t0.Add(-time.Hour), t0.Add(24*time.Hour))
			if err != nil || len(early) != 0 {
				t.Fatalf("output before the boundary: %v (%v)", early, err)
			}
			got := e.outputs("out", 1)
			if len(got) != 1 || !got[0].Time.Equal(tc.boundary) || got[0].Value != 40 {
				t.Fatalf("outputs %v, want one of 40 (mean of 1, 3, 8, times 10) at %s", got, tc.boundary)
			}
		})
	}
}

func (e *env) writeAt(dp string, at time.Time, v float64) {
	e.t.Helper()
	err := e.batcher.Write(context.Background(), pipeline.SourceHTTP, []pipeline.Observation{
		{ProjectID: e.project, DataPointID: dp, Time: at, Value: v}})
	if err != nil {
		e.t.Fatal(err)
	}
}
