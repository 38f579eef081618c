package sealer

import (
	"context"
	"io"
	"log/slog"
	"math/rand/v2"
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

// Sealing while late writes land in the weeks it seals, readers read them,
// passes are cut off mid-transaction (a crash) and a week is unsealed
// meanwhile: no read ever sees a point twice or misses an acknowledged
// one, and at the end every datapoint holds exactly what was
// acknowledged, its last value at each time.
func TestConcurrentLateWritesNeverLoseOrDouble(t *testing.T) {
	st, _ := storetest.Open(t, testPG)
	tenant := storetest.NewTenant(t, st, "seal")
	ctx := context.Background()
	var names []string
	for i := range 12 {
		names = append(names, "dp"+string(rune('a'+i)))
	}
	ids, err := st.EnsureDatapoints(ctx, tenant.Project.ID, names)
	if err != nil {
		t.Fatal(err)
	}
	var dps []int64
	for _, id := range ids {
		dps = append(dps, id)
	}
	start := time.Date(2024, 1, 1, 0, 0, 0, 0, time.UTC) // a Monday
	end := start.AddDate(0, 0, 21)
	m := &model{values: map[int64]map[time.Time]float64{}}
	var rows []store.Row
	for _, dp := range dps {
		for at := start; at.Before(end); at = at.Add(5 * time.Minute) {
			rows = append(rows, store.Row{Datapoint: dp, Time: at, Value: float64(at.Unix()%997) / 10})
		}
	}
	if err := st.WriteObservations(ctx, rows); err != nil {
		t.Fatal(err)
	}
	m.ack(rows)

	s, err := New(st, Config{Grace: time.Hour, Duty: 1, Now: func() time.Time { return end.AddDate(0, 0, 1) }},
		slog.New(slog.NewTextHandler(io.Discard, nil)), prometheus.NewRegistry())
	if err != nil {
		t.Fatal(err)
	}

	runCtx, stop := context.WithCancel(ctx)
	var wg sync.WaitGroup
	errs := make(chan error, 16)
	// Writers: late observations into the sealed weeks, at new times and
	// at times that hold a value.
	for w := range 3 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			rng := rand.New(rand.NewPCG(uint64(w), 9))
			for runCtx.Err() == nil {
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
					errs <- err
					return
				}
				m.ack(batch)
			}
		}()
	}
	// Readers: every acknowledged time once, in order.
	for r := range 2 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			rng := rand.New(rand.NewPCG(uint64(r), 99))
			for runCtx.Err() == nil {
				dp := dps[rng.IntN(len(dps))]
				acked := m.times(dp)
				pts, err := st.ReadObservations(ctx, dp, store.ReadQuery{Start: start, End: end})
				if err != nil {
					errs <- err
					return
				}
				seen := map[time.Time]bool{}
				for i, p := range pts {
					if i > 0 && !p.Time.After(pts[i-1].Time) {
						t.Errorf("read %v after %v: a point twice or out of order", p.Time, pts[i-1].Time)
						return
					}
					seen[p.Time] = true
				}
				for at := range acked {
					if !seen[at] {
						t.Errorf("an acknowledged observation at %v is missing from a read", at)
						return
					}
				}
			}
		}()
	}
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
	if figures.Head.Observations != 0 || figures.Sealed.Observations == 0 {
		t.Fatalf("after the last pass: %+v, want every observation sealed", figures)
	}
	lostOrDoubled := 0
	for _, dp := range dps {
		pts, err := st.ReadObservations(ctx, dp, store.ReadQuery{Start: start, End: end})
		if err != nil {
			t.Fatal(err)
		}
		want := m.values[dp]
		if len(pts) != len(want) {
			lostOrDoubled += abs(len(pts) - len(want))
		}
		for _, p := range pts {
			if v, ok := want[p.Time]; !ok || v != p.Value {
				t.Errorf("datapoint %d at %v: %v, acknowledged %v (%v)", dp, p.Time, p.Value, v, ok)
			}
		}
	}
	if lostOrDoubled != 0 {
		t.Fatalf("%d points lost or doubled", lostOrDoubled)
	}
}

func abs(n int) int {
	if n < 0 {
		return -n
	}
	return n
}
