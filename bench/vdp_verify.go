package bench

import (
	"context"
	"fmt"
	"math"
	"sync"
	"sync/atomic"
	"time"

	"github.com/openbdp/bdp/actors"
	"github.com/openbdp/bdp/store"
)

// verifyWorkers is how many recomputes run at once: each is mostly
// queries, and the store's pool serves several.
const verifyWorkers = 8

// mixCheck is the outcome of comparing every datapoint's stored outputs
// with a recompute of it (issue 18 item 3, "every output equal to a
// recompute").
type mixCheck struct {
	compared  int64   // outputs of the recomputes
	different int64   // outputs that differ in value, or are missing or extra in the store
	byShape   []int64 // compared, per shape of mixTable
	diffShape []int64 // different, per shape of mixTable
	first     string
	mu        sync.Mutex
}

// verifyMix recomputes every datapoint of the mix over [cursors[i], end)
// with actors.Recompute and compares it with what the live engines stored
// for that period: the same times, bit-equal values.
//
// The period: cursors[i] is where the datapoint's first run began to
// calculate (what Engine.Start returned): earlier outputs are none of its
// own, and a recompute from there calculates what the live run does
// (actors.liveFrom). end is when the feed stopped, after the last
// observation was stored: every observation of the period is stored and
// routed, and the scenario has waited a second past end and until the
// outputs settled before it stopped the engine, so every boundary before
// end has fired. A boundary at or after end may have fired or not when
// the engine stopped; its output is at its own time, at or after end, so
// it is outside the period on both sides.
func verifyMix(ctx context.Context, st *store.Store, engine *actors.Engine, project int64, l mixLayout,
	cursors []time.Time, end time.Time, progress func(string, ...any)) (*mixCheck, error) {
	c := mixCheck{byShape: make([]int64, len(mixTable)), diffShape: make([]int64, len(mixTable))}
	src := actors.StoreHistory{Store: st}
	var done atomic.Int64
	defer reportEvery(progress, "mix: compared", l.vdps, &done)()
	err := forEach(ctx, l.vdps, verifyWorkers, func(ctx context.Context, i int) error {
		defer done.Add(1)
		if !end.After(cursors[i]) {
			return nil // started after the feed stopped: nothing to compare
		}
		typ, body := l.config(i)
		raw, err := storedConfig(typ, body)
		if err != nil {
			return err
		}
		def, err := engine.Definition(project, vdpName(i), typ, raw)
		if err != nil {
			return err
		}
		want, err := actors.Recompute(ctx, def, src, cursors[i], end, nil)
		if err != nil {
			return fmt.Errorf("recompute %s: %w", vdpName(i), err)
		}
		got, err := storedOutputs(ctx, src, project, vdpName(i), cursors[i], end)
		if err != nil {
			return err
		}
		atomic.AddInt64(&c.compared, int64(len(want)))
		atomic.AddInt64(&c.byShape[i%len(mixTable)], int64(len(want)))
		if n, what := differ(want, got); n > 0 {
			atomic.AddInt64(&c.different, int64(n))
			atomic.AddInt64(&c.diffShape[i%len(mixTable)], int64(n))
			c.mu.Lock()
			if c.first == "" {
				c.first = fmt.Sprintf("%s (%s, shape %d, cursor %s): %d of %d differ, the first %s", vdpName(i), typ, i%len(mixTable),
					cursors[i].Format(time.RFC3339Nano), n, max(len(want), len(got)), what)
			}
			c.mu.Unlock()
		}
		return nil
	})
	return &c, err
}

// storedOutputs reads the outputs of a datapoint in [from, to), in pages.
func storedOutputs(ctx context.Context, src actors.StoreHistory, project int64, id string, from, to time.Time) ([]actors.Point, error) {
	var all []actors.Point
	for {
		page, err := src.Page(ctx, project, id, from, to, actors.RecomputePage)
		if err != nil {
			return nil, fmt.Errorf("outputs of %s: %w", id, err)
		}
		if len(page) == 0 {
			return all, nil
		}
		all = append(all, page...)
		from = page[len(page)-1].Time.Add(time.Microsecond)
	}
}

// differ counts the outputs of want and got, both ascending, that are not
// in both at the same time with bit-equal values, and describes the first.
func differ(want, got []actors.Point) (n int, first string) {
	note := func(format string, args ...any) {
		if n++; n == 1 {
			first = fmt.Sprintf(format, args...)
		}
	}
	i, j := 0, 0
	for i < len(want) || j < len(got) {
		switch {
		case j == len(got) || (i < len(want) && want[i].Time.Before(got[j].Time)):
			note("missing at %s (recompute %v)", want[i].Time.Format(time.RFC3339Nano), want[i].Value)
			i++
		case i == len(want) || got[j].Time.Before(want[i].Time):
			note("extra at %s (stored %v)", got[j].Time.Format(time.RFC3339Nano), got[j].Value)
			j++
		default:
			if math.Float64bits(want[i].Value) != math.Float64bits(got[j].Value) {
				note("at %s stored %v, recompute %v", got[j].Time.Format(time.RFC3339Nano), got[j].Value, want[i].Value)
			}
			i, j = i+1, j+1
		}
	}
	return n, first
}
