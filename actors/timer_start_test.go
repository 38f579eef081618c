package actors

import (
	"context"
	"io"
	"log/slog"
	"testing"
	"time"
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
// start's cursor is the first boundary after the start's clock reading,
// and a recompute from there outputs at it, so the live run must too
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
	offset := time.Until(boundary.Add(-500 * time.Millisecond))
	eng, err := New(EngineConfig{Sink: e.batcher, Router: e.router,
		History: slowHistory{StoreHistory{Store: e.store}, time.Second},
		Log:     slog.New(slog.NewTextHandler(io.Discard, nil)), Now: func() time.Time { return time.Now().Add(offset) }})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { eng.Shutdown(context.Background()) })
	cursor, err := eng.Start(ctx, def)
	if err != nil {
		t.Fatal(err)
	}
	if !cursor.Equal(boundary) {
		t.Fatalf("cursor %s, want the boundary %s", cursor, boundary)
	}
	got := e.outputs("out", 1)
	if len(got) != 1 || !got[0].Time.Equal(boundary) || got[0].Value != 20 {
		t.Fatalf("outputs %v, want one of 20 (mean of 1 and 3, times 10) at %s", got, boundary)
	}
}
