package bench

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/openbdp/bdp/actors"
)

// guardVDPs is the scale of the guard: 200 datapoints of each shape of
// the mix. The issue suggests 20,000; at this engine's Resume (about 200
// datapoints a second on 2 cores) that would take minutes of CI, while
// each shape, the restart and the catch-up are exercised as well by 200.
const guardVDPs = 200 * 12

// The mix's outputs equal a recompute (issue 18, "Done when"): every
// datapoint of every shape, fed live, stopped, fed while down, resumed
// with actors.Resume and fed again, has stored exactly what
// actors.Recompute calculates over the period it ran, and every one is
// Running after the restart. The feed goes on throughout, the restart
// too: a start reads its sources as of one instant (actors.readHorizon),
// so what is stored while it catches up comes to it live, in order. The
// run goes on past a minute boundary, so
// the every_minute shapes are compared too; the every_hour one has no
// output before its first hour boundary, and the cron one on timed
// trigger fires only in part of its period, so they may have none.
func TestVDPMixOutputsEqualRecompute(t *testing.T) {
	if len(mixTable) != 12 {
		t.Fatalf("guardVDPs assumes 12 shapes, the mix has %d", len(mixTable))
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	res, err := VDP(ctx, VDPOptions{Mix: "on", VDPs: guardVDPs, Rate: 5_000, PerWrite: 250, Writers: 4,
		Duration: 3 * time.Second, Down: 2 * time.Second, NoBurst: true, Progress: testLog{t}})
	if err != nil {
		t.Fatal(err)
	}
	if n := res["running_after_restart"]; n != guardVDPs {
		t.Errorf("%v of %d virtual datapoints Running after the restart", n, guardVDPs)
	}
	if d := res["outputs_different"]; d != int64(0) {
		t.Errorf("%v of %v outputs differ from a recompute; the first: %v", d, res["outputs_compared"], res["first_difference"])
	}
	byShape := res["outputs_compared_by_shape"].([]int64)
	for k, sh := range mixTable {
		if byShape[k] == 0 && !mayHaveNoOutput(sh) {
			t.Errorf("shape %d (%s, %v) had no output to compare", k, sh.typ, sh.pins)
		}
	}
}

// mayHaveNoOutput: a shape with an every_hour pin, which is not ready
// before its first hour boundary, a cron window on a timed trigger, which
// fires in part of its period only, or a gradient on a timed trigger,
// whose first output needs a second boundary.
func mayHaveNoOutput(sh mixShape) bool {
	for _, p := range sh.pins {
		_, cron := p.rng["start"]
		timed := p.trigger != "every_value"
		if p.trigger == "every_hour" || (timed && (cron || sh.typ == actors.TypeGradient)) {
			return true
		}
	}
	return false
}

// testLog takes the scenario's progress lines into the test's log.
type testLog struct{ t *testing.T }

func (l testLog) Write(p []byte) (int, error) {
	l.t.Log(strings.TrimSuffix(string(p), "\n"))
	return len(p), nil
}
