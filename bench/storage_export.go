package bench

import (
	"context"
	"fmt"
	"math"
	"time"

	"github.com/openbdp/bdp/store"
)

// storageQuery is one of the reads /v2/datapoint/timeseries makes of the
// store, run on a datapoint.
type storageQuery struct {
	name string
	read func(ctx context.Context, dp int64) ([]store.Point, error)
}

func exportQueries(st *store.Store, end time.Time) []storageQuery {
	sampled := func(span, every time.Duration) func(context.Context, int64) ([]store.Point, error) {
		return func(ctx context.Context, dp int64) ([]store.Point, error) {
			return st.ReadSampled(ctx, dp, end.Add(-span), end, every, store.SampleOrigin, store.Mean)
		}
	}
	return []storageQuery{
		{"newest", func(ctx context.Context, dp int64) ([]store.Point, error) {
			return st.ReadObservations(ctx, dp, store.ReadQuery{Max: 1000})
		}},
		{"hourly_30d", sampled(30*24*time.Hour, time.Hour)},
		{"daily_1y", sampled(365*24*time.Hour, 24*time.Hour)},
	}
}

// exportRatios writes the twin of datapoint exportSource, the same series,
// into the head after every pass (so it stays rows), vacuums as
// autovacuum would, and reads both alternately through the store API,
// which /v2 export uses: Reads times each query on each, the first of a
// pair switching sides every time so that neither profits from the other
// warming the cache. Both answers must be the same. The ratio is the
// sealed datapoint's median over its twin's; the mean CPU time of this
// process per read tells the Go side (decoding, merging, aggregating)
// from the database's.
func (m *storageMix) exportRatios(ctx context.Context, url string, end time.Time, res map[string]any) error {
	s := newSeries(m.o.Seed, exportSource)
	var rows []store.Row
	for w := range m.o.Weeks {
		rows = s.week(m.month, m.twin, m.start, w, rows[:0])
		if err := m.st.WriteObservations(ctx, rows); err != nil {
			return fmt.Errorf("load the export twin: %w", err)
		}
	}
	if err := maintain(ctx, url, `CHECKPOINT`, `VACUUM (ANALYZE) observations`); err != nil {
		return err
	}
	sealed := m.ids[exportSource]
	if m.o.ReadProfile != "" {
		stop, err := startCPUProfile(m.o.ReadProfile)
		if err != nil {
			return err
		}
		defer stop()
	}
	m.o.Progress("export: %d alternated reads of each query on datapoint %d (sealed) and its twin %d (rows)", m.o.Reads, sealed, m.twin)
	for _, q := range exportQueries(m.st, end) {
		a, err := q.read(ctx, sealed)
		if err != nil {
			return fmt.Errorf("export %s: %w", q.name, err)
		}
		b, err := q.read(ctx, m.twin)
		if err != nil {
			return fmt.Errorf("export %s: %w", q.name, err)
		}
		if !pointsEqual(a, b) || len(a) == 0 {
			return fmt.Errorf("export %s: the sealed datapoint answers %d points, its twin in rows %d, not the same", q.name, len(a), len(b))
		}
		var onSealed, onRows []time.Duration
		var cpuSealed, cpuRows time.Duration // this process's: the Go side of the reads
		for i := range m.o.Reads {
			order := []int64{sealed, m.twin}
			if i%2 == 1 {
				order = []int64{m.twin, sealed}
			}
			for _, dp := range order {
				cpu, began := selfCPU(), time.Now()
				if _, err := q.read(ctx, dp); err != nil {
					return fmt.Errorf("export %s: %w", q.name, err)
				}
				if took, cpu := time.Since(began), selfCPU()-cpu; dp == sealed {
					onSealed, cpuSealed = append(onSealed, took), cpuSealed+cpu
				} else {
					onRows, cpuRows = append(onRows, took), cpuRows+cpu
				}
			}
		}
		ps, pr := percentile(onSealed, 50), percentile(onRows, 50)
		res["export_ratio_"+q.name] = round3(float64(ps) / float64(pr))
		res["export_"+q.name+"_sealed_p50_ms"] = ms(ps)
		res["export_"+q.name+"_rows_p50_ms"] = ms(pr)
		res["export_"+q.name+"_points"] = len(a)
		res["export_"+q.name+"_sealed_go_cpu_ms"] = ms(cpuSealed / time.Duration(m.o.Reads))
		res["export_"+q.name+"_rows_go_cpu_ms"] = ms(cpuRows / time.Duration(m.o.Reads))
		m.o.Progress("export %s: sealed p50 %.2f ms, rows p50 %.2f ms", q.name, float64(ps)/1e6, float64(pr)/1e6)
	}
	return nil
}

// pointsEqual tells whether two answers hold the same times and the same
// values, bit for bit.
func pointsEqual(a, b []store.Point) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if !a[i].Time.Equal(b[i].Time) || math.Float64bits(a[i].Value) != math.Float64bits(b[i].Value) {
			return false
		}
	}
	return true
}
