package runner

import (
	"context"
	"testing"
	"time"

	"github.com/openbdp/bdp/store"
)

// One run of the room air quality function over 4 weeks of 1-minute CO2
// data (40,320 observations), as a worker computes it: the setup query,
// the series read, the kernel, the summary's previous period, the
// outcome's JSON. "previous stored" finds the result of the 4 weeks
// before; "previous computed" reads and runs them too (80,640
// observations, two kernel runs).
//
//	go test ./analytics/runner -run '^$' -bench AnalysisRun -benchtime 20x -count 3
func BenchmarkAnalysisRun(b *testing.B) {
	e := newEnv(b)
	ctx := context.Background()
	fn := e.catalogFunction(b, "room_air_quality_analysis")
	inst := e.instance(b, fn, false, t0)
	const weeks = 4
	period := weeks * Week
	pts := make([]store.Point, 0, 2*int(period/time.Minute))
	for at := t0.Add(-period); at.Before(t0.Add(period)); at = at.Add(time.Minute) {
		pts = append(pts, store.Point{Time: at, Value: 400 + float64(at.Minute()*20)})
	}
	e.write(b, pts...)
	if _, err := e.db.Exec(ctx, `VACUUM ANALYZE observations`); err != nil {
		b.Fatal(err)
	}
	p, err := New(Config{Store: e.st, Functions: FromCatalog(e.cat), Version: "bench", Log: e.log})
	if err != nil {
		b.Fatal(err)
	}
	run := store.AnalysisRun{InstanceID: inst, ProjectID: e.projectID, Start: t0, End: t0.Add(period)}
	b.Run("previous computed", func(b *testing.B) {
		for b.Loop() {
			if end, err := p.compute(ctx, run); err != nil || end.Status != store.AnalysisSuccess {
				b.Fatalf("%+v, %v", end, err)
			}
		}
	})
	prev := e.request(b, inst, t0.Add(-period), t0)
	end, err := p.compute(ctx, store.AnalysisRun{InstanceID: inst, Start: t0.Add(-period), End: t0})
	if err != nil {
		b.Fatal(err)
	}
	if _, err := e.st.FinishAnalysisRun(ctx, prev, end); err != nil {
		b.Fatal(err)
	}
	b.Run("previous stored", func(b *testing.B) {
		for b.Loop() {
			if end, err := p.compute(ctx, run); err != nil || end.Status != store.AnalysisSuccess {
				b.Fatalf("%+v, %v", end, err)
			}
		}
	})
}
