package actors

import (
	"encoding/json"
	"fmt"
	"math"
	"time"

	"github.com/adhocore/gronx"

	"github.com/openbdp/bdp/pipeline/formula"
	"github.com/openbdp/bdp/pipeline/window"
)

// Definition turns a stored configuration into what the engine runs. It
// keeps the configuration packed (packed.go), not parsed: the parsed maps
// would cost a running datapoint about 1 KiB more for the rare restart.
// Formulas are compiled through the engine's cache, shared with every
// other datapoint of the same formula.
func (e *Engine) Definition(projectID int64, dataPointID, typ string, raw json.RawMessage) (Definition, error) {
	def, err := buildDefinition(e.programs, projectID, dataPointID, typ, raw)
	if err != nil {
		return def, err
	}
	def.WindowBytes, err = e.budget.definitionBytes(raw)
	return def, err
}

func buildDefinition(programs *formula.Cache, projectID int64, dataPointID, typ string, raw json.RawMessage) (Definition, error) {
	sc := &storedConfig{programs: programs, dataPointID: dataPointID, typ: typ, config: string(raw)}
	// The JSON, even one that starts like a packed configuration.
	cfg, err := sc.parseJSON()
	if err != nil {
		return Definition{}, err
	}
	if packed, ok := packConfig(cfg); ok {
		sc.config = packed
	}
	return Definition{ProjectID: projectID, DataPointID: dataPointID, NewCalculator: sc.newCalculator}, nil
}

// storedConfig is a virtual datapoint's configuration as stored, which
// builds its calculators.
type storedConfig struct {
	programs         *formula.Cache
	dataPointID, typ string
	// config is packed (packConfig), or the JSON as stored when it holds
	// what packing does not know.
	config string
}

func (sc *storedConfig) parse() (Config, error) {
	if len(sc.config) > 0 && sc.config[0] == packedTag {
		cfg, err := unpackConfig(sc.config)
		if err != nil {
			return cfg, fmt.Errorf("stored config of %s: %w", sc.dataPointID, err)
		}
		return cfg, nil
	}
	return sc.parseJSON()
}

func (sc *storedConfig) parseJSON() (Config, error) {
	var cfg Config
	if err := json.Unmarshal([]byte(sc.config), &cfg); err != nil {
		return cfg, fmt.Errorf("stored config of %s: %w", sc.dataPointID, err)
	}
	return cfg, nil
}

func (sc *storedConfig) newCalculator() (Calculator, error) {
	cfg, err := sc.parse()
	if err != nil {
		return nil, err
	}
	return newCalculator(sc.programs, sc.typ, cfg)
}

// calculator is a Calculator over window.Calc: the pins decide when to
// calculate, compute decides what.
type calculator struct {
	calc    *window.Calc
	sources []Source
	timed   []window.Trigger
	compute func(at time.Time) (float64, bool)
	errs    errorLog
	// refillTail is how many of a refill's last points go through Observe
	// (see fill): 0 but for the gradient. One int rather than the pins'
	// kinds: the gradient has one pin, and a calculator per running
	// datapoint is worth keeping in a smaller size class.
	refillTail int
}

func newCalculator(programs *formula.Cache, typ string, cfg Config) (*calculator, error) {
	c := &calculator{}
	pins := map[string]*window.Pin{}
	for name, pc := range cfg.Pins {
		r, err := pinRange(pc)
		if err != nil {
			return nil, err
		}
		agg, err := window.ParseAggregate(pc.Aggregate)
		if err != nil {
			return nil, err
		}
		trig, err := window.ParseTrigger(pc.Trigger)
		if err != nil {
			return nil, err
		}
		if pins[name], err = window.NewPin(r, agg, trig); err != nil {
			return nil, err
		}
		if trig.Timed() {
			c.timed = append(c.timed, trig)
		}
		if typ == TypeGradient {
			c.refillTail = 2
			if r.Count == 0 && r.Duration == 0 { // cron
				c.refillTail = math.MaxInt
			}
		}
		c.sources = append(c.sources, historyOf(name, pc.DataPointID, r))
	}
	var err error
	if c.calc, err = window.NewCalc(pins); err != nil {
		return nil, err
	}
	if c.compute, err = computeFor(programs, typ, cfg, c.calc, &c.errs); err != nil {
		return nil, err
	}
	return c, nil
}

// historyOf says how much stored history refills a pin's window.
func historyOf(pin, source string, r window.Range) Source {
	s := Source{Pin: pin, DataPointID: source}
	switch {
	case r.Count > 0:
		s.Count = r.Count
	case r.Duration > 0:
		s.Since = func(now time.Time) time.Time { return now.Add(-r.Duration) }
	default: // cron: from the latest start point on
		s.Since = func(now time.Time) time.Time {
			t, err := gronx.PrevTickBefore(r.CronStart, now, true)
			if err != nil {
				return now.AddDate(0, 0, -31)
			}
			return t
		}
	}
	return s
}

// computeFor is the calculation of a type, over the pins' latest values.
func computeFor(programs *formula.Cache, typ string, cfg Config, calc *window.Calc, errs *errorLog) (func(time.Time) (float64, bool), error) {
	switch typ {
	case TypeFormula:
		// The Calc's names are the pins of cfg, sorted as pinOrder sorts
		// them: sharing them saves every formula datapoint a slice.
		names := calc.Names()
		src, _ := cfg.Parameters["formula"].(string)
		prog, err := programs.Compile(src, names)
		if err != nil {
			return nil, err
		}
		values := make([]float64, 0, len(names))
		return func(time.Time) (float64, bool) {
			values = calc.AppendValues(values[:0], names)
			v, ok, err := prog.Eval(values)
			if err != nil {
				errs.log(err) // a runtime error emits nothing
				return 0, false
			}
			return v, ok
		}, nil
	case TypeGradient:
		factor, _ := cfg.Parameters["factorization"].(float64)
		g := &window.Gradient{Factor: factor}
		input := []string{"input"}
		values := make([]float64, 0, 1)
		return func(at time.Time) (float64, bool) {
			values = calc.AppendValues(values[:0], input)
			return g.Observe(window.Observation{Time: at, Value: values[0]})
		}, nil
	case TypeAbsoluteHumidity:
		u, err := humidityUnits(cfg.Parameters)
		if err != nil {
			return nil, err
		}
		names := []string{"relative_humidity", "temperature", "pressure"}
		v := make([]float64, 0, len(names))
		return func(time.Time) (float64, bool) {
			v = calc.AppendValues(v[:0], names)
			x, err := window.AbsoluteHumidity(v[0], v[1], v[2], u)
			if err != nil {
				errs.log(err)
				return 0, false
			}
			return x, true
		}, nil
	}
	return nil, fmt.Errorf("unknown type %q", typ)
}

func (c *calculator) Sources() []Source { return c.sources }

func (c *calculator) Observe(pin string, p Point) (Point, bool) {
	f, ok := c.calc.Observe(pin, window.Observation{Time: p.Time, Value: p.Value})
	return c.run(f, ok)
}

// fill refills a pin's window with history in bulk (window.Calc.Fill):
// only the window and the pin's emitted value matter then, except for the
// gradient, whose calculation keeps its last two inputs. Its last two
// points therefore go through Observe, which feeds them to the
// calculation as a live run did. That is exact when both are kept, as
// every point of an ascending history is in a count or time window; a cron
// window may drop the last ones (in the gap after its end point), so a
// gradient over one is fed one by one throughout.
func (c *calculator) fill(pin string, pts []Point) {
	tail := min(len(pts), c.refillTail)
	c.calc.Fill(pin, windowObservations(pts[:len(pts)-tail]))
	for _, p := range pts[len(pts)-tail:] {
		_, _ = c.Observe(pin, p)
	}
}

// windowObservations is pts as the window package takes them.
func windowObservations(pts []Point) []window.Observation {
	obs := make([]window.Observation, len(pts))
	for i, p := range pts {
		obs[i] = window.Observation(p)
	}
	return obs
}

func (c *calculator) Tick(t time.Time) (Point, bool) {
	f, ok := c.calc.Tick(t)
	return c.run(f, ok)
}

func (c *calculator) run(f window.Firing, ok bool) (Point, bool) {
	if !ok {
		return Point{}, false
	}
	v, ok := c.compute(f.Time)
	if !ok || math.IsNaN(v) || math.IsInf(v, 0) {
		return Point{}, false
	}
	return Point{Time: f.Time, Value: v}, true
}

func (c *calculator) NextTick(after time.Time) (time.Time, bool) {
	var next time.Time
	for _, t := range c.timed {
		if n, ok := t.Next(after); ok && (next.IsZero() || n.Before(next)) {
			next = n
		}
	}
	return next, !next.IsZero()
}

// errorLog keeps the latest calculation error until the actor takes it;
// the engine reports at most one a minute per virtual datapoint.
type errorLog struct {
	pending error
}

func (l *errorLog) log(err error) { l.pending = err }

// TakeError returns and clears the latest calculation error.
func (c *calculator) TakeError() error {
	err := c.errs.pending
	c.errs.pending = nil
	return err
}
