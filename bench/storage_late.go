package bench

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5/pgconn"

	"github.com/openbdp/bdp/store"
	"github.com/openbdp/bdp/store/sealer"
)

// lateModel is what was acknowledged: per datapoint, the last value
// written at each time (µs since the epoch).
type lateModel struct {
	mu     sync.Mutex
	values map[int64]map[int64]float64
}

func (m *lateModel) ack(rows []store.Row) {
	m.mu.Lock()
	defer m.mu.Unlock()
	for _, r := range rows {
		if m.values[r.Datapoint] == nil {
			m.values[r.Datapoint] = map[int64]float64{}
		}
		m.values[r.Datapoint][r.Time.UnixMicro()] = r.Value
	}
}

// times are a datapoint's acknowledged times, taken before a read: each
// must be in it.
func (m *lateModel) times(dp int64) []int64 {
	m.mu.Lock()
	defer m.mu.Unlock()
	out := make([]int64, 0, len(m.values[dp]))
	for t := range m.values[dp] {
		out = append(out, t)
	}
	return out
}

// lateRun counts what the late-write test saw.
type lateRun struct {
	writes, reads, readViolations atomic.Int64
	writeDeadlocks                atomic.Int64 // writes PostgreSQL chose as a deadlock's victim, then sent again
}

// isDeadlock tells whether PostgreSQL broke a deadlock by aborting this
// transaction (SQLSTATE 40P01): nothing of it was committed, and the
// sealer's next pass, or a writer's retry, does it again.
func isDeadlock(err error) bool {
	var pe *pgconn.PgError
	return errors.As(err, &pe) && pe.Code == "40P01"
}

// lateWrites is store/sealer's TestConcurrentLateWritesNeverLoseOrDouble
// at the benchmark's scale, on a database of its own in the same cluster:
// LateWeeks of the mix's series for LateDatapoints, then for LateDuration
// three writers send late observations into the weeks being sealed (new
// times, and times that hold a value; each writer into datapoints of
// its own), two readers read whole series and
// check each holds every time acknowledged before the read, once and in
// order, and the sealer passes over and over, every third pass cut off
// mid-way (a crash: its batch rolls back), every fourth followed by the
// unsealing of a week. After a last pass every datapoint must hold
// exactly what was acknowledged, its last value at each time.
// lost_or_duplicated counts every point missing, doubled, out of order,
// not acknowledged or of another value, in the reads meanwhile and at
// the end. A seal's delete and a late batch's upsert can lock the same
// rows in opposite orders; PostgreSQL then aborts one of them
// (deadlocks are counted): a pass leaves the rest to the next one, a
// writer sends its batch again, as a client told of a failed write does.
func lateWrites(ctx context.Context, p *Platform, month *bsrnMonth, o StorageOptions, log *slog.Logger, res map[string]any) error {
	url, err := p.cluster.CreateDatabase(ctx, "storage_late")
	if err != nil {
		return err
	}
	st, err := store.Open(ctx, url)
	if err != nil {
		return err
	}
	defer st.Close()
	project, err := vdpProject(ctx, st)
	if err != nil {
		return err
	}
	names := make([]string, o.LateDatapoints)
	for i := range names {
		names[i] = fmt.Sprintf("late/%04d", i)
	}
	byName, err := st.EnsureDatapoints(ctx, project, names)
	if err != nil {
		return err
	}
	dps := make([]int64, len(names))
	for i, n := range names {
		dps[i] = byName[n]
	}
	start := mondayOf(time.Now()).AddDate(0, 0, -7*(o.LateWeeks+2))
	end := start.AddDate(0, 0, 7*o.LateWeeks)
	// Reads take a minute more on each side: a jittered series' first
	// minute may lie up to 2 s before start.
	readFrom, readTo := start.Add(-time.Minute), end.Add(time.Minute)
	m := &lateModel{values: map[int64]map[int64]float64{}}
	for i, dp := range dps {
		s := newSeries(o.Seed+1, i)
		var rows []store.Row
		for w := range o.LateWeeks {
			rows = s.week(month, dp, start, w, rows)
		}
		if err := st.WriteObservations(ctx, rows); err != nil {
			return fmt.Errorf("late-write test: %w", err)
		}
		m.ack(rows)
	}
	s, err := sealer.New(st, sealer.Config{Grace: time.Hour, Duty: 1, Now: func() time.Time { return end.AddDate(0, 0, 1) }}, log, nil)
	if err != nil {
		return err
	}
	o.Progress("late-write test: %d datapoints, %d weeks, %s of late writes, reads and seal passes", len(dps), o.LateWeeks, o.LateDuration)

	var run lateRun
	runCtx, stop := context.WithCancel(ctx)
	defer stop()
	var wg sync.WaitGroup
	errs := make(chan error, 8)
	// Each writer has datapoints of its own: two writers racing at one
	// time would commit in one order and acknowledge in the other, and
	// the model could not tell which value is the last.
	const writers = 3
	for w := range writers {
		var own []int64
		for i := w; i < len(dps); i += writers {
			own = append(own, dps[i])
		}
		wg.Go(func() {
			if err := lateWriter(runCtx, st, m, &run, own, start, end, uint64(w)); err != nil {
				errs <- err
			}
		})
	}
	for r := range 2 {
		wg.Go(func() {
			if err := lateReader(runCtx, st, m, &run, dps, readFrom, readTo, uint64(r)); err != nil {
				errs <- err
			}
		})
	}
	passes, cut, unseals, deadlocks, err := latePasses(ctx, st, s, start, o.LateDuration)
	stop()
	wg.Wait()
	close(errs)
	if err != nil {
		return err
	}
	for err := range errs {
		return err
	}
	if _, err := s.Pass(ctx); err != nil {
		return fmt.Errorf("late-write test, last pass: %w", err)
	}
	lost, doubled, err := lateVerify(ctx, st, m, dps, readFrom, readTo, o.Progress)
	if err != nil {
		return err
	}
	figures, err := st.StorageFigures(ctx, true)
	if err != nil {
		return err
	}
	res["lost_or_duplicated"] = lost + doubled + run.readViolations.Load()
	res["late_lost"], res["late_duplicated"], res["late_read_violations"] = lost, doubled, run.readViolations.Load()
	res["late_writes"], res["late_reads"] = run.writes.Load(), run.reads.Load()
	res["late_passes"], res["late_passes_cut"], res["late_unseals"] = passes, cut, unseals
	res["late_head_after_last_pass"] = figures.Head.Observations
	res["late_deadlocks_sealer"], res["late_deadlocks_writer"] = deadlocks, run.writeDeadlocks.Load()
	o.Progress("late-write test: %d late rows, %d reads, %d passes (%d cut, %d unseals; deadlocks: %d of the sealer's, %d of writes): %d lost, %d doubled, %d bad reads",
		run.writes.Load(), run.reads.Load(), passes, cut, unseals, deadlocks, run.writeDeadlocks.Load(), lost, doubled, run.readViolations.Load())
	return nil
}

// lateWriter writes batches of 1 to 20 late observations until ctx ends,
// each to its end,
// at millisecond times in [start, end), half of them on the minute where
// the series hold values, and acknowledges each batch once written.
func lateWriter(ctx context.Context, st *store.Store, m *lateModel, run *lateRun, dps []int64, start, end time.Time, seed uint64) error {
	rng := rand.New(rand.NewPCG(seed, 9))
	for ctx.Err() == nil {
		var batch []store.Row
		seen := map[[2]int64]bool{} // one row per datapoint and time, as the pipeline writes
		for range 1 + rng.IntN(20) {
			at := start.Add(time.Duration(rng.Int64N(int64(end.Sub(start))))).Truncate(time.Millisecond)
			if rng.IntN(2) == 0 {
				at = at.Truncate(time.Minute)
			}
			r := store.Row{Datapoint: dps[rng.IntN(len(dps))], Time: at, Value: math.Round(rng.Float64()*1e4) / 100}
			if key := [2]int64{r.Datapoint, at.UnixMicro()}; !seen[key] {
				seen[key] = true
				batch = append(batch, r)
			}
		}
		// Not under ctx: a write cut off by the end of the run may have
		// committed without being acknowledged, and the model could not
		// tell.
		err := st.WriteObservations(context.WithoutCancel(ctx), batch)
		for err != nil && isDeadlock(err) {
			// A seal's delete met this batch's upsert in the other order:
			// the client is told its write failed, and sends it again.
			run.writeDeadlocks.Add(1)
			err = st.WriteObservations(context.WithoutCancel(ctx), batch)
		}
		if err != nil {
			return fmt.Errorf("late write: %w", err)
		}
		m.ack(batch)
		run.writes.Add(int64(len(batch)))
	}
	return nil
}

// lateReader reads whole series until ctx ends and counts, in each, the
// acknowledged times missing and the points not after their predecessor.
func lateReader(ctx context.Context, st *store.Store, m *lateModel, run *lateRun, dps []int64, start, end time.Time, seed uint64) error {
	rng := rand.New(rand.NewPCG(seed, 99))
	for ctx.Err() == nil {
		dp := dps[rng.IntN(len(dps))]
		acked := m.times(dp)
		pts, err := st.ReadObservations(ctx, dp, store.ReadQuery{Start: start, End: end})
		if err != nil {
			if ctx.Err() != nil {
				return nil
			}
			return fmt.Errorf("late-write test read: %w", err)
		}
		seen := make(map[int64]bool, len(pts))
		for i, p := range pts {
			if i > 0 && !p.Time.After(pts[i-1].Time) {
				run.readViolations.Add(1)
			}
			seen[p.Time.UnixMicro()] = true
		}
		for _, t := range acked {
			if !seen[t] {
				run.readViolations.Add(1)
			}
		}
		run.reads.Add(1)
	}
	return nil
}

// latePasses runs seal passes for d: every third cut off after up to
// 200 ms, every fourth followed by the unsealing of the second week. A
// pass or an unsealing PostgreSQL aborts to break a deadlock is counted
// and the loop goes on, as the sealer's own loop does (the next pass
// seals what it left).
func latePasses(ctx context.Context, st *store.Store, s *sealer.Sealer, start time.Time, d time.Duration) (passes, cut, unseals, deadlocks int, err error) {
	rng := rand.New(rand.NewPCG(1, 2))
	deadline := time.Now().Add(d)
	for i := 0; time.Now().Before(deadline); i++ {
		passCtx, cancel := context.WithCancel(ctx)
		if i%3 == 1 {
			time.AfterFunc(time.Duration(rng.IntN(200))*time.Millisecond, cancel)
		}
		_, err := s.Pass(passCtx)
		wasCut := err != nil && passCtx.Err() != nil
		cancel()
		if isDeadlock(err) {
			deadlocks++
		} else if err != nil && !wasCut {
			return passes, cut, unseals, deadlocks, fmt.Errorf("late-write test pass: %w", err)
		}
		passes++
		if wasCut {
			cut++
		}
		if i%4 == 3 {
			_, err := st.UnsealWeek(ctx, start.AddDate(0, 0, 7))
			if isDeadlock(err) {
				deadlocks++
			} else if err != nil {
				return passes, cut, unseals, deadlocks, err
			}
			unseals++
		}
	}
	return passes, cut, unseals, deadlocks, nil
}

// lateVerify compares every datapoint with the model: lost are the
// acknowledged times missing or holding another value, doubled the
// points not after their predecessor or never acknowledged.
func lateVerify(ctx context.Context, st *store.Store, m *lateModel, dps []int64, start, end time.Time, progress func(string, ...any)) (lost, doubled int64, err error) {
	reported := 0
	report := func(format string, a ...any) { // the first few, to look into
		if reported++; reported <= 5 {
			progress("late-write test: "+format, a...)
		}
	}
	for _, dp := range dps {
		pts, err := st.ReadObservations(ctx, dp, store.ReadQuery{Start: start, End: end})
		if err != nil {
			return 0, 0, err
		}
		want := m.values[dp]
		seen := make(map[int64]bool, len(pts))
		for i, p := range pts {
			t := p.Time.UnixMicro()
			v, ok := want[t]
			switch {
			case i > 0 && !p.Time.After(pts[i-1].Time), !ok:
				doubled++
				report("datapoint %d at %s: twice or never acknowledged", dp, p.Time.Format(time.RFC3339Nano))
			case math.Float64bits(v) != math.Float64bits(p.Value):
				lost++
				report("datapoint %d at %s: %v, acknowledged %v", dp, p.Time.Format(time.RFC3339Nano), p.Value, v)
			}
			seen[t] = true
		}
		for t := range want {
			if !seen[t] {
				lost++
				report("datapoint %d at %s: missing", dp, time.UnixMicro(t).UTC().Format(time.RFC3339Nano))
			}
		}
	}
	return lost, doubled, nil
}
