package sealer

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"math/rand/v2"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/openbdp/bdp/store"
	"github.com/openbdp/bdp/store/pgcluster"
	"github.com/openbdp/bdp/store/storetest"
)

var testPG *pgcluster.Cluster

func TestMain(m *testing.M) {
	pgcluster.RunTests(m, func(c *pgcluster.Cluster) { testPG = c })
}

// model is what was acknowledged: per datapoint, the last value written
// at each time.
type model struct {
	mu     sync.Mutex
	values map[int64]map[time.Time]float64
}

func (m *model) ack(rows []store.Row) {
	m.mu.Lock()
	defer m.mu.Unlock()
	for _, r := range rows {
		if m.values[r.Datapoint] == nil {
			m.values[r.Datapoint] = map[time.Time]float64{}
		}
		m.values[r.Datapoint][r.Time] = r.Value
	}
}

// replace is ReplaceOutputs in the model: the period's values give way to
// pts.
func (m *model) replace(dp int64, from, to time.Time, pts []store.Point) {
	m.mu.Lock()
	defer m.mu.Unlock()
	for at := range m.values[dp] {
		if !at.Before(from) && at.Before(to) {
			delete(m.values[dp], at)
		}
	}
	for _, p := range pts {
		m.values[dp][p.Time] = p.Value
	}
}

// equal tells how a read of every time of a datapoint differs from the
// model; "" when it does not.
func (m *model) equal(dp int64, pts []store.Point) string {
	m.mu.Lock()
	defer m.mu.Unlock()
	want := m.values[dp]
	for i, p := range pts {
		if i > 0 && !p.Time.After(pts[i-1].Time) {
			return fmt.Sprintf("%v after %v: a point twice or out of order", p.Time, pts[i-1].Time)
		}
		if v, ok := want[p.Time]; !ok || v != p.Value {
			return fmt.Sprintf("%v at %v, the model has %v (%v)", p.Value, p.Time, v, ok)
		}
	}
	if len(pts) != len(want) {
		return fmt.Sprintf("%d points, the model %d", len(pts), len(want))
	}
	return ""
}

// times are the acknowledged times of a datapoint.
func (m *model) times(dp int64) map[time.Time]bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	out := make(map[time.Time]bool, len(m.values[dp]))
	for t := range m.values[dp] {
		out[t] = true
	}
	return out
}

// The property test of sealing (issue 21): while passes run, some cut off
// mid-transaction as a crash would, and a week is unsealed now and then,
//   - late writes land in the weeks being sealed, at new times and at
//     times that hold a value, and in-order writes go on in the open week;
//   - readers read the late-written datapoints: never a point twice, never
//     an acknowledged one missing;
//   - recomputes replace periods of two outputs (ReplaceOutputs), each by
//     one owner, as a virtual datapoint's are, and read the output back
//     whole: it must equal the model exactly;
//   - a purged virtual datapoint and a second project are deleted.
//
// At the end every datapoint holds exactly what the model holds, the
// deleted ones nothing, and the store's counts add up to the model's.
func TestConcurrentLateWritesNeverLoseOrDouble(t *testing.T) {
	st, _ := storetest.Open(t, testPG)
	tenant := storetest.NewTenant(t, st, "seal")
	other := storetest.NewTenant(t, st, "other")
	ctx := context.Background()
	project := tenant.Project.ID
	var names []string
	for i := range 12 {
		names = append(names, "dp"+string(rune('a'+i)))
	}
	outputs := []string{"out1", "out2"}
	ids, err := st.EnsureDatapoints(ctx, project, append(append(slices.Clone(names), outputs...), "gone"))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := st.CreateVDP(ctx, store.VDP{ProjectID: project, DataPointID: "gone", Type: "formula",
		Config: json.RawMessage(`{"pins":{"P1":{"dataPointID":"dpa"}},"parameters":{"formula":"P1;"}}`)},
		store.StatusChange{Code: store.StatusReadyToStart, Message: "valid"}); err != nil {
		t.Fatal(err)
	}
	otherIDs, err := st.EnsureDatapoints(ctx, other.Project.ID, []string{"x", "y", "z"})
	if err != nil {
		t.Fatal(err)
	}
	var dps []int64 // written late
	for _, n := range names {
		dps = append(dps, ids[n])
	}
	deleted := []int64{ids["gone"], otherIDs["x"], otherIDs["y"], otherIDs["z"]}
	start := time.Date(2024, 1, 1, 0, 0, 0, 0, time.UTC) // a Monday
	end := start.AddDate(0, 0, 21)
	m := &model{values: map[int64]map[time.Time]float64{}}
	var rows []store.Row
	for _, dp := range append(append(slices.Clone(dps), ids["out1"], ids["out2"]), deleted...) {
		for at := start; at.Before(end); at = at.Add(5 * time.Minute) {
			rows = append(rows, store.Row{Datapoint: dp, Time: at, Value: float64(at.Unix()%997) / 10})
		}
	}
	if err := st.WriteObservations(ctx, rows); err != nil {
		t.Fatal(err)
	}
	m.ack(rows)
	for _, dp := range deleted {
		delete(m.values, dp)
	}

	s, err := New(st, Config{Grace: time.Hour, Duty: 1, Now: func() time.Time { return end.AddDate(0, 0, 1) }},
		slog.New(slog.NewTextHandler(io.Discard, nil)), prometheus.NewRegistry())
	if err != nil {
		t.Fatal(err)
	}

	runCtx, stop := context.WithCancel(ctx)
	var wg sync.WaitGroup
	errs := make(chan error, 16)
	run := func(seed uint64, step func(rng *rand.Rand) error) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			rng := rand.New(rand.NewPCG(seed, 9))
			for runCtx.Err() == nil {
				if err := step(rng); err != nil {
					errs <- err
					return
				}
			}
		}()
	}
	// Late writers: into the sealed weeks, at new times and at times
	// that hold a value.
	for w := range 3 {
		run(uint64(w), func(rng *rand.Rand) error {
			var batch []store.Row
			seen := map[[2]int64]bool{} // one row per datapoint and time, as the pipeline writes
			for range 1 + rng.IntN(20) {
				at := start.Add(time.Duration(rng.Int64N(int64(end.Sub(start)))))
				if rng.IntN(2) == 0 {
					at = at.Truncate(5 * time.Minute) // overwrite a value
				}
				r := store.Row{Datapoint: dps[rng.IntN(len(dps))], Time: at.Truncate(time.Microsecond), Value: rng.Float64()}
				if key := [2]int64{r.Datapoint, r.Time.UnixMicro()}; !seen[key] {
					seen[key] = true
					batch = append(batch, r)
				}
			}
			if err := st.WriteObservations(ctx, batch); err != nil {
				return err
			}
			m.ack(batch)
			return nil
		})
	}
	// An in-order writer: the open week, which no pass seals.
	next := end
	run(7, func(rng *rand.Rand) error {
		batch := make([]store.Row, 0, len(dps))
		for _, dp := range dps {
			batch = append(batch, store.Row{Datapoint: dp, Time: next, Value: rng.Float64()})
		}
		if err := st.WriteObservations(ctx, batch); err != nil {
			return err
		}
		m.ack(batch)
		next = next.Add(time.Second)
		return nil
	})
	// Readers: every acknowledged time once, in order.
	for r := range 2 {
		run(uint64(10+r), func(rng *rand.Rand) error {
			dp := dps[rng.IntN(len(dps))]
			acked := m.times(dp)
			pts, err := st.ReadObservations(ctx, dp, store.ReadQuery{Start: start, End: end})
			if err != nil {
				return err
			}
			seen := map[time.Time]bool{}
			for i, p := range pts {
				if i > 0 && !p.Time.After(pts[i-1].Time) {
					return fmt.Errorf("read %v after %v: a point twice or out of order", p.Time, pts[i-1].Time)
				}
				seen[p.Time] = true
			}
			for at := range acked {
				if !seen[at] && at.Before(end) {
					return fmt.Errorf("an acknowledged observation at %v is missing from a read", at)
				}
			}
			return nil
		})
	}
	// Recomputes: each output replaced by its one owner, then read back.
	for k, name := range outputs {
		dp := ids[name]
		run(uint64(20+k), func(rng *rand.Rand) error {
			from := start.Add(time.Duration(rng.Int64N(int64(end.Sub(start))))).Truncate(time.Minute)
			to := from.Add(time.Duration(1 + rng.Int64N(int64(5*24*time.Hour)))).Truncate(time.Minute).Add(time.Minute)
			var pts []store.Point
			for at := from; at.Before(to); at = at.Add(time.Duration(1+rng.IntN(600)) * time.Minute) {
				pts = append(pts, store.Point{Time: at, Value: rng.Float64()})
			}
			if err := st.ReplaceOutputs(ctx, project, name, from, to, pts); err != nil {
				return fmt.Errorf("replace %s: %w", name, err)
			}
			m.replace(dp, from, to, pts)
			got, err := st.ReadObservations(ctx, dp, store.ReadQuery{})
			if err != nil {
				return err
			}
			if diff := m.equal(dp, got); diff != "" {
				return fmt.Errorf("%s after replacing [%v, %v): %s", name, from, to, diff)
			}
			return nil
		})
	}
	// Deletes: the purged virtual datapoint, then the other project, at
	// times the passes do not know.
	wg.Add(1)
	go func() {
		defer wg.Done()
		time.Sleep(30 * time.Millisecond)
		if _, err := st.DeleteVDP(ctx, project, "gone", "purged", true); err != nil {
			errs <- fmt.Errorf("purge a virtual datapoint: %w", err)
		}
		time.Sleep(70 * time.Millisecond)
		if _, err := st.DeleteProject(ctx, other.Project.ID); err != nil {
			errs <- fmt.Errorf("delete a project: %w", err)
		}
	}()
	// The sealer: passes, some cut off mid-way as a crash would, and a
	// week unsealed now and then.
	rng := rand.New(rand.NewPCG(1, 2))
	for i := 0; i < 12; i++ {
		passCtx, cancel := context.WithCancel(ctx)
		if i%3 == 1 {
			time.AfterFunc(time.Duration(rng.IntN(30))*time.Millisecond, cancel)
		}
		if _, err := s.Pass(passCtx); err != nil && passCtx.Err() == nil {
			t.Fatal(err)
		}
		cancel()
		if i%4 == 3 {
			if _, err := st.UnsealWeek(ctx, start.AddDate(0, 0, 7)); err != nil {
				t.Fatal(err)
			}
		}
	}
	stop()
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	if _, err := s.Pass(ctx); err != nil {
		t.Fatal(err)
	}
	figures, err := st.StorageFigures(ctx, true)
	if err != nil {
		t.Fatal(err)
	}
	var inModel, openWeek int64
	for _, values := range m.values {
		for at := range values {
			inModel++
			if !at.Before(end) {
				openWeek++
			}
		}
	}
	if figures.Head.Observations != openWeek || figures.Head.Observations+figures.Sealed.Observations != inModel {
		t.Fatalf("after the last pass: %+v; the model holds %d observations, %d of them in the open week", figures, inModel, openWeek)
	}
	for dp := range m.values {
		pts, err := st.ReadObservations(ctx, dp, store.ReadQuery{})
		if err != nil {
			t.Fatal(err)
		}
		if diff := m.equal(dp, pts); diff != "" {
			t.Errorf("datapoint %d: %s", dp, diff)
		}
	}
	for _, dp := range deleted {
		if pts, err := st.ReadObservations(ctx, dp, store.ReadQuery{}); err != nil || len(pts) != 0 {
			t.Errorf("deleted datapoint %d still holds %d points (%v)", dp, len(pts), err)
		}
	}
}
