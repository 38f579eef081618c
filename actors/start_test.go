package actors

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"sync"
	"testing"
	"time"
)

// gatedHistory holds every history read until the gate opens, so a test
// can act while an actor is still starting.
type gatedHistory struct {
	SourceReader
	gate chan struct{}
}

// Recent waits for the gate, or gives up with ctx as the store's reads do.
func (g gatedHistory) Recent(ctx context.Context, projectID int64, dataPointID string, count int, since, end time.Time) ([]Point, error) {
	select {
	case <-g.gate:
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	return g.SourceReader.Recent(ctx, projectID, dataPointID, count, since, end)
}

func (e *env) gatedEngine() (*Engine, chan struct{}) {
	gate := make(chan struct{})
	eng, err := New(EngineConfig{Sink: e.batcher, Router: e.router, History: gatedHistory{StoreHistory{Store: e.store}, gate},
		Log: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		e.t.Fatal(err)
	}
	e.t.Cleanup(func() { eng.Shutdown(context.Background()) })
	return eng, gate
}

// Two Starts of one virtual datapoint at once: one runs it, the other is
// refused, and every input gives one output, not two.
func TestConcurrentStartsRunOneActor(t *testing.T) {
	e := newEnv(t)
	eng, gate := e.gatedEngine()
	def := e.def("src", "out")
	errs := make(chan error, 2)
	var wg sync.WaitGroup
	for range 2 {
		wg.Add(1)
		go func() { defer wg.Done(); _, err := eng.Start(context.Background(), def); errs <- err }()
	}
	// The refused one answers at once; the other waits for its history.
	refused := <-errs
	if refused == nil {
		t.Fatal("a second Start while the first was starting succeeded")
	}
	close(gate)
	wg.Wait()
	if err := <-errs; err != nil {
		t.Fatalf("the first Start failed: %v", err)
	}
	e.write("src", 0, 1)
	e.write("src", 1, 2)
	e.outputs("out", 2)
	time.Sleep(100 * time.Millisecond) // time for a second actor's outputs, were there one
	if got := values(e.outputs("out", 2)); len(got) != 2 || got[0] != 1 || got[1] != 3 {
		t.Fatalf("outputs %v, want [1 3]", got)
	}
}

// A Start whose context ends while the actor loads its history leaves
// nothing running, and a later Start of the same datapoint works.
func TestCancelledStartLeavesNothingRunning(t *testing.T) {
	e := newEnv(t)
	eng, gate := e.gatedEngine()
	def := e.def("src", "out")
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	if _, err := eng.Start(ctx, def); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Start = %v, want the context's deadline", err)
	}
	if eng.Running(def.key()) {
		t.Fatal("still registered as running after a cancelled Start")
	}
	close(gate)
	// Had the abandoned actor lived on, it would write 5 for this value
	// before the new run writes anything: the outputs below would not be
	// [12] alone.
	e.write("src", 0, 5)
	if _, err := eng.Start(context.Background(), def); err != nil {
		t.Fatalf("Start after the cancelled one: %v", err)
	}
	e.write("src", 1, 7)
	if got := values(e.outputs("out", 1)); len(got) != 1 || got[0] != 12 {
		t.Fatalf("outputs %v, want [12] (5 from history, 7 live)", got)
	}
}

// storingHistory stores more observations while an actor reads its
// history: after its first read, before its second, as a platform under
// load stores them while actors start.
type storingHistory struct {
	SourceReader
	reads *int
	store func()
}

func (h storingHistory) Recent(ctx context.Context, projectID int64, dataPointID string, count int, since, end time.Time) ([]Point, error) {
	if *h.reads++; *h.reads == 2 {
		h.store()
	}
	return h.SourceReader.Recent(ctx, projectID, dataPointID, count, since, end)
}

// A start reads its sources one after another while observations go on
// being stored. What it reads must be what was stored at one instant for
// every source alike: a source read later must not bring an observation
// that another source's live delivery, earlier in time, then follows.
// Here a (at 3) and b (at 4) are stored between the reads of a and of b;
// the output at 3 must be a's 100 plus b's 10 as of 3, as a recompute
// has it, not plus b's 1000 from 4.
func TestStartReadsItsSourcesAsOfOneInstant(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	e.write("a", 1, 1)
	e.write("b", 2, 10)
	reads := 0
	history := storingHistory{SourceReader: StoreHistory{Store: e.store}, reads: &reads, store: func() {
		e.write("a", 3, 100)
		e.write("b", 4, 1000)
	}}
	eng, err := New(EngineConfig{Sink: e.batcher, Router: e.router, History: history,
		Log: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { eng.Shutdown(context.Background()) })
	def := e.definition("sum", TypeFormula, `{"pins": {
		"P1": {"dataPointID": "a", "data_range": {"count": 1}, "aggregate": "last"},
		"P2": {"dataPointID": "b", "data_range": {"count": 1}, "aggregate": "last"}},
		"parameters": {"formula": "P1 + P2"}}`)
	if _, err := eng.Start(ctx, def); err != nil {
		t.Fatal(err)
	}
	got := e.outputs("sum", 2)
	rec, err := Recompute(ctx, def, StoreHistory{Store: e.store}, t0, t0.Add(time.Hour), nil)
	if err != nil {
		t.Fatal(err)
	}
	same := func(a, b Point) bool { return a.Time.Equal(b.Time) && a.Value == b.Value }
	if len(rec) != 3 || len(got) != 2 || !same(got[0], rec[1]) || !same(got[1], rec[2]) {
		t.Fatalf("live outputs %v, want the recompute's from minute 3 on: %v", got, rec)
	}
}
