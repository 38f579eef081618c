package bench

import (
	"context"
	"fmt"
	"sync/atomic"
	"time"

	"github.com/openbdp/bdp/actors"
	"github.com/openbdp/bdp/pipeline/window"
	"github.com/openbdp/bdp/store"
)

// The mix of the 100,000 scenario (issue 18 item 3): virtual datapoints
// of every type, window kind and trigger, as a platform that runs has
// them, each reading sources of its own. Datapoint i takes shape
// i mod len(mixTable).

// mixPin is one pin of a shape; its source is the datapoint's own.
type mixPin struct {
	name    string
	rng     map[string]any // the data_range
	agg     string
	trigger string
}

// mixShape is one kind of virtual datapoint of the mix.
type mixShape struct {
	typ    string
	pins   []mixPin
	params map[string]any
}

func count(n int) map[string]any      { return map[string]any{"count": n} }
func span(d string) map[string]any    { return map[string]any{"time": d} }
func cron(s, e string) map[string]any { return map[string]any{"start": s, "end": e} }

// mixTable: half every_value only (which the latency is taken on), half
// with a timed trigger, most of them every_minute, as dashboards of
// minute values are the common case; every aggregate appears. Time
// windows are at most a minute: at 100,000 observations a second over
// about 170,000 sources, each source sends every 1.7 s, so a 1-hour
// window would hold 2,000 observations and the heap would measure the
// windows, which item 4 puts aside (window_estimate_bytes_per_vdp); and
// the default feed of a minute fills them. The values fed are 0 to 99.9:
// percent of relative humidity, °C of temperature.
var mixTable = []mixShape{
	{actors.TypeFormula, []mixPin{{"P1", count(vdpWindow), "mean", "every_value"}, {"P2", count(vdpWindow), "mean", "every_value"}},
		map[string]any{"formula": vdpFormula}},
	{actors.TypeFormula, []mixPin{{"P1", span("1m"), "mean", "every_minute"}},
		map[string]any{"formula": "P1 * 2"}},
	{actors.TypeFormula, []mixPin{{"P1", span("30s"), "min", "every_value"}, {"P2", count(5), "max", "every_value"}},
		map[string]any{"formula": "P2 - P1"}},
	{actors.TypeGradient, []mixPin{{"input", count(1), "last", "every_value"}},
		map[string]any{"factorization": 60}},
	{actors.TypeFormula, []mixPin{{"P1", count(vdpWindow), "sum", "every_value"}, {"P2", span("30s"), "last", "every_minute"}},
		map[string]any{"formula": "P1 + P2"}},
	{actors.TypeAbsoluteHumidity, []mixPin{{"relative_humidity", count(1), "last", "every_value"}, {"temperature", count(3), "mean", "every_value"}},
		map[string]any{"relative_humidity_unit": "percent"}},
	{actors.TypeFormula, []mixPin{{"P1", cron("*/5 * * * *", "4-59/5 * * * *"), "max", "every_minute"}},
		map[string]any{"formula": "P1"}},
	{actors.TypeFormula, []mixPin{{"P1", span("1m"), "median", "every_value"}},
		map[string]any{"formula": "P1 / 10"}},
	{actors.TypeGradient, []mixPin{{"input", span("1m"), "mean", "every_minute"}},
		map[string]any{"factorization": 3600}},
	{actors.TypeFormula, []mixPin{{"P1", span("1m"), "timeweighted_mean", "every_hour"}, {"P2", count(3), "first", "every_value"},
		{"P3", span("1m"), "integral", "every_minute"}}, map[string]any{"formula": "P1 + P2 + P3 / 60"}},
	{actors.TypeFormula, []mixPin{{"P1", cron("* * * * *", "* * * * *"), "mean", "every_value"}, {"P2", count(2), "min", "every_value"}},
		map[string]any{"formula": "max(P1, P2)"}},
	{actors.TypeAbsoluteHumidity, []mixPin{{"relative_humidity", span("1m"), "mean", "every_minute"}, {"temperature", span("1m"), "mean", "every_minute"}},
		map[string]any{"relative_humidity_unit": "percent"}},
}

// timed reports whether a pin of s fires on the clock.
func (s mixShape) timed() bool {
	for _, p := range s.pins {
		if p.trigger != "every_value" {
			return true
		}
	}
	return false
}

// mixLayout places the datapoints' own sources: datapoint i reads sources
// first[i], first[i]+1, ... one a pin, in the order of its shape's pins.
type mixLayout struct {
	vdps    int
	sources int
	first   []int
	guarded []bool // per source: it feeds a datapoint with a timed trigger (mixFeed)
	leads   []bool // per source: it is the first of its datapoint's (mixFeed)
}

func newMixLayout(vdps int) mixLayout {
	l := mixLayout{vdps: vdps, first: make([]int, vdps)}
	for i := range vdps {
		sh := mixTable[i%len(mixTable)]
		l.first[i] = l.sources
		l.sources += len(sh.pins)
		for j := range sh.pins {
			l.guarded = append(l.guarded, sh.timed())
			l.leads = append(l.leads, j == 0)
		}
	}
	return l
}

// mixSourceName names source i of the mix with 7 digits, so that names
// sort as the sources are numbered, which is the order the feed makes a
// datapoint's observations in: a batch delivered in datapoint order
// (pipeline.Router) then hands them to the actor in time order.
func mixSourceName(i int) string { return fmt.Sprintf("s%07d", i) }

func (l mixLayout) shape(i int) mixShape { return mixTable[i%len(mixTable)] }

// config is the configuration body of datapoint i.
func (l mixLayout) config(i int) (typ string, body map[string]any) {
	sh := l.shape(i)
	pins := map[string]any{}
	for j, p := range sh.pins {
		pins[p.name] = map[string]any{"dataPointID": mixSourceName(l.first[i] + j), "data_range": p.rng,
			"aggregate": p.agg, "trigger": p.trigger}
	}
	return sh.typ, map[string]any{"pins": pins, "parameters": sh.params}
}

// taps are the every_value datapoints the latency is taken on: every
// sample-th of them, with all their sources.
func (l mixLayout) taps(sample int) []tapped {
	var taps []tapped
	seen := 0
	for i := range l.vdps {
		if l.shape(i).timed() {
			continue
		}
		if seen++; (seen-1)%sample != 0 {
			continue
		}
		t := tapped{output: vdpName(i)}
		for j := range l.shape(i).pins {
			t.sources = append(t.sources, mixSourceName(l.first[i]+j))
		}
		taps = append(taps, t)
	}
	return taps
}

// windowEstimate is the sum over every pin of window.EstimateBytes, its
// source sending every interval: what the windows of the mix hold at
// most once full.
func (l mixLayout) windowEstimate(interval time.Duration) (int64, error) {
	var total int64
	for k, sh := range mixTable {
		n := int64((l.vdps - k + len(mixTable) - 1) / len(mixTable)) // datapoints of shape k
		for _, p := range sh.pins {
			var c any
			if v, ok := p.rng["count"]; ok {
				c = v
			}
			d, _ := p.rng["time"].(string)
			s, _ := p.rng["start"].(string)
			e, _ := p.rng["end"].(string)
			r, err := window.ParseRange(c, d, s, e)
			if err != nil {
				return 0, fmt.Errorf("mix shape %d pin %s: %w", k, p.name, err)
			}
			total += n * window.EstimateBytes(r, window.Aggregate(p.agg), interval)
		}
	}
	return total, nil
}

// startMix creates every datapoint in the store as the HTTP layer does
// (created, ready to start, starting), runs it with engine.Start and
// records it Running with where its calculation began, which a Resume
// later catches up from; it returns those cursors.
func startMix(ctx context.Context, st *store.Store, engine *actors.Engine, project int64, l mixLayout,
	progress func(string, ...any)) ([]time.Time, error) {
	cursors := make([]time.Time, l.vdps)
	var done atomic.Int64
	defer reportEvery(progress, "mix: started", l.vdps, &done)()
	err := forEach(ctx, l.vdps, startParallel, func(ctx context.Context, i int) error {
		defer done.Add(1)
		typ, body := l.config(i)
		raw, err := storedConfig(typ, body)
		if err != nil {
			return fmt.Errorf("config of %s: %w", vdpName(i), err)
		}
		if _, err := st.CreateVDP(ctx, store.VDP{ProjectID: project, DataPointID: vdpName(i), Type: typ, Config: raw},
			store.StatusChange{Code: store.StatusCreated, Message: "created by the bench"},
			store.StatusChange{Code: store.StatusReadyToStart, Message: "configuration is valid"},
			store.StatusChange{Code: store.StatusStarting, Message: "run by the bench"}); err != nil {
			return err
		}
		def, err := engine.Definition(project, vdpName(i), typ, raw)
		if err != nil {
			return err
		}
		if cursors[i], err = engine.Start(ctx, def); err != nil {
			return fmt.Errorf("start %s: %w", vdpName(i), err)
		}
		_, err = st.ChangeVDPStatus(ctx, project, vdpName(i),
			store.StatusChange{Code: store.StatusRunning, Message: "engine actor running", CatchUpFrom: cursors[i]}, store.StatusStarting)
		return err
	})
	return cursors, err
}
