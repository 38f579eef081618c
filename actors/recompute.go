package actors

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/openbdp/bdp/fault"
	"github.com/openbdp/bdp/store"
)

// Exact recompute: the stored history of a virtual datapoint's sources is
// replayed through a fresh calculator, the very code the live actor runs,
// in event time. Its outputs are what live processing produces when every
// observation arrives in time order and every timer fires on time.
//
// Ordering rules of the replay:
//
//   - Observations go in ascending event time. "Equal" times are equal
//     instants as stored, to the microsecond (timestamptz). Observations of
//     one instant go in pin-name order (a source read by two pins feeds
//     both). That order cannot change what is stored: outputs at one time
//     replace each other, and the last one is calculated with every pin
//     already updated. Live processing takes equal times in arrival order.
//   - A timed-trigger boundary b fires after every observation stamped at
//     or before b and before any stamped after it: Calc.Tick(b) evaluates
//     the windows as of b, (b-d, b] for a time window, so an observation at
//     exactly b counts at b, as in a live actor whose data arrives before
//     its timer. Every boundary in [start, end) fires; one at start writes
//     its output at start, which is inside the replaced period.
//   - Outputs at one time keep the last calculated (a tick after an
//     every_value output at its boundary replaces it), as the store does.
//
// Warm-up: the replay starts at W, which is start, or for calculators with
// timed triggers the earliest of each trigger's last boundary before start,
// so each timed pin holds the value it emitted there, as in an actor that
// ran through. Each pin's window is first filled with the history before W
// the way it would hold it: its Count newest, or for time and cron windows
// everything since Since(L), L the newest observation before W, at most
// the newest window.MaxObservations (the window keeps no more), plus one
// more so that a gradient's previous input is as it was (windowHistory);
// this emits nothing and evaluates each aggregate once (window.Pin.Fill). Outputs of [W, start) are calculated and dropped. A timed
// pin whose window is empty at its last boundary before start has no value
// until a boundary in the period finds data, as after an actor restart.

// SourceReader reads stored source history for a recompute.
type SourceReader interface {
	// History fills the windows before the replay starts.
	History
	// Page returns up to limit observations of a datapoint in [from, to),
	// ascending. Times have the store's microsecond resolution: the next
	// page starts one microsecond after the last time of this one.
	Page(ctx context.Context, projectID int64, dataPointID string, from, to time.Time, limit int) ([]Point, error)
	// Newest returns the time of each datapoint's newest stored
	// observation (zero for none), all as of one instant: a start reads
	// its sources up to these, so that its history is what was stored at
	// one moment for every source alike (vdpActor.start).
	Newest(ctx context.Context, projectID int64, dataPointIDs []string) ([]time.Time, error)
}

// RecomputePage is how many observations of one source are read at once;
// memory stays bounded by the pages of the sources, not the period. A
// stream's first page is firstPage; each next one twice the last.
const (
	RecomputePage = 100_000
	firstPage     = 1_000
)

// MaxRecomputeOutputs bounds what one recompute holds before it is
// written in one transaction: a longer period must be split.
const MaxRecomputeOutputs = 5_000_000

// Recompute replays [start, end) of def's sources and returns every output
// with a time in [start, end), ascending, one per time. progress is told
// how far the replay got, in seconds of event time since start out of the
// period's seconds, each time another whole percent is done; nil for none.
func Recompute(ctx context.Context, def Definition, src SourceReader, start, end time.Time,
	progress func(done, total int)) ([]Point, error) {
	r, err := recompute(ctx, def, src, start, end, progress)
	if err != nil {
		return nil, err
	}
	return r.out, nil
}

func recompute(ctx context.Context, def Definition, src SourceReader, start, end time.Time,
	progress func(done, total int)) (*replay, error) {
	if !end.After(start) {
		return nil, fault.Invalidf("end must be after start")
	}
	calc, err := def.NewCalculator()
	if err != nil {
		return nil, err
	}
	r, err := newReplay(ctx, calc, def.ProjectID, src, start, end, time.Time{}, nil)
	if err != nil {
		return nil, err
	}
	if progress != nil {
		r.progress = progress
	}
	if err := r.run(); err != nil {
		return nil, err
	}
	r.progress(r.total, r.total)
	return r, nil
}

// newReplay warms calc up for a replay of [start, end): its windows hold
// the history before the warm-up start, and one stream per source datapoint
// is ready to page through the rest. Boundaries fire up to end.
//
// A replay that continues a run begun at runStart (a catch-up: zero for
// none) gives the timed pins what they held from the run's boundaries
// before the warm-up start (holdTimed): with the run's own warm-up start
// as the earliest, as a recompute from runStart has it.
func newReplay(ctx context.Context, calc Calculator, project int64, src SourceReader, start, end, runStart time.Time, horizon readHorizon) (*replay, error) {
	from, floor := start, runStart
	if w, ok := calc.(interface{ warmStart(time.Time) time.Time }); ok {
		from = w.warmStart(start)
		if !runStart.IsZero() {
			floor = w.warmStart(runStart)
		}
	}
	streams, err := warmUp(ctx, calc, project, src, from, horizon)
	if err != nil {
		return nil, err
	}
	if h, ok := calc.(*calculator); ok && !floor.IsZero() && floor.Before(from) {
		if err := h.holdTimed(ctx, src, project, from, floor, horizon); err != nil {
			return nil, err
		}
	}
	return &replay{ctx: ctx, src: src, project: project, calc: calc, from: from, start: start, end: end, tickEnd: end,
		streams: streams, progress: func(int, int) {}, total: max(1, int(end.Sub(start)/time.Second))}, nil
}

// warmStart is where the replay of a calculator with timed triggers
// begins: the earliest of each trigger's last boundary before start.
func (c *calculator) warmStart(start time.Time) time.Time {
	w := start
	for _, t := range c.timed {
		first, _ := t.Next(start.Add(-time.Nanosecond)) // the first boundary at or after start
		next, _ := t.Next(first)
		if prev := first.Add(-next.Sub(first)); prev.Before(w) {
			w = prev
		}
	}
	return w
}

// stream pages through one source datapoint from the replay start on.
type stream struct {
	dataPointID string
	pins        []string // sorted: the tie order
	buf         []Point
	i           int
	next        time.Time // start of the next page
	end         time.Time // where its reads end (readHorizon); zero: the replay's end
	pageSize    int       // of its next page: doubles from firstPage up to RecomputePage
	done        bool
	newest      time.Time // the newest observation read, in the warm-up or a page; zero for none
}

// warmUp fills every pin's window with the history before at (and
// before its source's horizon), dropping what it emits, and returns one
// stream per source datapoint.
func warmUp(ctx context.Context, calc Calculator, project int64, src SourceReader, at time.Time, horizon readHorizon) ([]*stream, error) {
	byID := map[string]*stream{}
	var streams []*stream
	for _, s := range calc.Sources() {
		to, end := at, horizon[s.DataPointID]
		if !end.IsZero() && end.Before(at) {
			to = end
		}
		pts, err := windowHistory(ctx, src, project, s, to)
		if err != nil {
			return nil, fmt.Errorf("history of %s: %w", s.DataPointID, err)
		}
		fill(calc, s.Pin, pts) // outputs for these were written long ago
		if es, ok := calc.(errorSource); ok {
			_ = es.TakeError() // and their errors reported then
		}
		st := byID[s.DataPointID]
		if st == nil {
			st = &stream{dataPointID: s.DataPointID, next: at, end: end}
			byID[s.DataPointID] = st
			streams = append(streams, st)
		}
		st.pins = append(st.pins, s.Pin)
		if n := len(pts); n > 0 && pts[n-1].Time.After(st.newest) {
			st.newest = pts[n-1].Time
		}
	}
	for _, st := range streams {
		slices.Sort(st.pins)
	}
	return streams, nil
}

// readHorizon bounds what a start reads of each source: just after its
// newest observation as of one instant (SourceReader.Newest). A start
// reads its sources one after another while observations go on being
// stored; without a common instant, a source read later would bring
// observations that another source's live deliveries, earlier in time,
// then follow, and the start would calculate them out of time order
// (outputs differing from a recompute's). What is stored after that
// instant comes live; of a source without observations at that instant,
// everything does (its horizon is the earliest time the pipeline takes).
type readHorizon map[string]time.Time

// horizonOf reads the horizon of ids.
func horizonOf(ctx context.Context, src SourceReader, project int64, ids []string) (readHorizon, error) {
	newest, err := src.Newest(ctx, project, ids)
	if err != nil {
		return nil, fmt.Errorf("newest observations: %w", err)
	}
	h := make(readHorizon, len(ids))
	for i, id := range ids {
		h[id] = beginningOfTime
		if !newest[i].IsZero() {
			h[id] = newest[i].Add(time.Microsecond)
		}
	}
	return h, nil
}

// filler is a Calculator that refills a pin's window in bulk, leaving
// it as Observe of each point would, without a calculation per point.
type filler interface {
	fill(pin string, pts []Point)
}

// fill feeds history to one pin of calc, in bulk where calc can.
func fill(calc Calculator, pin string, pts []Point) {
	if f, ok := calc.(filler); ok {
		f.fill(pin, pts)
		return
	}
	for _, p := range pts {
		_, _ = calc.Observe(pin, p)
	}
}

// replay is one run of the merge of sources and boundaries.
type replay struct {
	ctx        context.Context
	src        SourceReader
	project    int64
	calc       Calculator
	from       time.Time // where the replay begins: start, or the warm-up start before it
	start, end time.Time
	tickEnd    time.Time // boundaries before it fire
	streams    []*stream
	out        []Point
	// flush, when set, takes the outputs as the replay goes, all but the
	// newest, which a later one at its time may still replace; the caller
	// flushes the rest at the end. Unset, out holds them all.
	flush      func([]Point)
	progress   func(done, total int)
	total      int
	percent    int
	steps      int
	calcErrors int   // calculations in the period that emitted nothing because of an error
	lastError  error // the latest of them
}

// feed is one observation of one pin at the current instant.
type feed struct {
	pin string
	p   Point
}

func (r *replay) run() error {
	tick, timed := r.calc.NextTick(r.from.Add(-time.Nanosecond)) // the first boundary at or after from
	var now []feed
	for {
		t, more, err := r.earliest()
		if err != nil {
			return err
		}
		// Boundaries before the next instant fire first; one at that
		// instant fires after its observations (next round).
		for timed && tick.Before(r.tickEnd) && (!more || tick.Before(t)) {
			p, ok := r.calc.Tick(tick)
			r.emit(tick, p, ok)
			if err := r.step(tick); err != nil {
				return err
			}
			tick, timed = r.calc.NextTick(tick)
		}
		if !more {
			return nil
		}
		now = now[:0]
		for _, st := range r.streams {
			if len(st.buf) > st.i && st.buf[st.i].Time.Equal(t) {
				for _, pin := range st.pins {
					now = append(now, feed{pin, st.buf[st.i]})
				}
				st.i++
			}
		}
		slices.SortStableFunc(now, func(a, b feed) int { return strings.Compare(a.pin, b.pin) })
		for _, f := range now {
			p, ok := r.calc.Observe(f.pin, f.p)
			r.emit(t, p, ok)
		}
		if err := r.step(t); err != nil {
			return err
		}
	}
}

// earliest is the time of the next observation of any source, reading
// the next page of a stream that ran dry; more is false at the end.
func (r *replay) earliest() (t time.Time, more bool, err error) {
	for _, st := range r.streams {
		if st.i >= len(st.buf) && !st.done {
			if err := r.ctx.Err(); err != nil {
				return t, false, err
			}
			end := r.end
			if !st.end.IsZero() && st.end.Before(end) {
				end = st.end
			}
			// Small first: a catch-up after a short stop reads a few
			// observations per source, and a batch of reads (ReadBatcher)
			// is bounded by the sum of their limits.
			st.pageSize = min(max(2*st.pageSize, firstPage), RecomputePage)
			page, err := r.src.Page(r.ctx, r.project, st.dataPointID, st.next, end, st.pageSize)
			if err != nil {
				return t, false, fmt.Errorf("read %s: %w", st.dataPointID, err)
			}
			// Only an empty page ends a stream: a reader may answer
			// fewer than asked before the end.
			st.buf, st.i, st.done = page, 0, len(page) == 0
			if len(page) > 0 {
				st.newest = page[len(page)-1].Time
				st.next = st.newest.Add(time.Microsecond)
			}
		}
		if st.i < len(st.buf) && (!more || st.buf[st.i].Time.Before(t)) {
			t, more = st.buf[st.i].Time, true
		}
	}
	return t, more, nil
}

// emit keeps the outputs inside [start, end), the last of each time, and
// counts the calculation errors of the period (at is the event time).
func (r *replay) emit(at time.Time, p Point, ok bool) {
	if es, ok := r.calc.(errorSource); ok {
		if err := es.TakeError(); err != nil && !at.Before(r.start) {
			r.calcErrors, r.lastError = r.calcErrors+1, err
		}
	}
	if !ok || p.Time.Before(r.start) || !p.Time.Before(r.end) {
		return
	}
	if n := len(r.out); n > 0 && r.out[n-1].Time.Equal(p.Time) {
		r.out[n-1] = p
		return
	}
	r.out = append(r.out, p)
}

// flushOutputs is how many outputs a replay with a flush holds at most.
const flushOutputs = 1024

var errTooManyOutputs = errors.New("the period has too many outputs; split it")

// step reports progress, checks for cancellation now and then, and bounds
// the outputs held.
func (r *replay) step(at time.Time) error {
	if r.flush != nil && len(r.out) >= flushOutputs {
		n := len(r.out) - 1
		r.flush(r.out[:n])
		r.out = append(r.out[:0], r.out[n])
	}
	if len(r.out) > MaxRecomputeOutputs {
		return fault.Wrap(fault.Invalid, errTooManyOutputs,
			fmt.Sprintf("more than %d outputs in the period; split it", MaxRecomputeOutputs))
	}
	if r.steps++; r.steps%4096 == 0 {
		if err := r.ctx.Err(); err != nil {
			return err
		}
	}
	done := min(r.total, max(0, int(at.Sub(r.start)/time.Second)))
	if pct := done * 100 / r.total; pct > r.percent {
		r.percent = pct
		r.progress(done, r.total)
	}
	return nil
}

// RecomputeResult sums up a RecomputeStored.
type RecomputeResult struct {
	Outputs int // written
	// CalcErrors counts the calculations of the period that emitted
	// nothing because of an error (a division by zero); LastCalcError is
	// the latest. The live actor reports these in the log as they happen.
	CalcErrors    int
	LastCalcError error
}

// RecomputeStored recomputes [start, end) of def from the store and
// replaces the stored outputs of that period with the result, in one
// transaction after the whole replay (store.ReplaceOutputs). The outputs
// are not routed: a virtual datapoint reading def's output needs a
// recompute of its own.
//
// A live actor of def may go on meanwhile. Outputs it writes inside the
// period before the transaction commits are replaced; ones it commits
// after replace the recomputed value at their time (the last writer wins,
// and both calculate the same value for data that arrived in time).
func RecomputeStored(ctx context.Context, st *store.Store, def Definition, start, end time.Time,
	progress func(done, total int)) (RecomputeResult, error) {
	r, err := recompute(ctx, def, StoreHistory{Store: st}, start, end, progress)
	if err != nil {
		return RecomputeResult{}, err
	}
	out := make([]store.Point, len(r.out))
	for i, p := range r.out {
		out[i] = store.Point(p)
	}
	if err := st.ReplaceOutputs(ctx, def.ProjectID, def.DataPointID, start, end, out); err != nil {
		return RecomputeResult{}, err
	}
	return RecomputeResult{Outputs: len(out), CalcErrors: r.calcErrors, LastCalcError: r.lastError}, nil
}
