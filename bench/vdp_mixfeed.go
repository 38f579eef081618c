package bench

import (
	"context"
	"time"

	"github.com/openbdp/bdp/pipeline"
)

// timedGuard: sources of a datapoint with a timed trigger get no
// observation within this distance of a minute boundary (every hour
// boundary is one too). An exact recompute fires a boundary after every
// observation at or before it and before any after it; a live actor fires
// it when its timer does, on the wall clock, and takes what has been
// stored and routed by then. An observation stamped just before a
// boundary and stored just after it is late data, which the live actor
// does not calculate again, by design, so near a boundary the two differ
// for reasons that are no fault of the engine. With the guard, an output
// differs only when an observation took more than the guard from being
// made to being routed, or a timer fired more than the guard late: then
// the engine did fall behind. Sources of every_value datapoints are fed
// throughout, and the rate stays the same: a guarded source's turn goes
// to the next one.
const timedGuard = 2 * time.Second

// mixFeed makes the observations of the mix and of the minute burst:
// observation k belongs to source k mod len(names), as in vdpFeed, but is
// stamped with the wall clock when its write is made (and never earlier
// than the previous observation plus a microsecond), so that event time
// runs with the clock even when the feed falls behind or pauses, as timed
// triggers need: they fire on the clock. Not plus step: writes made in a
// burst, when the pacer catches up, would then be stamped ahead of the
// clock, and a timed datapoint would receive observations after its next
// boundary before that boundary fires.
//
// A recompute takes a datapoint's observations in time order across its
// sources; the live actor takes them in the order they are stored. So a
// datapoint's observations must be stored in time order, which the feed
// ensures: a source's observations are a cycle apart, and the writes in
// flight (Writers of PerWrite) hold fewer observations than there are
// sources (checked by the scenario), so they commit in order; and a
// datapoint's sources are consecutive, made one after the other, and a
// write never ends inside such a group (leads), so they commit together.
type mixFeed struct {
	project int64
	names   []string
	guarded []bool // nil: none
	leads   []bool // the first source of each group; nil: every source
	step    time.Duration
	k       int
	last    time.Time
}

func newMixFeed(project int64, names []string, guarded, leads []bool, rate int) *mixFeed {
	// PostgreSQL keeps microseconds: every time is a whole microsecond.
	step := max(time.Second/time.Duration(rate)/time.Microsecond*time.Microsecond, time.Microsecond)
	return &mixFeed{project: project, names: names, guarded: guarded, leads: leads, step: step}
}

// history is the observation k (k in [0, perSource·sources)) of the
// history stored before the datapoints start, the newest at end: spaced
// like the live feed, so each source has perSource observations one
// interval apart. History needs no guard: it is stored before any actor
// starts, and refill and recompute both read it in event order.
func (f *mixFeed) history(end time.Time, perSource int) func(k int) pipeline.Observation {
	n := perSource * len(f.names)
	base := end.Truncate(time.Microsecond)
	return func(k int) pipeline.Observation {
		return pipeline.Observation{ProjectID: f.project, DataPointID: f.names[k%len(f.names)],
			Time: base.Add(time.Duration(k-n) * f.step), Value: float64(k%1000) / 10}
	}
}

// next makes the next write of n observations (feedPaced's next), or a
// few more, to end where a group does.
func (f *mixFeed) next(n int) []pipeline.Observation {
	now := time.Now().UTC().Truncate(time.Microsecond)
	obs := make([]pipeline.Observation, 0, n+len(mixTable))
	for len(obs) < n || (f.leads != nil && !f.leads[f.k%len(f.names)]) {
		s := f.k % len(f.names)
		t := maxTime(f.last.Add(time.Microsecond), now)
		f.k++
		if f.guarded != nil && f.guarded[s] && nearMinute(t) {
			continue
		}
		f.last = t
		obs = append(obs, pipeline.Observation{ProjectID: f.project, DataPointID: f.names[s], Time: t, Value: float64(f.k%1000) / 10})
	}
	return obs
}

// nearMinute reports whether t is within timedGuard of a minute boundary.
func nearMinute(t time.Time) bool {
	d := t.Sub(t.Truncate(time.Minute))
	return d <= timedGuard || d >= time.Minute-timedGuard
}

// maxTime is the later of a and b.
func maxTime(a, b time.Time) time.Time {
	if a.After(b) {
		return a
	}
	return b
}

// feeder runs a mixFeed in the background (runFeed), and stops and
// starts it again between phases.
type feeder struct {
	ctx  context.Context
	b    *pipeline.Batcher
	opts VDPOptions
	f    *mixFeed
	stop chan struct{} // nil while stopped
	done <-chan error
}

func (fd *feeder) start() {
	if fd.stop == nil {
		fd.stop = make(chan struct{})
		fd.done = runFeed(fd.ctx, fd.b, fd.opts, fd.stop, fd.f)
	}
}

// halt stops the feed once every write is answered; the error of a
// failed write, if any.
func (fd *feeder) halt() error {
	if fd.stop == nil {
		return nil
	}
	close(fd.stop)
	fd.stop = nil
	return <-fd.done
}
