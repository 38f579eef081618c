package actors

import (
	"context"
	"fmt"
	"time"

	"github.com/openbdp/bdp/pipeline/window"
)

// A timed pin whose window is empty at a boundary does not emit: it keeps
// the value it emitted at an earlier boundary (window.Pin.Fire), for as
// long as its source stays quiet. A replay that warms up at the boundary
// before its start (warmStart) sees only the window as of then; a
// catch-up after a restart, which starts at the newest output, would lose
// that held value and calculate nothing until the source spoke again,
// where the live run and a recompute from the run's cursor went on using
// it. So a catch-up first looks back for what each timed pin held.

// maxHeldReads bounds the reads of one timed pin's source that the look
// back makes: each read moves past one stretch of the source's
// observations that fell outside the pin's window at every boundary. A pin
// whose emissions lie further back starts empty, as at a first start.
const maxHeldReads = 16

// maxHeldBoundaries bounds the boundaries one read's observations are
// tried at: a year of minutes.
const maxHeldBoundaries = 1 << 19

// holdTimed gives each timed pin of c what it emitted last before from,
// at a boundary at or after floor (where the run being caught up began
// firing them). Pins that emitted nothing there stay empty. The values
// alone: a calculation reads nothing else of a pin. (The gradient keeps
// its last two inputs too, but a catch-up starts at its newest output, a
// boundary where it emitted, so that state is rebuilt from there.)
func (c *calculator) holdTimed(ctx context.Context, src SourceReader, project int64, from, floor time.Time, horizon readHorizon) error {
	for _, s := range c.sources {
		pin := c.calc.Pin(s.Pin)
		if !pin.Trigger().Timed() {
			continue
		}
		v, ok, err := heldBefore(ctx, src, project, s, pin, from, floor, horizon[s.DataPointID])
		if err != nil {
			return err
		}
		if ok {
			pin.Hold(v)
		}
	}
	return nil
}

// heldBefore finds the last emission of the timed pin before from and at
// or after floor. Each read takes the pin's window as of a boundary b
// (windowHistory up to b) into a scratch pin, which is then fired at every
// boundary from b down to the first one at or after the newest observation
// read: they all see the same observations. If none emits, the next read
// starts before that newest observation.
func heldBefore(ctx context.Context, src SourceReader, project int64, s Source, pin *window.Pin, from, floor, horizonEnd time.Time) (value float64, ok bool, err error) {
	trig := pin.Trigger()
	b, _ := trig.Prev(from)
	for reads := 0; reads < maxHeldReads && !b.Before(floor); reads++ {
		to := b.Add(time.Microsecond) // the window as of b holds b's observations
		if !horizonEnd.IsZero() && horizonEnd.Before(to) {
			to = horizonEnd
		}
		pts, err := windowHistory(ctx, src, project, s, to)
		if err != nil {
			return 0, false, fmt.Errorf("history of %s: %w", s.DataPointID, err)
		}
		if len(pts) == 0 {
			break
		}
		scratch := pin.Fresh()
		scratch.Fill(windowObservations(pts))
		lowest, _ := trig.Next(pts[len(pts)-1].Time.Add(-time.Nanosecond)) // the first boundary at or after the newest
		if lowest.Before(floor) {
			lowest = floor
		}
		for tried := 0; !b.Before(lowest) && tried < maxHeldBoundaries; tried++ {
			if scratch.Fire(b) {
				value, _ = scratch.Emitted()
				return value, true, nil
			}
			b, _ = trig.Prev(b)
		}
		b, _ = trig.Prev(lowest)
	}
	return 0, false, nil
}
