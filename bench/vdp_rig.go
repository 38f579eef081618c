package bench

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"runtime"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/openbdp/bdp/actors"
	"github.com/openbdp/bdp/pipeline"
	"github.com/openbdp/bdp/store"
	"github.com/openbdp/bdp/store/pgcluster"
)

// vdpRig is what the vdp scenarios run on: a throwaway PostgreSQL, the
// store, and the pipeline as bdp serve builds it.
type vdpRig struct {
	st      *store.Store
	project int64
	reg     *prometheus.Registry
	router  *pipeline.Router
	batcher *pipeline.Batcher
	reads   *actors.ReadBatcher // the engines' history reads, batched as in bdp serve
	now     time.Time           // when the pipeline was made
	log     *slog.Logger
	ticks   int      // the engines' TickRate
	stops   []func() // run in reverse by close
}

func newVDPRig(ctx context.Context, opts VDPOptions, progress func(string, ...any)) (_ *vdpRig, err error) {
	r := &vdpRig{log: slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn})), ticks: opts.TickRate}
	defer func() {
		if err != nil {
			r.close()
		}
	}()
	// The throwaway cluster is configured like bdp serve's managed one
	// (store/pgcluster: shared_buffers 1 GB) except that it does not
	// fsync: commits here are cheaper than on a durable database.
	progress("starting PostgreSQL")
	cluster, stopPG, err := pgcluster.StartForTests(ctx)
	if err != nil {
		return nil, err
	}
	r.stops = append(r.stops, stopPG)
	if r.st, err = store.Open(ctx, cluster.URL()); err != nil {
		return nil, err
	}
	r.stops = append(r.stops, r.st.Close)
	if r.project, err = vdpProject(ctx, r.st); err != nil {
		return nil, err
	}
	// The pipeline as bdp serve builds it (cmd/bdp/serve.go startPipeline):
	// default batching unless opts.BatchWait says otherwise, partitions of
	// the coming weeks made up front.
	r.now = time.Now().UTC()
	if err := r.st.EnsureUpcomingPartitions(ctx, r.now); err != nil {
		return nil, err
	}
	r.reg = prometheus.NewRegistry()
	r.router = pipeline.NewRouter()
	if r.batcher, err = pipeline.NewBatcher(pipeline.BatcherConfig{MaxWait: opts.BatchWait}, r.st, r.router, r.reg); err != nil {
		return nil, err
	}
	go r.batcher.Run()
	r.stops = append(r.stops, r.batcher.Stop)
	r.reads = actors.NewReadBatcher(r.st)
	r.stops = append(r.stops, r.reads.Close)
	return r, nil
}

// history is the engines' history as bdp serve gives it: the store, read
// in batches.
func (r *vdpRig) history() actors.StoreHistory {
	return actors.StoreHistory{Store: r.st, Batches: r.reads}
}

func (r *vdpRig) close() {
	for i := len(r.stops) - 1; i >= 0; i-- {
		r.stops[i]()
	}
	r.stops = nil
}

// newEngine makes an engine over the rig's pipeline, logging warnings
// and worse only; a scenario that restarts makes another.
func (r *vdpRig) newEngine(history actors.SourceReader) (*actors.Engine, error) {
	return actors.New(actors.EngineConfig{Sink: r.batcher, Router: r.router, History: history, Log: r.log, TickRate: r.ticks})
}

// vdpProject makes the company and project everything belongs to.
func vdpProject(ctx context.Context, st *store.Store) (int64, error) {
	if _, err := st.Migrate(ctx); err != nil {
		return 0, err
	}
	co, u, _, err := st.CreateCompany(ctx, store.Company{Name: "bench"},
		store.NewUser{FirstName: "B", LastName: "Bench", Email: "bench@example.com", PasswordHash: "unused"}, nil)
	if err != nil {
		return 0, err
	}
	p, _, err := st.CreateProject(ctx, u.ID, store.Project{CompanyID: co.ID, Name: "bench"}, nil)
	if err != nil {
		return 0, err
	}
	return p.ID, nil
}

// startVDPs starts every virtual datapoint, a few at a time: each start
// reads its pins' history, and the store's pool serves several at once.
func startVDPs(ctx context.Context, engine *actors.Engine, project int64, n int) error {
	return forEach(ctx, n, startParallel, func(ctx context.Context, i int) error {
		def, err := vdpDefinition(engine, project, i)
		if err == nil {
			_, err = engine.Start(ctx, def)
		}
		if err != nil {
			return fmt.Errorf("start %s: %w", vdpName(i), err)
		}
		return nil
	})
}

// reportEvery prints what done counts, out of n, every 5 s until the
// returned stop is called: the long phases of the mix show they move.
func reportEvery(progress func(string, ...any), what string, n int, done *atomic.Int64) (stop func()) {
	quit := make(chan struct{})
	began := time.Now()
	go func() {
		tick := time.NewTicker(5 * time.Second)
		defer tick.Stop()
		for {
			select {
			case <-tick.C:
				progress("%s: %d of %d after %.0f s", what, done.Load(), n, time.Since(began).Seconds())
			case <-quit:
				return
			}
		}
	}()
	return func() { close(quit) }
}

// startParallel is how many virtual datapoints the scenarios start at once.
const startParallel = 64

// forEach calls fn for every i in [0, n), workers at once; the first
// error cancels the context of the others and is returned.
func forEach(ctx context.Context, n, workers int, fn func(ctx context.Context, i int) error) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var next atomic.Int64
	var wg sync.WaitGroup
	errs := make(chan error, workers)
	for range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := int(next.Add(1) - 1); i < n; i = int(next.Add(1) - 1) {
				if err := fn(ctx, i); err != nil {
					errs <- err
					cancel()
					return
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	return <-errs
}

// heapAfterGC is the live heap: twice GC, so objects freed by finalizers
// of the first round are gone too.
func heapAfterGC() uint64 {
	runtime.GC()
	runtime.GC()
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return m.HeapAlloc
}

// countingHistory counts the observations the actors read to fill their
// windows, which proves the windows full before the heap is measured.
type countingHistory struct {
	actors.SourceReader
	points atomic.Int64
}

func (h *countingHistory) Recent(ctx context.Context, projectID int64, dataPointID string, count int, since, end time.Time) ([]actors.Point, error) {
	pts, err := h.SourceReader.Recent(ctx, projectID, dataPointID, count, since, end)
	h.points.Add(int64(len(pts)))
	return pts, err
}

// storedCount reads the pipeline's own counter of committed observations
// of one source: it costs the measured path nothing.
func storedCount(reg *prometheus.Registry, src pipeline.Source) float64 {
	families, err := reg.Gather()
	if err != nil {
		return 0
	}
	for _, f := range families {
		if f.GetName() != "bdp_pipeline_observations_stored_total" {
			continue
		}
		for _, m := range f.GetMetric() {
			for _, l := range m.GetLabel() {
				if l.GetName() == "source" && l.GetValue() == string(src) {
					return m.GetCounter().GetValue()
				}
			}
		}
	}
	return 0
}

// loadAverage is the 1-minute load average, -1 where /proc has none.
func loadAverage() float64 {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return -1
	}
	var l float64
	if _, err := fmt.Sscan(string(b), &l); err != nil {
		return -1
	}
	return l
}

// histogram reads the count and sum of one of the pipeline's histograms,
// and how many of its samples exceed over.
func histogram(reg *prometheus.Registry, name string, over float64) (count uint64, sum float64, above uint64) {
	families, err := reg.Gather()
	if err != nil {
		return 0, 0, 0
	}
	for _, f := range families {
		if f.GetName() == name && len(f.GetMetric()) == 1 {
			h := f.GetMetric()[0].GetHistogram()
			above = h.GetSampleCount()
			for _, b := range h.GetBucket() {
				if b.GetUpperBound() == over {
					above -= b.GetCumulativeCount()
				}
			}
			return h.GetSampleCount(), h.GetSampleSum(), above
		}
	}
	return 0, 0, 0
}
