package actors

import (
	"context"
	"io"
	"log/slog"
	"slices"
	"sync/atomic"
	"testing"
	"time"

	"github.com/openbdp/bdp/clock"
)

// slowHistory takes delay over every read, as a loaded database does.
type slowHistory struct {
	SourceReader
	delay time.Duration
}

func (h slowHistory) Recent(ctx context.Context, projectID int64, dataPointID string, count int, since, end time.Time) ([]Point, error) {
	time.Sleep(h.delay)
	return h.SourceReader.Recent(ctx, projectID, dataPointID, count, since, end)
}

// A boundary that passes while a start reads its history still fires: the
// start's cursor is its clock reading, before the boundary, and a
// recompute from there outputs at it, so the live run must too
// (found by the 100,000 scenario's recompute check, bench/vdp_verify.go,
// when a Resume ran across a minute boundary).
func TestBoundaryPassingDuringStartFires(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	boundary := t0.Add(3 * time.Minute)
	def := e.definition("out", TypeFormula, `{"pins":{"P1":{"dataPointID":"src","data_range":{"count":3},
		"aggregate":"mean","trigger":"every_minute"}},"parameters":{"formula":"P1 x 10"}}`)
	e.writeAt("src", boundary.Add(-2*time.Minute), 1)
	e.writeAt("src", boundary.Add(-time.Minute), 3)

	// The start reads the clock 0.5 s before the boundary and its
	// history for a second.
	eng := e.engineReading(slowHistory{StoreHistory{Store: e.store}, time.Second}, boundary.Add(-500*time.Millisecond))
	cursor, err := eng.Start(ctx, def)
	if err != nil {
		t.Fatal(err)
	}
	if !cursor.Before(boundary) {
		t.Fatalf("cursor %s, want the start's clock reading, before the boundary %s", cursor, boundary)
	}
	got := e.outputs("out", 1)
	if len(got) != 1 || !got[0].Time.Equal(boundary) || got[0].Value != 20 {
		t.Fatalf("outputs %v, want one of 20 (mean of 1 and 3, times 10) at %s", got, boundary)
	}
}

// A timed gradient started between two boundaries outputs at the first
// boundary after its start what a recompute from its cursor outputs
// there: its gradient against the value its window had at the boundary
// before the start, as a recompute warms up from that boundary.
func TestFirstStartPrimesTimedPinsAtTheLastBoundary(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	boundary := t0.Add(3 * time.Minute)
	def := e.definition("grad", TypeGradient, `{"pins":{"input":{"dataPointID":"src","data_range":{"time":"1m"},
		"aggregate":"mean","trigger":"every_minute"}},"parameters":{"factorization":60}}`)
	e.writeAt("src", boundary.Add(-90*time.Second), 1) // in the window of the boundary before the start
	e.writeAt("src", boundary.Add(-30*time.Second), 4) // in the window of the first boundary after it

	// The start reads the clock 20 s before the boundary.
	eng := e.engineReading(StoreHistory{Store: e.store}, boundary.Add(-21*time.Second))
	// The engine's clock: 21 s before the boundary, so the real timer
	// fires it in 21 s; too long for a test, so the tick is sent now, as
	// the clock would, once the start is done.
	cursor, err := eng.Start(ctx, def)
	if err != nil {
		t.Fatal(err)
	}
	eng.mu.Lock()
	pid := eng.running[def.key()].pid
	eng.mu.Unlock()
	eng.system.Root.Send(pid, &tick{at: boundary})
	rec, err := Recompute(ctx, def, StoreHistory{Store: e.store}, cursor, boundary.Add(time.Second), nil)
	if err != nil {
		t.Fatal(err)
	}
	got := e.outputs("grad", len(rec))
	if len(rec) == 0 || len(got) != len(rec) || !got[0].Time.Equal(rec[0].Time) || got[0].Value != rec[0].Value {
		t.Fatalf("live outputs %v, the recompute from the cursor %s: %v", got, cursor, rec)
	}
}

// engineReading is an engine over history whose clock reads at, and
// goes on with the wall clock from there.
func (e *env) engineReading(history SourceReader, at time.Time) *Engine {
	offset := time.Until(at)
	eng, err := New(EngineConfig{Sink: e.batcher, Router: e.router, History: history,
		Log: slog.New(slog.NewTextHandler(io.Discard, nil)), Clock: clock.Func(func() time.Time { return time.Now().Add(offset) })})
	if err != nil {
		e.t.Fatal(err)
	}
	e.t.Cleanup(func() { eng.Shutdown(context.Background()) })
	return eng
}

// A boundary whose tick is late (the clock paces a boundary's ticks, and
// mailboxes queue) fires when an observation stamped after it comes
// first, before that observation is taken: the output at the boundary is
// what a recompute outputs there, not one that already counts the later
// observation (found by the 100,000 scenario's recompute check once the
// ticks were paced).
func TestLateTickFiresBeforeALaterObservation(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	boundary := t0.Add(3 * time.Minute)
	def := e.definition("out", TypeFormula, `{"pins":{
		"P1":{"dataPointID":"a","data_range":{"count":3},"aggregate":"sum","trigger":"every_value"},
		"P2":{"dataPointID":"b","data_range":{"time":"30s"},"aggregate":"last","trigger":"every_minute"}},
		"parameters":{"formula":"P1 + P2"}}`)
	e.writeAt("a", boundary.Add(-50*time.Second), 1)
	e.writeAt("b", boundary.Add(-20*time.Second), 5)

	// The clock reads 10 s before the boundary, so the tick is a real
	// timer 10 s away; then it moves past the boundary, and the tick is
	// late when an observation stamped after the boundary comes.
	var reading atomic.Int64
	reading.Store(boundary.Add(-10 * time.Second).UnixNano())
	eng, err := New(EngineConfig{Sink: e.batcher, Router: e.router, History: StoreHistory{Store: e.store},
		Log: slog.New(slog.NewTextHandler(io.Discard, nil)), Clock: clock.Func(func() time.Time { return time.Unix(0, reading.Load()).UTC() })})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { eng.Shutdown(context.Background()) })
	cursor, err := eng.Start(ctx, def)
	if err != nil {
		t.Fatal(err)
	}
	reading.Store(boundary.Add(2 * time.Second).UnixNano())
	e.writeAt("a", boundary.Add(time.Second), 100)

	rec, err := Recompute(ctx, def, StoreHistory{Store: e.store}, cursor, boundary.Add(2*time.Second), nil)
	if err != nil {
		t.Fatal(err)
	}
	got := e.outputs("out", len(rec))
	same := func(a, b Point) bool { return a.Time.Equal(b.Time) && a.Value == b.Value }
	if len(rec) != 2 || !slices.EqualFunc(got, rec, same) {
		t.Fatalf("live outputs %v, the recompute's %v: want 6 at the boundary (1 + 5), then 106", got, rec)
	}
}
