package actors

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/asynkron/protoactor-go/actor"

	"github.com/openbdp/bdp/pipeline"
)

// vdpActor is one running virtual datapoint. Its state (the calculator
// with its windows) is rebuilt from stored history on every start and
// restart.
type vdpActor struct {
	engine *Engine
	def    *Definition // shared with the engine's registry

	calc Calculator
	// pins lists each pin with its source and how far its history was read
	// at start. A slice, not maps: at most five entries, and ten thousand
	// actors would pay for map buckets.
	pins []pinSource
	sub  *mailboxSubscriber // attached to the pins' datapoints at start
	// nextTick is the timed-trigger boundary the actor waits for, Unix
	// nanoseconds, 0 for none: the engine's clock may send a tick it no
	// longer waits for (tickClock), one before it, which it ignores.
	nextTick int64
	reported int64 // when a calculation error was last reported, Unix nanoseconds
}

// initialize is an actor's first message: what it runs, and the spawn
// request to answer (to the supervisor) when its first start is done.
type initialize struct {
	def     *Definition
	catchUp bool
	cursor  time.Time
	request uint64
}

// startResult is how an actor's first start ended: its cursor (where its
// live calculation begins, Engine.Start) or why it failed.
type startResult struct {
	cursor time.Time
	err    error
}

// delivery carries stored observations of one source datapoint.
type delivery struct {
	dataPointID string
	obs         []pipeline.Observation
}

// tick is a timed-trigger boundary.
type tick struct{ at time.Time }

func (a *vdpActor) Receive(ctx actor.Context) {
	switch m := ctx.Message().(type) {
	case *initialize:
		a.def = m.def
		if !a.engine.initialized(ctx.Self()) {
			// Its Start gave up and forgot it; the Stop is on its way.
			ctx.Send(ctx.Parent(), &startAnswer{request: m.request, res: startResult{err: context.Canceled}})
			return
		}
		a.begin(ctx, m.catchUp, m.cursor, m.request)
	case *actor.Started:
		// A restart makes a fresh actor: its definition comes from the
		// engine. On the first start initialize follows instead. It
		// catches up like a resume: the message that failed, and those
		// its predecessor took but whose outputs had not reached the
		// store, are calculated, not merely put back in the windows.
		if def, cursor, ok := a.engine.restartOf(ctx.Self()); ok {
			a.def = def
			a.begin(ctx, true, cursor, 0)
		}
	case *actor.Restarting, *actor.Stopping:
		a.release()
	case *delivery:
		if a.calc != nil {
			a.deliver(ctx, m)
		}
	case windowBytesQuery:
		var n int64
		if c, ok := a.calc.(*calculator); ok {
			n = c.heldBytes()
		}
		ctx.Respond(n)
	case *tick:
		// A tick before the boundary it waits for is stale (a second one
		// for a boundary already fired, after a restart).
		if a.calc != nil && a.nextTick != 0 && m.at.UnixNano() >= a.nextTick {
			out, ok := a.calc.Tick(m.at)
			a.write(out, ok)
			// The next boundary after this one, not after the clock: a
			// tick that came late (a busy node) does not skip the
			// boundaries that passed meanwhile; they fire at once.
			a.schedule(ctx, m.at)
		}
	}
}

// begin starts the actor and reports the first start; a failed start is
// a failure of the actor, for its supervisor to restart. A start cut short
// by Stop or Shutdown is none: the actor stays idle until its stop. The
// first start answers its spawn request (0 on a restart): a parameter,
// not a field, as it is used only here.
func (a *vdpActor) begin(ctx actor.Context, catchUp bool, cursor time.Time, request uint64) {
	sctx, done := a.engine.startContext(ctx.Self())
	defer done()
	// It reads history on its worker: the dispatcher queues nothing
	// behind it meanwhile.
	defer a.engine.dispatcher.wait()()
	cursor, err := a.start(ctx, sctx, catchUp, cursor)
	if err == nil {
		a.engine.setCursor(ctx.Self(), cursor)
	}
	if request != 0 {
		ctx.Send(ctx.Parent(), &startAnswer{request: request, res: startResult{cursor: cursor, err: err}})
	}
	if err != nil && sctx.Err() != nil {
		a.release()
		a.calc = nil
		return
	}
	if err != nil {
		panic(fmt.Sprintf("start virtual datapoint %s: %v", a.def.DataPointID, err))
	}
}

// endOfTime is after every time the pipeline accepts (years up to 9999):
// the open end of a catch-up's reads; beginningOfTime is the earliest time
// it accepts (pipeline.Observation.Validate), where a catch-up of a run
// that found no source history starts.
var (
	endOfTime       = time.Date(10000, 1, 1, 0, 0, 0, 0, time.UTC)
	beginningOfTime = time.Date(1900, 1, 1, 0, 0, 0, 0, time.UTC)
)

// start builds a fresh calculator, subscribes to the sources, and
// refills the windows from the stored history before anything delivered
// live; with catchUp, it instead replays what is stored since the newest
// output, or since cursor when that is later or there is none
// (Engine.CatchUp). It returns the cursor of this run: the one it was
// given, or, when it refilled, where its live calculation begins in event
// time (liveFrom).
func (a *vdpActor) start(ctx actor.Context, sctx context.Context, catchUp bool, cursor time.Time) (time.Time, error) {
	calc, err := a.def.NewCalculator()
	if err != nil {
		return cursor, err
	}
	sources := calc.Sources()
	a.calc, a.pins = calc, make([]pinSource, 0, len(sources))
	// Subscribe first: what is stored while history loads waits in the
	// mailbox; loadedTo then skips what the history already had.
	ids := make([]string, 0, len(sources)) // the source datapoints, each once
	// One subscriber for all the sources: a delivery names its datapoint.
	mailbox := a.engine.mailboxOf(ctx.Self())
	if mailbox == nil {
		return cursor, context.Canceled // forgotten: its Stop is on its way
	}
	a.sub = &mailboxSubscriber{mailbox: mailbox}
	for i, s := range sources {
		a.pins = append(a.pins, pinSource{Source: &sources[i]})
		if !slices.Contains(ids, s.DataPointID) {
			ids = append(ids, s.DataPointID)
			a.engine.cfg.Router.Attach(a.def.ProjectID, s.DataPointID, a.sub)
		}
	}
	src, now := a.engine.cfg.History, a.engine.cfg.Clock.Now()
	horizon, err := horizonOf(sctx, src, a.def.ProjectID, ids)
	if err != nil {
		return cursor, err
	}
	var from time.Time // where a catch-up starts
	if catchUp {
		newest, err := src.Recent(sctx, a.def.ProjectID, a.def.DataPointID, 1, time.Time{}, endOfTime)
		if err != nil {
			return cursor, fmt.Errorf("newest output: %w", err)
		}
		// Outputs before the cursor are an earlier run's (one stopped
		// since): this run calculates from its cursor on.
		from = cursor
		if len(newest) > 0 && newest[0].Time.After(from) {
			from = newest[0].Time
		}
	}
	var streams []*stream
	_, timed := calc.NextTick(now)
	if from.IsZero() && !timed {
		// Windows follow event time: a time or cron window ends at the
		// newest observation, not at the wall clock, so a source that has
		// been quiet for a while still refills its window with what the
		// live run held.
		if streams, err = warmUp(sctx, calc, a.def.ProjectID, src, now, horizon); err != nil {
			return cursor, err
		}
		cursor = liveFrom(streams, beginningOfTime)
	} else {
		// A catch-up replays from where it left off; a first start of a
		// calculator with timed triggers replays from now, so that its
		// timed pins hold what they emitted at their last boundary before
		// it, as in a recompute (newReplay warms up from there): without,
		// a gradient's first timed output after the start was missing.
		start := from
		if from.IsZero() {
			// A boundary at now primes too, but its output, like every
			// other before the cursor, is not this run's to write.
			start = now.Add(time.Nanosecond)
		}
		runStart := cursor // a catch-up continues the run begun there
		if from.IsZero() {
			runStart = time.Time{}
		}
		r, err := newReplay(sctx, calc, a.def.ProjectID, src, start, endOfTime, runStart, horizon)
		if err != nil {
			return cursor, err
		}
		// Boundaries up to now fire; the timer takes the next one.
		r.tickEnd, r.flush = now.Add(time.Nanosecond), a.writeAll
		if err := r.run(); err != nil {
			return cursor, fmt.Errorf("catch up since %s: %w", start.Format(time.RFC3339Nano), err)
		}
		a.writeAll(r.out)
		if r.lastError != nil {
			a.reportCalcError(r.lastError)
		}
		streams = r.streams
		if from.IsZero() {
			cursor = liveFrom(streams, start)
		}
	}
	// What the refill or the catch-up read is not taken again live.
	for i := range a.pins {
		for _, st := range streams {
			if st.dataPointID == a.pins[i].DataPointID && !st.newest.IsZero() {
				a.pins[i].loadedTo = st.newest.UnixMicro()
			}
		}
	}
	if es, ok := calc.(errorSource); ok {
		_ = es.TakeError() // reported when the history arrived live
	}
	// The next boundary after the now the refill or catch-up ran to, not
	// after the clock's now: a boundary that passed while the history was
	// read is fired, rather than skipped (the recompute fires it).
	a.schedule(ctx, now)
	return cursor, nil
}

// liveFrom is where a first start begins to calculate, in event time, so
// that a replay from there (a catch-up, a recompute) calculates what this
// run does live, when observations arrive in time order: just after the
// newest source observation its history read, so that what arrives later
// is calculated and what was read is not, and not before from. With
// several sources, one that lags the newest may have arrivals before the
// cursor, which the replay leaves in the windows uncalculated.
//
// A start without timed triggers passes the beginning of time as from.
// One with timed triggers replays from its start, its timed pins primed
// at their last boundaries before it, as a replay from the cursor primes
// them: it passes its start, so that no boundary before it, whose output
// the start dropped, lies after the cursor.
//
// Microseconds, as the store keeps it.
func liveFrom(streams []*stream, from time.Time) time.Time {
	for _, st := range streams {
		if next := st.newest.Truncate(time.Microsecond).Add(time.Microsecond); next.After(from) {
			from = next
		}
	}
	return from
}

// deliver feeds a delivery's observations, in their order, each to the
// pins of its datapoint in the order of their names: what a recompute
// feeds at one instant. (Pin by pin over the whole delivery, a pin would
// see a later observation before another pin saw an earlier one.)
func (a *vdpActor) deliver(ctx actor.Context, m *delivery) {
	var buf [4]int // most datapoints feed one pin of a calculator
	pins := buf[:0]
	for i := range a.pins {
		if a.pins[i].DataPointID == m.dataPointID {
			pins = append(pins, i)
		}
	}
	if len(pins) > 1 {
		slices.SortStableFunc(pins, func(x, y int) int { return strings.Compare(a.pins[x].Pin, a.pins[y].Pin) })
	}
	for _, o := range m.obs {
		fired := false
		for _, i := range pins {
			p := &a.pins[i]
			if o.Time.UnixMicro() <= p.loadedTo {
				continue // already in the history read at start
			}
			if !fired {
				a.fireLate(ctx, o.Time)
				fired = true
			}
			out, ok := a.calc.Observe(p.Pin, Point{Time: o.Time, Value: o.Value})
			a.write(out, ok)
		}
	}
}

// fireLate fires the boundary the actor waits for when an observation
// stamped after it comes first: the boundary has passed on the clock but
// its tick is late (the clock paces a boundary's ticks, and mailboxes
// queue). A boundary fires after every observation stamped at or before
// it and before any stamped after it, as a recompute orders them; taken
// first, the later observation would be in the windows and emitted
// values the tick reads. Data stamped ahead of the clock fires nothing
// early.
func (a *vdpActor) fireLate(ctx actor.Context, t time.Time) {
	for a.nextTick != 0 && t.UnixNano() > a.nextTick {
		b := time.Unix(0, a.nextTick).UTC()
		if a.engine.cfg.Clock.Now().Before(b) {
			return
		}
		out, ok := a.calc.Tick(b)
		a.write(out, ok)
		a.schedule(ctx, b)
	}
}

// pinSource is one pin of the actor's calculator: its Source, pointing
// into the calculator's Sources (which it keeps anyway) rather than a copy
// of its names, which cost each running datapoint 24 bytes a pin.
type pinSource struct {
	*Source
	// loadedTo is how far the history read at start went, in Unix
	// microseconds: the store keeps microseconds, so an observation within
	// the newest stored one's microsecond is that same stored row.
	loadedTo int64
}

// write hands an output (if ok) to the engine's writer, which stores it
// through the pipeline like any observation, so it is routed on to
// subscribers (another virtual datapoint, later MQTT).
func (a *vdpActor) write(out Point, ok bool) {
	a.reportError()
	if ok {
		a.engine.outputs <- pipeline.Observation{ProjectID: a.def.ProjectID, DataPointID: a.def.DataPointID, Time: out.Time, Value: out.Value}
	}
}

// writeAll hands a catch-up's outputs to the engine's writer.
func (a *vdpActor) writeAll(outs []Point) {
	for _, out := range outs {
		a.engine.outputs <- pipeline.Observation{ProjectID: a.def.ProjectID, DataPointID: a.def.DataPointID, Time: out.Time, Value: out.Value}
	}
}

// reportError passes on the calculator's latest error.
func (a *vdpActor) reportError() {
	if es, ok := a.calc.(errorSource); ok {
		if err := es.TakeError(); err != nil {
			a.reportCalcError(err)
		}
	}
}

// reportCalcError reports a calculation error, at most once every
// CalcErrorInterval.
func (a *vdpActor) reportCalcError(err error) {
	now := a.engine.cfg.Clock.Now()
	if now.Sub(time.Unix(0, a.reported)) < CalcErrorInterval {
		return
	}
	a.reported = now.UnixNano()
	a.engine.cfg.OnCalcError(a.def.key(), err)
}

// schedule asks the engine's clock for a tick at the next timed-trigger
// boundary after after; one already past fires at once.
func (a *vdpActor) schedule(ctx actor.Context, after time.Time) {
	next, ok := a.calc.NextTick(after)
	if !ok {
		a.nextTick = 0
		return
	}
	a.nextTick = next.UnixNano()
	a.engine.clock.wake(ctx.Self(), next)
}

func (a *vdpActor) release() {
	if a.sub != nil {
		for i, p := range a.pins {
			if !slices.ContainsFunc(a.pins[:i], func(q pinSource) bool { return q.DataPointID == p.DataPointID }) {
				a.engine.cfg.Router.Detach(a.def.ProjectID, p.DataPointID, a.sub)
			}
		}
		a.sub = nil
	}
	a.nextTick = 0
}

// mailboxSubscriber hands router deliveries to the actor's mailbox;
// posting never blocks, so the pipeline is never held up by a busy actor.
// One serves all of an actor's sources (a subscriber per source cost
// every running datapoint 32 bytes more, issue 18): the router delivers
// the observations of one datapoint at a time, so the first names them
// all.
//
// It posts to the mailbox itself rather than sending to the actor's PID:
// protoactor's Send finds the mailbox through the PID's cached process
// and its liveness flag, three more pointers to chase per delivery, and
// at 100,000 running datapoints each was a cache miss (5 % of the CPU of
// the 100,000 scenario, issue 18). What the PID's path adds, dead letters
// for a stopped actor, the mailbox does as well: a stopped actor's context
// ignores user messages, and the actor detaches this subscriber when it
// stops.
type mailboxSubscriber struct {
	mailbox *leanMailbox
}

func (m *mailboxSubscriber) Deliver(obs []pipeline.Observation) {
	if len(obs) == 0 {
		return // nothing to calculate, and no datapoint to name
	}
	m.mailbox.PostUserMessage(&delivery{dataPointID: obs[0].DataPointID, obs: obs})
}
