package controls_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"runtime"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/openbdp/bdp/actors"
	"github.com/openbdp/bdp/analytics"
	"github.com/openbdp/bdp/controls"
	"github.com/openbdp/bdp/edge"
	"github.com/openbdp/bdp/pipeline"
	"github.com/openbdp/bdp/store"
	"github.com/openbdp/bdp/store/storetest"
)

// countingWriter accepts every write and counts them: the benchmark
// measures the apps, not the edge path (bdp-bench setpoint measures that).
type countingWriter struct{ n atomic.Int64 }

func (w *countingWriter) Write(_ context.Context, wr edge.Write) (edge.Operation, error) {
	w.n.Add(1)
	return edge.Operation{ProjectID: wr.ProjectID, DataPointID: wr.DataPointID, Value: wr.Value, Priority: wr.Priority, State: edge.StateWritten}, nil
}

// BenchmarkRunningScheduleApps starts 1,000 schedule apps over 100
// projects (10 rooms each, a weekday schedule of 10 entries) and reports
// the heap each running app holds and the process's CPU while they wait
// for their next boundary (real clock, one timer per app):
//
//	go test ./controls -run '^$' -bench RunningScheduleApps -benchtime 1x
func BenchmarkRunningScheduleApps(b *testing.B) {
	const projects, perProject = 100, 10
	ctx := context.Background()
	st, _ := storetest.Open(b, testCluster)
	catalog, err := analytics.LoadCatalog(ctx, st)
	if err != nil {
		b.Fatal(err)
	}
	var room store.CatalogComponent
	for _, c := range catalog.Components() {
		if c.AlphanumericID == "room" {
			room, _ = catalog.Component(c.ID)
		}
	}
	ids := map[string]int64{}
	for _, p := range room.Pins {
		ids[p.AlphanumericID] = p.ID
	}
	for _, a := range room.Attributes {
		ids[a.Key] = a.ID
	}
	schedule := `[`
	for i, d := range []string{"monday", "tuesday", "wednesday", "thursday", "friday"} {
		if i > 0 {
			schedule += ","
		}
		schedule += fmt.Sprintf(`{"day":%q,"start":"06:00","end":"12:00","value":21},{"day":%q,"start":"12:00","end":"18:00","value":20.5}`, d, d)
	}
	schedule += `]`
	cfg, _ := controls.ParseConfig("schedule", "room", nil, controls.DefaultAliveTimeout, true)
	raw, _ := json.Marshal(cfg)
	var apps []store.ControlsApp
	for p := 0; p < projects; p++ {
		co, u, _, err := st.CreateCompany(ctx, store.Company{Name: fmt.Sprintf("b%d", p)},
			store.NewUser{FirstName: "A", LastName: "B", Email: fmt.Sprintf("a@b%d.test", p), PasswordHash: "h"}, nil)
		if err != nil {
			b.Fatal(err)
		}
		proj, _, err := st.CreateProject(ctx, u.ID, store.Project{CompanyID: co.ID, Name: "p"}, []int32{1})
		if err != nil {
			b.Fatal(err)
		}
		for r := 0; r < perProject; r++ {
			dp := fmt.Sprintf("room%d_sp", r)
			if _, err := st.SetSystemTags(ctx, proj.ID, dp, []store.DatapointTag{{Key: "units", Value: "degC"}}); err != nil {
				b.Fatal(err)
			}
			if _, err := st.SetDatapointSetpoints(ctx, proj.ID, dp, 15, 25); err != nil {
				b.Fatal(err)
			}
			cip, err := st.CreateComponentInProject(ctx, proj.ID, room.ID, store.ComponentInProjectNames{})
			if err != nil {
				b.Fatal(err)
			}
			if err := st.MapPin(ctx, proj.ID, cip.ID, ids["temperature_setpoint"], dp, store.MapCreate); err != nil {
				b.Fatal(err)
			}
			for k, v := range map[string]string{"setpoint_schedule": schedule, "setpoint_schedule_default": "17"} {
				if err := st.SetAttribute(ctx, proj.ID, cip.ID, ids[k], v, store.MapCreate); err != nil {
					b.Fatal(err)
				}
			}
			a, err := st.CreateControlsApp(ctx, store.ControlsApp{ProjectID: proj.ID, ComponentInProjectID: cip.ID, Algorithm: "schedule", Config: raw}, "bench")
			if err != nil {
				b.Fatal(err)
			}
			apps = append(apps, a)
		}
	}
	w := &countingWriter{}
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	rt, err := controls.New(controls.Config{Store: st, Catalog: catalog, Writer: w, Router: pipeline.NewRouter(),
		History: actors.StoreHistory{Store: st}, Log: log})
	if err != nil {
		b.Fatal(err)
	}
	defer rt.Shutdown(ctx)

	settle() // twice: sync.Pool keeps what it held one collection longer
	var before runtime.MemStats
	runtime.ReadMemStats(&before)
	b.ResetTimer()
	for _, a := range apps {
		p, err := controls.Prepare(ctx, st, catalog, a, true)
		if err != nil {
			b.Fatal(err)
		}
		a, _, err = st.ChangeControlsApp(ctx, a.ProjectID, a.ID, store.AppChange{Code: store.StatusStarting, Message: "bench", Targets: p.Targets()})
		if err != nil {
			b.Fatal(err)
		}
		p.App = a
		if err := rt.Start(ctx, p); err != nil {
			b.Fatal(err)
		}
	}
	deadline := time.Now().Add(time.Minute)
	for w.n.Load() < int64(len(apps)) {
		if time.Now().After(deadline) {
			b.Fatalf("only %d of %d apps wrote", w.n.Load(), len(apps))
		}
		time.Sleep(10 * time.Millisecond)
	}
	b.StopTimer()
	time.Sleep(time.Second) // the last status changes and log entries
	settle()
	var after runtime.MemStats
	runtime.ReadMemStats(&after)
	perApp := float64(int64(after.HeapAlloc)-int64(before.HeapAlloc)) / float64(len(apps))

	const idle = 5 * time.Second
	cpu := func() time.Duration {
		var ru syscall.Rusage
		_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
		return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
	}
	c0 := cpu()
	time.Sleep(idle)
	idleCPU := float64(cpu()-c0) / float64(idle) * 100
	b.ReportMetric(perApp, "heap_bytes_per_app")
	b.ReportMetric(idleCPU, "idle_cpu_percent")
	b.ReportMetric(float64(rt.Running()), "running_apps")
}

// settle collects garbage until the live heap stops shrinking: pools
// (pgx's buffers) let go of what they held only over several collections.
func settle() {
	var m runtime.MemStats
	last := ^uint64(0)
	for i := 0; i < 10; i++ {
		runtime.GC()
		runtime.ReadMemStats(&m)
		if m.HeapAlloc >= last {
			return
		}
		last = m.HeapAlloc
	}
}
