package actors

import (
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"math"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/asynkron/protoactor-go/actor"

	"github.com/openbdp/bdp/clock"
	"github.com/openbdp/bdp/pipeline"
	"github.com/openbdp/bdp/store"
)

// counted counts the observations the router hands on.
type counted struct{ n *atomic.Int64 }

func (c counted) Deliver(obs []pipeline.Observation) { c.n.Add(int64(len(obs))) }

// feed stores events one write at a time, in time order, as a field
// gateway would send them, each routed before the next is written. With
// timed, the minute boundaries after prev and before each event are sent
// to the running actor of def first, as its timer would fire them on time
// (the engines' clocks are set so that no real timer fires within the
// test).
func (e *env) feed(eng *Engine, def Definition, prev time.Time, evs []event, timed bool) {
	e.t.Helper()
	routed := &atomic.Int64{}
	for _, dp := range []string{"a", "b"} {
		unsub := e.router.Subscribe(e.project, dp, counted{routed})
		defer unsub()
	}
	var pid *actor.PID
	if eng != nil {
		eng.mu.Lock()
		pid = eng.running[def.key()].pid
		eng.mu.Unlock()
	}
	for i, ev := range evs {
		if timed && pid != nil {
			for b := prev.Truncate(time.Minute).Add(time.Minute); b.Before(ev.p.Time); b = b.Add(time.Minute) {
				eng.system.Root.Send(pid, &tick{at: b})
			}
		}
		prev = ev.p.Time.Add(-time.Nanosecond) // a boundary at the event's time fires after it
		err := e.batcher.Write(context.Background(), pipeline.SourceHTTP, []pipeline.Observation{
			{ProjectID: e.project, DataPointID: ev.dp, Time: ev.p.Time, Value: ev.p.Value}})
		if err != nil {
			e.t.Fatal(err)
		}
		for deadline := time.Now().Add(5 * time.Second); routed.Load() < int64(i+1); time.Sleep(time.Millisecond) {
			if time.Now().After(deadline) {
				e.t.Fatal("the observation was not routed")
			}
		}
	}
}

func (e *env) engineAt(now func() time.Time) *Engine {
	eng, err := New(EngineConfig{Sink: e.batcher, Router: e.router, History: e.history(),
		Log: slog.New(slog.NewTextHandler(io.Discard, nil)), Clock: clock.Func(now)})
	if err != nil {
		e.t.Fatal(err)
	}
	e.t.Cleanup(func() { eng.Shutdown(context.Background()) })
	return eng
}

// A crash leaves source observations stored but not calculated: the
// actor stops abruptly in the middle of a feed, more is stored while
// nothing runs, and then the datapoint starts again with CatchUp. Its
// outputs must then be exactly a recompute's over the whole period: none
// missing, none twice, the values of an uninterrupted run. Two crashes
// in a row, for every calculation type and for a timed trigger, whose
// boundaries of the downtime fire in the catch-up.
func TestCatchUpComputesWhatACrashLeftOut(t *testing.T) {
	cases := []struct {
		name, typ, config string
		sources           []string
		// enough outputs for the comparison to mean anything: before the
		// first crash, and in all (0: 20 and 150)
		minBefore, minAll int
	}{
		{"formula", TypeFormula, `{"pins": {
			"P1": {"dataPointID": "a", "data_range": {"count": 3}, "aggregate": "mean"},
			"P2": {"dataPointID": "b", "data_range": {"time": "5m"}, "aggregate": "median"}},
			"parameters": {"formula": "P1 - P2 / 3;"}}`, []string{"a", "b"}, 0, 0},
		{"gradient", TypeGradient, `{"pins": {"input": {"dataPointID": "a", "data_range": {"count": 4}, "aggregate": "median"}}}`,
			[]string{"a"}, 0, 0},
		{"humidity", TypeAbsoluteHumidity, `{"pins": {
			"relative_humidity": {"dataPointID": "a", "aggregate": "last"},
			"temperature": {"dataPointID": "b", "data_range": {"time": "2m"}, "aggregate": "mean"}},
			"parameters": {"relative_humidity_unit": "percent"}}`, []string{"a", "b"}, 0, 0},
		{"every_minute", TypeFormula, `{"pins": {
			"P1": {"dataPointID": "a", "data_range": {"count": 5}, "aggregate": "mean", "trigger": "every_minute"},
			"P2": {"dataPointID": "b"}},
			"parameters": {"formula": "P1 + P2;"}}`, []string{"a", "b"}, 0, 0},
		// A timed pin over a short window is empty at most boundaries and
		// holds what it emitted at an earlier one: the catch-up must start
		// with that value, not with nothing (issue 18: the 100,000 mix
		// missed every output of such datapoints after its restart).
		{"held by a timed pin", TypeFormula, `{"pins": {
			"P1": {"dataPointID": "a", "data_range": {"count": 3}, "aggregate": "sum"},
			"P2": {"dataPointID": "b", "data_range": {"time": "10s"}, "aggregate": "last", "trigger": "every_minute"}},
			"parameters": {"formula": "P1 + P2;"}}`, []string{"a", "b"}, 0, 100},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			e := newEnv(t)
			ctx := context.Background()
			def := e.definition("out", c.typ, c.config)
			evs := events(3, 240, c.sources...)
			for i := range evs {
				evs[i].p.Value = 20 + math.Mod(math.Abs(evs[i].p.Value), 60) // a relative humidity, a temperature
			}
			timed := strings.Contains(c.config, "every_minute")
			// The engines' clock is a minute boundary at or before the
			// newest event stored: a catch-up fires the boundaries up to it
			// in event-time order, the test sends the later ones, and no
			// real timer fires within the test (the next boundary is a
			// minute away).
			var now atomic.Int64
			clockAt := func(t time.Time) { now.Store(t.Truncate(time.Minute).UnixNano()) }
			clock := func() time.Time { return time.Unix(0, now.Load()).UTC() }
			clockAt(t0)
			phase := func(eng *Engine, from, to int) {
				prev := t0
				if from > 0 {
					prev = evs[from-1].p.Time.Add(-time.Nanosecond)
				}
				e.feed(eng, def, prev, evs[from:to], timed)
			}

			eng := e.engineAt(clock)
			cursor, err := eng.Start(ctx, def)
			if err != nil {
				t.Fatal(err)
			}
			phase(eng, 0, 60)
			minBefore, minAll := cmp.Or(c.minBefore, 20), cmp.Or(c.minAll, 150)
			if n := len(e.stored("out", t0, endOfTime, minBefore)); n < minBefore {
				t.Fatalf("%d outputs before the first crash", n)
			}
			eng.Shutdown(ctx)   // mid-feed: what waits in the mailbox is lost
			phase(nil, 60, 100) // stored while nothing runs

			clockAt(evs[99].p.Time)
			eng = e.engineAt(clock)
			if err := eng.CatchUp(ctx, def, cursor); err != nil {
				t.Fatal(err)
			}
			phase(eng, 100, 170)
			eng.Shutdown(ctx)
			phase(nil, 170, 200)

			clockAt(evs[199].p.Time)
			eng = e.engineAt(clock)
			if err := eng.CatchUp(ctx, def, cursor); err != nil {
				t.Fatal(err)
			}
			phase(eng, 200, len(evs))
			end := evs[len(evs)-1].p.Time.Add(time.Nanosecond)

			rec, err := Recompute(ctx, def, StoreHistory{Store: e.store}, t0, end, nil)
			if err != nil {
				t.Fatal(err)
			}
			if len(rec) < minAll {
				t.Fatalf("%d outputs: too few to mean anything", len(rec))
			}
			sameOutputs(t, c.name, e.stored("out", t0, end, len(rec)), rec)
		})
	}
}

// Resume marks every running virtual datapoint Starting at once and starts
// them in the background, at most concurrency at a time: the caller is not
// held while windows refill, and each turns Running once its own refill is
// done. One stopped while it starts stays Stopped, and its actor ends.
func TestResumeStartsInTheBackgroundWithBoundedConcurrency(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	const vdps, concurrency = 7, 2
	var reading, most atomic.Int32
	gate := make(chan struct{})
	history := &countingGate{SourceReader: StoreHistory{Store: e.store}, gate: gate, reading: &reading, most: &most}
	eng, err := New(EngineConfig{Sink: e.batcher, Router: e.router, History: history, Log: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { eng.Shutdown(context.Background()) })
	for i := range vdps {
		cfg, err := ParseConfig(TypeFormula, []byte(`{"pins": {"P1": {"dataPointID": "a", "data_range": {"count": 3}, "aggregate": "median"}}, "parameters": {"formula": "P1;"}}`))
		if err != nil {
			t.Fatal(err)
		}
		raw, err := json.Marshal(cfg)
		if err != nil {
			t.Fatal(err)
		}
		_, err = e.store.CreateVDP(ctx, store.VDP{ProjectID: e.project, DataPointID: fmt.Sprintf("out%d", i), Type: TypeFormula, Config: raw},
			store.StatusChange{Code: store.StatusCreated}, store.StatusChange{Code: store.StatusRunning})
		if err != nil {
			t.Fatal(err)
		}
	}
	done := make(chan error, 1)
	go func() { done <- Resume(ctx, eng, e.store, slog.New(slog.NewTextHandler(io.Discard, nil)), concurrency) }()
	waitStatus := func(code, want int) {
		t.Helper()
		for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(10 * time.Millisecond) {
			_, n, err := e.store.ListVDPs(ctx, e.project, "", &code, 1, vdps)
			if err != nil {
				t.Fatal(err)
			}
			if n == want {
				return
			}
			if time.Now().After(deadline) {
				t.Fatalf("%d of %d virtual datapoints are %s", n, vdps, store.StatusText(code))
			}
		}
	}
	waitStatus(store.StatusStarting, vdps) // all of them, while no refill can finish
	time.Sleep(100 * time.Millisecond)
	if n := reading.Load(); n != concurrency {
		t.Fatalf("%d refills wait for history, want %d at once", n, concurrency)
	}
	// out0's refill is under way: a stop now comes while it starts.
	if _, err := e.store.ChangeVDPStatus(ctx, e.project, "out0", store.StatusChange{Code: store.StatusStopped}); err != nil {
		t.Fatal(err)
	}
	close(gate)
	waitStatus(store.StatusRunning, vdps-1)
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if v, err := e.store.VDP(ctx, e.project, "out0"); err != nil || v.StatusCode != store.StatusStopped {
		t.Fatalf("out0 stopped while it started: %+v, %v", v, err)
	}
	if eng.Running(Key{e.project, "out0"}) {
		t.Fatal("out0 stopped while it started, but its actor runs")
	}
	if m := most.Load(); m > concurrency {
		t.Fatalf("%d refills ran at once, the bound is %d", m, concurrency)
	}
}

// countingGate holds history reads until its gate opens and counts the
// starts reading at once.
type countingGate struct {
	SourceReader
	gate          chan struct{}
	reading, most *atomic.Int32
	mu            sync.Mutex
}

func (g *countingGate) Recent(ctx context.Context, projectID int64, dataPointID string, count int, since, end time.Time) ([]Point, error) {
	n := g.reading.Add(1)
	defer g.reading.Add(-1)
	g.mu.Lock()
	if n > g.most.Load() {
		g.most.Store(n)
	}
	g.mu.Unlock()
	select {
	case <-g.gate:
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	return g.SourceReader.Recent(ctx, projectID, dataPointID, count, since, end)
}

// A crash before the datapoint's first output is stored leaves nothing to
// catch up from but the cursor its run recorded (Engine.Start): the
// source observations stored between the run and the crash must still be
// calculated, and those stored before the run must not be. Each case runs
// a second copy of the datapoint without a crash ("clean", on its own
// engine, fed the same data live) and compares: the same outputs, none
// missing, none twice. With a timed trigger, the boundaries due while
// nothing ran fire in the catch-up.
func TestCatchUpWithoutAStoredOutputStartsAtTheRun(t *testing.T) {
	const mean3 = `{"pins": {"P1": {"dataPointID": "a", "data_range": {"count": 3}, "aggregate": "mean"}}, "parameters": {"formula": "P1;"}}`
	cases := []struct {
		name, config string
		history      int // events stored before the run
		timed        bool
	}{
		{"count-3 mean, no history", mean3, 0, false},
		{"count-3 mean after history", mean3, 40, false},
		{"every_minute after history", `{"pins": {
			"P1": {"dataPointID": "a", "data_range": {"count": 5}, "aggregate": "mean", "trigger": "every_minute"},
			"P2": {"dataPointID": "b"}},
			"parameters": {"formula": "P1 + P2;"}}`, 40, true},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			e := newEnv(t)
			ctx := context.Background()
			sources := []string{"a"}
			if c.timed {
				sources = append(sources, "b")
			}
			evs := events(5, 160, sources...)
			e.feed(nil, Definition{}, t0, evs[:c.history], false)
			// The run is at a minute boundary after the history, and what
			// the crash leaves uncalculated comes after it: no real timer
			// fires within the test (the engines' clocks stand still).
			run := t0
			if c.history > 0 {
				run = evs[c.history-1].p.Time.Truncate(time.Minute).Add(time.Minute)
			}
			after := c.history
			for evs[after].p.Time.Before(run.Add(time.Second)) {
				after++
			}
			var now atomic.Int64
			now.Store(run.UnixNano())
			clock := func() time.Time { return time.Unix(0, now.Load()).UTC() }

			def, cleanDef := e.definition("out", TypeFormula, c.config), e.definition("clean", TypeFormula, c.config)
			clean := e.engineAt(clock)
			if _, err := clean.Start(ctx, cleanDef); err != nil {
				t.Fatal(err)
			}
			eng := e.engineAt(clock)
			cursor, err := eng.Start(ctx, def)
			if err != nil {
				t.Fatal(err)
			}
			eng.Shutdown(ctx) // the crash: nothing calculated, no output stored
			e.feed(clean, cleanDef, run, evs[after:], c.timed)
			clean.Shutdown(ctx) // once its outputs are stored

			last := evs[len(evs)-1].p.Time
			now.Store(last.Truncate(time.Minute).UnixNano())
			eng = e.engineAt(clock)
			if err := eng.CatchUp(ctx, def, cursor); err != nil {
				t.Fatal(err)
			}
			// The clean run's outputs up to the last boundary the test
			// fired; the catch-up fires that boundary too, after the clean
			// run's last event.
			end := last.Add(time.Nanosecond)
			if c.timed {
				end = last.Truncate(time.Minute)
			}
			want := e.stored("clean", t0, end, 0)
			if len(want) < 50 {
				t.Fatalf("the clean run wrote %d outputs: too few to mean anything", len(want))
			}
			if !want[0].Time.After(run) {
				t.Fatalf("the clean run's first output at %v is not after its run at %v", want[0].Time, run)
			}
			got := e.stored("out", t0, end, len(want))
			sameOutputs(t, c.name+" (live: the catch-up; recompute: the clean run)", got, want)
		})
	}
}

// A datapoint stopped and run again calculates nothing of what was stored
// while it was stopped; a crash of the new run before its first output
// must not make the catch-up calculate it either, although an output of
// the earlier run is stored: the catch-up starts at the later of the
// newest output and the new run's cursor.
func TestCatchUpIgnoresWhatWasStoredWhileStopped(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	const mean3 = `{"pins": {"P1": {"dataPointID": "a", "data_range": {"count": 3}, "aggregate": "mean"}}, "parameters": {"formula": "P1;"}}`
	def, cleanDef := e.definition("out", TypeFormula, mean3), e.definition("clean", TypeFormula, mean3)
	evs := events(7, 90, "a")
	later := evs[len(evs)-1].p.Time.Add(time.Hour) // the runs see every stored event as history
	clock := func() time.Time { return later }

	eng := e.engineAt(clock)
	if _, err := eng.Start(ctx, def); err != nil {
		t.Fatal(err)
	}
	e.feed(eng, def, t0, evs[:30], false)
	first := e.stored("out", t0, endOfTime, 30)
	eng.Shutdown(ctx)                                // stopped by its user
	e.feed(nil, Definition{}, t0, evs[30:60], false) // stored while stopped

	eng = e.engineAt(clock)
	cursor, err := eng.Start(ctx, def) // run again
	if err != nil {
		t.Fatal(err)
	}
	clean := e.engineAt(clock)
	if _, err := clean.Start(ctx, cleanDef); err != nil {
		t.Fatal(err)
	}
	eng.Shutdown(ctx) // the crash, before the new run's first output
	e.feed(clean, cleanDef, t0, evs[60:], false)
	clean.Shutdown(ctx)

	eng = e.engineAt(clock)
	if err := eng.CatchUp(ctx, def, cursor); err != nil {
		t.Fatal(err)
	}
	want := append(first, e.stored("clean", t0, endOfTime, 0)...)
	if len(want) != 60 {
		t.Fatalf("the runs wrote %d outputs, want 30 and 30", len(want))
	}
	sameOutputs(t, "live: the catch-up; recompute: the runs without the crash", e.stored("out", t0, endOfTime, len(want)), want)
}
