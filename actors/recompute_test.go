package actors

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/openbdp/bdp/clock"
	"github.com/openbdp/bdp/pipeline"
	"github.com/openbdp/bdp/pipeline/formula"
)

// The recompute is checked against the live engine itself: a virtual
// datapoint runs live over a few hundred observations, then the same
// period is recomputed from the store, and both outputs must be identical
// to the nanosecond and the last bit.

// event is one source observation of a test run.
type event struct {
	dp string
	p  Point
}

// events generates n observations of the sources, strictly increasing in
// time (no two sources share an instant: live order at equal times is
// arrival order), on whole microseconds as the store keeps them. Every
// seventh lands exactly on a minute boundary, where the ordering rule
// (observations at b before the tick at b) matters.
func events(seed uint64, n int, sources ...string) []event {
	rng := rand.New(rand.NewPCG(seed, 1))
	out := make([]event, 0, n)
	t := t0
	for i := 0; i < n; i++ {
		t = t.Add(time.Duration(1+rng.IntN(50))*time.Second + time.Duration(rng.IntN(1_000_000))*time.Microsecond)
		if i%7 == 3 {
			t = t.Truncate(time.Minute).Add(time.Minute)
		}
		out = append(out, event{sources[rng.IntN(len(sources))], Point{t, float64(rng.IntN(2000))/8 - 50}})
	}
	return out
}

// definition builds a stored-form definition from a client config body.
func (e *env) definition(out, typ, body string) Definition {
	e.t.Helper()
	cfg, err := ParseConfig(typ, []byte(body))
	if err != nil {
		e.t.Fatal(err)
	}
	raw, err := json.Marshal(cfg)
	if err != nil {
		e.t.Fatal(err)
	}
	def, err := buildDefinition(formula.NewCache(), e.project, out, typ, raw)
	if err != nil {
		e.t.Fatal(err)
	}
	return def
}

// arrived tells when the router has handed an observation of a source to
// its subscribers: a subscriber added after the actor's is told after the
// actor's mailbox got it.
type arrived chan int

func (a arrived) Deliver(obs []pipeline.Observation) { a <- len(obs) }

// feedLive writes each event alone, in time order, and waits until it
// reached the actor, so the actor sees the events in time order. tickAt,
// if set, is called for every minute boundary in (last event, this event]
// before the event is written, like a timer firing on time.
func (e *env) feedLive(evs []event, tickAt func(b time.Time)) time.Time {
	e.t.Helper()
	ch := arrived(make(chan int, 1))
	seen := map[string]bool{}
	for _, ev := range evs {
		if !seen[ev.dp] {
			seen[ev.dp] = true
			e.t.Cleanup(e.router.Subscribe(e.project, ev.dp, ch))
		}
	}
	last := evs[0].p.Time.Add(-time.Minute)
	for _, ev := range evs {
		if tickAt != nil {
			// Boundaries strictly before the event; one at the event's
			// time fires after it, with the next event.
			for b := last.Truncate(time.Minute).Add(time.Minute); b.Before(ev.p.Time); b = b.Add(time.Minute) {
				tickAt(b)
			}
		}
		err := e.batcher.Write(context.Background(), pipeline.SourceHTTP, []pipeline.Observation{
			{ProjectID: e.project, DataPointID: ev.dp, Time: ev.p.Time, Value: ev.p.Value}})
		if err != nil {
			e.t.Fatal(err)
		}
		select {
		case <-ch:
		case <-time.After(5 * time.Second):
			e.t.Fatal("the observation was not routed")
		}
		last = ev.p.Time.Add(-time.Nanosecond)
	}
	return last
}

// stored polls the outputs of dp in [start, end) until there are n or a
// few seconds passed.
func (e *env) stored(dp string, start, end time.Time, n int) []Point {
	e.t.Helper()
	var pts []Point
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		var err error
		if pts, err = (StoreHistory{Store: e.store}).Recent(context.Background(), e.project, dp, 0, start, end); err != nil {
			e.t.Fatal(err)
		}
		if len(pts) >= n || time.Now().After(deadline) {
			return pts
		}
	}
}

func sameOutputs(t *testing.T, what string, live, rec []Point) {
	t.Helper()
	if len(live) != len(rec) {
		t.Fatalf("%s: live wrote %d outputs, the recompute %d", what, len(live), len(rec))
	}
	for i := range live {
		if !live[i].Time.Equal(rec[i].Time) || live[i].Value != rec[i].Value {
			t.Fatalf("%s: output %d: live %v = %v, recompute %v = %v", what, i,
				live[i].Time, live[i].Value, rec[i].Time, rec[i].Value)
		}
	}
}

// smallPages answers at most 17 observations a page, so a recompute
// crosses many page boundaries.
type smallPages struct{ StoreHistory }

func (s smallPages) Page(ctx context.Context, projectID int64, dp string, from, to time.Time, limit int) ([]Point, error) {
	return s.StoreHistory.Page(ctx, projectID, dp, from, to, min(limit, 17))
}

func TestRecomputeEqualsLiveEveryValue(t *testing.T) {
	e := newEnv(t)
	eng := e.engine(nil)
	ctx := context.Background()
	def := e.definition("f", TypeFormula, `{"pins": {
		"P1": {"dataPointID": "a", "data_range": {"count": 3}, "aggregate": "mean"},
		"P2": {"dataPointID": "b", "data_range": {"time": "5m"}, "aggregate": "max"}},
		"parameters": {"formula": "d = P1 - P2; d x 1.5 + P1 / 7;"}}`)
	// first over a time window: wrong as soon as the warm-up misses one
	// observation the window would still hold.
	def2 := e.definition("f2", TypeFormula, `{"pins": {
		"P1": {"dataPointID": "a", "data_range": {"time": "2m"}, "aggregate": "first"},
		"P2": {"dataPointID": "b"}}, "parameters": {"formula": "P1 - P2;"}}`)
	for _, d := range []Definition{def, def2} {
		if _, err := eng.Start(ctx, d); err != nil {
			t.Fatal(err)
		}
	}
	evs := events(1, 320, "a", "b")
	e.feedLive(evs, nil)
	// A period starting and ending inside the data: the windows at start
	// come from the warm-up, not from an empty start.
	start, end := evs[40].p.Time.Add(-time.Second), evs[300].p.Time
	var calls int
	rec, err := Recompute(ctx, def, StoreHistory{Store: e.store}, start, end, func(done, total int) {
		if calls++; done > total {
			t.Errorf("progress %d of %d", done, total)
		}
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(rec) < 200 || calls < 10 {
		t.Fatalf("%d outputs, %d progress calls: too few to mean anything", len(rec), calls)
	}
	sameOutputs(t, "store pages", e.stored("f", start, end, len(rec)), rec)
	small, err := Recompute(ctx, def, smallPages{StoreHistory{Store: e.store}}, start, end, nil)
	if err != nil {
		t.Fatal(err)
	}
	sameOutputs(t, "small pages", rec, small)

	// Replacing the stored period with the recompute changes nothing.
	res, err := RecomputeStored(ctx, e.store, def, start, end, nil)
	if err != nil || res.Outputs != len(rec) || res.CalcErrors != 0 {
		t.Fatalf("RecomputeStored: %+v, %v", res, err)
	}
	sameOutputs(t, "after replace", e.stored("f", start, end, res.Outputs), rec)

	rec2, err := Recompute(ctx, def2, StoreHistory{Store: e.store}, start, end, nil)
	if err != nil {
		t.Fatal(err)
	}
	sameOutputs(t, "time window, first", e.stored("f2", start, end, len(rec2)), rec2)
}

// Timed triggers: the live actor's timer is replaced by tick messages sent
// on time (each after the observations up to its boundary reached the
// mailbox); the engine's clock is set far in the past so its own timers
// never fire a boundary of the test's period.
func TestRecomputeEqualsLiveTimed(t *testing.T) {
	e := newEnv(t)
	past := time.Date(2000, 1, 1, 0, 0, 30, 0, time.UTC)
	eng, err := New(EngineConfig{Sink: e.batcher, Router: e.router, History: StoreHistory{Store: e.store},
		Log: slog.New(slog.NewTextHandler(io.Discard, nil)), Clock: clock.Func(func() time.Time { return past })})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { eng.Shutdown(context.Background()) })
	ctx := context.Background()
	def := e.definition("g", TypeFormula, `{"pins": {
		"P1": {"dataPointID": "c", "data_range": {"time": "3m"}, "aggregate": "timeweighted_mean", "trigger": "every_minute"},
		"P2": {"dataPointID": "d", "data_range": {"count": 2}, "aggregate": "sum"},
		"P3": {"dataPointID": "c", "data_range": {"count": 5}, "aggregate": "max", "trigger": "every_hour"}},
		"parameters": {"formula": "P1 + P2 x 0.5 - P3 / 3;"}}`)
	if _, err := eng.Start(ctx, def); err != nil {
		t.Fatal(err)
	}
	eng.mu.Lock()
	pid := eng.running[def.key()].pid
	eng.mu.Unlock()
	evs := events(2, 600, "c", "d")
	last := e.feedLive(evs, func(b time.Time) { eng.system.Root.Send(pid, &tick{at: b}) })
	for b := last.Truncate(time.Minute).Add(time.Minute); b.Before(last.Add(10 * time.Minute)); b = b.Add(time.Minute) {
		eng.system.Root.Send(pid, &tick{at: b})
	}
	// start between boundaries, past an hour boundary: the replay starts
	// at that hour, so P3 holds the value it emitted there.
	start := evs[0].p.Time.Add(97*time.Minute + 30*time.Second)
	end := evs[len(evs)-1].p.Time.Add(-15 * time.Minute)
	if end.Sub(start) < 2*time.Hour {
		t.Fatalf("period %s to %s too short for two hour boundaries", start, end)
	}
	rec, err := Recompute(ctx, def, StoreHistory{Store: e.store}, start, end, nil)
	if err != nil {
		t.Fatal(err)
	}
	ticks := 0
	for _, p := range rec {
		if p.Time.Truncate(time.Minute).Equal(p.Time) {
			ticks++
		}
	}
	if len(rec) < 200 || ticks < 100 {
		t.Fatalf("%d outputs, %d on boundaries: too few to mean anything", len(rec), ticks)
	}
	sameOutputs(t, "timed", e.stored("g", start, end, len(rec)), rec)
	small, err := Recompute(ctx, def, smallPages{StoreHistory{Store: e.store}}, start, end, nil)
	if err != nil {
		t.Fatal(err)
	}
	sameOutputs(t, "timed, small pages", rec, small)
}

func TestRecomputeStopsWhenCancelled(t *testing.T) {
	e := newEnv(t)
	def := e.definition("h", TypeFormula, `{"pins": {"P1": {"dataPointID": "a", "trigger": "every_minute"}},
		"parameters": {"formula": "P1;"}}`)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := Recompute(ctx, def, StoreHistory{Store: e.store}, t0, t0.AddDate(1, 0, 0), nil); err == nil {
		t.Fatal("a cancelled recompute must fail")
	}
	if _, err := Recompute(context.Background(), def, StoreHistory{Store: e.store}, t0, t0, nil); err == nil {
		t.Fatal("an empty period must be refused")
	}
}

// One delivery of several observations of a source that feeds two pins
// (an upload of many rounds at once) calculates what the recompute does:
// observation by observation, each to both pins.
func TestOneDeliveryToTwoPinsEqualsRecompute(t *testing.T) {
	e := newEnv(t)
	eng := e.engine(nil)
	ctx := context.Background()
	def := e.definition("two", TypeFormula, `{"pins": {
		"P1": {"dataPointID": "a", "data_range": {"count": 3}, "aggregate": "mean"},
		"P2": {"dataPointID": "a"}}, "parameters": {"formula": "P1 - P2;"}}`)
	if _, err := eng.Start(ctx, def); err != nil {
		t.Fatal(err)
	}
	evs := events(5, 40, "a")
	batch := make([]pipeline.Observation, len(evs))
	for i, ev := range evs {
		batch[i] = pipeline.Observation{ProjectID: e.project, DataPointID: ev.dp, Time: ev.p.Time, Value: ev.p.Value}
	}
	if err := e.batcher.Write(ctx, pipeline.SourceHTTP, batch); err != nil {
		t.Fatal(err)
	}
	start, end := evs[0].p.Time, evs[len(evs)-1].p.Time.Add(time.Microsecond)
	rec, err := Recompute(ctx, def, StoreHistory{Store: e.store}, start, end, nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(rec) != len(evs) {
		t.Fatalf("the recompute has %d outputs of %d observations", len(rec), len(evs))
	}
	sameOutputs(t, "one delivery", e.stored("two", start, end, len(rec)), rec)
}
